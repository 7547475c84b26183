"""Training-time image augmentation on the device, in batches: random crop with zero padding
and random horizontal flip, the "standard data augmentation" FedSoft (App. C, CIFAR-10) takes
from IFCA (Ghosh et al. 2020): pad 4, crop back to the original size, flip with probability 1/2.

The random draws are made once per round with the batch schedule (one offset pair and one
flip bit per scheduled sample), so the batched and the sequential engine see the same
augmented images."""
from dataclasses import dataclass
from typing import Dict

import torch

from ..errors import ConfigError


@dataclass
class CropFlip:
    padding: int = 4
    hflip: bool = True

    def __post_init__(self):
        if self.padding < 0:
            raise ConfigError(f"dataset.augment.padding={self.padding} must be >= 0")

    def draw(self, shape, g: torch.Generator) -> Dict[str, torch.Tensor]:
        """Random parameters for samples laid out as `shape` (e.g. [M, steps, B])."""
        span = 2 * self.padding + 1
        offsets = torch.randint(0, span, (*shape, 2), generator=g)
        flips = torch.rand(*shape, generator=g) < 0.5 if self.hflip else torch.zeros(*shape, dtype=torch.bool)
        return {"offsets": offsets, "flips": flips}

    def apply(self, x: torch.Tensor, offsets: torch.Tensor, flips: torch.Tensor) -> torch.Tensor:
        """x [..., C, H, W]; offsets [..., 2] (row, column of the crop in the padded image);
        flips [...]. Returns augmented images of the same shape."""
        lead = x.shape[:-3]
        C, H, W = x.shape[-3:]
        flat = x.reshape(-1, C, H, W)
        off = offsets.to(x.device).reshape(-1, 2)
        p = self.padding
        if p:
            flat = torch.nn.functional.pad(flat, (p, p, p, p))
        n = flat.shape[0]
        rows = off[:, :1] + torch.arange(H, device=x.device)                # [n, H]
        cols = off[:, 1:] + torch.arange(W, device=x.device)                # [n, W]
        out = flat[torch.arange(n, device=x.device)[:, None, None, None], torch.arange(C, device=x.device)[None, :, None, None],
                   rows[:, None, :, None], cols[:, None, None, :]]
        flip = flips.to(x.device).reshape(-1)
        out = torch.where(flip[:, None, None, None], out.flip(-1), out)
        return out.reshape(*lead, C, H, W)
