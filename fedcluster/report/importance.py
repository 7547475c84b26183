"""`fedcluster-report importance OUT.png RUN_DIR [RUN_DIR ...]`: FedSoft Figure 2, each client's final weight on the
first cluster (the center paired with the first distribution) against the client's index, one marker series per
run (FedSoft's u, FedEM's pi, IFCA's one-hot assignment), and OUT.pdf beside it."""
import io
from pathlib import Path

import pandas as pd

from .arguments import OneLineParser, finished_runs, refuse, writable_file

PROG = "fedcluster-report importance"
ASSIGNMENTS_FILE = "assignments.csv"


def parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="the figure to write (.png; a .pdf is written beside it)")
    p.add_argument("runs", type=Path, nargs="+", help="run directories (or sweeps of them), one series each")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    out = writable_file(PROG, args.out, "a .png file path")
    from .figures import final_first_cluster_weights, write_first_cluster_weights
    series = []
    for run in finished_runs(PROG, args.runs):
        try:
            assignments = pd.read_csv(io.StringIO(run.files.read_text(ASSIGNMENTS_FILE)))
            series.append((run.summary["algorithm"], final_first_cluster_weights(run.summary, assignments)))
        except (OSError, UnicodeDecodeError, ValueError, KeyError, IndexError, pd.errors.ParserError) as e:
            refuse(PROG, f"{run.path} is no finished run with assignments ({type(e).__name__}: "
                         f"{getattr(e, 'filename', None) or e}); allowed: runs holding summary.json and assignments.csv")
    write_first_cluster_weights(out, series)
    print(f"{PROG}: {len(series)} runs -> {out}")
    return 0
