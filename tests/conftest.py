import os
from pathlib import Path

# pytest-xdist workers share the machine's cores: each gets its share of CPU threads (CI: 2 workers on
# 2 cores, one thread each), set before torch loads and inherited by the commands the tests start. Two
# threads per worker on 2 cores made test_cam_runs + test_every_option 16 % slower (175 s vs 151 s,
# 2026-11-26). A value the user set is kept.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT") and "OMP_NUM_THREADS" not in os.environ:
    _workers = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // _workers))

import pytest  # noqa: E402

from fedcluster.config.store import compose_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"

# Small, fast settings for end-to-end tests of the synthetic default.
SMALL = ["partition.num_clients=12", "partition.min_samples=20", "partition.max_samples=40",
         "train.epochs=2", "rounds=3", "progress=false", "plots=false", "dataset.test_size=200"]


def make_cfg(overrides=()):
    """The config the CLI composes for `overrides` (this checkout's conf/)."""
    return compose_config(overrides, CONF)


@pytest.fixture
def small_cfg():
    def build(*extra, algorithm="fedsoft"):
        base = SMALL + [f"algorithm={algorithm}"]
        if algorithm == "fedsoft":
            base.append("algorithm.selection_size=6")
        return make_cfg(base + list(extra))
    return build


# A small label-skewed image run on learnable fake Fashion-MNIST (the `fmnist_root` fixture).
# Engine-agreement runs compare three formulations on the same tiny job: one client per cluster.
ENGINE_CHECK = ["partition.num_clients=4", "partition.samples_per_client=30", "partition.test_samples_per_client=10"]
IMAGE_SKEW = ["dataset=fashion_mnist", "dataset.distributions=[{rotation:0}]", "model=lenet", "partition=label_skew1",
              "num_clusters=4", "partition.num_clients=8", "partition.samples_per_client=60",
              "partition.test_samples_per_client=20", "train.optimizer=adam", "train.lr=0.003", "train.batch_size=20",
              "rounds=3", "progress=false", "checkpoint_every=0", "plots=false", "partition.val_fraction=0"]


@pytest.fixture(scope="module")
def fmnist_root(tmp_path_factory):
    """Learnable fake Fashion-MNIST in its on-disk layout."""
    from fakedata import write_learnable_mnist_like
    root = tmp_path_factory.mktemp("fmnist")
    write_learnable_mnist_like(root / "FashionMNIST" / "raw", n_train=2000, n_test=600)
    return root


def softmax_grad(W, b, x, y):
    """Gradient of the mean cross-entropy of a linear softmax model x @ W.T + b, by hand (numpy)."""
    import numpy as np
    logits = x @ W.T + b
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    r = p - np.eye(W.shape[0])[y]
    return r.T @ x / len(x), r.mean(0)


def die_in_round(monkeypatch, cls, at_round: int, error: Exception):
    """Make every run of algorithm class `cls` raise `error` in round `at_round` (0-based), where the
    round hands its trained rows over: `aggregate`, or `fold` for a method whose aggregation folds
    chunk by chunk (algorithms/fold.py). Returns the function that undoes it."""
    originals = {name: getattr(cls, name) for name in ("aggregate", "fold")}

    def dying(name):
        def method(self, t, *args, **kwargs):
            if t == at_round:
                raise error
            return originals[name](self, t, *args, **kwargs)
        return method
    for name in originals:
        monkeypatch.setattr(cls, name, dying(name))

    def undo():
        for name, original in originals.items():
            monkeypatch.setattr(cls, name, original)
    return undo


# Options that are another option's class with other settings (cfl_calibrated: CFL; fedem_top: FedEM; fedsoft_cifar,
# fedsoft_letters: FedSoft; fedprox_plus: fedavg_plus's ensemble of FedProx): the same code resumes, packs and scores them,
# so the every-algorithm tests keep them out of CI's 15 minutes (`pytest -m slow` runs them)
SAME_CLASS_AS_ANOTHER = ("cfl_calibrated", "fedem_top", "fedsoft_cifar", "fedsoft_letters", "fedprox_plus")
