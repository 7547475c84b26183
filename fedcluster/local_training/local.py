"""Local training of the round's clients: one step loop over a job's schedule.

Each job row m (a client training one model) minimises its objective (local_training/objective.py:
the mean loss over each mini-batch plus the job's terms, local_training/terms.py); with no terms,
plain local training. The loop reads top to bottom: schedule -> rows with samples at the step
-> their gradients (a formulation chosen by name, local_training/gradient_modes.py) -> one stacked
optimizer update of those rows -> loss records. Every formulation visits the same mini-batches
in the same order and shares the optimizer code, so they give the same numbers up to
floating-point summation order."""
from dataclasses import dataclass, field
from typing import List, Optional

import torch

from .. import signals
from ..data.augment import CropFlip
from ..models.stacked import Stack
from .full_gradient import full_gradients
from .gradient_modes import HANDLES_BUFFERS, ROW_PARALLEL, gradient_mode
from .objective import Objective
from .optim import PartialUpdate, own_rows, step_rows
from .local_results import LocalResult, RowLosses
from .schedule import Schedule, epoch_schedule, step_schedule
from .terms import Term
from .workers import balanced_parts, cpu_workers, only_rows


@dataclass
class LocalJob:
    x: torch.Tensor                 # [N, Nmax, *in_shape] training samples of all clients (not copied)
    y: torch.Tensor                 # [N, Nmax]
    rows: torch.Tensor              # [M] client (data row) trained by each job row; may repeat
    start: Stack                    # [M] starting parameters
    opt_state: dict                 # [M] optimizer state
    schedule: Schedule
    terms: List[Term] = field(default_factory=list)   # of the local objective (local_training/terms.py), data [M, ...]
    seed: int = 0                   # seeds each row's dropout masks (sequential engine)
    trainable: Optional[tuple] = None   # parameter names the job updates (None: all; the rest stay fixed)
    owned: bool = False             # start and opt_state are the job's own (made for it): trained in place, not copied


class LocalTrainer:
    """Local solver: `epochs` passes over the data, or exactly `steps` mini-batch steps when
    steps is set."""
    GRADIENT_CHUNK = 1024   # samples per forward/backward pass of a full-batch gradient (summed)

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

    def objective_for(self, job: LocalJob) -> Objective:
        """The job's objective; with `job.trainable`, its frozen parameters are detached."""
        if job.trainable is not None:
            unknown = sorted(set(job.trainable) - set(self.param_names))
            if unknown:
                raise ValueError(f"LocalJob.trainable names parameters the model lacks: {unknown}")
        return Objective(self.model, self.task, job.terms, job.trainable)

    def optimizer_for(self, job: LocalJob):
        """The optimizer, restricted to the job's trainable parameters when it names them."""
        return self.optimizer if job.trainable is None else PartialUpdate(self.optimizer, job.trainable)

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

    def augmented(self, x: torch.Tensor, schedule: Schedule, rows, step, keep=None) -> torch.Tensor:
        """x with the schedule's augmentation of rows `rows` at `step` (samples `keep` of them)."""
        if self.augment is None or schedule.augment is None:
            return x
        params = {k: v[rows, step] for k, v in schedule.augment.items()}
        if keep is not None:
            params = {k: v[keep.to(v.device)] for k, v in params.items()}
        return self.augment.apply(x, **params)

    def train(self, job: LocalJob, engine: str) -> LocalResult:
        """The job's rows trained over its schedule, their gradients computed by `engine`
        (batched: vmap; looped: a loop over rows, one backward pass per step and thread; grouped: every active
        row's forward in one call per layer, one backward pass per step and thread, and looped for a job whose
        objective a term rewrites; sequential: one row at a time, the reference, and the only one for models with
        buffers).

        A row-parallel engine (looped, grouped) splits the rows into one part per CPU thread, balanced by
        their samples, and each thread runs the whole step loop for its part with single-threaded
        ops (local_training/workers.py): no thread waits for another until the job ends, and a part
        whose clients finish early never idles a core while others still train (client sizes
        are skewed). Rows share nothing, so each row's numbers do not depend on the split; the
        parts update disjoint rows of the stacked tensors in place."""
        mode = gradient_mode(engine)   # an unknown name is refused before anything else
        objective, optimizer = self.objective_for(job), self.optimizer_for(job)
        if engine == "grouped" and not objective.rows_at_once:
            engine = "looped"   # a term rewrites the objective (Per-FedAvg's meta step): the same math, row by row
            mode = gradient_mode(engine)
        params, buffers = self.split(job.start)
        if buffers and engine not in HANDLES_BUFFERS:
            raise ValueError(f"the {engine} engine does not train models with buffers (batch norm); "
                             "use the sequential one")
        params, state = (params, job.opt_state) if job.owned else own_rows(params, job.opt_state)
        buffers = {k: v.clone() for k, v in buffers.items()}    # batch norm updates its row in place
        device, M = job.x.device, len(job.rows)
        job.schedule.augment_on(device)
        counts = job.schedule.active_counts()
        log = RowLosses(M, device)

        def steps(counts_of_rows):
            """The step loop over the rows whose counts are given (the others' are zero)."""
            for step in range(counts_of_rows.shape[1]):
                signals.check()   # a stop waits for the step (never inside a transformed function)
                if signals.worker_should_stop():   # the calling thread raises it once the parts are back
                    return
                act = torch.nonzero(counts_of_rows[:, step]).squeeze(1)
                if len(act) == 0:
                    continue
                rows, grads, data_loss, active = grads_of(params, step, act)
                step_rows(optimizer, params, grads, state, rows, all_rows=len(rows) == M, active=active)
                log.record(rows, data_loss, active)

        with mode(self, job, objective, buffers) as grads_of:
            if engine in ROW_PARALLEL:
                with cpu_workers(device) as workers:
                    workers.map(steps, [only_rows(counts, part) for part in balanced_parts(counts, workers.count)])
                signals.check()
            else:
                steps(counts)
        return log.result({**params, **buffers}, state)

    def gradients(self, job: LocalJob) -> LocalResult:
        """Each row's full-batch gradient at its starting parameters (local_training/full_gradient.py)."""
        return full_gradients(self, job)
