"""A report's sections: the runs of one paper table (or of none), split into sub-tables by the
config keys the table does not lay out; their CSV frames and the ARI-over-rounds figure. A run
is put beside a paper's numbers only when the table's Spec accepts its algorithm, data and model;
the others are shown in the generic table with a note saying why (`sections_for`)."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pandas as pd

from . import tables
from .cells import to_csv_frame
from .defaults import setting_name
from ..run_records.identity import SETTLED_KEY
from .runs import ABSENT, Cell, Run, make_cells, matches, show, split_by, varying_keys
from .preset_data import data_mismatches


STD_NOTE = ("± is the sample standard deviation (ddof=1) over seeds and n the number of seeds "
            "(one seed: its value alone).")


@dataclass
class Section:
    """One paper table (or the generic one) and its sub-tables."""
    name: str
    title: str
    notes: List[str]
    parts: List[Tuple[str, tables.Table]]   # (sub-table title, table); title "" when there is one

def slug(name: str) -> str:
    """A table name as a file-name part ('runs' for runs without a paper table)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "runs"

def _key_note(consumed: List[str], split: List[str]) -> str:
    """Which config keys vary between a table's runs and how the table shows them."""
    if not consumed and not split:
        return "No config key varies between these runs apart from the seed."
    parts = []
    if consumed:
        parts.append(f"laid out in the table: {', '.join(consumed)}")
    if split:
        parts.append(f"one table per combination of: {', '.join(split)}")
    return f"Config keys that vary between these runs ({'; '.join(parts)})."

def build_section(name: str, runs: List[Run], notes: Sequence[str] = ()) -> Section:
    """One table's runs -> its cells (runs differing only in seed), split into sub-tables by
    the varying keys the table does not lay out, each built by the table's function. `notes`
    go first under the title. In the generic section (name "") `table` is a key like any other:
    runs that left different paper tables are told apart by it."""
    spec: tables.Spec = tables.TABLES.get(name, tables.GENERIC)
    varying = [k for k in varying_keys(runs) if k != "table" or not name]
    varying = _without_settled_counts(varying, make_cells(runs, varying))
    cells = make_cells(runs, varying)
    consumed = [k for k in varying if matches(k, spec.consumes)]
    split = [k for k in varying if k not in consumed]
    parts = []
    for subtitle, members in split_by(cells, split):
        table = tables.with_verdicts(spec.build(members, tables.Context(name, consumed, spec.protocol)))
        table.cells, table.laid_out = members, consumed
        table.split = [(k, members[0].value(k)) for k in split]
        parts.append((subtitle, table))
    notes = list(notes) + [_key_note(consumed, split), STD_NOTE]
    title = spec.title if name in tables.TABLES or not name else f"{spec.title}; table: {name}"
    return Section(name, title, notes, parts)

def _without_settled_counts(varying: List[str], cells: List[Cell]) -> List[str]:
    """`varying` without the settled counts (identity.SETTLED_KEY: num_clusters at any depth, recorded as the
    data's own count where a request left it null) whose value the other varying keys already fix, one value for
    every cell that agrees on them (the data's K follows its partition): as a column or a sub-table it would part
    nothing. A K swept or set apart from the data still varies on its own, and stays."""
    others = [k for k in varying if k.rsplit(".", 1)[-1] != SETTLED_KEY]

    def follows(key):
        seen: Dict[tuple, object] = {}
        return all(seen.setdefault(tuple(c.value(k) for k in others), c.value(key)) == c.value(key) for c in cells)
    return [k for k in varying if k in others or not follows(k)]


# How many run directories a note names per reason before it says "and N more".
SHOWN_PATHS = 5

def _paths(runs: List[Run]) -> str:
    shown = ", ".join(str(r.path) for r in runs[:SHOWN_PATHS])
    return shown + (f" and {len(runs) - SHOWN_PATHS} more" if len(runs) > SHOWN_PATHS else "")

def _moved_note(spec: tables.Spec, moved: List[Tuple[Run, List[str]]]) -> str:
    """'Runs not shown under <table> because their config is not that table's: <dir>: <why>'
    (directories with the same reasons named together)."""
    by_reason: Dict[str, List[Run]] = {}
    for run, why in moved:
        by_reason.setdefault("; ".join(why), []).append(run)
    listed = "; ".join(f"{_paths(rs)}: {why}" for why, rs in by_reason.items())
    return f"Runs not shown under {spec.heading} because their config is not that table's: {listed}."

def sections_for(runs: List[Run]) -> List[Section]:
    """Runs grouped by the `table` their preset set (paper tables first, in tables.TABLES order).
    A run is placed in a paper table only if the table's Spec accepts its algorithm, data and
    model (Spec.identity: e.g. `+preset=fedsoft/table1_synthetic algorithm=ifca` is no FedSoft
    Table 1 run) and its data are the preset's (preset_data.py: `partition.minor=0.3` under
    mix_10_90 is no 10:90 run); any other run goes to the generic table, whose notes say why for each run, and
    the paper table (where it still has runs) says how many left it."""
    by_table: Dict[str, List[Run]] = {}
    moved: Dict[str, List[Tuple[Run, List[str]]]] = {}
    for r in runs:
        name = r.value("table")
        name = name if isinstance(name, str) else ""
        spec = tables.TABLES.get(name)
        why = spec.mismatches(r) if spec is not None else []
        if spec is not None and not why:
            why = data_mismatches(name, r)   # the table's data: its preset's dataset/partition settings
        if why:
            moved.setdefault(name, []).append((r, why))
            name = ""
        by_table.setdefault(name, []).append(r)
    order = [n for n in tables.TABLES if n in by_table] + sorted(n for n in by_table if n not in tables.TABLES)
    sections = []
    for n in order:
        if n:
            left = len(moved.get(n, []))
            notes = [f"{left} run(s) with table: {n} are not in this table: their config is not its setting "
                     "(see the generic table of runs)."] if left else []
        else:
            notes = [_moved_note(tables.TABLES[t], moved[t]) for t in tables.TABLES if t in moved]
        sections.append(build_section(n, by_table[n], notes))
    return sections

def csv_frame(section: Section, which) -> Optional[pd.DataFrame]:
    """A section's main frame (which = 0), its n-th extra frame, or (which = "baseline") its
    differences to the report's --baseline, all sub-tables stacked, with the sub-table's key
    values as leading columns."""
    frames = []
    for subtitle, table in section.parts:
        if which == "baseline":
            frame = table.baseline[1] if table.baseline else None
        else:
            frame = table.frame if which == 0 else (table.extra[which - 1][1] if len(table.extra) >= which else None)
        if frame is None or not len(frame):
            continue
        frame = clean_columns(to_csv_frame(frame))
        for i, (key, value) in enumerate(table.split):
            frame.insert(i, key, value if isinstance(value, (int, float, str)) else show(value))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else None

PROTOCOL_LABEL = re.compile(r" \(different protocol: (.*)\)")


def clean_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """CSV column names without the markdown's '(different protocol: ...)' labels: each such
    column keeps its plain name, and one `paper protocol differs` column says how (the same
    text the markdown header gives)."""
    gaps, names = [], {}
    for col in frame.columns:
        match = PROTOCOL_LABEL.search(str(col))
        if match:
            gaps.append(match.group(1))
            names[col] = PROTOCOL_LABEL.sub("", str(col))
    if not names:
        return frame
    frame = frame.rename(columns=names)
    frame["paper protocol differs"] = "; ".join(dict.fromkeys(gaps))
    return frame


def _line_label(cell: Cell, keys: List[str]) -> str:
    """A figure line's label: the cell's values of the laid-out keys other than data set and
    partition (the panel says those), e.g. 'clove, init=identical, train.lr=0.01'. Every key is
    named in full (algorithm options without 'algorithm.'), so two configurations never share
    a label and so a line."""
    parts = []
    for k in sorted(keys, key=lambda k: k != "algorithm.name"):   # the method first, then its settings
        if k in ("dataset.name", "partition.name"):
            continue
        if cell.value(k) is ABSENT:   # a setting this configuration's algorithm does not have
            continue
        if k.startswith("algorithm.") and k.endswith("num_clusters") and "num_clusters" in keys:
            continue                  # the algorithm's K follows the run's num_clusters, named once
        parts.append(show(cell.value(k)) if k == "algorithm.name" else f"{setting_name(k)}={show(cell.value(k))}")
    return ", ".join(parts) or show(cell.value("algorithm.name"))

def figure_panels(sections: List[Section], curve=None):
    """Over-rounds panels: one per (table, sub-table, data set/partition), one line per cell, its
    seeds' curves (`curve(run)` -> [value per round, None where none]; default: the run's ARI)
    kept for the mean and band. Cells with no value at all are left out."""
    curve = curve or (lambda run: tables.ari_curve(run.summary))
    panels = {}
    for section in sections:
        for subtitle, table in section.parts:
            for cell in table.cells:
                curves = [curve(r) for r in cell.runs]
                if not any(v is not None for c in curves for v in c):
                    continue
                where = f"{show(cell.value('dataset.name'))}/{show(cell.value('partition.name'))}"
                title = " ".join(x for x in (section.name, where, f"[{subtitle}]" if subtitle else "") if x)
                panels.setdefault(title, {}).setdefault(_line_label(cell, table.laid_out), []).extend(curves)
    return sorted(panels.items())


def local_test_curve(run: Run) -> List[Optional[float]]:
    """The run's key metric on its clients' held-out test splits (mean over clients) per round,
    in % for accuracy; None in rounds that were not evaluated."""
    key = run.summary.get("key_metric", "accuracy")
    m = pd.read_csv(io.StringIO(run.files.read_text("metrics.csv")))
    sel = m[(m["model"] == "local") & (m["eval_set"] == "local_test") & (m["metric"] == key)]
    means = sel.groupby("round")["value"].mean() * (100.0 if key in tables.PERCENT_METRICS else 1.0)
    out: List[Optional[float]] = [None] * int(run.summary.get("rounds", len(means)))
    for t, v in means.items():
        if int(t) < len(out):
            out[int(t)] = float(v)
    return out


def traffic_curve(run: Run) -> list:
    """Per round, (MiB per client sent and received so far, the key metric as local_test_curve gives it) where the
    round was evaluated and the run recorded its traffic (communication.csv), else None."""
    values = local_test_curve(run)
    if "communication.csv" not in run.files.names():
        return [None] * len(values)
    c = pd.read_csv(io.StringIO(run.files.read_text("communication.csv")))
    clients = run.summary.get("communication", {}).get("clients") or run.summary.get("num_clients") or 1
    so_far = (c.groupby("round")["bytes"].sum().reindex(range(len(values)), fill_value=0).cumsum() / 2 ** 20 / clients)
    return [None if v is None else (float(so_far.iloc[t]), v) for t, v in enumerate(values)]


def write_traffic_figure(path: Path, panels, metric: str, colors=None) -> None:
    from .figures import write_traffic_curves
    unit = " %" if metric in tables.PERCENT_METRICS else ""
    write_traffic_curves(path, panels, f"local test {metric}{unit} (mean over clients)", colors=colors)


def line_colors(sections: List[Section]) -> dict:
    """One colour per figure line (a configuration's label) across every figure of the report."""
    from .figures import line_colors as palette
    return palette(_line_label(cell, table.laid_out) for section in sections for _, table in section.parts
                   for cell in table.cells)


def write_figure(path: Path, panels, colors=None) -> None:
    """The ARI-over-rounds figure (matplotlib is imported only when there is one to draw)."""
    from .figures import write_ari_over_rounds
    write_ari_over_rounds(path, panels, colors, tables.METRIC_RANGE["ari"])


def write_learning_curves(path: Path, panels, metric: str, colors=None) -> None:
    from .figures import write_curves
    unit = " %" if metric in tables.PERCENT_METRICS else ""
    write_curves(path, panels, f"local test {metric}{unit} (mean over clients)", colors=colors,
                 bounds=tables.METRIC_RANGE.get(metric, (-float("inf"), float("inf"))))
