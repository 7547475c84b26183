"""A run directory belongs to one config: ownership, an exclusive lock, and finished runs.

`claim(path, requested, overwrite)` is the first thing a run does, before it writes a byte:
- the path must be a directory (or creatable); a file or an unwritable place is a one-line error;
- an OS lock (`fcntl.flock` on the directory itself, so nothing is written to take it) makes
  the run the directory's only writer; a second process fails at once;
- a directory that holds another config's run (its `config.yaml` or checkpoint) is refused,
  naming the keys that differ, and left byte-identical;
- the same config, unfinished: resume; finished: "already complete" (nothing redone) unless
  `overwrite=true`, whose run sets the old results aside once every check before training has
  passed and removes them only when it has finished (never mixes two runs' files; a refused or
  failed replacement leaves the old run as it was);
- what is ours: the names a run writes (RUN_FILES, OWN_DIRS) and those its manifest lists; a user's
  own files in a run directory are never removed, and a folder holding only a user's files is no run
  to replace; a symbolic link under one of our names is refused (nothing is written through it).
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

from ..errors import RunDirectoryError
from .identity import comparable, flatten

CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
CHECKPOINT_FILE = "checkpoint.pt"
PREVIOUS_CHECKPOINT_FILE = "checkpoint.prev.pt"
# The record of every other file name a run wrote (figures, extra tables): with RUN_FILES, what is ours
MANIFEST_FILE = ".fedcluster-files.json"
# The names every run may write. A user's own files (notes, figures, tables) are never among them, so
# overwrite, resume and clean-up leave them where they are.
RUN_FILES = (CONFIG_FILE, SUMMARY_FILE, CHECKPOINT_FILE, PREVIOUS_CHECKPOINT_FILE, "checkpoint.damaged.pt", "run.log",
             "mlflow_run_id.txt", "metrics.csv", "assignments.csv", "cluster_sizes.csv", "participation.csv", MANIFEST_FILE)
OWN_DIRS = (".hydra", "tensorboard", "wandb")
# overwrite=true moves the old run here before the new one writes; it goes back if the new run fails
SET_ASIDE_DIR = ".fedcluster-replaced"
FINAL_TABLES = ("assignments.csv", "cluster_sizes.csv", "participation.csv")   # written only as a run finishes (artifacts.py)


def plain_name(name) -> bool:
    """A single file name inside the folder (no separator, not '.' or '..')."""
    return isinstance(name, str) and bool(name) and "/" not in name and "\\" not in name and "\0" not in name \
        and name not in (".", "..")


def run_files(path: Path) -> set:
    """The file names in `path` that a fedcluster run wrote: the fixed RUN_FILES and those its
    manifest lists (plain names only; a manifest that is damaged, a link or not a file adds none)."""
    from .integrity import DamagedFile, read_regular_file
    names = set(RUN_FILES)
    try:
        listed = json.loads(read_regular_file(Path(path) / MANIFEST_FILE))
    except (OSError, DamagedFile, ValueError):
        return names
    if isinstance(listed, list):
        names.update(n for n in listed if plain_name(n) and not n.startswith(SET_ASIDE_DIR))
    return names


# Names written so far by this process, per held run directory (its manifest's contents)
_WRITTEN: Dict[str, set] = {}


def note_written(path: Path) -> None:
    """Record `path` (a file io.py just wrote into a held run directory) in the run's manifest, so
    that overwrite and clean-up can tell the run's files from a user's."""
    key = os.path.abspath(path.parent)
    if key not in _OWNED or path.name in RUN_FILES or not plain_name(path.name):
        return
    names = _WRITTEN.setdefault(key, set(run_files(path.parent)) - set(RUN_FILES))
    if path.name in names:
        return
    names.add(path.name)
    _write_manifest(Path(key), sorted(names))


def _write_manifest(directory: Path, names: List[str]) -> None:
    import tempfile
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{MANIFEST_FILE}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(names, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, directory / MANIFEST_FILE)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def links_among_ours(path: Path) -> List[str]:
    """'name -> target' of every symbolic link in `path` under a name fedcluster writes, reads or
    removes: a run never writes, appends or removes through a link."""
    out = []
    for name in sorted(run_files(path) | set(OWN_DIRS) | {SET_ASIDE_DIR}):
        p = path / name
        if os.path.islink(p):
            out.append(f"{name} -> {os.readlink(p)}")
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
    """Entries that no fedcluster run wrote (a user's own files, or someone else's directory)."""
    ours = run_files(path) | set(OWN_DIRS) | {SET_ASIDE_DIR}
    return sorted(e.name for e in path.iterdir() if e.name not in ours and not _is_temp(e.name, ours))


def _is_temp(name: str, ours=RUN_FILES) -> bool:
    """A temporary file of io.py's atomic writes of one of our files (`.<name>.<random>.tmp`)."""
    return name.startswith(".") and name.endswith(".tmp") and any(name.startswith(f".{n}.") for n in ours)


def remove_stale_temp_files(path: Path) -> List[str]:
    """Our temporary files left by a process killed mid-write (we hold the lock: no writer is alive);
    unlink removes a link itself, never what it points to."""
    ours, removed = run_files(path), []
    for f in path.glob(".*.tmp"):
        if _is_temp(f.name, ours) and (f.is_symlink() or f.is_file()):
            f.unlink()
            removed.append(f.name)
    return removed


def _our_entries(path: Path) -> List[Path]:
    """The run's own files and folders in `path` (regular files and real folders; links are refused
    at claim, so none is followed here)."""
    out = []
    for name in sorted(run_files(path)):
        p = path / name
        if not os.path.islink(p) and p.is_file():
            out.append(p)
    for name in OWN_DIRS:
        p = path / name
        if not os.path.islink(p) and p.is_dir():
            out.append(p)
    return out


def remove_results(path: Path) -> None:
    """Delete the run's own files (the names a run writes, and those its manifest lists), nothing else."""
    for p in _our_entries(path):
        if p.is_dir():
            shutil.rmtree(p)   # does not follow links inside the folder
        else:
            p.unlink()


def set_aside_results(path: Path) -> None:
    """overwrite=true: move the old run's files into SET_ASIDE_DIR inside the run directory (a rename:
    nothing is copied or lost) before the new run writes; `restore_set_aside` puts them back if the new
    run fails, `drop_set_aside` removes them once it finished. A set-aside folder left by a replacement
    that was killed already holds the old run: the killed replacement's own files go instead."""
    aside = path / SET_ASIDE_DIR
    if aside.is_dir() and not aside.is_symlink():
        remove_results(path)
        return
    entries = _our_entries(path)
    os.mkdir(aside)
    for p in entries:
        os.rename(p, aside / p.name)


def restore_set_aside(path: Path) -> None:
    """The new run failed: remove what it wrote and move the old run back, whole."""
    aside = path / SET_ASIDE_DIR
    if not aside.is_dir() or aside.is_symlink():
        return
    remove_results(path)
    for p in list(aside.iterdir()):
        os.rename(p, path / p.name)
    aside.rmdir()


def drop_set_aside(path: Path) -> None:
    """The replacement finished: the old run's files go."""
    aside = path / SET_ASIDE_DIR
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside)


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
        from ..errors import WriteFailed
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
                _WRITTEN.pop(key, None)
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
    links = links_among_ours(path)
    if links:
        raise RunDirectoryError(f"output directory {path} holds a symbolic link where a run keeps its files "
                                f"({links[0]}); fedcluster never writes, appends or removes through a link: remove it "
                                "or choose another hydra.run.dir")
    old = _read_config(path)
    if old is not None and comparable(old) != comparable(requested) and not overwrite:
        diff = differing_keys(old, requested)
        shown = "; ".join(diff[:6]) + (f"; ... ({len(diff) - 6} more)" if len(diff) > 6 else "")
        raise RunDirectoryError(f"output directory {path} holds a run of a different configuration ({shown}); "
                                "use a new hydra.run.dir, or overwrite=true to replace it")
    foreign = _foreign_entries(path)
    checkpoints = [n for n in (CHECKPOINT_FILE, PREVIOUS_CHECKPOINT_FILE) if os.path.lexists(path / n)]
    has_run = old is not None or bool(checkpoints) or os.path.lexists(path / SUMMARY_FILE)
    if foreign and not has_run:   # even with overwrite=true: a user's folder is not a run to replace
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise RunDirectoryError(f"output directory {path} is not empty and holds no fedcluster run "
                                f"({shown}); choose an empty or new hydra.run.dir")
    if overwrite:   # the old results are set aside by the run once every check has passed (`set_aside_results`),
        #             and a user's own files stay
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
    left = sorted(e.name for e in path.iterdir() if not _is_temp(e.name, run_files(path)))
    if left:   # result files of a run whose config.yaml and summary are gone
        shown = ", ".join(left[:5])
        raise RunDirectoryError(f"output directory {path} holds part of a run without its config.yaml ({shown}); "
                                "use a new hydra.run.dir, or overwrite=true to replace it")
    return Claim(path, "new")
