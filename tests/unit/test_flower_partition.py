"""partition=flower (issue 59): flwr-datasets' partitioners as a fedcluster partition, built from the composed
config as the CLI builds it. Dirichlet and NaturalId on (fake) Fashion-MNIST and on a user's table; each client's
test split follows its own training shares; options are checked against the partitioner's signature."""
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("flwr_datasets")

from conftest import make_cfg  # noqa: E402
from fakedata import write_mnist_like  # noqa: E402
from fedcluster.assemble import build  # noqa: E402
from fedcluster.errors import ConfigError  # noqa: E402
from fedcluster.runner import run  # noqa: E402
from test_natural_clients import clinics  # noqa: E402,F401  (the fixture: a table of 6 clinics)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=1200, n_test=400)
    return root


def images(root, *extra):
    return ["dataset=fashion_mnist", f"dataset.root={root}", "dataset.train_size=null", "model=lenet",
            "partition=flower", "partition.val_fraction=0", "rounds=2", "progress=false", "plots=false",
            "train.steps=2", *extra]


def class_counts(split, k, C, S=2):
    """Client k's samples of each (distribution, class), flattened: [S * C]."""
    n = int(split.n[k])
    return np.bincount((split.source[k, :n] * C + split.y[k, :n].long()).numpy(), minlength=S * C)


def test_dirichlet_clients_get_test_samples_in_their_training_shares(root):
    """Per client, distribution and class, its test count is its share of that class's training samples of the
    distribution times the test samples there, to within one (largest remainder); clients are disjoint; the run's seed draws the split."""
    _, fed, _, _ = build(make_cfg(images(root, "algorithm=fedavg", "partition.num_clients=6",
                                         "+partition.options.alpha=0.3")))
    data, C = fed.data, fed.data.num_classes
    assert data.num_clients == 6
    train = np.stack([class_counts(data.train, k, C) for k in range(6)])       # [6, 2 C]
    test = np.stack([class_counts(data.local_test, k, C) for k in range(6)])
    assert train.sum() == 1200 and test.sum() == 400      # the pools of both rotations, every sample once
    expected = train / train.sum(0, keepdims=True) * test.sum(0, keepdims=True)
    assert np.abs(test - expected).max() < 1.0 + 1e-9
    by_class = train.reshape(6, 2, C).sum(1)
    assert (by_class.max(1) / by_class.sum(1)).mean() > 0.3      # alpha 0.3: skewed clients (IID: about 0.1)
    again = build(make_cfg(images(root, "algorithm=fedavg", "partition.num_clients=6",
                                  "+partition.options.alpha=0.3")))[1].data
    other = build(make_cfg(images(root, "algorithm=fedavg", "partition.num_clients=6",
                                  "+partition.options.alpha=0.3", "seed=1")))[1].data
    assert torch.equal(again.train.n, data.train.n) and not torch.equal(other.train.n, data.train.n)


def test_natural_id_by_group_makes_one_client_per_distribution(root, tmp_path):
    """Fashion-MNIST's two distributions (0 and 90 degrees) are two clients, each all of its group."""
    cfg = make_cfg(images(root, "algorithm=ifca", "num_clusters=2", "partition.kind=natural_id",
                          "partition.partition_by=group"))
    _, fed, _, _ = build(cfg)
    data = fed.data
    assert data.num_clients == 2
    for k in range(2):
        n = int(data.train.n[k])
        assert set(data.train.source[k, :n].tolist()) == {k}
        assert set(data.local_test.source[k, : int(data.local_test.n[k])].tolist()) == {k}
    assert int(data.train.n.sum()) == 1200 and int(data.local_test.n.sum()) == 400
    assert run(cfg, tmp_path / "run")["num_clients"] == 2


def test_num_clients_is_ten_by_default_and_natural_ids_count_where_given(clinics, tmp_path):  # noqa: F811
    """num_clients null: 10 clients for a count-based partitioner, one per clinic for natural_id. natural_id splits
    by value, so a count that is not the clinics' is refused in one line naming both (it was ignored once), before
    a run directory exists; the right count is accepted."""
    common = ["dataset=tensors", f"dataset.path={clinics / 'clinics.csv'}", "dataset.labels=outcome",
              "dataset.distributions=clinic", "model=mlp", "partition=flower", "partition.val_fraction=0",
              "rounds=1", "progress=false", "plots=false", "algorithm=fedavg"]
    assert build(make_cfg(common + ["+partition.options.alpha=1.0", "partition.min_samples=1"]))[1].data.num_clients == 10
    assert build(make_cfg(common + ["partition.kind=natural_id", "partition.num_clients=6"]))[1].data.num_clients == 6
    with pytest.raises(ConfigError) as refused:
        run(make_cfg(common + ["partition.kind=natural_id", "partition.num_clients=4"]), tmp_path / "run")
    assert str(refused.value) == ("partition.num_clients=4 with partition.kind=natural_id: it makes one client per "
                                  "value of its column (group), and the data has 6; allowed: null (one per value) or 6")
    assert not (tmp_path / "run").exists()


def test_flower_partitions_a_users_table(clinics, tmp_path):  # noqa: F811
    """A table with a clinic column: NaturalId by group gives one client per clinic, with all its training rows;
    Dirichlet over the labels gives the clients asked for; both run a clustered method."""
    common = ["dataset=tensors", f"dataset.path={clinics / 'clinics.csv'}", "dataset.labels=outcome",
              "dataset.distributions=clinic", "model=mlp", "partition=flower", "partition.val_fraction=0",
              "rounds=2", "progress=false", "plots=false", "algorithm=ifca", "num_clusters=2"]
    natural = run(make_cfg(common + ["partition.kind=natural_id"]), tmp_path / "a")   # partition_by auto: group
    assert natural["num_clients"] == 6
    dirichlet = run(make_cfg(common + ["partition.num_clients=4", "+partition.options.alpha=1.0"]), tmp_path / "b")
    assert dirichlet["num_clients"] == 4 and dirichlet["status"] == "complete"


@pytest.mark.parametrize("extra,message", [
    (["+partition.options.beta=1"], r"^partition.options.beta is not a setting of DirichletPartitioner "
                                    r"\(partition.kind=dirichlet\) that fedcluster leaves to you; allowed: \['alpha'"),
    (["+partition.options.seed=1"], r"^partition.options.seed is not a setting"),
    (["partition.kind=shards"], r"^partition.kind='shards' is unknown; allowed: \['dirichlet'"),
])
def test_bad_options_are_one_line_before_anything_is_written(root, tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message) as e:
        run(make_cfg(images(root, "algorithm=fedavg", *extra)), tmp_path / "run")
    assert "\n" not in str(e.value) and not (tmp_path / "run").exists()


def test_natural_id_on_a_table_without_groups_is_refused_in_one_line(clinics, tmp_path):  # noqa: F811
    """Without dataset.distributions the table is one group: NaturalId once ran it as one client, silently."""
    cfg = make_cfg(["dataset=tensors", f"dataset.path={clinics / 'clinics.csv'}", "dataset.labels=outcome",
                    "dataset.ignore_columns=[clinic]", "model=mlp", "partition=flower", "partition.kind=natural_id",
                    "rounds=2", "progress=false", "plots=false"])
    with pytest.raises(ConfigError, match=r"^partition.kind=natural_id with partition_by=group makes one client per "
                                          r"distribution of the data set, and it has one .*dataset.distributions") as e:
        run(cfg, tmp_path / "run")
    assert "\n" not in str(e.value) and not (tmp_path / "run").exists()


def test_without_the_extra_the_run_says_what_to_install_in_one_line(root, tmp_path, monkeypatch):
    """flwr-datasets and HF datasets absent (None in sys.modules makes their import fail): one line, nothing written."""
    monkeypatch.setitem(sys.modules, "datasets", None)
    monkeypatch.setitem(sys.modules, "flwr_datasets.partitioner", None)
    with pytest.raises(ConfigError, match=r"^partition=flower needs flwr-datasets, which is not installed; allowed: "
                                          r"pip install 'fedcluster\[flower\]'") as e:
        run(make_cfg(images(root, "algorithm=fedavg")), tmp_path / "run")
    assert "\n" not in str(e.value) and not (tmp_path / "run").exists()
