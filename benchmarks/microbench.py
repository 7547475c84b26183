"""The micro-measurements behind docs/performance.md's choices (this CPU; µs per sample).

  1. LeNet forward (chunk 256, 1 thread): nn.MaxPool2d vs fedcluster's strided 2x2 max-pool.
  2. A LeNet training step (forward + all gradients), batch 32 and 100, 1 thread: glibc's default
     malloc vs local_training/allocator.py's tunables (each in a fresh process).
  3. Scoring 4 LeNets on 10,000 inputs (evaluate.outputs_on_shared) per chunk budget, 1 and 2 threads.
  4. One SGD-with-momentum step of 40 stacked FedAvg CNNs (Fed-CAM's 20 clients x (cluster model + h)),
     1 thread: the functional `SGD.update` (new tensors, copied back) vs the in-place `SGD.update_`
     (local_training/optim.py step_rows), ms per step, side by side; both give the same bits (checked here).

Usage: python benchmarks/microbench.py [--smoke]   (--smoke: tiny sizes, item 4 only, to keep the script working)"""
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def per_sample(f, n, repeat=20):
    f()
    tick = time.perf_counter()
    for _ in range(repeat):
        f()
    return (time.perf_counter() - tick) / repeat / n * 1e6


def train_step(tuned: bool, batch: int) -> float:
    """LeNet gradient step (cross-entropy, all parameters) per sample, 1 thread, fresh process."""
    from fedcluster.local_training.allocator import keep_freed_memory
    from fedcluster.models import LeNetCNN
    if tuned:
        keep_freed_memory()
    torch.set_num_threads(1)
    model = LeNetCNN((1, 28, 28), 10)
    x, y, params = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,)), list(model.parameters())
    return per_sample(lambda: torch.autograd.grad(F.cross_entropy(model(x), y), params), batch, 50)


def optimizer_step(rows: int, repeat: int) -> None:
    """Item 4: ms per step of SGD (lr 1e-3, momentum 0.9) on `rows` stacked FedAvg CNNs, functional vs in place."""
    from fedcluster.local_training.optim import SGD, step_rows, take_state
    from fedcluster.models.cnn import FedAvgCNN
    from fedcluster.models.stacked import init_stack
    torch.set_num_threads(1)
    params = init_stack(lambda: FedAvgCNN((1, 28, 28), 10), rows, 0, "cpu", torch.float32)
    gen = torch.Generator().manual_seed(0)
    grads = [{k: torch.randn(v.shape, generator=gen) for k, v in params.items()} for _ in range(repeat + 1)]
    opt, every = SGD(1e-3, momentum=0.9), torch.arange(rows)
    ours = {k: v.clone() for k, v in params.items()}
    ours_state = opt.init(ours)
    theirs, theirs_state = {k: v.clone() for k, v in params.items()}, take_state(ours_state, slice(None))
    walls = {"functional": 0.0, "in place": 0.0}
    for i, g in enumerate(grads):
        tick = time.perf_counter()     # the functional step as step_rows took it before: new tensors, copied back
        new_p, new_s = opt.update(theirs, g, theirs_state, None)
        for k in theirs:
            theirs[k].copy_(new_p[k])
            theirs_state["buf"][k].copy_(new_s["buf"][k])
        walls["functional"] += (time.perf_counter() - tick) * (i > 0)
        g = {k: v.clone() for k, v in g.items()}    # update_ consumes its gradients
        tick = time.perf_counter()
        step_rows(opt, ours, g, ours_state, every, all_rows=True)
        walls["in place"] += (time.perf_counter() - tick) * (i > 0)
    same = all(torch.equal(ours[k], theirs[k]) for k in ours)
    print(f"4. SGD step of {rows} stacked FedAvg CNNs, 1 thread: functional {walls['functional'] / repeat * 1e3:.1f} ms, "
          f"in place {walls['in place'] / repeat * 1e3:.1f} ms per step "
          f"(ratio {walls['functional'] / max(walls['in place'], 1e-9):.1f}); same parameters: {same}")
    if not same:
        raise SystemExit("microbench.py: the in-place step gave different parameters")


def main():
    if sys.argv[1:] == ["--smoke"]:
        optimizer_step(rows=2, repeat=1)
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--step":
        print(train_step(sys.argv[2] == "tuned", int(sys.argv[3])))
        return
    from fedcluster.local_training import forward as ev
    from fedcluster.models import LeNetCNN
    from fedcluster.models.stacked import init_stack
    torch.set_num_threads(1)
    model = LeNetCNN((1, 28, 28), 10).eval()
    native = LeNetCNN((1, 28, 28), 10).eval()
    for seq in (native.features, ):
        for i, m in enumerate(seq):
            if type(m).__name__ == "MaxPool2x2":
                seq[i] = nn.MaxPool2d(2)
    x = torch.randn(256, 1, 28, 28)
    with torch.inference_mode():
        print(f"1. LeNet forward, chunk 256, 1 thread: nn.MaxPool2d {per_sample(lambda: native(x), 256):.1f} us, "
              f"strided max-pool {per_sample(lambda: model(x), 256):.1f} us per sample")
    for batch in (32, 100):
        default, tuned = (float(subprocess.run([sys.executable, __file__, "--step", t, str(batch)], capture_output=True,
                                               text=True, check=True).stdout) for t in ("default", "tuned"))
        print(f"2. LeNet training step, batch {batch}, 1 thread: default malloc {default:.1f} us, "
              f"local_training/allocator.py's tunables {tuned:.1f} us per sample")
    params = init_stack(lambda: LeNetCNN((1, 28, 28), 10), 4, 0, "cpu", torch.float32)
    inputs = torch.rand(10000, 1, 28, 28)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        cells = []
        for mib in (1, 2, 4, 8, 16):
            ev.CHUNK_BUDGET["cpu"] = mib * 2 ** 20
            cells.append(f"{mib} MiB {per_sample(lambda: ev.outputs_on_shared(model, params, inputs), 40000, 3):.1f}")
        print(f"3. scoring 4 LeNets x 10,000 inputs, {threads} thread(s), us per sample-model by chunk budget: "
              + ", ".join(cells))
    optimizer_step(rows=40, repeat=10)


if __name__ == "__main__":
    main()
