"""`fedcluster-report clove-within REPORT_CSV`: how many cells of a CLoVE report (its report_clove_*.csv) lie within
the paper's mean +- 2 std, per mixing: accuracy (with FedAvg's train-scored column where the report has one) and
ARI. The rule is the report's own verdict columns; this counts them."""
import io
from pathlib import Path

import pandas as pd

from .arguments import OneLineParser, refuse

PROG = "fedcluster-report clove-within"
ACCURACY = "fashion_mnist acc % − paper within 2 std"
TRAIN_ACCURACY = "fashion_mnist train acc % (round start) − paper within 2 std"
ARI = "fashion_mnist ARI − paper within 2 std"


def counts(frame: pd.DataFrame) -> list:
    """(mixing, accuracy within, accuracy cells, ARI within, ARI cells, methods) per mixing, in the report's order."""
    rows = []
    for mixing, g in frame.groupby("mixing", sort=False):
        acc = g[ACCURACY].dropna().tolist() + (g[TRAIN_ACCURACY].dropna().tolist() if TRAIN_ACCURACY in g else [])
        ari = g[ARI].dropna().tolist() if ARI in g else []
        rows.append((mixing, sum(map(bool, acc)), len(acc), sum(map(bool, ari)), len(ari), list(g["method"])))
    return rows


def parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("report_csv", type=Path, help="a CLoVE report's report_clove_*.csv")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        frame = pd.read_csv(io.StringIO(args.report_csv.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        refuse(PROG, f"{args.report_csv} cannot be read as a CSV ({type(e).__name__}); allowed: a CLoVE report's "
                     "report_clove_*.csv")
    missing = [c for c in ("mixing", "method", ACCURACY) if c not in frame]
    if missing:
        refuse(PROG, f"{args.report_csv} has no column {missing[0]!r}; allowed: a CLoVE report CSV with verdict "
                     f"columns (mixing, method, {ACCURACY!r})")
    for mixing, acc_in, acc_n, ari_in, ari_n, methods in counts(frame):
        print(f"{mixing}: accuracy {acc_in} of {acc_n} within; ARI {ari_in} of {ari_n} within "
              f"(methods: {', '.join(methods)})")
    return 0
