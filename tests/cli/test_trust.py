"""Results you can trust (issue "Results you can trust"): ownership that cannot be defeated,
sealed checkpoints and finished runs, one-line refusals that leave nothing, stop signals and
write faults. Each test is one class of failure that issue lists, on the real command or `run`."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from fedcluster.run_records import rundir
from fedcluster import signals
from fedcluster.errors import ConfigError
from fedcluster.run_records.record import CHECKPOINT, PREVIOUS_CHECKPOINT, read_checkpoint_file
from fedcluster.runner import run

from cli_in_process import fedcluster_in_process
from conftest import SMALL, die_in_round, make_cfg
from test_cli import SMALL_CLI, _fedcluster

# the small CLI run without its figures: no test here reads one (tests/reports/test_figures.py and test_cli.py do), and
# drawing them is a third of a small run's time
QUIET = [*SMALL_CLI, "progress=false", "plots=false"]
from test_run_safety import one_line_error, snapshot

LONG = ["rounds=300", "checkpoint_every=0", "plots=false"]


def start(*args, cwd):
    return subprocess.Popen([_fedcluster(), *QUIET, *args], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, proc=None, timeout=120):
    deadline = time.time() + timeout
    while not path.exists():
        assert proc is None or proc.poll() is None, proc.stderr.read() if proc else ""
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def assert_resumes_to_an_uninterrupted_run(args, out: Path, tmp_path: Path) -> None:
    """The same command (args end with hydra.run.dir=out) finishes the run, and its metrics.csv
    is byte-identical to an uninterrupted run of the same config."""
    resumed = fedcluster_in_process([*QUIET, *args], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    reference = fedcluster_in_process([*QUIET, *args[:-1], f"hydra.run.dir={tmp_path / 'ref'}"], cwd=tmp_path)
    assert reference.returncode == 0
    assert (out / "metrics.csv").read_bytes() == (tmp_path / "ref" / "metrics.csv").read_bytes()


def lines(text: str):
    return [l for l in text.splitlines() if l.strip()]


def seeds_in(out: Path) -> dict:
    import yaml
    return {"config": yaml.safe_load((out / "config.yaml").read_text())["seed"],
            "summary": json.loads((out / "summary.json").read_text())["seed"],
            "metrics": sorted(pd.read_csv(out / "metrics.csv")["seed"].unique().tolist())}


# -- 1. Mixing: ownership ----------------------------------------------------------------------

def test_a_refused_process_never_removes_a_directory_another_holds(tmp_path):
    """The owner holds the lock on a still-empty directory (as between its claim and its first
    write): a second process is refused and leaves the directory, the same inode, in place."""
    out = tmp_path / "held"
    rundir.check_place(out)
    inode = out.stat().st_ino
    with rundir.locked(out):
        proc = fedcluster_in_process([*QUIET, f"hydra.run.dir={out}"], cwd=tmp_path)
        one_line_error(proc, "in use by another fedcluster process")
        assert out.is_dir() and out.stat().st_ino == inode and not any(out.iterdir())


def test_a_lock_on_a_directory_replaced_meanwhile_is_refused(tmp_path):
    """Opened, then removed and re-created by someone else before the lock was taken: the lock
    would be on the old, unlinked directory, so the claim is refused instead of writing there."""
    out = tmp_path / "d"
    out.mkdir()
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        out.rmdir()
        out.mkdir()
        assert not rundir._same_directory(out, fd)
    finally:
        os.close(fd)
    out.rmdir()
    with pytest.raises(ConfigError, match="in use"):
        with rundir.locked(out):
            pass


def test_paused_owner_keeps_its_directory_and_nothing_mixes(tmp_path):
    """The issue's forced case: the owner paused (SIGSTOP) while a second process with the same
    config and a third with seed=1 try the directory; then the owner goes on."""
    out = tmp_path / "run"
    owner = start(*LONG[:1], "rounds=40", "checkpoint_every=0", f"hydra.run.dir={out}", cwd=tmp_path)
    wait_for(out / "config.yaml", owner)
    owner.send_signal(signal.SIGSTOP)
    try:
        same = fedcluster_in_process([*QUIET, "rounds=40", "checkpoint_every=0",
                               f"hydra.run.dir={out}"], cwd=tmp_path)
        other = fedcluster_in_process([*QUIET, "rounds=40", "checkpoint_every=0",
                                "seed=1", f"hydra.run.dir={out}"], cwd=tmp_path)
    finally:
        owner.send_signal(signal.SIGCONT)
    one_line_error(same, "in use")
    one_line_error(other, "in use")
    assert owner.wait(timeout=300) == 0, owner.stderr.read()
    assert seeds_in(out) == {"config": 0, "summary": 0, "metrics": [0]}


@pytest.mark.parametrize("trial", [0, pytest.param(1, marks=pytest.mark.slow)])   # a second try at the race: slow
def test_processes_started_together_have_exactly_one_owner(tmp_path, trial):
    """Four processes of one config and two of another, started together on one directory:
    exactly one runs it; each other is refused in one line or finds the finished run; the
    directory holds one config's run, consistently."""
    out = tmp_path / "shared"
    configs = [[], [], [], [], ["seed=1"], ["seed=1"]]
    procs = [start("rounds=4", f"hydra.run.dir={out}", *extra, cwd=tmp_path) for extra in configs]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    wrote = [i for i, (rc, err) in enumerate(results) if rc == 0 and "wrote" in err]
    assert len(wrote) == 1, results
    for i, (rc, err) in enumerate(results):
        if i in wrote:
            continue
        assert "Traceback" not in err and len(lines(err)) == 1, err
        assert (rc == 2 and ("in use" in err or "different configuration" in err)) or \
               (rc == 0 and "already holds this config's finished run" in err), (rc, err)
    seed = 1 if configs[wrote[0]] else 0
    assert seeds_in(out) == {"config": seed, "summary": seed, "metrics": [seed]}


# -- 2. Silent change: sealed checkpoints and finished runs --------------------------------------

class Killed(Exception):
    pass


def _killed_run(tmp_path, monkeypatch, name, at_round=5):
    """A run stopped during round `at_round` with checkpoints after every round."""
    from fedcluster.algorithms import FedSoft
    overrides = SMALL + ["rounds=8", "algorithm.selection_size=6", "checkpoint_every=1"]
    undo = die_in_round(monkeypatch, FedSoft, at_round, Killed())
    with pytest.raises(Killed):
        run(make_cfg(overrides), tmp_path / name)
    undo()
    return overrides


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "run"
    run(make_cfg(SMALL + ["rounds=8", "algorithm.selection_size=6", "checkpoint_every=1"]), out)
    return pd.read_csv(out / "metrics.csv")


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage", "directory"])
def test_a_damaged_checkpoint_is_set_aside_and_the_previous_one_resumes(tmp_path, monkeypatch, uninterrupted,
                                                                        damage, capfd):
    overrides = _killed_run(tmp_path, monkeypatch, "run")
    out = tmp_path / "run"
    assert read_checkpoint_file(out / CHECKPOINT)["next_round"] == 5
    assert read_checkpoint_file(out / PREVIOUS_CHECKPOINT)["next_round"] == 4
    data = bytearray((out / CHECKPOINT).read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
    elif damage == "truncate":
        data = data[: len(data) // 3]
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(os.urandom(4096))
    if damage == "directory":   # a directory in its place: set aside too, and never removed by the run
        (out / CHECKPOINT).unlink()
        (out / CHECKPOINT).mkdir()
    else:
        (out / CHECKPOINT).write_bytes(bytes(data))
    capfd.readouterr()
    run(make_cfg(overrides), out)
    err = capfd.readouterr().err
    notice = [l for l in lines(err) if "warning" in l]
    assert len(notice) == 1 and "checkpoint.pt" in notice[0] and "after round 4" in notice[0], err
    pd.testing.assert_frame_equal(pd.read_csv(out / "metrics.csv"), uninterrupted)


def test_no_good_checkpoint_left_is_a_one_line_error_saying_what_to_do(tmp_path, monkeypatch):
    overrides = _killed_run(tmp_path, monkeypatch, "run")
    out = tmp_path / "run"
    for name in (CHECKPOINT, PREVIOUS_CHECKPOINT):
        data = bytearray((out / name).read_bytes())
        data[-10] ^= 0xFF
        (out / name).write_bytes(bytes(data))
    before = snapshot(out)
    with pytest.raises(ConfigError) as e:
        run(make_cfg(overrides), out)
    message = str(e.value)
    assert "\n" not in message and "fails its checksum" in message and "overwrite=true" in message
    assert snapshot(out) == before


def test_a_resumed_checkpoint_is_verified_by_the_command_too(tmp_path):
    """A flipped byte in the only checkpoint of a killed CLI run: one line, exit 2, nothing changed."""
    out = tmp_path / "run"
    args = ["rounds=200", "checkpoint_every=2", f"hydra.run.dir={out}"]
    proc = start(*args, cwd=tmp_path)
    wait_for(out / CHECKPOINT, proc)
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    for name in (CHECKPOINT, PREVIOUS_CHECKPOINT):
        if (out / name).exists():
            data = bytearray((out / name).read_bytes())
            data[len(data) // 2] ^= 0x10
            (out / name).write_bytes(bytes(data))
    before = snapshot(out)
    again = fedcluster_in_process([*QUIET, *args], cwd=tmp_path)
    one_line_error(again, "fails its checksum", "overwrite=true")
    assert snapshot(out) == before


@pytest.fixture
def finished(tmp_path):
    out = tmp_path / "done"
    run(make_cfg(SMALL + ["algorithm.selection_size=6"]), out)
    return out


@pytest.mark.parametrize("change, needle", [
    (lambda out: (out / "config.yaml").unlink(), "config.yaml is missing"),
    (lambda out: (out / "metrics.csv").unlink(), "metrics.csv is missing"),
    (lambda out: (out / "metrics.csv").write_text((out / "metrics.csv").read_text().replace(",0.", ",1.", 1)),
     "metrics.csv was changed"),
    (lambda out: (out / "summary.json").write_text((out / "summary.json").read_text()[:100]), "summary.json is damaged"),
    (lambda out: (out / "summary.json").write_text((out / "summary.json").read_text().replace('"seed": 0', '"seed": 5')),
     "summary.json was changed after the run finished"),
    (lambda out: (out / "summary.json").unlink(), "summary.json is missing"),
])
def test_a_finished_run_that_was_changed_is_refused_never_rerun(finished, change, needle):
    change(finished)
    before = snapshot(finished)
    with pytest.raises(ConfigError) as e:
        run(make_cfg(SMALL + ["algorithm.selection_size=6"]), finished)
    assert needle in str(e.value) and "\n" not in str(e.value) and "overwrite=true" in str(e.value)
    assert snapshot(finished) == before


def test_an_edited_config_of_a_finished_run_is_refused_under_either_config(finished):
    config = finished / "config.yaml"
    config.write_text(config.read_text().replace("seed: 0", "seed: 1"))
    with pytest.raises(ConfigError, match="seed: 1 -> 0"):       # the command it was run with
        run(make_cfg(SMALL + ["algorithm.selection_size=6"]), finished)
    with pytest.raises(ConfigError, match="config.yaml was changed after the run finished"):   # the edited one
        run(make_cfg(SMALL + ["algorithm.selection_size=6", "seed=1"]), finished)
    assert json.loads((finished / "summary.json").read_text())["seed"] == 0


def test_an_untouched_finished_run_is_recognised_and_its_seal_lists_its_tables(finished):
    summary = json.loads((finished / "summary.json").read_text())
    assert set(summary["integrity"]["files"]) >= {"metrics.csv", "assignments.csv"}
    again = run(make_cfg(SMALL + ["algorithm.selection_size=6", "progress=true"]), finished)   # a volatile key
    assert again.get("already_complete")



@pytest.mark.parametrize("args, needle", [
    (["model=lenet"], "does not fit"),                              # the model check in build()
    (["algorithm.selection_size=13"], "selection_size"),           # the algorithm's own setup check
    (["partition.num_clients=100000000"], "this run needs at least"),   # the memory estimate
])
def test_a_refused_overwrite_leaves_the_finished_run_as_it_was(finished, args, needle):
    """overwrite=true removes the old results only once every check before training has passed:
    a replacement refused by a later check (model, algorithm, memory) leaves the old run intact."""
    before = snapshot(finished)
    with pytest.raises(ConfigError, match=needle):
        run(make_cfg(SMALL + ["algorithm.selection_size=6", "overwrite=true", *args]), finished)
    assert snapshot(finished) == before
    assert run(make_cfg(SMALL + ["algorithm.selection_size=6"]), finished).get("already_complete")


def test_overwrite_replaces_a_finished_run_of_another_config(finished):
    summary = run(make_cfg(SMALL + ["algorithm.selection_size=6", "seed=1", "overwrite=true"]), finished)
    assert summary["seed"] == 1 and not summary.get("already_complete")
    assert set(pd.read_csv(finished / "metrics.csv")["seed"]) == {1}
    assert "seed: 1" in (finished / "config.yaml").read_text()

# -- 4 + 5. One line, exit 2, nothing left ---------------------------------------------------------

@pytest.mark.parametrize("args, needle", [
    (["train.lr=abc"], "train.lr=abc: wrong type for train.lr; allowed: a number"),
    (["partition.num_clients=1.5"], "partition.num_clients=1.5: wrong type"),
    (["rouns=3"], "rouns is not a setting (did you mean rounds?)"),
    (["+rouns=3"], "rouns (did you mean rounds?) is not a fedcluster setting"),
    (["+algorithm.trim=1"], "algorithm.trim"),
    (["algorithm=nope"], "algorithm=nope is unknown; allowed: cfl"),
    (["logger=[csv,nope]"], "logger=nope is unknown; allowed: csv, mlflow"),
    (["+preset=nope"], "preset=nope is unknown; allowed: cam/fmnist/table1, cam/fmnist/table2, cam/protocol, cam/table1"),
    (["model.hidden=abc"], "model.hidden is not a setting"),
    (["model=mlp", "model.hidden=10"], "model.hidden=10: Invalid value assigned: int is not a ListConfig"),   # a list setting
    (["train=3"], "train is a group of settings"),
    (["hydra.run.dir=my", "dir"], "cannot read the argument 'dir'"),
    (["engine=fast"], "engine='fast' is unknown"),
])
def test_composition_errors_are_one_line_and_leave_nothing(tmp_path, args, needle):
    out = tmp_path / "X" / "a" / "b" / "c"
    proc = fedcluster_in_process([*QUIET, f"hydra.run.dir={out}", *args], cwd=tmp_path)
    one_line_error(proc, needle)
    assert not (tmp_path / "X").exists() and not (tmp_path / "outputs").exists()



@pytest.mark.parametrize("args, needle", [
    (["rouns=2,3"], "all 2 jobs of the sweep were refused, nothing was written: rouns is not a setting (did you "
                    "mean rounds?)"),                                                   # every job's composition error
    (["rounds=range(-1,1)"], "all 2 jobs of the sweep were refused, nothing was written: rounds=-1 is out of range"),
    (["seed=0,1", "train.lr=-1"], "all 2 jobs of the sweep were refused, nothing was written: train.lr=-1.0 is out "
                                  "of range; allowed: > 0"),   # one reason, said once
])
def test_a_refused_sweep_is_one_line_and_leaves_nothing(tmp_path, args, needle):
    """A sweep whose every job is refused (a bad value, a config that cannot be composed) leaves no
    sweep directory (Hydra's multirun.yaml included) and no parent it created."""
    sweep = tmp_path / "X" / "a" / "b" / "c"
    proc = fedcluster_in_process(["-m", *QUIET, *args, f"hydra.sweep.dir={sweep}"], cwd=tmp_path)
    one_line_error(proc, needle)
    assert not (tmp_path / "X").exists() and not (tmp_path / "outputs").exists()


def test_a_preset_whose_every_job_is_refused_leaves_nothing_in_its_default_directory(tmp_path):
    proc = fedcluster_in_process(["+preset=fedsoft/table1_synthetic", "train.lr=-1"], cwd=tmp_path)
    one_line_error(proc, "all 12 jobs of the sweep were refused", "train.lr=-1.0 is out of range")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("grid, refusal", [
    ("rounds=0,1", "rounds=0 is out of range"),                 # a bad value
    ("seed=1,abc", "seed=abc: wrong type for seed"),            # a job whose config cannot be composed
])
def test_a_sweep_with_a_refused_job_keeps_the_others_and_names_the_refusal(tmp_path, grid, refusal):
    sweep = tmp_path / "sweep"
    proc = fedcluster_in_process(["-m", *QUIET, "rounds=1", grid,
                           f"hydra.sweep.dir={sweep}"], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("fedcluster: error:")]
    assert len(errors) == 1 and refusal in errors[0], proc.stderr
    closing = proc.stderr.strip().splitlines()[-1]
    assert closing == (f"fedcluster: sweep {sweep}: 1 finished, 0 skipped (already finished), 1 failed; "
                       f"the table: fedcluster-report {sweep}")
    assert [json.loads(p.read_text())["rounds"] for p in sweep.glob("*/summary.json")] == [1]
    assert {p.name for p in sweep.iterdir()} == {"multirun.yaml", next(sweep.glob("*/summary.json")).parent.name}


def test_an_empty_sweep_directory_is_named_as_such(tmp_path):
    proc = fedcluster_in_process(["-m", *SMALL_CLI, "seed=0,1", "hydra.sweep.dir="], cwd=tmp_path)
    one_line_error(proc, "output directory is empty (hydra.sweep.dir='')")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, needle", [
    (["--rounds=3"], "--rounds=3 is not an option of fedcluster; settings are key=value arguments (rounds=3)"),
    (["-x"], "-x is not an option of fedcluster"),
    (["-m", "--cfg", "job", "seed=0,1"], "Only one of --run, --multirun, --cfg"),
])
def test_unknown_or_clashing_flags_are_one_line(tmp_path, args, needle):
    proc = fedcluster_in_process([*args], cwd=tmp_path)
    one_line_error(proc, needle)
    assert list(tmp_path.iterdir()) == []

def test_hydra_full_error_still_gives_the_full_trace(tmp_path):
    proc = subprocess.run([_fedcluster(), "train.lr=abc", f"hydra.run.dir={tmp_path / 'r'}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HYDRA_FULL_ERROR": "1"})
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_an_empty_run_directory_is_refused(tmp_path):
    proc = fedcluster_in_process([*QUIET, "hydra.run.dir="], cwd=tmp_path)
    one_line_error(proc, "output directory is empty")
    assert list(tmp_path.iterdir()) == []


def test_every_option_and_preset_declares_all_its_keys():
    from fedcluster.config.composition import undeclared_keys
    from conftest import CONF
    for group in ("dataset", "partition", "model", "algorithm", "hardware"):
        for f in sorted((CONF / group).glob("*.yaml")):
            assert undeclared_keys(make_cfg([f"{group}={f.stem}"])) == [], f
    for f in sorted((CONF / "preset").rglob("*.yaml")):
        preset = str(f.relative_to(CONF / "preset"))[:-5]
        assert undeclared_keys(make_cfg([f"+preset={preset}"])) == [], preset
    assert undeclared_keys(make_cfg(["+rouns=3", "+train.lrr=1"])) == ["rouns (did you mean rounds?)",
                                                                         "train.lrr (did you mean lr?)"]


def test_a_refusal_after_the_directory_exists_removes_only_what_it_created(tmp_path, monkeypatch):
    """A check that can only run once the data is built (here: a forced failure while building)
    removes the run directory and the parents this process created, and nothing else."""
    import fedcluster.runner as runner_module
    (tmp_path / "X").mkdir()

    def fails(cfg, *inputs):
        raise ConfigError("dataset: forced failure while building")
    monkeypatch.setattr(runner_module, "build", fails)
    with pytest.raises(ConfigError, match="forced failure"):
        run(make_cfg(SMALL), tmp_path / "X" / "a" / "b" / "c")
    assert (tmp_path / "X").is_dir() and list((tmp_path / "X").iterdir()) == []


# -- 5. Stop signals ------------------------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM,   # SIGUSR1 (SLURM's pre-emption notice) takes the same path: slow, to keep CI under 15 min
                                 pytest.param(signal.SIGUSR1, marks=pytest.mark.slow)])
def test_scheduler_signals_stop_like_ctrl_c_and_the_same_command_resumes(tmp_path, sig):
    out = tmp_path / "run"
    args = ["rounds=40", "checkpoint_every=2", "plots=false", f"hydra.run.dir={out}"]
    proc = start(*args, cwd=tmp_path)
    wait_for(out / CHECKPOINT, proc)
    proc.send_signal(sig)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 128 + sig, err
    found = lines(err)
    assert len(found) == 1 and f"interrupted by {signal.Signals(sig).name} after" in found[0] \
        and "resumes from the checkpoint after round" in found[0], err
    assert_resumes_to_an_uninterrupted_run(args, out, tmp_path)


@pytest.fixture
def stop_signals():
    """The stop signals as in a process started from a shell (Ctrl-C raises, the others end it), so
    `signals.install()` takes them all, whatever the test runner set (pytest-xdist's workers start
    with SIGINT ignored); afterwards the runner's own handlers come back and nothing stays noted."""
    before = {s: signal.getsignal(s) for s in signals.STOP_SIGNALS}
    for s in signals.STOP_SIGNALS:
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        signals._pending.clear()


def test_a_stop_during_a_write_waits_for_the_write(tmp_path, stop_signals):
    """signals.deferred holds a stop until the block ends, then raises it."""
    signals.install()
    done = []
    with pytest.raises(signals.Stopped) as e:
        with signals.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            done.append("write finished")
    assert done == ["write finished"] and e.value.signum == signal.SIGTERM
    assert signals.exit_code(e.value) == 143



def test_a_stop_while_a_run_is_prepared_ends_the_preparation(tmp_path, stop_signals, monkeypatch):
    """A stop signal that lands while the data set is read (a large preset's first job builds 200 clients before
    its first round) ends the run at the next stage of its preparation, not after the preparation is done."""
    import fedcluster.assemble as assemble
    signals.install()
    stages = []
    real_build_data = assemble.build_data

    def reading(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)   # lands while the data is drawn
        data = real_build_data(*args, **kwargs)
        stages.append("data drawn")
        return data
    monkeypatch.setattr(assemble, "build_data", reading)
    monkeypatch.setattr(assemble, "build_optimizer", lambda *a, **k: stages.append("optimizer") or None)
    with pytest.raises(signals.Stopped) as e:
        assemble.build(make_cfg(SMALL + ["algorithm.selection_size=6"]))
    assert e.value.signum == signal.SIGTERM and stages == ["data drawn"]   # stopped before the model and optimizer


def test_a_stop_waits_for_a_safe_point_never_inside_a_transformed_step(stop_signals):
    """A stop arriving inside a torch.func transform (the batched engine's vmap(grad)) is noted and
    raised at the next safe point (`signals.check`, at every step): raised where it lands it can
    leave torch's transform stack corrupted (a flaky "dynamicLayerStack.empty() INTERNAL ASSERT
    FAILED" in place of the stop), or abort torch's import."""
    import torch
    from torch.func import grad, vmap
    signals.install()
    finished = []

    def loss(p, x):
        os.kill(os.getpid(), signal.SIGUSR1)   # the handler runs at the next bytecode, inside vmap
        out = (p * x).sum()
        finished.append(True)
        return out

    vmap(grad(loss))(torch.ones(3, 2), torch.ones(3, 2))
    assert finished == [True]
    with pytest.raises(signals.Stopped) as e:
        signals.check()
    assert e.value.signum == signal.SIGUSR1
    signals.check()   # raised once
    assert vmap(grad(lambda p: (2 * p).sum()))(torch.ones(2, 2)).tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_a_second_stop_while_one_waits_stops_at_once(stop_signals):
    signals.install()
    os.kill(os.getpid(), signal.SIGTERM)
    sum(range(1000))   # noted, not raised
    with pytest.raises(signals.Stopped) as e:
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(1000))
    assert e.value.signum == signal.SIGINT
    signals.check()   # nothing left noted


def test_a_launchers_own_handler_in_a_job_waits_for_a_safe_point_too(stop_signals):
    """submitit's requeue handler (SIGUSR2 in a job's process, ending in sys.exit) is held like
    ours: it runs at the next safe point, not where the signal lands."""
    calls = []
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: calls.append(("handler", signum)))
    try:
        signals.hold_foreign()
        os.kill(os.getpid(), signal.SIGUSR2)
        sum(range(1000))   # bytecodes during which the handler would have run
        calls.append("step finished")
        signals.check()
        assert calls == ["step finished", ("handler", signal.SIGUSR2)]
    finally:
        signal.signal(signal.SIGUSR2, previous)


# -- 5. Write faults --------------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (needs the privilege to mount; skipped without it)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not privileged)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_read_only_directory_mid_run_is_one_line_and_the_run_resumes_after(tmp_path, monkeypatch, uninterrupted):
    """The file system turns read-only after the third checkpoint (every rename into the run
    directory then fails with EROFS, as on a remounted disk)."""
    import errno
    import fedcluster.run_records.fsops as fio   # every rename into a run directory (relative to its descriptor)
    from fedcluster.errors import RunFault
    out = tmp_path / "run"
    overrides = SMALL + ["rounds=8", "algorithm.selection_size=6", "checkpoint_every=1"]
    real_replace, calls = os.replace, []

    def replace(src, dst, *a, **kw):
        into_run = kw.get("dst_dir_fd") == fio.held_fd(out)
        if into_run and Path(dst).name == CHECKPOINT:
            calls.append(dst)
        if len(calls) > 3 and into_run:
            raise OSError(errno.EROFS, "Read-only file system", str(dst))
        return real_replace(src, dst, *a, **kw)
    monkeypatch.setattr(fio.os, "replace", replace)
    with pytest.raises(RunFault) as e:
        run(make_cfg(overrides), out)
    message = str(e.value)
    assert "\n" not in message and "cannot write" in message and "Read-only file system" in message \
        and "resumes from the checkpoint after round 3" in message, message
    monkeypatch.setattr(fio.os, "replace", real_replace)
    run(make_cfg(overrides), out)
    pd.testing.assert_frame_equal(pd.read_csv(out / "metrics.csv"), uninterrupted)


@pytest.mark.parametrize("error", ["cuda", "cpu"])
def test_out_of_memory_mid_run_is_one_line_and_the_run_resumes_after(tmp_path, monkeypatch, uninterrupted, error):
    """An allocation fails in round 4 (a shared GPU filled by other jobs: with 15 jobs at once on one H100, 16
    jobs crashed so in 545 s, 2026-11-26). The run stops with one line that says where it resumes, its checkpoint
    kept, and the same command then ends with the metrics of an uninterrupted run."""
    import torch
    import fedcluster.runner as runner
    from fedcluster.errors import RunFault
    out = tmp_path / "run"
    overrides = SMALL + ["rounds=8", "algorithm.selection_size=6", "checkpoint_every=1"]
    real, calls = runner.evaluate, []
    fault = (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 246.00 MiB. GPU 0 has a total capacity "
                                    "of 79.18 GiB of which 86.06 MiB is free.\nProcess 465 has 3.33 GiB in use")
             if error == "cuda" else
             RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: "
                          "you tried to allocate 7000000000 bytes. Error code 12 (Cannot allocate memory)"))

    def evaluate(*a, **kw):
        calls.append(1)
        if len(calls) == 4:
            raise fault
        return real(*a, **kw)
    monkeypatch.setattr(runner, "evaluate", evaluate)
    with pytest.raises(RunFault) as e:
        run(make_cfg(overrides), out)
    message = str(e.value)
    assert "\n" not in message and message.startswith("out of memory on cpu in round 4 (") \
        and "resumes from the checkpoint after round 3" in message, message
    assert ("CUDA out of memory. Tried to allocate 246.00 MiB" if error == "cuda" else "can't allocate memory") \
        in message
    assert (out / CHECKPOINT).exists() and not (out / "summary.json").exists()
    monkeypatch.setattr(runner, "evaluate", real)
    run(make_cfg(overrides), out)
    pd.testing.assert_frame_equal(pd.read_csv(out / "metrics.csv"), uninterrupted)


@pytest.mark.parametrize("failing", ["checkpoint", "metrics"])
def test_a_disk_that_fills_between_a_checkpoint_and_its_metrics_names_the_checkpoint_it_wrote(
        tmp_path, monkeypatch, uninterrupted, failing):
    """The disk fills after round 3's checkpoint is written but before the metrics beside it are (the reliability
    check's tmpfs hit this window, 2026-11-28): the one-line message names round 3's checkpoint, which the same
    command resumes from; when the checkpoint itself is what cannot be written, it names round 2's."""
    import errno
    import fedcluster.run_records.record as record
    from fedcluster.errors import RunFault
    out = tmp_path / "run"
    real = {"checkpoint": record.write_bytes, "metrics": record.write_csv}
    writes = []

    def full_after_three(kind):
        def write(path, *a, **kw):
            writes.append(kind)
            if writes.count(kind) == 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            return real[kind](path, *a, **kw)
        return write
    monkeypatch.setattr(record, "write_bytes" if failing == "checkpoint" else "write_csv", full_after_three(failing))
    with pytest.raises(RunFault) as e:
        run(make_cfg(SMALL + ["rounds=8", "algorithm.selection_size=6", "checkpoint_every=1"]), out)
    message = str(e.value)
    written = 2 if failing == "checkpoint" else 3
    assert "\n" not in message and "No space left on device" in message \
        and message.endswith(f"resumes from the checkpoint after round {written}"), message
    newest = out / CHECKPOINT if (out / CHECKPOINT).exists() else out / PREVIOUS_CHECKPOINT   # the renamed one
    assert read_checkpoint_file(newest)["next_round"] == written
    monkeypatch.undo()
    run(make_cfg(SMALL + ["rounds=8", "algorithm.selection_size=6", "checkpoint_every=1"]), out)
    pd.testing.assert_frame_equal(pd.read_csv(out / "metrics.csv"), uninterrupted)


def test_other_errors_mid_run_are_not_taken_for_out_of_memory(tmp_path, monkeypatch):
    import fedcluster.runner as runner

    def evaluate(*a, **kw):
        raise RuntimeError("shape mismatch: a bug, not a full device")
    monkeypatch.setattr(runner, "evaluate", evaluate)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        run(make_cfg(SMALL + ["rounds=2", "algorithm.selection_size=6"]), tmp_path / "run")


def test_a_full_disk_mid_run_is_one_line_and_the_run_resumes_after(tmp_path, small_disk):
    out = small_disk / "run"
    args = ["rounds=60", "checkpoint_every=2", "plots=false", f"hydra.run.dir={out}"]
    proc = start(*args, cwd=tmp_path)
    wait_for(out / CHECKPOINT, proc)
    subprocess.run(["dd", "if=/dev/zero", f"of={small_disk / 'filler'}", "bs=64k"], capture_output=True)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 1, err
    found = lines(err)
    reason = "No space left on device"
    assert len(found) == 1 and "cannot write" in found[0] and reason in found[0] \
        and "resumes from the checkpoint after round" in found[0], err
    (small_disk / "filler").unlink()
    assert_resumes_to_an_uninterrupted_run(args, out, tmp_path)


def test_a_run_whose_directory_is_moved_away_stops_instead_of_writing_elsewhere(tmp_path):
    out = tmp_path / "run"
    proc = start("rounds=150", "checkpoint_every=7", f"hydra.run.dir={out}", cwd=tmp_path)
    wait_for(out / CHECKPOINT, proc)
    out.rename(tmp_path / "moved")
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 1, err
    assert len(lines(err)) == 1 and "the run directory was moved, removed or replaced" in err, err
    assert not out.exists()   # nothing of the run was written under the old name


@pytest.mark.parametrize("args, needle", [
    (["~rounds"], "rounds is missing (deleted with ~rounds?)"),
    (["~train"], "train is missing"),
    (["~divergence_factor"], "divergence_factor is missing"),
    (["train.lr=${nope}"], "train.lr cannot be resolved"),
])
def test_deleted_settings_and_bad_interpolations_are_one_line(tmp_path, args, needle):
    proc = fedcluster_in_process([*QUIET, f"hydra.run.dir={tmp_path / 'r'}", *args], cwd=tmp_path)
    one_line_error(proc, needle)
    assert list(tmp_path.iterdir()) == []


def test_an_over_long_directory_name_is_one_line_and_leaves_no_parent(tmp_path):
    out = tmp_path / "ok" / ("x" * 300) / "r"
    proc = fedcluster_in_process([*QUIET, f"hydra.run.dir={out}"], cwd=tmp_path)
    one_line_error(proc, "File name too long")
    assert not (tmp_path / "ok").exists()


def test_the_report_skips_a_sealed_run_whose_files_changed(tmp_path):
    from fedcluster.report.runs import discover
    for name in ("a", "b"):
        run(make_cfg(SMALL + ["algorithm.selection_size=6", f"seed={0 if name == 'a' else 1}"]), tmp_path / name)
    (tmp_path / "b" / "config.yaml").unlink()
    found = discover(tmp_path)
    assert [r.path.name for r in found.runs] == ["a"]
    assert any(s.path.name == "b" and "config.yaml is missing" in s.reason for s in found.skipped)
