"""Seconds per round of fedcluster (its chosen engine) beside a plain reference loop written the
way peer libraries write one, for the papers' workloads.

Workloads:
  (a) FedSoft, synthetic mixed linear regression, 100 clients, App. C settings (Adam 5e-3,
      10 local epochs, batch 10, K=60 selections, tau=2: importance scoring every 2 rounds).
  (b) CLoVE, Fashion-MNIST label skew 1, 20 clients x 500, LeNet, Adam 1e-3, batch 100,
      1 epoch, K=4: every round each client's loss on each of the 4 models (scoring).
  (c) IFCA as in Fed-CAM §5: 200 clients over all 60k Fashion-MNIST training images
      (cluster-wise Dirichlet, K=10), LeNet, SGD 1e-3 momentum 0.9, batch 32, 10 local steps;
      every round the 10 models score all 60k images (assignment).
  (d) PFLlib's FedAvg workload: Fashion-MNIST, 20 clients (Dirichlet 0.1 label skew over all
      60k training images; PFLlib's generator splits all 70k and trains on 75 %), batch 10,
      1 local epoch, SGD 0.005. `d` uses LeNet; `d_cnn` uses the letters CNN (conv 32/64 @5x5,
      FC 512), the closest of our models to PFLlib's FedAvgCNN.

A round is timed whole: local training, scoring, aggregation, and one evaluation per
`--rounds` rounds (the presets evaluate every 10): seconds per round =
(wall time of 1 + R rounds - wall time of 1 round) / R, after an untimed 1-round warm-up run,
which leaves out start-up (data loading, model building) and first-call costs. The reference loop does the same work (same clients, samples,
steps, scoring passes) with one nn.Module per client, torch.optim and a tensor batch loop,
in a fresh process of its own (as a peer library runs, without fedcluster's process settings).

Usage:
  python scripts/benchmark.py [--json] [--only b,c] [--rounds 4] [--device cpu|cuda]
  python scripts/benchmark.py --src ../old-checkout --only b,c   # fedcluster of another checkout
Each workload prints (or, with --json, emits one JSON object per line): seconds per round
of fedcluster and of the reference, their ratio `speedup_vs_reference`, training samples
per second, the engine fedcluster chose, and the device."""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
CONF = Path.cwd() / "conf" if os.environ.get("FEDCLUSTER_BENCH_SRC") else ROOT / "conf"   # --src: that checkout's

FMNIST = ["dataset=fashion_mnist", "dataset.distributions=[{rotation:0}]", "model=lenet"]
if os.environ.get("FEDCLUSTER_DATA_ROOT"):      # e.g. the GPU machine: Fashion-MNIST carried along
    FMNIST.append(f"dataset.root={os.environ['FEDCLUSTER_DATA_ROOT']}")
WORKLOADS = {
    "a": ("FedSoft synthetic, 100 clients", "fedsoft", ["algorithm=fedsoft"]),
    "b": ("CLoVE FMNIST, 20 clients x 500, LeNet, K=4", "clove", FMNIST + [
        "algorithm=clove", "partition=label_skew2", "num_clusters=4", "train.optimizer=adam", "train.lr=1e-3",
        "train.batch_size=100", "train.epochs=1", "eval_local_train=false"]),
    "c": ("Fed-CAM IFCA, 200 clients, 60k FMNIST, K=10", "ifca", FMNIST + [
        "algorithm=ifca", "partition=cluster_dirichlet", "partition.num_clients=200", "num_clusters=10",
        "train.optimizer=sgd", "train.lr=1e-3", "train.momentum=0.9", "train.batch_size=32", "train.steps=10",
        "eval_local_train=false"]),
    "d": ("PFLlib FedAvg workload, 20 clients, batch 10, LeNet", "fedavg", FMNIST + [
        "algorithm=fedavg", "partition=dirichlet", "partition.num_clients=20", "partition.alpha=0.1",
        "train.optimizer=sgd", "train.lr=0.005", "train.batch_size=10",
        "train.epochs=1", "eval_local_train=false"]),
    "d_cnn": ("PFLlib FedAvg workload, letters CNN (32/64 conv)", "fedavg", FMNIST + [
        "algorithm=fedavg", "partition=dirichlet", "partition.num_clients=20", "partition.alpha=0.1",
        "train.optimizer=sgd", "train.lr=0.005", "train.batch_size=10",
        "train.epochs=1", "eval_local_train=false", "model=letters_cnn"]),
}
COMMON = ["progress=false", "plots=false", "checkpoint_every=0"]


def compose(overrides):
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from fedcluster.config import register_schemas
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides))


def seconds_per_round(overrides, rounds: int, eval_every: int) -> dict:
    """(wall(1 + R rounds) - wall(1 round)) / R of fedcluster's own loop for a config, after an
    untimed 1-round warm-up run (first-call costs)."""
    from fedcluster.runner import run
    walls, summary = {}, None
    for r in (0, 1, 1 + rounds):          # r=0: the warm-up run
        cfg = compose(list(overrides) + COMMON + [f"rounds={max(r, 1)}", f"eval_every={eval_every}"])
        with tempfile.TemporaryDirectory() as out:
            tick = time.perf_counter()
            summary = run(cfg, out)
            walls[r] = time.perf_counter() - tick
    return {"seconds_per_round": (walls[1 + rounds] - walls[1]) / rounds, "engine": summary["engine"]}


def fedcluster_seconds_per_round(key: str, rounds: int, device: str, engine: str = "auto") -> dict:
    """Workload `key` with fedcluster's engine, one evaluation per R rounds."""
    return seconds_per_round(WORKLOADS[key][2] + [f"hardware={device}", f"engine={engine}"], rounds, rounds)


# -- the reference: one nn.Module per client, torch.optim, a tensor batch loop ----------------------
def _optimizer(t, params):
    if t.optimizer == "adam":
        return torch.optim.Adam(params, lr=t.lr, weight_decay=t.weight_decay)
    return torch.optim.SGD(params, lr=t.lr, momentum=t.momentum, weight_decay=t.weight_decay)


def _loss(task, out, y):
    return F.mse_loss(out, y) if task == "regression" else F.cross_entropy(out, y)


def _local_train(model, x, y, t, task, prox=None, opt=None, g=None):
    """`t.epochs` epochs (or `t.steps` steps) of mini-batches of x, y; prox = [(coeff, center params)]."""
    opt = opt or _optimizer(t, model.parameters())
    n = len(x)
    if t.steps:
        order = torch.cat([torch.randperm(n, generator=g) for _ in range(-(-t.steps * t.batch_size // n))])
        batches = [order[i * t.batch_size:(i + 1) * t.batch_size] for i in range(t.steps)]
    else:
        batches = [b for _ in range(t.epochs) for b in torch.randperm(n, generator=g).split(t.batch_size)]
    for idx in batches:
        opt.zero_grad()
        loss = _loss(task, model(x[idx]), y[idx])
        if prox:
            for coeff, center in prox:
                loss = loss + 0.5 * coeff * sum(((p - c) ** 2).sum() for p, c in zip(model.parameters(), center))
        loss.backward()
        opt.step()
    return n


def _average(models, weights):
    w = torch.tensor(weights, dtype=torch.float32)
    w = w / w.sum()
    states = [m.state_dict() for m in models]
    return {k: sum(wi * s[k] for wi, s in zip(w, states)) for k in states[0]}


@torch.no_grad()
def _client_loss(model, x, y, task, batch):
    return sum(float(_loss(task, model(x[i:i + batch]), y[i:i + batch])) * len(x[i:i + batch])
               for i in range(0, len(x), batch)) / max(len(x), 1)


def reference_seconds_per_round(key: str, rounds: int, device: str) -> dict:
    """The same rounds as `fedcluster_seconds_per_round`, written as a peer library writes them."""
    from fedcluster.assemble import build
    cfg = compose(WORKLOADS[key][2] + COMMON + [f"hardware={device}"])
    hw, fed, _, _ = build(cfg)
    data, t, task = fed.data, cfg.train, fed.data.task
    tr, te = data.train, data.local_test
    clients = [(tr.x[k, :int(tr.n[k])], tr.y[k, :int(tr.n[k])]) for k in range(data.num_clients)]
    tests = [(te.x[k, :int(te.n[k])], te.y[k, :int(te.n[k])]) for k in range(data.num_clients)]
    kind = WORKLOADS[key][1]
    K = cfg.num_clusters or data.num_true_clusters or data.num_distributions
    g = torch.Generator().manual_seed(0)
    new = lambda: fed.build_model().to(hw.torch_device)
    centers = [new() for _ in range(K if kind != "fedavg" else 1)]
    local = [copy.deepcopy(centers[0]) for _ in clients] if kind == "fedsoft" else None
    local_opts = [_optimizer(t, m.parameters()) for m in local] if local else None
    u = torch.full((len(clients), K), 1.0 / K)
    trained = 0

    def one_round(r, evaluate):
        nonlocal trained
        if kind in ("ifca", "clove"):                      # every client scores every model (assignment)
            losses = torch.tensor([[_client_loss(m, x, y, task, t.batch_size) for m in centers] for x, y in clients])
            assign = losses.argmin(1).tolist()
        elif kind == "fedsoft" and r % cfg.algorithm.tau == 0:   # importance weights: per-sample losses
            with torch.no_grad():
                for k, (x, y) in enumerate(clients):
                    per = torch.stack([(centers[s](x) - y) ** 2 for s in range(K)])
                    u[k] = torch.bincount(per.argmin(0), minlength=K).float() / len(x)
        results = []
        for k, (x, y) in enumerate(clients):
            if kind == "fedsoft":
                prox = [(cfg.algorithm.lam * float(u[k, s]), [p.detach() for p in centers[s].parameters()])
                        for s in range(K)]
                trained += _local_train(local[k], x, y, t, task, prox, local_opts[k], g)
                continue
            model = copy.deepcopy(centers[assign[k]] if kind in ("ifca", "clove") else centers[0])
            trained += _local_train(model, x, y, t, task, g=g)
            results.append(model)
        if kind == "fedsoft":
            for s in range(K):
                centers[s].load_state_dict(_average(local, (u[:, s] + 1e-12).tolist()))
        elif kind in ("ifca", "clove"):
            for j in range(K):
                members = [i for i, a in enumerate(assign) if a == j]
                if members:
                    centers[j].load_state_dict(_average([results[i] for i in members],
                                                        [len(clients[i][0]) for i in members]))
        else:
            centers[0].load_state_dict(_average(results, [len(x) for x, _ in clients]))
        if evaluate:                                       # each client's model on its held-out test data
            for k, (x, y) in enumerate(tests):
                model = local[k] if kind == "fedsoft" else centers[assign[k] if kind in ("ifca", "clove") else 0]
                _client_loss(model, x, y, task, 1000)

    one_round(0, evaluate=True)                            # warm-up round, not timed (as the 1-round run)
    trained = 0
    tick = time.perf_counter()
    for r in range(1, 1 + rounds):
        one_round(r, evaluate=r == rounds)
    if hw.torch_device.type == "cuda":
        torch.cuda.synchronize()
    return {"seconds_per_round": (time.perf_counter() - tick) / rounds, "samples_per_round": trained / rounds}


def reference_in_fresh_process(key: str, rounds: int, device: str) -> dict:
    """The reference in its own process, as a peer library runs: none of fedcluster's
    process-wide settings (engine/allocator.py's malloc tunables) applies to it."""
    out = subprocess.run([sys.executable, __file__, "--reference-only", "--only", key, "--rounds", str(rounds),
                          "--device", device], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def samples_per_round(key: str) -> int:
    """Training samples one round visits (all clients train every round in these workloads)."""
    from fedcluster.assemble import build
    cfg = compose(WORKLOADS[key][2] + COMMON)
    _, fed, _, _ = build(cfg)
    n, t = fed.data.train.n, cfg.train
    if t.steps:
        return int(torch.clamp(n, max=t.batch_size).sum()) * t.steps
    return int(n.sum()) * t.epochs


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="a,b,c,d", help="comma-separated workloads from " + ",".join(WORKLOADS))
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true")
    p.add_argument("--engine", default="auto")
    p.add_argument("--no-reference", action="store_true", help="time fedcluster only")
    p.add_argument("--src", help="time the fedcluster of this checkout instead (no reference)")
    p.add_argument("--fedcluster-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--reference-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    keys = [k for k in args.only.split(",") if k]
    bad = [k for k in keys if k not in WORKLOADS]
    if bad:
        sys.exit(f"benchmark.py: unknown workload(s) {bad}; allowed: {list(WORKLOADS)}")
    if args.src:                                         # another checkout's fedcluster, in its own process
        for k in keys:
            env = {**os.environ, "PYTHONPATH": str(Path(args.src).resolve()), "FEDCLUSTER_BENCH_SRC": "1"}
            out = subprocess.run([sys.executable, __file__, "--fedcluster-only", "--only", k, "--rounds",
                                  str(args.rounds), "--device", args.device, "--engine", args.engine],
                                 env=env, capture_output=True, text=True, check=True, cwd=args.src)
            line = json.loads(out.stdout.strip().splitlines()[-1])
            line["source"] = str(args.src)
            print(json.dumps(line) if args.json else line, flush=True)
        return
    if args.reference_only:
        print(json.dumps(reference_seconds_per_round(keys[0], args.rounds, args.device)))
        return
    for k in keys:
        title = WORKLOADS[k][0]
        ours = fedcluster_seconds_per_round(k, args.rounds, args.device, args.engine)
        row = {"workload": k, "title": title, "device": args.device, "threads": torch.get_num_threads(),
               "torch": torch.__version__, "rounds_timed": args.rounds, "engine": ours["engine"],
               "seconds_per_round": round(ours["seconds_per_round"], 3)}
        if args.fedcluster_only:
            print(json.dumps(row), flush=True)
            continue
        n = samples_per_round(k)
        row["samples_per_round"] = n
        row["samples_per_second"] = round(n / ours["seconds_per_round"], 1)
        if not args.no_reference:
            ref = reference_in_fresh_process(k, args.rounds, args.device)
            row["reference_seconds_per_round"] = round(ref["seconds_per_round"], 3)
            row["reference_samples_per_second"] = round(ref["samples_per_round"] / ref["seconds_per_round"], 1)
            row["speedup_vs_reference"] = round(ref["seconds_per_round"] / ours["seconds_per_round"], 2)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"({k}) {title}: " + ", ".join(f"{a}={b}" for a, b in row.items() if a not in ("workload", "title")),
                  flush=True)


if __name__ == "__main__":
    main()
