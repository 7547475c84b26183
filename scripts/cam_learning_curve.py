"""Fed-CAM's training budget, checked centrally: how accurate can the model get on IID data
with the optimizer and the number of steps the paper's protocol gives each client?

Fed-CAM §5 reads "SGD, lr 1e-3, momentum 0.9, batch 32, 10 local steps, 100 rounds": 1,000 SGD
steps per client over the run. Federated averaging on non-IID data cannot beat centralised
training on IID data with the same optimizer and steps, so this curve bounds what any method can
reach under that budget, and shows which budget reaches the paper's FedAvg range (86 %).

Usage: python scripts/cam_learning_curve.py [--steps 200,1000,2000,5000,10000] [--lr 1e-3,1e-2]
       [--json FILE]. Prints test accuracy (the 10k Fashion-MNIST test images) after each step count."""
import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedcluster.data.images import ImageSource  # noqa: E402
from fedcluster.models import FedAvgCNN, LeNetCNN  # noqa: E402

MODELS = {"lenet": LeNetCNN, "fedavg_cnn": FedAvgCNN}


def accuracy(model, x, y, chunk=2000) -> float:
    with torch.inference_mode():
        hits = sum(int((model(x[i:i + chunk]).argmax(1) == y[i:i + chunk]).sum()) for i in range(0, len(y), chunk))
    return hits / len(y)


def curve(lr: float, checkpoints, batch: int, momentum: float, init: str, seed: int, model: str = "lenet"):
    source = ImageSource(name="fashion_mnist", distributions=[{"rotation": 0}], seed=seed)
    (tx, ty), (vx, vy) = ((source.decode(x), y) for x, y in (source.pool("train"), source.pool("test")))
    torch.manual_seed(seed)
    name, model = model, MODELS[model](tuple(source.in_shape), source.num_classes, init=init)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    g = torch.Generator().manual_seed(seed)
    order, pos, out, tick = torch.randperm(len(ty), generator=g), 0, [], time.time()
    for step in range(1, max(checkpoints) + 1):
        if pos + batch > len(order):
            order, pos = torch.randperm(len(ty), generator=g), 0
        idx = order[pos:pos + batch]
        pos += batch
        loss = torch.nn.functional.cross_entropy(model(tx[idx]), ty[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step in checkpoints:
            out.append({"model": name, "lr": lr, "steps": step, "epochs": round(step * batch / len(ty), 2),
                        "test_accuracy": round(accuracy(model, vx, vy), 4), "seconds": round(time.time() - tick, 1)})
            print(json.dumps(out[-1]), flush=True)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", default="200,1000,2000,5000,10000")
    p.add_argument("--lr", default="1e-3,1e-2")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--init", default="xavier")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", choices=sorted(MODELS), default="lenet")
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    checkpoints = sorted(int(s) for s in a.steps.split(","))
    rows = []
    for lr in (float(v) for v in a.lr.split(",")):
        rows += curve(lr, set(checkpoints), a.batch, a.momentum, a.init, a.seed, a.model)
    if a.json:
        a.json.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


if __name__ == "__main__":
    main()
