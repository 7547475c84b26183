"""What a training phase that updates only some parameters costs (FedPAC's head phase), as a
ratio to a phase that updates them all, measured side by side in one process.

Frozen parameters are detached before the forward pass (local_training/objective.py Objective, in every
gradient formulation), so the backward pass stops at the last layer: a head
phase should cost little more than the forward passes, not a full training epoch.

Setting: LeNet, 20 clients x 500 samples, one epoch of batch 100, Adam, 1 thread, median of 5.
Usage: python benchmarks/bench_phases.py"""
import time

import torch

from fedcluster.algorithms.fedpac import head_names
from fedcluster.local_training.local import LocalJob, LocalTrainer
from fedcluster.local_training.optim import Adam
from fedcluster.models import LeNetCNN
from fedcluster.models.stacked import init_stack


def build():
    return LeNetCNN((1, 28, 28), 10)


def main():
    torch.set_num_threads(1)
    N, n = 20, 500
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(N, n, 1, 28, 28, generator=g), torch.randint(0, 10, (N, n), generator=g)
    trainer = LocalTrainer(build(), "classification", Adam(lr=1e-3), epochs=1, batch_size=100)
    start = init_stack(build, N, 1, torch.device("cpu"), torch.float32)
    head = tuple(head_names(build()))
    body = tuple(k for k in trainer.param_names if k not in head)
    print(f"{'engine':8} {'phase':6} {'median s':>9} {'vs all':>7}")
    for engine in ("looped", "batched"):
        times = {"all": [], "head": [], "body": []}
        for _ in range(5):
            for phase, trainable in (("all", None), ("head", head), ("body", body)):
                sched = trainer.schedule(torch.full((N,), n), n, torch.Generator().manual_seed(3))
                job = LocalJob(x, y, torch.arange(N), start, trainer.init_state(start), sched, [],
                               trainable=trainable)
                tick = time.perf_counter()
                trainer.train(job, engine)
                times[phase].append(time.perf_counter() - tick)
        median = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
        for phase in ("all", "head", "body"):
            print(f"{engine:8} {phase:6} {median[phase]:9.3f} {median[phase] / median['all']:7.2f}")


if __name__ == "__main__":
    main()
