"""Bad input is refused in one line, naming the key or file and what is allowed, before training
starts and before anything is written: models that cannot read the data, damaged data files,
runs too large for memory (estimated before any data is drawn) and values that used to be
accepted (tests for issue "input checks")."""
import subprocess
import sys

import numpy as np
import pytest

from fedcluster.command.cli import user_error
from fedcluster.errors import ConfigError, DataFileError
from fedcluster.runner import run
from fedcluster.config.validate import validate

from conftest import ROOT, make_cfg
from fakedata import write_cifar10, write_idx, write_mnist_like

BASE = ["partition.num_clients=10", "partition.min_samples=20", "partition.max_samples=30", "train.epochs=1",
        "rounds=2", "dataset.test_size=100", "progress=false", "plots=false"]
DIGITS = ["dataset=digits", "partition=random"]


def refused(tmp_path, overrides, *needles, selection=True):
    """Build and run the config as the CLI does; the error must be a user error of one line
    holding every needle, and the run directory must not exist afterwards."""
    out = tmp_path / "run"
    extra = ["algorithm.selection_size=5"] if selection and not any(o.startswith("algorithm=") for o in overrides) else []
    with pytest.raises(Exception) as info:
        cfg = make_cfg(BASE + extra + overrides)
        run(cfg, out)
    err = user_error(info.value)
    assert err is not None, f"not a user error: {info.value!r}"
    msg = str(err)
    assert "\n" not in msg.strip(), msg
    for needle in needles:
        assert needle in msg, msg
    assert not out.exists()
    return msg


# 1. a model that cannot read the data, or whose outputs the task's loss cannot use
@pytest.mark.parametrize("overrides,needles", [
    (["model=textcnn"] + DIGITS, ["model.vocab_size", "model=textcnn", "dataset=digits"]),
    (["model=textcnn", "model.vocab_size=100"] + DIGITS, ["model=textcnn", "dataset=digits", "conv1d"]),
    (["model=mlp", "dataset.unsupervised=true"] + DIGITS,
     ["model=mlp", "dataset=digits", "task reconstruction", "outputs shape (4, 10)", "(4, 1, 8, 8)"]),
    (["model=fc_autoencoder"], ["model=fc_autoencoder", "dataset=synthetic", "regression loss needs (4,)"]),
    (["model=fc_autoencoder"] + DIGITS, ["model=fc_autoencoder", "classification loss needs (4, 10)"]),
])
def test_model_that_cannot_train_on_the_data(tmp_path, overrides, needles):
    refused(tmp_path, overrides, *needles)


def test_fitting_models_still_pass_the_dry_run(tmp_path):
    from fedcluster.assemble import build
    for overrides in (["model=mlp"] + DIGITS, ["model=fc_autoencoder", "dataset.unsupervised=true"] + DIGITS,
                      ["model=conv_autoencoder", "dataset.unsupervised=true"] + DIGITS, []):
        build(make_cfg(BASE + ["algorithm.selection_size=5"] + overrides))


# 2. damaged data files
def _mnist(tmp_path, gz=False):
    raw = tmp_path / "data" / "MNIST" / "raw"
    write_mnist_like(raw, gz=gz)
    return raw


def _damage_truncated(raw):
    f = raw / "train-images-idx3-ubyte"
    f.write_bytes(f.read_bytes()[:5000])
    return f, "truncated: header says 200x28x28 = 156,800 bytes, file has 4,984"


def _damage_magic(raw):
    f = raw / "train-images-idx3-ubyte"
    data = bytearray(f.read_bytes())
    data[2] = 0x0D
    f.write_bytes(bytes(data))
    return f, "wrong magic 0x00000d03; expected an unsigned-byte IDX file"


def _damage_empty(raw):
    f = raw / "t10k-labels-idx1-ubyte"
    f.write_bytes(b"")
    return f, "empty file (0 bytes)"


def _damage_longer(raw):
    f = raw / "t10k-labels-idx1-ubyte"
    f.write_bytes(f.read_bytes() + b"\0\0\0")
    return f, "3 bytes longer than its header's 60 = 60 bytes"


def _damage_count(raw):
    write_idx(raw / "train-labels-idx1-ubyte", np.zeros(50, dtype=np.uint8))
    return raw / "train-images-idx3-ubyte", "holds 200 images but"


def _damage_labels(raw):
    write_idx(raw / "train-labels-idx1-ubyte", np.full(200, 200, dtype=np.uint8))
    return raw / "train-labels-idx1-ubyte", "holds label 200; MNIST has 10 classes"


@pytest.mark.parametrize("damage", [_damage_truncated, _damage_magic, _damage_empty, _damage_longer, _damage_count,
                                    _damage_labels])
def test_damaged_idx_file_is_named(tmp_path, damage):
    raw = _mnist(tmp_path)
    path, what = damage(raw)
    msg = refused(tmp_path, ["dataset=mnist", f"dataset.root={tmp_path / 'data'}", "model=lenet"], str(path), what)
    assert "dataset.download=true" in msg


def test_damaged_gzip_files_are_named(tmp_path):
    raw = _mnist(tmp_path, gz=True)
    f = raw / "train-images-idx3-ubyte.gz"
    f.write_bytes(f.read_bytes()[:3000])
    refused(tmp_path, ["dataset=mnist", f"dataset.root={tmp_path / 'data'}", "model=lenet"], str(f), "truncated gzip")
    g = raw / "train-labels-idx1-ubyte.gz"
    g.write_bytes(b"plain text, not gzip")
    with pytest.raises(DataFileError, match="not gzip"):
        from fedcluster.data.readers import read_idx
        read_idx(g)


def test_garbage_cifar_pickle_is_named(tmp_path):
    write_cifar10(tmp_path / "data")
    bad = tmp_path / "data" / "cifar-10-batches-py" / "data_batch_3"
    bad.write_bytes(b"\x80\x04garbage" * 10)
    refused(tmp_path, ["dataset=cifar10", f"dataset.root={tmp_path / 'data'}", "model=lenet"], str(bad),
            "not a pickled CIFAR-10 batch")
    import pickle
    bad.write_bytes(pickle.dumps({b"data": [1, 2, 3]}))
    refused(tmp_path, ["dataset=cifar10", f"dataset.root={tmp_path / 'data'}", "model=lenet"], str(bad),
            "expected a pickled dict")


def test_damaged_text_files_are_named(tmp_path):
    from fedcluster.data.text import read_ag_news_csv, read_review_file
    (tmp_path / "a.csv").write_text('"World","title","text"\n')
    with pytest.raises(DataFileError, match=r"a.csv, line 1: class index 'World' is not 1-4"):
        read_ag_news_csv(tmp_path / "a.csv")
    (tmp_path / "b.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataFileError, match="b.csv: not a UTF-8 CSV file"):
        read_ag_news_csv(tmp_path / "b.csv")
    (tmp_path / "c.review").write_text("a:1 b:2\n")
    with pytest.raises(DataFileError, match="c.review: no line ends with a '#label#"):
        read_review_file(tmp_path / "c.review")


# 3. memory, estimated before any data is drawn or the model allocated
@pytest.fixture
def limit_16gib(monkeypatch):
    import fedcluster.data.budget as budget
    monkeypatch.setattr(budget, "available_bytes", lambda device: 16 * budget.GiB)   # any machine: the same limit


@pytest.mark.parametrize("overrides,key", [
    (["dataset.dim=1000000000"], "dataset.dim=1000000000: this run needs at least"),
    (["dataset=separated_regression", "dataset.dim=1000000000"], "dataset.dim=1000000000: this run needs"),
    (["partition.num_clients=100000000"], "partition.num_clients=100000000: this run needs"),
    (["dataset.test_size=1000000000"], "dataset.test_size=1000000000: this run needs"),
    (["dataset.dim=100000", "partition.min_samples=100", "partition.max_samples=100000"],
     "partition.max_samples=100000: this run needs"),
    (["model=mlp", "model.hidden=[100000,100000]"], "model=mlp on inputs of shape (10,): this run needs"),
])
def test_too_large_is_refused_at_once_naming_its_key(tmp_path, limit_16gib, overrides, key, monkeypatch):
    """Refused before any sample is drawn (and so before the model's weights, which are allocated
    after the data: assemble.build). A draw fails the test at once; this was a wall-clock bound before."""
    import fedcluster.data.federated as federated
    real_generator = federated.generator

    def generator(seed, purpose, *rest):   # every sample draw of federate() takes its generator first
        if str(purpose).startswith("draw-"):
            pytest.fail(f"refused only after drawing data ({purpose})")
        return real_generator(seed, purpose, *rest)
    monkeypatch.setattr(federated, "generator", generator)
    monkeypatch.setattr(federated.SourceView, "pool", lambda *a, **k: pytest.fail("refused only after drawing data"))
    msg = refused(tmp_path, overrides, key, "16.0 GiB is available")
    assert msg.rsplit("; ", 1)[1].startswith(("lower ", "use a smaller model")), msg


# 4. values that used to be accepted, or crashed
@pytest.mark.parametrize("overrides,needles", [
    (["model=mlp", "model.hidden=[0]"], ["model.hidden[0]=0", ">= 1"]),
    (["model=mlp", "model.hidden=[-3]"], ["model.hidden[0]=-3", ">= 1"]),
    (["model=fc_autoencoder", "model.hidden=[]", "dataset.unsupervised=true"] + DIGITS, ["model.hidden=[] is empty"]),
    (["model=conv_autoencoder", "model.channels=[4]", "dataset.unsupervised=true"] + DIGITS,
     ["model.channels=[4]", "exactly 2"]),
    (["model=cifar_cnn", "model.channels=[]"] + DIGITS, ["model.channels=[] is empty"]),
    (["model=bn_cnn", "model.dropout=1.0"] + DIGITS, ["model.dropout=1.0", "[0, 1)"]),
    (["hardware.precision=tf32"], ["hardware.precision='tf32'", "['fp32', 'bf16']"]),
    (["rounds=99999999999999999999"], ["rounds=99999999999999999999", "64 bits"]),
    (["seed=18446744073709551616"], ["seed=18446744073709551616", "64 bits"]),
    (["rounds=2000000"], ["rounds=2000000", "[1, 1000000]"]),
    (["train.epochs=100000000"], ["train.epochs=100000000", "[1, 1000000]"]),
    (["train.batch_size=100000000000"], ["train.batch_size=100000000000", "[1, 100000]"]),
    (["objective=local_val_accuracy"], ["objective=local_val_accuracy", "regression", "['local_val_mse']"]),
    (["objective=local_val_accuracy", "model=fc_autoencoder", "dataset.unsupervised=true"] + DIGITS,
     ["objective=local_val_accuracy", "reconstruction"]),
    (["objective=local_val_mse"] + DIGITS, ["objective=local_val_mse", "['local_val_accuracy', 'local_val_macro_f1']"]),
    (["algorithm=clove", "algorithm.server_lr=-1"], ["algorithm.server_lr=-1.0", "> 0"]),
    (["algorithm=clove", "algorithm.server_optimizer=foo"], ["algorithm.server_optimizer='foo'", "['adam', 'sgd']"]),
    (["partition.min_samples=2000", "partition.max_samples=3000"] + DIGITS, ["has 674 train images", "asks for"]),
])
def test_bad_values_are_refused(tmp_path, overrides, needles):
    refused(tmp_path, overrides, *needles)


def test_good_objective_and_bf16_on_cpu_still_pass():
    validate(make_cfg(BASE + ["objective=local_val_mse", "hardware.precision=bf16"]))
    validate(make_cfg(BASE + DIGITS + ["objective=local_val_macro_f1", "model=mlp", "model.hidden=[]"]))


# end to end through the command line (subprocesses: a few only)
def _cli(tmp_path, *args, memory_cap_bytes=None):
    out = tmp_path / "run"

    def cap():   # the process's address space capped: building data it cannot hold raises, never a one-line refusal
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (memory_cap_bytes, memory_cap_bytes))
    proc = subprocess.run([sys.executable, "-m", "fedcluster", *BASE, "algorithm.selection_size=5", *args,
                           f"hydra.run.dir={out}"], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
                          preexec_fn=cap if memory_cap_bytes else None)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("fedcluster: error: "), proc.stderr
    assert not out.exists()
    return lines[0]


def test_cli_one_line_refusals(tmp_path):
    assert "model.vocab_size" in _cli(tmp_path, "model=textcnn", *DIGITS)
    assert "does not fit" in _cli(tmp_path, "model=mlp", "dataset.unsupervised=true", *DIGITS)
    # refused before any data is built: under an 8 GiB address-space cap (the command itself needs ~3.3 GiB
    # of it) a data set of this size could not even be allocated. (This was a wall-clock bound before,
    # which a loaded machine broke.)
    assert "dataset.dim=1000000000: this run needs" in _cli(tmp_path, "dataset.dim=1000000000",
                                                            memory_cap_bytes=8 * 2**30)
    raw = _mnist(tmp_path)
    _damage_truncated(raw)
    assert "truncated: header says" in _cli(tmp_path, "dataset=mnist", f"dataset.root={tmp_path / 'data'}", "model=lenet")


def test_feature_algorithm_with_a_model_without_features(tmp_path):
    out = tmp_path / "run"
    cfg = make_cfg(["dataset=digits", "dataset.distributions=[{rotation:0}]", "partition=dirichlet",
                    "partition.num_clients=10", "rounds=1", "train.epochs=1", "progress=false", "plots=false",
                    "algorithm=fedproto", "model=linear"])
    with pytest.raises(ConfigError, match=r"algorithm=fedproto reads the model's features but model=linear has none"):
        run(cfg, out)
    assert not out.exists()


@pytest.mark.parametrize("overrides,needles", [
    (["dataset.distributions=[{rotation:abc}]"], ["dataset.distributions[0].rotation='abc' is not allowed", "multiple of 90"]),
    (["dataset.distributions=[{rotation:90.5}]"], ["dataset.distributions[0].rotation=90.5 is not allowed"]),
    (["dataset.distributions=[{rotaton:0}]"], ["dataset.distributions[0].rotaton is not a setting; allowed: subset, rotation"]),
    (["dataset.distributions=[null]"], ["dataset.distributions[0]=None is not a mapping"]),
    (["dataset.distributions=[3]"], ["dataset.distributions[0]=3 is not a mapping"]),
    (["dataset.distributions=abc"], ["dataset.distributions='abc' is not a list"]),
    (["dataset.distributions=[{subset:upper}]"], ["dataset.distributions[0].subset='upper' is unknown for digits"]),
    (["dataset.augment={pad:4}"], ["dataset.augment.pad is not a setting; allowed: padding, hflip"]),
    (["dataset.augment=yes"], ["dataset.augment='yes' is not allowed"]),
    (["dataset.augment={padding:2.5}"], ["dataset.augment.padding=2.5 is not allowed"]),
    (["dataset.augment={hflip:3}"], ["dataset.augment.hflip=3 is not allowed"]),
    (["+dataset.reader_kwargs={foo:1}"], ["dataset.reader_kwargs.foo is not a setting of the digits reader; "
                                          "allowed: test_fraction"]),
])
def test_bad_image_source_settings_are_refused_before_any_data_is_read(tmp_path, overrides, needles):
    refused(tmp_path, DIGITS + overrides, *needles)


def test_good_image_source_settings_still_run(tmp_path):
    summary = run(make_cfg(BASE + ["algorithm.selection_size=5"] + DIGITS +
                           ["dataset.distributions=[{rotation:0},{rotation:270}]", "dataset.augment={padding:2}",
                            "+dataset.reader_kwargs={test_fraction:0.3}"]), tmp_path / "run")
    assert summary["status"] == "complete"


@pytest.mark.parametrize("value", ["0", "1", "1.5"])
def test_fedsoft_smoother_is_checked_once_with_the_range_fedsoft_needs(tmp_path, value):
    """validate.py and FedSoft agree: the smoother is in (0, 1) (it used to allow 0 and 1.5 and
    leave FedSoft to fail later)."""
    refused(tmp_path, [f"algorithm.smoother={value}"], f"algorithm.smoother={float(value)} is out of range; allowed: in (0, 1)")


def test_an_unknown_engine_name_is_an_error_in_the_trainer_too():
    """LocalTrainer.train used to train sequentially under any name it did not know."""
    from fedcluster.local_training.local import LocalTrainer
    with pytest.raises(ValueError, match="engine='fast' is unknown"):
        LocalTrainer.train(object.__new__(LocalTrainer), None, "fast")


@pytest.mark.parametrize("overrides", [["algorithm=ifca_cam", "rounds=5", "algorithm.warmup_rounds=5"],
                                       ["algorithm=ifca_cam", "rounds=20", "algorithm.warmup_rounds=30"]])
def test_a_warm_up_that_covers_every_round_is_refused(tmp_path, overrides):
    """IFCA-CAM whose FedAvg warm-up lasts the whole run is a FedAvg run under IFCA-CAM's name (the
    leaderboard's 30-round protocol was, 2026-11-26): refused, naming both settings."""
    refused(tmp_path, overrides, "covers all rounds=", "algorithm=ifca_cam would never leave", "warmup_rounds < rounds")


def test_a_warm_up_shorter_than_the_run_and_fesem_cam_s_own_start_up_are_accepted(tmp_path):
    from fedcluster.config.validate import validate
    validate(make_cfg(BASE + ["algorithm=ifca_cam", "rounds=5", "algorithm.warmup_rounds=4"]))
    validate(make_cfg(BASE + ["algorithm=ifca_cam", "rounds=20"]))   # its default, 30 % of the rounds: 6
    validate(make_cfg(BASE + ["algorithm=fesem_cam", "rounds=1"]))   # its warm-up is its base's start-up
