"""Runs never lose, overwrite or mix results (issue "Runs never lose, overwrite or mix
results"): each test is one of the failures that issue lists, on the real command or `run`."""
import hashlib
import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from fedcluster.errors import ConfigError, NonFiniteLossError
from fedcluster.run_records.divergence import DivergenceWatch
from fedcluster.runner import run

from conftest import SMALL, make_cfg
from cli_in_process import fedcluster_in_process
from test_cli import SMALL_CLI, _fedcluster


def snapshot(path: Path) -> dict:
    """{relative path: (sha256, mode, mtime_ns)} of every file below path."""
    return {str(f.relative_to(path)): (hashlib.sha256(f.read_bytes()).hexdigest(), f.stat().st_mode, f.stat().st_mtime_ns)
            for f in sorted(path.rglob("*")) if f.is_file()}


def cli(*args, cwd):
    """The small CLI run, in this process (cli_in_process.py): what the command says, writes and refuses; the tests
    whose point is a process of its own (a stop signal, two processes at once) start one."""
    return fedcluster_in_process([*SMALL_CLI, "progress=false", *args], cwd=cwd)


def one_line_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


# 1 + 3: a finished run is never replaced by another config, and a refused start writes nothing
def test_other_config_refused_and_directory_untouched(tmp_path):
    out = tmp_path / "run"
    assert cli(f"hydra.run.dir={out}", cwd=tmp_path).returncode == 0
    before = snapshot(out)
    proc = cli("seed=1", "rounds=3", f"hydra.run.dir={out}", cwd=tmp_path)
    line = one_line_error(proc, str(out), "different configuration", "seed: 0 -> 1", "rounds: 2 -> 3")
    assert snapshot(out) == before, line          # config.yaml, .hydra/overrides.yaml, results: byte-identical


# 8: the same config, finished: nothing redone; overwrite=true runs it again
def test_finished_run_is_not_redone_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    assert cli(f"hydra.run.dir={out}", cwd=tmp_path).returncode == 0
    before = snapshot(out)
    again = cli(f"hydra.run.dir={out}", "plots=false", cwd=tmp_path)   # plots does not change results
    assert again.returncode == 0 and "already holds this config's finished run" in again.stderr
    assert snapshot(out) == before
    redo = cli(f"hydra.run.dir={out}", "seed=4", "overwrite=true", cwd=tmp_path)
    assert redo.returncode == 0, redo.stderr
    assert json.loads((out / "summary.json").read_text())["seed"] == 4
    assert "seed: 4" in (out / "config.yaml").read_text()


# 2: two processes on one directory: the second fails at once; the default pattern never collides
def test_second_process_on_a_running_directory_fails_at_once(tmp_path):
    out = tmp_path / "run"
    first = subprocess.Popen([_fedcluster(), *SMALL_CLI, "progress=false", "rounds=400", "checkpoint_every=0",
                              f"hydra.run.dir={out}"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (out / "config.yaml").exists():   # written once the first process owns the directory
            assert first.poll() is None and time.time() < deadline, first.stderr.read() if first.poll() else "timeout"
            time.sleep(0.2)
        tick = time.time()
        second = cli("rounds=400", "checkpoint_every=0", f"hydra.run.dir={out}", cwd=tmp_path)
        one_line_error(second, str(out), "in use by another fedcluster process")
        assert time.time() - tick < 60
        assert first.poll() is None                 # the first run goes on
    finally:
        first.kill()
        first.wait()


def test_two_runs_started_together_get_two_directories(tmp_path):
    procs = [subprocess.Popen([_fedcluster(), *SMALL_CLI, "progress=false", "plots=false"], cwd=tmp_path,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    runs = list((tmp_path / "outputs" / "runs").iterdir())
    assert len(runs) == 2 and all((r / "summary.json").exists() for r in runs)


# 5: divergence is an error naming round, client and train.lr; partial results are marked
def test_divergence_is_an_error_not_a_result(tmp_path):
    out = tmp_path / "run"
    proc = cli("rounds=5", "train.lr=1e6", f"hydra.run.dir={out}", cwd=tmp_path)
    one_line_error(proc, "round 1", "client", "train.lr=1000000.0", "diverged")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "diverged" and "train.lr" in summary["error"]


def test_divergence_factor_compares_with_the_starting_loss(tmp_path):
    with pytest.raises(NonFiniteLossError, match=r"diverged at client \d+.*train.lr=10000.0"):
        run(make_cfg(SMALL + ["train.lr=1e4", "algorithm.selection_size=6"]), tmp_path / "a")
    # the same config with the check off trains to a (meaningless) finite result
    s = run(make_cfg(SMALL + ["train.lr=1e4", "algorithm.selection_size=6", "divergence_factor=null"]), tmp_path / "b")
    assert s["status"] == "complete"


def test_clients_the_starting_models_already_fit_do_not_make_healthy_training_look_diverged():
    """Three of five clients' first batches fit almost exactly (a saturated softmax), two not: the starting loss is
    their mean (0.4), not the median (1.3e-05), so a client ending at 52 trains on; one at 1e5 has diverged."""
    first = torch.tensor([1.3e-5, 1.2e-5, 1.4e-5, 1.0, 1.0])
    result = SimpleNamespace(finite=torch.ones(5, dtype=torch.bool), params={}, first_loss=first,
                             last_loss=torch.tensor([52.0, 0.1, 0.1, 0.5, 0.5]))
    watch = DivergenceWatch(1e4, lr=1e-3)
    watch.check(0, torch.arange(5), result)
    assert watch.reference == pytest.approx(float(first.mean()))
    result.last_loss = torch.tensor([0.1, 0.1, 0.1, 1e5, 0.5])
    with pytest.raises(NonFiniteLossError, match=r"^round 2: training diverged at client 3: loss 1e\+05"):
        watch.check(1, torch.arange(5), result)


# 6: bad values are refused before anything is written
BAD_VALUES = [
    ("train.lr=nan", "train.lr=nan is not a finite number"), ("train.lr=inf", "train.lr=inf is not a finite"),
    ("train.lr=-0.1", "train.lr=-0.1 is out of range"), ("train.lr=0", "train.lr=0.0 is out of range"),
    ("eval_every=0", "eval_every=0 is out of range"), ("eval_every=-1", "eval_every=-1"),
    ("checkpoint_every=-1", "checkpoint_every=-1"), ("rounds=0", "rounds=0"), ("seed=-3", "seed=-3"),
    ("train.momentum=1.5", "train.momentum=1.5"), ("train.batch_size=0", "train.batch_size=0"),
    ("partition.local_test_fraction=1.0", "partition.local_test_fraction=1.0"),
    ("dataset.theta_var=nan", "dataset.theta_var=nan"), ("partition.min_samples=50", "min_samples=50 exceeds"),
    ("algorithm.client_fraction=0", "client_fraction"), ("num_clusters=0", "num_clusters=0"),
]


@pytest.mark.parametrize("override,message", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_bad_values_refused_before_writing(tmp_path, override, message):
    algorithm = ["algorithm=fedavg"] if "client_fraction" in override else ["algorithm.selection_size=6"]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        run(make_cfg(SMALL + algorithm + [override]), tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("overrides,shape", [(["model=letters_cnn"], "(10,)"),
                                             (["model=lenet", "dataset=digits", "partition=random"], "(1, 8, 8)")])
def test_model_that_does_not_fit_the_data(tmp_path, overrides, shape):
    with pytest.raises(ConfigError, match=r"does not fit dataset=\w+'s inputs \(shape " + shape.replace("(", r"\(").replace(")", r"\)")):
        run(make_cfg(SMALL + ["algorithm.selection_size=6"] + overrides), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_too_many_clients_fail_fast_with_an_estimate(tmp_path, monkeypatch):
    import fedcluster.data.budget as budget
    monkeypatch.setattr(budget, "available_bytes", lambda device: 16 * budget.GiB)   # any machine: the same limit
    tick = time.time()
    with pytest.raises(ConfigError, match=r"partition.num_clients=10000000: this run needs at least 69.1 GiB.*16.0 GiB is available"):
        run(make_cfg(SMALL + ["algorithm.selection_size=6", "partition.num_clients=10000000"]), tmp_path / "run")
    assert time.time() - tick < 30
    assert not (tmp_path / "run").exists()


def test_cli_bad_inputs_are_one_line_and_leave_no_directory(tmp_path):
    for args, needle in ((["eval_every=0"], "eval_every=0"), (["model=lenet", "dataset=digits"], "does not fit")):
        out = tmp_path / "run"
        one_line_error(cli(*args, f"hydra.run.dir={out}", cwd=tmp_path), needle)
        assert not out.exists()


# 7: one-line errors where a traceback used to be
def test_run_dir_that_is_a_file_or_cannot_be_created(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    one_line_error(cli(f"hydra.run.dir={afile}", cwd=tmp_path), "is an existing file")
    assert afile.read_text() == "mine"
    one_line_error(cli("hydra.run.dir=/proc/fedcluster_cannot_be_here", cwd=tmp_path), "cannot be created")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_run_dir_without_write_permission(tmp_path):
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        one_line_error(cli(f"hydra.run.dir={locked / 'run'}", cwd=tmp_path), "cannot be created")
    finally:
        locked.chmod(0o755)


def test_ctrl_c_is_one_line_and_the_same_command_resumes(tmp_path):
    out = tmp_path / "run"
    args = ["rounds=60", "checkpoint_every=2", "plots=false", f"hydra.run.dir={out}"]
    # SIGINT at its default in the child, as in a terminal: a test run started in the background of a
    # non-interactive shell ignores SIGINT, and a child would inherit that
    proc = subprocess.Popen([_fedcluster(), *SMALL_CLI, "progress=false", *args], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while not (out / "checkpoint.pt").exists():
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and "interrupted after" in lines[0] and f"hydra.run.dir={out}" in lines[0], err
    resumed = cli(*args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((out / "summary.json").read_text())["status"] == "complete"


# 8: housekeeping
def test_result_files_respect_the_umask_and_stale_temp_files_go(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".metrics.csv.x1y2.tmp").write_text("half a file")
    old = os.umask(0o022)
    try:
        run(make_cfg(SMALL + ["algorithm.selection_size=6", "plots=true"]), out)
    finally:
        os.umask(old)
    assert not list(out.glob(".*.tmp"))
    for f in out.iterdir():
        if f.is_file():
            assert stat.S_IMODE(f.stat().st_mode) == 0o644, f.name


def test_a_finished_runs_rerun_removes_stale_temp_files_and_changes_nothing_else(tmp_path):
    """A process killed mid-write after its run finished leaves a temp file; the re-run that finds the finished
    run (nothing redone) removes it under the lock, as a resumed run does (tests/reliability_check.sh's
    kill -9 case met this when the run ended before the kill)."""
    out = tmp_path / "run"
    cfg = make_cfg(SMALL + ["algorithm.selection_size=6"])
    run(cfg, out)
    before = snapshot(out)
    (out / ".metrics.csv.k1l2.tmp").write_text("half a file")
    summary = run(cfg, out)
    assert summary["already_complete"] and not list(out.glob(".*.tmp"))
    assert snapshot(out) == before


def test_multirun_rerun_skips_finished_jobs_and_ignores_volatile_keys(tmp_path):
    sweep = tmp_path / "sweep"
    first = subprocess.run([_fedcluster(), "-m", *SMALL_CLI, "algorithm=fedsoft", "seed=0,1", "plots=false",
                            f"hydra.sweep.dir={sweep}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    jobs = sorted(p.parent.name for p in sweep.rglob("summary.json"))
    assert len(jobs) == 2 and not any("plots" in j for j in jobs)
    before = {j: snapshot(sweep / j) for j in jobs}
    again = subprocess.run([_fedcluster(), "-m", *SMALL_CLI, "algorithm=fedsoft", "seed=0,1", "plots=true",
                            "checkpoint_every=1", f"hydra.sweep.dir={sweep}"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("already holds this config's finished run") == 2
    assert {j: snapshot(sweep / j) for j in jobs} == before


def test_a_sweeps_jobs_are_each_composed_once_when_launched(tmp_path, monkeypatch):
    """Hydra's sweeper composes every job before the first starts (for a paper preset, a minute) and the launcher
    again; here each job is composed once, as it starts, and finished before the next is composed."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    real = getattr(ConfigLoaderImpl.load_sweep_config, "__wrapped__", ConfigLoaderImpl.load_sweep_config)
    events = []

    def counting(self, master_config, sweep_overrides):
        events.append(("compose", tuple(o for o in sweep_overrides if o.startswith("seed="))))
        return real(self, master_config, sweep_overrides)
    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counting)
    import fedcluster.runner as runner
    real_run = runner.run

    def running(cfg, output_dir, *args, **kwargs):
        events.append(("ran", (f"seed={cfg.seed}",)))
        return real_run(cfg, output_dir, *args, **kwargs)
    monkeypatch.setattr(runner, "run", running)
    proc = fedcluster_in_process(["-m", *SMALL_CLI, "progress=false", "seed=0,1,2", "plots=false",
                                  f"hydra.sweep.dir={tmp_path / 'sweep'}"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert events == [(e, (f"seed={s}",)) for s in range(3) for e in ("compose", "ran")], events


# 9: metrics by true round numbers; tie-split sizes; best_center
def test_warmup_rounds_are_missing_in_ari_by_round(tmp_path):
    from fakedata import write_mnist_like
    root = tmp_path / "data"
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=400, n_test=100)
    cfg = make_cfg(["+preset=cam/table1", f"dataset.root={root}", "partition=cluster_nclass", "num_clusters=5",
                    "algorithm=ifca_cam", "partition.num_clients=10", "partition.min_samples=4", "rounds=4",
                    "algorithm.warmup_rounds=2", "train.steps=2", "eval_every=1", "progress=false", "checkpoint_every=0"])
    s = run(cfg, tmp_path / "run")
    assert len(s["ari_by_round"]) == 4
    assert s["ari_by_round"][:2] == [None, None] and None not in s["ari_by_round"][2:]
    assert s["ari"] == pytest.approx(s["ari_by_round"][-1], abs=1e-6)


def test_convergence_counts_true_rounds():
    from fedcluster.evaluation import convergence
    curve = [None] * 5 + [0.5] * 4 + [0.95] * 3          # 5 warm-up rounds without a clustering
    c = convergence(curve)
    assert c["first_round_ari_ge_0.9"] == 10               # the 10th round, not the 5th list entry
    assert c["ari_pct_of_final_by_round10"] == pytest.approx(100.0)
    assert convergence([None] * 10 + [1.0])["ari_pct_of_final_by_round10"] == 0.0


def test_cluster_sizes_split_ties():
    import torch
    from fedcluster.algorithms.base import Algorithm

    class Soft(Algorithm):
        def assignment_weights(self):
            return torch.tensor([[0.5, 0.5], [1.0, 0.0], [0.5, 0.5], [0.2, 0.8]])
    assert Soft().cluster_sizes().tolist() == [2.0, 2.0]   # argmax gave [3, 1]


def test_summary_best_center_is_argmin_per_distribution(tmp_path):
    s = run(make_cfg(SMALL + ["algorithm.selection_size=6"]), tmp_path / "run")
    frame = pd.read_csv(tmp_path / "run" / "metrics.csv")
    last = frame[(frame["round"] == s["rounds"] - 1) & (frame["model"] == "center") & (frame["metric"] == "mse")]
    for d in s["distributions"]:
        rows = last[last["eval_set"] == d]
        assert s["best_center"][d] == int(rows.loc[rows["value"].idxmin(), "model_index"])
    assert sorted(s["matched_center"].values()) == list(range(len(s["distributions"])))
