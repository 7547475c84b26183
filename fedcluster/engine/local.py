"""Local training of the round's clients: a batched engine and a sequential reference.

Both minimise, for each job row m (a client training one model), the mean loss over each
mini-batch plus the job's terms (engine/terms.py: proximal pulls, frozen offsets added to the
outputs, per-sample weights), with no terms plain local training.

Both engines visit the same mini-batches in the same order (the job's `schedule`) and
apply the same optimizer code, so they give the same numbers up to floating-point
summation order."""
from dataclasses import dataclass, field
from typing import List, Optional

import torch
from torch.func import functional_call, grad, vmap

from .. import signals
from ..data.augment import CropFlip
from ..models.stacked import Stack
from .losses import per_sample_loss
from .terms import Term, row_data
from .optim import PartialUpdate, own_rows, step_rows
from .precision import autocast, full_precision
from .workers import cpu_workers, own_module, split_evenly


@dataclass
class Schedule:
    """Which samples each job row uses at each optimizer step."""
    index: torch.Tensor    # [M, steps, B] sample positions within the row's client data
    valid: torch.Tensor    # [M, steps, B] bool; a step with no valid entry leaves the row untouched
    augment: Optional[dict] = None   # per-sample augmentation parameters, each [M, steps, B, ...]


@dataclass
class LocalJob:
    x: torch.Tensor                 # [N, Nmax, *in_shape] training samples of all clients (not copied)
    y: torch.Tensor                 # [N, Nmax]
    rows: torch.Tensor              # [M] client (data row) trained by each job row; may repeat
    start: Stack                    # [M] starting parameters
    opt_state: dict                 # [M] optimizer state
    schedule: Schedule
    terms: List[Term] = field(default_factory=list)   # of the local objective (engine/terms.py), data [M, ...]
    seed: int = 0                   # seeds each row's dropout masks (sequential engine)
    trainable: Optional[tuple] = None   # parameter names the job updates (None: all; the rest stay fixed)


@dataclass
class LocalResult:
    params: Stack
    opt_state: dict
    last_loss: torch.Tensor         # [M] data loss of the last batch each row trained on
    finite: torch.Tensor            # [M] False if any step of that row saw a NaN/inf loss
    first_loss: Optional[torch.Tensor] = None   # [M] data loss of each row's first batch (its starting model)


class RowLosses:
    """Each row's first and last batch loss and whether all its losses were finite, kept on
    the device (read once per round). The first loss is the starting model's: the runner's
    divergence check compares later losses with it."""

    def __init__(self, M: int, device, dtype=torch.float32):
        self.first = torch.zeros(M, device=device, dtype=dtype)
        self.last = torch.zeros(M, device=device, dtype=dtype)
        self.seen = torch.zeros(M, dtype=torch.bool, device=device)
        self.finite = torch.ones(M, dtype=torch.bool, device=device)

    def record(self, rows: torch.Tensor, loss: torch.Tensor) -> None:
        """Rows `rows` (indices) trained one step with data losses `loss`."""
        loss = loss.detach().to(self.last.dtype)
        self.first[rows] = torch.where(self.seen[rows], self.first[rows], loss)
        self.seen[rows] = True
        self.last[rows] = loss
        self.finite[rows] &= torch.isfinite(loss)

    def record_masked(self, active: torch.Tensor, loss: torch.Tensor) -> None:
        """All rows computed a step; only the `active` ones (bool [M]) had samples."""
        loss = loss.detach().to(self.last.dtype)
        self.first = torch.where(active & ~self.seen, loss, self.first)
        self.seen |= active
        self.last = torch.where(active, loss, self.last)
        self.finite &= torch.isfinite(loss) | ~active

    def result(self, params, state) -> "LocalResult":
        return LocalResult(params, state, self.last, self.finite, self.first)


def epoch_orders(n: torch.Tensor, epochs: int, width: int, g: torch.Generator) -> torch.Tensor:
    """A fresh random permutation of each client's samples for every epoch: [M, epochs, width]."""
    keys = torch.rand(len(n), epochs, width, generator=g)
    keys[torch.arange(width)[None, None, :].expand_as(keys) >= n.cpu()[:, None, None]] = 2.0
    return torch.argsort(keys, dim=-1)


def epoch_schedule(n: torch.Tensor, epochs: int, batch_size: int, width: int, g: torch.Generator) -> Schedule:
    """`epochs` passes over each client's data in batches of `batch_size` (the last one
    smaller); clients with fewer batches sit out the remaining steps of each epoch."""
    n = n.cpu()
    orders = epoch_orders(n, epochs, width, g)                     # [M, E, W]
    per_epoch = -(-max(int(n.max()), 1) // batch_size)
    pad = per_epoch * batch_size - width
    if pad > 0:
        orders = torch.cat([orders, torch.zeros(*orders.shape[:2], pad, dtype=orders.dtype)], dim=2)
    orders = orders[:, :, : per_epoch * batch_size]
    pos = torch.arange(per_epoch * batch_size)
    valid = (pos[None, :] < n[:, None])[:, None, :].expand(-1, epochs, -1)
    shape = (len(n), epochs * per_epoch, batch_size)
    return Schedule(orders.reshape(shape), valid.reshape(shape))


def step_schedule(n: torch.Tensor, steps: int, batch_size: int, g: torch.Generator) -> Schedule:
    """Exactly `steps` optimizer steps per client, each on min(batch_size, n) samples drawn
    without replacement from a stream of fresh permutations of the client's data (Fed-CAM §5:
    '10 local steps' of batch 32 per round, whatever the client's data size)."""
    n = n.cpu()
    M = len(n)
    index = torch.zeros(M, steps, batch_size, dtype=torch.long)
    valid = torch.zeros(M, steps, batch_size, dtype=torch.bool)
    for m in range(M):
        n_m = int(n[m])
        if n_m == 0:
            continue
        b = min(batch_size, n_m)
        need = steps * b
        stream = torch.cat([torch.randperm(n_m, generator=g) for _ in range(-(-need // n_m))])[:need]
        index[m, :, :b] = stream.view(steps, b)
        valid[m, :, :b] = True
    return Schedule(index, valid)


def full_batch_schedule(n: torch.Tensor, width: int) -> Schedule:
    """One step whose batch is all of each client's samples (in order): what a client needs to
    report the gradient of its mean training loss (CLoVE's Option II)."""
    n = n.cpu()
    pos = torch.arange(width)
    return Schedule(pos.expand(len(n), 1, width).clone(), (pos[None, :] < n[:, None]).unsqueeze(1))


class LocalTrainer:
    """Local solver: `epochs` passes over the data, or exactly `steps` mini-batch steps when
    steps is set."""

    def __init__(self, model: torch.nn.Module, task: str, optimizer, epochs: int, batch_size: int,
                 steps: Optional[int] = None, augment: Optional[CropFlip] = None):
        self.model, self.task, self.optimizer = model, task, optimizer
        self.augment = augment
        self.epochs, self.batch_size, self.steps = epochs, batch_size, steps
        self.param_names = [k for k, _ in model.named_parameters()]

    def split(self, stack: Stack):
        """(trainable parameters, buffers such as batch-norm running statistics)."""
        params = {k: stack[k] for k in self.param_names}
        return params, {k: v for k, v in stack.items() if k not in params}

    def optimizer_for(self, job: "LocalJob"):
        """The optimizer, restricted to the job's trainable parameters when it names them."""
        if job.trainable is None:
            return self.optimizer
        unknown = sorted(set(job.trainable) - set(self.param_names))
        if unknown:
            raise ValueError(f"LocalJob.trainable names parameters the model lacks: {unknown}")
        return PartialUpdate(self.optimizer, job.trainable)

    @staticmethod
    def frozen_cut(job: "LocalJob"):
        """params -> params with the job's frozen parameters detached: the backward pass then
        stops where only frozen parameters lie below (FedPAC's head phase differentiates the last
        layer only, not the feature extractor). The trainable parameters' gradients are unchanged."""
        if job.trainable is None:
            return lambda params: params
        keep = frozenset(job.trainable)
        return lambda params: {k: v if k in keep else v.detach() for k, v in params.items()}

    def init_state(self, stack: Stack) -> dict:
        """Optimizer state for the trainable parameters of `stack`."""
        return self.optimizer.init(self.split(stack)[0])

    def schedule(self, n: torch.Tensor, width: int, g: torch.Generator, epochs: Optional[int] = None) -> Schedule:
        """The job's batches: `epochs` passes when given (a Phase's own length), else the
        trainer's steps or epochs."""
        if epochs is not None:
            sched = epoch_schedule(n, epochs, self.batch_size, width, g)
        elif self.steps:
            sched = step_schedule(n, self.steps, self.batch_size, g)
        else:
            sched = epoch_schedule(n, self.epochs, self.batch_size, width, g)
        if self.augment is not None:
            sched.augment = self.augment.draw(sched.index.shape, g)
        return sched

    @staticmethod
    def _augment_on(schedule: Schedule, device) -> None:
        """Move the augmentation draws to the device once per job, not once per step."""
        if schedule.augment is not None:
            schedule.augment = {k: v.to(device) for k, v in schedule.augment.items()}

    def _augmented(self, x: torch.Tensor, schedule: Schedule, rows, step, keep=None) -> torch.Tensor:
        """x with the schedule's augmentation of rows `rows` at `step` (samples `keep` of them)."""
        if self.augment is None or schedule.augment is None:
            return x
        params = {k: v[rows, step] for k, v in schedule.augment.items()}
        if keep is not None:
            params = {k: v[keep.to(v.device)] for k, v in params.items()}
        return self.augment.apply(x, **params)

    def row_batch(self, job: LocalJob, m: int, step: int, client: int):
        """Row m's real samples at `step`, as one client trains on them: (x, y, valid, the terms'
        data of the row), or None when the row has no sample there. Shared by the per-row engines."""
        keep = job.schedule.valid[m, step]
        idx = job.schedule.index[m, step][keep].to(job.x.device)
        if len(idx) == 0:
            return None
        x = self._augmented(job.x[client, idx], job.schedule, m, step, keep)
        valid = torch.ones(len(idx), dtype=job.x.dtype, device=job.x.device)
        return x, job.y[client, idx], valid, tuple(row_data(term, m, idx) for term in job.terms)

    def objective(self, params, x, y, valid, terms, data, buffers=None, model=None, penalties=True):
        """`valid` marks the batch's real samples; `terms` with their row's `data` change the
        outputs, weight each sample's loss and add penalties (off with penalties=False).
        `buffers` (not differentiated) are updated in place by batch norm in train mode."""
        meta = next((t for t in terms if t.replaces_objective), None)
        if meta is not None:   # Per-FedAvg: the term computes the whole objective from data losses
            return meta.objective(lambda p, xs, ys, vs: self.objective(p, xs, ys, vs, (), (), buffers, model)[1],
                                  params, x, y, valid)
        pulls = [(t, d) for t, d in zip(terms, data) if t.uses_features]
        with autocast():
            out = functional_call(model or self.model, {**params, **buffers} if buffers else params, (x,),
                                  {"with_features": True} if pulls else None)
        if pulls:
            out, feats = out
            feats = full_precision(feats)
        out = full_precision(out)
        for term, d in zip(terms, data):
            out = term.outputs(out, d)
        scaled = per_sample_loss(self.task, out, y) * valid
        for term, d in zip(terms, data):
            w = term.weights(d)
            if w is not None:
                scaled = scaled * w
        data_loss = scaled.sum() / valid.sum().clamp_min(1)
        total = data_loss
        if penalties:
            for term, d in zip(terms, data):
                p = term.penalty(params, d)
                if p is not None:
                    total = total + p
            for term, d in pulls:
                total = total + term.feature_penalty(feats, y, valid, d)
        return total, data_loss

    # -- batched: all rows step together under vmap -----------------------------------------
    def train_batched(self, job: LocalJob) -> LocalResult:
        if set(job.start) != set(self.param_names):
            raise ValueError("the batched engine does not train models with buffers (batch norm); use the sequential one")
        device = job.x.device
        rows = job.rows.to(device)
        M = len(rows)
        terms = job.terms
        cut = self.frozen_cut(job)
        step_grad = vmap(grad(lambda p, x, y, v, d: self.objective(cut(p), x, y, v, terms, d), has_aux=True),
                         in_dims=(0, 0, 0, 0, tuple(0 for _ in terms)))
        params, state = own_rows(job.start, job.opt_state)
        optimizer = self.optimizer_for(job)
        index, valid_all = job.schedule.index.to(device), job.schedule.valid.to(device)
        self._augment_on(job.schedule, device)
        log = RowLosses(M, device)
        counts = job.schedule.valid.sum(2)                      # [M, steps] host schedule data: no sync
        all_rows = torch.arange(M, device=device)
        for s in range(index.shape[1]):
            signals.check()   # a stop waits for the step (never inside vmap)
            act = torch.nonzero(counts[:, s]).squeeze(1)
            if len(act) == 0:
                continue
            # When most rows sit out a step (skewed client sizes, late in an epoch) only the rows
            # with samples are computed; otherwise all rows are, and the idle ones left unchanged
            # (gathering a subset costs more than it saves for small models).
            few = len(act) * 2 <= M
            sub = act.to(device) if few else all_rows
            idx, valid = index[sub, s], valid_all[sub, s]           # [M', B]
            data = tuple(row_data(term, sub[:, None] if term.per_sample else sub, idx) for term in terms)
            x = self._augmented(job.x[rows[sub][:, None], idx], job.schedule, act if few else slice(None), s)
            p_sub = {k: v[sub] for k, v in params.items()} if few else params
            g, data_loss = step_grad(p_sub, x, job.y[rows[sub][:, None], idx], valid.to(job.x.dtype), data)
            if few:
                step_rows(optimizer, params, g, state, sub, all_rows=False)
                log.record(sub, data_loss)
            else:
                active = valid.any(1)
                step_rows(optimizer, params, g, state, sub, all_rows=True, active=active)
                log.record_masked(active, data_loss)
        return log.result(params, state)

    # -- looped: a Python loop over the rows, one autograd pass per thread's group of rows ----
    def train_looped(self, job: LocalJob) -> LocalResult:
        """The CPU formulation for convolutional models: each optimizer step runs every active
        row's forward pass on its own real samples (a loop over rows, so each convolution is a
        plain one, which measured faster on CPU than vmap's grouped convolution), takes all
        rows' gradients in one backward pass per group of rows (one group per CPU thread, each
        in its own thread with single-threaded ops: engine/workers.py) and applies one stacked
        optimizer update. Rows share no parameters, so the gradient of a group's summed
        objectives is each row's own.
        Same batches, same math as `train_sequential`; no host sync per step (the rows that
        train at each step come from the schedule, read once)."""
        if set(job.start) != set(self.param_names):
            raise ValueError("the looped engine does not train models with buffers (batch norm); use the sequential one")
        device = job.x.device
        M = len(job.rows)
        names = self.param_names
        trained = frozenset(names if job.trainable is None else job.trainable)   # frozen leaves need no gradient
        trained_names = [k for k in names if k in trained]
        params, state = own_rows(job.start, job.opt_state)
        optimizer = self.optimizer_for(job)
        self._augment_on(job.schedule, device)
        counts = job.schedule.valid.sum(2)             # [M, steps] host schedule data, read without a sync
        clients = job.rows.tolist()
        log = RowLosses(M, device, job.x.dtype)

        def group(step, rows_g):
            """Forward and backward of rows `rows_g` at `step`: (their gradients, their data losses)."""
            model = own_module(self.model)
            take = torch.tensor(rows_g, device=device)
            leaves = {k: params[k].index_select(0, take).requires_grad_(k in trained) for k in names}
            per_row = {k: leaves[k].unbind(0) for k in names}
            total, losses = 0.0, []
            for j, m in enumerate(rows_g):
                x, y, valid, data = self.row_batch(job, m, step, clients[m])
                obj, data_loss = self.objective({k: per_row[k][j] for k in names}, x, y, valid,
                                                job.terms, data, model=model)
                total = total + obj
                losses.append(data_loss.detach())
            grads = dict(zip(trained_names, torch.autograd.grad(total, [leaves[k] for k in trained_names],
                                                                allow_unused=True)))
            return take, [torch.zeros_like(leaves[k]) if grads.get(k) is None else grads[k] for k in names], \
                torch.stack(losses)

        with cpu_workers(device) as workers:
            for step in range(counts.shape[1]):
                signals.check()
                active_rows = torch.nonzero(counts[:, step]).squeeze(1).tolist()
                if not active_rows:
                    continue
                parts = split_evenly(active_rows, workers.count)
                done = workers.map(lambda rows_g: group(step, rows_g), parts)
                rows = torch.cat([take for take, _, _ in done])          # = active_rows, in order
                grads = {k: torch.cat([g_rows[i] for _, g_rows, _ in done]) for i, k in enumerate(names)}
                log.record(rows, torch.cat([loss for _, _, loss in done]))
                step_rows(optimizer, params, grads, state, rows, all_rows=len(active_rows) == M)
        return log.result(params, state)

    # -- sequential reference: one row at a time, plain autograd on its own batches ----------
    def train_sequential(self, job: LocalJob) -> LocalResult:
        from .optim import put_state, take_state
        cut = self.frozen_cut(job)
        single_grad = grad(lambda p, *rest: self.objective(cut(p), *rest), has_aux=True)
        optimizer = self.optimizer_for(job)
        params, buffers = self.split({k: v.clone() for k, v in job.start.items()})
        state = take_state(job.opt_state, slice(None))
        device = job.x.device
        M = len(job.rows)
        log = RowLosses(M, device)
        one = torch.ones(1, dtype=torch.bool, device=device)
        for m in range(M):
            client = int(job.rows[m])
            p = {k: v[m: m + 1] for k, v in params.items()}
            s = take_state(state, slice(m, m + 1))
            b = {k: v[m] for k, v in buffers.items()}          # views: batch norm updates the row in place
            b.update({k: torch.zeros((), dtype=v.dtype, device=device)   # batch counters: not kept
                      for k, v in self.model.named_buffers() if not v.is_floating_point()})
            with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                torch.manual_seed(job.seed + m)                 # this row's dropout masks
                for step in range(job.schedule.index.shape[1]):
                    signals.check()
                    batch = self.row_batch(job, m, step, client)
                    if batch is None:
                        continue
                    x, y, valid, data = batch
                    g, data_loss = single_grad({k: v[0] for k, v in p.items()}, x, y, valid, job.terms, data, b)
                    p, s = optimizer.update(p, {k: v.unsqueeze(0) for k, v in g.items()}, s, one)
                    log.record(torch.tensor([m], device=device), data_loss.reshape(1))
            for k in params:
                params[k][m] = p[k][0]
            put_state(state, slice(m, m + 1), s)
        return log.result({**params, **buffers}, state)

    # -- no training: each row's gradient at its starting parameters -------------------------
    GRADIENT_CHUNK = 1024   # samples per forward/backward pass; the gradients of the chunks are summed

    def gradients(self, job: LocalJob) -> LocalResult:
        """Each row's gradient of its client's mean training loss over all the samples of step 0
        of the job's schedule (`full_batch_schedule`: all of them), at its starting parameters,
        with no optimizer step: CLoVE's Option II, as the authors' code computes it
        (utils/learning_utils.py, compute_gradient: one batch of all the client's data, the model
        in eval mode). Returned in `params` (trainable parameters only); first_loss = last_loss =
        the mean loss at the start. The penalty terms of the objective are not used."""
        params, buffers = self.split(job.start)
        single_grad = grad(self.objective, has_aux=True)
        grads = {k: torch.zeros_like(v) for k, v in params.items()}
        M = len(job.rows)
        log = RowLosses(M, job.x.device, job.x.dtype)
        was_training = self.model.training
        self.model.eval()   # batch norm: running statistics, not updated; dropout off
        try:
            for m in range(M):
                signals.check()
                batch = self.row_batch(job, m, 0, int(job.rows[m]))
                if batch is None:
                    continue
                x, y, valid, data = batch
                p = {k: v[m] for k, v in params.items()}
                b = {k: v[m] for k, v in buffers.items()}
                loss = 0.0
                for lo in range(0, len(y), self.GRADIENT_CHUNK):
                    part = slice(lo, lo + self.GRADIENT_CHUNK)
                    share = len(y[part]) / len(y)   # a chunk's mean loss counts by its share of the samples
                    g, chunk_loss = single_grad(p, x[part], y[part], valid[part], job.terms,
                                                tuple(d[part] if t.per_sample else d for t, d in zip(job.terms, data)),
                                                b, penalties=False)
                    for k in grads:
                        grads[k][m] += share * g[k]
                    loss = loss + share * chunk_loss.detach()
                log.record(torch.tensor([m], device=job.x.device), torch.as_tensor(loss).reshape(1))
        finally:
            self.model.train(was_training)
        return log.result(grads, job.opt_state)

    def train(self, job: LocalJob, engine: str) -> LocalResult:
        if engine == "batched":
            return self.train_batched(job)
        if engine == "looped":
            return self.train_looped(job)
        if engine == "sequential":
            return self.train_sequential(job)
        raise ValueError(f"engine={engine!r} is unknown; allowed: batched, looped, sequential")
