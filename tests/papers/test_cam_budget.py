"""Fed-CAM's training budget (issue "Paper fidelity", item 4): the presets' literal budget of 10
local steps, the `train.epochs` alternative the paper's Alg. 1 speaks of, the centralised
learning-curve check, and eq. (6) against a plain mean as the cluster update."""
import importlib.util
from pathlib import Path

import pandas as pd
import pytest
import torch

from fedcluster.assemble import build
from fedcluster.errors import ConfigError
from fedcluster.runner import run

from conftest import make_cfg
from fakedata import write_mnist_like

ROOT = Path(__file__).resolve().parents[2]
FAST = ["partition.num_clients=10", "partition.min_samples=4", "rounds=2", "eval_every=1",
        "progress=false", "checkpoint_every=0", "num_clusters=2"]
LENET = ["model=lenet"]   # runs whose point is not the model: LeNet keeps them short (the presets' CNN runs in test_every_option)


@pytest.fixture
def fake_fmnist(tmp_path):
    write_mnist_like(tmp_path / "data" / "FashionMNIST" / "raw", n_train=400, n_test=100)
    return tmp_path / "data"


def _schedule(cfg):
    _, fed, _, trainer = build(cfg)
    n = fed.data.train.n
    return n, trainer.schedule(n, fed.data.train.x.shape[1], torch.Generator().manual_seed(0))


def test_cam_presets_default_to_the_papers_ten_local_steps(fake_fmnist):
    """Read literally, Fed-CAM §5 gives every client 10 SGD steps of batch 32 per round."""
    for table, partition in (("table1", "cluster_nclass"), ("table2", "dirichlet")):
        cfg = make_cfg([f"+preset=cam/{table}", f"dataset.root={fake_fmnist}", f"partition={partition}",
                        "algorithm=fedavg"] + FAST)
        n, sched = _schedule(cfg)
        assert cfg.train.steps == 10 and cfg.train.batch_size == 32
        assert sched.index.shape[:2] == (len(n), 10)
        assert sched.valid.sum((1, 2)).tolist() == [10 * min(32, k) for k in n.tolist()]


def test_cam_presets_take_whole_epochs_instead_of_steps(fake_fmnist):
    """train.steps=null train.epochs=E: every client passes over each of its samples E times a
    round (Alg. 1's E local epochs), whatever its size, instead of a fixed number of steps."""
    cfg = make_cfg(["+preset=cam/table1", f"dataset.root={fake_fmnist}", "partition=cluster_nclass", "algorithm=fedavg",
                    "train.steps=null", "train.epochs=3"] + FAST)
    n, sched = _schedule(cfg)
    assert len(set(n.tolist())) > 1                           # clients of different sizes
    assert sched.valid.sum((1, 2)).tolist() == [3 * k for k in n.tolist()]
    for c, k in enumerate(n.tolist()):                         # each sample exactly E times
        seen = sched.index[c][sched.valid[c]]
        assert torch.bincount(seen, minlength=k)[:k].eq(3).all()


def test_epoch_budget_reaches_the_run_and_changes_its_result(fake_fmnist, tmp_path):
    """The epoch budget is a real run setting: recorded in the run's config and a different
    training, not a label."""
    common = ["+preset=cam/table1", f"dataset.root={fake_fmnist}", "partition=cluster_nclass", "algorithm=ifca_cam",
              "algorithm.warmup_rounds=1"] + FAST + LENET
    steps = run(make_cfg(common), tmp_path / "steps")
    epochs = run(make_cfg(common + ["train.steps=null", "train.epochs=2"]), tmp_path / "epochs")
    saved = (tmp_path / "epochs" / "config.yaml").read_text()
    assert "steps: null" in saved and "epochs: 2" in saved
    frames = [pd.read_csv(tmp_path / d / "metrics.csv") for d in ("steps", "epochs")]
    assert not frames[0]["value"].equals(frames[1]["value"])
    assert steps["local"]["local_test_accuracy"] != epochs["local"]["local_test_accuracy"]


def test_eq6_and_plain_mean_cluster_updates_are_both_selectable_and_differ(fake_fmnist, tmp_path):
    """One cluster update for IFCA and IFCA-CAM: the within-cluster mean by default for both;
    eq. 6 (Fed-CAM's literal rule) is the sensitivity option of each (cam_fmnist_table1.md)."""
    common = ["+preset=cam/table1", f"dataset.root={fake_fmnist}", "partition=cluster_nclass", "algorithm=ifca_cam",
              "algorithm.warmup_rounds=1"] + FAST + LENET
    plain = ["+preset=cam/table1", f"dataset.root={fake_fmnist}", "partition=cluster_nclass", "algorithm=ifca"] + FAST
    assert build(make_cfg(plain))[2].update == "mean"
    assert build(make_cfg(plain + ["algorithm.update=eq6"]))[2].update == "eq6"
    mean = make_cfg(common)
    assert build(mean)[2].base.update == "mean"
    eq6 = make_cfg(common + ["algorithm.base.update=eq6"])
    assert build(eq6)[2].base.update == "eq6"
    run(eq6, tmp_path / "eq6")
    run(mean, tmp_path / "mean")
    a, b = (pd.read_csv(tmp_path / d / "metrics.csv") for d in ("eq6", "mean"))
    assert not a["value"].equals(b["value"])


def test_learning_curve_script_trains_the_papers_optimizer_on_iid_data(fake_fmnist, monkeypatch, capsys):
    """scripts/cam_learning_curve.py: centralised SGD (the paper's lr, momentum, batch) on the
    pooled training set, test accuracy at each checkpoint, one record per checkpoint."""
    spec = importlib.util.spec_from_file_location("cam_learning_curve", ROOT / "scripts" / "cam_learning_curve.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    from fedcluster.data import images
    real = images.ImageSource

    def fake_source(**kw):
        return real(root=str(fake_fmnist), **kw)

    monkeypatch.setattr(script, "ImageSource", fake_source)
    rows = script.curve(lr=0.05, checkpoints=[1, 30], batch=32, momentum=0.9, init="xavier", seed=0)
    assert [r["steps"] for r in rows] == [1, 30]
    assert rows[1]["epochs"] == round(30 * 32 / 400, 2)
    assert all(0 <= r["test_accuracy"] <= 1 for r in rows)
    again = script.curve(lr=0.05, checkpoints=[1, 30], batch=32, momentum=0.9, init="xavier", seed=0)
    assert [r["test_accuracy"] for r in again] == [r["test_accuracy"] for r in rows]   # seeded


def test_fesem_cam_warms_up_by_a_few_local_epochs_and_its_control_matches(fake_fmnist, tmp_path):
    """FeSEM-CAM's warm-up (Fed-CAM Alg. 1 (2), §3.3): one round of base.startup_epochs local epochs, then
    the first clustering and h from round 1; the matched control is plain FeSEM with the same start-up.
    The start-up round trains each client for that many passes over its data, whatever train.steps says."""
    common = ["+preset=cam/table1", f"dataset.root={fake_fmnist}", "partition=cluster_nclass"] + FAST
    cam = build(make_cfg(common + ["algorithm=fesem_cam"]))[2]
    assert (cam.warmup_rounds, cam.base.local_rounds, cam.base.startup_epochs) == (1, 1, 3)
    control = build(make_cfg(common + ["algorithm=fesem", "algorithm.distance_on=fc", "algorithm.startup_epochs=3"]))
    hw, fed, fesem, trainer = control
    assert (fesem.local_rounds, fesem.startup_epochs, fesem.distance_on) == (1, 3, "fc")
    fesem.setup(fed)
    plan = fesem.plan(0, fed)
    assert [p.epochs for p in plan.phases] == [3] and set(plan.phases[0].trainable) == set(fesem.local)
    n = fed.data.train.n
    schedule = trainer.schedule(n, fed.data.train.x.shape[1], torch.Generator().manual_seed(0), plan.phases[0].epochs)
    steps_per_epoch = (n.max().item() + trainer.batch_size - 1) // trainer.batch_size
    assert schedule.index.shape[1] == 3 * steps_per_epoch != trainer.steps    # epochs, not the run's 10 steps
    cam.setup(fed)
    assert cam.phase(0) == "base" and cam.phase(1) == "cam"
    with pytest.raises(ConfigError, match=r"algorithm.startup_epochs=0 is out of range; allowed: .*>= 1"):
        run(make_cfg(common + ["algorithm=fesem", "algorithm.startup_epochs=0"]), tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
