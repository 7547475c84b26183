"""Seconds per round of local training, batched (vmap) vs sequential engine.

Workloads:
  (a) FedSoft on synthetic mixed linear regression, 100 clients, the FedSoft App. C defaults
      (Adam 5e-3, 10 local epochs, batch 10, K=60, tau=2).
  (b) FedAvg with a small CNN (LeNet: conv 6 and 16 channels, FC) on 28x28 Fashion-MNIST images,
      20 clients x 500 samples, batch 100, 1 local epoch.

Usage: python scripts/benchmark.py [--rounds 3] [--hardware cpu|cuda] [--only a|b]
Prints a table: workload, engine, seconds per round (training only), ratio sequential/batched,
and what engine=auto picks there."""
import argparse
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import make_cfg  # noqa: E402

from fedcluster.runner import choose_engine, run  # noqa: E402

WORKLOADS = {
    "a": ("FedSoft synthetic, 100 clients", []),
    "b": ("LeNet CNN, FMNIST 28x28, 20 clients x 500", [
        "dataset=fashion_mnist", "model=lenet", "algorithm=fedavg", "partition=clustered",
        "partition.num_clients=20", "partition.min_samples=500", "partition.max_samples=500",
        "train.optimizer=sgd", "train.lr=0.01", "train.batch_size=100", "train.epochs=1"]),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--hardware", default="cpu")
    p.add_argument("--only", choices=sorted(WORKLOADS))
    args = p.parse_args()
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, hardware {args.hardware}")
    print(f"{'workload':45s} {'batched s/round':>16s} {'sequential s/round':>19s} {'seq/batched':>12s} {'auto picks':>11s}")
    for key, (title, overrides) in WORKLOADS.items():
        if args.only and key != args.only:
            continue
        times = {}
        for engine in ("batched", "sequential"):
            cfg = make_cfg(overrides + [f"hardware={args.hardware}", f"engine={engine}", f"rounds={args.rounds}",
                                        f"eval_every={args.rounds}", "progress=false", "plots=false",
                                        "checkpoint_every=0"])
            with tempfile.TemporaryDirectory() as out:
                summary = run(cfg, out)
            times[engine] = summary["train_seconds_per_round"]
            auto = choose_engine("auto", _model_of(overrides), torch.device(args.hardware))
        print(f"({key}) {title:41s} {times['batched']:16.3f} {times['sequential']:19.3f} "
              f"{times['sequential'] / times['batched']:12.2f} {auto:>11s}", flush=True)


def _model_of(overrides):
    from fedcluster.models import LeNetCNN, LinearRegression
    return LeNetCNN((1, 28, 28), 10) if "model=lenet" in overrides else LinearRegression((10,))


if __name__ == "__main__":
    main()
