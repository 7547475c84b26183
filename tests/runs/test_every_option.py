"""Every option of every config group, and every preset, composes and runs 2 rounds on tiny fake
data (lightning-hydra-template's pattern): a new yaml is tested the moment it lands.

Options and presets are found by listing conf/, so nothing here names them; `shrink` makes any
composed config tiny by the keys it has (clients, samples, steps), whatever its group options."""
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf, open_dict

from conftest import CONF, make_cfg
from fakedata import write_ag_news, write_amazon, write_cifar10, write_mnist_like
from fedcluster.runner import run

GROUPS = ("dataset", "partition", "model", "algorithm")
OPTIONS = [(g, f.stem) for g in GROUPS for f in sorted((CONF / g).glob("*.yaml"))]
PRESETS = sorted(str(f.relative_to(CONF / "preset"))[:-5] for f in (CONF / "preset").rglob("*.yaml"))
# Presets whose first job is a CLoVE preset's, out of CI's 15 minutes: the leaderboard's parts (tests/reports/test_leaderboard.py
# composes every job of them; small_digits and cam, whose settings no other preset has, run here) and
# clove/ls3_participation (tests/reports/test_participation_table.py composes its jobs)
SAME_FIRST_JOB = ("leaderboard/fmnist_images", "leaderboard/fmnist_label_skew1", "leaderboard/fmnist_label_skews_3_4",
                  "leaderboard/small_mnist", "clove/ls3_participation")

# What each group's option is run with, where the defaults (synthetic regression, a two-group
# mixture, a linear model, FedSoft) cannot take it: image models and label partitions need images.
IMAGES = ["dataset=fashion_mnist", "dataset.distributions=[{rotation: 0}]", "model=lenet", "engine=batched"]
CONTEXT = {
    "dataset": ["partition=random"],   # any number of distributions
    "partition": IMAGES,
    "model": IMAGES + ["partition=random"],
    "algorithm": IMAGES + ["partition=cluster_dirichlet", "num_clusters=2"],
}
TWO_ROTATIONS = ["dataset=fashion_mnist", "model=lenet", "engine=batched"]   # fashion_mnist: 0 and 90 degrees
INSTEAD = {   # options that need other data than CONTEXT gives their group
    ("model", "cifar_cnn"): ["dataset=cifar10", "partition=random"],
    ("model", "textcnn"): ["dataset=ag_news", "partition=random"],
    ("model", "linear"): [],
    ("model", "mlp"): [],
    ("dataset", "tensors"): ["model=mlp", "partition=dirichlet"],   # a table of the user's (data_root/table.csv)
    ("dataset", "hf"): ["model=lenet", "partition=dirichlet"],      # a HuggingFace data set on disk (data_root/hf_images)
    ("model", "fc_autoencoder"): IMAGES + ["partition=random", "dataset.unsupervised=true"],
    ("model", "conv_autoencoder"): IMAGES + ["partition=random", "dataset.unsupervised=true"],
    **{("partition", mix): TWO_ROTATIONS for mix in ("mix_10_90", "mix_30_70", "linear", "random", "clustered")},
    ("partition", "natural"): ["dataset=mnist_rot4", "model=lenet", "engine=batched"],   # 4 groups: 4 clients
}


def sweep_firsts(preset: str):
    """The first value of each of a preset's sweep parameters, as overrides, and its first row's where it sweeps
    rows (hydra/sweeper=rows): one job of its grid."""
    sweeper = OmegaConf.load(CONF / "preset" / f"{preset}.yaml").get("hydra", {}).get("sweeper", {})
    params = sweeper.get("params", {}) or {}
    return [f"{k}={str(v).split(',')[0]}" for k, v in params.items()] + list((sweeper.get("rows") or [[]])[0])


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    """Tiny files of every image data set the readers know, in their on-disk layouts."""
    root = tmp_path_factory.mktemp("data")
    for folder in ("FashionMNIST", "MNIST"):
        write_mnist_like(root / folder / "raw", n_train=3000, n_test=600)
    write_mnist_like(root / "EMNIST" / "raw", prefix="emnist-byclass-", classes=62, n_train=4000, n_test=1200,
                     test_word="test")
    write_cifar10(root, per_batch=80, n_test=100)   # CIFAR CNN evaluations dominate these runs: keep the files small
    write_ag_news(root, n_train=1200, n_test=400)
    write_amazon(root, per_side=120)
    g = np.random.default_rng(0)   # a user's own table for dataset=tensors: 3 classes, 6 numeric columns
    labels = g.integers(0, 3, size=600)
    table = np.column_stack([g.normal(size=(600, 6)) + labels[:, None], labels])
    np.savetxt(root / "table.csv", table, delimiter=",", header="a,b,c,d,e,f,label", comments="", fmt="%.5g")
    try:   # a HuggingFace data set on disk for dataset=hf (optional extra): 400 + 100 grey 28x28 images
        import datasets
        features = datasets.Features({"img": datasets.Image(), "label": datasets.ClassLabel(num_classes=10)})
        splits = {split: datasets.Dataset.from_dict({"img": list(g.integers(0, 256, (n, 28, 28), dtype=np.uint8)),
                                                     "label": g.integers(0, 10, n).tolist()}, features=features)
                  for split, n in (("train", 400), ("test", 100))}
        datasets.DatasetDict(splits).save_to_disk(str(root / "hf_images"))
    except ImportError:
        pass
    return root


def shrink(cfg, root: Path):
    """The composed config made tiny by the keys it has: 2 rounds of 2 steps (FedPAC's head phase
    too; FedALA's weight learning at most 2 passes; FeSEM's local-only start-up one epoch, not 3), a few
    clients with few samples, fake data under `root`."""
    with open_dict(cfg):
        cfg.update(rounds=2, eval_every=1, progress=False, plots=False, checkpoint_every=0)
        cfg.train.update(steps=2, batch_size=8)
        d, p, a = cfg.dataset, cfg.partition, cfg.algorithm
        if "root" in d:
            d.root = str(root)
            d.train_size = None
        if d.get("name") == "tensors" and d.get("path") is None:
            d.update(path=str(root / "table.csv"), labels="label")
        if d.get("name") == "hf" and d.get("path") is None:
            if not (root / "hf_images").is_dir():
                pytest.skip("dataset=hf needs the optional HuggingFace datasets package")
            d.update(path=str(root / "hf_images"), input="img")
        if "test_size" in d:
            d.test_size = 100 if "root" not in d else None
        if "num_clusters" in p and "default_clusters" not in p and cfg.num_clusters is None:
            cfg.num_clusters = 2            # cluster-wise label partitions need K
        clusters = cfg.num_clusters or p.get("default_clusters") or 2
        if "max_samples" in p:              # mixture partitions: K defaults to the distributions (up to 8)
            p.update(num_clients=16, min_samples=10, max_samples=20)
        elif "num_clients" in p:            # label partitions and cluster skews (natural clients: the data's groups)
            p.num_clients = 2 * clusters
            for key, value in (("min_samples", 2), ("samples_per_client", 12), ("test_samples_per_client", 4),
                               ("class_samples_per_cluster", 12), ("test_class_samples_per_cluster", 4),
                               ("min_cluster_fraction", 0.01), ("min_cluster_test_fraction", 0.01)):
                if key in p:
                    p[key] = value
            if p.get("pool_class_counts"):   # pools counted for a full data set: a 30th of them fits the fake one
                p.pool_class_counts = {side: [[n // 30 for n in row] for row in rows]
                                       for side, rows in p.pool_class_counts.items()}
        for node in (a, a.get("base") or {}):
            for key, value in (("selection_size", 3), ("local_rounds", 1), ("split_after_round", 0), ("warmup_rounds", 1),
                               ("kmeans_iters", 2), ("max_passes", 2), ("head_epochs", None),
                               ("startup_epochs", 1)):
                if key in node:
                    node[key] = value
    return cfg


def _run(overrides, root, tmp_path):
    cfg = shrink(make_cfg(overrides), root)
    summary = run(cfg, tmp_path / "run")
    assert summary["status"] == "complete" and summary["rounds"] == 2
    assert (tmp_path / "run" / "metrics.csv").stat().st_size > 0


@pytest.mark.parametrize("group,option", OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_group_option_runs_two_rounds(group, option, data_root, tmp_path):
    context = INSTEAD.get((group, option), CONTEXT.get(group, []))
    _run(context + [f"{group}={option}"], data_root, tmp_path)


@pytest.mark.parametrize("preset", [pytest.param(p, marks=pytest.mark.slow) if p in SAME_FIRST_JOB else p
                                    for p in PRESETS])
def test_every_preset_runs_two_rounds(preset, data_root, tmp_path):
    _run([f"+preset={preset}"] + sweep_firsts(preset), data_root, tmp_path)


def test_every_option_is_found():
    """The lists above come from conf/: every group has options and the presets are there."""
    assert {g for g, _ in OPTIONS} == set(GROUPS)
    assert {"cam/table1", "clove/images", "fedsoft/table2_fmnist"} <= set(PRESETS)
