"""scripts/archive_runs.py: finished runs are kept in a committed pack with their seals holding, without
checkpoints; the pack reads as the sweep did, a sweep finds its jobs finished where the pack is unpacked, and a
different run at an archived path is refused, nothing replaced."""
import importlib.util
import json
import shutil

from conftest import ROOT
from fedcluster.report.packs import PACK_NAME, read_pack
from fedcluster.report.runs import discover
from fedcluster.runner import run

spec = importlib.util.spec_from_file_location("archive_runs", ROOT / "scripts" / "archive_runs.py")
archive_runs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(archive_runs)


def test_finished_runs_are_archived_sealed_and_a_sweep_finds_them_finished(small_cfg, tmp_path, capsys):
    sweep, dest = tmp_path / "sweep", tmp_path / "repo" / "runs"
    cfgs = {f"algorithm=ifca,seed={s}": small_cfg(f"seed={s}", algorithm="ifca") for s in (0, 1)}
    for name, cfg in cfgs.items():
        run(cfg, sweep / name)
    unfinished = sweep / "algorithm=ifca,seed=2"
    shutil.copytree(sweep / "algorithm=ifca,seed=1", unfinished)
    (unfinished / "summary.json").unlink()
    (unfinished / "checkpoint.pt").write_bytes(b"a checkpoint")

    assert archive_runs.main([str(sweep), str(dest)]) == 0
    assert "2 runs archived" in capsys.readouterr().out
    assert [p.name for p in dest.iterdir()] == [PACK_NAME]   # one file for the whole archive, no temporary left
    packed = read_pack(dest / PACK_NAME)
    assert sorted(packed) == sorted(cfgs)                      # the unfinished run is left out
    for name in cfgs:   # the result files only: no log, no figure, no checkpoint
        sealed = set(json.loads((sweep / name / "summary.json").read_text())["integrity"]["files"])
        assert set(packed[name]) == {"config.yaml", "summary.json"} | sealed
        assert "metrics.csv" in sealed and {p.name for p in (sweep / name).iterdir()} > sealed | {"summary.json"}
    before, after = discover(sweep), discover(dest)
    assert [r.summary for r in after.runs] == [r.summary for r in before.runs] and not after.skipped
    assert [r.path.relative_to(dest) for r in after.runs] == [r.path.relative_to(sweep) for r in before.runs]
    for name, r in zip(sorted(cfgs), after.runs):
        assert r.files.read_bytes("metrics.csv") == (sweep / name / "metrics.csv").read_bytes()

    # again: nothing copied; and the same config run into the unpacked archive is found finished, not redone
    assert archive_runs.main([str(sweep), str(dest)]) == 0
    out = capsys.readouterr().out
    assert "0 runs archived" in out and "2 already there" in out
    assert archive_runs.main(["--unpack", str(dest), str(tmp_path / "resumed")]) == 0
    assert "2 runs written" in capsys.readouterr().out
    name = "algorithm=ifca,seed=0"
    assert (tmp_path / "resumed" / name / "metrics.csv").read_bytes() == (sweep / name / "metrics.csv").read_bytes()
    summary = run(cfgs[name], tmp_path / "resumed" / name)
    assert summary.get("already_complete") is True


def test_a_different_run_at_an_archived_path_is_refused_and_kept(small_cfg, tmp_path, capsys):
    sweep, other, dest = tmp_path / "sweep", tmp_path / "other", tmp_path / "archive"
    run(small_cfg("seed=0", algorithm="ifca"), sweep / "job")
    run(small_cfg("seed=1", algorithm="ifca"), other / "job")
    assert archive_runs.main([str(sweep), str(dest)]) == 0
    kept = (dest / PACK_NAME).read_bytes()
    capsys.readouterr()
    assert archive_runs.main([str(other), str(dest)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "already holds a different run" in err and "nothing replaced" in err
    assert (dest / PACK_NAME).read_bytes() == kept
    assert archive_runs.main([str(sweep), str(sweep / "inside")]) == 2   # an archive inside the sweep is refused
    assert "inside the sweep directory" in capsys.readouterr().err


def test_a_run_records_the_code_revision_it_was_made_with(small_cfg, tmp_path):
    """summary.json's versions.revision is this checkout's commit (with '+changes' when tracked files
    differ), so runs gathered across sessions say which code made them; no git checkout: null."""
    import subprocess
    from fedcluster.run_records import provenance
    summary = run(small_cfg(algorithm="ifca"), tmp_path / "run")
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode:   # not a git checkout (an unpacked source tree): nothing to record
        assert summary["versions"]["revision"] is None
        return
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    assert summary["versions"]["revision"] == head.stdout.strip() + ("+changes" if dirty else "")
    provenance.source_revision.cache_clear()
    try:   # a copy of the package inside some other repository's virtual environment records none
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
                       cwd=tmp_path, check=True)
        copy = tmp_path / ".venv" / "site-packages" / "fedcluster"
        shutil.copytree(ROOT / "fedcluster", copy)
        spec = importlib.util.spec_from_file_location("provenance_copy", copy / "run_records" / "provenance.py")
        moved = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(moved)
        assert moved.source_revision() is None
    finally:
        provenance.source_revision.cache_clear()


def test_the_revision_is_read_when_the_run_starts_not_when_it_ends(small_cfg, tmp_path, monkeypatch):
    """A checkout moved on during a long run (a frozen worktree checked out anew while its run goes
    on, 2026-11-26) must not relabel the run: the revision is the one at the run's start."""
    from fedcluster.run_records import provenance
    from fedcluster import runner
    heads = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    now = {"head": next(heads)}

    def fake_git(*args, cwd):
        if args[0] == "rev-parse" and args[1] == "--show-toplevel":
            return str(provenance.PACKAGE_DIR.parent)
        return now["head"] if args[0] == "rev-parse" else ""
    monkeypatch.setattr(provenance, "_git", fake_git)
    real_build = runner.build

    def build_then_move_the_checkout(cfg, *inputs):
        built = real_build(cfg, *inputs)
        now["head"] = next(heads)
        return built
    monkeypatch.setattr(runner, "build", build_then_move_the_checkout)
    provenance.source_revision.cache_clear()
    try:
        summary = run(small_cfg(algorithm="ifca"), tmp_path / "run")
    finally:
        provenance.source_revision.cache_clear()
    assert summary["versions"]["revision"] == "aaaaaaaaaaaa"


def test_a_seal_naming_a_file_outside_the_run_archives_nothing_outside(small_cfg, tmp_path, capsys):
    """A run's summary.json is data from its folder: a seal listing '../../EVIL.csv' (digests recomputed,
    so the run passes its own checks) is refused in one line, and nothing is written outside DEST."""
    from fedcluster.run_records.integrity import sha256_file, summary_digest
    sweep, dest = tmp_path / "sweep", tmp_path / "a" / "b" / "dest"
    run(small_cfg(algorithm="ifca"), sweep / "job")
    (tmp_path / "EVIL.csv").write_text("x\n")
    path = sweep / "job" / "summary.json"
    summary = json.loads(path.read_text())
    summary["integrity"]["files"]["../../EVIL.csv"] = sha256_file(tmp_path / "EVIL.csv")
    summary["integrity"]["summary_sha256"] = summary_digest(summary)
    path.write_text(json.dumps(summary))
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    assert archive_runs.main([str(sweep), str(dest)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'../../EVIL.csv'" in err[0] and "nothing archived" in err[0]
    after = sorted(str(p) for p in tmp_path.rglob("*") if p != dest and p not in dest.parents and dest not in p.parents)
    assert after == before
    assert not (tmp_path / "a" / "EVIL.csv").exists() and not [p for p in dest.rglob("*") if p.is_file()]
