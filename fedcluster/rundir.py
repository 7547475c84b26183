"""A run directory belongs to one config: ownership, an exclusive lock, and finished runs.

`claim(path, requested, overwrite)` is the first thing a run does, before it writes a byte:
- the path must be a directory (or creatable); a file or an unwritable place is a one-line error;
- an OS lock (`fcntl.flock` on the directory itself, so nothing is written to take it) makes
  the run the directory's only writer; a second process fails at once;
- a directory that holds another config's run (its `config.yaml` or checkpoint) is refused,
  naming the keys that differ, and left byte-identical;
- the same config, unfinished: resume; finished: "already complete" (nothing redone) unless
  `overwrite=true`, whose run removes the old results once every check before training has
  passed (never mixes two runs' files; a refused replacement leaves the old run as it was).
Keys that do not change results (identity.py `VOLATILE_KEYS`) are left out of the comparison."""
import errno
import fcntl
import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import yaml

from .errors import RunDirectoryError
from .identity import comparable, flatten

CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
CHECKPOINT_FILE = "checkpoint.pt"
PREVIOUS_CHECKPOINT_FILE = "checkpoint.prev.pt"
# What a run writes; `overwrite=true` removes exactly these (and nothing the user put there).
RESULT_PATTERNS = ("config.yaml", "summary.json", "checkpoint.pt", "checkpoint.*.pt", "run.log", "mlflow_run_id.txt", "*.csv", "*.png",
                   "*.pdf", "*.svg")
OWN_DIRS = (".hydra", "tensorboard", "wandb")
FINAL_TABLES = ("assignments.csv", "cluster_sizes.csv")   # written only as a run finishes (artifacts.py)


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
    state: str                      # "new" | "resume" | "complete" | "replace" (overwrite=true)
    summary: Optional[dict] = None  # the finished run's summary (state "complete")


# Directories this process created for a run (its leaf and the missing parents, top first), by
# the leaf's absolute path: a refused start removes exactly these, and only while it holds the
# leaf's lock, so no process ever removes a directory that another one holds.
_CREATED: Dict[str, List[Path]] = {}


def _make_dirs(path: Path, created: List[Path]) -> None:
    """Create `path` and its missing parents one level at a time, appending to `created` those
    this call made (os.mkdir is atomic: when two processes race, exactly one creates each level);
    on an error the caller still knows what was made."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for p in reversed(missing):
        try:
            os.mkdir(p)
            created.append(p)
        except FileExistsError:
            if not p.is_dir():
                raise


def check_place(path, key: str = "hydra.run.dir") -> None:
    """Create `path` (parents too) or fail with one line saying why: an empty path, an existing
    file, a read-only file system, no permission. The directories created are remembered
    (`discard_created` removes them again after a refusal). `key`: the setting named in errors."""
    if path is None or not str(path).strip():
        raise RunDirectoryError(f"output directory is empty ({key}=''); give a directory, "
                                f"e.g. {key}=outputs/runs/my-run")
    path = Path(path)
    created: List[Path] = []
    try:
        for p in (path, *path.parents):
            if p.exists() and not p.is_dir():
                raise RunDirectoryError(f"output directory {path} cannot be created: {p} is an existing file, "
                                        f"not a directory; choose another {key}" if p != path else
                                        f"output directory {path} is an existing file, not a directory; "
                                        f"choose another {key}")
            if p.exists():
                break
        _make_dirs(path, created)
    except OSError as e:   # also a name too long, a path through /proc, no permission
        _remove_created_parents(created)
        raise RunDirectoryError(f"output directory {str(path)[:200]} cannot be created ({e.strerror or e}); "
                                f"choose another {key}") from None
    if created:
        _CREATED.setdefault(os.path.abspath(path), []).extend(Path(os.path.abspath(p)) for p in created)
    if not os.access(path, os.W_OK | os.X_OK):
        discard_created(path)
        raise RunDirectoryError(f"output directory {path} is not writable (permission denied or read-only "
                                f"file system); choose another {key}")


def _remove_created_parents(created: List[Path]) -> None:
    for p in reversed(created):
        try:
            p.rmdir()   # only an empty directory; one another run has started to use stays
        except OSError:
            break


def _remove_leaf_held(path: Path, fd: int) -> bool:
    """Remove the empty directory `path` whose lock this process holds through `fd`."""
    try:
        if _same_directory(path, fd) and not any(path.iterdir()):
            path.rmdir()
            return True
    except OSError:
        pass
    return False


def created_here(path) -> bool:
    """Whether this process created `path` for a run or sweep (check_place), and it is not yet claimed."""
    return os.path.abspath(path) in _CREATED


def adopt_if_empty(path) -> None:
    """Count an empty directory as created for this run (a sweep job's, which Hydra creates
    before the job starts): a refused job removes it again, under its lock, as discard_created does."""
    path = Path(os.path.abspath(path))
    try:
        if path.is_dir() and not any(path.iterdir()) and str(path) not in _CREATED:
            _CREATED[str(path)] = [path]
    except OSError:
        pass


def discard_created(path) -> None:
    """After a refused start: remove what this process created for `path` (the run directory and
    its new parents), each only if still empty, and the run directory only under its lock (a
    directory another process holds is never removed; it then keeps its parents too)."""
    path = Path(os.path.abspath(path))
    created = _CREATED.pop(str(path), [])
    if not created:
        return
    if created[-1] == path:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return   # another process holds it: it is theirs now
            if not _remove_leaf_held(path, fd):
                return
        finally:
            os.close(fd)
        created = created[:-1]
    _remove_created_parents(created)


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
        return None   # damaged: the caller refuses it


def _foreign_entries(path: Path) -> List[str]:
    """Entries that no fedcluster run wrote (the directory is someone else's)."""
    ours = set(OWN_DIRS)
    out = []
    for entry in path.iterdir():
        name = entry.name
        if name in ours or _is_temp(name):
            continue
        if any(entry.match(p) for p in RESULT_PATTERNS):
            continue
        out.append(name)
    return sorted(out)


def _is_temp(name: str) -> bool:
    """A temporary file of io.py's atomic writes (`.<name>.<random>.tmp`)."""
    return name.startswith(".") and name.endswith(".tmp")


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


def _same_directory(path: Path, fd: int) -> bool:
    """Whether `path` still names the directory open as `fd` (not removed, not replaced)."""
    try:
        a, b = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _in_use(path: Path) -> RunDirectoryError:
    return RunDirectoryError(f"output directory {path} is in use by another fedcluster process; "
                             "wait for it or choose another hydra.run.dir")


@contextmanager
def locked(path: Path) -> Iterator[int]:
    """Hold an exclusive, non-blocking flock on the directory for the duration; yields its
    descriptor. The lock is taken on the directory itself, so nothing is written to take it, and
    it is checked to still be the directory at `path` once held (a directory removed or replaced
    between opening and locking is not ours to use)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise _in_use(path) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise _in_use(path) from None
            raise
        if not _same_directory(path, fd):
            raise _in_use(path)
        yield fd
    finally:
        os.close(fd)   # closing the descriptor releases the lock


# Directories this process holds (absolute path -> the locked descriptor): every result write
# checks that the path still names the locked directory, so a run whose directory was moved or
# replaced stops instead of writing half of its results into another place.
_OWNED: Dict[str, int] = {}


def is_owned(directory) -> bool:
    """Whether this process holds `directory` as a run directory."""
    return os.path.abspath(directory) in _OWNED


def check_still_owned(directory) -> None:
    """WriteFailed when `directory` is held by this process but no longer the directory it locked."""
    key = os.path.abspath(directory)
    fd = _OWNED.get(key)
    if fd is not None and not _same_directory(Path(key), fd):
        from .errors import WriteFailed
        raise WriteFailed(directory, "the run directory was moved, removed or replaced while this run was writing it")


@contextmanager
def claim(path, requested: dict, overwrite: bool = False) -> Iterator[Claim]:
    """Own `path` for one run of `requested` (the resolved config as a plain dict); the CLI has
    already called `check_place` before Hydra touched the path, `run()` callers get it here.
    A start that fails before it wrote anything removes the directories this process created
    for it, while it still holds the lock."""
    path = Path(path)
    check_place(path)
    key = os.path.abspath(path)
    try:
        with locked(path) as fd:
            _OWNED[key] = fd
            try:
                yield _inspect(path, requested, overwrite)
            except BaseException:
                created = _CREATED.get(key, [])
                if created and created[-1] == Path(key) and _remove_leaf_held(path, fd):
                    _CREATED.pop(key, None)
                    _remove_created_parents(created[:-1])
                raise
            finally:
                _OWNED.pop(key, None)
            _CREATED.pop(key, None)   # a run that started keeps its directory
    except RunDirectoryError:
        # refused before the lock was ours (in use): nothing of another process is touched, but
        # parents this process created and nobody uses go
        created = _CREATED.get(key, [])
        if created and created[-1] != Path(key):
            _remove_created_parents(_CREATED.pop(key))
        raise


def _refuse_finished(path: Path, problem: str) -> RunDirectoryError:
    return RunDirectoryError(f"output directory {path} holds a finished run but {problem}; its results are not "
                             "trusted or redone: overwrite=true runs this config again there, or use a new "
                             "hydra.run.dir")


def _inspect(path: Path, requested: dict, overwrite: bool) -> Claim:
    from .integrity import finished_run_problem
    old = _read_config(path)
    if old is not None and comparable(old) != comparable(requested) and not overwrite:
        diff = differing_keys(old, requested)
        shown = "; ".join(diff[:6]) + (f"; ... ({len(diff) - 6} more)" if len(diff) > 6 else "")
        raise RunDirectoryError(f"output directory {path} holds a run of a different configuration ({shown}); "
                                "use a new hydra.run.dir, or overwrite=true to replace it")
    foreign = _foreign_entries(path)
    if foreign and (old is None or overwrite):
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise RunDirectoryError(f"output directory {path} is not empty and holds no fedcluster run "
                                f"({shown}); choose an empty or new hydra.run.dir")
    checkpoints = [n for n in (CHECKPOINT_FILE, PREVIOUS_CHECKPOINT_FILE) if (path / n).exists()]
    if overwrite:   # the old results are removed by the run once every check has passed (`remove_results`)
        return Claim(path, "replace")
    if (path / SUMMARY_FILE).exists():   # a finished (or diverged) run: trusted only as it was sealed
        summary = _read_summary(path)
        if summary is None:
            raise _refuse_finished(path, f"its {SUMMARY_FILE} is damaged (not readable JSON)")
        problem = finished_run_problem(path, summary)
        if problem is not None:
            raise _refuse_finished(path, problem)
        return Claim(path, "complete", summary)   # left exactly as it is
    if old is None and checkpoints:
        raise RunDirectoryError(f"output directory {path} holds a checkpoint without its config.yaml "
                                "(a different configuration's run?); use a new hydra.run.dir, or "
                                "overwrite=true to replace it")
    finals = [n for n in FINAL_TABLES if (path / n).exists()]
    if old is not None and not checkpoints and finals:   # what only a finishing run writes, without its summary
        raise _refuse_finished(path, f"its {SUMMARY_FILE} is missing (it holds {', '.join(finals)}, which a run "
                                     "writes only as it finishes)")
    # stale temporary files are removed by the run once every check has passed (a refusal changes nothing)
    if old is not None or checkpoints:
        return Claim(path, "resume")
    left = sorted(e.name for e in path.iterdir() if not _is_temp(e.name))
    if left:   # result files of a run whose config.yaml and summary are gone
        shown = ", ".join(left[:5])
        raise RunDirectoryError(f"output directory {path} holds part of a run without its config.yaml ({shown}); "
                                "use a new hydra.run.dir, or overwrite=true to replace it")
    return Claim(path, "new")
