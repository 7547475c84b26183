"""A small multilayer perceptron (FedSoft's MNIST MLP has one hidden layer of 200)."""
import math
from typing import Annotated, Sequence

import torch
import torch.nn as nn

from ..rules import AtLeast, OneOf
from .init import INITS, check_sizes, initialize


class MLP(nn.Module):
    def __init__(self, in_shape, num_outputs: int, hidden: Annotated[Sequence[int], AtLeast(1)] = (200,),
                 init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        layers, width = [], math.prod(in_shape)
        for h in check_sizes("hidden", hidden, allow_empty=True):   # []: a linear model
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, num_outputs))
        self.net = nn.Sequential(*layers)
        self.regression = num_outputs == 1
        initialize(self, init)

    def forward(self, x: torch.Tensor, with_features: bool = False):
        """Outputs; with_features: (outputs, the input of the last layer)."""
        feats = self.net[:-1](x.flatten(1))
        out = self.net[-1](feats)
        out = out.squeeze(-1) if self.regression else out
        return (out, feats) if with_features else out
