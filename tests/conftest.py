import os
import sys
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
from fedcluster.privacy.accounting import unbind_absl_stream  # noqa: E402

unbind_absl_stream()   # absl (dp-accounting's) imported here first, so no test's capture is the stream it keeps

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"
# The tiers, each a folder (tests/README.md): unit/ (a component by hand), runs/ (whole runs in process), cli/ (the
# command, its launchers, sweeps and files), papers/ (the paper presets and numbers), reports/ (the after-run
# package). A few helpers live in test modules of another tier (test_cli._fedcluster, test_report.make_run,
# test_every_option.shrink): every tier is on the path, as the one flat folder was.
TIERS = ("unit", "runs", "cli", "papers", "reports")
for _tier in TIERS:
    if str(ROOT / "tests" / _tier) not in sys.path:
        sys.path.append(str(ROOT / "tests" / _tier))

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
    round asks for its aggregation (algorithms/fold.py), before its clients train. Returns the function that
    undoes it."""
    originals = {name: getattr(cls, name) for name in ("aggregation",)}

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


def assert_config_is_what_ran(run_dir):
    """Issue 77: config.yaml records the run as it was settled: every key summary.json's `config` and top level
    record holds the same value there (K included, where the request left it to the data)."""
    import json
    import yaml
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    recorded = summary["config"]
    assert recorded and {k: config.get(k) for k in recorded} == recorded, \
        [k for k in recorded if config.get(k) != recorded[k]]
    assert config["num_clusters"] is not None   # settled: the data's own count where the request left it null
    assert (summary["algorithm"], summary["dataset"], summary["partition"], summary["model"]) == \
        tuple(config[g]["name"] for g in ("algorithm", "dataset", "partition", "model"))
    assert (summary["seed"], summary["rounds"], summary["table"]) == (config["seed"], config["rounds"], config.get("table"))


def archived_run_names(folder) -> list:
    """The folder names of the finished runs archived under `folder` (in packs or folders: report/packs.py)."""
    from fedcluster.report.runs import discover
    return [r.path.name for r in discover(folder).runs]


def unpacked_copy(src, dest):
    """A copy of the archive folder `src` at `dest` with every packed run written out as its run folder, as a
    sweep directory holds them (scripts/archive_runs.py --unpack)."""
    import importlib.util
    import shutil
    from fedcluster.report.packs import PACK_NAME
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(PACK_NAME))
    spec = importlib.util.spec_from_file_location("archive_runs_for_tests", ROOT / "scripts" / "archive_runs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for pack in sorted(src.rglob(PACK_NAME)):
        module.unpack(pack.parent, dest / pack.parent.relative_to(src))
    return dest


def reseal(run_dir, config: dict) -> None:
    """Seal the finished run in `run_dir` anew after a test has rewritten its config.yaml to `config` (fingerprint
    and summary digest recomputed), so it stands as a run of that config would."""
    import json
    from fedcluster.run_records.identity import config_fingerprint
    from fedcluster.run_records.integrity import summary_digest
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text())
    summary["integrity"]["config_fingerprint"] = config_fingerprint(config)
    summary["integrity"].pop("summary_sha256", None)
    summary["integrity"]["summary_sha256"] = summary_digest(summary)
    path.write_text(json.dumps(summary))


@pytest.fixture(autouse=True)
def leaves_the_standard_streams_open():
    """A test that closes the interpreter's standard streams (pytest's captured stdout/stderr, as a closed
    sys.stderr would) fails itself, by name, instead of every later test of its worker failing at setup with
    "I/O operation on closed file" (seen once, 2026-12-03, on one xdist worker after tests/cli/test_trust.py)."""
    before = sys.stdout, sys.stderr
    yield
    closed = [name for name, stream in (("sys.stdout", before[0]), ("sys.stderr", before[1]))
              if getattr(stream, "closed", False)]
    assert not closed, f"this test left {' and '.join(closed)} closed"
