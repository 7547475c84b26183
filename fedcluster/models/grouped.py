"""Many models of one architecture run in one call per layer: the forward pass of R stacked models (parameters
[R, ...]) on R batches of equal size (x [R, B, ...]).

A convolution of R models is one grouped convolution: the rows' inputs side by side as channel groups
([B, R*C, H, W]) and their kernels stacked ([R*O, C, k, k], groups = R); element-wise layers and 2x2 pooling act per
channel, so they run on that layout unchanged; flattening turns it into [R, B, features]; a linear layer of R models
is one batched matrix product (baddbmm). At small batches a training step is a few dozen tiny kernels per client,
and issuing them once for every client instead of once per client is what makes this faster on a CPU than a loop
over clients (docs/performance.md, "One call per layer"). The values are each model's own forward pass up to
float summation order (tests/unit/test_fast_paths.py)."""
from typing import Dict, Iterable, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .pooling import MaxPool2x2

ELEMENTWISE = {nn.ReLU: F.relu, nn.Sigmoid: torch.sigmoid, nn.Tanh: torch.tanh, nn.Identity: lambda h: h}


def unsupported(layers: Iterable[Tuple[str, nn.Module]]) -> Optional[str]:
    """The first layer (its type) this module cannot run grouped, or None."""
    for _, m in layers:
        if isinstance(m, nn.Conv2d):
            if m.padding_mode != "zeros" or isinstance(m.padding, str):
                return f"{type(m).__name__}(padding={m.padding!r}, padding_mode={m.padding_mode!r})"
        elif isinstance(m, nn.Flatten):
            if m.start_dim != 1 or m.end_dim != -1:
                return f"Flatten(start_dim={m.start_dim}, end_dim={m.end_dim})"
        elif not isinstance(m, (nn.Linear, MaxPool2x2, *ELEMENTWISE)):
            return type(m).__name__
    return None


def forward_rows(layers, params: Dict[str, torch.Tensor], h: torch.Tensor, rows: int, grouped: bool) -> tuple:
    """Run `layers` ((name, module) in order) of `rows` stacked models. `h`: [B, R*C, H, W] while `grouped` (the
    convolutional layout), else [R, B, features]. Returns (h, grouped) after the layers."""
    for name, m in layers:
        if isinstance(m, nn.Conv2d):
            w = params[f"{name}.weight"]
            b = params.get(f"{name}.bias")
            h = F.conv2d(h, w.reshape(-1, *w.shape[2:]), None if b is None else b.reshape(-1), stride=m.stride,
                         padding=m.padding, dilation=m.dilation, groups=rows * m.groups)
        elif isinstance(m, MaxPool2x2):
            # torch's own kernel (the same values and gradients, pooling.py): at the grouped layout's sizes its
            # forward and backward measured faster than the strided form (benchmarks/grouped_step.py: LeNet, batch
            # 10, 10 copies, grouped / looped 0.76 with it, 0.83 with the strided form)
            h = F.max_pool2d(h, 2)
        elif isinstance(m, nn.Flatten):
            if grouped:
                h = h.reshape(h.shape[0], rows, -1).transpose(0, 1)
                grouped = False
            else:
                h = h.flatten(2)
        elif isinstance(m, nn.Linear):
            w, b = params[f"{name}.weight"], params.get(f"{name}.bias")
            h = torch.bmm(h, w.transpose(1, 2)) if b is None else torch.baddbmm(b.unsqueeze(1), h, w.transpose(1, 2))
        else:
            h = ELEMENTWISE[type(m)](h)
    return h, grouped


def grouped_input(x: torch.Tensor) -> torch.Tensor:
    """[R, B, C, H, W] -> [B, R*C, H, W] (the rows as channel groups); [R, B, F] stays as it is."""
    if x.dim() < 5:
        return x
    R, B = x.shape[:2]
    return x.transpose(0, 1).reshape(B, R * x.shape[2], *x.shape[3:])
