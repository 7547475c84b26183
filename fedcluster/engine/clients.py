"""One round's client computation for a plan: local training or, for a plan with
local="gradient", each client's full-batch gradient (CLoVE Option II)."""
from typing import Optional

from ..rng import derived_seed, generator
from .local import LocalJob, LocalResult
from .schedule import full_batch_schedule


def run_clients(t: int, plan, trainer, train_data, engine: str, seed: int,
                opt_state: Optional[dict] = None) -> LocalResult:
    """The plan's rows trained (or differentiated) on their clients' training data
    (`train_data`: x, y, n of all clients). `opt_state` is the rows' optimizer state where the
    caller keeps each client's (it then carries from phase to phase); None: fresh state for every
    job. A plan with phases is trained phase after phase, each from the parameters the previous
    one left."""
    if plan.local not in ("train", "gradient"):
        raise ValueError(f"RoundPlan.local={plan.local!r}: expected 'train' or 'gradient'")
    tr = train_data
    clients = plan.clients.to(tr.x.device)
    if plan.local == "gradient":
        schedule = full_batch_schedule(tr.n[clients], tr.x.shape[1])
        return trainer.gradients(LocalJob(tr.x, tr.y, clients, plan.start, {}, schedule, plan.terms))
    kept = opt_state is not None
    if not plan.phases:
        schedule = trainer.schedule(tr.n[clients], tr.x.shape[1], generator(seed, "batches", t))
        job = LocalJob(tr.x, tr.y, clients, plan.start, opt_state if kept else trainer.init_state(plan.start),
                       schedule, plan.terms, seed=derived_seed(seed, "dropout", t) % 2 ** 62)
        return trainer.train(job, engine)
    if plan.terms:
        raise ValueError("a RoundPlan with phases carries its terms in its phases, not in RoundPlan.terms")
    params, results = plan.start, []
    for i, phase in enumerate(plan.phases):
        if not kept:
            opt_state = trainer.init_state(params)
        schedule = trainer.schedule(tr.n[clients], tr.x.shape[1], generator(seed, "batches", t, i), phase.epochs)
        job = LocalJob(tr.x, tr.y, clients, params, opt_state, schedule, phase.terms,
                       seed=derived_seed(seed, "dropout", t, i) % 2 ** 62, trainable=tuple(phase.trainable))
        results.append(trainer.train(job, engine))
        params, opt_state = results[-1].params, results[-1].opt_state
    return joined(results)


def joined(results) -> LocalResult:
    """The result of phases run one after the other: the last one's parameters and state, the
    first one's first loss and the last one's last loss (what the divergence check compares),
    finite only where every phase was."""
    finite = results[0].finite
    for r in results[1:]:
        finite = finite & r.finite
    return LocalResult(results[-1].params, results[-1].opt_state, results[-1].last_loss, finite,
                       results[0].first_loss)
