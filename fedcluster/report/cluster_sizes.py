"""`fedcluster-report cluster-sizes OUT.png RUN_DIR [RUN_DIR ...]`: Fed-CAM Figures 1 and 3, the cluster sizes over
rounds of several runs side by side, one panel per run, titled with the algorithm, K, partition, ARI and the final
largest cluster's share (and OUT.pdf beside it)."""
import io
from pathlib import Path

import pandas as pd

from .arguments import OneLineParser, finished_runs, refuse, writable_file

PROG = "fedcluster-report cluster-sizes"
SIZES_FILE = "cluster_sizes.csv"


def title(summary: dict) -> str:
    ari = summary.get("ari")
    if ari is None:
        return summary["algorithm"]
    return (f"{summary['algorithm']}, K={summary['config']['num_clusters']}, {summary['partition']}: "
            f"ARI {ari:.2f}, largest {100 * summary['largest_cluster_share']:.0f}%")


def parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="the figure to write (.png; a .pdf is written beside it)")
    p.add_argument("runs", type=Path, nargs="+", help="run directories (or sweeps of them), one panel each")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    out = writable_file(PROG, args.out, "a .png file path")
    panels = []
    for run in finished_runs(PROG, args.runs):
        try:
            sizes = pd.read_csv(io.StringIO(run.files.read_text(SIZES_FILE)))
        except (OSError, UnicodeDecodeError, pd.errors.ParserError) as e:
            refuse(PROG, f"{run.path}: {SIZES_FILE} cannot be read ({type(e).__name__}); allowed: runs of a "
                         "clustering method (they write cluster sizes every round)")
        panels.append((title(run.summary), sizes))
    from .figures import write_cluster_sizes
    write_cluster_sizes(out, panels)
    print(f"{PROG}: {len(panels)} runs -> {out}")
    return 0
