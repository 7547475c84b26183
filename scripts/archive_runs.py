"""Copy the finished runs of a sweep directory into a folder that is committed with the code.

Why: run folders live outside the repository (/work/runs, outputs/) and a working session's machine
can be replaced between sessions, taking them along. A long sweep (the leaderboard: ~50 run-hours on
this CPU) only adds up across sessions if what has finished is kept in git. This keeps each finished
run's result files, not its checkpoints or logs:

- config.yaml, summary.json and every table sealed in summary.json's `integrity` (metrics.csv,
  assignments.csv, cluster_sizes.csv, ...), plus `.hydra/overrides.yaml` where present (the command);
- under the same relative path as in the sweep, so `fedcluster-report DEST` and
  `fedcluster-report leaderboard DEST` read the archive as they read the sweep, and a sweep pointed at a
  copy of the archive skips these jobs ("already holds this config's finished run");
- each run is copied into a hidden temporary folder, checked against its seal there, and renamed into
  place, so an interrupted archive leaves no half-copied run.

A run already in DEST with the same summary.json is passed by; a different run at that path is an
error, and nothing of it is replaced. Unfinished, diverged and damaged runs are left out and counted.

  python scripts/archive_runs.py SWEEP_DIR DEST
"""
import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedcluster.lifecycle.integrity import finished_run_problem  # noqa: E402
from fedcluster.lifecycle.rundir import plain_name  # noqa: E402
from fedcluster.results.runs import CONFIG_FILE, SUMMARY_FILE, discover  # noqa: E402

OVERRIDES = Path(".hydra") / "overrides.yaml"


class ArchiveError(Exception):
    """A condition that stops the archive (one line for the user, exit status 2)."""


def kept_files(run_path: Path, summary: dict) -> list:
    """The files of a finished run that the archive keeps, relative to the run's folder."""
    sealed = sorted((summary.get("integrity") or {}).get("files") or {})
    bad = [n for n in sealed if not plain_name(n)]
    if bad:   # a seal is data from the run's folder: it names files inside that folder, nothing else
        raise ArchiveError(f"{run_path}: its summary.json seals {bad[0]!r}, which is not a file name inside the run's "
                           "folder; nothing archived")
    names = [Path(CONFIG_FILE), Path(SUMMARY_FILE)] + [Path(n) for n in sealed]
    if (run_path / OVERRIDES).is_file():
        names.append(OVERRIDES)
    links = [str(n) for n in names if (run_path / n).is_symlink() or (run_path / n.parent).is_symlink()]
    if links:
        raise ArchiveError(f"{run_path}: {links[0]} is a symbolic link; the archive copies only the run's own files, "
                           "never what a link points to; nothing archived")
    return names


def archive_one(run_path: Path, summary: dict, target: Path) -> str:
    """Copy one run to `target`: 'archived', or 'present' when the same run is there already."""
    if target.exists():
        same = (target / SUMMARY_FILE).is_file() and \
            (target / SUMMARY_FILE).read_bytes() == (run_path / SUMMARY_FILE).read_bytes()
        if not same:
            raise ArchiveError(f"{target} already holds a different run than {run_path}; nothing replaced "
                               "(remove it from the archive first if the new run is meant to replace it)")
        return "present"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name[:40]}.", dir=target.parent))
    try:
        for name in kept_files(run_path, summary):
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(run_path / name, tmp / name)
        problem = finished_run_problem(tmp, summary)
        if problem is not None:
            raise ArchiveError(f"{run_path}: the copy does not match its seal ({problem}); nothing archived")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)   # mkdtemp's folder is private; the archived run reads like any folder
        os.rename(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return "archived"


def archive(src: Path, dest: Path) -> dict:
    """Archive every finished run under src into dest; counts of what happened."""
    if not src.is_dir():
        raise ArchiveError(f"sweep directory {src} does not exist")
    if os.path.lexists(dest) and (dest.is_symlink() or not dest.is_dir()):
        raise ArchiveError(f"archive {dest} is {'a symbolic link' if dest.is_symlink() else 'an existing file'}, not a "
                           "folder; allowed: a folder (created where missing)")
    if dest.resolve() == src.resolve() or src.resolve() in dest.resolve().parents:
        raise ArchiveError(f"archive {dest} lies inside the sweep directory {src}; choose a folder outside it")
    found = discover(src)
    counts = {"archived": 0, "present": 0, "left out": len(found.skipped)}
    for run in found.runs:
        counts[archive_one(run.path, run.summary, dest / run.path.relative_to(src))] += 1
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src", type=Path, help="a sweep directory (or any folder of runs)")
    p.add_argument("dest", type=Path, help="the archive folder (created where missing)")
    a = p.parse_args(argv)
    try:
        counts = archive(a.src, a.dest)
    except ArchiveError as e:
        print(f"archive_runs.py: {e}", file=sys.stderr)
        return 2
    print(f"archive_runs.py: {counts['archived']} runs archived into {a.dest}, {counts['present']} already there, "
          f"{counts['left out']} not finished or not trusted (left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
