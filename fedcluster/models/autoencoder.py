"""Autoencoders for CLoVE's unsupervised mode (reconstruction MSE, CLoVE App. B).

CLoVE names the architectures but gives no layer sizes; the widths below are our choice."""
import math
from typing import Annotated, Sequence

import torch
import torch.nn as nn

from ..rules import AtLeast, OneOf
from .init import INITS, check_sizes, initialize


class FCAutoencoder(nn.Module):
    """Fully connected autoencoder with a sigmoid output (CLoVE: MNIST/FMNIST), images in [0, 1].
    Encoder widths `hidden` (default 256, 64), mirrored in the decoder. `latent_activation`: what follows
    the encoder's last layer, ReLU (default) or nothing, as the authors' `Autoencoder` (model.py, b602090f),
    whose bottleneck is linear."""

    def __init__(self, in_shape, num_outputs: int = 0, hidden: Annotated[Sequence[int], AtLeast(1)] = (256, 64),
                 init: Annotated[str, OneOf(INITS)] = "xavier",
                 latent_activation: Annotated[str, OneOf(("relu", "none"))] = "relu"):
        super().__init__()
        self.in_shape = tuple(in_shape)
        widths = [math.prod(in_shape), *check_sizes("hidden", hidden)]
        enc, dec = [], []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            last = i == len(widths) - 2
            enc += [nn.Linear(a, b)] + ([] if last and latent_activation == "none" else [nn.ReLU()])
        back = widths[::-1]
        for i, (a, b) in enumerate(zip(back[:-1], back[1:])):
            dec += [nn.Linear(a, b), nn.Sigmoid() if i == len(back) - 2 else nn.ReLU()]
        self.encoder, self.decoder = nn.Sequential(*enc), nn.Sequential(*dec)
        initialize(self, init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x.flatten(1))).view(-1, *self.in_shape)


class ConvAutoencoder(nn.Module):
    """Convolutional autoencoder with a fully connected latent bottleneck and a tanh output
    (CLoVE: CIFAR-10): two stride-2 3x3 convs (16, 32 channels), FC to `latent`, back by FC and
    two transposed convs. Needs height and width divisible by 4."""

    def __init__(self, in_shape, num_outputs: int = 0, latent: Annotated[int, AtLeast(1)] = 128,
                 channels: Annotated[Sequence[int], AtLeast(1)] = (16, 32),
                 init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        c, h, w = in_shape
        channels = check_sizes("channels", channels, length=2)
        (latent,) = check_sizes("latent", latent)
        if h % 4 or w % 4:
            from ..errors import ConfigError
            raise ConfigError(f"model=conv_autoencoder needs image sides divisible by 4; got {h}x{w}")
        c1, c2 = channels
        self.inner = (c2, h // 4, w // 4)
        flat = math.prod(self.inner)
        self.encoder = nn.Sequential(
            nn.Conv2d(c, c1, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(c1, c2, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(flat, latent), nn.ReLU())
        self.expand = nn.Sequential(nn.Linear(latent, flat), nn.ReLU())
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(c2, c1, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(c1, c, 3, stride=2, padding=1, output_padding=1), nn.Tanh())
        initialize(self, init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.expand(self.encoder(x)).view(-1, *self.inner))
