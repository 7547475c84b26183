"""A run directory belongs to one config: ownership, an exclusive lock, and finished runs.

`claim(path, requested, overwrite)` is the first thing a run does, before it writes a byte:
- the path must be a directory (or creatable); a file or an unwritable place is a one-line error;
- an OS lock (`fcntl.flock` on the directory itself, so nothing is written to take it) makes
  the run the directory's only writer; a second process fails at once;
- a directory that holds another config's run (its `config.yaml` or checkpoint) is refused,
  naming the keys that differ, and left byte-identical;
- the same config, unfinished: resume; finished: "already complete" (nothing redone) unless
  `overwrite=true`, which removes the old results first (never mixes two runs' files).
Keys that do not change results (`VOLATILE_KEYS`) are left out of the comparison."""
import errno
import fcntl
import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional

import yaml

from .errors import RunDirectoryError

VOLATILE_KEYS = ("progress", "checkpoint_every", "plots", "overwrite", "objective", "logger", "hydra")
CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
CHECKPOINT_FILE = "checkpoint.pt"
# What a run writes; `overwrite=true` removes exactly these (and nothing the user put there).
RESULT_PATTERNS = ("config.yaml", "summary.json", "checkpoint.pt", "run.log", "mlflow_run_id.txt", "*.csv", "*.png",
                   "*.pdf", "*.svg")
OWN_DIRS = (".hydra", "tensorboard", "wandb")


def comparable(config: dict) -> dict:
    """The config without the keys that do not change a run's results."""
    return {k: v for k, v in config.items() if k not in VOLATILE_KEYS}


def flatten(node, prefix: str = "") -> dict:
    """{"train.lr": 0.01, ...}: nested dicts as dotted keys (lists stay values)."""
    if not isinstance(node, dict):
        return {prefix: node}
    out = {}
    for k, v in node.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(flatten(v, key) if isinstance(v, dict) and v else {key: v})
    return out


def differing_keys(old: dict, new: dict) -> List[str]:
    """'key: old -> new' for every dotted key whose value differs (missing shown as <absent>)."""
    a, b = flatten(comparable(old)), flatten(comparable(new))
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k, "<absent>") != b.get(k, "<absent>"):
            out.append(f"{k}: {a.get(k, '<absent>')} -> {b.get(k, '<absent>')}")
    return out


@dataclass
class Claim:
    """What the directory held when the run claimed it."""
    path: Path
    state: str                      # "new" | "resume" | "complete"
    summary: Optional[dict] = None  # the finished run's summary (state "complete")


def check_place(path) -> None:
    """Create `path` (parents too) or fail with one line saying why: an existing file, a
    read-only file system, no permission. Creating an empty directory is all this writes."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunDirectoryError(f"output directory {path} is an existing file, not a directory; "
                                "choose another hydra.run.dir")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunDirectoryError(f"output directory {path} cannot be created ({e.strerror or e}); "
                                "choose another hydra.run.dir") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise RunDirectoryError(f"output directory {path} is not writable (permission denied or read-only "
                                "file system); choose another hydra.run.dir")


def _read_config(path: Path) -> Optional[dict]:
    f = path / CONFIG_FILE
    if not f.exists():
        return None
    try:
        return yaml.safe_load(f.read_text()) or {}
    except (yaml.YAMLError, OSError) as e:
        raise RunDirectoryError(f"{f} cannot be read ({type(e).__name__}); this directory's run is damaged, "
                                "choose another hydra.run.dir") from None


def _read_summary(path: Path) -> Optional[dict]:
    f = path / SUMMARY_FILE
    if not f.exists():
        return None
    try:
        return json.loads(f.read_text())
    except (json.JSONDecodeError, OSError):
        return None   # a damaged summary: the run is not finished


def _foreign_entries(path: Path) -> List[str]:
    """Entries that no fedcluster run wrote (the directory is someone else's)."""
    ours = set(OWN_DIRS)
    out = []
    for entry in path.iterdir():
        name = entry.name
        if name in ours or (name.startswith(".") and name.endswith(".tmp")):
            continue
        if any(entry.match(p) for p in RESULT_PATTERNS):
            continue
        out.append(name)
    return sorted(out)


def remove_stale_temp_files(path: Path) -> List[str]:
    """Temporary files left by a process killed mid-write (we hold the lock: no writer is alive)."""
    removed = []
    for f in path.glob(".*.tmp"):
        if f.is_file():
            f.unlink()
            removed.append(f.name)
    return removed


def remove_results(path: Path) -> None:
    """Delete a previous run's files (overwrite=true): only the names a run writes."""
    for pattern in RESULT_PATTERNS:
        for f in path.glob(pattern):
            if f.is_file():
                f.unlink()
    for d in OWN_DIRS:
        if (path / d).is_dir():
            shutil.rmtree(path / d)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive, non-blocking flock on the directory for the duration."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunDirectoryError(f"output directory {path} is in use by another fedcluster process; "
                                        "wait for it or choose another hydra.run.dir") from None
            raise
        yield
    finally:
        os.close(fd)   # closing the descriptor releases the lock


@contextmanager
def claim(path, requested: dict, overwrite: bool = False) -> Iterator[Claim]:
    """Own `path` for one run of `requested` (the resolved config as a plain dict); the CLI has
    already called `check_place` before Hydra touched the path, `run()` callers get it here."""
    path = Path(path)
    existed = path.exists()
    check_place(path)
    try:
        with locked(path):
            yield _inspect(path, requested, overwrite)
    except BaseException:
        if not existed and path.is_dir() and not any(path.iterdir()):
            path.rmdir()   # a refused or failed start leaves no empty directory behind
        raise


def _inspect(path: Path, requested: dict, overwrite: bool) -> Claim:
    old = _read_config(path)
    if old is not None and comparable(old) != comparable(requested) and not overwrite:
        diff = differing_keys(old, requested)
        shown = "; ".join(diff[:6]) + (f"; ... ({len(diff) - 6} more)" if len(diff) > 6 else "")
        raise RunDirectoryError(f"output directory {path} holds a run of a different configuration ({shown}); "
                                "use a new hydra.run.dir, or overwrite=true to replace it")
    if old is None:
        foreign = _foreign_entries(path)
        if (path / CHECKPOINT_FILE).exists() and not overwrite:
            raise RunDirectoryError(f"output directory {path} holds a checkpoint without its config.yaml "
                                    "(a different configuration's run?); use a new hydra.run.dir, or "
                                    "overwrite=true to replace it")
        if foreign:
            shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
            raise RunDirectoryError(f"output directory {path} is not empty and holds no fedcluster run "
                                    f"({shown}); choose an empty or new hydra.run.dir")
    remove_stale_temp_files(path)
    if overwrite:
        remove_results(path)
        return Claim(path, "new")
    summary = _read_summary(path)
    if old is not None and summary is not None and summary.get("status", "complete") in ("complete", "diverged"):
        return Claim(path, "complete", summary)
    if old is not None or (path / CHECKPOINT_FILE).exists():
        return Claim(path, "resume")
    return Claim(path, "new")
