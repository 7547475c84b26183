"""Peak memory of a round as the number of clients grows, beside a plain per-client loop.

Every (method, N) runs in its own process: one round of Fed-CAM's Table 1 protocol
(`+preset=cam/table1`, Fashion-MNIST split over N clients by cluster-wise Dirichlet, K = 10,
the FedAvg CNN, SGD with momentum, `train.steps` local steps of batch 32) with evaluation, and
reports that process's peak resident memory (ru_maxrss). The methods: FedAvg, IFCA, IFCA-CAM
(its CAM phase: algorithm.warmup_rounds=0), FedSoft and local-only training (personal models: one model
per client is their state), and `reference`: FedAvg written as the plain loop other FL code runs,
one torch.nn module and torch.optim.SGD trained client after client, each result added into the
average, on the same data built the same way, then the same global model scored on every
client's test split.

Printed per method: peak RSS at each N, the round's training time (summary.json's train_seconds_per_round;
the reference: its client loop), the whole process's time, MiB per added client (the slope between the smallest
and the largest N), beside the data's own bytes per client at the largest N, the rows per chunk
fedcluster chose, and the ratio to the reference at each N.

Usage:
  python benchmarks/memory_benchmark.py                              # N = 10, 50, 100, 200, 500, 1000
  python benchmarks/memory_benchmark.py --clients 10,200 --methods fedavg,ifca_cam
  python benchmarks/memory_benchmark.py --smoke --data-root DIR      # what CI runs: N = 4 (K = 2), fake data, the
                                                                     # reference, FedAvg and IFCA-CAM (SMOKE_METHODS)
  python benchmarks/memory_benchmark.py --json                       # one JSON object per (method, N)"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METHODS = {
    "fedavg": ["algorithm=fedavg"],
    "ifca": ["algorithm=ifca"],
    "ifca_cam": ["algorithm=ifca_cam", "algorithm.warmup_rounds=0"],
    "fedsoft": ["algorithm=fedsoft"],    # selection size: a tenth of the clients (set per N)
    "local": ["algorithm=local"],
    "reference": ["algorithm=fedavg"],
}
# --smoke (CI): the reference, the plainest method and the one whose rows per client differ (IFCA-CAM: a cluster
# model and h per client); each (method, N) is a process of its own, so every method at once costs CI half a minute
SMOKE_METHODS = ("reference", "fedavg", "ifca_cam")
PROTOCOL = ["+preset=cam/table1", "hydra.mode=RUN", "partition=cluster_dirichlet", "num_clusters=10",
            "model=fedavg_cnn", "rounds=1", "eval_every=1", "progress=false", "plots=false", "checkpoint_every=0"]


def overrides(method: str, clients: int, steps: int, extra=()) -> list:
    out = PROTOCOL + METHODS[method] + [f"partition.num_clients={clients}", f"train.steps={steps}"]
    if method == "fedsoft":
        out.append(f"algorithm.selection_size={max(1, clients // 10)}")
    if os.environ.get("FEDCLUSTER_DATA_ROOT"):
        out.append(f"dataset.root={os.environ['FEDCLUSTER_DATA_ROOT']}")
    return out + list(extra)


def compose(over):
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from fedcluster.config.store import register_schemas
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=list(over))


def reference_round(cfg) -> dict:
    """FedAvg's round as a plain per-client loop: one module, torch.optim per client, a running average."""
    import torch
    from fedcluster.assemble import build
    hw, fed, alg, trainer = build(cfg)
    tr, te = fed.data.train, fed.data.local_test
    model = fed.model
    global_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    total = float(tr.n.sum())
    avg = {k: torch.zeros_like(v) for k, v in global_state.items()}
    g = torch.Generator().manual_seed(cfg.seed)
    t = cfg.train
    tick = time.perf_counter()
    for i in range(fed.num_clients):
        n = int(tr.n[i])
        if n == 0:
            continue
        model.load_state_dict(global_state)
        opt = torch.optim.SGD(model.parameters(), lr=t.lr, momentum=t.momentum)
        for _ in range(t.steps):
            idx = torch.randperm(n, generator=g)[:t.batch_size]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(tr.x[i, idx]), tr.y[i, idx].long()).backward()
            opt.step()
        for k, v in model.state_dict().items():
            avg[k] += v.detach() * (n / total)
    model.load_state_dict(avg)
    trained = time.perf_counter() - tick
    correct = 0
    with torch.inference_mode():
        for i in range(fed.num_clients):
            n = int(te.n[i])
            if n:
                correct += int((model(te.x[i, :n]).argmax(1) == te.y[i, :n].long()).sum())
    return {"chunk": 1, "accuracy": correct / max(1, int(te.n.sum())), "data_bytes": data_bytes(fed),
            "train_seconds": trained}


def data_bytes(fed) -> int:
    """The bytes of every client's training and test samples as stored (inputs, labels)."""
    from fedcluster.data.samples import ClientSamples
    size = lambda t: t.nbytes if isinstance(t, ClientSamples) else t.numel() * t.element_size()   # inputs: as stored
    return sum(size(t) for split in (fed.data.train, fed.data.local_test) for t in (split.x, split.y))


def child(method: str, clients: int, steps: int, extra) -> None:
    sys.path.insert(0, str(ROOT))
    cfg = compose(overrides(method, clients, steps, extra))
    tick = time.perf_counter()
    if method == "reference":
        res = reference_round(cfg)
    else:
        from fedcluster.runner import run
        with tempfile.TemporaryDirectory() as out:
            summary = run(cfg, out)
            log = (Path(out) / "run.log").read_text()
        chunk = int(log.split("chunks of up to ")[1].split(" ")[0])
        res = {"chunk": chunk, "data_bytes": None, "train_seconds": summary["train_seconds_per_round"]}
    res.update(seconds=time.perf_counter() - tick, peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(res))


def measure(method: str, clients: int, steps: int, extra) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", method, str(clients), str(steps), *extra],
                         capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"{method} at N={clients}: " + (out.stderr.strip().splitlines() or ["failed"])[-1])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", default="10,50,100,200,500,1000")
    p.add_argument("--methods", default=None, help=f"default: all ({','.join(METHODS)}); with --smoke "
                                                       f"{','.join(SMOKE_METHODS)}")
    p.add_argument("--steps", type=int, default=1, help="local steps per client (train.steps)")
    p.add_argument("--smoke", action="store_true", help="N = 4 with K = 2, for CI (SMOKE_METHODS, one size)")
    p.add_argument("--data-root", help="where Fashion-MNIST is (sets FEDCLUSTER_DATA_ROOT)")
    p.add_argument("--override", action="append", default=[], help="an extra override for every run")
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args, rest = p.parse_known_args()
    if args.child:
        return child(args.child[0], int(args.child[1]), int(args.child[2]), rest)
    if args.data_root:
        os.environ["FEDCLUSTER_DATA_ROOT"] = str(Path(args.data_root).resolve())
    sizes = [4] if args.smoke else [int(c) for c in args.clients.split(",")]
    if args.smoke:   # K must divide N
        args.override = ["num_clusters=2"] + args.override
    methods = (args.methods or ",".join(SMOKE_METHODS if args.smoke else METHODS)).split(",")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        sys.exit(f"memory_benchmark.py: --methods {','.join(unknown)} is unknown; allowed: {','.join(METHODS)}")
    ref = {}
    if "reference" in methods:   # first, so every method's line can carry its ratio
        methods = ["reference"] + [m for m in methods if m != "reference"]
    failed = False
    for method in methods:
        rows = []
        for n in sizes:
            try:
                r = measure(method, n, args.steps, args.override)
            except RuntimeError as e:
                print(f"memory_benchmark.py: {e}", file=sys.stderr)
                failed = True
                continue
            if method == "reference":
                ref[n] = r
            row = {"method": method, "clients": n, "peak_rss_mb": round(r["peak_rss_mb"], 1), "chunk": r["chunk"],
                   "seconds": round(r["seconds"], 2), "train_seconds": round(r["train_seconds"], 2),
                   "vs_reference": round(r["peak_rss_mb"] / ref[n]["peak_rss_mb"], 2) if n in ref else None,
                   "data_mb_per_client": round(ref[n]["data_bytes"] / n / 2 ** 20, 2) if n in ref else None}
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(f"{method:>10s} N={n:>5d}: peak RSS {row['peak_rss_mb']:8.0f} MiB, training {row['train_seconds']:7.2f} s, "
                      f"process {row['seconds']:7.1f} s, "
                      f"chunks of {row['chunk']:>4d} rows"
                      + (f", {row['vs_reference']:.2f}x the reference" if row["vs_reference"] else ""), flush=True)
        if len(rows) >= 2 and not args.json:
            a, b = rows[0], rows[-1]
            slope = (b["peak_rss_mb"] - a["peak_rss_mb"]) / (b["clients"] - a["clients"])
            data = f"; the data: {b['data_mb_per_client']:.2f} MiB per client at N={b['clients']}" \
                if b["data_mb_per_client"] is not None else ""
            line = f"{method:>10s}: {slope:.2f} MiB per added client (N={a['clients']} -> {b['clients']})"
            full = next(r for r in rows if r["chunk"] == b["chunk"])   # from the first size whose chunk is full
            if full is not a and full is not b:   # below it the chunk itself grows with N, up to its memory cap
                line += (f", {(b['peak_rss_mb'] - full['peak_rss_mb']) / (b['clients'] - full['clients']):.2f} once "
                         f"the chunk is full (N={full['clients']} -> {b['clients']}, {b['chunk']} rows)")
            print(line + data, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
