"""Side-by-side cluster sizes over rounds of several runs (Fed-CAM Figures 1 and 3).

Usage: python scripts/cluster_size_figure.py OUT.png RUN_DIR [RUN_DIR ...]
Each RUN_DIR holds a run's cluster_sizes.csv and summary.json; the panel title names the
algorithm, K, partition, ARI and the final largest-cluster share."""
import json
import sys
from pathlib import Path

import pandas as pd

from fedcluster.plots import write_cluster_sizes


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    out, runs = Path(argv[0]), []
    for d in map(Path, argv[1:]):
        s = json.loads((d / "summary.json").read_text())
        ari = s.get("ari")
        title = (f"{s['algorithm']}, K={s['config']['num_clusters']}, {s['partition']}: "
                 f"ARI {ari:.2f}, largest {100 * s['largest_cluster_share']:.0f}%" if ari is not None else s["algorithm"])
        runs.append((title, pd.read_csv(d / "cluster_sizes.csv")))
    write_cluster_sizes(out, runs)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
