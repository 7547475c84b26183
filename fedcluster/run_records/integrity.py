"""Checksums that make damaged or edited results visible before they are used.

- A checkpoint file is a one-line header (magic, the payload's SHA-256, the config fingerprint,
  the round it resumes at) followed by the torch payload; `read_checkpoint` verifies the header
  and the checksum before unpickling anything, so a flipped byte, a truncated or empty file or
  another file under that name is `DamagedFile`, never a resume with changed state.
- A finished run's summary.json carries `integrity`: the config fingerprint and the SHA-256 of
  every table the run wrote. `finished_run_problem` says what no longer matches: a missing or
  edited config.yaml, a missing or edited metrics.csv (or other table)."""
import hashlib
import json
from pathlib import Path
from typing import Dict, Iterable, Optional

import yaml
from .yaml_safe import safe_load

from .identity import accepted_fingerprints, json_default
from .run_files import FolderFiles

MAGIC = b"fedcluster-checkpoint 1 "


class DamagedFile(Exception):
    """A result file fails its check; the message says how."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_regular_file(path: Path) -> bytes:
    """The bytes of `path`, which must be a regular file itself: a symlink, a named pipe (which would
    block a plain read forever), a device or a folder is DamagedFile, without opening it as a stream.
    Opened with O_NOFOLLOW | O_NONBLOCK and checked again on the open descriptor, so a file swapped for
    one of those between the check and the open is refused too."""
    import os
    import stat
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "a named pipe" if stat.S_ISFIFO(st.st_mode)
                else "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file")
        raise DamagedFile(f"is {kind}, not a file fedcluster wrote")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DamagedFile("is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def pack_checkpoint(payload: bytes, fingerprint: str, next_round: int) -> bytes:
    header = {"sha256": sha256_bytes(payload), "size": len(payload), "fingerprint": fingerprint,
              "next_round": int(next_round)}
    return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def read_checkpoint(path: Path):
    """(header, payload bytes) of a checkpoint file whose checksum holds; DamagedFile otherwise."""
    try:
        data = read_regular_file(Path(path))
    except OSError as e:
        raise DamagedFile(f"cannot be read ({e.strerror or e})") from None
    if not data:
        raise DamagedFile("is empty")
    if not data.startswith(MAGIC):
        raise DamagedFile("is not a fedcluster checkpoint (its header is missing)")
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC):end])
        size, digest = int(header["size"]), str(header["sha256"])
    except (ValueError, KeyError, TypeError):
        raise DamagedFile("has a damaged header") from None
    payload = data[end + 1:]
    if len(payload) != size:
        raise DamagedFile(f"is truncated or extended ({len(payload)} payload bytes, its header says {size})")
    if sha256_bytes(payload) != digest:
        raise DamagedFile("fails its checksum (the file was changed after it was written)")
    return header, payload


def file_checksums(out: Path, names: Iterable[str]) -> Dict[str, str]:
    return {name: sha256_file(out / name) for name in names if (out / name).is_file()}


def summary_digest(summary: dict) -> str:
    """SHA-256 of a summary's contents without the digest itself (sealed into `integrity`)."""
    seal = dict(summary.get("integrity") or {})
    seal.pop("summary_sha256", None)
    body = {**summary, "integrity": seal}
    return sha256_bytes(json.dumps(body, sort_keys=True, default=str).encode())


def seal_summary(summary: dict, out: Path, fingerprint: str, tables: Iterable[str]) -> dict:
    """The summary as JSON will hold it, sealed: `integrity` holds the config fingerprint, the
    checksums of the tables written, the names of the other files this run wrote (`own_files`: what
    overwrite and clean-up may remove; the manifest file only mirrors it), and the summary's own digest
    (of the JSON values, so reading the file back gives it), all checked by `finished_run_problem`."""
    from .rundir import written_here
    summary = {**summary, "integrity": {"config_fingerprint": fingerprint, "files": file_checksums(Path(out), tables),
                                        "own_files": written_here(out)}}
    plain = json.loads(json.dumps(summary, default=json_default))
    plain["integrity"]["summary_sha256"] = summary_digest(plain)
    return plain


def finished_run_problem(out: Path, summary: dict) -> Optional[str]:
    """Why the finished run in folder `out` can no longer be trusted as it stands (None: it can): `sealed_problem`
    over its files, and a manifest beside them that names other files than the seal."""
    from .rundir import manifest_problem
    out = Path(out)
    return sealed_problem(FolderFiles(out), summary, lambda: manifest_problem(out))


def sealed_problem(files, summary: dict, manifest_problem=None) -> Optional[str]:
    """Why a finished run whose files `files` holds (run_records/run_files.py: its folder, or a pack's entry) no
    longer matches its seal (None: it does). Summaries written before checksums existed are checked for
    config.yaml and metrics.csv only."""
    if not files.is_file("config.yaml"):
        return "its config.yaml is missing"
    seal = summary.get("integrity")
    if not isinstance(seal, dict):
        return None if files.is_file("metrics.csv") else "its metrics.csv is missing"
    try:
        config = safe_load(files.read_text("config.yaml")) or {}
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return "its config.yaml cannot be read"
    if "summary_sha256" in seal and summary_digest(summary) != seal["summary_sha256"]:
        return "its summary.json was changed after the run finished (checksum differs from the one sealed in it)"
    if not isinstance(config, dict) or seal.get("config_fingerprint") not in accepted_fingerprints(config):
        return "its config.yaml was changed after the run finished (its fingerprint differs from summary.json's)"
    listed = manifest_problem() if manifest_problem is not None else None
    if listed is not None:
        return listed
    for name, digest in (seal.get("files") or {}).items():
        if not files.is_file(name):
            return f"its {name} is missing"
        if files.sha256(name) != digest:
            return f"its {name} was changed after the run finished (checksum differs from summary.json's)"
    return None
