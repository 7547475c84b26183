"""Linear regression without intercept (FedSoft App. C, synthetic data)."""
import math
from typing import Annotated

import torch
import torch.nn as nn

from ..rules import OneOf
from .init import INITS, initialize


class LinearRegression(nn.Module):
    def __init__(self, in_shape, num_outputs: int = 1, init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        self.linear = nn.Linear(math.prod(in_shape), num_outputs, bias=False)
        initialize(self, init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1)).squeeze(-1)
