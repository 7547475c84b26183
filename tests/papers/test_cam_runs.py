"""Fed-CAM presets end to end on tiny fake data in the torchvision on-disk layout."""
import json

import pandas as pd
import pytest

from fedcluster.algorithms.cam import CAM
from fedcluster.report import build_report
from fedcluster.run_records.record import CHECKPOINT
from fedcluster.runner import run

from conftest import die_in_round, make_cfg
from fakedata import write_cifar10, write_mnist_like

TINY = ["partition.num_clients=10", "partition.min_samples=4", "rounds=3", "train.steps=2",
        "eval_every=1", "progress=false", "checkpoint_every=0"]


def warm_up(algorithm):
    """IFCA-CAM's own FedAvg warm-up, one round of these short runs (its default, 30 % of 3 rounds, is 0)."""
    return ["algorithm.warmup_rounds=1"] if algorithm == "ifca_cam" else []


@pytest.fixture
def fake_cifar(tmp_path):
    write_cifar10(tmp_path / "data", per_batch=40, n_test=60)
    return tmp_path / "data"


@pytest.mark.parametrize("table,partition", [("table1", "cluster_nclass"), ("table1", "cluster_dirichlet"),
                                             ("table2", "dirichlet"), ("table2", "nclass")])
def test_cifar_presets_run_unchanged_on_fake_cifar(tmp_path, fake_cifar, table, partition):
    """Every preset cell runs on CIFAR-format data once it is present (here: a tiny fake)."""
    for algorithm in ("ifca_cam", "fedprox_plus"):
        cfg = make_cfg([f"+preset=cam/{table}", "dataset=cifar10", f"dataset.root={fake_cifar}",
                        f"partition={partition}", "num_clusters=5", f"algorithm={algorithm}"] + TINY + warm_up(algorithm)
                       + ["model=lenet"])   # the preset's own CNN runs in the FMNIST tests; LeNet keeps this one short
        s = run(cfg, tmp_path / f"{algorithm}_{partition}")
        assert s["table"] == f"cam_{table}" and s["dataset"] == "cifar10" and s["num_clients"] == 10
        assert 0 <= s["local"]["local_test_accuracy"] <= 1 and "local_test_macro_f1" in s["local"]
        if algorithm == "ifca_cam":
            sizes = pd.read_csv(tmp_path / f"{algorithm}_{partition}" / "cluster_sizes.csv")
            assert sizes.groupby("round")["size"].sum().eq(10).all()
            assert (s.get("ari") is not None) == partition.startswith("cluster")
            assert (tmp_path / f"{algorithm}_{partition}" / "cluster_sizes.png").exists()


def test_all_eight_methods_and_the_report_on_fake_fmnist(tmp_path):
    root = tmp_path / "data"
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=400, n_test=100)
    sweep = tmp_path / "sweep"
    methods = ["fedavg", "fedprox", "fedavg_plus", "fedprox_plus", "ifca", "ifca_cam", "fesem", "fesem_cam"]
    for i, algorithm in enumerate(methods):
        pick = {"ifca": ["algorithm.report_label_pick=true"], "ifca_cam": ["algorithm.base.report_label_pick=true"]}
        cfg = make_cfg(["+preset=cam/table1", f"dataset.root={root}", "partition=cluster_nclass", "num_clusters=5",
                        f"algorithm={algorithm}"] + TINY + pick.get(algorithm, []) + warm_up(algorithm)
                       + ["model=lenet"])   # the report is the point here; the presets' CNN runs in test_every_option
        run(cfg, sweep / f"{i}_{algorithm}")
    text = build_report(sweep)
    assert "Fed-CAM Table 1" in text and "fashion_mnist/cluster_nclass acc paper" in text
    table = pd.read_csv(sweep / "report_cam_table1.csv")
    assert table["method"].tolist() == methods
    # one cluster update for IFCA and its CAM variant, named; the test-label pick only in its labelled column
    updates = dict(zip(table["method"], table["cluster update"]))
    assert updates["ifca"] == updates["ifca_cam"] == "mean" and pd.isna(updates["fesem"])
    pick = "fashion_mnist/cluster_nclass acc, picked by test loss (reads test labels) mean"
    assert set(table.loc[table[pick].notna(), "method"]) == {"ifca", "ifca_cam"}
    assert "reads the test labels" in text
    # tiny runs: the paper column is labelled with how its protocol differs from ours
    assert "fashion_mnist/cluster_nclass acc paper (different protocol: rounds 100 vs ours 3" in text
    assert set(table["paper protocol differs"]) and table["paper protocol differs"].iloc[0].startswith("rounds 100 vs ours 3")
    paper = "fashion_mnist/cluster_nclass acc paper mean"   # the CSV: plain column names, numbers as numbers
    assert table.loc[table["method"] == "ifca_cam", paper].item() == 95.38
    assert table.loc[table["method"] == "ifca_cam", paper.replace(" mean", " std")].item() == 0.49   # the paper's std
    assert "95.38 ± 0.49" in text and "OUTSIDE 2 std" in text     # judged against the paper's own spread
    assert "fashion_mnist/cluster_nclass micro acc − paper" in table.columns   # ours (micro, as the paper) minus it
    clusters = pd.read_csv(sweep / "report_cam_table1_clusters.csv")
    assert set(clusters["method"]) == {"ifca", "ifca_cam", "fesem", "fesem_cam"}


def test_engines_agree_on_cam_and_ensemble(tmp_path):
    root = tmp_path / "data"
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=300, n_test=80)
    for algorithm in ("ifca_cam", "fesem_cam", "fedavg_plus"):
        out = []
        for engine in ("batched", "sequential"):
            cfg = make_cfg(["+preset=cam/table1", f"dataset.root={root}", "partition=cluster_dirichlet",
                            "num_clusters=2", f"algorithm={algorithm}", f"engine={engine}", "model=lenet"] + TINY
                           + warm_up(algorithm))
            out.append(run(cfg, tmp_path / f"{algorithm}_{engine}"))
        assert out[0]["local"] == pytest.approx(out[1]["local"], rel=1e-4, abs=1e-6)
        assert out[0].get("cluster_sizes") == out[1].get("cluster_sizes")


def test_cam_resumes_from_checkpoint(tmp_path, monkeypatch):
    root = tmp_path / "data"
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=300, n_test=80)
    overrides = ["+preset=cam/table1", f"dataset.root={root}", "partition=cluster_nclass", "num_clusters=2",
                 "algorithm=ifca_cam"] + TINY + warm_up("ifca_cam") + ["rounds=5", "checkpoint_every=2", "model=lenet"]
    reference = run(make_cfg(overrides), tmp_path / "uninterrupted")

    undo = die_in_round(monkeypatch, CAM, 3, RuntimeError("killed"))
    with pytest.raises(RuntimeError):
        run(make_cfg(overrides), tmp_path / "resumed")
    assert (tmp_path / "resumed" / CHECKPOINT).exists()
    undo()
    resumed = run(make_cfg(overrides), tmp_path / "resumed")
    assert resumed["local"] == reference["local"] and resumed["cluster_sizes"] == reference["cluster_sizes"]
    a, b = (pd.read_csv(tmp_path / d / "cluster_sizes.csv") for d in ("uninterrupted", "resumed"))
    pd.testing.assert_frame_equal(a, b)


def test_label_partition_needs_one_distribution(tmp_path):
    from fedcluster.errors import ConfigError
    root = tmp_path / "data"
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=300, n_test=80)
    cfg = make_cfg(["dataset=fashion_mnist", f"dataset.root={root}", "partition=dirichlet", "partition.num_clients=5",
                    "model=lenet", "progress=false"])
    with pytest.raises(ConfigError, match="splits one labelled pool"):
        run(cfg, tmp_path / "x")


def test_micro_accuracy_pools_all_clients_test_samples_and_the_report_shows_both(tmp_path):
    """Fed-CAM §5 reports micro accuracy: correct predictions over all clients' test samples.
    summary.json keeps it in local_micro beside the per-client mean, and the CAM table shows both."""
    import numpy as np
    from fedcluster.assemble import build
    root = tmp_path / "data"
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=400, n_test=100)
    cfg = make_cfg(["+preset=cam/table2", f"dataset.root={root}", "partition=dirichlet", "num_clusters=2",
                    "algorithm=ifca"] + TINY)
    s = run(cfg, tmp_path / "sweep" / "ifca")
    n = build(cfg)[1].data.local_test.n.numpy()
    assert len(set(n.tolist())) > 1                       # clients hold different numbers of test samples
    frame = pd.read_csv(tmp_path / "sweep" / "ifca" / "metrics.csv")
    acc = frame[(frame["round"] == 2) & (frame["model"] == "local") & (frame["eval_set"] == "local_test")
                & (frame["metric"] == "accuracy")].sort_values("model_index")
    correct = (acc["value"].to_numpy() * n[acc["model_index"].to_numpy()]).round()
    pooled = correct.sum() / n[acc["model_index"].to_numpy()].sum()
    assert s["local_micro"]["local_test_accuracy"] == pytest.approx(pooled)
    assert s["local"]["local_test_accuracy"] == pytest.approx(acc["value"].mean())
    assert "local_test_macro_f1" not in s["local_micro"]   # macro-F1 is no mean over samples
    build_report(tmp_path / "sweep")
    table = pd.read_csv(tmp_path / "sweep" / "report_cam_table2.csv")
    row = table[table["method"] == "ifca"].iloc[0]
    assert row["fashion_mnist/dirichlet micro acc mean"] == pytest.approx(100 * pooled)
    assert row["fashion_mnist/dirichlet acc mean"] == pytest.approx(100 * acc["value"].mean())
