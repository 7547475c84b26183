"""What every `fedcluster-report` subcommand refuses the same way: a command line argparse cannot read, an input
that is not there and an output that cannot be written, each one line naming the value and what is allowed,
exit status 2, before anything is written."""
import argparse
import sys
from pathlib import Path


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block) and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\n")


def refuse(prog: str, message: str) -> None:
    print(f"{prog}: {message}", file=sys.stderr)
    raise SystemExit(2)


def writable_file(prog: str, path: Path, allowed: str) -> Path:
    """`path` as a file to write: refused where it is a folder or lies below a file."""
    path = Path(path)
    blocking = next((q for q in path.parents if (q.exists() or q.is_symlink()) and not q.is_dir()), None)
    if path.is_dir() or blocking is not None:
        refuse(prog, f"{path} cannot be written ({'a folder' if path.is_dir() else f'{blocking} is a file'}); "
                     f"allowed: {allowed}")
    return path


def finished_runs(prog: str, directories) -> list:
    """The finished runs (report/runs.py's Run) under each of `directories`, in order, read as sealed; a directory
    with none is refused, naming it and what it holds instead."""
    from .runs import ReportError, discover
    runs = []
    for d in map(Path, directories):
        if not d.is_dir():
            refuse(prog, f"{d}: no such directory, so no config.yaml or summary.json there; allowed: run directories "
                         "or sweeps of them")
        try:
            found = discover(d)
        except ReportError as e:
            refuse(prog, f"{d}: {e}")
        if not found.runs:
            why = f" ({found.skipped[0].reason})" if found.skipped else ""
            refuse(prog, f"{d}: no finished fedcluster run there{why}; allowed: run directories (config.yaml and "
                         "summary.json) or sweeps of them")
        runs += found.runs
    return runs
