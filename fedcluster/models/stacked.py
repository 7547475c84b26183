"""Parameters of many models of one architecture, stacked along a leading axis.

A `Stack` is a dict name -> tensor of shape [M, *param_shape]; row m is model m."""
from typing import Callable, Dict

import torch
import torch.nn as nn

Stack = Dict[str, torch.Tensor]


def init_stack(build: Callable[[], nn.Module], count: int, seed: int, device, dtype) -> Stack:
    """`count` independently initialised models, deterministic in `seed`. Floating-point
    buffers (batch norm running statistics) are part of each model's row, so every model,
    and every client's copy, keeps its own statistics and they are averaged like weights."""
    rows = []
    for i in range(count):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 7919 * i)
            module = build()
            row = {k: v.detach().clone() for k, v in module.named_parameters()}
            row.update({k: v.detach().clone() for k, v in module.named_buffers() if v.is_floating_point()})
            rows.append(row)
    return {k: torch.stack([r[k] for r in rows]).to(device=device, dtype=dtype) for k in rows[0]}


HOST = torch.device("cpu")   # where per-client state that lives across rounds may be kept


def on_device(stack, device):
    """`stack` (or nested dicts of stacked tensors: an optimizer state) with every tensor on `device` (the
    same tensors where they are there already): per-client state kept in host memory, brought to the
    compute device for a chunk of a round."""
    if isinstance(stack, dict):
        return {k: on_device(v, device) for k, v in stack.items()}
    return stack.to(device)


def take_at(stack, index: torch.Tensor):
    """Rows `index` of `stack` (or nested dicts of stacked tensors) as new tensors on the stack's own
    device, wherever `index` is (a chunk's clients, read from state kept on the host)."""
    if isinstance(stack, dict):
        return {k: take_at(v, index) for k, v in stack.items()}
    return stack[index.to(stack.device)].clone()


def put_rows(stack, index: torch.Tensor, rows) -> None:
    """Write `rows` into rows `index` of `stack` (or nested dicts of stacked tensors), in place, on the
    stack's own device: trained personal models and their optimizer state back into host-kept state."""
    if isinstance(stack, dict):
        for k in rows:
            put_rows(stack[k], index, rows[k])
        return
    stack[index.to(stack.device)] = rows.to(stack.device)


def cat_nested(parts):
    """Stacks (or nested dicts of stacked tensors: optimizer states) one after the other along the rows."""
    if isinstance(parts[0], dict):
        return {k: cat_nested([p[k] for p in parts]) for k in parts[0]}
    return torch.cat(parts)


def slice_nested(stack, rows: slice):
    """Rows `rows` of `stack` (or nested dicts of stacked tensors) as views; None stays None."""
    if stack is None:
        return None
    if isinstance(stack, dict):
        return {k: slice_nested(v, rows) for k, v in stack.items()}
    return stack[rows]


def repeat(stack: Stack, index) -> Stack:
    """Rows `index` of `stack` (a LongTensor may repeat rows), as a new stack."""
    return {k: v[index].clone() for k, v in stack.items()}


def all_finite(stack: Stack) -> torch.Tensor:
    """[M] bool: which rows have only finite values."""
    return torch.stack([torch.isfinite(v.flatten(1)).all(1) for v in stack.values()]).all(0)
