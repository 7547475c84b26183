"""The FLOPs one run will do, counted before it runs: the model's FLOPs per sample (flops.py) times the samples its
protocol puts through the model, round by round, as the method declares its rounds (Algorithm.round_work,
algorithms/work.py) and the run's settings say (rounds, the solver's schedule, eval_every and what an evaluation
scores). Counted on the run as built (assemble.build: its data, clients and model), so every size is the run's
own; nothing is trained.

- training: each trained row runs its client's solver, the schedule the trainer draws (local_training/
  schedule.py: train.epochs passes or train.steps batches), forward and backward per sample;
- scoring: each scored model's forward over every client's training data as the run stores it ([N, Nmax],
  padding included, as the scoring pass computes it), and a row's extra passes over its client's;
- evaluation (every eval_every rounds and the last): the cluster models over each distribution's test set and
  the predictors over each client's test split (and its training split with eval_local_train, its validation
  split where one is carved; its training split at the round's start with eval_round_start_train)."""
from dataclasses import dataclass, field
from typing import Dict

import torch

from .flops import SampleFlops, sample_flops


@dataclass
class Work:
    """FLOPs by kind: training (forward and backward), and forward-only scoring and evaluation."""
    train: float = 0.0
    score: float = 0.0
    evaluate: float = 0.0
    per_round: Dict[int, float] = field(default_factory=dict)
    computed: Dict[int, float] = field(default_factory=dict)   # each round's training and scoring, without evaluation

    @property
    def total(self) -> float:
        return self.train + self.score + self.evaluate


def _padded(split) -> int:
    return int(split.n.numel() * split.x.shape[1]) if split is not None and split.n.numel() else 0


def solver_samples(trainer, n: torch.Tensor, width: int, seed: int) -> float:
    """Mean samples one client's solver puts through the model in a round (forward and backward each),
    from the schedule the trainer draws for every client."""
    g = torch.Generator().manual_seed(seed)
    return float(trainer.schedule(n.cpu(), width, g).active_counts().sum()) / max(1, len(n))


def run_work(cfg, fed, alg, trainer, flops: SampleFlops = None, rounds: int = None) -> Work:
    """The FLOPs of `cfg`'s rounds (its first `rounds`) on its built run (fed, alg after `alg.setup(fed)`,
    trainer)."""
    flops = flops or sample_flops(fed.build_model, tuple(fed.data.in_shape))
    data, N = fed.data, fed.num_clients
    row = solver_samples(trainer, data.train.n, int(data.train.x.shape[1]), cfg.seed)
    train_padded = _padded(data.train)
    mean_n = float(data.train.n.double().mean()) if N else 0.0
    centers = alg.cluster_models()
    K = 0 if centers is None else int(next(iter(centers.values())).shape[0])
    per_eval = _padded(data.local_test) + _padded(data.validation) + (train_padded if cfg.eval_local_train else 0) \
        + (train_padded if cfg.get("eval_round_start_train") else 0)
    centers_eval = K * sum(len(y) for _, y in data.source_test)
    work = Work()
    for t in range(cfg.rounds if rounds is None else rounds):
        w = alg.round_work(t, N)
        samples = row if w.epochs is None else w.epochs * mean_n
        train = w.trained * w.solver_scale * samples * flops.train
        score = (w.scored * train_padded + w.trained * w.row_passes * data.train.x.shape[1]) * flops.forward
        evaluated = t == cfg.rounds - 1 or (t + 1) % cfg.eval_every == 0
        evaluate = ((alg.evaluated_models(t, N) * per_eval + centers_eval) * flops.forward
                    + alg.evaluation_training(t, N) * flops.train) if evaluated else 0.0
        work.train, work.score, work.evaluate = work.train + train, work.score + score, work.evaluate + evaluate
        work.per_round[t] = train + score + evaluate
        work.computed[t] = train + score
    return work
