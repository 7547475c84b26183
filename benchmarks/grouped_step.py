"""One training step (forward, backward) of R clients' copies of a CNN, two ways side by side in one process:
a loop over the copies (the looped engine's formulation: each copy's forward on its own batch, one backward pass)
and one call per layer (the grouped engine's: the model's `forward_rows`, models/grouped.py). Prints, per model,
batch and R, milliseconds a step and grouped / looped; the choice `engine=auto` makes from it is
assemble.GROUPED_MAX_BATCH (docs/performance.md, "One call per layer").

    python benchmarks/grouped_step.py                 # the table of docs/performance.md (1 thread)
    python benchmarks/grouped_step.py --smoke         # tiny sizes (CI)
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch.func import functional_call

from fedcluster.models.cnn import FedAvgCNN, GenConvNet, LeNetCNN
from fedcluster.models.stacked import init_stack

MODELS = {"lenet": LeNetCNN, "genconv": GenConvNet, "fedavg_cnn": FedAvgCNN}
CASES = [("lenet", 10, 10), ("genconv", 10, 10), ("lenet", 16, 10), ("genconv", 16, 10), ("lenet", 20, 10),
         ("lenet", 32, 10), ("fedavg_cnn", 32, 5), ("genconv", 50, 10), ("genconv", 100, 10),
         ("lenet", 10, 1), ("lenet", 10, 2), ("lenet", 10, 4)]


def step_times(name: str, batch: int, rows: int, repeats: int) -> dict:
    build = lambda: MODELS[name]((1, 28, 28), 10)   # noqa: E731
    model = build()
    stack = init_stack(build, rows, seed=0, device="cpu", dtype=torch.float32)
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(rows, batch, 1, 28, 28, generator=g), torch.randint(0, 10, (rows, batch), generator=g)
    names = list(stack)

    def looped():
        leaves = {k: v.detach().requires_grad_(True) for k, v in stack.items()}
        per = {k: leaves[k].unbind(0) for k in names}
        total = sum(F.cross_entropy(functional_call(model, {k: per[k][r] for k in names}, (x[r],)), y[r])
                    for r in range(rows))
        return torch.autograd.grad(total, [leaves[k] for k in names])

    def grouped():
        leaves = {k: v.detach().requires_grad_(True) for k, v in stack.items()}
        out = model.forward_rows(leaves, x)
        total = F.cross_entropy(out.reshape(rows * batch, -1), y.reshape(-1), reduction="none").view(rows, batch)
        return torch.autograd.grad(total.mean(1).sum(), [leaves[k] for k in names])

    a, b = looped(), grouped()
    diff = max(float((u - v).abs().max()) for u, v in zip(a, b))
    times = {"looped": [], "grouped": []}
    for _ in range(repeats):            # interleaved, so a change in the machine's speed hits both alike
        for fn, key in ((looped, "looped"), (grouped, "grouped")):
            tick = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - tick)
    ms = {k: 1e3 * sorted(v)[len(v) // 2] for k, v in times.items()}   # medians
    return {"model": name, "batch": batch, "rows": rows, "looped_ms": round(ms["looped"], 3),
            "grouped_ms": round(ms["grouped"], 3), "grouped_over_looped": round(ms["grouped"] / ms["looped"], 3),
            "max_grad_difference": diff, "threads": torch.get_num_threads()}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=21)
    p.add_argument("--smoke", action="store_true", help="two tiny cases, 3 repeats (CI)")
    args = p.parse_args()
    if args.threads < 1 or args.repeats < 1:
        print(f"grouped_step.py: --threads {args.threads} / --repeats {args.repeats}: allowed >= 1", file=sys.stderr)
        sys.exit(2)
    torch.set_num_threads(args.threads)
    cases = [("lenet", 4, 2), ("genconv", 3, 3)] if args.smoke else CASES
    for name, batch, rows in cases:
        print(json.dumps(step_times(name, batch, rows, 3 if args.smoke else args.repeats)), flush=True)


if __name__ == "__main__":
    main()
