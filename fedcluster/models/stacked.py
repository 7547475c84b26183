"""Parameters of many models of one architecture, stacked along a leading axis.

A `Stack` is a dict name -> tensor of shape [M, *param_shape]; row m is model m."""
from typing import Callable, Dict

import torch
import torch.nn as nn

Stack = Dict[str, torch.Tensor]


def init_stack(build: Callable[[], nn.Module], count: int, seed: int, device, dtype) -> Stack:
    """`count` independently initialised models, deterministic in `seed`."""
    rows = []
    for i in range(count):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 7919 * i)
            rows.append({k: v.detach().clone() for k, v in build().named_parameters()})
    return {k: torch.stack([r[k] for r in rows]).to(device=device, dtype=dtype) for k in rows[0]}




def repeat(stack: Stack, index) -> Stack:
    """Rows `index` of `stack` (a LongTensor may repeat rows), as a new stack."""
    return {k: v[index].clone() for k, v in stack.items()}





def all_finite(stack: Stack) -> torch.Tensor:
    """[M] bool: which rows have only finite values."""
    return torch.stack([torch.isfinite(v.flatten(1)).all(1) for v in stack.values()]).all(0)
