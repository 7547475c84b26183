"""How a training step computes the gradients of the rows that train at it: the formulations
the one step loop (local_training/local.py LocalTrainer.train) chooses from by name.

A mode is opened once per job (`open(trainer, job, objective, buffers)`, a context manager
yielding `grads_of`). `grads_of(params, step, act)` takes the stacked parameters [M, ...], the
step and the rows with samples at it (a host tensor of indices) and returns (rows, their
gradients [len(rows), ...], their data losses, an optional bool mask over rows of the rows
that count: a mode may compute idle rows too, whose results are then ignored). All modes
differentiate the same compiled objective (local_training/objective.py) on the same batches, so they
give the same numbers up to floating-point summation order."""
from contextlib import contextmanager

import torch
from torch.func import grad, vmap

from .precision import autocast
from .terms import row_data
from .workers import own_module


def row_batch(trainer, job, m: int, step: int, client: int):
    """Row m's real samples at `step`, as one client trains on them: (x, y, valid, the terms'
    data of the row), or None when the row has no sample there."""
    keep = job.schedule.valid[m, step]
    idx = job.schedule.index[m, step][keep].to(job.x.device)
    if len(idx) == 0:
        return None
    x = trainer.augmented(job.x[client, idx], job.schedule, m, step, keep)
    valid = torch.ones(len(idx), dtype=job.x.dtype, device=job.x.device)
    return x, job.y[client, idx], valid, tuple(row_data(term, m, idx) for term in job.terms)


@contextmanager
def vmapped(trainer, job, objective, buffers):
    """All rows' gradients in one vmap(grad) call (the default on GPU and for non-convolutional
    models). When most rows sit out a step (skewed client sizes, late in an epoch) only the rows
    with samples are computed; otherwise all rows are, and the idle ones ignored (gathering a
    subset costs more than it saves for small models)."""
    terms, device = job.terms, job.x.device
    rows = job.rows.to(device)
    M = len(rows)
    all_rows = torch.arange(M, device=device)
    index, valid_all = job.schedule.index.to(device), job.schedule.valid.to(device)
    step_grad = vmap(grad(lambda p, x, y, v, d: objective(p, x, y, v, d), has_aux=True),
                     in_dims=(0, 0, 0, 0, tuple(0 for _ in terms)))

    def grads_of(params, s, act):
        few = len(act) * 2 <= M
        sub = act.to(device) if few else all_rows
        idx, valid = index[sub, s], valid_all[sub, s]           # [M', B]
        data = tuple(row_data(term, sub[:, None] if term.per_sample else sub, idx) for term in terms)
        x = trainer.augmented(job.x[rows[sub][:, None], idx], job.schedule, act if few else slice(None), s)
        p_sub = {k: v[sub] for k, v in params.items()} if few else params
        g, data_loss = step_grad(p_sub, x, job.y[rows[sub][:, None], idx], valid.to(job.x.dtype), data)
        return sub, g, data_loss, None if few else valid.any(1)

    yield grads_of


@contextmanager
def looped(trainer, job, objective, buffers):
    """The CPU formulation for convolutional models: each step runs every active row's forward
    pass on its own real samples (a loop over rows, so each convolution is a plain one, which
    measured faster on CPU than vmap's grouped convolution) and takes their gradients in one
    backward pass. Rows share no parameters, so the gradient of the rows' summed objectives is
    each row's own. Row-parallel (ROW_PARALLEL): LocalTrainer.train runs one part of the rows
    per CPU thread, each calling this from its own thread with its own copy of the model."""
    device = job.x.device
    clients = job.rows.tolist()
    names = trainer.param_names
    trained = [k for k in names if objective.keep is None or k in objective.keep]

    def grads_of(params, step, act):
        model = own_module(trainer.model)
        rows_g = act.tolist()
        take = act.to(device)
        every_row = len(rows_g) == len(next(iter(params.values())))
        # every row trains (one thread, equal client sizes): the parameters themselves are the leaves
        # (detached aliases, no copy; the step updates them only after this backward pass)
        leaves = {k: (params[k].detach() if every_row else params[k].index_select(0, take)).requires_grad_(True)
                  for k in names}
        per_row = {k: leaves[k].unbind(0) for k in names}
        total, losses = 0.0, []
        for j, m in enumerate(rows_g):
            x, y, valid, data = row_batch(trainer, job, m, step, clients[m])
            obj, data_loss = objective({k: per_row[k][j] for k in names}, x, y, valid, data, model=model)
            total = total + obj
            losses.append(data_loss.detach())
        grads = dict(zip(trained, torch.autograd.grad(total, [leaves[k] for k in trained], allow_unused=True)))
        return take, {k: torch.zeros_like(leaves[k]) if grads.get(k) is None else grads[k] for k in names}, \
            torch.stack(losses), None

    yield grads_of


@contextmanager
def grouped(trainer, job, objective, buffers):
    """The CPU formulation for small batches: each step runs the forward pass of every active row in one call per
    layer (the model's `forward_rows`, models/grouped.py: a grouped convolution, a batched matrix product), the
    rows' losses in one vmap over the objective's terms (`Objective.from_outputs`), and one backward pass. A row's
    batch is padded to the step's width, the padding masked out of its loss (`valid`), as the batched engine does.
    Row-parallel like `looped`: each CPU thread runs its part of the rows with single-threaded ops."""
    model = trainer.model
    why = model.rows_unsupported() if hasattr(model, "rows_unsupported") else \
        f"{type(model).__name__} has no forward_rows"
    if why is None and not objective.rows_at_once:
        why = "a term rewrites the objective (Per-FedAvg's meta step)"
    if why is not None:
        raise ValueError(f"the grouped engine cannot train this job: {why}; use engine=looped")
    device, terms = job.x.device, job.terms
    rows_of = job.rows.to(device)
    index, valid_all = job.schedule.index.to(device), job.schedule.valid.to(device)
    names = trainer.param_names
    trained = [k for k in names if objective.keep is None or k in objective.keep]
    losses_of = vmap(lambda p, out, feats, y, v, d: objective.from_outputs(p, out, feats, y, v, d),
                     in_dims=(0, 0, 0 if objective.features else None, 0, 0, tuple(0 for _ in terms)))

    def grads_of(params, step, act):
        take = act.to(device)
        every_row = len(act) == len(next(iter(params.values())))
        leaves = {k: (params[k].detach() if every_row else params[k].index_select(0, take)).requires_grad_(k in trained)
                  for k in names}
        idx, valid = index[take, step], valid_all[take, step]                   # [R, B]
        clients = rows_of[take][:, None]
        x = trainer.augmented(job.x[clients, idx], job.schedule, act, step)
        with autocast():
            out = model.forward_rows(leaves, x, with_features=objective.features)
        out, feats = out if objective.features else (out, None)
        data = tuple(row_data(term, take[:, None] if term.per_sample else take, idx) for term in terms)
        objs, data_loss = losses_of(leaves, out, feats, job.y[clients, idx], valid.to(job.x.dtype), data)
        grads = dict(zip(trained, torch.autograd.grad(objs.sum(), [leaves[k] for k in trained], allow_unused=True)))
        return take, {k: torch.zeros_like(leaves[k]) if grads.get(k) is None else grads[k] for k in names}, \
            data_loss.detach(), None

    yield grads_of


@contextmanager
def per_row(trainer, job, objective, buffers):
    """The reference: one row at a time, plain autograd on its own batch, with its own batch-norm
    buffers (views of the stacked ones, updated in place) and its own dropout random stream
    (seeded job.seed + m, continued from the row's previous step)."""
    device = job.x.device
    clients = job.rows.tolist()   # read once, not once per row and step
    single_grad = grad(objective, has_aux=True)
    counter_dtypes = {k: v.dtype for k, v in trainer.model.named_buffers() if not v.is_floating_point()}
    counters = {}   # each row's batch counters (not kept after the job)
    cuda = device.type == "cuda"
    streams = {}

    def get_rng():
        return torch.cuda.get_rng_state(device) if cuda else torch.get_rng_state()

    def set_rng(state):
        torch.cuda.set_rng_state(state, device) if cuda else torch.set_rng_state(state)

    def grads_of(params, step, act):
        grads, losses = [], []
        for m in act.tolist():
            x, y, valid, data = row_batch(trainer, job, m, step, clients[m])
            if m not in streams:
                torch.manual_seed(job.seed + m)                 # this row's dropout masks
                streams[m] = get_rng()
            set_rng(streams[m])
            if m not in counters:
                counters[m] = {k: torch.zeros((), dtype=dt, device=device) for k, dt in counter_dtypes.items()}
            b = {**{k: v[m] for k, v in buffers.items()}, **counters[m]}
            g, data_loss = single_grad({k: v[m] for k, v in params.items()}, x, y, valid, data, b)
            streams[m] = get_rng()
            grads.append(g)
            losses.append(data_loss.reshape(()))
        rows = act.to(device)
        return rows, {k: torch.stack([g[k] for g in grads]) for k in params}, torch.stack(losses), None

    with torch.random.fork_rng(devices=[device] if cuda else []):
        yield grads_of


GRADIENT_MODES = {"batched": vmapped, "looped": looped, "grouped": grouped, "sequential": per_row}
ROW_PARALLEL = frozenset({"looped", "grouped"})   # LocalTrainer.train runs its rows in parts, one per CPU thread
HANDLES_BUFFERS = frozenset({"sequential"})   # batch statistics of padded rows would be wrong elsewhere


def gradient_mode(engine: str):
    if engine not in GRADIENT_MODES:
        raise ValueError(f"engine={engine!r} is unknown; allowed: {sorted(GRADIENT_MODES)}")
    return GRADIENT_MODES[engine]
