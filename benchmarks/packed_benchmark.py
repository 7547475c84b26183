"""A sweep of runs packed into one process (`hydra/launcher=packed`) beside the same runs one process
each, and beside a plain per-client loop, in one sitting (issue 57).

The sweep: 3 methods (FedAvg, IFCA, local-only) x 3 seeds of LeNet on Fashion-MNIST, CLoVE's label
skew 3 (25 clients x 500 images, K = 5) with CLoVE's solver for CNNs on FMNIST (+preset=clove/images:
Adam 1e-2, batch 100, one local epoch), `--rounds` rounds, scored after the last one (the preset's scoring:
each client's test, training and validation accuracy and FedAvg's round-start training accuracy).

  packed      one process: fedcluster -m hydra/launcher=packed algorithm=... seed=...
  one each    one `fedcluster` process per run, one after another (the machine's cores are each run's)
  plain loop  the runs' local training as peer libraries write it: one nn.Module, torch.optim.Adam and
              a batch loop per client, a running average, then each client's test accuracy after the
              last round; for every run FedAvg's work (IFCA's scoring of K models on every client's data
              each round, and the training, validation and round-start scoring are left out, so this
              understates the plain cost of the runs). Measured on one run, times 9.

Printed: wall seconds of each, runs per hour, the ratios, and whether each packed run's metrics.csv
is byte-identical to the same run's alone. `--smoke` (CI): 1 round of the 3 methods on seed 0 (3 runs) on the
fake data of --data-root.

Usage:
  python benchmarks/packed_benchmark.py [--rounds 5] [--json]
  python benchmarks/packed_benchmark.py --smoke --data-root DIR"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METHODS, SEEDS = ("fedavg", "ifca", "local"), (0, 1, 2)
WORKLOAD = ["+preset=clove/images", "partition=label_skew3", "model=lenet", "progress=false", "plots=false",
            "checkpoint_every=0"]


def workload(rounds: int, smoke: bool) -> list:
    out = WORKLOAD + [f"rounds={rounds}", f"eval_every={rounds}"]   # scored once, after the last round
    if smoke:   # the fake data's few images per class: fewer, smaller clients
        out += ["partition.num_clients=10", "partition.samples_per_client=20", "partition.test_samples_per_client=5"]
    if os.environ.get("FEDCLUSTER_DATA_ROOT"):
        out.append(f"dataset.root={os.environ['FEDCLUSTER_DATA_ROOT']}")
    return out


def fedcluster(args, cwd) -> float:
    tick = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fedcluster", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"fedcluster {' '.join(args[:4])} ...: " + (proc.stderr.strip().splitlines() or ["failed"])[-1])
    return time.perf_counter() - tick


def job_name(method, seed) -> str:
    return f"{method}_seed{seed}"


def metrics_by_run(where: Path) -> dict:
    """{(method, seed): metrics.csv bytes} of the runs under `where`, told apart by their config.yaml."""
    import yaml
    out = {}
    for config in where.glob("*/config.yaml"):
        cfg = yaml.safe_load(config.read_text())
        out[(cfg["algorithm"]["name"], cfg["seed"])] = (config.parent / "metrics.csv").read_bytes()
    return out


def packed_sweep(base, seeds, where: Path) -> float:
    return fedcluster(["-m", "hydra/launcher=packed", f"algorithm={','.join(METHODS)}",
                       f"seed={','.join(map(str, seeds))}", *base, f"hydra.sweep.dir={where}"], ROOT)


def one_process_each(base, seeds, where: Path) -> float:
    return sum(fedcluster(["hydra.mode=RUN", f"algorithm={m}", f"seed={s}", *base, f"hydra.run.dir={where / job_name(m, s)}"], ROOT)
               for m in METHODS for s in seeds)


def reference_run(base) -> float:
    """One FedAvg run as a plain per-client loop on the run's own data and solver (seconds)."""
    sys.path.insert(0, str(ROOT))
    import torch
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from fedcluster.assemble import build
    from fedcluster.config.store import register_schemas
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["algorithm=fedavg", "seed=0", *base])
    tick = time.perf_counter()
    hw, fed, alg, trainer = build(cfg)
    tr, te, t = fed.data.train, fed.data.local_test, cfg.train
    model = fed.model
    global_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(cfg.seed)
    for _ in range(cfg.rounds):
        total = float(tr.n.sum())
        avg = {k: torch.zeros_like(v) for k, v in global_state.items()}
        for i in range(fed.num_clients):
            n = int(tr.n[i])
            model.load_state_dict(global_state)
            opt = torch.optim.Adam(model.parameters(), lr=t.lr)
            x, y = tr.x[i, :n], tr.y[i, :n].long()
            for _ in range(t.epochs):
                for idx in torch.randperm(n, generator=g).split(t.batch_size):
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
                    opt.step()
            for k, v in model.state_dict().items():
                avg[k] += v.detach() * (n / total)
        global_state = avg
    model.load_state_dict(global_state)
    with torch.inference_mode():
        for i in range(fed.num_clients):
            n = int(te.n[i])
            (model(te.x[i, :n]).argmax(1) == te.y[i, :n].long()).float().mean()
    return time.perf_counter() - tick


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--smoke", action="store_true", help="1 round, small clients (CI)")
    p.add_argument("--data-root", help="where Fashion-MNIST is (sets FEDCLUSTER_DATA_ROOT)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--reference-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.data_root:
        os.environ["FEDCLUSTER_DATA_ROOT"] = str(Path(args.data_root).resolve())
    rounds = 1 if args.smoke else args.rounds
    if rounds < 1:
        sys.exit(f"packed_benchmark: --rounds={rounds} must be >= 1")
    base = workload(rounds, args.smoke)
    if args.reference_child:
        print(json.dumps({"seconds": reference_run(base)}))
        return
    seeds = SEEDS[:1] if args.smoke else SEEDS   # the smoke form: every method packed beside the others, one seed
    runs = len(METHODS) * len(seeds)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        packed = packed_sweep(base, seeds, tmp / "packed")
        alone = one_process_each(base, seeds, tmp / "alone")
        ref = subprocess.run([sys.executable, __file__, "--reference-child", f"--rounds={rounds}",
                              *(["--smoke"] if args.smoke else [])], capture_output=True, text=True, cwd=ROOT)
        if ref.returncode != 0:
            sys.exit("packed_benchmark: the plain loop failed: " + (ref.stderr.strip().splitlines() or ["?"])[-1])
        plain = json.loads(ref.stdout.strip().splitlines()[-1])["seconds"] * runs
        packed_metrics, alone_metrics = metrics_by_run(tmp / "packed"), metrics_by_run(tmp / "alone")
        same = sum(packed_metrics.get((m, s)) == alone_metrics[(m, s)] for m in METHODS for s in seeds)
    row = {"runs": runs, "rounds": rounds, "packed_s": round(packed, 2), "one_process_each_s": round(alone, 2),
           "plain_loop_s": round(plain, 2), "packed_runs_per_hour": round(3600 * runs / packed, 1),
           "one_each_runs_per_hour": round(3600 * runs / alone, 1), "plain_runs_per_hour": round(3600 * runs / plain, 1),
           "speedup_vs_one_each": round(alone / packed, 2), "speedup_vs_plain": round(plain / packed, 2),
           "identical_metrics": f"{same}/{runs}", "threads": int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))}
    if args.json:
        print(json.dumps(row))
    else:
        for k, v in row.items():
            print(f"{k:>24}: {v}")
    if same != runs:
        sys.exit(f"packed_benchmark: {runs - same} packed runs' metrics differ from the same runs alone")


if __name__ == "__main__":
    main()
