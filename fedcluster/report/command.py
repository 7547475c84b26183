"""`fedcluster-report DIR`: paper-shaped tables from the runs under a run or multirun directory.

Runs are grouped by every config key that differs between them (never a fixed list): runs
that differ only in seed are averaged, anything else is a separate row, column or sub-table.
Unfinished, diverged and damaged runs are listed as skipped, never averaged."""
import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from ..run_records.io import write_csv, write_text
from .cells import Stat
from .baseline import NOTE as BASELINE_NOTE, baseline_frame, check_baseline
from .render import listing, render
from .runs import ReportError, discover
from .sections import (csv_frame, figure_panels, line_colors, local_test_curve, sections_for, slug, write_figure,
                       traffic_curve, write_learning_curves, write_traffic_figure)

__all__ = ["build_report", "make_report", "main", "parser", "ReportError", "Stat", "discover", "SUBCOMMANDS"]

FORMATS = ("markdown", "latex")


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


def _save(report: Report, path: Path, writer, *args) -> bool:
    """Run one writer; a folder we may not write into is reported, not raised."""
    try:
        writer(path, *args)
    except OSError as e:
        report.failed.append((path, e.strerror or type(e).__name__))
        return False
    report.written.append(path)
    return True


def make_report(root: Path, fmt: str = "markdown", figures: bool = False, baseline: Optional[str] = None,
                out: Optional[Path] = None, table: Optional[str] = None) -> Report:
    """Find the runs under `root`, build every table, write the CSVs (always), the ARI figure and
    report.md (report.tex for latex) into `out` (default: `root`) where it can, and return the text.
    table: only the runs a preset filed under that paper table (config key `table`), e.g. one paper's
    rows out of a folder that holds many (the leaderboard's runs). figures=True
    also writes learning curves (local test key metric over rounds, mean +- std over seeds) per
    key metric: learning_curves_<metric>.png/.pdf. baseline: a method (algorithm.name) every
    configuration is compared with, setting by setting, with 95 % intervals over seeds
    (report/baseline.py; its CSV: report_<table>_vs_<baseline>.csv)."""
    root = Path(root)
    if fmt not in FORMATS:
        raise ReportError(f"--format {fmt!r} is unknown; use one of {', '.join(FORMATS)}")
    found = discover(root)
    if table is not None:
        tables = sorted({r.value("table") for r in found.runs if isinstance(r.value("table"), str)})
        found.runs = [r for r in found.runs if r.value("table") == table]
        if not found.runs:
            raise ReportError(f"--table {table!r}: no finished run under {root} is filed under it; allowed: "
                              f"{', '.join(tables) or 'none (no finished run)'}")
    if not found.runs:
        what = ""
        if found.skipped:
            shown = "; ".join(f"{s.path}: {s.reason.split(' (')[0]}" for s in found.skipped[:3])
            what = f" ({len(found.skipped)} skipped: {shown}{'; ...' if len(found.skipped) > 3 else ''})"
        raise ReportError(f"no finished fedcluster run under {root}{what}; give a run or multirun directory")
    if baseline is not None:
        check_baseline(found.runs, baseline)
    sections = sections_for(found.runs)
    if baseline is not None:
        add_baseline(sections, baseline, found.runs)
    report = Report("")
    root = Path(out) if out is not None else root   # where the files go, from here on
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        report.failed.append((root, e.strerror or type(e).__name__))
    for section in sections:
        name = slug(section.name or "runs")
        main = csv_frame(section, 0)
        if main is not None:
            _save(report, root / f"report_{name}.csv", write_csv, main)
        extra = csv_frame(section, 1)
        if extra is not None:
            _save(report, root / f"report_{name}_clusters.csv", write_csv, extra)
        compared = csv_frame(section, "baseline") if baseline is not None else None
        if compared is not None:
            _save(report, root / f"report_{name}_vs_{slug(baseline)}.csv", write_csv, compared)
    figure = None
    colors = line_colors(sections)   # one colour per configuration in every figure
    panels = figure_panels(sections)
    if panels and _save(report, root / "ari_over_rounds.png", write_figure, panels, colors):
        figure = root / "ari_over_rounds.png"
    curves_written, traffic_written = [], []
    if figures:
        for metric in sorted({r.summary.get("key_metric", "accuracy") for r in found.runs}):
            curves = figure_panels(sections, lambda r, m=metric: local_test_curve(r)
                                   if r.summary.get("key_metric", "accuracy") == m else [None])
            path = root / f"learning_curves_{metric}.png"
            if curves and _save(report, path, write_learning_curves, curves, metric, colors):
                curves_written.append(path)
            traffic = figure_panels(sections, lambda r, m=metric: traffic_curve(r)
                                    if r.summary.get("key_metric", "accuracy") == m else [None])
            path = root / f"{metric}_vs_megabytes.png"
            if traffic and _save(report, path, write_traffic_figure, traffic, metric, colors):
                traffic_written.append(path)
    report.text = render(sections, listing(found), figure, fmt)
    for path in curves_written:
        report.text += f"\nLearning curves (local test metric by round, mean ± std over seeds; also .pdf): {path}\n"
    for path in traffic_written:
        report.text += f"\nThe same metric against MiB per client sent and received so far (communication.csv): {path}\n"
    _save(report, root / ("report.tex" if fmt == "latex" else "report.md"), write_text, report.text)
    return report


def add_baseline(sections, baseline: str, runs) -> None:
    """Each sub-table's differences to `baseline` (report/baseline.py), with its notes; the notes on
    settings left out stay where no setting of a sub-table had a baseline. `runs`: all the report's
    runs, where a setting's baseline is looked for when its sub-table has none."""
    for section in sections:
        for _, table in section.parts:
            frame, notes = baseline_frame(table.cells, baseline, runs)
            if len(frame):
                heading = f"Differences to {baseline} (95 % confidence intervals over seeds)"
                table.baseline = (heading, frame)
                table.notes = table.notes + [BASELINE_NOTE.format(b=baseline)]
            table.notes = table.notes + notes


def build_report(root: Path, fmt: str = "markdown", baseline: Optional[str] = None) -> str:
    """The report's text (files written as make_report does); a warning on stderr when some
    could not be written."""
    report = make_report(Path(root), fmt, baseline=baseline)
    warning = report.warning(Path(root))
    if warning:
        print(warning, file=sys.stderr)
    return report.text


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block) and exit status 2."""

    def error(self, message):
        self.exit(2, f"fedcluster-report: {message}\n")


def parser() -> argparse.ArgumentParser:
    """fedcluster-report's command line (also what tests read the README's report commands with)."""
    p = _Parser(prog="fedcluster-report", description=__doc__.splitlines()[0], epilog=subcommands_help(),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory", type=Path, help="a run directory or a multirun directory")
    p.add_argument("--figures", action="store_true",
                   help="also draw learning curves (local test metric over rounds, mean and std over seeds), PNG and PDF")
    p.add_argument("--format", choices=FORMATS, default="markdown",
                   help="how tables are printed and saved (report.md or report.tex); the CSVs are always written")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="where report.md, the CSVs and figures go (default: the directory read; a folder of "
                        "committed runs stays as committed)")
    p.add_argument("--table", metavar="NAME",
                   help="only the runs filed under this paper table (config key `table`, e.g. clove_label_skews)")
    p.add_argument("--baseline", metavar="METHOD",
                   help="compare every configuration with this method (an algorithm name) in the same setting: "
                        "differences with 95%% confidence intervals over seeds, paired by seed or Welch")
    return p


# `fedcluster-report <name> ...`: name -> (the module of this package that makes it, its arguments, what it writes).
# Each is a page, table or figure of finished runs; each takes --help and refuses bad input in one line (exit 2).
SUBCOMMAND_TABLE = {
    "leaderboard": ("leaderboard", "SWEEP_DIR", "the leaderboard page of the runs of conf/preset/leaderboard/"),
    "reproductions": ("reproductions", "[--check]", "docs/reproductions.md and the per-cell account from their yaml"),
    "ablation": ("ablation", "--before DIR --after DIR --out PAGE",
                 "a setting's runs beside the runs it replaces and the paper"),
    "cam-cells": ("cam_cells", "OUT.md CSV...", "Fed-CAM Tables 1-2 cell by cell from runs-csv rows"),
    "participation": ("participation", "FOLDER...", "seen vs unseen clients and partial participation"),
    "privacy": ("privacy", "FOLDER...", "accuracy against epsilon and megabytes under client-level DP"),
    "runs-csv": ("runs_csv", "OUT.csv SWEEP_DIR...", "one row per finished run, its settings away from the defaults"),
    "cluster-sizes": ("cluster_sizes", "OUT.png RUN_DIR...", "Fed-CAM Figures 1 and 3: cluster sizes over rounds"),
    "importance": ("importance", "OUT.png RUN_DIR...", "FedSoft Figure 2: clients' final weight on the first cluster"),
    "label-pairs": ("label_pairs", "RUN_DIR... [--seed S]", "n-class accuracy split by a client's two classes"),
    "clove-within": ("clove_within", "REPORT_CSV", "a CLoVE report's cells within the paper's mean +- 2 std"),
}
SUBCOMMANDS = {name: module for name, (module, _, _) in SUBCOMMAND_TABLE.items()}


def subcommands_help() -> str:
    """The help's list of subcommands, one per line (printed as written: argparse would break a name at its hyphen)."""
    width = max(len(f"{name} {usage}") for name, (_, usage, _) in SUBCOMMAND_TABLE.items())
    lines = [f"  fedcluster-report {f'{name} {usage}':<{width}}  {what}" for name, (_, usage, what) in SUBCOMMAND_TABLE.items()]
    return "\n".join(["subcommands (each takes --help):", *lines,
                      "A directory named like a subcommand is reported when written as ./NAME."])


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:   # fedcluster-report leaderboard ... / reproductions ... / ablation ...
        from importlib import import_module
        sys.exit(import_module(f".{SUBCOMMANDS[argv[0]]}", __package__).main(argv[1:]))
    p = parser()
    args = p.parse_args(argv)
    root = args.directory
    if not root.exists():
        p.exit(2, f"fedcluster-report: {root} does not exist\n")
    if not root.is_dir():
        p.exit(2, f"fedcluster-report: {root} is a file, not a directory; give a run or multirun directory\n")
    if args.out is not None:
        blocking = next((q for q in (args.out, *args.out.parents) if q.exists() or q.is_symlink()), None)
        if blocking is not None and not blocking.is_dir():
            p.exit(2, f"fedcluster-report: --out {args.out}: {blocking} is an existing file, not a folder; allowed: "
                      "a folder (created where missing)\n")
    try:
        report = make_report(root, args.format, figures=args.figures, baseline=args.baseline, out=args.out,
                             table=args.table)
    except ReportError as e:
        p.exit(2, f"fedcluster-report: {e}\n")
    try:
        print(report.text, flush=True)
    except BrokenPipeError:   # `fedcluster-report DIR | head`: the reader has gone; not an error
        sys.stderr.close()
        sys.exit(0)
    warning = report.warning(args.out or root)
    if warning:
        print(warning, file=sys.stderr)


if __name__ == "__main__":
    main()
