"""Atomic writes: a result file is either the old complete version or the new complete one.

A write that fails (disk full, read-only file system, no permission) raises `WriteFailed` naming
the file and the reason, with the old version in place; a stop signal during a write waits for
the write to finish (signals.deferred)."""
import io
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ..errors import WriteFailed
from .identity import json_default
from .rundir import check_still_owned, is_owned, note_written
from ..signals import deferred

if TYPE_CHECKING:   # only a type here: the CLI's start-up (and its refusals) skip pandas
    import pandas as pd


def _umask() -> int:
    """The process's umask, read without changing it (Linux: /proc; else the set-and-restore dance)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync(path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    except OSError:   # some file systems do not support fsync on directories
        pass
    finally:
        os.close(fd)


def _atomic(path: Path, write) -> None:
    """Write to a temporary file beside `path`, give it the mode a plain `open` would (0666 less
    the umask: readable by collaborators, unlike mkstemp's 0600), flush it to disk, then
    rename it over `path`: readers see the old complete file or the new one, even after a crash."""
    path = Path(path)
    with deferred():
        tmp = None
        try:
            _check_owner(path)
            # never re-create a held run directory that was moved away (only a folder inside it)
            path.parent.mkdir(parents=not (is_owned(path.parent) or is_owned(path.parent.parent)), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            os.close(fd)
            os.chmod(tmp, 0o666 & ~_umask())
            write(tmp)
            _fsync(tmp)
            os.replace(tmp, path)
            _fsync(path.parent, directory=True)
            note_written(path)   # the run's manifest: what overwrite and clean-up may remove
        except BaseException as e:
            if tmp is not None and os.path.exists(tmp):
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            if isinstance(e, OSError) and not isinstance(e, WriteFailed):
                _check_owner(path)   # the directory went away during the write: say so
                raise WriteFailed(path, e.strerror or str(e)) from e
            raise


def _check_owner(path: Path) -> None:
    """WriteFailed when the run directory holding `path` (its folder, or the folder above, e.g.
    for .hydra/ files) was moved or replaced while this process holds it."""
    check_still_owned(path.parent)
    check_still_owned(path.parent.parent)


def write_bytes(path, data: bytes) -> None:
    def w(tmp):
        with open(tmp, "wb") as f:
            f.write(data)
    _atomic(path, w)


def write_text(path, text: str) -> None:
    def w(tmp):
        with open(tmp, "w") as f:
            f.write(text)
    _atomic(path, w)


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=json_default) + "\n")


def write_csv(path, frame: "pd.DataFrame") -> None:
    _atomic(path, lambda tmp: frame.to_csv(tmp, index=False))


def torch_bytes(obj) -> bytes:
    """torch.save into memory: the bytes a checksum covers, and a file write whose errors are
    plain OSErrors (torch's own writer reports a full disk as an iostream RuntimeError)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def save_figure(path, fig, **kwargs) -> None:
    """A matplotlib figure, written atomically in the format its suffix names."""
    path = Path(path)
    _atomic(path, lambda tmp: fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", **kwargs))


