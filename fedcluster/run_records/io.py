"""Atomic writes: a result file is either the old complete version or the new complete one.

A write that fails (disk full, read-only file system, no permission) raises `WriteFailed` naming
the file and the reason, with the old version in place; a stop signal during a write waits for
the write to finish (signals.deferred)."""
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ..errors import WriteFailed
from . import fsops
from .identity import json_default
from .rundir import check_still_owned, is_owned, note_written
from ..signals import deferred

if TYPE_CHECKING:   # only a type here: the CLI's start-up (and its refusals) skip pandas
    import pandas as pd


def _atomic(path: Path, write, binary: bool = True) -> None:
    """Write `path` whole or not at all (fsops.atomic_write: a temporary file beside it, opened without
    following a link, flushed to disk and renamed over it within the claimed directory's descriptor):
    readers see the old complete file or the new one, even after a crash. `write(f)` fills the file."""
    path = Path(path)
    with deferred():
        try:
            _check_owner(path)
            # never re-create a held run directory that was moved away (only a folder inside it)
            if not (is_owned(path.parent) or is_owned(path.parent.parent)):
                path.parent.mkdir(parents=True, exist_ok=True)
            fsops.atomic_write(path, write, binary=binary)
            note_written(path)   # the run's manifest: what overwrite and clean-up may remove
        except BaseException as e:
            if isinstance(e, OSError) and not isinstance(e, WriteFailed):
                _check_owner(path)   # the directory went away during the write: say so
                raise WriteFailed(path, write_failure_reason(e)) from e
            raise


def write_failure_reason(e: OSError) -> str:
    import errno
    if e.errno == errno.ELOOP:
        return "a symbolic link is in its place or its folder's; fedcluster never writes through a link"
    return e.strerror or str(e)


def _check_owner(path: Path) -> None:
    """WriteFailed when the run directory holding `path` (its folder, or the folder above, e.g.
    for .hydra/ files) was moved or replaced while this process holds it."""
    check_still_owned(path.parent)
    check_still_owned(path.parent.parent)


def write_bytes(path, data: bytes) -> None:
    _atomic(path, lambda f: f.write(data))


def write_text(path, text: str) -> None:
    _atomic(path, lambda f: f.write(text), binary=False)


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=json_default) + "\n")


def write_csv(path, frame: "pd.DataFrame") -> None:
    _atomic(path, lambda f: frame.to_csv(f, index=False), binary=False)


def torch_bytes(obj) -> bytes:
    """torch.save into memory: the bytes a checksum covers, and a file write whose errors are
    plain OSErrors (torch's own writer reports a full disk as an iostream RuntimeError)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def save_figure(path, fig, **kwargs) -> None:
    """A matplotlib figure, written atomically in the format its suffix names."""
    path = Path(path)
    _atomic(path, lambda f: fig.savefig(f, format=path.suffix.lstrip(".") or "png", **kwargs))


