"""Optimizers written for stacked state: row m of every tensor belongs to client m.

`update` takes an `active` mask [M]; inactive rows (a client that has run out of
batches this epoch) keep their parameters and state unchanged. `active=None`: every row steps
(no masking pass: `torch.where` over every parameter was 12 % of a batch-10 training step of the
letters CNN, `python benchmarks/breakdown.py --profile`). With M=1 the same code is
the per-client optimizer of the sequential engine, so both engines do identical math.
The update rules follow torch.optim.SGD / torch.optim.Adam (no amsgrad, no decoupled decay).

`update_` is SGD's step done in place, with the same operations in the same order as `update` (so
bit-identical results) and no new parameter-sized tensor but weight decay's: at 40 rows of the
FedAvg CNN the functional step, which allocates the new parameters and momenta and copies them back,
took 1,373 ms per step on one thread against 104 ms in place (`python benchmarks/microbench.py`, item 4,
side by side). Each optimizer says whether it has that step (`in_place`, both do; Adam's since issue 56);
a step that masks rows (`active`) takes the functional path."""
from typing import Dict, Optional

import torch

from ..errors import ConfigError

State = Dict[str, object]


def _keep(active: Optional[torch.Tensor], new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    if active is None:
        return new
    return torch.where(active.view(-1, *([1] * (new.dim() - 1))), new, old)


class SGD:
    in_place = True   # has `update_`

    def __init__(self, lr: float, momentum: float = 0.0, weight_decay: float = 0.0):
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay

    def init(self, params) -> State:
        return {"buf": {k: torch.zeros_like(v) for k, v in params.items()}}

    def update(self, params, grads, state, active):
        new_params, new_buf = {}, {}
        for k, p in params.items():
            g = grads[k] + self.weight_decay * p if self.weight_decay else grads[k]
            if self.momentum:
                b = self.momentum * state["buf"][k] + g
                new_buf[k] = _keep(active, b, state["buf"][k])
                g = b
            else:
                new_buf[k] = state["buf"][k]
            new_params[k] = _keep(active, p - self.lr * g, p)
        return new_params, {"buf": new_buf}

    def update_(self, params, grads, state) -> None:
        """`update` for every row, in place on params and state; consumes `grads` (overwritten)."""
        for k, p in params.items():
            g = grads[k]
            if self.weight_decay:
                g = g.add_(torch.mul(p, self.weight_decay))
            if self.momentum:
                g = state["buf"][k].mul_(self.momentum).add_(g)
            if g is grads[k]:
                g.mul_(self.lr)                          # the gradient is ours to overwrite
            else:
                g = torch.mul(g, self.lr, out=grads[k])  # g is the momentum buffer: keep it
            p.sub_(g)


def row_power(base: float, steps: torch.Tensor) -> torch.Tensor:
    """base ** steps for a vector of per-row step counts, each row's value independent of how many rows
    the vector holds and where the row sits in it. On a CPU, torch's vectorised pow gives last-bit
    different values to the elements of full vector blocks than its scalar path gives the rest
    (measured, torch 2.x: blocks of 32 on an AVX-512 Xeon, shorter on an AVX2 EPYC, where 31 rows
    already differ), so a row's Adam bias correction, and its whole training after, would depend on
    the rows trained beside it: a round's chunk size, or the runs packed with it (issue 57). Each
    distinct count takes the scalar path here, whatever the vector's length (a job's rows share a few
    counts). Elsewhere (CUDA computes each element alike) the plain power."""
    if steps.device.type != "cpu":
        return base ** steps
    values, where = torch.unique(steps, return_inverse=True)
    return torch.cat([base ** values[i:i + 1] for i in range(len(values))])[where]


class Adam:
    in_place = True   # has `update_`

    def __init__(self, lr: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        self.lr, (self.b1, self.b2), self.eps, self.weight_decay = lr, tuple(betas), eps, weight_decay

    def init(self, params) -> State:
        any_p = next(iter(params.values()))
        return {"step": torch.zeros(any_p.shape[0], device=any_p.device, dtype=any_p.dtype),
                "m": {k: torch.zeros_like(v) for k, v in params.items()},
                "v": {k: torch.zeros_like(v) for k, v in params.items()}}

    def update(self, params, grads, state, active):
        step = state["step"] + (1 if active is None else active.to(state["step"].dtype))
        bc1 = 1 - row_power(self.b1, step.clamp_min(1))
        bc2 = 1 - row_power(self.b2, step.clamp_min(1))
        new_params, new_m, new_v = {}, {}, {}
        for k, p in params.items():
            g = grads[k] + self.weight_decay * p if self.weight_decay else grads[k]
            m = self.b1 * state["m"][k] + (1 - self.b1) * g
            v = self.b2 * state["v"][k] + (1 - self.b2) * g * g
            shape = (-1,) + (1,) * (p.dim() - 1)
            denom = (v.sqrt() / bc2.sqrt().view(shape)) + self.eps
            new = p - (self.lr / bc1).view(shape) * m / denom
            new_params[k] = _keep(active, new, p)
            new_m[k] = _keep(active, m, state["m"][k])
            new_v[k] = _keep(active, v, state["v"][k])
        return new_params, {"step": step, "m": new_m, "v": new_v}

    def update_(self, params, grads, state) -> None:
        """`update` for every row, in place on params and state, with its operations in its order (so
        bit-identical results): the moments and parameters are updated where they are, and a step holds
        three parameter-sized temporaries instead of new parameters, moments and their intermediates."""
        state["step"].add_(1)
        step = state["step"]
        bc1 = 1 - row_power(self.b1, step.clamp_min(1))
        bc2 = 1 - row_power(self.b2, step.clamp_min(1))
        for k, p in params.items():
            g = grads[k]
            if self.weight_decay:
                g = g + self.weight_decay * p
            shape = (-1,) + (1,) * (p.dim() - 1)
            m, v = state["m"][k], state["v"][k]
            m.mul_(self.b1).add_(torch.mul(g, 1 - self.b1))
            v.mul_(self.b2).add_(torch.mul(g, 1 - self.b2).mul_(g))
            denom = torch.sqrt(v).div_(bc2.sqrt().view(shape)).add_(self.eps)
            p.sub_(torch.mul((self.lr / bc1).view(shape), m).div_(denom))


OPTIMIZERS = {"sgd": SGD, "adam": Adam}


def build_optimizer(name: str, **kw):
    if name not in OPTIMIZERS:
        raise ConfigError(f"train.optimizer={name!r} is unknown; allowed: {sorted(OPTIMIZERS)}")
    if name == "adam":
        kw.pop("momentum", None)   # Adam's momentum is betas[0]
    return OPTIMIZERS[name](**kw)


class PartialUpdate:
    """`optimizer` applied to the parameters named in `trainable` only: the others keep their
    values and their optimizer state (no step, no weight decay), as parameters with
    requires_grad=False under torch.optim. The state keeps every parameter's entry, so it can
    pass from one phase of a round to the next (algorithms/base.py Phase)."""

    def __init__(self, optimizer, trainable):
        self.inner, self.trainable = optimizer, frozenset(trainable)

    def init(self, params) -> State:
        return self.inner.init(params)

    def _some(self, d: dict) -> dict:
        return {k: v for k, v in d.items() if k in self.trainable}

    def _inner_state(self, state) -> State:
        return {k: self._some(v) if isinstance(v, dict) else v for k, v in state.items()}

    @property
    def in_place(self) -> bool:
        return self.inner.in_place

    def update_(self, params, grads, state) -> None:
        """The inner optimizer's in-place step on the trainable parameters (when `in_place`)."""
        self.inner.update_(self._some(params), self._some(grads), self._inner_state(state))

    def update(self, params, grads, state, active):
        inner_state = self._inner_state(state)
        new_p, new_s = self.inner.update(self._some(params), self._some(grads), inner_state, active)
        merged = {k: {**state[k], **v} if isinstance(v, dict) else v for k, v in new_s.items()}
        return {**params, **new_p}, merged


def take_state(state, index):
    """Rows `index` of an optimizer state (nested dicts of stacked tensors)."""
    if isinstance(state, dict):
        return {k: take_state(v, index) for k, v in state.items()}
    return state[index].clone()


def put_state(state, index, rows):
    if isinstance(state, dict):
        for k in state:
            put_state(state[k], index, rows[k]) if isinstance(state[k], dict) else state[k].__setitem__(index, rows[k])
    else:
        state[index] = rows


def own_rows(params, state):
    """Copies of a job's starting parameters and optimizer state that `step_rows` may update
    in place (one copy per job, not one per step)."""
    return {k: v.clone() for k, v in params.items()}, take_state(state, slice(None))


def step_rows(optimizer, params, grads, state, rows: torch.Tensor, all_rows: bool, active=None) -> None:
    """One optimizer step for rows `rows` only (grads: [len(rows), ...]), in place; the other
    rows keep their parameters and state. Costs O(len(rows)), not O(all rows): with skewed
    client sizes most rows sit out the late steps of an epoch. all_rows: `rows` is every row
    and grads cover them all; `active` [M] (optional) then marks the rows that step."""
    if all_rows and active is None and optimizer.in_place:
        optimizer.update_(params, grads, state)
        return
    if all_rows:
        new_p, new_s = optimizer.update(params, grads, state, active)
        for k in params:
            params[k].copy_(new_p[k])
        put_state(state, slice(None), new_s)
        return
    sub_p, sub_s = {k: v.index_select(0, rows) for k, v in params.items()}, take_state(state, rows)
    if optimizer.in_place:
        optimizer.update_(sub_p, grads, sub_s)
        new_p, new_s = sub_p, sub_s
    else:
        new_p, new_s = optimizer.update(sub_p, grads, sub_s, None)
    for k in params:
        params[k].index_copy_(0, rows, new_p[k])
    put_state(state, rows, new_s)
