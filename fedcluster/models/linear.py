"""Linear regression without intercept (FedSoft App. C, synthetic data)."""
import math

import torch
import torch.nn as nn

from .init import xavier_normal_linear_kaiming_conv


class LinearRegression(nn.Module):
    def __init__(self, in_shape, num_outputs: int = 1):
        super().__init__()
        self.linear = nn.Linear(math.prod(in_shape), num_outputs, bias=False)
        xavier_normal_linear_kaiming_conv(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1)).squeeze(-1)
