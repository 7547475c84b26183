"""Every write, append, rename and removal fedcluster makes in a run directory, opened relative to the
descriptor of the directory the run claimed, never through a link.

A check made when a run starts ("no link among our names") says nothing about a moment later: a file
can be swapped for a symbolic link while the run trains, and a directory path can be moved and
replaced. So each operation here resolves its file at the moment it acts:
- the run directory is the descriptor `rundir.claim` locked (`hold`), not its path: a rename or a new
  file lands in the directory that was claimed;
- a folder inside it (`.hydra/`) is opened from that descriptor with O_NOFOLLOW, and the file itself
  is opened with O_NOFOLLOW: a link in either place is ELOOP (`WriteFailed` for the caller), never a
  write into the file it points to;
- an atomic write creates its temporary file with O_EXCL | O_NOFOLLOW and renames it over the name:
  a link planted under the name is replaced itself, its target never opened.
Outside a held run directory (a report's output, an archive) the folder given is opened as given and
only the last component is held to O_NOFOLLOW."""
import errno
import functools
import os
import secrets
import stat
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Dict, Iterator, Optional

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | CLOEXEC

# Run directories this process holds: absolute path -> the locked descriptor (rundir.claim)
_HELD: Dict[str, int] = {}


def hold(directory, fd: int) -> None:
    _HELD[os.path.abspath(directory)] = fd


def release(directory) -> None:
    _HELD.pop(os.path.abspath(directory), None)


def held_fd(directory) -> Optional[int]:
    """The locked descriptor of `directory` when this process holds it as a run directory."""
    return _HELD.get(os.path.abspath(directory))


def _plain(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..")


@contextmanager
def folder(directory, create: bool = True) -> Iterator[int]:
    """A descriptor of `directory` to act relative to: the held descriptor of a claimed run directory,
    a folder directly inside one opened from it without following a link (created when missing), or,
    for any other place, the folder as given (created with its parents when `create`)."""
    directory = Path(directory)
    fd = held_fd(directory)
    if fd is not None:
        yield fd
        return
    parent = held_fd(directory.parent)
    if parent is not None and _plain(directory.name):
        if create:
            try:
                os.mkdir(directory.name, dir_fd=parent)
            except FileExistsError:
                pass
        try:
            own = os.open(directory.name, _DIR_FLAGS | NOFOLLOW, dir_fd=parent)
        except NotADirectoryError:   # O_DIRECTORY | O_NOFOLLOW on a link says ENOTDIR: name it what it is
            if stat.S_ISLNK(os.lstat(directory.name, dir_fd=parent).st_mode):
                raise OSError(errno.ELOOP, "a symbolic link in a folder's place", str(directory)) from None
            raise
    else:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        own = os.open(directory, _DIR_FLAGS)
    try:
        yield own
    finally:
        os.close(own)


def _temp_name(name: str) -> str:
    """`.<name>.<random>.tmp`: the shape rundir.remove_stale_temp_files knows as ours."""
    return f".{name}.{secrets.token_hex(4)}.tmp"


def atomic_write(path, write: Callable, binary: bool = True) -> None:
    """Write `path` whole or not at all: `write(f)` fills a new temporary file beside it (created with
    O_EXCL | O_NOFOLLOW, mode 0666 less the umask), which is flushed to disk and renamed over the name
    within the same folder descriptor; readers see the old complete file or the new one."""
    path = Path(path)
    with folder(path.parent) as dfd:
        tmp = _temp_name(path.name)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, 0o666, dir_fd=dfd)
        try:
            with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")) as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
        try:
            os.fsync(dfd)
        except OSError:   # some file systems do not support fsync on directories
            pass


def open_append(path, create: bool = False, binary: bool = False, encoding: str = "utf-8", errors=None):
    """`path` opened to append, refusing a link at the moment it opens (ELOOP); created when missing
    only if `create`. The caller closes it."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | NOFOLLOW | CLOEXEC | (os.O_CREAT if create else 0)
    with folder(path.parent, create=create) as dfd:
        fd = os.open(path.name, flags, 0o666, dir_fd=dfd)
    if binary:
        return os.fdopen(fd, "ab")
    return os.fdopen(fd, "a", encoding=encoding, errors=errors, newline="")


def unlink(path) -> None:
    """Remove the name `path` (a link is removed itself, its target never touched)."""
    path = Path(path)
    with folder(path.parent, create=False) as dfd:
        os.unlink(path.name, dir_fd=dfd)


def rmdir(path) -> None:
    path = Path(path)
    with folder(path.parent, create=False) as dfd:
        os.rmdir(path.name, dir_fd=dfd)


def make_dir(path) -> None:
    """Create the folder `path` (exclusively: FileExistsError when the name is taken)."""
    path = Path(path)
    with folder(path.parent, create=False) as dfd:
        os.mkdir(path.name, dir_fd=dfd)


def rename(src, dst) -> None:
    """Rename `src` to `dst`, each resolved in its folder's descriptor (a folder inside the run
    directory opened without following a link), replacing a file at `dst`."""
    src, dst = Path(src), Path(dst)
    with folder(src.parent, create=False) as sfd, folder(dst.parent, create=False) as dfd:
        os.replace(src.name, dst.name, src_dir_fd=sfd, dst_dir_fd=dfd)


def remove_tree(path) -> None:
    """Remove the folder `path` and everything in it without following a link: a link in its place is
    refused (OSError), a link inside it is removed itself."""
    path = Path(path)
    with folder(path.parent, create=False) as dfd:
        try:
            shutil.rmtree(path.name, dir_fd=dfd)
        except TypeError:   # Python 3.10: no dir_fd; rmtree refuses a link in the folder's place itself
            shutil.rmtree(path)


def entry_names(path) -> list:
    """The names in the folder `path` (opened without following a link when it is inside a held run directory)."""
    with folder(path, create=False) as dfd:
        return sorted(os.listdir(dfd))


def descend(fd: int, parts, create: bool = False) -> int:
    """A new descriptor of fd/parts[0]/.../parts[-1], each part opened from the one before with O_NOFOLLOW
    (created first when missing and `create`): a link at any of them is ELOOP or ENOTDIR. The caller closes it."""
    fd = os.dup(fd)
    try:
        for part in parts:
            if not _plain(part):
                raise OSError(errno.EINVAL, "not one plain folder name", part)
            if create:
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
            inner = os.open(part, _DIR_FLAGS | NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def folder_below(base, parts=(), create: bool = True) -> Iterator[int]:
    """A descriptor of base/parts[0]/.../parts[-1] for a place outside any run directory (an archive, a folder
    runs are unpacked into): `base` itself opened without following a link (created with its parents when missing
    and `create`), then each part as `descend` opens it, so a link planted at any of them, at any moment, is
    refused, never a place written through."""
    base = Path(base)
    if create:
        base.mkdir(parents=True, exist_ok=True)
    top = os.open(base, _DIR_FLAGS | NOFOLLOW)
    try:
        fd = descend(top, parts, create)
    finally:
        os.close(top)
    try:
        yield fd
    finally:
        os.close(fd)


def read_below(dir_fd: int, name: str) -> bytes:
    """The bytes of the file `name` in the folder `dir_fd`, opened without following a link."""
    fd = os.open(name, os.O_RDONLY | NOFOLLOW | CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def write_new(dir_fd: int, name: str, data: bytes) -> None:
    """A new file `name` in the folder `dir_fd` (O_EXCL | O_NOFOLLOW: nothing there already is opened or replaced)."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, 0o666, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


_RENAME_NOREPLACE = 1


@functools.lru_cache(maxsize=1)
def _renameat2():
    """The C library's renameat2, or None where it has none (looked up once)."""
    import ctypes
    import ctypes.util
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None


def rename_no_replace(dir_fd: int, src: str, dst: str) -> None:
    """Rename `src` to `dst` in the folder `dir_fd`, refusing (FileExistsError) where `dst` exists, even an empty
    folder that plain rename would replace: renameat2(RENAME_NOREPLACE) where the C library has it, else a link
    check just before a plain rename (the only window left is on systems without renameat2)."""
    import ctypes
    renameat2 = _renameat2()
    if renameat2 is not None:
        if renameat2(dir_fd, os.fsencode(src), dir_fd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):   # a kernel or file system without it: the fallback below
            raise OSError(err, os.strerror(err), dst)
    try:
        os.lstat(dst, dir_fd=dir_fd)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    raise FileExistsError(errno.EEXIST, "already exists", dst)
