"""Local training of the round's clients: a batched engine and a sequential reference.

Both minimise, for each client m, the local objective

    mean_{batch} loss(w_m; x, y) + 1/2 * sum_r coeff[m, r] * ||w_m - ref_r||^2

which covers plain local training (no references), FedProx (one reference, the global
model, coeff = mu) and FedSoft's proximal objective h_k (eq. 4: references = the S centers,
coeff = lambda * u_ks). Both engines visit the same mini-batches in the same order (given
by `orders`) and apply the same optimizer code, so they give the same numbers up to
floating-point summation order."""
import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch.func import functional_call, grad, vmap

from ..models.stacked import Stack
from .losses import per_sample_loss


@dataclass
class LocalJob:
    x: torch.Tensor                 # [M, Nmax, *in_shape] training samples of the M clients
    y: torch.Tensor                 # [M, Nmax]
    n: torch.Tensor                 # [M] samples per client
    start: Stack                    # [M] starting parameters
    opt_state: dict                 # [M] optimizer state
    orders: torch.Tensor            # [M, epochs, Nmax] sample order per epoch (first n[m] entries valid)
    refs: Optional[Stack] = None    # [R] proximal reference models, shared by all clients
    coeffs: Optional[torch.Tensor] = None   # [M, R]


@dataclass
class LocalResult:
    params: Stack
    opt_state: dict
    last_loss: torch.Tensor         # [M] data loss of the last batch each client trained on
    finite: torch.Tensor            # [M] False if any step of that client saw a NaN/inf loss


def epoch_orders(n: torch.Tensor, epochs: int, width: int, g: torch.Generator) -> torch.Tensor:
    """A fresh random permutation of each client's samples for every epoch: [M, epochs, width]."""
    keys = torch.rand(len(n), epochs, width, generator=g)
    keys[torch.arange(width)[None, None, :].expand_as(keys) >= n.cpu()[:, None, None]] = 2.0
    return torch.argsort(keys, dim=-1)


class LocalTrainer:
    def __init__(self, model: torch.nn.Module, task: str, optimizer, epochs: int, batch_size: int):
        self.model, self.task, self.optimizer = model, task, optimizer
        self.epochs, self.batch_size = epochs, batch_size

    def objective(self, params, x, y, valid, coeffs, refs):
        out = functional_call(self.model, params, (x,))
        losses = per_sample_loss(self.task, out, y)
        data_loss = (losses * valid).sum() / valid.sum().clamp_min(1)
        total = data_loss
        if refs is not None:
            sq = sum(((params[k].unsqueeze(0) - refs[k]) ** 2).flatten(1).sum(1) for k in params)
            total = total + 0.5 * (coeffs * sq).sum()
        return total, data_loss

    # -- batched: all clients step together under vmap -------------------------------------
    def train_batched(self, job: LocalJob) -> LocalResult:
        M = job.n.shape[0]
        B = self.batch_size
        has_refs = job.refs is not None
        step_grad = vmap(grad(self.objective, has_aux=True),
                         in_dims=(0, 0, 0, 0, 0 if has_refs else None, None))
        params, state = job.start, job.opt_state
        device = job.x.device
        n = job.n.to(device)
        rows = torch.arange(M, device=device)[:, None]
        last = torch.zeros(M, device=device)
        finite = torch.ones(M, dtype=torch.bool, device=device)
        orders = job.orders.to(device)
        steps = math.ceil(int(job.n.max()) / B)
        for e in range(self.epochs):
            for j in range(steps):
                pos = j * B + torch.arange(B, device=device)
                pos = pos[pos < orders.shape[-1]]
                idx = orders[:, e, pos]                       # [M, b]
                valid = pos[None, :] < n[:, None]             # [M, b]
                active = valid.any(1)
                g, data_loss = step_grad(params, job.x[rows, idx], job.y[rows, idx], valid.to(job.x.dtype),
                                         job.coeffs if has_refs else None, job.refs)
                params, state = self.optimizer.update(params, g, state, active)
                last = torch.where(active, data_loss.detach(), last)
                finite &= torch.isfinite(data_loss) | ~active
        return LocalResult(params, state, last, finite)

    # -- sequential reference: one client at a time, plain autograd on its own batches -------
    def train_sequential(self, job: LocalJob) -> LocalResult:
        from .optim import put_state, take_state
        single_grad = grad(self.objective, has_aux=True)
        params = {k: v.clone() for k, v in job.start.items()}
        state = take_state(job.opt_state, slice(None))
        M = job.n.shape[0]
        last = torch.zeros(M, device=job.x.device)
        finite = torch.ones(M, dtype=torch.bool, device=job.x.device)
        one = torch.ones(1, dtype=torch.bool, device=job.x.device)
        for m in range(M):
            p = {k: v[m: m + 1] for k, v in params.items()}
            s = take_state(state, slice(m, m + 1))
            n_m = int(job.n[m])
            coeffs = job.coeffs[m] if job.refs is not None else None
            for e in range(self.epochs):
                order = job.orders[m, e, :n_m].to(job.x.device)
                for start in range(0, n_m, self.batch_size):
                    idx = order[start: start + self.batch_size]
                    x, y = job.x[m, idx], job.y[m, idx]
                    valid = torch.ones(len(idx), dtype=job.x.dtype, device=job.x.device)
                    g, data_loss = single_grad({k: v[0] for k, v in p.items()}, x, y, valid, coeffs, job.refs)
                    p, s = self.optimizer.update(p, {k: v.unsqueeze(0) for k, v in g.items()}, s, one)
                    last[m] = data_loss.detach()
                    finite[m] &= bool(torch.isfinite(data_loss))
            for k in params:
                params[k][m] = p[k][0]
            put_state(state, slice(m, m + 1), s)
        return LocalResult(params, state, last, finite)

    def train(self, job: LocalJob, engine: str) -> LocalResult:
        return self.train_batched(job) if engine == "batched" else self.train_sequential(job)
