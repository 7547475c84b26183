"""Tiny data files in the torchvision on-disk layouts, written by tests."""
import gzip
import pickle
import struct
from pathlib import Path

import numpy as np


def write_idx(path: Path, array: np.ndarray, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(struct.pack(">I", s) for s in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    if gz:
        with gzip.open(str(path) + ".gz", "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)


def images(n, size=28, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size), dtype=np.uint8)


def write_mnist_like(folder: Path, prefix="", n_train=200, n_test=60, classes=10, gz=False, test_word="t10k"):
    rng = np.random.default_rng(1)
    write_idx(folder / f"{prefix}train-images-idx3-ubyte", images(n_train), gz)
    write_idx(folder / f"{prefix}train-labels-idx1-ubyte", rng.integers(0, classes, n_train), gz)
    write_idx(folder / f"{prefix}{test_word}-images-idx3-ubyte", images(n_test, seed=2), gz)
    write_idx(folder / f"{prefix}{test_word}-labels-idx1-ubyte", rng.integers(0, classes, n_test), gz)


def write_cifar10(root: Path, per_batch=40, n_test=40):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, n in [(f"data_batch_{i}", per_batch) for i in range(1, 6)] + [("test_batch", n_test)]:
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": rng.integers(0, 10, n).tolist()}
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)


def write_learnable_mnist_like(folder: Path, n_train=3000, n_test=1000, classes=10, seed=0):
    """Like write_mnist_like, but each class is a fixed random pattern plus noise, so that a
    small CNN learns it in a few steps (for tests that need models to tell data apart)."""
    rng = np.random.default_rng(seed)
    templates = rng.random((classes, 28, 28)) < 0.3

    def draw(n):
        y = np.arange(n) % classes
        rng.shuffle(y)
        x = templates[y] * 180 + rng.integers(0, 70, (n, 28, 28))
        return x.astype(np.uint8), y

    (tx, ty), (vx, vy) = draw(n_train), draw(n_test)
    write_idx(folder / "train-images-idx3-ubyte", tx)
    write_idx(folder / "train-labels-idx1-ubyte", ty)
    write_idx(folder / "t10k-images-idx3-ubyte", vx)
    write_idx(folder / "t10k-labels-idx1-ubyte", vy)


AG_WORDS = [["election", "minister", "treaty", "embassy"], ["match", "goal", "season", "coach"],
            ["shares", "profit", "market", "merger"], ["software", "chip", "internet", "quantum"]]


def write_ag_news(root: Path, n_train=1200, n_test=200, seed=0) -> None:
    """AG News's CSV layout (no header; class 1-4, title, description, quoted) with class words,
    commas and quotes inside fields: <root>/ag_news/{train,test}.csv."""
    import csv
    rng = np.random.default_rng(seed)
    folder = root / "ag_news"
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in (("train.csv", n_train), ("test.csv", n_test)):
        with open(folder / name, "w", newline="") as f:
            w = csv.writer(f, quoting=csv.QUOTE_ALL)
            for i in range(n):
                c = i % 4
                words = rng.choice(AG_WORDS[c], size=4).tolist() + rng.choice(sum(AG_WORDS, []), size=2).tolist()
                w.writerow([c + 1, f"Title {words[0]}, \"{words[1]}\"", " ".join(words[2:]) + " filler"])


def write_amazon(root: Path, per_side=120, seed=0, domains=("books", "dvd", "electronics", "kitchen")) -> None:
    """The processed_acl layout: <root>/amazon/processed_acl/<domain>/{positive,negative}.review,
    one review per line as `feature:count ... #label#:positive|negative`."""
    rng = np.random.default_rng(seed)
    for d in domains:
        folder = root / "amazon" / "processed_acl" / d
        folder.mkdir(parents=True, exist_ok=True)
        for side, cue in (("positive", ["great", "love", "excellent"]), ("negative", ["bad", "waste", "poor"])):
            lines = []
            for _ in range(per_side):
                feats = {w: int(rng.integers(1, 3)) for w in rng.choice(cue, size=2)}
                feats.update({f"{d}_word{int(rng.integers(0, 30))}": 1, "the_book" if d == "books" else "it_works": 1})
                lines.append(" ".join(f"{k}:{v}" for k, v in feats.items()) + f" #label#:{side}")
            (folder / f"{side}.review").write_text("\n".join(lines) + "\n")
