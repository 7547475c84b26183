"""Text data sets of CLoVE Table 3, read from their standard on-disk formats (neither can be
downloaded on these machines; put the files under `root`):

- AG News (Zhang et al. 2015): `<root>/ag_news/train.csv` and `test.csv`, no header, columns
  class index (1-4), title, description (the format of the data set's public release).
  Tokens: scikit-learn's CountVectorizer (lower-cased words of 2+ characters), its vocabulary the
  `vocab_size` most frequent words of the training texts. torchtext, the usual choice, is retired
  (its last release, 0.18, supports torch 2.3 only); scikit-learn is already a dependency and
  gives the same word-level vocabulary. A text becomes `max_len` token ids (0 = padding,
  1 = a word outside the vocabulary), title and description joined.
- Amazon reviews, the multi-domain sentiment data (Blitzer et al. 2007), in its processed form:
  `<root>/amazon/processed_acl/<domain>/{positive,negative}.review`, one review per line as
  `feature:count ... #label#:positive|negative`. Each domain (books, dvd, electronics, kitchen)
  is one distribution; features: presence (0/1) of the `vocab_size` features most frequent over
  all domains' training reviews; `test_fraction` of each domain held out (seeded). CLoVE's counts
  (2,834 books, 1,199 DVD, ... reviews from the 1996-2018 crawl) suggest they used another
  release; the labels (binary sentiment) and the clusters (product categories) are the same."""
import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..errors import ConfigError, DataFileError, DataNotFoundError
from ..rng import generator
from ..rules import AtLeast, Between, CheckedSettings, Help, OneOf
from .source import the_reader

AMAZON_DOMAINS = ("books", "dvd", "electronics", "kitchen")
PAD, UNKNOWN = 0, 1


def read_ag_news_csv(path: Path) -> Tuple[List[str], np.ndarray]:
    """(texts, labels 0-3) of one AG News CSV file."""
    texts, labels = [], []
    fix = "the file is damaged or not AG News: replace it with the data set's train.csv / test.csv"
    try:
        with open(path, newline="", encoding="utf-8") as f:
            for line, row in enumerate(csv.reader(f), 1):
                if len(row) < 3:
                    continue
                if row[0].strip() not in ("1", "2", "3", "4"):
                    raise DataFileError(f"{path}, line {line}: class index {row[0][:20]!r} is not 1-4; {fix}")
                labels.append(int(row[0]) - 1)
                texts.append(" ".join(row[1:]).replace("\\", " "))
    except (UnicodeDecodeError, csv.Error) as e:
        raise DataFileError(f"{path}: not a UTF-8 CSV file ({str(e).splitlines()[0][:100]}); {fix}") from None
    except IsADirectoryError:
        raise DataFileError(f"{path} is a directory, not a CSV file; {fix}") from None
    except OSError as e:
        raise DataFileError(f"{path}: cannot be read ({e.strerror or e}); check its permissions") from None
    if not labels:
        raise DataFileError(f"{path}: no rows of the form class,title,description; {fix}")
    return texts, np.array(labels, dtype=np.int64)


def token_ids(texts: Sequence[str], vocabulary: dict, analyzer, max_len: int) -> torch.Tensor:
    """[n, max_len] ids: vocabulary words shifted by 2 (0 padding, 1 unknown), cut or padded."""
    out = torch.zeros(len(texts), max_len, dtype=torch.int64)
    for i, text in enumerate(texts):
        ids = [vocabulary[tok] + 2 if tok in vocabulary else UNKNOWN for tok in analyzer(text)][:max_len]
        if ids:
            out[i, :len(ids)] = torch.tensor(ids)
    return out


def read_review_file(path: Path) -> Tuple[List[dict], List[int]]:
    """({feature: count} per review, label 1 positive / 0 negative) of one processed_acl file."""
    reviews, labels = [], []
    fix = "the file is damaged or not a processed_acl review file: replace it"
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except IsADirectoryError:
        raise DataFileError(f"{path} is a directory, not a review file; {fix}") from None
    except OSError as e:
        raise DataFileError(f"{path}: cannot be read ({e.strerror or e}); check its permissions") from None
    with f:
        for line in f:
            feats, label = {}, None
            for item in line.split():
                key, _, value = item.rpartition(":")
                if key == "#label#":
                    label = 1 if value == "positive" else 0
                elif key:
                    feats[key] = int(value) if value.isdigit() else 1
            if label is not None:
                reviews.append(feats)
                labels.append(label)
    if not labels:
        raise DataFileError(f"{path}: no line ends with a '#label#:positive' or '#label#:negative' item; {fix}")
    return reviews, labels


def _require(path: Path, name: str) -> Path:
    if not path.exists():
        raise DataNotFoundError(f"dataset={name}: {path} not found; this data set cannot be downloaded here: "
                                f"put its files there (see fedcluster/data/text.py for the layout) or set dataset.root")
    return path


# Each text data set: the method of TextSource that reads it, and the setting a sample's size follows
# (data/budget.py names it in a refusal): token ids (max_len) or word-presence vectors (vocab_size).
TEXT_SETS = {"ag_news": ("_read_ag_news", "max_len"), "amazon": ("_read_amazon", "vocab_size")}


class TextSource(CheckedSettings, group="dataset"):
    """AG News (`reader: ag_news`, one distribution) or Amazon reviews (`reader: amazon`, one
    distribution per domain in `domains`), with the same interface as ImageSource (pool for label
    partitions, sample for mixture/cluster partitions). `reader` picks the reader from TEXT_SETS; `name` is a label."""
    task = "classification"

    @dataclass(frozen=True)
    class Settings:
        name: Annotated[str, Help("the data set's label in summaries, reports and run directory names")]
        root: Annotated[str, Help("the folder holding the data set's files")] = "data"
        vocab_size: Annotated[int, AtLeast(1), Help("the most frequent words of the training texts kept")] = 20000
        max_len: Annotated[int, AtLeast(1), Help("AG News: word ids per text, cut or padded")] = 64
        domains: Annotated[Sequence[str], OneOf(*AMAZON_DOMAINS, kind="an Amazon domain"),
                           Help("Amazon: the domains, one distribution each")] = AMAZON_DOMAINS
        test_fraction: Annotated[float, Between(0, 1, lo_open=True, hi_open=True),
                                 Help("Amazon: the seeded share of each domain's reviews held out for testing")] = 0.2
        train_size: Annotated[Optional[int], AtLeast(1), Help("a random train_size of each training pool")] = None
        test_size: Annotated[Optional[int], AtLeast(1), Help("a random test_size of each test pool")] = None
        seed: Annotated[int, AtLeast(0)] = 0
        reader: Annotated[Optional[str], OneOf(*TEXT_SETS, None, kind="a text data set"),
                          Help("which files are read: a reader of TEXT_SETS (null, as in a config recorded before "
                               "2026-12-03: the one `name` names)")] = None

    def __init__(self, *args, **given):
        s = self.Settings(*args, **given)
        self.name, self.seed, self.train_size, self.test_size = s.name, s.seed, s.train_size, s.test_size
        reader, self.size_setting = TEXT_SETS[the_reader(s, TEXT_SETS, "a text data set")]
        self._pools, self.distribution_names, self.num_classes, self.in_shape = getattr(self, reader)(
            Path(s.root).expanduser(), vocab_size=s.vocab_size, max_len=s.max_len, domains=list(s.domains),
            test_fraction=s.test_fraction)

    def _read_ag_news(self, root: Path, vocab_size: int, max_len: int, **_):
        """AG News: one distribution, 4 classes, `max_len` token ids per text."""
        return self._ag_news(root / "ag_news", vocab_size, max_len), ["ag_news"], 4, (max_len,)

    def _read_amazon(self, root: Path, vocab_size: int, domains: List[str], test_fraction: float, **_):
        """Amazon reviews: one distribution per domain, 2 classes, word-presence vectors."""
        if not domains:
            raise ConfigError("dataset.domains=[] is empty; allowed: a non-empty list of " + ", ".join(AMAZON_DOMAINS))
        pools = self._amazon(root / "amazon" / "processed_acl", domains, vocab_size, test_fraction)
        return pools, domains, 2, (pools["train"][0][0].shape[1],)

    def _ag_news(self, folder: Path, vocab_size: int, max_len: int):
        from sklearn.feature_extraction.text import CountVectorizer
        train_texts, train_y = read_ag_news_csv(_require(folder / "train.csv", "ag_news"))
        test_texts, test_y = read_ag_news_csv(_require(folder / "test.csv", "ag_news"))
        vectorizer = CountVectorizer(max_features=vocab_size, lowercase=True).fit(train_texts)
        vocabulary, analyzer = vectorizer.vocabulary_, vectorizer.build_analyzer()
        return {"train": [(token_ids(train_texts, vocabulary, analyzer, max_len), torch.as_tensor(train_y))],
                "test": [(token_ids(test_texts, vocabulary, analyzer, max_len), torch.as_tensor(test_y))]}

    def _amazon(self, folder: Path, domains: List[str], vocab_size: int, test_fraction: float):
        split = {}
        for d in domains:
            reviews, labels = [], []
            for side in ("positive", "negative"):
                r, y = read_review_file(_require(folder / d / f"{side}.review", "amazon"))
                reviews += r
                labels += y
            order = torch.randperm(len(labels), generator=generator(self.seed, f"amazon-split-{d}")).numpy()
            n_test = max(1, int(round(test_fraction * len(labels))))
            split[d] = ([reviews[i] for i in order[n_test:]], [labels[i] for i in order[n_test:]],
                        [reviews[i] for i in order[:n_test]], [labels[i] for i in order[:n_test]])
        frequency = {}
        for d in domains:
            for review in split[d][0]:
                for key in review:
                    frequency[key] = frequency.get(key, 0) + 1
        kept = sorted(frequency, key=lambda k: (-frequency[k], k))[:vocab_size]
        index = {k: i for i, k in enumerate(kept)}

        def vectors(reviews):
            x = torch.zeros(len(reviews), len(kept))
            for i, review in enumerate(reviews):
                cols = [index[k] for k in review if k in index]
                x[i, cols] = 1.0
            return x
        return {"train": [(vectors(split[d][0]), torch.tensor(split[d][1])) for d in domains],
                "test": [(vectors(split[d][2]), torch.tensor(split[d][3])) for d in domains]}

    def pool(self, split: str, distribution: int = 0):
        """Every sample of `split` in one distribution (a random train_size / test_size of them when set)."""
        x, y = self._pools[split][distribution]
        limit = self.train_size if split == "train" else self.test_size
        if limit is not None and limit < len(y):
            keep = torch.randperm(len(y), generator=generator(self.seed, f"subsample-{split}"))[:limit]
            x, y = x[keep], y[keep]
        return x.float(), y

    def sample(self, split, distribution, n, g):
        x, y = self.pool(split, distribution)
        if n is None:
            return x, y
        if n > len(y):
            raise ConfigError(f"distribution {self.distribution_names[distribution]} has {len(y)} {split} samples but "
                              f"the partition asks for {n}; lower partition.num_clients or the per-client sample sizes")
        pick = torch.randperm(len(y), generator=g)[:n]
        return x[pick], y[pick]
