"""The per-cell account of the papers: every number they print, and what became of it here.

A cell is one printed number (a row of tables/paper_numbers.csv: method x setting x data set x
metric, or a center on a distribution). Its data are on these machines or not (`data_here` in
docs/cells.yaml); our number for it is the one the paper tables (tables/) put beside it when they are
built over the archived runs the registry names (`runs`), exactly as `fedcluster-report` builds them;
and its verdict is the report's (results/cells.Verdict): within the paper's mean ± 2 std, or, where the
paper prints no std, whether our mean ± 2 std over seeds contains the paper's value (its own category,
never counted as "within"). A printed dash ("never reached") agrees with runs none of whose seeds
reached it.

A cell outside counts as explained only by a measurement: a registry cause whose `measured` names an
archived run folder (an ablation set to what the authors' code does, or a replay of their artefact)
over which the same table puts the cell inside the band at 3 seeds or more (report.compare.MIN_SEEDS), or a results page and a quote on it that
shows the measurement. A cause that is `argued` (read in code, reasoned) is printed beside the cell,
which stays unexplained. Nothing here is typed: every count is recomputed from the files.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import yaml
from ..run_records.yaml_safe import safe_load

from . import tables
from .cells import Reported, Stat, Verdict
from .compare import MIN_SEEDS
from .defaults import options_text
from .runs import discover
from .tables.common import paired_columns
from .tables.paper_numbers import KEY_COLUMNS, CellKey, number, printed
from .sections import sections_for

REGISTRY = Path("docs") / "cells.yaml"
PAGE = Path("docs") / "cells.md"
FIELDS = ("data_here", "runs", "causes")
CAUSE_FIELDS = ("cells", "measured", "quote", "argued")
RUN_ITEM = {"paths", "settings", "where", "ignore"}

# The categories, in the order the page counts them (each cell is in exactly one).
NOT_RUNNABLE = "data not here"
NOT_RUN = "runnable, not run"
NOT_COMPARED = "run, not compared"
WITHIN = "within"
NO_STD = "no std printed: ours ± 2 std contains the paper's value"
MEASURED = "outside, measured cause"
UNEXPLAINED = "outside, unexplained"
CATEGORIES = (WITHIN, NO_STD, MEASURED, UNEXPLAINED, NOT_COMPARED, NOT_RUN, NOT_RUNNABLE)


class AccountError(Exception):
    """The registry or a run folder it names is unusable (one line, naming the entry)."""


@dataclass(frozen=True)
class Ours:
    """Our number for one printed cell, the paper's beside it, and where it was built from."""
    stat: Stat
    paper: Reported
    folder: str

    @property
    def within(self) -> Optional[bool]:
        """True/False: inside/outside the band; None: no verdict (no value, or one seed and no printed std)."""
        # CLoVE's first-round cells: its notebook (plot_utils/exp_evaluations_supervised.ipynb at b602090f,
        # get_averaged_results_with_std) takes np.mean over the seeds of get_index_exceeding_threshold(ARI, 0.9),
        # which is NaN for a seed that never reaches 0.9, so one such seed makes the cell a dash.
        never = "never" in self.stat.note
        if not math.isfinite(self.paper.mean):   # a printed dash: some seed never reached it
            return True if never else (False if self.stat.n else None)
        if never:
            return False
        verdict = Verdict.of(self.stat, self.paper)
        return None if verdict is None else verdict.within

    @property
    def ran(self) -> bool:
        return self.stat.n > 0 or self.stat.note == "never"

    def text(self) -> str:
        verdict = Verdict.of(self.stat, self.paper) if math.isfinite(self.paper.mean) else None
        diff = f" ({verdict.text()})" if verdict is not None else ""
        return f"ours {self.stat.text()} vs paper {self.paper.text()}{diff}"


def _entry(item) -> tuple:
    """A registry `runs` item as (folders, settings, where): a folder, or {paths: [...], settings: {method:
    options}, where: {method: {dotted key: value}}}. A run is kept only if its settings away from its
    method's defaults (report.defaults.options_text) are the ones `settings` gives for its method ('*':
    every other method; '' its default configuration), and its config has the values `where` gives for
    its method. Hashable, for the cache."""
    if isinstance(item, str):
        return (item,), (), (), ()
    settings = tuple(sorted((str(k), str(v or "")) for k, v in (item.get("settings") or {}).items()))
    where = tuple(sorted((str(m), tuple(sorted((str(k), str(v)) for k, v in keys.items())))
                         for m, keys in (item.get("where") or {}).items()))
    if "csv" in item:
        return tuple(item["csv"]), settings, where, str(item["dataset"])
    return tuple(item["paths"]), settings, where, tuple(sorted(item.get("ignore") or ()))


# Per-run CSVs (`fedcluster-report runs-csv`'s rows, the Fed-CAM cells page's source where the runs themselves were
# not archived): which column holds each metric, as the cells page compares them (the paper's accuracy is
# Fed-CAM's micro accuracy, pooled over the clients' test samples).
CSV_METRICS = {"accuracy": "micro_acc", "macro_f1": "macro_f1"}
K_FREE = ("fedavg", "fedprox")   # one printed row per setting (K = 1 in paper_numbers.csv)


def _csv_harvest(entry: tuple, root: Path) -> Dict[CellKey, Ours]:
    """{cell: our number} from per-run CSV rows: a row's cell is (table, partition, K, method) of
    `dataset`, kept by the same settings/where filter as runs (on the CSV's options and columns);
    where one seed has a GPU and a CPU row the GPU one counts (the cells page's rule)."""
    files, settings, where, dataset = entry[0], dict(entry[1]), dict(entry[2]), entry[3]
    import csv
    groups: Dict[tuple, Dict[str, dict]] = {}
    for name in files:
        path = root / name
        if not path.is_file():
            raise AccountError(f"per-run CSV {name} does not exist")
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                method = r["method"]
                if not _wanted(method, r["options"] or "", r.get, settings, where):
                    continue
                k = 1 if method in K_FREE else int(r["K"])
                seeds = groups.setdefault((r["table"], r["partition"], k, method), {})
                twin = seeds.get(r["seed"])
                if twin is None or ("cuda" in str(r.get("device")) and "cuda" not in str(twin.get("device"))):
                    seeds[r["seed"]] = r
    label = _label(entry)
    out = {}
    printed_rows = printed()
    for (table, partition, k, method), seeds in groups.items():
        for metric, column in CSV_METRICS.items():
            hit = printed_rows[(printed_rows["table"] == table) & (printed_rows["setting"] == partition)
                               & (printed_rows["method"] == method) & (printed_rows["dataset"] == dataset)
                               & (printed_rows["metric"] == metric)]
            hit = hit[[c.k == k for c in hit["cell"]]]
            if hit.empty:
                continue
            row = hit.iloc[0]
            paper = Reported(float(row["mean"]), number(row["std"]), 2, row["cell"])
            stat = Stat.of((float(r[column]) for r in seeds.values() if r[column] not in ("", None)), style="pct")
            if stat.n:
                out[row["cell"]] = Ours(stat, paper, label)
    return out


def _label(entry: tuple) -> str:
    folders, settings, where = entry[:3]
    shown = ", ".join(f"{k}: {v or 'defaults'}" for k, v in settings)
    shown += "".join(f"; {m} with " + ", ".join(f"{k}={v}" for k, v in keys) for m, keys in where)
    return " + ".join(folders) + (f" ({shown})" if shown else "")


def _wanted(method: str, options: str, value_of, settings: dict, where: dict) -> bool:
    """Whether a run (or a per-run CSV row) of `method`, its settings away from the defaults `options`, passes a
    registry item's filters: `settings` (per method, '*' for the others) and `where` (`value_of(key)` equal)."""
    if settings and options != settings.get(method, settings.get("*", "")):
        return False
    return all(str(value_of(k)) == v for k, v in where.get(method, where.get("*", ())))


def _kept(run, settings: dict, where: dict) -> bool:
    return _wanted(str(run.summary.get("algorithm")), options_text(run), run.value, settings, where)


def _any_machine(run, ignore=()):
    """The run with its hardware settings (and the registry item's `ignore` keys: ones it says are the same
    for every run, e.g. a key older runs did not record) left out of its config: a seed run on a CPU and one
    on a GPU are seeds of one cell here (the cells page's rule; their spread is what the machines give)."""
    return replace(run, flat={k: v for k, v in run.flat.items() if not k.startswith("hardware.") and k not in ignore})


def harvest(item, root: Path = Path(".")) -> Dict[CellKey, Ours]:
    """{cell: our number} from the paper tables built over the runs of one registry item (a folder, or
    folders with a settings filter), as fedcluster-report builds them. A cell two rows of those tables
    both fill is an error: the item mixes two settings of one cell."""
    entry = item if isinstance(item, tuple) else _entry(item)
    if isinstance(entry[3], str):
        return _csv_harvest(entry, root)
    folders, settings, where, ignore = entry
    runs = []
    for folder in folders:
        if not (root / folder).is_dir():
            raise AccountError(f"run folder {folder} does not exist")
        runs += [_any_machine(r, ignore) for r in discover(root / folder).runs if _kept(r, dict(settings), dict(where))]
    label = _label(entry)
    out: Dict[CellKey, Ours] = {}
    for section in sections_for(runs):
        if section.name not in tables.TABLES:
            continue
        for _, table in section.parts:
            for paper_col, our_col in paired_columns(table):
                for paper, ours in zip(table.frame[paper_col], table.frame[our_col]):
                    if not (isinstance(paper, Reported) and paper.cell is not None and isinstance(ours, Stat)):
                        continue
                    found = Ours(ours, paper, label)
                    if not found.ran:
                        continue
                    if paper.cell in out:
                        raise AccountError(f"{label}: two rows give cell {_name(paper.cell)}; the runs mix two "
                                           "settings of it: keep one with a settings filter or its own folder")
                    out[paper.cell] = found
    return out


@lru_cache(maxsize=None)
def _harvest_cached(item: tuple, root: str) -> Dict[CellKey, Ours]:
    return harvest(item, Path(root))


def _name(cell: CellKey) -> str:
    return " ".join(f"{k}={v}" for k, v in zip(KEY_COLUMNS, cell) if v is not None)


def _matches(selector: dict, cell: CellKey) -> bool:
    for key, want in selector.items():
        have = getattr(cell, key)
        wanted = want if isinstance(want, list) else [want]
        if have not in wanted and str(have) not in [str(w) for w in wanted]:
            return False
    return True


def load(registry: Path = REGISTRY, root: Path = Path(".")) -> dict:
    """The registry, checked: known fields, run folders that exist, causes that name cells by
    paper_numbers.csv's key columns and say `measured` (a run folder, or a page with a quote on it)
    or `argued`."""
    try:
        reg = safe_load(registry.read_text()) or {}
    except yaml.YAMLError as e:
        raise AccountError(f"{registry}: not valid YAML ({getattr(e, 'problem', None) or e})") from None
    if not isinstance(reg, dict):
        raise AccountError(f"{registry}: expected a mapping with {list(FIELDS)}")
    unknown = sorted(set(reg) - set(FIELDS))
    if unknown:
        raise AccountError(f"{registry}: unknown field(s) {unknown}; allowed: {list(FIELDS)}")
    for item in reg.get("runs") or []:
        runs_item = isinstance(item, dict) and set(item) <= RUN_ITEM and isinstance(item.get("paths"), list)
        csv_item = isinstance(item, dict) and set(item) <= {"csv", "settings", "where", "dataset"} \
            and isinstance(item.get("csv"), list) and item.get("dataset")
        if not (isinstance(item, str) or runs_item or csv_item):
            raise AccountError(f"{registry}: runs item {item!r} is none of: a folder, {{paths: [...], settings, where}}, "
                               "{csv: [...], dataset, settings, where}")
        for name in _entry(item)[0]:
            if not ((root / name).is_file() if csv_item else (root / name).is_dir()):
                raise AccountError(f"{registry}: {'per-run CSV' if csv_item else 'run folder'} {name} does not exist")
    for i, cause in enumerate(reg.get("causes") or []):
        name = f"{registry}: cause {i + 1}"
        bad = sorted(set(cause) - set(CAUSE_FIELDS))
        if bad:
            raise AccountError(f"{name}: unknown field(s) {bad}; allowed: {list(CAUSE_FIELDS)}")
        if not isinstance(cause.get("cells"), dict) or not set(cause["cells"]) <= set(KEY_COLUMNS):
            raise AccountError(f"{name}: cells must map key columns {list(KEY_COLUMNS)} to values")
        if bool(cause.get("measured")) == bool(cause.get("argued")):
            raise AccountError(f"{name}: give exactly one of measured (a run folder or a results page) or argued")
        measured = cause.get("measured")
        if isinstance(measured, dict):
            if not (set(measured) <= RUN_ITEM and isinstance(measured.get("paths"), list)):
                raise AccountError(f"{name}: measured {measured!r} is neither a path nor {{paths: [...], settings, where, "
                                   "ignore}}")
            for folder in measured["paths"]:
                if not (root / folder).is_dir():
                    raise AccountError(f"{name}: measured run folder {folder} does not exist")
        elif measured:
            path = root / measured
            if path.is_file():
                if not cause.get("quote") or cause["quote"] not in path.read_text():
                    raise AccountError(f"{name}: measured page {measured} needs a quote found on it")
            elif not path.is_dir():
                raise AccountError(f"{name}: measured {measured} is neither a run folder nor a results page")
    return reg


@dataclass
class Entry:
    """One printed cell, its category, our number and the cause beside it."""
    cell: CellKey
    printed_in: str
    category: str
    ours: Optional[Ours] = None
    cause: str = ""
    edge: bool = False   # its verdict is closer to the band's edge than the machines' measured spread


def _twins_csv(entry: tuple, root: Path) -> List[Tuple[str, float, str]]:
    """(metric, |difference|, which) for every seed a per-run CSV holds on two kinds of device."""
    import csv
    rows: Dict[tuple, Dict[str, dict]] = {}
    for name in entry[0]:
        with (root / name).open(newline="") as f:
            for r in csv.DictReader(f):
                kind = "cuda" if "cuda" in str(r.get("device")) else "cpu"
                rows.setdefault((r["table"], r["partition"], r["K"], r["method"], r["options"], r["seed"]), {})[kind] = r
    out = []
    for key, by_kind in rows.items():
        if len(by_kind) == 2:
            for metric, column in CSV_METRICS.items():
                a, b = (by_kind[k][column] for k in ("cuda", "cpu"))
                if a not in ("", None) and b not in ("", None):
                    out.append((metric, abs(float(a) - float(b)), " ".join(map(str, key)) + ": GPU vs CPU"))
    return out


def _twins_runs(entry: tuple, root: Path) -> List[Tuple[str, float, str]]:
    """(metric, |difference| in percent, which) for every config and seed two machines ran (summary.json's
    `machine` or device differ; hardware settings aside)."""
    seen: Dict[tuple, object] = {}
    out = []
    for folder in entry[0]:
        for run in discover(root / folder).runs:
            bare = _any_machine(run)
            key = (tuple(sorted((k, repr(v)) for k, v in bare.flat.items())), repr(run.seed))
            where = str(run.summary.get("machine") or run.summary.get("device"))
            other = seen.get(key)
            if other is None:
                seen[key] = run
                continue
            if str(other.summary.get("machine") or other.summary.get("device")) != where:
                a, b = ((r.summary.get("local") or {}).get("local_test_accuracy") for r in (other, run))
                if a is not None and b is not None:
                    out.append(("accuracy", 100 * abs(a - b), f"{run.path.name}: two machines"))
    return out


def machine_spread(reg: dict, root: Path = Path(".")) -> Dict[str, Tuple[float, int]]:
    """{metric: (largest difference, pairs)} between two machines' runs of one config and seed, over every
    item the registry names: what a verdict cannot be judged by a smaller margin than."""
    pairs = []
    for item in reg.get("runs") or []:
        entry = _entry(item)
        pairs += _twins_csv(entry, root) if isinstance(entry[3], str) else _twins_runs(entry, root)
    out: Dict[str, Tuple[float, int]] = {}
    for (metric, _), diff in {(metric, which): diff for metric, diff, which in pairs}.items():   # one pair once
        best, n = out.get(metric, (0.0, 0))
        out[metric] = (max(best, diff), n + 1)
    return out


def _cause(reg: dict, cell: CellKey, root: Path) -> Tuple[bool, str]:
    """(measured, what the registry says) for a cell outside its band."""
    said = []
    for cause in reg.get("causes") or []:
        if not _matches(cause["cells"], cell):
            continue
        if cause.get("argued"):
            said.append(f"argued, not measured: {cause['argued']}")
            continue
        measured = cause["measured"]
        if isinstance(measured, str) and (root / measured).is_file():
            return True, f"measured: [{measured}]({measured}): '{cause['quote']}'"
        there = _harvest_cached(_entry(measured), root.as_posix()).get(cell)
        if there is not None and there.within and there.stat.n >= MIN_SEEDS:
            return True, f"measured: {_label(_entry(measured))} ({there.text()})"
        if there is not None and there.within:
            said.append(f"the ablation {_label(_entry(measured))} puts it inside with {there.stat.n} seed(s), too few to count "
                        f"({MIN_SEEDS} needed; {there.text()})")
            continue
        said.append(f"the ablation {_label(_entry(measured))} leaves it outside" +
                    (f" ({there.text()})" if there is not None else " (it does not hold the cell)"))
    return False, "; ".join(said)


def account(reg: dict, root: Path = Path(".")) -> List[Entry]:
    """Every printed cell with its category (first listed run folder wins a cell two folders hold)."""
    ours: Dict[CellKey, Ours] = {}
    for item in reg.get("runs") or []:
        for cell, found in _harvest_cached(_entry(item), root.as_posix()).items():
            ours.setdefault(cell, found)
    here = set(reg.get("data_here") or [])
    spread = machine_spread(reg, root)
    entries = []
    for _, row in printed().iterrows():
        cell = row["cell"]
        entry = Entry(cell, row["printed_in"], NOT_RUNNABLE)
        if cell.dataset in here:
            found = ours.get(cell)
            entry.ours = found
            within = found.within if found is not None else None
            if found is None:
                entry.category = NOT_RUN
            elif within is None:
                entry.category = NOT_COMPARED
            elif within:
                entry.category = NO_STD if found.paper.std is None and math.isfinite(found.paper.mean) else WITHIN
            else:
                measured, entry.cause = _cause(reg, cell, root)
                entry.category = MEASURED if measured else UNEXPLAINED
            paper = found.paper if found is not None else None
            if within is not None and paper is not None and paper.std and cell.metric in spread:
                margin = abs(abs(found.stat.mean - paper.mean) - 2 * paper.std)
                entry.edge = margin < spread[cell.metric][0]
        entries.append(entry)
    return entries


def counts(entries: List[Entry]) -> Dict[str, int]:
    c = Counter(e.category for e in entries)
    runnable = len(entries) - c[NOT_RUNNABLE]
    run = runnable - c[NOT_RUN]
    return {"printed": len(entries), "runnable": runnable, "run": run, "compared": run - c[NOT_COMPARED],
            **{k: c[k] for k in CATEGORIES}}


def cells_line(entries: List[Entry]) -> str:
    """The page's first line: every count recomputed from the files."""
    n = counts(entries)
    return (f"Cells: {n['printed']} printed, {n['runnable']} runnable here, {n['run']} run, {n['compared']} compared, "
            f"{n[WITHIN]} within, {n[NO_STD]} with no std printed (ours ± 2 std contains the paper's value), "
            f"{n[MEASURED]} outside with a measured cause, {n[UNEXPLAINED]} outside unexplained, "
            f"{n[NOT_COMPARED]} run but not compared, {n[NOT_RUN]} runnable but not run.")


RULES = ("Within: our mean inside the paper's mean ± 2 std (a printed '± 0': ours rounds to the printed value; a "
         "printed dash, never reached: some seed of ours never reached it, as the authors' notebook prints a dash for a NaN mean). Where the paper prints no std, our mean ± 2 sample "
         "std over seeds must contain the paper's value, counted apart, never as within; one seed and no printed std "
         "is no verdict (run, not compared). A cause counts as measured only where an archived ablation or replay puts "
         "the cell inside its band, or a results page shows the measurement; a cause read in code stays unexplained, "
         "its argument beside it.")

COLUMNS = ("printed", "runnable", "run", "compared", WITHIN, NO_STD, MEASURED, UNEXPLAINED, NOT_COMPARED, NOT_RUN)
HEADS = ("printed", "runnable here", "run", "compared", "within", "no std printed, ours contains it",
         "outside, measured cause", "outside, unexplained", "run, not compared", "runnable, not run")


def _paper_of(printed_in: str) -> str:
    return printed_in.rsplit(" Table ", 1)[0]


def count_table(entries: List[Entry]) -> List[str]:
    """Markdown rows: per paper, then per table (in the CSV's order)."""
    head = ["| | " + " | ".join(HEADS) + " |", "|---|" + "---|" * len(HEADS)]
    groups: Dict[str, List[Entry]] = {}
    for e in entries:
        groups.setdefault(_paper_of(e.printed_in), []).append(e)
    rows = []
    for paper, mine in groups.items():
        n = counts(mine)
        rows.append(f"| **{paper}** | " + " | ".join(f"**{n[c]}**" for c in COLUMNS) + " |")
        by_table: Dict[str, List[Entry]] = {}
        for e in mine:
            by_table.setdefault(e.printed_in, []).append(e)
        for name, group in sorted(by_table.items(), key=lambda kv: int(kv[0].rsplit(" ", 1)[1])):
            n = counts(group)
            rows.append(f"| {name} | " + " | ".join(str(n[c]) for c in COLUMNS) + " |")
    n = counts(entries)
    rows.append("| **all** | " + " | ".join(f"**{n[c]}**" for c in COLUMNS) + " |")
    return head + rows


def cell_list(entries: List[Entry]) -> List[str]:
    """Markdown: every runnable cell outside its band or not compared, with our number and the cause."""
    out = []
    for category in (MEASURED, UNEXPLAINED, NOT_COMPARED, NOT_RUN):
        mine = [e for e in entries if e.category == category]
        if not mine:
            continue
        out += [f"## {category} ({len(mine)})", "", "| table | cell | ours vs paper | cause |", "|---|---|---|---|"]
        for e in mine:
            text = e.ours.text() if e.ours else "–"
            where = f" ({e.ours.folder})" if e.ours else ""
            mark = " (edge)" if e.edge else ""
            out.append(f"| {e.printed_in} | {_name(e.cell)} | {text}{mark}{where} | {e.cause or '–'} |".replace("\n", " "))
        out.append("")
    return out


def spread_line(spread: Dict[str, Tuple[float, int]], entries: List[Entry]) -> str:
    """What the machines' spread says about the verdicts (computed, never typed)."""
    if not spread:
        return "Machines: no archived config and seed ran on two machines, so no cross-machine spread is measured."
    measured = "; ".join(f"{metric} {value:.2f} points over {n} pair(s)" for metric, (value, n) in sorted(spread.items()))
    edge = [e for e in entries if e.edge]
    return (f"Machines: the largest difference between two machines' runs of one config and seed is {measured} "
            f"(runs record their CPU and GPU in summary.json, `machine` and `device`). {len(edge)} verdict(s) lie closer to their band's edge "
            "than that: marked '(edge)' below, their verdict depends on the machine.")


def render(entries: List[Entry], spread: Optional[Dict[str, Tuple[float, int]]] = None) -> str:
    """docs/cells.md: the line, the counts, the machines' spread, and every runnable cell not within its band."""
    edge = [e for e in entries if e.edge and e.category in (WITHIN, NO_STD)]
    return "\n".join(["# The papers cell by cell", "",
                      "<!-- Generated by `fedcluster-report reproductions` from fedcluster/report/tables/paper_numbers.csv, "
                      "docs/cells.yaml and the archived runs it names; do not edit by hand. -->", "",
                      cells_line(entries), "", RULES, ""] + count_table(entries) + ["", spread_line(spread or {}, entries), ""]
                     + (["Within, but at the edge: " + "; ".join(f"{e.printed_in} {_name(e.cell)} ({e.ours.text()})"
                                                                 for e in edge), ""] if edge else [])
                     + cell_list(entries))
