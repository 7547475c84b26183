"""CLoVE, CFL and IFCA end to end on a small learnable fake Fashion-MNIST with cluster skews."""
import pandas as pd
import pytest

from fedcluster.runner import run

from conftest import make_cfg
from fakedata import write_learnable_mnist_like

SMALL = ["dataset=fashion_mnist", "dataset.distributions=[{rotation:0}]", "model=lenet", "partition.num_clients=8", "partition.samples_per_client=60",
         "partition.test_samples_per_client=20", "train.optimizer=adam", "train.lr=0.003", "train.epochs=1",
         "train.batch_size=20", "rounds=4", "progress=false", "checkpoint_every=0", "plots=false"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("fmnist")
    write_learnable_mnist_like(root / "FashionMNIST" / "raw", n_train=2000, n_test=600)
    return root


def cfg(root, *extra):
    return make_cfg(SMALL + [f"dataset.root={root}"] + list(extra))


@pytest.mark.parametrize("partition,K", [("label_skew1", 4), ("concept_shift", 2), ("feature_skew", 4)])
def test_clove_recovers_the_clusters(tmp_path, root, partition, K):
    s = run(cfg(root, f"partition={partition}", f"num_clusters={K}", "algorithm=clove"), tmp_path)
    frame = pd.read_csv(tmp_path / "metrics.csv")
    ari = frame[frame["metric"] == "ari"].sort_values("round")
    assert ari["round"].tolist() == [0, 1, 2, 3]                 # recorded every round
    assert s["ari"] == 1.0 and s["first_round_ari_ge_0.9"] <= 3
    assert s["local"]["local_test_accuracy"] > 0.5


def test_random_first_round_and_ablation_options_run(tmp_path, root):
    for i, extra in enumerate([["algorithm.first_round=random", "algorithm.init=identical"],
                               ["algorithm.clustering=agglomerative", "algorithm.embedding=sqrt_loss"],
                               ["algorithm.matching=none"]]):
        s = run(cfg(root, "partition=label_skew1", "num_clusters=4", "algorithm=clove", *extra), tmp_path / str(i))
        assert 0 <= s["local"]["local_test_accuracy"] <= 1 and "ari" in s


def test_clove_engines_agree(tmp_path, root):
    out = [run(cfg(root, "partition=label_skew2", "num_clusters=2", "algorithm=clove", f"engine={e}", "rounds=2"),
               tmp_path / e) for e in ("batched", "sequential")]
    assert out[0]["local"] == pytest.approx(out[1]["local"], rel=1e-4, abs=1e-6)
    assert out[0]["ari"] == out[1]["ari"]


def test_cfl_splits_when_the_criterion_holds(tmp_path, root):
    # eps1 huge, eps2 = 0: the split rule holds at once after the warm-up; 8 clients -> more clusters.
    s = run(cfg(root, "partition=concept_shift", "num_clusters=2", "algorithm=cfl", "algorithm.warmup_rounds=1",
                "algorithm.eps1=1e9", "algorithm.eps2=0"), tmp_path / "split")
    assert s["nonempty_clusters"] > 1
    # eps2 huge: never splits; every client keeps the one model (ARI 0 against 2 true clusters).
    s = run(cfg(root, "partition=concept_shift", "num_clusters=2", "algorithm=cfl", "algorithm.eps2=1e9"),
            tmp_path / "nosplit")
    assert s["nonempty_clusters"] == 1 and s["ari"] == 0.0
