"""Sweeps through Hydra launchers: joblib (hydra/launcher=parallel) and submitit's local executor
run every job to the end in the directory the sweep announced, and a job preempted the way SLURM preempts (submitit's signal, its
checkpoint hook, a requeue) resumes from fedcluster's checkpoint and ends with the metrics of a
run that was never stopped."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

TINY = ["partition.num_clients=10", "algorithm.selection_size=5", "dataset.test_size=100", "plots=false",
        "train.epochs=1"]


def sweep(tmp_path, *args, timeout=300):
    return subprocess.Popen([sys.executable, "-m", "fedcluster", "-m", *TINY, *args,
                             f"hydra.sweep.dir={tmp_path / 'sweep'}"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finished(tmp_path):
    return sorted(json.loads(p.read_text())["seed"] for p in (tmp_path / "sweep").glob("*/summary.json"))


def default_sweep(tmp_path, *args):
    """A sweep with the default sweep directory (outputs/multirun/<time>_<4 hex>, resolved once in
    the launching process): its exit code, stderr and the one directory it made."""
    proc = subprocess.run([sys.executable, "-m", "fedcluster", "-m", *TINY, "progress=false", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    made = list((tmp_path / "outputs" / "multirun").iterdir())
    assert len(made) == 1, (made, proc.stderr[-2000:])   # every job under one directory
    return proc.returncode, proc.stderr, made[0]


def closing_line(stderr, where, finished, skipped, failed):
    return (f"fedcluster: sweep {where}: {finished} finished, {skipped} skipped (already finished), {failed} failed; "
            f"the table: fedcluster-report {where}") in stderr.splitlines()


def reported_seeds(sweep_dir):
    from fedcluster.command.api import load_runs
    return sorted(load_runs(sweep_dir)["seed"].unique())


@pytest.mark.parametrize("launcher", ["parallel", pytest.param("submitit_local", marks=pytest.mark.slow)])   # submitit:
# its preemption test below runs in CI; this one's second launcher (31 s) is kept out of CI's 15 minutes
def test_a_launchers_sweep_stays_in_its_announced_directory_reports_and_resumes(tmp_path, launcher):
    """Jobs in other processes resolve the default sweep directory to the one the sweep announced
    (not to one with their own process's suffix); a job that cannot be composed is reported and
    the others finish; the same command with that directory skips the finished jobs."""
    pytest.importorskip(f"hydra_plugins.hydra_{'joblib' if launcher == 'parallel' else 'submitit'}_launcher")
    code, err, where = default_sweep(tmp_path, f"hydra/launcher={launcher}", "rounds=1", "seed=0,1,abc")
    announced = where.relative_to(tmp_path)
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert closing_line(err, announced, 2, 0, 1), err[-2000:]
    assert "seed=abc: wrong type for seed" in err
    assert reported_seeds(where) == [0, 1]
    if launcher == "parallel":   # joblib's per-worker thread limit: cores / n_jobs (2 jobs by the preset)
        threads = {json.loads(p.read_text())["threads"] for p in where.glob("*/summary.json")}
        assert threads == {max(1, os.cpu_count() // 2)}
    code, err, again = default_sweep(tmp_path, f"hydra/launcher={launcher}", "rounds=1", "seed=0,1",
                                     f"hydra.sweep.dir={announced}")
    assert code == 0 and again == where and closing_line(err, announced, 0, 2, 0), err[-2000:]


def _processes():
    """(pid, parent pid, command line arguments as bytes) of every process this user can read in /proc."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        yield int(entry.name), ppid, cmd


def _job_pids(folder: Path):
    """Processes running submitit tasks of jobs under `folder` (its command line names the folder)."""
    return [pid for pid, _, cmd in _processes()
            if b"submitit.core._submit" in cmd and any(str(folder).encode() in c for c in cmd)]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the job's process through /proc")
def test_a_preempted_submitit_job_is_requeued_and_resumes_from_its_checkpoint(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from submitit.local.local import LocalJobEnvironment
    rounds = ["rounds=60", "checkpoint_every=3", "seed=0"]   # long enough to signal it before it ends, even on a loaded machine
    proc = sweep(tmp_path, "hydra/launcher=submitit_local", *rounds)
    deadline = time.time() + 240
    while not list((tmp_path / "sweep").glob("*/checkpoint.pt")):   # the run has checkpointed at least once
        assert time.time() < deadline and proc.poll() is None, proc.communicate()[1][-2000:]
        time.sleep(0.05)
    job = next((tmp_path / "sweep").glob("*/checkpoint.pt")).parent
    pids = _job_pids(tmp_path / "sweep")
    assert len(pids) == 1
    os.kill(pids[0], LocalJobEnvironment._usr_sig())   # what SLURM sends before preempting a job
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    logs = "".join(p.read_text() for p in (tmp_path / "sweep" / ".submitit").rglob("*_log.out"))
    assert "this job is preempted" in logs and "Requeued job" in logs
    starts = [line for line in (job / "run.log").read_text().splitlines() if ": fedsoft, rounds " in line]
    assert len(starts) == 2 and " rounds 1-60 " in starts[0] and " rounds 1-60 " not in starts[1]
    assert json.loads((job / "summary.json").read_text())["status"] == "complete"

    straight = subprocess.run([sys.executable, "-m", "fedcluster", *TINY, *rounds, "progress=false",
                               f"hydra.run.dir={tmp_path / 'straight'}"], cwd=tmp_path, capture_output=True, text=True)
    assert straight.returncode == 0, straight.stderr[-2000:]
    pd.testing.assert_frame_equal(pd.read_csv(job / "metrics.csv"), pd.read_csv(tmp_path / "straight" / "metrics.csv"))


def _children(pid: int):
    """(pid, command line) of the processes whose parent is `pid`."""
    return [(p, b" ".join(cmd).decode(errors="replace")) for p, ppid, cmd in _processes() if ppid == pid]


@pytest.mark.slow   # 47 s: kept out of CI's 15 minutes; `pytest -m slow` runs it
def test_a_joblib_sweep_survives_a_killed_worker_and_names_its_job(tmp_path):
    """kill -9 of one joblib worker mid-job (as the out-of-memory killer would): one line names the job it
    ran, that job runs again alone, the other jobs finish, and no worker outlives the sweep."""
    import signal
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    proc = sweep(tmp_path, "hydra/launcher=parallel", "rounds=150", "progress=false", "checkpoint_every=0",
                 "seed=0,1,2,3")
    deadline, victim = time.time() + 240, None
    while victim is None:
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read()[-2000:] if proc.poll() else "slow"
        started = list((tmp_path / "sweep").glob("*/config.yaml")) if (tmp_path / "sweep").exists() else []
        workers = [p for p, cmd in _children(proc.pid) if "popen_loky" in cmd or "LokyProcess" in cmd]
        if started and workers:
            victim = workers[0]
        time.sleep(0.2)
    os.kill(victim, signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    died = [l for l in err.splitlines() if "worker process of the sweep died" in l]
    assert len(died) == 1 and "seed=" in died[0] and "runs again alone" in died[0], err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert finished(tmp_path) == [0, 1, 2, 3]
    assert closing_line(err, tmp_path / "sweep", 4, 0, 0), err[-2000:]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and ") Z " not in Path(f"/proc/{pid}/stat").read_text()


def _started_workers(proc, tmp_path) -> list:
    """The pids of a joblib sweep's worker processes, once a job has started (its run wrote config.yaml)."""
    deadline, workers = time.time() + 240, []
    while not workers:
        assert proc.poll() is None and time.time() < deadline
        if (tmp_path / "sweep").exists() and list((tmp_path / "sweep").glob("*/config.yaml")):
            workers = [p for p, cmd in _children(proc.pid) if "popen_loky" in cmd or "LokyProcess" in cmd]
        time.sleep(0.2)
    return workers


def test_no_joblib_worker_outlives_a_killed_sweep(tmp_path):
    """kill -9 of the launching process (its shell closed, a scheduler's kill): its joblib workers, each holding
    a run's memory, exit within seconds instead of idling on."""
    import signal
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    proc = sweep(tmp_path, "hydra/launcher=parallel", "rounds=150", "progress=false", "checkpoint_every=0", "seed=0,1")
    workers = _started_workers(proc, tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.time() + 30
    while any(_alive(p) for p in workers) and time.time() < deadline:
        time.sleep(0.5)
    assert not [p for p in workers if _alive(p)]


def test_a_joblib_sweep_stopped_with_its_process_group_stops_and_runs_nothing_again(tmp_path):
    """SIGTERM to the whole process group (`timeout`, a scheduler's stop, Ctrl-C in a terminal): the workers die of it
    and the launching process, told to stop too, stops as a stopped run does; it does not take the workers' deaths
    for out-of-memory kills and run their jobs again alone, and no process outlives it."""
    import signal
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    proc = subprocess.Popen([sys.executable, "-m", "fedcluster", "-m", *TINY, "hydra/launcher=parallel", "rounds=150",
                             "progress=false", "checkpoint_every=0", "seed=0,1", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers = _started_workers(proc, tmp_path)
    os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert "runs again alone" not in err and "Traceback" not in err, err[-3000:]
    deadline = time.time() + 30
    while any(_alive(p) for p in workers) and time.time() < deadline:
        time.sleep(0.5)
    assert not [p for p in workers if _alive(p)] and finished(tmp_path) == []
