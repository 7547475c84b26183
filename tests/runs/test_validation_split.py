"""The validation split (partition.val_fraction) and hyperparameter search on it: a sweep's objective
is a validation metric, never test data."""
import json
import subprocess
import sys

import pytest
import torch

from conftest import make_cfg
from fedcluster.assemble import build
from fedcluster.errors import ConfigError
from fedcluster.config.validate import validate

TINY = ["rounds=2", "partition.num_clients=10", "algorithm.selection_size=5", "dataset.test_size=100",
        "plots=false", "progress=false"]


def _rows(split, k):
    n = int(split.n[k])
    return {tuple(v.tolist()) for v in split.x[k, :n]}


def test_validation_is_carved_from_each_clients_training_data():
    cfg = make_cfg(TINY)
    full = make_cfg(TINY + ["partition.val_fraction=0"])
    data, whole = build(cfg)[1].data, build(full)[1].data
    assert whole.validation is None
    for k in range(data.num_clients):
        n = int(whole.train.n[k])
        assert int(data.validation.n[k]) == int(0.1 * n) and int(data.train.n[k]) == n - int(0.1 * n)
        val, train = _rows(data.validation, k), _rows(data.train, k)
        assert not val & train and val | train == _rows(whole.train, k)   # a split of the same samples
    torch.testing.assert_close(data.local_test.x[:], whole.local_test.x[:])     # test data untouched


def test_runs_report_validation_metrics_and_objective_must_be_validation(tmp_path):
    from fedcluster.runner import run
    s = run(make_cfg(TINY), tmp_path / "run")
    assert {"local_val_mse", "local_test_mse", "local_train_mse"} <= set(s["local"])
    with pytest.raises(ConfigError, match="objective=local_test_mse is not a validation metric"):
        validate(make_cfg(TINY + ["objective=local_test_mse"]))


def test_optuna_sweep_returns_the_validation_metric(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    proc = subprocess.run([sys.executable, "-m", "fedcluster", "-m", "hydra/sweeper=optuna",
                           "train.lr=interval(1e-3,1e-1)", "hydra.sweeper.n_trials=3", "hydra.sweeper.direction=minimize",
                           *TINY, f"hydra.sweep.dir={tmp_path / 'hpo'}"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    best = float(proc.stdout.split("Best value:")[1].split()[0] if "Best value:" in proc.stdout
                 else proc.stderr.split("Best value:")[1].split()[0])
    runs = [json.loads(p.read_text()) for p in (tmp_path / "hpo").glob("*/summary.json")]
    assert len(runs) == 3
    assert best == pytest.approx(min(r["local"]["local_val_mse"] for r in runs))
    assert best not in [r["local"]["local_test_mse"] for r in runs]
