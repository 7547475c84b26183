"""Which code made a run: the git revision of the checkout fedcluster runs from, for summary.json.

A sweep that runs across many sessions (the leaderboard) gathers runs made by different commits; the
version number alone (0.1.0) cannot tell them apart. `source_revision()` gives the commit's short hash,
with "+changes" when tracked files differ from it, or None where fedcluster does not run from a git
checkout of its own repository (an installed wheel, git missing) -- never a guess: a package under a
virtual environment inside some repository is not that repository's code."""
import functools
import subprocess
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent   # fedcluster/, this file being fedcluster/run_records/provenance.py


def _git(*args, cwd: Path) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    if out.returncode:
        raise OSError(out.stderr.strip())
    return out.stdout.strip()


@functools.lru_cache(maxsize=1)
def source_revision():
    """'<short hash>' or '<short hash>+changes' of the checkout this package lies in; None if none."""
    try:
        top = Path(_git("rev-parse", "--show-toplevel", cwd=PACKAGE_DIR)).resolve()
        if top != PACKAGE_DIR.parent:   # this package is not the checkout's own fedcluster/ folder
            return None
        head = _git("rev-parse", "--short=12", "HEAD", cwd=top)
        changed = _git("status", "--porcelain", "--untracked-files=no", cwd=top)
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+changes" if changed else "")
