"""A run directory is a trust boundary: nothing fedcluster reads from it executes code, nothing is
written, appended or removed outside the directory it was given (whatever an override value, a symlink
or an archived file says), a user's own files are never removed, and a replacement is all or nothing."""
import io
import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import torch

from fedcluster.errors import ConfigError
from fedcluster.run_records.identity import config_fingerprint
from fedcluster.run_records.integrity import DamagedFile, pack_checkpoint, read_regular_file
from fedcluster.run_records.record import CHECKPOINT, PREVIOUS_CHECKPOINT
from fedcluster.runner import requested_config, run

from conftest import SMALL, make_cfg
from test_cli import _fedcluster
from test_run_safety import one_line_error, snapshot
from test_trust import _killed_run

CFG = SMALL + ["algorithm.selection_size=6"]


class Payload:
    """What a crafted checkpoint holds: an object whose unpickling runs a command."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def crafted_checkpoint(path: Path, marker: Path, fingerprint: str, next_round: int = 5) -> None:
    """A pickle that runs `touch marker` when loaded, under a self-consistent header (digest, size and
    fingerprint recomputed), as someone who can write the directory would make it."""
    buffer = io.BytesIO()
    torch.save({"fingerprint": fingerprint, "next_round": next_round, "boom": Payload(marker)}, buffer)
    path.write_bytes(pack_checkpoint(buffer.getvalue(), fingerprint, next_round))


@pytest.mark.parametrize("which", ["newest", "previous"])
def test_a_crafted_pickle_checkpoint_executes_nothing(tmp_path, monkeypatch, which, capfd):
    overrides = _killed_run(tmp_path, monkeypatch, "run")
    out, marker = tmp_path / "run", tmp_path / "PWNED"
    fingerprint = config_fingerprint(requested_config(make_cfg(overrides)))
    if which == "newest":
        crafted_checkpoint(out / CHECKPOINT, marker, fingerprint)
        crafted_checkpoint(out / PREVIOUS_CHECKPOINT, marker, fingerprint)
    else:   # checkpoint.pt garbage, the crafted one behind it
        (out / CHECKPOINT).write_bytes(b"garbage")
        crafted_checkpoint(out / PREVIOUS_CHECKPOINT, marker, fingerprint)
    before = snapshot(out)
    with pytest.raises(ConfigError) as e:
        run(make_cfg(overrides), out)
    assert not marker.exists()                       # nothing ran
    message = str(e.value)
    assert "\n" not in message and "cannot be loaded" in message and "no good checkpoint" in message
    assert snapshot(out) == before


def test_a_good_previous_checkpoint_resumes_past_a_crafted_newest_one(tmp_path, monkeypatch, capfd):
    overrides = _killed_run(tmp_path, monkeypatch, "run")
    out, marker = tmp_path / "run", tmp_path / "PWNED"
    crafted_checkpoint(out / CHECKPOINT, marker, config_fingerprint(requested_config(make_cfg(overrides))))
    capfd.readouterr()
    run(make_cfg(overrides), out)
    assert not marker.exists() and json.loads((out / "summary.json").read_text())["status"] == "complete"
    warning = [l for l in capfd.readouterr().err.splitlines() if "warning" in l]
    assert len(warning) == 1 and "cannot be loaded" in warning[0] and "after round 4" in warning[0]


def test_a_named_pipe_checkpoint_is_refused_without_hanging(tmp_path, monkeypatch):
    overrides = _killed_run(tmp_path, monkeypatch, "run")
    out = tmp_path / "run"
    for name in (CHECKPOINT, PREVIOUS_CHECKPOINT):
        (out / name).unlink()
        os.mkfifo(out / name)
    with pytest.raises(DamagedFile, match="named pipe"):
        read_regular_file(out / CHECKPOINT)
    args = [a for a in overrides] + [f"hydra.run.dir={out}"]
    proc = subprocess.run([_fedcluster(), "progress=false", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)   # a plain read of a FIFO would block here for ever
    line = one_line_error(proc, "is a named pipe", "no good checkpoint")
    assert str(out / CHECKPOINT) in line


def test_a_linked_checkpoint_is_not_followed(tmp_path, monkeypatch):
    overrides = _killed_run(tmp_path, monkeypatch, "run")
    out, outside = tmp_path / "run", tmp_path / "outside.pt"
    (out / CHECKPOINT).rename(outside)
    (out / CHECKPOINT).symlink_to(outside)
    with pytest.raises(ConfigError, match="symbolic link"):
        run(make_cfg(overrides), out)


# -- a user's files are theirs ------------------------------------------------------------------------

USER_FILES = {"my_analysis.csv": "a,b\n1,2\n", "figure_for_paper.pdf": "%PDF-1.4 mine", "seed_comparison.png": "png",
              "notes.txt": "mine"}


def add_user_files(out: Path) -> dict:
    for name, text in USER_FILES.items():
        (out / name).write_text(text)
    return {n: (out / n).read_text() for n in USER_FILES}


def test_overwrite_keeps_a_users_own_files(tmp_path):
    out = tmp_path / "run"
    run(make_cfg(CFG), out)
    mine = add_user_files(out)
    summary = run(make_cfg(CFG + ["seed=1", "overwrite=true"]), out)
    assert summary["seed"] == 1 and set(pd.read_csv(out / "metrics.csv")["seed"]) == {1}
    assert {n: (out / n).read_text() for n in USER_FILES} == mine
    assert not (out / ".fedcluster-replaced").exists()


def test_a_folder_of_a_users_files_is_no_run_to_replace(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    for name in ("measurements.csv", "plot.png", "paper.pdf"):
        (out / name).write_text(name)
    before = snapshot(out)
    for extra in ([], ["overwrite=true"]):
        with pytest.raises(ConfigError, match="holds no fedcluster run"):
            run(make_cfg(CFG + extra), out)
    assert snapshot(out) == before


def test_the_runs_own_figures_are_replaced_by_overwrite(tmp_path):
    """Figures a run wrote are its own (listed in its manifest): overwrite replaces them."""
    out = tmp_path / "run"
    run(make_cfg(SMALL + ["algorithm.selection_size=6", "plots=true"]), out)
    manifest = json.loads((out / ".fedcluster-files.json").read_text())
    assert manifest and all(not n.startswith(".") and "/" not in n for n in manifest)
    assert all((out / n).exists() for n in manifest)
    run(make_cfg(CFG + ["seed=1", "overwrite=true"]), out)   # plots=false: the old run's figures go too
    assert not any((out / n).exists() for n in manifest if n not in ("metrics.csv",))


def test_a_failed_replacement_leaves_the_old_run_whole(tmp_path):
    out = tmp_path / "run"
    run(make_cfg(CFG), out)
    mine = add_user_files(out)
    before = snapshot(out)
    with pytest.raises(Exception, match="diverged|exceeds|NaN|inf"):   # the new run diverges in round 1
        run(make_cfg(CFG + ["train.lr=1e6", "overwrite=true"]), out)
    assert snapshot(out) == before and {n: (out / n).read_text() for n in USER_FILES} == mine
    assert run(make_cfg(CFG), out).get("already_complete")


# -- nothing through a link --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["run.log", "tensorboard", "metrics.csv"])
def test_a_link_where_a_run_keeps_its_files_is_refused_and_nothing_outside_changes(tmp_path, name):
    out, outside = tmp_path / "run", tmp_path / "outside"
    run(make_cfg(CFG), out)
    outside.mkdir()
    (outside / "precious.txt").write_text("keep")
    target = outside if name == "tensorboard" else outside / "precious.txt"
    if (out / name).exists():
        (out / name).unlink()
    (out / name).symlink_to(target)
    before_outside, before = snapshot(outside), snapshot(out)
    for extra in (["overwrite=true"], ["seed=1", "overwrite=true"]):
        with pytest.raises(ConfigError) as e:
            run(make_cfg(CFG + extra), out)
        assert "symbolic link" in str(e.value) and name in str(e.value) and "\n" not in str(e.value)
    assert snapshot(outside) == before_outside and snapshot(out) == before


def test_a_killed_runs_linked_log_is_never_appended_to(tmp_path, monkeypatch):
    overrides = _killed_run(tmp_path, monkeypatch, "run")
    out, outside = tmp_path / "run", tmp_path / "outside.log"
    outside.write_text("theirs\n")
    (out / "run.log").unlink()
    (out / "run.log").symlink_to(outside)
    with pytest.raises(ConfigError, match="run.log -> "):
        run(make_cfg(overrides), out)
    assert outside.read_text() == "theirs\n"


# -- nothing escapes the sweep directory ---------------------------------------------------------------

def test_an_override_value_cannot_move_a_job_out_of_its_sweep(tmp_path):
    top = tmp_path / "top"
    sweep = top / "a" / "b" / "S"
    proc = subprocess.run([_fedcluster(), "-m", "dataset=digits", "model=mlp", "partition=random", "algorithm=fedavg",
                           "rounds=1", "progress=false", "plots=false", "partition.num_clients=4",
                           "dataset.root=../../../../ESCAPED,data", f"hydra.sweep.dir={sweep}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    every = [p for p in tmp_path.rglob("*")]
    assert all(sweep in p.parents or p in (sweep, *sweep.parents) for p in every), \
        [str(p) for p in every if sweep not in p.parents][:5]
    jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert len(jobs) == 2 and any("..%2F..%2F..%2F..%2FESCAPED" in j for j in jobs)
    assert all((sweep / j / "summary.json").exists() for j in jobs)


@pytest.mark.parametrize("name, expected", [("a=1,b=2", "a=1,b=2"), ("x=../../E", "x=..%2F..%2FE"), ("..", "%2E."),
                                            (".hidden", "%2Ehidden"), ("p=50%", "p=50%25"), ("", "default")])
def test_job_directory_names_are_one_component(name, expected):
    from fedcluster.config.store import sweep_job_dirname
    assert sweep_job_dirname(name) == expected


def test_an_over_long_job_name_keeps_its_head_a_digest_and_its_last_overrides():
    """Over NAME_MAX a name keeps its first bytes, a digest of the whole and its last whole overrides (seed=1
    after a long value stays readable); it is one component of NAME_MAX bytes at most, and two names that
    differ only in what was cut differ by their digest."""
    from fedcluster.config.store import NAME_MAX, sweep_job_dirname
    a = sweep_job_dirname("algorithm=ifca,dataset.root=" + "d/" * 150 + "a,seed=1")
    b = sweep_job_dirname("algorithm=ifca,dataset.root=" + "d/" * 150 + "b,seed=1")
    for name in (a, b):
        head, digest, tail = name.split("~")
        assert len(name.encode()) == NAME_MAX and "/" not in name and len(digest) == 12
        assert head.startswith("algorithm=ifca,dataset.root=d%2Fd%2F") and tail == "seed=1"
    assert a != b and a.split("~")[0] == b.split("~")[0]
    wide = sweep_job_dirname("x=" + "é" * 200 + ",seed=1")   # 2-byte characters: a cut never splits one
    assert len(wide.encode()) <= NAME_MAX and wide.startswith("x=éé") and wide.endswith("~seed=1")
    one = sweep_job_dirname("lr=" + "0" * 300)   # no comma near the end: the tail is the last bytes
    assert len(one.encode()) == NAME_MAX and one.endswith("~" + "0" * 64)
