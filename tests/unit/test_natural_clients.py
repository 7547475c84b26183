"""partition=natural (issue 59): the data's own groups are the clients. A user's table with a client column
becomes one client per value, each holding all of its rows (training and test), the same clients whatever the
seed; a group too small is refused naming it."""
import numpy as np
import pandas as pd
import pytest
import torch

from conftest import make_cfg
from fedcluster.assemble import build
from fedcluster.errors import ConfigError
from fedcluster.partitions import NaturalClients
from fedcluster.runner import run


@pytest.fixture
def clinics(tmp_path):
    """6 clinics of different sizes and label mixes, 5 numeric features, a binary label."""
    g = np.random.default_rng(1)
    rows = []
    for c, (n, p) in enumerate([(60, 0.2), (90, 0.8), (45, 0.5), (120, 0.3), (75, 0.7), (30, 0.5)]):
        y = (g.random(n) < p).astype(int)
        x = g.normal(size=(n, 5)) + y[:, None] * (1 + c % 2)
        rows.append(pd.DataFrame({**{f"f{i}": x[:, i] for i in range(5)}, "outcome": y, "clinic": f"c{c}"}))
    pd.concat(rows).sample(frac=1, random_state=0).to_csv(tmp_path / "clinics.csv", index=False)
    return tmp_path


def common(root):
    return ["dataset=tensors", f"dataset.path={root / 'clinics.csv'}", "dataset.labels=outcome",
            "dataset.distributions=clinic", "model=mlp", "partition=natural", "partition.val_fraction=0",
            "rounds=2", "progress=false", "plots=false"]


def test_each_value_of_the_column_is_one_client_with_all_its_rows(clinics):
    table = pd.read_csv(clinics / "clinics.csv")
    for seed in (0, 3):
        _, fed, _, _ = build(make_cfg(common(clinics) + ["algorithm=fedavg", f"seed={seed}"]))
        data = fed.data
        assert data.num_clients == 6 and data.truth is None and data.cluster_truth is None
        names = data.distribution_names
        sizes = table.groupby("clinic").size()
        for k in range(6):
            assert int(data.train.n[k] + data.local_test.n[k]) == sizes[names[k]]   # every row of the clinic, once
            assert int(data.local_test.n[k]) >= 1
        if seed == 0:
            first = (names, data.train.n + data.local_test.n)
        else:   # the partition draws nothing: the same clients (which rows test them is the source's seeded split)
            assert first[0] == names and torch.equal(first[1], data.train.n + data.local_test.n)


def test_clustered_and_plain_methods_run_on_natural_clients(clinics, tmp_path):
    for algorithm in ("fedavg", "ifca"):
        summary = run(make_cfg(common(clinics) + [f"algorithm={algorithm}", "num_clusters=2"]), tmp_path / algorithm)
        assert summary["status"] == "complete" and summary["num_clients"] == 6


def test_a_group_too_small_is_one_line_naming_it(clinics):
    with pytest.raises(ConfigError, match=r"^partition=natural: group 'c5' has \d+ training and \d+ test samples; allowed: "
                                          r"at least partition.min_samples=30"):
        build(make_cfg(common(clinics) + ["algorithm=fedavg", "partition.min_samples=30"]))
    with pytest.raises(ConfigError, match=r"^partition.min_samples=0 is out of range"):
        NaturalClients(min_samples=0)


def test_a_table_without_groups_is_refused_by_natural_and_its_group_column_can_be_left_out_of_label_partitions(
        clinics, tmp_path):
    """partition=natural on data with one group would make one client: refused, naming what to set. A label
    partition on the same table with the group column left out of the features (dataset.ignore_columns) runs;
    without it, the text column is refused in one line that names ignore_columns."""
    base = ["dataset=tensors", f"dataset.path={clinics / 'clinics.csv'}", "dataset.labels=outcome", "model=mlp",
            "rounds=2", "progress=false", "plots=false", "algorithm=fedavg"]
    with pytest.raises(ConfigError, match=r"^partition=natural makes one client per group of the data, and it has "
                                          r"one \('all'\); allowed: data with groups \(dataset=tensors: "
                                          r"dataset.distributions=<column>"):
        build(make_cfg(base + ["partition=natural", "dataset.ignore_columns=[clinic]"]))
    with pytest.raises(ConfigError, match=r"feature column 'clinic' is not numeric; allowed: numeric feature columns "
                                          r"\(leave it out: dataset.ignore_columns=\[clinic\]"):
        build(make_cfg(base + ["partition=dirichlet", "partition.num_clients=4"]))
    summary = run(make_cfg(base + ["partition=dirichlet", "partition.num_clients=4", "partition.min_samples=5",
                                   "dataset.ignore_columns=[clinic]"]), tmp_path / "run")
    assert summary["num_clients"] == 4 and summary["status"] == "complete"
    with pytest.raises(ConfigError, match=r"^dataset.ignore_columns names 'site', not a column of "):
        build(make_cfg(base + ["partition=dirichlet", "dataset.ignore_columns=[site]"]))
