"""FedSoft Figure 2: each client's final weight on the first cluster (the center matched to the
first distribution) vs client index, for several runs (e.g. FedSoft, IFCA, FedEM on 10:90).

Usage: python scripts/importance_figure.py OUT.png RUN_DIR [RUN_DIR ...]
Each RUN_DIR holds a run's assignments.csv and summary.json; the legend names the algorithm."""
import json
import sys
from pathlib import Path

from fedcluster.plots import final_first_cluster_weights, write_first_cluster_weights


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    out = Path(argv[0])
    if out.is_dir() or any(p.exists() and not p.is_dir() for p in out.parents):
        sys.exit(f"importance_figure.py: {out} cannot be written (a folder, or a path through a file); give a .png path")
    runs = []
    for d in argv[1:]:
        try:
            runs.append((json.loads((Path(d) / "summary.json").read_text())["algorithm"], final_first_cluster_weights(d)))
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"importance_figure.py: {d} is no finished run with assignments ({type(e).__name__}: "
                     f"{getattr(e, 'filename', None) or e}); give run directories holding summary.json and assignments.csv")
    write_first_cluster_weights(out, runs)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
