"""`fedcluster-report --baseline METHOD`: each configuration against the baseline method's run
of the same setting, metric by metric, as a difference with a 95 % confidence interval over
seeds (results/compare.py), '*' where the interval excludes 0, and '▲best' on the one
configuration of a setting that is significantly better than every other there (its interval
against each of them excludes 0 in the better direction). A setting is everything but the
algorithm: the data, partition, K and any other key that varies."""
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import pandas as pd

from ..results.compare import Difference, difference, significantly_best
from ..results.defaults import algorithm_defaults, reporting_only, setting_name
from ..results.runs import ABSENT, Cell, ReportError, show

# (column, value from a run's summary, higher is better, shown scale)
Metric = Tuple[str, Callable[[dict], Optional[float]], bool, float]


def _local(key: str, micro: bool = False):
    return lambda s: (s.get("local_micro" if micro else "local") or {}).get(key)


METRICS: List[Metric] = [
    ("acc (pts)", _local("local_test_accuracy"), True, 100.0),
    ("micro acc (pts)", _local("local_test_accuracy", micro=True), True, 100.0),
    ("F1 (pts)", _local("local_test_macro_f1"), True, 100.0),
    ("MSE", _local("local_test_mse"), False, 1.0),
    ("ARI", lambda s: s.get("ari"), True, 1.0),
]

NOTE = ("Differences to the baseline {b}: this configuration's mean minus {b}'s in the same setting (every "
        "varying key but the algorithm's equal), with a 95 % confidence interval over seeds: paired by seed "
        "(t on the per-seed differences) where both were run on the same seeds, and so on the same data draws; "
        "Welch's unequal-variance interval otherwise (the 'test' column says which, and over how many seeds). "
        "'*': the interval excludes 0. '▲best': significantly the best configuration of its setting in that "
        "column (its interval against every other configuration there excludes 0). acc, micro acc, F1 in "
        "percentage points of the local test metric; ARI of the final clustering; MSE lower is better.")


def _algorithm_keys(cell: Cell) -> Tuple:
    return tuple((k, v) for k, v in cell.key if k.startswith("algorithm."))


def _setting(cell: Cell) -> Tuple:
    return tuple((k, v) for k, v in cell.key if not k.startswith("algorithm.") and k != "table")


def _label(pairs) -> str:
    return ", ".join(f"{k}={show(v)}" for k, v in pairs if v is not ABSENT) or "–"


def _method_label(cell: Cell) -> str:
    name = show(cell.value("algorithm.name"))
    options = [(setting_name(k), v) for k, v in _algorithm_keys(cell) if k != "algorithm.name" and v is not ABSENT]
    return name + (f" ({_label(options)})" if options else "")


def _by_seed(cell: Cell, value) -> Dict[object, float]:
    out = {}
    for r in cell.runs:
        v = value(r.summary)
        if v is not None and v == v:
            out[r.seed] = float(v)
    return out


def _baseline_cell(cells: Sequence[Cell], baseline: str) -> Optional[Cell]:
    """The baseline's cell of a setting: where it was run in several configurations, the one
    with the fewest algorithm settings away from the algorithm's defaults (the others are its
    sensitivity rows; without known defaults, the fewest set); None where there is none or no
    single such one."""
    mine = [c for c in cells if c.value("algorithm.name") == baseline]
    if not mine:
        return None
    defaults = algorithm_defaults(str(baseline))

    def options(c):
        return sum(v is not ABSENT and (not defaults or defaults.get(k, ABSENT) != v)
                   for k, v in _algorithm_keys(c) if k != "algorithm.name" and not reporting_only(k))
    fewest = min(options(c) for c in mine)
    choice = [c for c in mine if options(c) == fewest]
    return choice[0] if len(choice) == 1 else None


def _significantly_best(cells: Sequence[Cell], value, higher: bool) -> Optional[Cell]:
    index = significantly_best({i: _by_seed(c, value) for i, c in enumerate(cells)}, higher)
    return None if index is None else cells[index]


def baseline_frame(cells: Sequence[Cell], baseline: str) -> Tuple[pd.DataFrame, List[str]]:
    """The differences table of one sub-table's cells, and notes on settings left out."""
    settings: Dict[Tuple, List[Cell]] = {}
    for c in cells:
        settings.setdefault(_setting(c), []).append(c)
    metrics = [m for m in METRICS if any(m[1](s) is not None for c in cells for s in c.summaries)]
    rows, notes = [], []
    for setting, members in settings.items():
        base = _baseline_cell(members, baseline)
        if base is None:
            why = "no" if not any(c.value("algorithm.name") == baseline for c in members) else "more than one"
            notes.append(f"setting {_label(setting)}: {why} {baseline} configuration to compare with; left out.")
            continue
        best = {name: _significantly_best(members, value, higher) for name, value, higher, _ in metrics}
        for c in members:
            row = {"setting": _label(setting), "method": _method_label(c) + (" (baseline)" if c is base else "")}
            tests = set()
            for name, value, higher, scale in metrics:
                x, b = _by_seed(c, value), _by_seed(base, value)
                if c is base:
                    row[f"{name} − {baseline}"] = (Difference.of_baseline(sum(x.values()) / len(x), len(x), scale,
                                                                          best[name] is c) if x else "")
                    continue
                d = difference(x, b)
                if d is None:
                    row[f"{name} − {baseline}"] = ""
                    continue
                tests.add(f"{d.test} ({d.n})")
                row[f"{name} − {baseline}"] = Difference(d.diff, d.low, d.high, d.test, d.n, scale, best[name] is c)
            row["test"] = "; ".join(sorted(tests)) if c is not base else f"seeds {', '.join(map(str, c.seeds))}"
            rows.append(row)
    return pd.DataFrame(rows).fillna(""), notes


def check_baseline(runs, baseline: str) -> None:
    """A one-line error where no run is of the baseline method, naming the methods there are."""
    names = sorted({str(r.value("algorithm.name")) for r in runs})
    if baseline not in names:
        raise ReportError(f"--baseline {baseline!r} is not a method of these runs; allowed: {', '.join(names)}")
