"""Forward passes for evaluation: many models on one data set, or each model on its own data."""
import torch
from torch.func import functional_call, vmap

from ..models.stacked import Stack
from .losses import per_sample_loss


@torch.no_grad()
def outputs_on_shared(model, params: Stack, x: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """Outputs of every model in `params` [M] on the same inputs x [N, ...]: [M, N, ...]."""
    M = next(iter(params.values())).shape[0]
    rows = []
    for m in range(M):
        p = {k: v[m] for k, v in params.items()}
        rows.append(torch.cat([functional_call(model, p, (x[i: i + chunk],)) for i in range(0, len(x), chunk)]))
    return torch.stack(rows)


@torch.no_grad()
def outputs_paired(model, params: Stack, x: torch.Tensor, batched: bool) -> torch.Tensor:
    """Model m on its own inputs x[m]: [M, Nmax, ...]. `batched` uses vmap, else a loop."""
    if batched:
        return vmap(lambda p, xm: functional_call(model, p, (xm,)))(params, x)
    return torch.stack([functional_call(model, {k: v[m] for k, v in params.items()}, (x[m],))
                        for m in range(x.shape[0])])


@torch.no_grad()
def losses_on_clients(model, task: str, params: Stack, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample loss of each model [K] on every client's samples x [N, Nmax, ...]: [K, N, Nmax]."""
    N, W = y.shape
    out = outputs_on_shared(model, params, x.reshape(N * W, *x.shape[2:]))
    flat_y = y.reshape(N * W)
    losses = torch.stack([per_sample_loss(task, o, flat_y) for o in out])
    return losses.reshape(-1, N, W)
