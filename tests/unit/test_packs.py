"""Archived runs packed one file per campaign (fedcluster/report/packs.py): read exactly as their folders were,
each run checked against its own seal, and a pack is data only: a name that leaves its folder, or an edited
table, is refused or skipped, and unpacking writes nowhere else."""
import gzip
import json
import shutil

import pytest

from conftest import ROOT
from fedcluster.command.api import load_runs
from fedcluster.report.packs import PACK_NAME, PackError, pack_bytes, read_pack, relative_name, write_pack
from fedcluster.report.runs import discover
from test_archive_runs import archive_runs

CAMPAIGN = ROOT / "docs" / "results" / "fedsoft_runs" / "table3_synthetic"


@pytest.fixture
def packed(tmp_path):
    """One campaign twice: run folders (the old way), and a pack of the same runs."""
    folders, pack = tmp_path / "folders" / "c", tmp_path / "pack" / "c"
    for dest in (folders, pack):
        if (CAMPAIGN / PACK_NAME).exists():   # the committed campaign is packed: unpack it for the folder form
            assert archive_runs.main(["--unpack", str(CAMPAIGN), str(dest)]) == 0
        else:
            shutil.copytree(CAMPAIGN, dest)
    (pack / "seed=0" / "notes.txt").write_text("a user's note")
    assert archive_runs.main(["--pack-folders", str(pack)]) == 0
    left = sorted(p.relative_to(pack).as_posix() for p in pack.rglob("*") if p.is_file())
    # only the runs' sealed files are removed: the command Hydra recorded and a user's note stay where they were
    assert left == sorted([PACK_NAME, "seed=0/notes.txt"] + [f"seed={s}/.hydra/overrides.yaml" for s in range(3)])
    return folders, pack


def test_a_pack_reads_as_its_folders(packed):
    folders, pack = packed
    a, b = discover(folders), discover(pack)
    assert len(a.runs) == len(b.runs) == 3 and not a.skipped and not b.skipped
    for x, y in zip(a.runs, b.runs):
        assert (x.summary, x.flat, x.seed) == (y.summary, y.flat, y.seed)
        assert x.path.relative_to(folders) == y.path.relative_to(pack)
        assert x.files.read_bytes("metrics.csv") == y.files.read_bytes("metrics.csv")
    da, db = load_runs(folders), load_runs(pack)
    da["run_dir"] = da["run_dir"].str.replace(str(folders), "")
    db["run_dir"] = db["run_dir"].str.replace(str(pack), "")
    assert da.equals(db)


def test_the_same_runs_make_the_same_bytes(packed, tmp_path):
    _, pack = packed
    runs = read_pack(pack / PACK_NAME)
    write_pack(tmp_path / PACK_NAME, dict(reversed(list(runs.items()))))
    assert (tmp_path / PACK_NAME).read_bytes() == (pack / PACK_NAME).read_bytes() == pack_bytes(runs)


def test_an_edited_table_in_a_pack_is_not_reported(packed):
    _, pack = packed
    runs = read_pack(pack / PACK_NAME)
    name = sorted(runs)[0]
    runs[name]["metrics.csv"] = runs[name]["metrics.csv"].replace("0.", "9.", 1)
    write_pack(pack / PACK_NAME, runs)
    found = discover(pack)
    assert len(found.runs) == 2 and [s.path.name for s in found.skipped] == [name]
    assert "metrics.csv was changed" in found.skipped[0].reason


@pytest.mark.parametrize("name", ["../evil", "/abs/run", "a/../../b", "", "a\\b"])
def test_a_pack_naming_a_place_outside_its_folder_is_refused(tmp_path, name, capsys):
    body = json.dumps({"format": "fedcluster runs pack", "version": 1, "runs": {name: {"summary.json": "{}"}}})
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / PACK_NAME).write_bytes(gzip.compress(body.encode()))
    with pytest.raises(PackError, match="not a path inside"):
        read_pack(tmp_path / "c" / PACK_NAME)
    found = discover(tmp_path / "c")
    assert not found.runs and len(found.skipped) == 1
    before = sorted(p for p in tmp_path.rglob("*"))
    assert archive_runs.main(["--unpack", str(tmp_path / "c"), str(tmp_path / "out")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert sorted(p for p in tmp_path.rglob("*")) == before   # nothing written anywhere


def test_file_names_inside_a_run_folder():
    assert relative_name("metrics.csv") and relative_name(".hydra/overrides.yaml")
    assert not any(relative_name(n) for n in ("../x", "/x", "a//b", "./x", "a/", "x\x00", 3))


def test_a_damaged_pack_is_one_skipped_entry(tmp_path):
    (tmp_path / PACK_NAME).write_bytes(b"not gzip")
    found = discover(tmp_path)
    assert not found.runs and [s.path.name for s in found.skipped] == [PACK_NAME]
    assert "not a readable runs pack" in found.skipped[0].reason


def _nested_pack(tmp_path):
    """The campaign's pack with its runs one folder down (sweep/seed=N), as a sweep with subfolders has them."""
    runs = read_pack(CAMPAIGN / PACK_NAME)
    (tmp_path / "c").mkdir()
    write_pack(tmp_path / "c" / PACK_NAME, {f"sweep/{name}": files for name, files in runs.items()})
    return tmp_path / "c"


@pytest.mark.parametrize("when", ["before", "between runs", "while a run is written"])
def test_unpacking_never_writes_through_a_link_planted_on_the_way(tmp_path, capsys, monkeypatch, when):
    pack, out, elsewhere = _nested_pack(tmp_path), tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    def swap():
        (out / "sweep").rename(tmp_path / "moved")
        (out / "sweep").symlink_to(elsewhere)
    if when == "before":
        (out / "sweep").symlink_to(elsewhere)
    elif when == "while a run is written":   # after the first run's first file: its folder is held, not its path
        real_write, calls = archive_runs.fsops.write_new, []

        def write_then_swap(fd, name, data):
            real_write(fd, name, data)
            calls.append(name)
            if len(calls) == 1:
                swap()
        monkeypatch.setattr(archive_runs.fsops, "write_new", write_then_swap)
    else:   # the first run is written, then the folder it went into is swapped for a link
        real = archive_runs._write_run_folder
        written = []

        def plant_after_first(parent, leaf, entry):
            real(parent, leaf, entry)
            written.append(leaf)
            if len(written) == 1:
                swap()
        monkeypatch.setattr(archive_runs, "_write_run_folder", plant_after_first)
    assert archive_runs.main(["--unpack", str(pack), str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "on the way" in err[0]
    assert list(elsewhere.iterdir()) == []   # nothing written through the link
    if when != "before":   # the run written before the swap is whole where it was written
        assert discover(tmp_path / "moved").runs and not discover(tmp_path / "moved").skipped


def test_unpacking_replaces_nothing_already_there(tmp_path, capsys):
    pack, out = _nested_pack(tmp_path), tmp_path / "out"
    (out / "sweep" / "seed=1").mkdir(parents=True)   # an empty folder a plain rename would replace
    assert archive_runs.main(["--unpack", str(pack), str(out)]) == 2
    assert "already holds something else" in capsys.readouterr().err
    assert list((out / "sweep" / "seed=1").iterdir()) == []
    assert not [p for p in (out / "sweep").iterdir() if p.name.endswith(".tmp")]   # no temporary folder left
