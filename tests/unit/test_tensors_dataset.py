"""dataset=tensors (issue 59): a user's own samples from a CSV table, a .npz archive or a .pt dict of tensors
become a data set with no code, the same samples whatever the format; bad files are one line; a .pt file
is read as plain tensors only (a pickled object is refused, never run)."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import make_cfg
from fedcluster.data.tensors import TensorSource
from fedcluster.errors import ConfigError, DataNotFoundError
from fedcluster.runner import run


@pytest.fixture
def table(tmp_path):
    """A 4-class table of 12 numeric features, string labels and a site column, as CSV, npz and pt."""
    g = np.random.default_rng(0)
    centers = g.normal(size=(4, 12)) * 3
    y = g.integers(0, 4, size=1200)
    x = (centers[y] + g.normal(size=(1200, 12))).astype(np.float32)
    site = np.where(np.arange(1200) % 3 == 0, "north", "south")
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(12)])
    frame["label"], frame["site"] = np.array(["ant", "bee", "cat", "dog"])[y], site
    frame.to_csv(tmp_path / "table.csv", index=False)
    np.savez(tmp_path / "table.npz", x=x, y=y)
    torch.save({"x": torch.as_tensor(x), "y": torch.as_tensor(y)}, tmp_path / "table.pt")
    return tmp_path


def test_the_three_formats_give_the_same_samples(table):
    csv = TensorSource(str(table / "table.csv"), labels="label", feature_columns=[f"f{i}" for i in range(12)])
    npz, pt = TensorSource(str(table / "table.npz")), TensorSource(str(table / "table.pt"))
    assert csv.in_shape == npz.in_shape == pt.in_shape == (12,)
    assert csv.num_classes == npz.num_classes == 4 and csv.class_names == ["ant", "bee", "cat", "dog"]
    for split in ("train", "test"):
        a, b, c = csv.pool(split), npz.pool(split), pt.pool(split)
        assert torch.equal(a[0], b[0]) and torch.equal(b[0], c[0]) and torch.equal(a[1], b[1]) and torch.equal(b[1], c[1])
    assert len(npz.pool("test")[1]) == 240 and len(npz.pool("train")[1]) == 960   # test_fraction 0.2, seeded


def test_standardize_uses_the_training_rows_numbers(table):
    plain, scaled = TensorSource(str(table / "table.npz")), TensorSource(str(table / "table.npz"), standardize=True)
    x, xs = plain.pool("train")[0], scaled.pool("train")[0]
    assert torch.allclose(xs.mean(0), torch.zeros(12), atol=1e-5) and torch.allclose(xs.std(0, unbiased=False), torch.ones(12), atol=1e-4)
    mean, std = x.mean(0), x.std(0, unbiased=False)
    assert torch.allclose(scaled.pool("test")[0], (plain.pool("test")[0] - mean) / std, atol=1e-4)


def test_a_distributions_column_makes_the_groups_a_mixture_draws_from(table):
    src = TensorSource(str(table / "table.csv"), labels="label", distributions="site")
    assert src.distribution_names == ["north", "south"] and src.in_shape == (12,)   # the site column is no feature
    assert len(src.pool("train", 0)[1]) + len(src.pool("test", 0)[1]) == 400


@pytest.mark.parametrize("make, message", [
    (lambda d: TensorSource(None), r"^dataset\.path is not set"),
    (lambda d: TensorSource(str(d / "table.csv"), labels="species"), r"no column 'species'; its columns: \["),
    (lambda d: TensorSource(str(d / "table.csv"), labels="label"), r"feature column 'site' is not numeric"),
    (lambda d: TensorSource(str(d / "table.npz"), labels="target"), r"no array 'target'; its arrays: \['x', 'y'\]"),
    (lambda d: TensorSource(str(d / "table.txt")), r"allowed: \.csv, \.npz, \.pt"),
    (lambda d: TensorSource(str(d / "table.npz"), test_fraction=0.0001), r"test_fraction=0.0001 of 1200 rows"),
])
def test_bad_input_is_one_line_naming_the_value(table, make, message):
    (table / "table.txt").write_text("x")
    with pytest.raises(ConfigError, match=message):
        make(table)


def test_a_missing_file_and_a_pickled_object_are_refused(table):
    with pytest.raises(DataNotFoundError, match="no such file"):
        TensorSource(str(table / "nothing.csv"))

    class Payload:
        def __reduce__(self):
            return (print, ("this must never run",))
    torch.save({"x": torch.zeros(3, 2), "y": torch.zeros(3), "p": Payload()}, table / "evil.pt")
    with pytest.raises(ConfigError, match=r"cannot be read as plain tensors"):
        TensorSource(str(table / "evil.pt"))


def test_a_users_table_runs_three_methods_and_the_report_compares_them(table, tmp_path):
    """What docs/own_data.md's "A table of yours" runs: the CLI on the CSV, a 3 x 2 sweep, the report against FedAvg."""
    common = ["dataset=tensors", f"dataset.path={table / 'table.csv'}", "dataset.labels=label",
              "dataset.feature_columns=[" + ",".join(f"f{i}" for i in range(12)) + "]", "model=mlp", "partition=dirichlet",
              "partition.num_clients=8", "partition.min_samples=5", "num_clusters=2", "rounds=2",
              "progress=false", "plots=false"]
    sweep = subprocess.run([sys.executable, "-m", "fedcluster", "-m", *common, "algorithm=fedavg,ifca,local",
                            "seed=0,1", f"hydra.sweep.dir={tmp_path / 'sweep'}"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=600)
    assert sweep.returncode == 0 and "6 finished" in sweep.stderr, sweep.stderr[-2000:]
    report = subprocess.run([sys.executable, "-m", "fedcluster.report", str(tmp_path / "sweep"), "--baseline",
                             "fedavg"], capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "| local |" in report.stdout and "Differences to fedavg" in report.stdout
    summary = run(make_cfg(common + ["algorithm=fedavg"]), tmp_path / "api")   # the Python API, same config
    assert summary["status"] == "complete" and summary["local"]["local_test_accuracy"] > 0.25
