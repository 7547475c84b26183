"""A setting inside a config group that a sweep varies (`-m algorithm=fedavg,ifca algorithm.client_fraction=0.5`)
goes to each job (fedcluster/command/swept_groups.py): Hydra's one composition before the sweep, at the group's
default option, no longer refuses it; each job is named as before, and a job whose option lacks the key fails
alone, in one line."""
import subprocess

import pytest

from fedcluster.command.swept_groups import per_job
from test_cli import COMMON, _fedcluster

GROUPS = ("dataset", "partition", "model", "algorithm", "hardware", "logger")


@pytest.mark.parametrize("arguments,expected", [
    (["-m", "algorithm=fedavg,ifca", "algorithm.client_fraction=0.5", "seed=0,1"],
     ["-m", "algorithm=fedavg,ifca", "algorithm.client_fraction=choice(0.5)", "seed=0,1"]),
    (["algorithm.client_fraction=0.5", "algorithm=choice(fedavg,ifca)"],      # the order does not matter
     ["algorithm.client_fraction=choice(0.5)", "algorithm=choice(fedavg,ifca)"]),
    (["partition=dirichlet,nclass", "partition.holdout_clients=0.2", "dataset.distributions=[{rotation: 0}]"],
     ["partition=dirichlet,nclass", "partition.holdout_clients=choice(0.2)", "dataset.distributions=[{rotation: 0}]"]),
    (["algorithm=fedavg,ifca", "algorithm.name='a,b'"], ["algorithm=fedavg,ifca", "algorithm.name=choice('a,b')"]),
])
def test_a_plain_setting_of_a_swept_group_becomes_a_sweep_of_its_one_value(arguments, expected):
    assert per_job(arguments, GROUPS) == expected


@pytest.mark.parametrize("arguments", [
    ["-m", "algorithm=ifca", "algorithm.client_fraction=0.5", "seed=0,1"],    # the group is not swept
    ["-m", "algorithm=fedavg,ifca", "algorithm.client_fraction=0.5,1.0"],      # already a sweep
    ["-m", "algorithm=fedavg,ifca", "algorithm.num_clusters=${num_clusters}"],  # an interpolation keeps its form
    ["-m", "algorithm=fedavg,ifca", "+algorithm.extra=1", "~algorithm.name"],  # additions and deletions too
    ["-m", "seed=0,1", "train.lr=0.1", "--cfg", "job"],                        # train is not a config group
    ["-m", "algorithm=fedavg,ifca", "hydra.sweep.dir=runs/x"],
    ["-m", "algorithm=fedavg,ifca", "algorithm.lr=[oops"],                     # unparsable: Hydra says so itself
])
def test_every_other_argument_is_left_as_it_was(arguments):
    assert per_job(arguments, GROUPS) == arguments


def test_a_sweep_over_methods_with_a_setting_some_lack_runs_the_others_and_names_them_as_before(tmp_path):
    sweep = tmp_path / "sweep"
    proc = subprocess.run([_fedcluster(), "-m", *COMMON, "rounds=1", "algorithm=fedavg,fedsoft",
                           "algorithm.client_fraction=0.5", "plots=false", f"hydra.sweep.dir={sweep}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert jobs == ["algorithm.client_fraction=0.5,algorithm=fedavg,dataset.test_size=100,partition.max_samples=30,"
                    "partition.min_samples=20,partition.num_clients=10,rounds=1,train.epochs=1"]
    assert (sweep / jobs[0] / "summary.json").exists()
    assert "client_fraction: 0.5" in (sweep / jobs[0] / "config.yaml").read_text()
    refusals = [line for line in proc.stderr.splitlines() if line.startswith("fedcluster: error:")]
    assert len(refusals) == 1 and "algorithm=fedsoft" in refusals[0]
    assert refusals[0].endswith("algorithm.client_fraction is not a setting; allowed at algorithm: keep_client_state, "
                                "lam, name, num_clusters, replacement, selection_size, smoother, tau")
    assert "1 finished, 0 skipped (already finished), 1 failed" in proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
