"""The run directory's last escape routes (issue 75): which files are a run's comes from what fedcluster
sealed, never from a file in the directory; a set-aside folder fedcluster did not make is never emptied
into or restored from; a file swapped for a link while the run trains is never written through.

Every test runs every file name a run writes, taken from a finished run of the same config (not typed)."""
import json
import os
from pathlib import Path

import pytest

from fedcluster.errors import ConfigError, RunFault, WriteFailed
from fedcluster.run_records import rundir
from fedcluster.runner import run

from conftest import SMALL, make_cfg
from test_run_safety import snapshot

CFG = SMALL + ["algorithm.selection_size=6", "plots=true"]
ASIDE = rundir.SET_ASIDE_DIR
MANIFEST = rundir.MANIFEST_FILE


@pytest.fixture(scope="module")
def written_names(tmp_path_factory):
    """The file names a finished run of CFG holds (its figures, tables, log, manifest, summary), and the
    checkpoint names it writes on the way (a finished run removes them)."""
    out = tmp_path_factory.mktemp("names") / "run"
    run(make_cfg(CFG), out)
    names = sorted(p.name for p in out.iterdir() if p.is_file())
    assert {"metrics.csv", "run.log", "summary.json", "config.yaml", MANIFEST} <= set(names)
    assert any(n.endswith(".png") for n in names)
    return names + [rundir.CHECKPOINT_FILE, rundir.PREVIOUS_CHECKPOINT_FILE]


@pytest.fixture
def finished(tmp_path):
    out = tmp_path / "run"
    run(make_cfg(CFG), out)
    (out / "notes.txt").write_text("the user's own notes")
    return out


# -- a set-aside folder fedcluster did not make ---------------------------------------------------------

@pytest.mark.parametrize("plant", ["empty", "a user's file", "a link", "part of a run"])
@pytest.mark.parametrize("new_run", ["diverges", "would finish"])
def test_a_replacement_never_uses_a_set_aside_folder_it_did_not_make(finished, plant, new_run, tmp_path):
    aside = finished / ASIDE
    if plant == "a link":
        (tmp_path / "elsewhere").mkdir()
        aside.symlink_to(tmp_path / "elsewhere")
    else:
        aside.mkdir()
        if plant == "a user's file":
            (aside / "draft.tex").write_text("mine")
        elif plant == "part of a run":
            (aside / "metrics.csv").write_text("round,acc\n0,1\n")
    before = snapshot(finished)
    extra = ["train.lr=1e12"] if new_run == "diverges" else ["seed=1"]
    with pytest.raises(ConfigError) as e:
        run(make_cfg(CFG + extra + ["overwrite=true"]), finished)
    message = str(e.value)
    assert "\n" not in message and ASIDE in message
    assert ("symbolic link" if plant == "a link" else "not a run fedcluster set aside") in message
    assert snapshot(finished) == before   # the finished run, the user's notes and the planted folder, as they were
    if plant != "a link":   # (a link among our names is refused whatever the command)
        assert run(make_cfg(CFG), finished).get("already_complete")


def test_a_failed_replacement_restores_the_old_run_byte_identical(finished):
    before = snapshot(finished)
    with pytest.raises(Exception, match="diverged"):
        run(make_cfg(CFG + ["train.lr=1e12", "overwrite=true"]), finished)
    assert snapshot(finished) == before   # every byte, mode and mtime; the set-aside folder gone again
    assert not os.path.lexists(finished / ASIDE)


def test_a_replacement_killed_midway_resumes_from_the_set_aside_it_made(finished, monkeypatch):
    """A replacement killed after it set the old run aside: the same overwrite command verifies that folder
    holds the old run, and a failure of the new try still brings that old run back whole."""
    old = {n: (finished / n).read_bytes() for n in ("config.yaml", "summary.json", "metrics.csv")}
    import fedcluster.runner as runner
    real = runner._write_run

    def killed(*args, **kwargs):
        raise KeyboardInterrupt   # a stop right after the old run was set aside
    monkeypatch.setattr(runner, "_write_run", killed)
    monkeypatch.setattr(runner, "restore_set_aside", lambda path: None)   # killed: nothing restored
    with pytest.raises(KeyboardInterrupt):
        run(make_cfg(CFG + ["train.lr=1e12", "overwrite=true"]), finished)
    assert {n: (finished / ASIDE / n).read_bytes() for n in old} == old
    monkeypatch.undo()
    assert runner._write_run is real
    with pytest.raises(Exception, match="diverged"):
        run(make_cfg(CFG + ["train.lr=1e12", "overwrite=true"]), finished)
    assert {n: (finished / n).read_bytes() for n in old} == old and not os.path.lexists(finished / ASIDE)
    assert (finished / "notes.txt").read_text() == "the user's own notes"
    assert run(make_cfg(CFG), finished).get("already_complete")


# -- a manifest written by someone else ---------------------------------------------------------------

def test_a_manifest_that_lists_a_users_file_is_refused_and_the_file_stays(finished, written_names):
    listed = json.loads((finished / MANIFEST).read_text())
    (finished / MANIFEST).write_text(json.dumps(listed + ["notes.txt"]))
    before = snapshot(finished)
    for extra in (["seed=1", "overwrite=true"], []):
        with pytest.raises(ConfigError) as e:
            run(make_cfg(CFG + extra), finished)
        assert MANIFEST in str(e.value) and "\n" not in str(e.value)
    assert snapshot(finished) == before


def test_overwrite_removes_exactly_the_files_the_run_sealed(finished, written_names):
    """The run's own files go (every name it wrote), the user's stay; with the manifest gone, the seal alone
    says which are the run's."""
    sealed = json.loads((finished / "summary.json").read_text())["integrity"]["own_files"]
    assert sealed == json.loads((finished / MANIFEST).read_text())
    assert set(sealed) | set(rundir.RUN_FILES) >= set(written_names)
    (finished / MANIFEST).unlink()
    run(make_cfg(SMALL + ["algorithm.selection_size=6", "plots=false", "seed=1", "overwrite=true"]), finished)
    left = {p.name for p in finished.iterdir()}
    assert "notes.txt" in left and not (set(sealed) & left)


def test_an_unsealed_manifest_makes_no_file_the_runs(tmp_path):
    """A run from before runs sealed their names (no `own_files`): its manifest is not taken as a list of the
    run's files, so a user's file it names is never removed."""
    out = tmp_path / "run"
    run(make_cfg(SMALL + ["algorithm.selection_size=6"]), out)
    summary = json.loads((out / "summary.json").read_text())
    del summary["integrity"]["own_files"]
    from fedcluster.run_records.integrity import summary_digest
    summary["integrity"]["summary_sha256"] = summary_digest(summary)
    (out / "summary.json").write_text(json.dumps(summary))
    (out / "notes.txt").write_text("mine")
    (out / MANIFEST).write_text(json.dumps(["notes.txt"]))
    run(make_cfg(SMALL + ["algorithm.selection_size=6", "seed=1", "overwrite=true"]), out)
    assert (out / "notes.txt").read_text() == "mine"


# -- a file swapped for a link while the run trains ---------------------------------------------------------

def test_no_file_swapped_for_a_link_mid_run_is_written_through(tmp_path, written_names, monkeypatch):
    """After the second round, every name the run writes is replaced by a link to a file outside the run
    directory (one name per run); the outside file never changes, and a run that cannot go on says so in
    one line naming the file."""
    import fedcluster.runner as runner
    real = runner.train_round
    for name in written_names:
        out, outside = tmp_path / f"run_{name}", tmp_path / f"outside_{name}"
        outside.write_bytes(b"not fedcluster's\n")

        def swapping(t, *args, out=out, outside=outside, name=name, **kwargs):
            if t == 2:
                target = out / name
                if os.path.lexists(target):
                    target.unlink()
                target.symlink_to(outside)
            return real(t, *args, **kwargs)
        monkeypatch.setattr(runner, "train_round", swapping)
        try:
            run(make_cfg(CFG + ["checkpoint_every=1"]), out)
        except RunFault as e:
            assert "\n" not in str(e) and name in str(e) and "link" in str(e), (name, str(e))
        assert outside.read_bytes() == b"not fedcluster's\n", name
    monkeypatch.setattr(runner, "train_round", real)


def test_a_folder_inside_the_run_swapped_for_a_link_is_not_written_into(tmp_path):
    from fedcluster.run_records.io import write_text
    out = tmp_path / "run"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (out / ".hydra").symlink_to(tmp_path / "elsewhere")
    with rundir.locked(out) as fd:
        from fedcluster.run_records import fsops
        fsops.hold(out, fd)
        rundir._OWNED[os.path.abspath(out)] = fd
        try:
            with pytest.raises(WriteFailed, match="link"):
                write_text(out / ".hydra" / "overrides.yaml", "- seed=1\n")
        finally:
            fsops.release(out)
            rundir._OWNED.pop(os.path.abspath(out))
    assert list((tmp_path / "elsewhere").iterdir()) == []
