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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import yaml
from .yaml_safe import safe_load

from ..errors import RunDirectoryError
from . import fsops
from .identity import as_settled, comparable, flatten

CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
CHECKPOINT_FILE = "checkpoint.pt"
PREVIOUS_CHECKPOINT_FILE = "checkpoint.prev.pt"
# The record of every other file name a run wrote (figures, extra tables): with RUN_FILES, what is ours
MANIFEST_FILE = ".fedcluster-files.json"
# The names every run may write. A user's own files (notes, figures, tables) are never among them, so
# overwrite, resume and clean-up leave them where they are.
RUN_FILES = (CONFIG_FILE, SUMMARY_FILE, CHECKPOINT_FILE, PREVIOUS_CHECKPOINT_FILE, "checkpoint.damaged.pt", "run.log",
             "mlflow_run_id.txt", "metrics.csv", "assignments.csv", "cluster_sizes.csv", "participation.csv", "communication.csv",
             MANIFEST_FILE)
OWN_DIRS = (".hydra", "tensorboard", "wandb")
# overwrite=true moves the old run here before the new one writes; it goes back if the new run fails
SET_ASIDE_DIR = ".fedcluster-replaced"
FINAL_TABLES = ("assignments.csv", "cluster_sizes.csv", "participation.csv", "communication.csv")   # written only as a run finishes (finished_run.py)


def plain_name(name) -> bool:
    """A single file name inside the folder (no separator, not '.' or '..')."""
    return isinstance(name, str) and bool(name) and "/" not in name and "\\" not in name and "\0" not in name \
        and name not in (".", "..")


def run_files(path: Path) -> set:
    """The file names in `path` that a fedcluster run wrote, from what fedcluster itself recorded: the
    fixed RUN_FILES, the names this process wrote there, and those a finished run sealed in its
    summary.json (`integrity.own_files`, covered by the summary's digest). The manifest file is never
    what makes a file ours: it travels with the folder and anyone can edit it (`manifest_problem`)."""
    names = set(RUN_FILES)
    names.update(_WRITTEN.get(os.path.abspath(path), ()))
    names.update(sealed_own_files(path) or ())
    return names


def sealed_own_files(path: Path) -> Optional[set]:
    """The extra file names the finished run in `path` sealed (None: no summary, a summary that fails
    its own digest, or one written before runs sealed their names)."""
    from .integrity import DamagedFile, read_regular_file, summary_digest
    try:
        summary = json.loads(read_regular_file(Path(path) / SUMMARY_FILE))
    except (OSError, DamagedFile, ValueError):
        return None
    seal = summary.get("integrity") if isinstance(summary, dict) else None
    if not isinstance(seal, dict) or not isinstance(seal.get("own_files"), list):
        return None
    if seal.get("summary_sha256") != summary_digest(summary):
        return None
    return {n for n in seal["own_files"] if plain_name(n) and n not in OWN_DIRS and n != SET_ASIDE_DIR}


def manifest_problem(path: Path) -> Optional[str]:
    """Why the manifest in `path` cannot stand beside the finished run's seal (None: it can): a manifest
    beside a run that sealed its names must list exactly those (a missing one is no problem: the seal
    alone says which files are the run's)."""
    from .integrity import DamagedFile, read_regular_file
    sealed = sealed_own_files(path)
    if sealed is None:
        return None
    manifest = Path(path) / MANIFEST_FILE
    if not os.path.lexists(manifest):   # the seal alone says which files are the run's
        return None
    try:
        listed = json.loads(read_regular_file(manifest))
    except (OSError, DamagedFile, ValueError):
        listed = None
    if not isinstance(listed, list) or set(listed) != sealed:
        return f"its {MANIFEST_FILE} does not list the files summary.json sealed (edited after the run finished?)"
    return None


# Names written so far by this process, per held run directory (its manifest's contents)
_WRITTEN: Dict[str, set] = {}


def note_written(path: Path) -> None:
    """Record `path` (a file io.py just wrote into a held run directory) in the run's manifest, so
    that overwrite and clean-up can tell the run's files from a user's."""
    key = os.path.abspath(path.parent)
    if key not in _OWNED or path.name in RUN_FILES or not plain_name(path.name):
        return
    names = _WRITTEN.setdefault(key, set())
    if path.name in names:
        return
    names.add(path.name)
    listed = sorted(names)
    fsops.atomic_write(Path(key) / MANIFEST_FILE, lambda f: json.dump(listed, f), binary=False)


def written_here(directory) -> List[str]:
    """The extra file names (beyond RUN_FILES) this process wrote into the held run directory: what a
    finished run seals as its own (integrity.seal_summary)."""
    return sorted(_WRITTEN.get(os.path.abspath(directory), ()))


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
        return safe_load(f.read_text()) or {}
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
            fsops.unlink(f)
            removed.append(f.name)
    return removed


def _our_entries(path: Path) -> List[Path]:
    """The run's own files and folders in `path` (regular files and real folders; a link under one of
    our names is left alone: it is removed by no one but its owner)."""
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
    """Delete the run's own files (RUN_FILES, OWN_DIRS and the names fedcluster recorded as the run's), nothing
    else; each removal acts in the held directory's descriptor (fsops), never through a link."""
    for p in _our_entries(path):
        if p.is_dir():
            fsops.remove_tree(p)
        else:
            fsops.unlink(p)


# The set-aside folder of each held run directory that this process may empty into, restore from or
# remove (absolute path -> the names it moved there): one it created in this replacement, or one left by
# an earlier replacement that it verified holds that replacement's old run (`set_aside_problem`).
_SET_ASIDE: Dict[str, List[str]] = {}


def set_aside_problem(aside: Path) -> Optional[str]:
    """Why the folder `aside` (a run directory's SET_ASIDE_DIR, found when a run starts) cannot be the old run
    an earlier replacement set aside (None: it is one): it must be a real folder holding only a run's own
    files, either a finished run whose seal holds or a config.yaml with a checkpoint that verifies against it."""
    from .integrity import DamagedFile, finished_run_problem, read_checkpoint
    from .identity import accepted_fingerprints
    if os.path.islink(aside) or not aside.is_dir():
        return "it is not a folder"
    names = fsops.entry_names(aside)
    if not names:
        return "it is empty"
    ours = run_files(aside) | set(OWN_DIRS)
    stray = [n for n in names if n not in ours or os.path.islink(aside / n)]
    if stray:
        return f"it holds {stray[0]}, which is not a file of a run"
    if SUMMARY_FILE in names:
        summary = _read_summary(aside)
        problem = "its summary.json is damaged" if summary is None else finished_run_problem(aside, summary)
        return problem
    try:
        config = _read_config(aside)
    except RunDirectoryError:
        config = None
    if not isinstance(config, dict):
        return "it holds neither a finished run nor a readable config.yaml"
    for name in (CHECKPOINT_FILE, PREVIOUS_CHECKPOINT_FILE):
        if name in names:
            try:
                header, _ = read_checkpoint(aside / name)
            except DamagedFile:
                continue
            if header.get("fingerprint") in accepted_fingerprints(config):
                return None
    return "it holds no finished run and no checkpoint that verifies against its config.yaml"


def set_aside_results(path: Path) -> None:
    """overwrite=true: move the old run's files into SET_ASIDE_DIR inside the run directory (a rename:
    nothing is copied or lost) before the new run writes; `restore_set_aside` puts them back if the new
    run fails, `drop_set_aside` removes them once it finished. A set-aside folder left by a replacement
    that was killed (claim verified it holds that replacement's old run) keeps it: the killed replacement's
    own files go instead. Any other folder under that name was refused at claim."""
    key, aside = os.path.abspath(path), path / SET_ASIDE_DIR
    if os.path.lexists(aside):
        problem = set_aside_problem(aside)
        if problem is not None:   # claim refuses this; a folder planted since then is refused here
            raise _unverified_set_aside(path, problem)
        _SET_ASIDE[key] = fsops.entry_names(aside)
        remove_results(path)
        return
    entries = _our_entries(path)
    fsops.make_dir(aside)
    moved = _SET_ASIDE[key] = []
    for p in entries:
        fsops.rename(p, aside / p.name)
        moved.append(p.name)


def _unverified_set_aside(path: Path, problem: str) -> RunDirectoryError:
    return RunDirectoryError(f"output directory {path} holds a {SET_ASIDE_DIR}/ folder that is not a run fedcluster "
                             f"set aside ({problem}); fedcluster neither moves files into it nor restores from it: "
                             f"move it out of the run directory, then run again")


def restore_set_aside(path: Path) -> None:
    """The new run failed: remove what it wrote and move the old run back, whole: exactly the names this
    replacement moved (or verified) there, so the old run is back byte-identical."""
    key, aside = os.path.abspath(path), path / SET_ASIDE_DIR
    moved = _SET_ASIDE.pop(key, None)
    if moved is None:
        return
    remove_results(path)
    for name in moved:
        fsops.rename(aside / name, path / name)
    try:
        fsops.rmdir(aside)
    except OSError:   # something was put there meanwhile: not ours to remove
        pass


def drop_set_aside(path: Path) -> None:
    """The replacement finished: the old run's files go (only a set-aside this process made or verified)."""
    key, aside = os.path.abspath(path), path / SET_ASIDE_DIR
    moved = _SET_ASIDE.pop(key, None)
    if moved is None and os.path.lexists(aside) and set_aside_problem(aside) is None:
        moved = fsops.entry_names(aside)   # a replacement killed earlier, resumed to its end without overwrite
    if moved is None:
        return
    for name in moved:
        p = aside / name
        if os.path.islink(p):
            continue
        if p.is_dir():
            fsops.remove_tree(p)
        elif p.exists():
            fsops.unlink(p)
    try:
        fsops.rmdir(aside)
    except OSError:
        pass


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
            fsops.hold(key, fd)
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
                _SET_ASIDE.pop(key, None)
                fsops.release(key)
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
    if os.path.lexists(path / SUMMARY_FILE):
        problem = manifest_problem(path)
        if problem is not None:
            raise RunDirectoryError(f"output directory {path} holds a finished run but {problem}; fedcluster takes a "
                                    f"run's files from its seal only: remove {MANIFEST_FILE} or put it back as it was, "
                                    "or use a new hydra.run.dir")
    aside = path / SET_ASIDE_DIR
    if overwrite and os.path.lexists(aside):
        problem = set_aside_problem(aside)
        if problem is not None:
            raise _unverified_set_aside(path, problem)
    old = as_settled(_read_config(path), requested)   # a run recorded before runs were settled: the count it settled
    if old is not None and comparable(old) != comparable(requested) and not overwrite:
        diff = differing_keys(old, requested)
        shown = "; ".join(diff[:6]) + (f"; ... ({len(diff) - 6} more)" if len(diff) > 6 else "")
        raise RunDirectoryError(f"output directory {path} holds a run of a different configuration ({shown}); "
                                "use a new hydra.run.dir, or overwrite=true to replace it")
    foreign = _foreign_entries(path)
    checkpoints = [n for n in (CHECKPOINT_FILE, PREVIOUS_CHECKPOINT_FILE) if os.path.lexists(path / n)]
    has_run = old is not None or bool(checkpoints) or os.path.lexists(path / SUMMARY_FILE) \
        or (overwrite and os.path.lexists(aside))   # a replacement killed after it set the old run aside (verified above)
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
