"""scripts/archive_runs.py: finished runs are copied into a committed folder with their seals holding,
without checkpoints; the archive reads as the sweep did, a sweep finds its jobs there finished, and a
different run at an archived path is refused, nothing replaced."""
import importlib.util
import json
import shutil

from conftest import ROOT
from fedcluster.results.runs import discover
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
    assert not (dest / "algorithm=ifca,seed=2").exists()
    for name in cfgs:   # the result files only: no log, no figure, no checkpoint
        sealed = set(json.loads((sweep / name / "summary.json").read_text())["integrity"]["files"])
        assert {p.name for p in (dest / name).iterdir()} == {"config.yaml", "summary.json"} | sealed
        assert "metrics.csv" in sealed and {p.name for p in (sweep / name).iterdir()} > sealed | {"summary.json"}
    before, after = discover(sweep), discover(dest)
    assert [r.summary for r in after.runs] == [r.summary for r in before.runs] and not after.skipped
    for name in cfgs:
        assert (dest / name / "metrics.csv").read_bytes() == (sweep / name / "metrics.csv").read_bytes()
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]   # no temporary folder left

    # again: nothing copied; and the same config run into the archive is found finished, not redone
    assert archive_runs.main([str(sweep), str(dest)]) == 0
    out = capsys.readouterr().out
    assert "0 runs archived" in out and "2 already there" in out
    name = "algorithm=ifca,seed=0"
    summary = run(cfgs[name], dest / name)
    assert summary.get("already_complete") is True


def test_a_different_run_at_an_archived_path_is_refused_and_kept(small_cfg, tmp_path, capsys):
    sweep, other, dest = tmp_path / "sweep", tmp_path / "other", tmp_path / "archive"
    run(small_cfg("seed=0", algorithm="ifca"), sweep / "job")
    run(small_cfg("seed=1", algorithm="ifca"), other / "job")
    assert archive_runs.main([str(sweep), str(dest)]) == 0
    kept = (dest / "job" / "summary.json").read_bytes()
    capsys.readouterr()
    assert archive_runs.main([str(other), str(dest)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "already holds a different run" in err and "nothing replaced" in err
    assert (dest / "job" / "summary.json").read_bytes() == kept
    assert archive_runs.main([str(sweep), str(sweep / "inside")]) == 2   # an archive inside the sweep is refused
    assert "inside the sweep directory" in capsys.readouterr().err
