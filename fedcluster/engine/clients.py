"""One round's client computation for a plan: local training (either engine) or, for a plan
with local="gradient", each client's full-batch gradient (CLoVE Option II)."""
from ..rng import derived_seed, generator
from .local import LocalJob, LocalResult, full_batch_schedule
from .optim import put_state, take_state


def run_clients(t: int, plan, alg, trainer, fed, record, engine: str, seed: int) -> LocalResult:
    """The plan's rows trained (or differentiated) on their clients' training data. Where the
    algorithm keeps each client's optimizer state (`keep_client_state`), it is taken from and put
    back into `record.client_state`; otherwise every row starts from fresh optimizer state."""
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
    else:
        schedule = trainer.schedule(tr.n[clients], tr.x.shape[1], generator(seed, "batches", t))
    job = LocalJob(tr.x, tr.y, clients, plan.start, opt_state, schedule, plan.terms,
                   seed=derived_seed(seed, "dropout", t) % 2 ** 62)
    return trainer.gradients(job) if gradient_only else trainer.train(job, engine)


def keep_state(plan, alg, fed, record, result) -> None:
    """Store the trained rows' optimizer state back (algorithms that keep client state)."""
    if alg.keep_client_state and plan.local != "gradient":
        put_state(record.client_state, plan.clients.to(fed.device), result.opt_state)
