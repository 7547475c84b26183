"""Archived runs packed as one file per campaign (issue 77: 91 % of the tracked files were archived run folders).

A folder of finished runs as scripts/archive_runs.py keeps them (each run's config.yaml, summary.json, the tables
its seal names, .hydra/overrides.yaml) is held as one file in that folder, PACK_NAME: gzip-compressed JSON

    {"format": "fedcluster runs pack", "version": 1,
     "runs": {"<run folder, relative to the pack's folder>": {"<file name>": "<its text>", ...}, ...}}

`discover` (report/runs.py) reads a pack's runs as it reads run folders, at the paths the folders had (the pack's
folder / run folder), each checked against its own seal the same way (run_records/integrity.py), and the reports
read their tables through `Run.files`. Reading a pack parses JSON and nothing else: no code runs, and nothing is
written. Written with sorted keys and a zero gzip time stamp, so the same runs make the same bytes.

  python scripts/archive_runs.py SWEEP_DIR DEST        adds a sweep's finished runs to DEST's pack
  python scripts/archive_runs.py --unpack DEST SWEEP_DIR   writes them back as run folders (a sweep skips them)"""
import gzip
import json
import os
import tempfile
from pathlib import Path, PurePosixPath
from typing import Dict

PACK_NAME = "runs.pack.json.gz"
FORMAT = "fedcluster runs pack"
VERSION = 1

Runs = Dict[str, Dict[str, str]]   # run folder -> file name -> text


class PackError(Exception):
    """A pack that cannot be read as one (one line naming the file and what is wrong)."""


def relative_name(name: str) -> bool:
    """A path inside a folder: relative, POSIX separators, no empty, '.' or '..' part (a run folder
    'algorithm=ifca,seed=0', a file 'metrics.csv' or '.hydra/overrides.yaml')."""
    if not isinstance(name, str) or not name or "\\" in name or "\x00" in name:
        return False
    parts = PurePosixPath(name).parts
    return not PurePosixPath(name).is_absolute() and all(p not in ("", ".", "..") for p in parts) \
        and "/".join(parts) == name


def read_pack(path: Path) -> Runs:
    """{run folder: {file name: text}} of the pack at `path`; PackError when it is not a readable pack."""
    path = Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as e:
        raise PackError(f"{path}: not a readable runs pack ({type(e).__name__})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise PackError(f"{path}: not a runs pack of this version (format {FORMAT!r}, version {VERSION})")
    runs = doc.get("runs")
    if not isinstance(runs, dict):
        raise PackError(f"{path}: its 'runs' is not a mapping of run folders")
    for run, files in runs.items():
        if not relative_name(run):
            raise PackError(f"{path}: run folder {run!r} is not a path inside the pack's folder")
        if not isinstance(files, dict) or not all(relative_name(n) and isinstance(t, str) for n, t in files.items()):
            raise PackError(f"{path}: run {run!r} does not map file names inside its folder to texts")
    return runs


def pack_bytes(runs: Runs) -> bytes:
    """The bytes of a pack of `runs` (sorted, so the same runs always make the same file)."""
    text = json.dumps({"format": FORMAT, "version": VERSION, "runs": runs}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def write_pack(path: Path, runs: Runs) -> None:
    """Write the pack of `runs` at `path`: to a temporary file beside it, then renamed over it, so a pack is
    whole or as it was; never through a link."""
    path = Path(path)
    if path.is_symlink():
        raise PackError(f"{path} is a symbolic link; a pack is written only as a file of its own")
    fd, tmp = tempfile.mkstemp(prefix=".pack-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pack_bytes(runs))
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # mkstemp's file is private; a pack reads like any committed file
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
