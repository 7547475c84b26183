"""Memory and time of a run as the number of clients grows (FedSoft, synthetic mixed linear
regression, App. C settings): seconds per round and peak resident memory at each size.

Each size runs in its own process (peak RSS = that process's ru_maxrss): one run of 1 round and
one of 1 + R rounds; seconds per round = the difference / R (start-up left out), peak RSS from
the longer run. FedSoft's selection size (K=60 of 100 in App. C) scales with the clients.

Usage: python benchmarks/scaling.py [--clients 2000,20000] [--rounds 2] [--json]"""
import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(clients: int, rounds: int) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import benchmark as bm
    from fedcluster.runner import run
    cfg = bm.compose(["algorithm=fedsoft", f"partition.num_clients={clients}",
                      f"algorithm.selection_size={max(1, round(0.6 * clients))}", f"rounds={rounds}",
                      f"eval_every={rounds}"] + bm.COMMON)
    with tempfile.TemporaryDirectory() as out:
        tick = time.perf_counter()
        summary = run(cfg, out)
        wall = time.perf_counter() - tick
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024     # KiB -> MiB on Linux
    print(json.dumps({"wall": wall, "peak_rss_mb": rss, "engine": summary["engine"]}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", default="2000,20000")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(*args.child)
    for clients in [int(c) for c in args.clients.split(",")]:
        res = {}
        for r in (1, 1 + args.rounds):
            out = subprocess.run([sys.executable, __file__, "--child", str(clients), str(r)], capture_output=True,
                                 text=True, check=True)
            res[r] = json.loads(out.stdout.strip().splitlines()[-1])
        row = {"clients": clients, "seconds_per_round": round((res[1 + args.rounds]["wall"] - res[1]["wall"]) / args.rounds, 3),
               "peak_rss_mb": round(res[1 + args.rounds]["peak_rss_mb"], 1), "engine": res[1]["engine"]}
        print(json.dumps(row) if args.json else
              f"{clients:>7d} clients: {row['seconds_per_round']:.3f} s/round, peak RSS {row['peak_rss_mb']:.0f} MiB "
              f"({row['engine']} engine)", flush=True)


if __name__ == "__main__":
    main()
