"""`fedcluster-report --baseline METHOD`: each configuration against the baseline method's run
of the same setting, metric by metric, as a difference with a 95 % confidence interval over
seeds (report/compare.py), '*' where the interval excludes 0, and '▲best' on the one
configuration of a setting that is significantly better than every other there (its interval
against each of them excludes 0 in the better direction). A setting is everything but the
algorithm: the data, partition, K and any other config key, but not the algorithm's own settings
(`algorithm.*` and the top-level keys only algorithms read, report/defaults.py) nor the paper table
a preset files the run under. The baseline's runs are looked for among all the report's runs, so a
method shown outside a paper's table is still compared with a baseline shown inside it."""
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import pandas as pd

from .compare import Difference, difference, significantly_best
from .defaults import algorithm_defaults, reporting_only, setting_name
from .runs import ABSENT, Cell, ReportError, Run, make_cells, show, varying_keys

# (column, value from a run's summary, higher is better, shown scale)
Metric = Tuple[str, Callable[[dict], Optional[float]], bool, float]


def _local(key: str, micro: bool = False):
    return lambda s: (s.get("local_micro" if micro else "local") or {}).get(key)


METRICS: List[Metric] = [
    ("acc (pts)", _local("local_test_accuracy"), True, 100.0),
    ("micro acc (pts)", _local("local_test_accuracy", micro=True), True, 100.0),
    ("F1 (pts)", _local("local_test_macro_f1"), True, 100.0),
    ("MSE", _local("local_test_mse"), False, 1.0),
    # the clients kept out of training (partition.holdout_clients), each with the model its method's rule picks
    ("unseen acc (pts)", _local("unseen_test_accuracy"), True, 100.0),
    ("unseen MSE", _local("unseen_test_mse"), False, 1.0),
    ("ARI", lambda s: s.get("ari"), True, 1.0),
]

NOTE = ("Differences to the baseline {b}: this configuration's mean minus {b}'s in the same setting (every "
        "config key but the algorithms' own settings equal; {b}'s runs may come from another table of this "
        "report), with a 95 % confidence interval over seeds: paired by seed "
        "(t on the per-seed differences) where both were run on the same seeds, and so on the same data draws; "
        "Welch's unequal-variance interval otherwise (the 'test' column says which, and over how many seeds); "
        "no interval from fewer than 3 seeds. '*': the interval excludes 0 and both sides have the table's full "
        "count of seeds. '▲best': significantly the best configuration of its setting in that "
        "column (its interval against every other configuration there excludes 0). acc, micro acc, F1 in "
        "percentage points of the local test metric; ARI of the final clustering; MSE lower is better; "
        "'unseen': on the clients held out of training (partition.holdout_clients), each with the model its method "
        "picks for a newcomer.")


def _is_option(key: str) -> bool:
    """An algorithm's own setting: `algorithm.*` (every method's settings live there, IFCA-CAM's warm-up too)."""
    return key.startswith("algorithm.")


def _option_keys(cell: Cell) -> Tuple:
    return tuple((k, v) for k, v in cell.key if _is_option(k))


def _in_setting(key: str) -> bool:
    """Whether a config key is part of the setting methods are compared in: not an algorithm's own
    setting, nor the paper table a preset files the run under."""
    return not _is_option(key) and key != "table"


def _setting(cell: Cell) -> Tuple:
    """The setting's keys among those the sub-table lays out (what its label shows)."""
    return tuple((k, v) for k, v in cell.key if _in_setting(k))


def _setting_of_run(run: Run) -> Tuple:
    """A run's whole setting, from its full config: what a baseline run from elsewhere must equal."""
    return tuple(sorted((k, v) for k, v in run.flat.items() if _in_setting(k)))


def _label(pairs) -> str:
    return ", ".join(f"{k}={show(v)}" for k, v in pairs if v is not ABSENT) or "–"


def _method_label(cell: Cell, own: Optional[set] = None) -> str:
    """The method and its settings that vary (`own`: only these keys), each named once, but not a K that
    only repeats the setting's num_clusters (a K set on the algorithm itself, e.g. a sweep of it, is shown)."""
    name = show(cell.value("algorithm.name"))
    options = {}
    for k, v in _option_keys(cell):
        if k != "algorithm.name" and v is not ABSENT and (own is None or k in own) \
                and not (k.endswith("num_clusters") and v == cell.value("num_clusters")):
            options.setdefault(setting_name(k), v)   # IFCA-CAM's warm-up: the top-level key and its own copy
    return name + (f" ({_label(options.items())})" if options else "")


def _by_seed(cell: Cell, value) -> Dict[object, float]:
    out = {}
    for r in cell.runs:
        v = value(r.summary)
        if v is not None and v == v:
            out[r.seed] = float(v)
    return out


def _baseline_cell(cells: Sequence[Cell], baseline: str) -> Optional[Cell]:
    """The baseline's cell the configurations of a setting are compared with: among the baseline's cells
    there, the one with the fewest algorithm settings away from the algorithm's defaults (the others are its
    sensitivity rows; without known defaults, the fewest set). None where there is none or no single such one."""
    mine = [c for c in cells if c.value("algorithm.name") == baseline]
    if not mine:
        return None
    defaults = algorithm_defaults(str(baseline))

    def options(c):
        return sum(v is not ABSENT and (not defaults or defaults.get(k, ABSENT) != v)
                   for k, v in _option_keys(c)
                   if k.startswith("algorithm.") and k != "algorithm.name" and not reporting_only(k))
    fewest = min(options(c) for c in mine)
    choice = [c for c in mine if options(c) == fewest]
    return choice[0] if len(choice) == 1 else None


def _significantly_best(cells: Sequence[Cell], value, higher: bool) -> Optional[Cell]:
    index = significantly_best({i: _by_seed(c, value) for i, c in enumerate(cells)}, higher)
    return None if index is None else cells[index]


def _baseline_elsewhere(members: Sequence[Cell], baseline: str, pool: Sequence[Run]) -> List[Cell]:
    """The baseline's cells for a setting whose sub-table has no baseline run: its runs of the same
    whole setting among all the report's runs (`pool`), e.g. FedAvg inside a paper's table for a
    method the table does not list."""
    setting = _setting_of_run(members[0].runs[0])
    runs = [r for r in pool if r.value("algorithm.name") == baseline and _setting_of_run(r) == setting]
    return make_cells(runs, varying_keys(runs) + ["algorithm.name"]) if runs else []


def _shown_setting_keys(settings: Sequence[Tuple]) -> List[str]:
    """The fewest setting keys that tell the frame's settings apart, taken greedily: the groups' names
    first (`dataset.name`, `partition.name`...), then K, then the rest; a key joins only where it splits
    settings the keys before it leave together (`dataset.test_size` follows the data set: not shown)."""
    keys = sorted({k for s in settings for k, _ in s}, key=lambda k: (not k.endswith(".name"), k != "num_clusters", k))
    shown, groups = [], [list(settings)]
    for k in keys:
        split = [[s for s in g if dict(s).get(k, ABSENT) == v] for g in groups
                 for v in dict.fromkeys(dict(s).get(k, ABSENT) for s in g)]
        if len(split) > len(groups):
            shown.append(k)
            groups = split
    return shown


def _own_options(cells: Sequence[Cell]) -> Dict[object, set]:
    """{method: its own settings whose values differ between its own cells}: what tells its rows apart
    (a key another method varies, e.g. IFCA-CAM's warm-up, is no label of FeSEM-CAM's)."""
    values: Dict[Tuple, set] = {}
    for c in cells:
        for k, v in _option_keys(c):
            values.setdefault((c.value("algorithm.name"), k), set()).add(v)
    out: Dict[object, set] = {}
    for (method, k), vs in values.items():
        if len(vs) > 1:
            out.setdefault(method, set()).add(k)
    return out


def baseline_frame(cells: Sequence[Cell], baseline: str,
                   pool: Sequence[Run] = ()) -> Tuple[pd.DataFrame, List[str]]:
    """The differences table of one sub-table's cells, and notes on settings left out. `pool`: all
    the report's runs, where a setting's baseline is looked for when the sub-table has none."""
    settings: Dict[Tuple, List[Cell]] = {}
    for c in cells:
        settings.setdefault(_setting(c), []).append(c)
    shown = _shown_setting_keys(list(settings))
    own = _own_options(cells)
    metrics = [m for m in METRICS if any(m[1](s) is not None for c in cells for s in c.summaries)]

    def label_of(c):
        return _method_label(c, own.get(c.value("algorithm.name"), set()))
    rows, notes = [], []
    full_count = max((len(c.seeds) for c in cells), default=0)
    for setting, members in settings.items():
        label = _label([(k, v) for k, v in setting if k in shown])
        named = _label(setting) if setting else "the table's only one"   # notes name the setting in full
        if not any(c.value("algorithm.name") == baseline for c in members):
            members = _baseline_elsewhere(members, baseline, pool) + list(members)
        base = _baseline_cell(members, baseline)
        if base is None:
            why = "no" if not any(c.value("algorithm.name") == baseline for c in members) else "more than one"
            notes.append(f"setting {named}: {why} {baseline} configuration to compare with; left out.")
            continue
        others = sorted((c for c in members if c is not base), key=label_of)
        if not others:
            notes.append(f"setting {named}: only {baseline} ran there; nothing to compare with it.")
            continue
        members = [base] + others   # the baseline's row first, then by name
        best = {name: _significantly_best(members, value, higher) for name, value, higher, _ in metrics}
        for c in members:
            row = {"setting": label, "method": label_of(c) + (" (baseline)" if c is base else "")}
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
                full = len(x) == len(b) == full_count   # a '*' only where both sides have the table's full count
                row[f"{name} − {baseline}"] = Difference(d.diff, d.low, d.high, d.test, d.n, scale, best[name] is c,
                                                         full=full)
            row["test"] = "; ".join(sorted(tests)) if c is not base else f"seeds {', '.join(map(str, c.seeds))}"
            rows.append(row)
    if not rows:
        return pd.DataFrame(), notes
    frame = pd.DataFrame(rows).fillna("")
    empty = [col for col in frame.columns if col.endswith(f" − {baseline}")
             and not any(isinstance(v, Difference) and v.own_mean is None for v in frame[col])]
    return frame.drop(columns=empty), notes   # a metric no row has a difference in (the baseline has no ARI)


def check_baseline(runs, baseline: str) -> None:
    """A one-line error where no run is of the baseline method, naming the methods there are."""
    names = sorted({str(r.value("algorithm.name")) for r in runs})
    if baseline not in names:
        raise ReportError(f"--baseline {baseline!r} is not a method of these runs; allowed: {', '.join(names)}")
