"""What bounds CPU training of small convolutional models at small batches: per-sample time and
achieved FLOP/s of fedcluster's looped engine and of a plain per-client loop, beside this CPU's
measured matrix-multiply peak, with a per-op profile of each.

For each model (LeNet: workloads (b)-(d); the letters CNN, conv 32/64 @5x5 + FC 512, the closest
of our models to PFLlib's FedAvgCNN): `--clients` clients x `--samples` samples, one local epoch
at `--batch`, SGD, trained (1) by fedcluster's LocalTrainer (engine looped) and (2) by the plain
loop (one nn.Module per client, torch.optim.SGD), both at `--threads` threads. Training FLOPs
per sample = 2 (multiply + add) x 3 (forward, input gradient, weight gradient) x the model's
multiply-accumulates per forward pass (counted from its layers' shapes). Peak: a 1024^3 float32
matmul at the same threads.

Usage: python benchmarks/breakdown.py [--batch 10] [--threads 1] [--models lenet,letters_cnn] [--profile]"""
import argparse
import json
import time

import fedcluster  # noqa: F401  first: its process defaults apply before torch loads
import torch
import torch.nn.functional as F

from fedcluster.local_training.allocator import keep_freed_memory
from fedcluster.local_training.local import LocalJob, LocalTrainer
from fedcluster.local_training.optim import SGD
from fedcluster.models import LeNetCNN, LettersCNN
from fedcluster.models.stacked import init_stack

MODELS = {"lenet": lambda: LeNetCNN((1, 28, 28), 10), "letters_cnn": lambda: LettersCNN((1, 28, 28), 10)}


def forward_macs(model: torch.nn.Module, shape=(1, 28, 28)) -> int:
    """Multiply-accumulates of one forward pass of one sample (convolutions and linear layers)."""
    total = []

    def hook(m, inp, out):
        if isinstance(m, torch.nn.Conv2d):
            total.append(out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1])
        elif isinstance(m, torch.nn.Linear):
            total.append(m.in_features * m.out_features)
    handles = [m.register_forward_hook(hook) for m in model.modules()]
    with torch.no_grad():
        model(torch.zeros(1, *shape))
    for h in handles:
        h.remove()
    return sum(total)


def matmul_peak(threads: int, n: int = 1024, reps: int = 10) -> float:
    """GFLOP/s of an n^3 float32 matmul (the best of three timings)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    best = float("inf")
    for _ in range(3):
        tick = time.perf_counter()
        for _ in range(reps):
            a @ b
        best = min(best, (time.perf_counter() - tick) / reps)
    return 2 * n ** 3 / best / 1e9


def data(clients, samples, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(clients, samples, 1, 28, 28, generator=g), torch.randint(0, 10, (clients, samples), generator=g)


def fedcluster_epoch(model_fn, x, y, batch) -> float:
    M = x.shape[0]
    opt = SGD(lr=0.005)
    trainer = LocalTrainer(model_fn(), "classification", opt, epochs=1, batch_size=batch)
    n = torch.full((M,), x.shape[1])
    start = init_stack(model_fn, M, seed=1, device="cpu", dtype=torch.float32)
    sched = trainer.schedule(n, x.shape[1], torch.Generator().manual_seed(3))
    tick = time.perf_counter()
    trainer.train(LocalJob(x, y, torch.arange(M), start, opt.init(start), sched), "looped")
    return time.perf_counter() - tick


def plain_epoch(model_fn, x, y, batch) -> float:
    tick = time.perf_counter()
    for k in range(x.shape[0]):
        model = model_fn()
        opt = torch.optim.SGD(model.parameters(), lr=0.005)
        for idx in torch.randperm(x.shape[1]).split(batch):
            opt.zero_grad()
            F.cross_entropy(model(x[k, idx]), y[k, idx]).backward()
            opt.step()
    return time.perf_counter() - tick


def op_profile(fn, top=12) -> str:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--models", default="lenet,letters_cnn")
    p.add_argument("--profile", action="store_true", help="also print each one's top ops by self CPU time")
    args = p.parse_args()
    keep_freed_memory()
    torch.set_num_threads(args.threads)
    peak = matmul_peak(args.threads)
    print(json.dumps({"matmul_peak_gflops": round(peak, 1), "threads": args.threads, "torch": torch.__version__}))
    for name in args.models.split(","):
        model_fn = MODELS[name]
        macs = forward_macs(model_fn())
        x, y = data(args.clients, args.samples)
        samples = args.clients * args.samples
        for label, fn in (("fedcluster looped", fedcluster_epoch), ("plain loop", plain_epoch)):
            fn(model_fn, x[:1, :args.batch * 2], y[:1, :args.batch * 2], args.batch)      # first-call costs
            secs = min(fn(model_fn, x, y, args.batch) for _ in range(2))
            us = secs / samples * 1e6
            gflops = 6 * macs * samples / secs / 1e9
            print(json.dumps({"model": name, "forward_macs": macs, "batch": args.batch, "trainer": label,
                              "us_per_sample": round(us, 1), "gflops": round(gflops, 2),
                              "fraction_of_matmul_peak": round(gflops / peak, 3)}), flush=True)
            if args.profile:
                print(op_profile(lambda: fn(model_fn, x, y, args.batch)))


if __name__ == "__main__":
    main()
