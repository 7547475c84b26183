"""Forward passes for evaluation: many models on one data set, or each model on its own data.

Client data is padded to the largest client; these functions run the model on the real
samples only (padding positions come back as zeros), so a skewed partition with one
large client costs no more than its real sample count."""
import functools
from typing import Optional

import torch
from torch.func import functional_call, vmap

from ..models.stacked import Stack
from .losses import per_sample_loss


def in_eval_mode(fn):
    """Run `fn(model, ...)` with the model in eval mode (batch norm uses each model's running
    statistics, dropout is off), then restore the model's mode."""
    @functools.wraps(fn)
    def wrapper(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        try:
            return fn(model, *args, **kwargs)
        finally:
            model.train(was_training)
    return wrapper


@torch.no_grad()
@in_eval_mode
def outputs_on_shared(model, params: Stack, x: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """Outputs of every model in `params` [M] on the same inputs x [N, ...]: [M, N, ...]."""
    M = next(iter(params.values())).shape[0]
    rows = []
    for m in range(M):
        p = {k: v[m] for k, v in params.items()}
        rows.append(torch.cat([functional_call(model, p, (x[i: i + chunk],)) for i in range(0, len(x), chunk)]))
    return torch.stack(rows)


@torch.no_grad()
@in_eval_mode
def outputs_on_clients(model, params: Stack, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Every model [K] on every client's real samples (x [N, Nmax, ...], mask [N, Nmax]):
    [K, N, Nmax, ...], zeros at padding."""
    flat = outputs_on_shared(model, params, x[mask])                  # [K, total, ...]
    out = flat.new_zeros(flat.shape[0], *mask.shape, *flat.shape[2:])
    out[:, mask] = flat
    return out


@torch.no_grad()
@in_eval_mode
def outputs_paired(model, params: Stack, x: torch.Tensor, n: torch.Tensor, batched: bool,
                   rows: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Model m on its own client's inputs x[rows[m]] (rows: default 0..M-1): [M, Nmax, ...],
    zeros at padding. `batched` uses vmap over the padded data, else a loop over each
    client's real samples."""
    if rows is None:
        rows = torch.arange(next(iter(params.values())).shape[0])
    if batched:
        return vmap(lambda p, xm: functional_call(model, p, (xm,)))(params, x[rows.to(x.device)])
    out_rows = []
    for m, client in enumerate(rows.tolist()):
        n_m = int(n[client])
        out = functional_call(model, {k: v[m] for k, v in params.items()}, (x[client, :max(n_m, 1)],))
        full = out.new_zeros(x.shape[1], *out.shape[1:])
        full[:n_m] = out[:n_m]
        out_rows.append(full)
    return torch.stack(out_rows)


@torch.no_grad()
@in_eval_mode
def losses_on_clients(model, task: str, params: Stack, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor,
                      offsets: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Per-sample loss of each model [K] on every client's samples: [K, N, Nmax] (padding = +inf).
    `offsets` [N, Nmax, C] are added to every model's outputs (Fed-CAM's h(x; Theta_g), eq. 2)."""
    out = outputs_on_shared(model, params, x[mask])                   # [K, total, ...]
    if offsets is not None:
        out = out + offsets[mask].unsqueeze(0)
    flat_y = y[mask]
    losses = torch.full((out.shape[0], *mask.shape), float("inf"), dtype=out.dtype, device=out.device)
    losses[:, mask] = torch.stack([per_sample_loss(task, o, flat_y) for o in out])
    return losses
