"""One round's client computation for a plan, in chunks of rows: local training or, for a plan
with local="gradient", each client's full-batch gradient (CLoVE Option II).

A round's M rows train in chunks of at most `chunk` rows, one chunk after another; the caller
folds each chunk's trained rows into the aggregate and drops them before the next chunk trains
(runner.py, algorithms/fold.py), so a round holds the training state of `chunk` rows, not M.
Every row's batches, dropout stream and terms are those of the whole plan (the schedule is drawn
for all M rows, then cut), so a row trains to the same numbers in any chunk; only a fold's order
of summation can differ (none with one chunk)."""
import copy
from typing import Callable, Iterator, List, NamedTuple, Optional, Tuple

import torch

from ..models.rows import Rows, count_rows, take_rows
from ..models.stacked import cat_nested, on_device
from ..rng import derived_seed, generator
from .local import LocalJob, LocalResult
from .optim import take_state
from .schedule import Schedule, full_batch_schedule


def chunk_slices(rows: int, chunk: Optional[int]) -> List[slice]:
    """[0, rows) in consecutive slices of at most `chunk` rows (None: one slice)."""
    size = rows if not chunk or chunk >= rows else int(chunk)
    return [slice(a, min(a + size, rows)) for a in range(0, max(rows, 1), max(size, 1))]


def schedule_rows(schedule: Schedule, rows: slice) -> Schedule:
    """The batches of rows `rows` of a schedule."""
    augment = None if schedule.augment is None else {k: v[rows] for k, v in schedule.augment.items()}
    return Schedule(schedule.index[rows], schedule.valid[rows], augment)


def terms_rows(terms, rows: slice) -> list:
    """The terms with the per-row data of rows `rows` only (their shared references kept)."""
    out = []
    for term in terms:
        part = copy.copy(term)
        part.data = term.data[rows]
        out.append(part)
    return out


def client_chunks(t: int, plan, trainer, train_data, engine: str, seed: int, chunk: Optional[int] = None,
                  state_of: Optional[Callable[[slice], dict]] = None) -> Iterator[Tuple[slice, LocalResult]]:
    """(rows, their LocalResult) for each chunk of the plan's rows, trained (or differentiated) on
    their clients' training data (`train_data`: x, y, n of all clients). `state_of(rows)` gives
    a copy of those rows' optimizer state (the job trains it in place) where the caller keeps each client's (it then carries from phase
    to phase); None: fresh state for every job. A plan with phases is trained phase after phase,
    each from the parameters the previous one left, chunk by chunk."""
    if plan.local not in ("train", "gradient"):
        raise ValueError(f"RoundPlan.local={plan.local!r}: expected 'train' or 'gradient'")
    if plan.phases and plan.terms:
        raise ValueError("a RoundPlan with phases carries its terms in its phases, not in RoundPlan.terms")
    tr = train_data
    clients = plan.clients.to(tr.x.device)
    M = len(clients)
    if count_rows(plan.start) != M:
        raise ValueError(f"RoundPlan: {count_rows(plan.start)} starting rows for {M} clients")
    width = tr.x.shape[1]
    if plan.local == "gradient":
        schedule = full_batch_schedule(tr.n[clients], width)
    else:
        stages = plan_stages(plan)
        schedules = [trainer.schedule(tr.n[clients], width, generator(seed, "batches", t, *stage.stream), stage.epochs)
                     for stage in stages]
        training = StagedTraining(t, trainer, tr, engine, seed)
    fresh = isinstance(plan.start, Rows)   # its rows are read into new tensors: the job may train them in place
    for rows in chunk_slices(M, chunk):
        start = on_device(take_rows(plan.start, rows), tr.x.device)   # rows kept on the host come to the device
        opt_state = state_of(rows) if state_of is not None else None
        if plan.local == "gradient":
            yield rows, trainer.gradients(LocalJob(tr.x, tr.y, clients[rows], start, {}, schedule_rows(schedule, rows),
                                                   terms_rows(plan.terms, rows)))
        else:
            yield rows, training.train(clients[rows], rows, start, opt_state, stages, schedules,
                                       owned=fresh and not plan.phases)


class Stage(NamedTuple):
    """One stage of a round's local training: the parameters it updates (None: all), its passes over the data
    (None: the run's train.epochs/steps), its terms, and the suffix of its random streams."""
    trainable: Optional[tuple]
    epochs: Optional[int]
    terms: list
    stream: tuple


def plan_stages(plan) -> List[Stage]:
    """A training plan's local training as stages: its phases (algorithms/base.py Phase; stream suffix: the
    phase's index), or, for a plan without phases, one stage that updates every parameter on the plan's terms for
    the run's budget (no suffix: the streams a round has always drawn from, so runs keep their bytes)."""
    if plan.phases:
        return [Stage(tuple(p.trainable), p.epochs, p.terms, (i,)) for i, p in enumerate(plan.phases)]
    return [Stage(None, None, plan.terms, ())]


class StagedTraining:
    """One round's local training of chunks of rows, stage after stage (plan_stages): each stage from the parameters
    the previous one left, with fresh optimizer state unless the rows' own state is kept (then it carries over). A
    plan's phases give the result of `joined` stages; its one implicit stage, that stage's own result."""

    def __init__(self, t: int, trainer, train_data, engine: str, seed: int):
        self.t, self.trainer, self.data, self.engine, self.seed = t, trainer, train_data, engine, seed

    def train(self, clients, rows: slice, params, opt_state, stages: List[Stage], schedules, owned: bool = False
              ) -> LocalResult:
        kept = opt_state is not None
        results = []
        for stage, schedule in zip(stages, schedules):
            if not kept:
                opt_state = self.trainer.init_state(params)
            job = LocalJob(self.data.x, self.data.y, clients, params, opt_state, schedule_rows(schedule, rows),
                           terms_rows(stage.terms, rows),
                           seed=derived_seed(self.seed, "dropout", self.t, *stage.stream) % 2 ** 62 + rows.start,
                           trainable=stage.trainable, owned=owned)
            results.append(self.trainer.train(job, self.engine))
            params, opt_state = results[-1].params, results[-1].opt_state
        return results[0] if stages[0].stream == () else joined(results)


def run_clients(t: int, plan, trainer, train_data, engine: str, seed: int,
                opt_state: Optional[dict] = None, chunk: Optional[int] = None) -> LocalResult:
    """All of the plan's rows at once (chunk by chunk, joined): the LocalResult of `client_chunks`
    over the whole plan. `opt_state`: the rows' optimizer state where the caller keeps each
    client's; None: fresh state."""
    state_of = None if opt_state is None else (lambda rows: take_state(opt_state, rows))
    parts = list(client_chunks(t, plan, trainer, train_data, engine, seed, chunk, state_of))
    if len(parts) == 1:
        return parts[0][1]
    return concat_results([r for _, r in parts])


def concat_results(results: List[LocalResult]) -> LocalResult:
    """The results of consecutive chunks as one, rows in order."""
    first = None if results[0].first_loss is None else torch.cat([r.first_loss for r in results])
    return LocalResult(cat_nested([r.params for r in results]), cat_nested([r.opt_state for r in results]) if results[0].opt_state
                       else results[0].opt_state, torch.cat([r.last_loss for r in results]),
                       torch.cat([r.finite for r in results]), first)


def joined(results) -> LocalResult:
    """The result of phases run one after the other: the last one's parameters and state, the
    first one's first loss and the last one's last loss (what the divergence check compares),
    finite only where every phase was."""
    finite = results[0].finite
    for r in results[1:]:
        finite = finite & r.finite
    return LocalResult(results[-1].params, results[-1].opt_state, results[-1].last_loss, finite,
                       results[0].first_loss)
