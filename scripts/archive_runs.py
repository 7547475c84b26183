"""Keep the finished runs of a sweep directory in a pack committed with the code, and write them back out.

Why: run folders live outside the repository (/work/runs, outputs/) and a working session's machine
can be replaced between sessions, taking them along. A long sweep (the leaderboard: ~50 run-hours on
this CPU) only adds up across sessions if what has finished is kept in git. This keeps each finished
run's result files, not its checkpoints or logs:

- config.yaml, summary.json and every table sealed in summary.json's `integrity` (metrics.csv,
  assignments.csv, cluster_sizes.csv, ...), plus `.hydra/overrides.yaml` where present (the command);
- in one file per archive folder, DEST/runs.pack.json.gz (fedcluster/report/packs.py), each run under its
  path relative to the sweep, so `fedcluster-report DEST`, `fedcluster-report leaderboard DEST` and
  `fedcluster.load_runs(DEST)` read the pack as they read the sweep's folders;
- each run is checked against its seal as it is read for the pack, and the pack is written to a temporary
  file and renamed over the old one, so an interrupted archive leaves the pack as it was.

A run already in the pack with the same summary.json is passed by; a different run at that path is an
error, and nothing is replaced. Unfinished, diverged and damaged runs are left out and counted.

  python scripts/archive_runs.py SWEEP_DIR DEST            add SWEEP_DIR's finished runs to DEST's pack
  python scripts/archive_runs.py --unpack DEST SWEEP_DIR   DEST's packed runs back as run folders under SWEEP_DIR
                                                           (a sweep pointed there skips them: "already holds
                                                           this config's finished run")
  python scripts/archive_runs.py --pack-folders DEST       move run folders kept in DEST the old way into its pack
"""
import argparse
import json
import os
import secrets
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fedcluster.run_records import fsops  # noqa: E402
from fedcluster.run_records.integrity import sealed_problem  # noqa: E402
from fedcluster.run_records.rundir import plain_name  # noqa: E402
from fedcluster.run_records.run_files import PackedFiles  # noqa: E402
from fedcluster.report.packs import PACK_NAME, PackError, read_pack, relative_name, write_pack  # noqa: E402
from fedcluster.report.runs import CONFIG_FILE, SUMMARY_FILE, discover  # noqa: E402

OVERRIDES = ".hydra/overrides.yaml"


class ArchiveError(Exception):
    """A condition that stops the archive (one line for the user, exit status 2)."""


def kept_files(run_path: Path, summary: dict) -> list:
    """The files of a finished run that the archive keeps, relative to the run's folder."""
    sealed = sorted((summary.get("integrity") or {}).get("files") or {})
    bad = [n for n in sealed if not plain_name(n)]
    if bad:   # a seal is data from the run's folder: it names files inside that folder, nothing else
        raise ArchiveError(f"{run_path}: its summary.json seals {bad[0]!r}, which is not a file name inside the run's "
                           "folder; nothing archived")
    names = [CONFIG_FILE, SUMMARY_FILE] + sealed
    if (run_path / OVERRIDES).is_file():
        names.append(OVERRIDES)
    links = [n for n in names if (run_path / n).is_symlink() or (run_path / n).parent.is_symlink()]
    if links:
        raise ArchiveError(f"{run_path}: {links[0]} is a symbolic link; the archive copies only the run's own files, "
                           "never what a link points to; nothing archived")
    return names


def packed_entry(run_path: Path, summary: dict) -> dict:
    """{name: text} of the run's kept files, read once and checked against its seal as read."""
    try:
        entry = {name: (run_path / name).read_bytes().decode("utf-8") for name in kept_files(run_path, summary)}
    except (OSError, UnicodeDecodeError) as e:
        raise ArchiveError(f"{run_path}: a result file cannot be read as text ({type(e).__name__}); nothing archived") \
            from None
    problem = sealed_problem(PackedFiles(entry), summary)
    if problem is not None:
        raise ArchiveError(f"{run_path}: the files read do not match its seal ({problem}); nothing archived")
    return entry


def _dest_folder(dest: Path) -> None:
    if os.path.lexists(dest) and (dest.is_symlink() or not dest.is_dir()):
        raise ArchiveError(f"archive {dest} is {'a symbolic link' if dest.is_symlink() else 'an existing file'}, not a "
                           "folder; allowed: a folder (created where missing)")


def _read(dest: Path) -> dict:
    pack = dest / PACK_NAME
    if not os.path.lexists(pack):
        return {}
    if pack.is_symlink() or not pack.is_file():
        raise ArchiveError(f"{pack} is not a file of its own (a link or a folder); nothing archived")
    try:
        return read_pack(pack)
    except PackError as e:
        raise ArchiveError(f"{e}; nothing archived") from None


def archive(src: Path, dest: Path) -> dict:
    """Add every finished run under src to dest's pack; counts of what happened."""
    if not src.is_dir():
        raise ArchiveError(f"sweep directory {src} does not exist")
    _dest_folder(dest)
    if dest.resolve() == src.resolve() or src.resolve() in dest.resolve().parents:
        raise ArchiveError(f"archive {dest} lies inside the sweep directory {src}; choose a folder outside it")
    runs = _read(dest)
    found = discover(src)
    counts = {"archived": 0, "present": 0, "left out": len(found.skipped)}
    added = {}
    for run in found.runs:
        name = run.path.relative_to(src).as_posix()
        old = runs.get(name) or _folder_entry(dest / name)
        if old is not None:
            if old.get(SUMMARY_FILE) != (run.path / SUMMARY_FILE).read_bytes().decode("utf-8", "replace"):
                raise ArchiveError(f"{dest / name} already holds a different run than {run.path}; nothing replaced "
                                   "(remove it from the archive first if the new run is meant to replace it)")
            counts["present"] += 1
            continue
        added[name] = packed_entry(run.path, run.summary)
        counts["archived"] += 1
    if added:
        dest.mkdir(parents=True, exist_ok=True)
        write_pack(dest / PACK_NAME, {**runs, **added})
    return counts


def _folder_entry(path: Path):
    """A run kept in the archive folder the old way (a folder, before packs): {summary.json: text}, or None."""
    f = path / SUMMARY_FILE
    return {SUMMARY_FILE: f.read_bytes().decode("utf-8", "replace")} if f.is_file() and not f.is_symlink() else None


def unpack(dest: Path, out: Path) -> dict:
    """Write each run of dest's pack as a run folder under `out`: every file name and the seal checked first, then
    the run written whole into a new temporary folder and renamed into place without replacing anything. Every
    folder on the way is opened from the one before without following a link (run_records/fsops.py), so a link
    planted under `out` at any moment is refused, never written through; a folder there already holding the same
    run is passed by, anything else there is an error."""
    runs = _read(dest)
    if not runs:
        raise ArchiveError(f"{dest} holds no {PACK_NAME}; nothing unpacked")
    _dest_folder(out)
    counts = {"unpacked": 0, "present": 0}
    for name in sorted(runs):
        entry = runs[name]
        bad = [f for f in [name, *entry] if not relative_name(f)]
        if bad or SUMMARY_FILE not in entry:
            raise ArchiveError(f"{dest / PACK_NAME}: run {name!r} names {bad[0] if bad else 'no summary.json'!r}, not a "
                               "file inside its folder; nothing of it unpacked")
        summary = json.loads(entry[SUMMARY_FILE])
        problem = sealed_problem(PackedFiles(entry), summary)
        if problem is not None:
            raise ArchiveError(f"{dest / PACK_NAME}: run {name!r} does not match its seal ({problem}); not unpacked")
        *parents, leaf = name.split("/")
        try:
            with fsops.folder_below(out, parents) as parent:
                if _present(parent, leaf, entry, out / name):
                    counts["present"] += 1
                    continue
                _write_run_folder(parent, leaf, entry)
        except OSError as e:
            raise ArchiveError(f"{out / name}: {e.strerror or e} (a symbolic link or a file on the way?); the archive "
                               "writes only into folders of its own; nothing replaced") from None
        counts["unpacked"] += 1
    return counts


def _present(parent: int, leaf: str, entry: dict, shown: Path) -> bool:
    """True where `leaf` in the folder `parent` is a folder holding this very run (its summary.json); False where
    nothing is there; an error for anything else."""
    try:
        os.lstat(leaf, dir_fd=parent)
    except FileNotFoundError:
        return False
    try:
        fd = fsops.descend(parent, [leaf])
        try:
            have = fsops.read_below(fd, SUMMARY_FILE).decode("utf-8", "replace")
        finally:
            os.close(fd)
    except OSError:
        have = None
    if have != entry[SUMMARY_FILE]:
        raise ArchiveError(f"{shown} already holds something else than the packed run; nothing replaced")
    return True


def _write_run_folder(parent: int, leaf: str, entry: dict) -> None:
    """The run's files in a new temporary folder beside `leaf` (mode 0777 less the umask), renamed to `leaf` only
    where nothing has that name by then; the temporary folder removed on any failure."""
    tmp = f".{leaf[:40]}.{secrets.token_hex(4)}.tmp"
    os.mkdir(tmp, 0o777, dir_fd=parent)
    try:
        top = fsops.descend(parent, [tmp])
        try:
            for file, text in sorted(entry.items()):
                *folders, base = file.split("/")
                fd = fsops.descend(top, folders, create=True)
                try:
                    fsops.write_new(fd, base, text.encode("utf-8"))
                finally:
                    os.close(fd)
        finally:
            os.close(top)
        fsops.rename_no_replace(parent, tmp, leaf)
    except BaseException:
        try:
            shutil.rmtree(tmp, dir_fd=parent)
        except (OSError, TypeError):
            pass
        raise


def pack_folders(dest: Path) -> dict:
    """Move the run folders kept in `dest` the old way (one folder per run) into its pack: each run read and checked
    against its seal, the pack written, read back and compared, and only then the run's own files removed
    (`_remove_sealed`: what fedcluster sealed, never a file only the folder itself names) and the folders they leave
    empty."""
    _dest_folder(dest)
    runs = _read(dest)
    found = discover(dest)
    folders = [r for r in found.runs if not isinstance(r.files, PackedFiles)]   # what is not a finished, sealed run stays
    added = {}
    for run in folders:
        name = run.path.relative_to(dest).as_posix()
        if name in runs:
            raise ArchiveError(f"{run.path} is both a folder and a packed run; nothing packed")
        added[name] = packed_entry(run.path, run.summary)
    if not added:
        return {"packed": 0, "left": len(found.skipped)}
    write_pack(dest / PACK_NAME, {**runs, **added})
    if read_pack(dest / PACK_NAME) != {**runs, **added}:
        raise ArchiveError(f"{dest / PACK_NAME} does not read back as written; the folders are kept")
    for name, files in added.items():
        _remove_sealed(dest, name, json.loads(files[SUMMARY_FILE]))
    return {"packed": len(added), "left": len(found.skipped)}


def _remove_sealed(dest: Path, name: str, summary: dict) -> None:
    """Remove the files of the run folder dest/name that fedcluster sealed as the run's (config.yaml, summary.json,
    and the tables summary.json's `integrity` checksums: names inside the folder, checked by `kept_files`), each
    through folder descriptors opened without following a link; then the folders left empty, up to `dest`. Any
    other file there (.hydra/overrides.yaml, a user's note) stays, and so does its folder."""
    parts = name.split("/")
    sealed = [CONFIG_FILE, SUMMARY_FILE] + sorted((summary.get("integrity") or {}).get("files") or {})
    with fsops.folder_below(dest, parts, create=False) as fd:
        for file in sealed:
            os.unlink(file, dir_fd=fd)
    for depth in range(len(parts), 0, -1):
        with fsops.folder_below(dest, parts[:depth - 1], create=False) as fd:
            try:
                os.rmdir(parts[depth - 1], dir_fd=fd)
            except OSError:   # not empty (or not ours to remove): it and the folders above stay
                return


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src", type=Path, help="a sweep directory (or any folder of runs); with --unpack: the archive folder")
    p.add_argument("dest", type=Path, nargs="?", help="the archive folder (created where missing); with --unpack: "
                                                      "the sweep directory to write the runs into")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--unpack", action="store_true", help="write SRC's packed runs as run folders under DEST")
    mode.add_argument("--pack-folders", action="store_true", help="move SRC's run folders into its pack")
    a = p.parse_args(argv)
    if a.dest is None and not a.pack_folders:
        p.error("the archive folder (DEST) is required")
    try:
        if a.pack_folders:
            counts = pack_folders(a.src)
            print(f"archive_runs.py: {counts['packed']} run folders moved into {a.src / PACK_NAME}, {counts['left']} "
                  "not finished or not trusted (left as they are)")
        elif a.unpack:
            counts = unpack(a.src, a.dest)
            print(f"archive_runs.py: {counts['unpacked']} runs written under {a.dest}, {counts['present']} already there")
        else:
            counts = archive(a.src, a.dest)
            print(f"archive_runs.py: {counts['archived']} runs archived into {a.dest}, {counts['present']} already "
                  f"there, {counts['left out']} not finished or not trusted (left out)")
    except ArchiveError as e:
        print(f"archive_runs.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
