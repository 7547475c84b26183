"""The papers' reported numbers, as data: `paper_numbers.csv` beside this file, one number per row
(table, setting, k, method, dataset, metric, distribution, center, mean, std, source), read by
`reported(table)`. `setting` is what a table's rows or blocks vary (a partition, sigma0, lambda);
`k` the number of clusters where a table varies it (Fed-CAM); `distribution` and `center` index
a matrix of centers scored on distributions (FedSoft); `std` is empty where a paper gives none,
`mean` empty for a dash. A number is corrected in the CSV, with its source, never in code.

The paper modules (fedsoft.py, cam.py, clove.py) turn these rows into the shapes their table
builders read, with the helpers below."""
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np
import pandas as pd

CSV = Path(__file__).with_name("paper_numbers.csv")


@lru_cache(maxsize=None)
def _all() -> pd.DataFrame:
    return pd.read_csv(CSV, dtype={"setting": str, "method": str, "dataset": str, "metric": str, "table": str,
                                   "source": str}, keep_default_na=False, na_values={"mean": [""], "std": [""],
                                                                                     "k": [""], "distribution": [""],
                                                                                     "center": [""]})


def reported(table: str, **match) -> pd.DataFrame:
    """The rows of one paper table (a copy), optionally only those whose columns equal `match`."""
    rows = _all()[_all()["table"] == table]
    if rows.empty:
        raise KeyError(f"no reported numbers for table {table!r} in {CSV.name}")
    for key, value in match.items():
        rows = rows[rows[key] == value]
    return rows.copy()


def number(value) -> Optional[float]:
    """A cell of the CSV as a float, or None for a dash (empty)."""
    return None if pd.isna(value) else float(value)


def matrix(rows: pd.DataFrame) -> list:
    """[[value of center j on distribution d]] from rows with `distribution` and `center`."""
    size = int(max(rows["distribution"].max(), rows["center"].max())) + 1
    out = np.full((size, size), np.nan)
    for _, r in rows.iterrows():
        out[int(r["distribution"]), int(r["center"])] = r["mean"]
    return out.tolist()


def mean_std(rows: pd.DataFrame, key=("method", "dataset")) -> Dict[Tuple, Tuple[float, float]]:
    """{(method, dataset): (mean, std)}, in the CSV's order."""
    return {tuple(r[k] for k in key): (number(r["mean"]), number(r["std"])) for _, r in rows.iterrows()}


def by_setting(rows: pd.DataFrame, convert=str) -> Dict[object, pd.DataFrame]:
    """The rows grouped by `setting` (converted, e.g. to float for sigma0), in the CSV's order."""
    return {convert(s): rows[rows["setting"] == s] for s in dict.fromkeys(rows["setting"])}
