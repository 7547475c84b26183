"""scripts/cam_tables_parallel.sh: the Fed-CAM jobs it queues (every per-client job of Tables 1-2, then
Table 1's 200-client core rows), run through a recording stand-in for python, and its one-line refusals."""
import os
import stat
import subprocess

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "cam_tables_parallel.sh"


def _recorder(tmp_path):
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/bash\n[ "$1" = "-c" ] && exit 0\necho "$*" >> "{calls}"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake, calls


def test_the_queue_runs_every_job_once_per_client_first_and_passes_the_overrides(tmp_path):
    fake, calls = _recorder(tmp_path)
    runs = tmp_path / "runs"
    proc = subprocess.run(["bash", str(SCRIPT), str(runs), "60", "3", "hardware=cuda"], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": str(fake)})
    assert proc.returncode == 0, proc.stderr
    queue = (runs / "queue.txt").read_text().splitlines()
    ran = calls.read_text().splitlines()          # side by side: in any order, each queued job once
    assert len(queue) == 84 + 78 + 4 * 3 * 5 and sorted(ran) == sorted(f"-m fedcluster.command.cli {j}" for j in queue)
    jobs = queue
    assert len(set(jobs)) == len(jobs) and all("hardware=cuda" in j for j in jobs)
    sweep_dir = [next(a for a in j.split() if a.startswith("hydra.sweep.dir=")) for j in jobs]
    assert [d.rsplit("/", 1)[1] for d in sweep_dir] == ["t1"] * 84 + ["t2"] * 78 + ["paper_t1"] * 60
    assert all("partition.num_clients=20" in j for j in jobs[:162])
    assert not any("partition.num_clients" in j for j in jobs[162:])
    assert "0 finished runs" in proc.stdout and not (runs / "finished.tgz").exists()


@pytest.mark.parametrize("args, needle", [(["0"], "SECONDS=0 is not a positive whole number"),
                                          (["60", "x"], "PARALLEL=x is not a positive whole number")])
def test_a_bad_limit_is_one_line_and_runs_nothing(tmp_path, args, needle):
    fake, calls = _recorder(tmp_path)
    proc = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "runs"), *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": str(fake)})
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not calls.exists() and not (tmp_path / "runs").exists()


def test_run_queue_packs_the_finished_runs_without_checkpoints(tmp_path):
    """scripts/run_queue.sh on a two-job queue whose stand-in python 'finishes' the first job (a
    summary.json and a checkpoint) and leaves the second unfinished: only the first is packed, and
    without its checkpoint."""
    runs = tmp_path / "runs"
    fake = tmp_path / "python"
    fake.write_text('#!/bin/bash\n[ "$1" = "-c" ] && exit 0\nd="${@: -1}"; d="${d#hydra.sweep.dir=}/job"\n'
                    'mkdir -p "$d"; touch "$d/checkpoint.pt" "$d/metrics.csv"\n'
                    '[[ "$*" == *seed=0* ]] && echo "{}" > "$d/summary.json"\nexit 0\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    queue = tmp_path / "queue.txt"
    queue.write_text(f"algorithm=fedavg seed=0 hydra.sweep.dir={runs}/a\nalgorithm=fedavg seed=1 hydra.sweep.dir={runs}/b\n")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "run_queue.sh"), str(queue), str(runs), "60", "2"],
                          capture_output=True, text=True, env={**os.environ, "PYTHON": str(fake)})
    assert proc.returncode == 0, proc.stderr
    assert "2 jobs, 2 at a time" in proc.stdout and "1 finished runs" in proc.stdout
    members = subprocess.run(["tar", "tzf", str(runs / "finished.tgz")], capture_output=True, text=True,
                             check=True).stdout.split()
    names = sorted(m.rsplit("/", 1)[-1] for m in members if not m.endswith("/"))
    assert names == ["metrics.csv", "summary.json"] and all("/a/job" in m for m in members)


def test_the_leaderboard_lists_its_jobs_with_the_overrides_and_runs_none(tmp_path):
    """`fedcluster-report leaderboard DIR --list OVERRIDE`: one line of `fedcluster` arguments per job of the presets'
    grid, the overrides on each, nothing run or written; an option it does not know is refused."""
    import sys
    out = subprocess.run([sys.executable, "-m", "fedcluster.report", "leaderboard", str(tmp_path / "lb"), "--list",
                          "hardware=cuda"], capture_output=True, text=True, check=True).stdout
    jobs = [line.split() for line in out.splitlines()]
    small = [j for j in jobs if j[0] in ("+preset=leaderboard/small_digits", "+preset=leaderboard/small_mnist")]
    assert len(small) == 2 * 2 * 3 * 19 and len(jobs) == 684
    assert all(job[-2] == "hardware=cuda" and job[-1] == f"hydra.sweep.dir={tmp_path / 'lb'}" for job in jobs)
    assert not (tmp_path / "lb").exists()
    bad = subprocess.run([sys.executable, "-m", "fedcluster.report", "leaderboard", str(tmp_path / "x"), "--bogus"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "unrecognized arguments: --bogus" in bad.stderr and not (tmp_path / "x").exists()
