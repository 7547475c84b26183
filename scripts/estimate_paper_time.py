"""Estimated wall time of a paper's preset sweep at its protocol on this machine, from measured
seconds per round of each of its runs (benchmarks/benchmark.py's method: an untimed warm-up, then
(wall(1 + R rounds) - wall(1 round)) / R, evaluation every 10 rounds as the presets do).

  cam_table1_fmnist: Fed-CAM Table 1, Fashion-MNIST half: 8 methods x {cluster Dirichlet,
      cluster n-class} x K in {5, 10} x 3 seeds, 200 clients, 100 rounds. The CAM methods' first
      30 rounds are FedAvg rounds (their warm-up): they are costed at FedAvg's measured time.
      Each method is measured on the cluster-wise Dirichlet partition at K=5 and K=10; the
      n-class partition splits the same 60k images over the same 200 clients and is costed the same.
  clove_fmnist: CLoVE Tables 1, 2, 4, Fashion-MNIST column: 5 methods x 4 mixings x 3 seeds,
      20 clients x 500 samples, 100 rounds.

Usage: python scripts/estimate_paper_time.py [--sweep cam_table1_fmnist|clove_fmnist|all]
           [--rounds 2] [--src OTHER_CHECKOUT] [--json]
--src measures another checkout's fedcluster (e.g. an older commit in a git worktree)."""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAM_METHODS = ["fedavg", "fedprox", "fedavg_plus", "fedprox_plus", "ifca", "ifca_cam", "fesem", "fesem_cam"]
CLOVE_METHODS = ["fedavg", "local", "ifca", "cfl", "clove"]
CLOVE_MIXINGS = ["label_skew1", "concept_shift", "label_skew2", "feature_skew"]


def jobs(sweep, ks=(5, 10)):
    """(name, preset overrides, runs it stands for, protocol rounds, warm-up rounds costed as FedAvg)."""
    out = []
    if sweep in ("cam_table1_fmnist", "all"):
        for K in ks:
            for m in CAM_METHODS:
                ov = ["+preset=cam/table1", "hydra.mode=RUN", "dataset=fashion_mnist", "partition=cluster_dirichlet",
                      f"num_clusters={K}", f"algorithm={m}",
                      # CAM methods: 1 warm-up round, so the timed rounds (2 and on) are CAM rounds
                      *(["algorithm.warmup_rounds=1"] if m == "ifca_cam" else [])]
                out.append((f"cam K={K} {m}", ov, 2 * 3, 100, 30 if m.endswith("_cam") else 0))
    if sweep in ("clove_fmnist", "all"):
        for mix in CLOVE_MIXINGS:
            for m in CLOVE_METHODS:
                ov = ["+preset=clove/images", "hydra.mode=RUN", "dataset=fashion_mnist", f"partition={mix}", f"algorithm={m}"]
                out.append((f"clove {mix} {m}", ov, 3, 100, 0))
    return out


def seconds_per_round(overrides, rounds):
    sys.path.insert(0, str(ROOT / "scripts"))
    import benchmark as bm
    return bm.seconds_per_round(overrides, rounds, eval_every=10)["seconds_per_round"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sweep", default="all", choices=["cam_table1_fmnist", "clove_fmnist", "all"])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--src")
    p.add_argument("--ks", default="5,10", help="Fed-CAM K values to measure (a subset measures a subset of runs)")
    p.add_argument("--methods", help="comma-separated subset of methods to measure (default: all)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps({"s": seconds_per_round(json.loads(args.one), args.rounds)}))
        return
    totals, fedavg_round = {}, {}
    for name, ov, runs, rounds, warm in jobs(args.sweep, [int(k) for k in args.ks.split(",")]):
        if args.methods and name.split()[-1] not in args.methods.split(","):
            continue
        env, cwd = dict(os.environ), None
        if args.src:
            env.update(PYTHONPATH=str(Path(args.src).resolve()), FEDCLUSTER_BENCH_SRC="1")
            cwd = args.src
        res = subprocess.run([sys.executable, __file__, "--one", json.dumps(ov), "--rounds", str(args.rounds)],
                             env=env, cwd=cwd, capture_output=True, text=True)
        if res.returncode:
            print(json.dumps({"run": name, "error": res.stderr.strip().splitlines()[-1]}), flush=True)
            continue
        s = json.loads(res.stdout.strip().splitlines()[-1])["s"]
        family = name.split()[0] + (" " + name.split()[1] if name.startswith("cam") else "")
        if name.endswith(" fedavg"):
            fedavg_round[family] = s
        warm_s = fedavg_round.get(family, s) if warm else 0.0
        hours = runs * (warm * warm_s + (rounds - warm) * s) / 3600
        totals[name.split()[0]] = totals.get(name.split()[0], 0.0) + hours
        print(json.dumps({"run": name, "seconds_per_round": round(s, 3), "runs": runs, "hours": round(hours, 3)}),
              flush=True)
    for sweep, h in totals.items():
        print(json.dumps({"sweep": sweep, "estimated_hours": round(h, 2), "source": args.src or "this checkout",
                          "threads": int(os.environ.get("OMP_NUM_THREADS", 0)) or None}), flush=True)


if __name__ == "__main__":
    main()
