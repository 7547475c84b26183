#!/usr/bin/env python3
"""Usage: python scripts/clove_within_counts.py REPORT_CSV (a CLoVE report's report_clove_*.csv).

Cells within the paper's mean ± 2 std in a CLoVE report CSV: accuracy (FedAvg's train-scored column where the
report has one) and ARI, per mixing."""
import sys
from pathlib import Path

import pandas as pd

if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
    sys.exit(f"clove_within_counts.py: give one CLoVE report CSV (report_clove_*.csv); got {sys.argv[1:]}")
d = pd.read_csv(sys.argv[1])
if "mixing" not in d or "fashion_mnist acc % − paper within 2 std" not in d:
    sys.exit(f"clove_within_counts.py: {sys.argv[1]} is no CLoVE report CSV with verdict columns (mixing, "
             "'fashion_mnist acc % − paper within 2 std')")
acc, tr, ari = ("fashion_mnist acc % − paper within 2 std", "fashion_mnist train acc % (round start) − paper within 2 std",
                "fashion_mnist ARI − paper within 2 std")
for mixing, g in d.groupby("mixing", sort=False):
    a = g[acc].dropna().tolist() + (g[tr].dropna().tolist() if tr in g else [])
    r = g[ari].dropna().tolist() if ari in g else []
    print(f"{mixing}: accuracy {sum(map(bool, a))} of {len(a)} within; ARI {sum(map(bool, r))} of {len(r)} within "
          f"(methods: {', '.join(g['method'])})")
