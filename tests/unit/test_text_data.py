"""The text readers on tiny files in the real on-disk formats (AG News CSV, the processed Amazon
reviews), the TextCNN, and the CLoVE text presets running unchanged on those files."""
import numpy as np
import pytest
import torch

from conftest import make_cfg
from fakedata import write_ag_news, write_amazon
from fedcluster.data.text import PAD, UNKNOWN, TextSource, read_ag_news_csv, read_review_file
from fedcluster.errors import ConfigError, DataNotFoundError


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    write_ag_news(root, n_train=400, n_test=80)
    write_amazon(root, per_side=60)
    return root


def test_ag_news_csv_fields_with_commas_and_quotes(tmp_path):
    (tmp_path / "a.csv").write_text('"3","Wall St. Bears Claw Back, ""Again""","Reuters - Short-sellers are back."\n'
                                   '"1","Title","Body"\n')
    texts, labels = read_ag_news_csv(tmp_path / "a.csv")
    assert list(labels) == [2, 0]
    assert texts[0] == 'Wall St. Bears Claw Back, "Again" Reuters - Short-sellers are back.'


def test_ag_news_source_token_ids(root):
    s = TextSource("ag_news", root=str(root), vocab_size=10, max_len=8)
    x, y = s.pool("train")
    assert x.shape == (400, 8) and s.in_shape == (8,) and s.num_classes == 4 and set(y.tolist()) == {0, 1, 2, 3}
    assert float(x.max()) <= 11 and float(x.min()) >= 0 and bool((x == x.round()).all())   # ids 0..vocab+1
    tx, _ = s.pool("test")
    assert tx.shape == (80, 8)
    big = TextSource("ag_news", root=str(root), vocab_size=1000, max_len=20)
    bx, _ = big.pool("train")
    assert bool((bx[:, -1] == PAD).all())          # short texts are padded at the end
    assert not bool((bx == UNKNOWN).any())          # every training word is in a large enough vocabulary
    assert bool((x == UNKNOWN).any())               # a 10-word vocabulary leaves words out: id 1


def test_amazon_reviews_parse_features_and_labels(root):
    reviews, labels = read_review_file(root / "amazon" / "processed_acl" / "books" / "positive.review")
    assert len(reviews) == 60 and set(labels) == {1} and all("#label#" not in r for r in reviews)
    s = TextSource("amazon", root=str(root), vocab_size=50, test_fraction=0.25)
    assert s.distribution_names == ["books", "dvd", "electronics", "kitchen"] and s.num_classes == 2
    x, y = s.pool("train", 0)
    tx, ty = s.pool("test", 0)
    assert len(y) == 90 and len(ty) == 30 and x.shape[1] == s.in_shape[0] <= 50
    assert set(np.unique(x.numpy())) <= {0.0, 1.0} and set(y.tolist()) == {0, 1}


def test_missing_files_and_bad_values_are_one_line_errors(tmp_path, root):
    with pytest.raises(DataNotFoundError, match="ag_news/train.csv not found"):
        TextSource("ag_news", root=str(tmp_path))
    with pytest.raises(ConfigError, match="dataset.domains"):
        TextSource("amazon", root=str(root), domains=["toys"])
    with pytest.raises(ConfigError, match="not a text data set"):
        TextSource("imdb", root=str(root))


def test_textcnn_reads_token_ids():
    from fedcluster.models import TextCNN
    model = TextCNN((12,), 4, vocab_size=30)
    x = torch.randint(0, 32, (5, 12)).float()
    assert model(x).shape == (5, 4)


@pytest.mark.parametrize("preset", ["clove/text", "clove/text_amazon"])
def test_text_presets_run_unchanged_on_files_in_the_real_formats(preset, root, tmp_path):
    """The preset's first sweep job with only the data folder and the length changed."""
    from omegaconf import OmegaConf

    from conftest import CONF
    from fedcluster.runner import run
    params = OmegaConf.load(CONF / "preset" / f"{preset}.yaml").hydra.sweeper.params
    first = [f"{k}={str(v).split(',')[0]}" for k, v in params.items()]
    extra = ["partition.num_clients=6", "partition.samples_per_client=20"] if preset == "clove/text" else \
        ["partition.num_clients=8", "partition.min_samples=20", "partition.max_samples=20"]
    cfg = make_cfg([f"+preset={preset}", *first, f"dataset.root={root}", "rounds=2", "dataset.train_size=null",
                    "dataset.test_size=null", *extra, "hydra.mode=RUN"])
    s = run(cfg, tmp_path / "run")
    assert s["status"] == "complete" and s["dataset"] in ("ag_news", "amazon") and s["algorithm"] == "fedavg"
