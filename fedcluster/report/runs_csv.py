"""`fedcluster-report runs-csv OUT.csv SWEEP_DIR [SWEEP_DIR ...]`: one row per finished run of one or more sweep
directories: the final local test metrics (mean over clients, and pooled), macro-F1, ARI, final cluster sizes,
device and wall time, and the run's algorithm settings away from their defaults. For results pages that list every
seed beside the report's means (and the rows `fedcluster-report cam-cells` reads)."""
import csv
import io
from pathlib import Path

from ..run_records.io import write_text
from .arguments import OneLineParser, refuse, writable_file
from .defaults import options_text
from .runs import ReportError, discover

PROG = "fedcluster-report runs-csv"
FIELDS = ["table", "partition", "K", "method", "options", "seed", "acc", "micro_acc", "macro_f1", "ari",
          "cluster_sizes", "device", "wall_time_s", "run_dir"]


def _percent(value):
    return "" if value is None else round(100 * value, 2)


def row(run) -> dict:
    """The run's row, read from its sealed summary."""
    s = run.summary
    return {"table": s.get("table"), "partition": s["partition"], "K": (s.get("config") or {}).get("num_clusters"),
            "method": s["algorithm"], "options": options_text(run), "seed": s["seed"],
            "acc": _percent((s.get("local") or {}).get("local_test_accuracy")),
            "micro_acc": _percent((s.get("local_micro") or {}).get("local_test_accuracy")),
            "macro_f1": _percent((s.get("local") or {}).get("local_test_macro_f1")),
            "ari": "" if s.get("ari") is None else round(s["ari"], 4),
            "cluster_sizes": " ".join(map(str, sorted(s.get("cluster_sizes") or [], reverse=True))),
            "device": s.get("device"), "wall_time_s": s.get("wall_time_s"), "run_dir": run.path.name}


def parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="the CSV to write")
    p.add_argument("sweeps", type=Path, nargs="+", help="sweep (or run) directories")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    missing = [str(d) for d in args.sweeps if not d.is_dir()]
    if missing:
        refuse(PROG, f"{missing[0]} is not a directory; allowed: sweep or run directories")
    out = writable_file(PROG, args.out, "a .csv file path")
    try:
        rows = [row(r) for d in args.sweeps for r in discover(d).runs]
    except ReportError as e:
        refuse(PROG, str(e))
    rows.sort(key=lambda r: (str(r["table"]), r["partition"], str(r["K"]), r["method"], r["options"], str(r["seed"])))
    text = io.StringIO(newline="")
    table = csv.DictWriter(text, fieldnames=FIELDS)
    table.writeheader()
    table.writerows(rows)
    write_text(out, text.getvalue())
    print(f"{PROG}: {len(rows)} runs -> {out}")
    return 0
