"""docs/reproductions.md from docs/reproductions.yaml and the committed results it cites.

Every results table of the three papers is one entry of the registry: the command that
reproduces it, its time here, its status and the measured reason, and the results page that
holds our numbers. The page cannot drift from those results: each entry quotes its evidence
verbatim from the results page it cites, and generation stops, naming the entry, when a quote
is no longer there (the numbers changed) or a cited page is gone.

  fedcluster-report reproductions            # writes docs/reproductions.md (run in the repository's root)
  fedcluster-report reproductions --check    # exit 1 if the committed page differs from a fresh one

Exit status 2 (nothing written) where the registry is malformed: an unknown field, paper or status, a
results page that does not exist, or a status of reproduced / partly / not without a results page and
at least one quote from it, or a quote no longer on the page it cites.
"""
import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

import yaml
from ..run_records.yaml_safe import safe_load

from ..run_records.io import write_text   # atomic: a reader never sees half a page
from . import account

# Relative to the folder it runs in (the repository's root), where the registry's results paths start.
REGISTRY = Path("docs") / "reproductions.yaml"
PAGE = Path("docs") / "reproductions.md"
COMMAND = "fedcluster-report reproductions"
PAPERS = {"fedsoft": "FedSoft (Ruan & Joe-Wong, AAAI 2022)",
          "fedcam": "Fed-CAM (Ma, Zhou, Long et al., structured FL through clustered additive modeling)",
          "clove": "CLoVE (clustering of loss vector embeddings)"}
STATUSES = ("reproduced", "partly", "not", "not run", "data not on these machines")
# The papers' tables that hold no results, and so no entry (the page says which and why).
NOT_RESULTS = {"clove": "Table 6 lists the GitHub repositories of the baselines' code: no results to reproduce."}
FIELDS = ("paper", "table", "what", "data", "preset", "results", "time", "status", "reason", "evidence", "caveats")


class RegistryError(Exception):
    pass


def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def check_entry(i: int, e: dict, root: Path) -> None:
    """Raise RegistryError (one line, naming the entry) where an entry is malformed or its
    evidence is not in the results it cites."""
    name = f"entry {i + 1} ({e.get('paper')} {e.get('table')})"
    unknown = sorted(set(e) - set(FIELDS))
    if unknown:
        raise RegistryError(f"{name}: unknown field(s) {unknown}; allowed: {list(FIELDS)}")
    if e.get("paper") not in PAPERS:
        raise RegistryError(f"{name}: paper={e.get('paper')!r} is unknown; allowed: {sorted(PAPERS)}")
    if e.get("status") not in STATUSES:
        raise RegistryError(f"{name}: status={e.get('status')!r} is unknown; allowed: {list(STATUSES)}")
    results = _as_list(e.get("results"))
    for path in results:
        if not (root / path).is_file():
            raise RegistryError(f"{name}: results page {path} does not exist")
    if e["status"] in ("reproduced", "partly", "not") and not results:
        raise RegistryError(f"{name}: status {e['status']!r} needs the results page that measured it")
    if e["status"] in ("reproduced", "partly", "not") and not _as_list(e.get("evidence")):
        raise RegistryError(f"{name}: status {e['status']!r} needs evidence: at least one quote from its results page")
    texts = [(root / p).read_text() for p in results]
    for quote in _as_list(e.get("evidence")):
        if not any(quote in t for t in texts):
            raise RegistryError(f"{name}: evidence {quote!r} is not in {', '.join(results) or 'any results page'}; "
                                "the results changed: update the entry")


def load(registry: Path = REGISTRY, root: Path = Path(".")) -> list:
    try:
        entries = safe_load(registry.read_text()) or []
    except yaml.YAMLError as e:   # one line, where the registry breaks, not a traceback
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise RegistryError(f"{registry}{where}: not valid YAML ({getattr(e, 'problem', None) or e}); quote a text "
                            f"that holds ': ' or '#'") from None
    if not isinstance(entries, list):
        raise RegistryError(f"{registry}: expected a list of entries")
    for i, e in enumerate(entries):
        check_entry(i, e, root)
    return entries


def _cell(text) -> str:
    return "–" if text in (None, "") else str(text).replace("|", "\\|").replace("\n", " ").strip()


def render(entries: list, cells: Optional[list] = None) -> str:
    """The page; `cells` (report/account.py's entries) opens it with the per-cell account."""
    counts = Counter(e["status"] for e in entries)
    out = ["# Reproductions: every results table of the three papers", "",
           f"<!-- Generated by `{COMMAND}` from docs/reproductions.yaml and docs/cells.yaml; do not edit by hand. -->",
           ""]
    if cells is not None:
        out += [account.cells_line(cells), "",
                "Counted cell by cell (a cell is one number a paper prints: tables/paper_numbers.csv) from the archived "
                "runs docs/cells.yaml names; the list of every cell outside, not compared or not run, with our number "
                f"and its cause, is [cells.md](cells.md). {account.RULES}", ""] + account.count_table(cells) + [""]
    out += [
           "One row per results table of FedSoft, Fed-CAM and CLoVE: the command that reproduces it here, its time "
           "on these machines (as measured on the results page), whether our numbers fall within the paper's "
           "mean ± 2 std, and the measured reason where they do not. Each status rests on quotes that "
           f"`{COMMAND}` finds verbatim in the results page named, so the page cannot drift from "
           "the committed results.", "",
           "Status over all " + str(len(entries)) + " tables: " +
           ", ".join(f"{s} {counts[s]}" for s in STATUSES if counts[s]) + ".", ""]
    for paper, title in PAPERS.items():
        mine = [e for e in entries if e["paper"] == paper]
        if not mine:
            continue
        out += [f"## {title}", "", "| table | what | status | reason (measured) | command | time here | results |",
                "|---|---|---|---|---|---|---|"]
        notes = []
        for e in mine:
            results = ", ".join(f"[{Path(p).name}]({Path(p).relative_to('docs').as_posix() if p.startswith('docs/') else p})"
                                for p in _as_list(e.get("results")))
            status = e["status"] + ("" if e.get("data") in (None, "here") else f"; data {e['data']}")
            command = f"`{e['preset']}`" if e.get("preset") else None
            out.append(f"| {_cell(e['table'])} | {_cell(e.get('what'))} | {_cell(status)} | {_cell(e.get('reason'))} "
                       f"| {_cell(command)} | {_cell(e.get('time'))} | {_cell(results)} |")
            if e.get("caveats"):
                notes.append(f"- {e['table']}: {_cell(e['caveats'])}")
        out.append("")
        if notes:
            out += ["Caveats:", ""] + notes + [""]
        if paper in NOT_RESULTS:
            out += [f"Not listed: {NOT_RESULTS[paper]}", ""]
    return "\n".join(out)


def parser() -> argparse.ArgumentParser:
    """This subcommand's command line (also what tests read the README's commands with)."""
    p = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help="exit 1 if docs/reproductions.md differs from a fresh one (2: the registry is malformed)")
    return p


def parse(argv=None) -> argparse.Namespace:
    return parser().parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    if not REGISTRY.is_file():
        print(f"{COMMAND}: no {REGISTRY} here; run it in the repository's root", file=sys.stderr)
        return 2
    try:
        entries = load()
        cells = account.account(account.load()) if account.REGISTRY.is_file() else None
        text = render(entries, cells)
        pages = {PAGE: text}
        if cells is not None:
            pages[account.PAGE] = account.render(cells, account.machine_spread(account.load()))
    except (RegistryError, account.AccountError) as e:
        print(f"{COMMAND}: {e}", file=sys.stderr)
        return 2
    if args.check:
        stale = [str(page) for page, want in pages.items() if not page.exists() or page.read_text() != want]
        if stale:
            print(f"{COMMAND}: {', '.join(stale)} not what docs/reproductions.yaml, docs/cells.yaml and the results "
                  f"give; run: {COMMAND}", file=sys.stderr)
            return 1
        quotes = sum(len(_as_list(e.get("evidence"))) for e in entries)
        print(f"{COMMAND}: docs/reproductions.md is up to date ({len(entries)} tables; {quotes} quotes found "
              "on their results pages)" + (f"; {account.cells_line(cells)}" if cells is not None else ""))
        return 0
    for page, want in pages.items():
        write_text(page, want)
        print(f"{COMMAND}: wrote {page} ({len(want.splitlines())} lines)")
    return 0
