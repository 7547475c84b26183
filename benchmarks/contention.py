"""How each training engine holds up beside busy neighbours, by thread count and OpenMP wait
policy: the measurements behind fedcluster's process defaults (fedcluster/threads.py) and its
worker design (local_training/workers.py, local_training/local.py). docs/performance.md "Under load" reads them.

For each (workload, engine, threads, policy): seconds per round quiet and beside N busy
neighbour processes (benchmarks/benchmark.py's method and neighbours, each in a fresh process).
Policies: PASSIVE (fedcluster's default) and libgomp's own default (torch loaded before
fedcluster, OMP_WAIT_POLICY unset: threads spin a while between ops before they sleep).
`--src OLD` adds the looped engine of another checkout (e.g. the per-step worker design).

Usage: python benchmarks/contention.py [--load 2] [--rounds 1] [--out docs/results/perf/contention.jsonl]"""
import argparse
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchmark as bm  # noqa: E402

CASES = [("a", "batched")] + [("b", e) for e in ("looped", "batched", "sequential")]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--load", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--src", help="also measure this checkout's looped engine (PASSIVE)")
    p.add_argument("--out", type=Path)
    p.add_argument("--smoke", action="store_true", help="benchmark.py's tiny sizes (CI)")
    p.add_argument("--repeat", type=int, default=1, help="measure every case this many times, in turns")
    p.add_argument("--policies", default="PASSIVE,libgomp default", help="wait policies to measure")
    p.add_argument("--only", help="cases as workload:engine, comma-separated (default: " +
                   ",".join(f"{k}:{e}" for k, e in CASES) + ")")
    args = p.parse_args()
    os.environ.pop("OMP_WAIT_POLICY", None)
    chosen = [tuple(c.split(":")) for c in args.only.split(",")] if args.only else CASES
    unknown = [c for c in chosen if c not in CASES]
    if unknown:
        sys.exit(f"contention.py: --only {args.only}: unknown case(s) {unknown}; allowed: {CASES}")
    policies = args.policies.split(",")
    cases = [(k, e, t, pol, None) for k, e in chosen for t in map(int, args.threads.split(","))
             for pol in policies]
    if args.src:
        cases += [("b", "looped", t, "PASSIVE", args.src) for t in map(int, args.threads.split(","))]
    for repeat, (key, engine, threads, policy, src) in [(r, c) for r in range(args.repeat) for c in cases]:
        run = SimpleNamespace(rounds=args.rounds, device="cpu", engine=engine, smoke=args.smoke, override=[],
                              threads=threads, src=src, libgomp_default=policy != "PASSIVE")
        if src:
            os.environ["OMP_WAIT_POLICY"] = "PASSIVE"      # an older checkout may not set it itself
        quiet = bm.measured(bm.measure("fedcluster", [key], run)[key])
        loaded = None   # --load 0 (the smoke test's): no neighbours, so no loaded condition to measure
        if args.load:
            with bm.neighbours(args.load):
                loaded = bm.measured(bm.measure("fedcluster", [key], run)[key])
        os.environ.pop("OMP_WAIT_POLICY", None)
        row = {"workload": key, "engine": engine, "threads": threads, "policy": quiet["omp_wait_policy"], "repeat": repeat,
               "source": src or "this checkout", "load_neighbours": args.load,
               "quiet_seconds_per_round": round(quiet["seconds_per_round"], 4),
               "loaded_seconds_per_round": round(loaded["seconds_per_round"], 4) if loaded else None,
               "slowdown_under_load": bm.ratio(loaded["seconds_per_round"], quiet["seconds_per_round"])
               if loaded else None,
               "fair_share_slowdown": bm.fair_share_slowdown(threads, args.load, os.cpu_count()),
               "cpu": bm.cpu_name(), "torch": quiet["torch"]}
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
