"""`fedcluster estimate` beside measured runs: for each workload, the seconds per round the estimate predicts
and the seconds per round a run of it takes here, as `fedcluster` runs it (a fresh process each, one thread
unless --threads): (wall(R2 rounds) - wall(R1 rounds)) / (R2 - R1) of each, so that start-up and writing, which the
estimate leaves out, cancel. The estimate measures this machine's rates itself (into a rates file of its own in
a temporary folder, so a kept one is neither read nor changed).

Workloads (jobs of the papers' presets: the three model and batch kinds of issue 79, and a label-skews job):
  a: GenConvNet, batch 100 (CLoVE, +preset=clove/images, label skew 1: 25 clients, K = 4 models scored a round)
  b: GenConvNet, batch 10 (FeSEM's solver in the same preset: small steps, its per-step cost beside its FLOPs)
  c: the FedAvg CNN (1.66M parameters; FedAvg in +preset=cam/fmnist/table1's first cell: 20 clients, 10 steps of 32)
  d: GenConvNet, batch 100 (CLoVE in +preset=clove/label_skews_3_4, label skew 3: 25 clients, K = 5)

Usage: python benchmarks/estimate_accuracy.py [--json] [--only a,c] [--rounds R1,R2] [--threads 1]
       python benchmarks/estimate_accuracy.py --smoke --data-root DIR     # CI: tiny sizes on fake data
--smoke: one estimate and one run of 2 rounds of (b) and (c), one workload of each model (no difference of two),
in this process, so the code paths run (the figures then mean nothing).
A workload that fails is one line on stderr naming it; the others go on; the exit status is then 1."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# each workload: its title, its job, its --smoke sizes, and the two run lengths timed (R1, R2: more rounds where a
# round is short, so that the rounds' time stands well above the start-up's variation between two processes)
WORKLOADS = {
    "a": ("GenConvNet batch 100 (CLoVE)", ["+preset=clove/images", "hydra.mode=RUN", "partition=label_skew1",
                                           "algorithm=clove", "seed=0"],
          ["partition.samples_per_client=20", "partition.test_samples_per_client=5"], (2, 14)),
    "b": ("GenConvNet batch 10 (FeSEM)", ["+preset=clove/images", "hydra.mode=RUN", "partition=label_skew1",
                                          "algorithm=fesem", "seed=0"],
          ["partition.samples_per_client=20", "partition.test_samples_per_client=5"], (2, 5)),
    "c": ("FedAvg CNN (FedAvg, Fed-CAM's protocol)", ["+preset=cam/fmnist/table1", "hydra.mode=RUN",
                                                      "partition=cluster_dirichlet", "num_clusters=5",
                                                      "partition.num_clients=20", "dataset.train_size=6000",
                                                      "dataset.test_size=1000", "seed=0", "algorithm=fedavg"],
          ["partition.num_clients=5", "dataset.train_size=200", "dataset.test_size=50"], (2, 8)),
    "d": ("GenConvNet batch 100 (CLoVE, label skew 3)", ["+preset=clove/label_skews_3_4", "hydra.mode=RUN",
                                                        "partition=label_skew3", "algorithm=clove", "seed=0"],
          ["partition.samples_per_client=20", "partition.test_samples_per_client=5"], (2, 14)),
}
COMMON = ["plots=false", "progress=false", "checkpoint_every=0"]


def fedcluster(*args, env):
    out = subprocess.run([sys.executable, "-m", "fedcluster", *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError((out.stderr.strip().splitlines() or ["no output"])[-1])
    return out.stdout


def predicted(job, rounds, env) -> float:
    return float(json.loads(fedcluster("estimate", "--json", *job, f"rounds={rounds}", env=env).splitlines()[-1])["seconds"])


def measured(job, rounds, env, where: Path) -> float:
    out = where / f"r{rounds}"
    fedcluster(*job, f"rounds={rounds}", f"hydra.run.dir={out}", env=env)
    return float(json.loads((out / "summary.json").read_text())["wall_time_s"])


def in_process(job, where: Path, rates: str):
    """(the estimate's seconds, the run's wall seconds) of `job`, both in this process (--smoke)."""
    os.environ["FEDCLUSTER_RATES"] = rates
    from fedcluster.config.store import compose_config, config_dir
    from fedcluster.command.estimate import estimate
    from fedcluster.cost import rates as calibration
    from fedcluster.runner import run
    calibration.TARGET_SECONDS = 0.2   # a calibration's timed calls, shortened: the code runs, the rates mean nothing
    _, (cost,) = estimate(job, config_dir())
    summary = run(compose_config(job), where / "run")
    return cost["seconds"], float(summary["wall_time_s"])


def workload(key: str, args, env) -> dict:
    title, job, tiny, lengths = WORKLOADS[key]
    job = job + COMMON + (tiny if args.smoke else []) + ([f"dataset.root={args.data_root}"] if args.data_root else [])
    r1, r2 = args.rounds or lengths
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(env, FEDCLUSTER_RATES=str(Path(tmp) / "rates.json"))
        if args.smoke:   # one estimate and one run, in this process: they compose and run; the figures mean nothing
            pred, meas = in_process(job + [f"rounds={r2}"], Path(tmp), env["FEDCLUSTER_RATES"])
        else:
            pred = (predicted(job, r2, env) - predicted(job, r1, env)) / (r2 - r1)
            meas = (measured(job, r2, env, Path(tmp)) - measured(job, r1, env, Path(tmp))) / (r2 - r1)
    return {"workload": key, "title": title, "predicted_seconds_per_round": pred,
            "measured_seconds_per_round": meas, "ratio": pred / meas if meas > 0 else None,
            "threads": args.threads, "rounds": [r1, r2]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--only", help="workloads, e.g. a,c (default: all; --smoke: b,c, one of each model)")
    p.add_argument("--rounds", help="R1,R2: the two run lengths timed (default: each workload's own)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--smoke", action="store_true", help="tiny sizes (CI: the workloads still compose and run)")
    p.add_argument("--data-root", help="the folder holding FashionMNIST/raw (default: the data set's own)")
    args = p.parse_args()
    args.rounds = [int(r) for r in args.rounds.split(",")] if args.rounds else None
    if args.smoke:
        args.rounds = [1, 2]
    args.only = args.only or ("b,c" if args.smoke else ",".join(WORKLOADS))
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    failed = False
    for key in args.only.split(","):
        try:
            row = workload(key, args, env)
        except RuntimeError as e:
            print(f"estimate_accuracy.py: workload ({key}) failed: {e}", file=sys.stderr)
            failed = True
            continue
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
            print(f"({key}) {row['title']}: predicted {row['predicted_seconds_per_round']:.2f} s/round, "
                  f"measured {row['measured_seconds_per_round']:.2f} s/round, predicted/measured {ratio}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
