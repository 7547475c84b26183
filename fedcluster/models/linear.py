"""Linear regression without intercept (FedSoft App. C, synthetic data)."""
import math

import torch
import torch.nn as nn

from .init import initialize


class LinearRegression(nn.Module):
    def __init__(self, in_shape, num_outputs: int = 1, init: str = "xavier"):
        super().__init__()
        self.linear = nn.Linear(math.prod(in_shape), num_outputs, bias=False)
        initialize(self, init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1)).squeeze(-1)
