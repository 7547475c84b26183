"""dataset=hf (issue 59): a HuggingFace data set on disk, built and saved by the test, runs through the
composed config as the CLI runs it: images from a save_to_disk DatasetDict (kept uint8), texts from a parquet
file (word ids for textcnn), numbers with a group column from an arrow file (natural clients). Nothing is
written outside the run directory (no HF cache), and bad input is one line."""
import json
import os

import numpy as np
import pytest
import torch

datasets = pytest.importorskip("datasets")

from conftest import make_cfg  # noqa: E402
from fedcluster.assemble import build  # noqa: E402
from fedcluster.errors import ConfigError  # noqa: E402
from fedcluster.runner import run  # noqa: E402

COMMON = ["rounds=2", "progress=false", "plots=false", "train.steps=2", "partition.val_fraction=0"]


def images(n, g):
    """28x28 grey images whose class is a bright band at rows 2c..2c+3: learnable."""
    y = g.integers(0, 10, n)
    x = (g.random((n, 28, 28)) * 60).astype(np.uint8)
    for i, c in enumerate(y):
        x[i, 2 * c: 2 * c + 4] = 250
    return x, y


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    g = np.random.default_rng(0)
    features = datasets.Features({"img": datasets.Image(), "label": datasets.ClassLabel(num_classes=10)})
    parts = {split: datasets.Dataset.from_dict(dict(zip(("img", "label"), (list(x), y))), features=features)
             for split, (x, y) in (("train", images(600, g)), ("test", images(200, g)))}
    datasets.DatasetDict(parts).save_to_disk(str(root / "images"))
    words = ["good great fine", "bad awful poor"]
    labels = g.integers(0, 2, 300)
    texts = [f"{words[c]} {words[c].split()[int(g.integers(0, 3))]} the movie" for c in labels]
    datasets.Dataset.from_dict({"review": texts, "stars": labels.tolist()}).to_parquet(str(root / "reviews.parquet"))
    n = 240
    table = datasets.Dataset.from_dict({"x": g.normal(size=(n, 4)).astype(np.float32).tolist(),
                                        "y": g.integers(0, 2, n).tolist(),
                                        "site": [f"s{i % 4}" for i in range(n)]})
    table.save_to_disk(str(root / "sites"))
    arrow = next((root / "sites").glob("*.arrow"))
    return root, arrow


def test_images_from_a_saved_datasetdict_stay_uint8_and_run(saved, tmp_path):
    root, _ = saved
    overrides = ["dataset=hf", f"dataset.path={root / 'images'}", "dataset.input=img", "model=lenet",
                 "partition=dirichlet", "partition.num_clients=6", "partition.min_samples=5", "algorithm=ifca",
                 "num_clusters=2", *COMMON]
    _, fed, _, _ = build(make_cfg(overrides))
    assert fed.data.train.x.storage.dtype == torch.uint8 and tuple(fed.data.in_shape) == (1, 28, 28)
    assert int(fed.data.train.n.sum()) == 600 and int(fed.data.local_test.n.sum()) == 200
    x = fed.data.train.x[0, :2]
    assert x.dtype == torch.float32 and 0.0 <= float(x.min()) and float(x.max()) <= 1.0
    home = os.environ.get("HOME")
    before = sorted(os.listdir(home)) if home else None
    summary = run(make_cfg(overrides), tmp_path / "run")
    assert summary["status"] == "complete" and summary["num_clients"] == 6
    assert before is None or sorted(os.listdir(home)) == before   # no cache written beside the user's files


def test_texts_from_parquet_become_word_ids_for_textcnn(saved, tmp_path):
    root, _ = saved
    overrides = ["dataset=hf", f"dataset.path={root / 'reviews.parquet'}", "dataset.input=review",
                 "dataset.labels=stars", "dataset.vocab_size=50", "dataset.max_len=8", "model=textcnn",
                 "partition=dirichlet", "partition.num_clients=4", "partition.min_samples=5", "algorithm=fedavg",
                 *COMMON]
    _, fed, _, _ = build(make_cfg(overrides))
    ids = fed.data.train.x[0, :5]   # word ids (held as the run's dtype, as dataset=ag_news's are): 0 pad, 1 unknown
    assert fed.data.in_shape == (8,) and torch.equal(ids, ids.round()) and 0 <= ids.min() and ids.max() < 50 + 2
    assert (ids[:, 0] >= 2).all()   # every review starts with a known word
    assert int(fed.data.train.n.sum()) == 240 and int(fed.data.local_test.n.sum()) == 60   # test_fraction 0.2
    assert run(make_cfg(overrides), tmp_path / "run")["status"] == "complete"


def test_numbers_from_an_arrow_file_with_a_group_column_make_natural_clients(saved, tmp_path):
    _, arrow = saved
    overrides = ["dataset=hf", f"dataset.path={arrow}", "dataset.input=x", "dataset.labels=y",
                 "dataset.distributions=site", "model=mlp", "partition=natural", "algorithm=ifca", "num_clusters=2",
                 *COMMON]
    summary = run(make_cfg(overrides), tmp_path / "run")
    assert summary["num_clients"] == 4 and summary["distributions"] == ["s0", "s1", "s2", "s3"]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("extra,message", [
    (["dataset.input=pixels"], r"^dataset.path=.*: no column 'pixels'; its columns: \['img', 'label'\]$"),
    (["dataset.split=validation"], r"^dataset.path=.* has the splits \['test', 'train'\]; dataset.split=validation"),
])
def test_bad_input_is_one_line_before_anything_is_written(saved, tmp_path, extra, message):
    root, _ = saved
    cfg = make_cfg(["dataset=hf", f"dataset.path={root / 'images'}", "dataset.input=img", "model=lenet",
                    "partition=dirichlet", "partition.num_clients=4", *COMMON, *extra])
    with pytest.raises(ConfigError, match=message):
        run(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_numeric_features_can_be_standardized_and_only_they(saved):
    root, arrow = saved
    common = ["dataset=hf", f"dataset.path={arrow}", "dataset.input=x", "dataset.labels=y", "model=mlp",
              "partition=dirichlet", "partition.num_clients=2", "partition.min_samples=5", "algorithm=fedavg", *COMMON]
    _, fed, _, _ = build(make_cfg(common + ["dataset.standardize=true"]))
    x = fed.data.train.x[fed.data.train.mask]
    assert x.mean(0).abs().max() < 0.2 and ((x.std(0) - 1).abs() < 0.2).all()   # the training rows' scale
    with pytest.raises(ConfigError, match=r"^dataset.standardize=true scales numeric features; dataset.input=img is "
                                          r"a image column"):
        build(make_cfg(["dataset=hf", f"dataset.path={root / 'images'}", "dataset.input=img", "model=lenet",
                        "partition=dirichlet", "partition.num_clients=2", "dataset.standardize=true", *COMMON]))
