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
from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np
import pandas as pd

CSV = Path(__file__).with_name("paper_numbers.csv")
KEY_COLUMNS = ("table", "setting", "k", "method", "dataset", "metric", "distribution", "center")


class CellKey(NamedTuple):
    """One printed number: the key columns of its row (every other column is what it says). Empty
    columns are None; k, distribution and center are ints where given."""
    table: str
    setting: Optional[str]
    k: Optional[int]
    method: Optional[str]
    dataset: Optional[str]
    metric: str
    distribution: Optional[int]
    center: Optional[int]


class PaperValue(NamedTuple):
    """A printed number: its mean (None for a dash), its std (None where none is printed) and which cell it is."""
    mean: Optional[float]
    std: Optional[float]
    cell: CellKey


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


def _field(value, as_int: bool):
    if value is None or (isinstance(value, float) and pd.isna(value)) or value == "":
        return None
    return int(value) if as_int else str(value)


def cell_key(row) -> CellKey:
    """The CellKey of one row of the CSV (a pandas row or a dict)."""
    return CellKey(*(_field(row[c], c in ("k", "distribution", "center")) for c in KEY_COLUMNS))


def printed() -> pd.DataFrame:
    """Every printed number (a copy), with its CellKey in column `cell` and its paper table (e.g.
    'CLoVE Table 4', the start of `source`) in `printed_in`."""
    rows = _all().copy()
    rows["cell"] = [cell_key(r) for _, r in rows.iterrows()]
    rows["printed_in"] = rows["source"].str.extract(r"^(.*? Table \d+)", expand=False)
    return rows


def matrix(rows: pd.DataFrame) -> list:
    """[[value of center j on distribution d]] from rows with `distribution` and `center`."""
    size = int(max(rows["distribution"].max(), rows["center"].max())) + 1
    out = np.full((size, size), np.nan)
    for _, r in rows.iterrows():
        out[int(r["distribution"]), int(r["center"])] = r["mean"]
    return out.tolist()


def key_matrix(rows: pd.DataFrame) -> list:
    """[[CellKey of center j on distribution d]], the same shape as matrix(rows) (None where no row)."""
    size = int(max(rows["distribution"].max(), rows["center"].max())) + 1
    out = [[None] * size for _ in range(size)]
    for _, r in rows.iterrows():
        out[int(r["distribution"])][int(r["center"])] = cell_key(r)
    return out


def mean_std(rows: pd.DataFrame, key=("method", "dataset")) -> Dict[Tuple, PaperValue]:
    """{(method, dataset): PaperValue(mean, std, cell)}, in the CSV's order."""
    return {tuple(r[k] for k in key): PaperValue(number(r["mean"]), number(r["std"]), cell_key(r))
            for _, r in rows.iterrows()}


def by_setting(rows: pd.DataFrame, convert=str) -> Dict[object, pd.DataFrame]:
    """The rows grouped by `setting` (converted, e.g. to float for sigma0), in the CSV's order."""
    return {convert(s): rows[rows["setting"] == s] for s in dict.fromkeys(rows["setting"])}


# Tables whose printed numbers the CSV holds but that no builder lays out yet (no Spec in tables.TABLES):
# FedSoft Table 1's EMNIST letters half and Tables 4, 7, 8, whose runs (presets fedsoft/letters,
# fedsoft/letters_table4, fedsoft/cifar) report under fedsoft_table2. A table leaves this set when it gets a builder.
UNBUILT = frozenset({"fedsoft_table1_letters", "fedsoft_table4", "fedsoft_table7", "fedsoft_table8"})
