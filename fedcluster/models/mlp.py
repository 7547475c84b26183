"""A small multilayer perceptron (FedSoft's MNIST MLP has one hidden layer of 200)."""
import math
from typing import Sequence

import torch
import torch.nn as nn

from .init import initialize


class MLP(nn.Module):
    def __init__(self, in_shape, num_outputs: int, hidden: Sequence[int] = (200,), init: str = "xavier"):
        super().__init__()
        layers, width = [], math.prod(in_shape)
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, num_outputs))
        self.net = nn.Sequential(*layers)
        self.regression = num_outputs == 1
        initialize(self, init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x.flatten(1))
        return out.squeeze(-1) if self.regression else out
