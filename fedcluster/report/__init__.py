"""`fedcluster-report DIR`: paper-shaped tables from the runs under a run or multirun directory.

Runs are grouped by every config key that differs between them (never a fixed list): runs
that differ only in seed are averaged, anything else is a separate row, column or sub-table.
Unfinished, diverged and damaged runs are listed as skipped, never averaged."""
import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

import pandas as pd

from ..io import write_csv, write_text
from .cells import Stat, join_notes, latex_escape, to_csv_frame, to_latex, to_markdown
from .runs import (Cell, Found, ReportError, Run, discover, make_cells, matches, show,
                   split_by, varying_keys)
from ..tables import GENERIC, TABLES, Context, Spec, Table, ari_curve

__all__ = ["build_report", "make_report", "main", "ReportError", "Stat", "discover"]

FORMATS = ("markdown", "latex")
STD_NOTE = ("± is the sample standard deviation (ddof=1) over seeds and n the number of seeds "
            "(one seed: its value alone).")


@dataclass
class Section:
    """One paper table (or the generic one) and its sub-tables."""
    name: str
    title: str
    notes: List[str]
    parts: List[Tuple[str, Table]]   # (sub-table title, table); title "" when there is one


@dataclass
class Report:
    """What make_report produced: the text (in the chosen format), the files it wrote and the
    ones it could not write (path, reason)."""
    text: str
    written: List[Path] = field(default_factory=list)
    failed: List[Tuple[Path, str]] = field(default_factory=list)

    def warning(self, root: Path) -> Optional[str]:
        """One line naming what could not be saved, or None."""
        if not self.failed:
            return None
        names = ", ".join(p.name for p, _ in self.failed)
        return (f"fedcluster-report: warning: could not write {names} in {root} ({self.failed[0][1]}); "
                "the report is printed only")


def _slug(name: str) -> str:
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


def build_section(name: str, runs: List[Run]) -> Section:
    """One table's runs -> its cells (runs differing only in seed), split into sub-tables by
    the varying keys the table does not lay out, each built by the table's function."""
    spec: Spec = TABLES.get(name, GENERIC)
    varying = [k for k in varying_keys(runs) if k != "table"]
    cells = make_cells(runs, varying)
    consumed = [k for k in varying if matches(k, spec.consumes)]
    split = [k for k in varying if k not in consumed]
    parts = []
    for subtitle, members in split_by(cells, split):
        table = spec.build(members, Context(name, consumed, spec.protocol))
        table.cells, table.laid_out = members, consumed
        table.split = [(k, members[0].value(k)) for k in split]
        parts.append((subtitle, table))
    notes = [_key_note(consumed, split), STD_NOTE]
    title = spec.title if name in TABLES or not name else f"{spec.title}; table: {name}"
    return Section(name, title, notes, parts)


def sections_for(runs: List[Run]) -> List[Section]:
    """Runs grouped by the `table` their preset set (paper tables first, in TABLES order)."""
    by_table = {}
    for r in runs:
        name = r.value("table")
        by_table.setdefault(name if isinstance(name, str) else "", []).append(r)
    order = [n for n in TABLES if n in by_table] + sorted(n for n in by_table if n not in TABLES)
    return [build_section(n, by_table[n]) for n in order]


def _csv_frame(section: Section, which: int) -> Optional[pd.DataFrame]:
    """A section's main frame (which = 0) or its n-th extra frame, all sub-tables stacked,
    with the sub-table's key values as leading columns."""
    frames = []
    for subtitle, table in section.parts:
        frame = table.frame if which == 0 else (table.extra[which - 1][1] if len(table.extra) >= which else None)
        if frame is None or not len(frame):
            continue
        frame = to_csv_frame(frame)
        for i, (key, value) in enumerate(table.split):
            frame.insert(i, key, value if isinstance(value, (int, float, str)) else show(value))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else None


def _line_label(cell: Cell, keys: List[str]) -> str:
    """A figure line's label: the cell's values of the laid-out keys other than data set and
    partition (the panel says those), e.g. 'clove, init=identical, train.lr=0.01'. Every key is
    named in full (algorithm options without 'algorithm.'), so two configurations never share
    a label and so a line."""
    parts = []
    for k in keys:
        if k in ("dataset.name", "partition.name"):
            continue
        name = k[len("algorithm."):] if k.startswith("algorithm.") else k
        parts.append(show(cell.value(k)) if k == "algorithm.name" else f"{name}={show(cell.value(k))}")
    return ", ".join(parts) or show(cell.value("algorithm.name"))


def _figure_panels(sections: List[Section]):
    """ARI-over-rounds panels: one per (table, sub-table, data set/partition), one line per
    cell (seeds averaged; rounds without a clustering are left out)."""
    panels = {}
    for section in sections:
        for subtitle, table in section.parts:
            for cell in table.cells:
                curves = [ari_curve(s) for s in cell.summaries]
                if not any(v is not None for c in curves for v in c):
                    continue
                where = f"{show(cell.value('dataset.name'))}/{show(cell.value('partition.name'))}"
                title = " ".join(x for x in (section.name, where, f"[{subtitle}]" if subtitle else "") if x)
                panels.setdefault(title, {}).setdefault(_line_label(cell, table.laid_out), []).extend(curves)
    return sorted(panels.items())


def _write_figure(path: Path, panels) -> None:
    """The ARI-over-rounds figure (matplotlib is imported only when there is one to draw)."""
    from ..plots import write_ari_over_rounds
    write_ari_over_rounds(path, panels)


def _listing(found: Found) -> Tuple[List[str], List[str]]:
    """(skipped runs as 'path: reason' lines, notes on what else was found or assumed)."""
    skipped = [f"{s.path}: {s.reason}" for s in found.skipped]
    notes = list(found.notes)
    if found.foreign:
        notes.append(f"ignored {len(found.foreign)} summary.json file(s) that fedcluster did not write "
                     f"(no versions.fedcluster), e.g. {found.foreign[0]}")
    return skipped, notes


def _bullets(heading: str, items: List[str], fmt: str) -> str:
    """A headed list in `fmt`."""
    if fmt == "latex":
        body = "\n".join(f"\\item {latex_escape(i)}" for i in items)
        return f"\\subsection*{{{latex_escape(heading)}}}\n\\begin{{itemize}}\n{body}\n\\end{{itemize}}\n"
    return f"## {heading}\n\n" + "\n".join(f"- {i}" for i in items) + "\n"


def _render(sections: List[Section], listing: Tuple[List[str], List[str]], figure: Optional[Path], fmt: str) -> str:
    """The report text in `fmt`: per table its title, notes, sub-tables and extra frames; then
    the figure's path, the skipped runs and notes on the runs."""
    out = []
    for section in sections:
        if fmt == "latex":
            out.append(f"\\subsection*{{{latex_escape(section.title)}}}\n{latex_escape(join_notes(section.notes))}\n")
        else:
            out.append(f"## {section.title}\n\n{join_notes(section.notes)}\n")
        for subtitle, table in section.parts:
            if subtitle:
                out.append(f"\\paragraph{{{latex_escape(subtitle)}}}\n" if fmt == "latex" else f"### {subtitle}\n")
            if table.notes:
                out.append((latex_escape(join_notes(table.notes)) if fmt == "latex" else join_notes(table.notes)) + "\n")
            out.append((to_latex(table.frame) if fmt == "latex" else to_markdown(table.frame)) + "\n")
            for heading, frame in table.extra:
                if len(frame):
                    out.append(f"\\paragraph{{{latex_escape(heading)}}}\n{to_latex(frame)}\n" if fmt == "latex"
                               else f"#### {heading}\n\n{to_markdown(frame)}\n")
    if figure is not None:
        line = f"ARI over rounds (1-based; mean over seeds): {figure}"
        out.append((latex_escape(line) if fmt == "latex" else line) + "\n")
    skipped, notes = listing
    if skipped:
        out.append(_bullets("Skipped runs (in no table)", skipped, fmt))
    if notes:
        out.append(_bullets("Notes on the runs found", notes, fmt))
    return "\n".join(out)


def _save(report: Report, path: Path, writer, *args) -> bool:
    """Run one writer; a folder we may not write into is reported, not raised."""
    try:
        writer(path, *args)
    except OSError as e:
        report.failed.append((path, e.strerror or type(e).__name__))
        return False
    report.written.append(path)
    return True


def make_report(root: Path, fmt: str = "markdown") -> Report:
    """Find the runs under `root`, build every table, write the CSVs (always), the figure and
    report.md (report.tex for latex) into `root` where it can, and return the text."""
    root = Path(root)
    if fmt not in FORMATS:
        raise ReportError(f"--format {fmt!r} is unknown; use one of {', '.join(FORMATS)}")
    found = discover(root)
    if not found.runs:
        what = ""
        if found.skipped:
            shown = "; ".join(f"{s.path}: {s.reason.split(' (')[0]}" for s in found.skipped[:3])
            what = f" ({len(found.skipped)} skipped: {shown}{'; ...' if len(found.skipped) > 3 else ''})"
        raise ReportError(f"no finished fedcluster run under {root}{what}; give a run or multirun directory")
    sections = sections_for(found.runs)
    report = Report("")
    for section in sections:
        slug = _slug(section.name or "runs")
        main = _csv_frame(section, 0)
        if main is not None:
            _save(report, root / f"report_{slug}.csv", write_csv, main)
        extra = _csv_frame(section, 1)
        if extra is not None:
            _save(report, root / f"report_{slug}_clusters.csv", write_csv, extra)
    figure = None
    panels = _figure_panels(sections)
    if panels and _save(report, root / "ari_over_rounds.png", _write_figure, panels):
        figure = root / "ari_over_rounds.png"
    report.text = _render(sections, _listing(found), figure, fmt)
    _save(report, root / ("report.tex" if fmt == "latex" else "report.md"), write_text, report.text)
    return report


def build_report(root: Path, fmt: str = "markdown") -> str:
    """The report's text (files written as make_report does); a warning on stderr when some
    could not be written."""
    report = make_report(Path(root), fmt)
    warning = report.warning(Path(root))
    if warning:
        print(warning, file=sys.stderr)
    return report.text


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block) and exit status 2."""

    def error(self, message):
        self.exit(2, f"fedcluster-report: {message}\n")


def main(argv=None) -> None:
    p = _Parser(prog="fedcluster-report", description=__doc__.splitlines()[0])
    p.add_argument("directory", type=Path, help="a run directory or a multirun directory")
    p.add_argument("--format", choices=FORMATS, default="markdown",
                   help="how tables are printed and saved (report.md or report.tex); the CSVs are always written")
    args = p.parse_args(argv)
    root = args.directory
    if not root.exists():
        p.exit(2, f"fedcluster-report: {root} does not exist\n")
    if not root.is_dir():
        p.exit(2, f"fedcluster-report: {root} is a file, not a directory; give a run or multirun directory\n")
    try:
        report = make_report(root, args.format)
    except ReportError as e:
        p.exit(2, f"fedcluster-report: {e}\n")
    try:
        print(report.text, flush=True)
    except BrokenPipeError:   # `fedcluster-report DIR | head`: the reader has gone; not an error
        sys.stderr.close()
        sys.exit(0)
    warning = report.warning(root)
    if warning:
        print(warning, file=sys.stderr)


if __name__ == "__main__":
    main()
