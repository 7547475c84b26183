"""Local-training jobs of several runs trained as one job (issue 57, packed runs).

A round's chunk of rows is a `LocalJob`: clients, starting models, optimizer state and a schedule of
mini-batches, over the run's client data. Jobs of different runs that train the same model with the
same solver on the same kind of inputs are one computation with more rows: their clients' samples
are put side by side (each run's clients after the previous run's), their rows, models, states and
schedules concatenated, and the one result cut back into each run's rows.

Why the numbers stay each run's own: rows share nothing in local training. A row reads only its
own client's samples at its own schedule's positions, and its optimizer updates only its own row;
the engines already train a round's rows in chunks of any size with the same per-row numbers
(local_training/clients.py), and a row with fewer steps sits out the others' (a step with no valid sample
leaves a row and its optimizer state untouched). So a packed row trains to the numbers it trains
to alone; tests/cli/test_packed_runs.py holds every packable algorithm's metrics byte-identical.

What must agree for jobs to pack (`pack_key`): the engine, the device, the model's architecture
and the solver (optimizer with its settings, batch size), the inputs' stored shape, dtype and
decoding, and which parameters train. A job with objective terms (FedProx's proximal pull, ...)
or augmentation, or a model whose dropout masks are seeded per run, trains alone."""
from typing import Hashable, List, Optional, Sequence, Tuple

import torch

from ..data.samples import ClientSamples
from ..models.stacked import cat_nested, slice_nested
from .local import LocalJob
from .local_results import LocalResult
from .schedule import Schedule


def _decode_key(decode) -> Hashable:
    if decode is None:
        return None
    fields = getattr(decode, "__dict__", {})
    return (type(decode).__name__,) + tuple(
        (k, None if v is None else tuple(v.flatten().tolist()) if torch.is_tensor(v) else v)
        for k, v in sorted(fields.items()))


def _solver_key(optimizer) -> Hashable:
    fields = getattr(optimizer, "__dict__", {})
    return (type(optimizer).__name__,) + tuple(sorted((k, repr(v)) for k, v in fields.items()))


def _has_dropout(model: torch.nn.Module) -> bool:
    return any(isinstance(m, torch.nn.modules.dropout._DropoutNd) for m in model.modules())


def pack_key(trainer, job: LocalJob, engine: str) -> Optional[Hashable]:
    """What jobs must share to train as one; None: this job trains alone."""
    if job.terms or job.schedule.augment is not None or trainer.augment is not None:
        return None
    if not isinstance(job.x, ClientSamples) or _has_dropout(trainer.model):
        return None
    shapes = tuple((k, tuple(v.shape[1:]), str(v.dtype)) for k, v in job.start.items())
    return (engine, str(job.x.device), type(trainer.model).__name__, repr(trainer.model), shapes, trainer.task,
            _solver_key(trainer.optimizer), trainer.batch_size, job.trainable,
            tuple(job.x.storage.shape[1:]), str(job.x.storage.dtype), str(job.x.dtype), _decode_key(job.x.decode),
            str(job.y.dtype), job.schedule.index.shape[2])


def _pad_steps(schedule: Schedule, steps: int) -> Schedule:
    """The schedule with steps appended in which the rows sit out (no valid sample)."""
    extra = steps - schedule.index.shape[1]
    if extra == 0:
        return schedule
    M, _, B = schedule.index.shape
    return Schedule(torch.cat([schedule.index, schedule.index.new_zeros(M, extra, B)], 1),
                    torch.cat([schedule.valid, schedule.valid.new_zeros(M, extra, B)], 1))


class SideBySide:
    """The clients of several runs as one data set: run r's client k is client offset[r] + k. Built once
    per group of runs and reused every round (the runs' data do not change)."""

    def __init__(self, xs: Sequence[ClientSamples], ys: Sequence[torch.Tensor]):
        self.sources = (tuple(xs), tuple(ys))   # held, so the identities that name this pairing stay valid
        width = max(y.shape[1] for y in ys)
        self.x = ClientSamples(torch.cat([x.storage for x in xs]), torch.cat([x.n for x in xs]), xs[0].decode,
                               xs[0].dtype)
        self.y = torch.cat([torch.nn.functional.pad(y, (0, width - y.shape[1])) for y in ys])
        counts = torch.tensor([len(x.n) for x in xs])
        self.offsets = (torch.cumsum(counts, 0) - counts).tolist()

    def names(self, xs, ys) -> bool:
        return all(a is b for a, b in zip(self.sources[0] + self.sources[1], tuple(xs) + tuple(ys))) \
            and len(xs) == len(self.sources[0])


def pack(jobs: Sequence[LocalJob], data: SideBySide) -> Tuple[LocalJob, List[Tuple[int, int]]]:
    """One job training every row of `jobs` over `data` (their runs' clients side by side), and each
    job's rows [a, b) in it."""
    steps = max(j.schedule.index.shape[1] for j in jobs)
    spans, at = [], 0
    for j in jobs:
        spans.append((at, at + len(j.rows)))
        at += len(j.rows)
    schedules = [_pad_steps(j.schedule, steps) for j in jobs]
    rows = torch.cat([j.rows.to(data.x.device) + off for j, off in zip(jobs, data.offsets)])
    job = LocalJob(data.x, data.y, rows, cat_nested([dict(j.start) for j in jobs]), cat_nested([j.opt_state for j in jobs]),
                   Schedule(torch.cat([s.index for s in schedules]), torch.cat([s.valid for s in schedules])),
                   seed=jobs[0].seed, trainable=jobs[0].trainable, owned=True)
    return job, spans


def unpack(result: LocalResult, spans: Sequence[Tuple[int, int]]) -> List[LocalResult]:
    """Each job's rows of the packed job's result."""
    return [LocalResult(*(slice_nested(part, slice(a, b)) for part in (result.params, result.opt_state, result.last_loss,
                                                                       result.finite, result.first_loss)))
            for a, b in spans]
