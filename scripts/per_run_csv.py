"""One row per finished run of one or more sweep directories: the final local test metrics (mean over
clients and pooled), macro-F1, ARI, final cluster sizes, device and wall time, and the run's algorithm
settings away from their defaults. For results pages that list every seed beside the report's means.

Usage: python scripts/per_run_csv.py OUT.csv SWEEP_DIR [SWEEP_DIR ...]"""
import argparse
import csv
import sys
from pathlib import Path

from fedcluster.results.defaults import options_text
from fedcluster.results.runs import discover

FIELDS = ["table", "partition", "K", "method", "options", "seed", "acc", "micro_acc", "macro_f1", "ari",
          "cluster_sizes", "device", "wall_time_s", "run_dir"]


def pct(value):
    return "" if value is None else round(100 * value, 2)


def row(run) -> dict:
    s = run.summary
    return {"table": s.get("table"), "partition": s["partition"], "K": (s.get("config") or {}).get("num_clusters"),
            "method": s["algorithm"], "options": options_text(run), "seed": s["seed"],
            "acc": pct((s.get("local") or {}).get("local_test_accuracy")),
            "micro_acc": pct((s.get("local_micro") or {}).get("local_test_accuracy")),
            "macro_f1": pct((s.get("local") or {}).get("local_test_macro_f1")),
            "ari": "" if s.get("ari") is None else round(s["ari"], 4),
            "cluster_sizes": " ".join(map(str, sorted(s.get("cluster_sizes") or [], reverse=True))),
            "device": s.get("device"), "wall_time_s": s.get("wall_time_s"), "run_dir": run.path.name}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("sweeps", type=Path, nargs="+")
    args = p.parse_args(argv)
    missing = [str(d) for d in args.sweeps if not d.is_dir()]
    if missing:
        sys.exit(f"per_run_csv.py: {', '.join(missing)} is not a directory")
    rows = [row(r) for d in args.sweeps for r in discover(d).runs]
    rows.sort(key=lambda r: (str(r["table"]), r["partition"], str(r["K"]), r["method"], r["options"], str(r["seed"])))
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"per_run_csv.py: {len(rows)} runs -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
