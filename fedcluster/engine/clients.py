"""One round's client computation for a plan: local training (either engine) or, for a plan
with local="gradient", each client's full-batch gradient (CLoVE Option II)."""

from ..rng import derived_seed, generator
from .local import LocalJob, LocalResult, full_batch_schedule
from .optim import put_state, take_state


def run_clients(t: int, plan, alg, trainer, fed, record, engine: str, seed: int) -> LocalResult:
    """The plan's rows trained (or differentiated) on their clients' training data. Where the
    algorithm keeps each client's optimizer state (`keep_client_state`), it is taken from and put
    back into `record.client_state`; otherwise every row starts from fresh optimizer state. A plan
    with phases is trained phase after phase, each from the parameters the previous one left."""
    clients = plan.clients.to(fed.device)
    if plan.local not in ("train", "gradient"):
        raise ValueError(f"RoundPlan.local={plan.local!r}: expected 'train' or 'gradient'")
    gradient_only = plan.local == "gradient"
    if gradient_only:
        opt_state = {}
    elif alg.keep_client_state:
        if record.client_state is None:
            record.client_state = trainer.init_state(alg.local_models(fed))
        opt_state = take_state(record.client_state, clients)
    else:
        opt_state = trainer.init_state(plan.start)
    tr = fed.data.train
    if gradient_only:
        schedule = full_batch_schedule(tr.n[clients], tr.x.shape[1])
        return trainer.gradients(LocalJob(tr.x, tr.y, clients, plan.start, opt_state, schedule, plan.terms))
    if not plan.phases:
        schedule = trainer.schedule(tr.n[clients], tr.x.shape[1], generator(seed, "batches", t))
        job = LocalJob(tr.x, tr.y, clients, plan.start, opt_state, schedule, plan.terms,
                       seed=derived_seed(seed, "dropout", t) % 2 ** 62)
        return trainer.train(job, engine)
    if plan.terms:
        raise ValueError("a RoundPlan with phases carries its terms in its phases, not in RoundPlan.terms")
    params, results = plan.start, []
    for i, phase in enumerate(plan.phases):
        if i and not alg.keep_client_state:
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


def keep_state(plan, alg, fed, record, result) -> None:
    """Store the trained rows' optimizer state back (algorithms that keep client state)."""
    if alg.keep_client_state and plan.local != "gradient":
        put_state(record.client_state, plan.clients.to(fed.device), result.opt_state)
