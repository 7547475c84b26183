"""No training: each row's gradient of its client's mean training loss at its starting
parameters (CLoVE's Option II)."""
import torch
from torch.func import grad

from .. import signals
from .gradient_modes import row_batch
from .local_results import LocalResult, RowLosses


def full_gradients(trainer, job) -> LocalResult:
    """Each row's gradient over all the samples of step 0 of the job's schedule
    (`full_batch_schedule`: all of them), with no optimizer step, as the CLoVE authors' code
    computes it (utils/learning_utils.py, compute_gradient: one batch of all the client's data,
    the model in eval mode). Returned in `params` (trainable parameters only); first_loss =
    last_loss = the mean loss at the start. The penalty terms of the objective are not used."""
    params, buffers = trainer.split(job.start)
    single_grad = grad(trainer.objective_for(job), has_aux=True)
    grads = {k: torch.zeros_like(v) for k, v in params.items()}
    log = RowLosses(len(job.rows), job.x.device)
    was_training = trainer.model.training
    trainer.model.eval()   # batch norm: running statistics, not updated; dropout off
    try:
        for m in range(len(job.rows)):
            signals.check()
            batch = row_batch(trainer, job, m, 0, int(job.rows[m]))
            if batch is None:
                continue
            x, y, valid, data = batch
            p = {k: v[m] for k, v in params.items()}
            b = {k: v[m] for k, v in buffers.items()}
            loss = 0.0
            chunk = trainer.GRADIENT_CHUNK
            for lo in range(0, len(y), chunk):
                part = slice(lo, lo + chunk)
                share = len(y[part]) / len(y)   # a chunk's mean loss counts by its share of the samples
                g, chunk_loss = single_grad(p, x[part], y[part], valid[part],
                                            tuple(d[part] if t.per_sample else d for t, d in zip(job.terms, data)),
                                            b, None, False)
                for k in grads:
                    grads[k][m] += share * g[k]
                loss = loss + share * chunk_loss.detach()
            log.record(torch.tensor([m], device=job.x.device), torch.as_tensor(loss).reshape(1))
    finally:
        trainer.model.train(was_training)
    return log.result(grads, job.opt_state)
