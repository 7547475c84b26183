"""Image data sets as sources of distributions.

A distribution is a sub-dataset (e.g. EMNIST upper-case letters) seen at a rotation
(0/90/180/270 degrees, exact with torch.rot90). Distributions that share a sub-dataset
get disjoint shards of it, so no image appears in two distributions."""
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import Annotated, Dict, List, Optional, Sequence

import torch

from ..errors import ConfigError
from ..rng import generator
from ..rules import AtLeast, CheckedSettings, Help, OneOf
from .augment import CropFlip
from .readers import READERS
from .samples import ImageDecode
from .source import the_reader

# Label ranges of EMNIST 'byclass': 0-9 digits, 10-35 upper case, 36-61 lower case.
SUBSETS: Dict[str, Dict[str, range]] = {
    "emnist": {"digits": range(0, 10), "upper": range(10, 36), "lower": range(36, 62)},
}


def distribution_specs(name: str, distributions) -> List[dict]:
    """dataset.distributions as [{subset, rotation}], every entry checked before any data is read
    (a misspelt key or a fractional angle is an error, not ignored or cut)."""
    if isinstance(distributions, (str, bytes, Mapping)) or not isinstance(distributions, Sequence):
        raise ConfigError(f"dataset.distributions={distributions!r} is not a list; allowed: a list of "
                          "{subset, rotation}, e.g. [{rotation: 0}, {rotation: 90}]")
    specs = []
    for i, d in enumerate(distributions):
        where = f"dataset.distributions[{i}]"
        if not isinstance(d, Mapping):
            raise ConfigError(f"{where}={d!r} is not a mapping; allowed: {{subset, rotation}}, e.g. {{rotation: 90}}")
        unknown = sorted(set(d) - {"subset", "rotation"})
        if unknown:
            raise ConfigError(f"{where}.{unknown[0]} is not a setting; allowed: subset, rotation")
        rotation = d.get("rotation", 0)
        if isinstance(rotation, bool) or not isinstance(rotation, int) or rotation % 90:
            raise ConfigError(f"{where}.rotation={rotation!r} is not allowed; allowed: a multiple of 90 "
                              "(0, 90, 180, 270)")
        subset = d.get("subset")
        if subset is not None and subset not in SUBSETS.get(name, {}):
            raise ConfigError(f"{where}.subset={subset!r} is unknown for {name}; "
                              f"allowed: {sorted(SUBSETS.get(name, {})) or 'none'}")
        specs.append(dict(subset=subset, rotation=rotation))
    if not specs:
        raise ConfigError("dataset.distributions is empty; give at least one {subset, rotation}")
    return specs


def crop_flip(augment) -> Optional[CropFlip]:
    """dataset.augment ({padding, hflip} or null) as the augmentation it names."""
    if augment is None or augment is False:
        return None
    if not isinstance(augment, Mapping):
        raise ConfigError(f"dataset.augment={augment!r} is not allowed; allowed: null or {{padding: 4, hflip: true}}")
    if not augment:
        return None
    unknown = sorted(set(augment) - {"padding", "hflip"})
    if unknown:
        raise ConfigError(f"dataset.augment.{unknown[0]} is not a setting; allowed: padding, hflip")
    padding, hflip = augment.get("padding", 4), augment.get("hflip", True)
    if isinstance(padding, bool) or not isinstance(padding, int):
        raise ConfigError(f"dataset.augment.padding={padding!r} is not allowed; allowed: a whole number >= 0")
    if not isinstance(hflip, bool):
        raise ConfigError(f"dataset.augment.hflip={hflip!r} is not allowed; allowed: true or false")
    return CropFlip(padding=padding, hflip=hflip)


def checked_reader_kwargs(name: str, reader_kwargs) -> dict:
    """dataset.reader_kwargs, each key one the data set's reader takes."""
    import inspect
    if reader_kwargs is None:
        return {}
    if not isinstance(reader_kwargs, Mapping):
        raise ConfigError(f"dataset.reader_kwargs={reader_kwargs!r} is not a mapping; allowed: null or {{key: value}}")
    allowed = [k for k in inspect.signature(READERS[name]).parameters if k not in ("root", "download")]
    for key in reader_kwargs:
        if key not in allowed:
            raise ConfigError(f"dataset.reader_kwargs.{key} is not a setting of the {name} reader; "
                              f"allowed: {', '.join(allowed) or 'none'}")
    return dict(reader_kwargs)


def channel_stats(x: torch.Tensor):
    """Per-channel mean and std of uint8 images [N, C, H, W] scaled to [0, 1], over the whole training
    pool (every sample and pixel), shaped [C, 1, 1] to broadcast over images. `dataset.normalize`
    standardises inputs with them (Fashion-MNIST: mean 0.2860, std 0.3530), as torchvision's
    `Normalize` with a data set's statistics does."""
    n = x.shape[0]
    total = torch.zeros(x.shape[1], dtype=torch.float64)
    squares = torch.zeros(x.shape[1], dtype=torch.float64)
    for start in range(0, n, 4096):   # in blocks: no float copy of the whole pool
        block = x[start:start + 4096].to(torch.float64) / 255.0
        total += block.sum(dim=(0, 2, 3))
        squares += (block * block).sum(dim=(0, 2, 3))
    count = n * x.shape[2] * x.shape[3]
    mean = total / count
    std = (squares / count - mean * mean).clamp_min(0).sqrt()
    if (std <= 0).any():
        raise ConfigError("dataset.normalize=true but a channel of the training images is constant (std 0); "
                          "allowed: normalize=false for this data set")
    return mean.to(torch.float32).view(-1, 1, 1), std.to(torch.float32).view(-1, 1, 1)


class ImageSource(CheckedSettings, group="dataset"):   # declared rules checked when built (rules.py)
    task = "classification"
    value_bytes = 1   # pixels are stored as uint8 until a batch is read (data/samples.py)

    @classmethod
    def task_for(cls, settings: dict) -> str:
        """The task a config of this source makes, before it is built (validate.py)."""
        return "reconstruction" if settings.get("unsupervised") else cls.task

    @dataclass(frozen=True)
    class Settings:
        name: Annotated[str, Help("the data set's label in summaries, reports and run directory names")]
        distributions: Annotated[Sequence[dict], Help("each distribution's rotation and subset of classes")]
        root: Annotated[str, Help("the folder holding the data set's files")] = "data"
        download: Annotated[bool, Help("let torchvision download the files when they are missing")] = False
        test_size: Annotated[Optional[int], AtLeast(1), Help("a random test_size of each test pool")] = None
        seed: Annotated[int, AtLeast(0)] = 0
        reader_kwargs: Annotated[Optional[dict], Help("settings passed to the data set's reader")] = None
        train_size: Annotated[Optional[int], AtLeast(1), Help("a random train_size of each training pool")] = None
        unsupervised: Annotated[bool, Help("reconstruction targets instead of labels")] = False
        augment: Annotated[Optional[dict], Help("training batches' random crop and flip: {padding, hflip}")] = None
        normalize: Annotated[bool, Help("inputs standardised by the training pool's channel mean and std")] = False
        reader: Annotated[Optional[str], OneOf(*sorted(READERS), None, kind="a reader of image files"),
                          Help("which files are read: the reader of READERS (null, as in a config recorded before "
                               "2026-12-03: the reader `name` names)")] = None

    def __init__(self, *args, **given):
        s = self.Settings(*args, **given)
        name, distributions, root, download, seed = the_reader(s, READERS, "a reader of image files"), s.distributions, s.root, s.download, s.seed
        reader_kwargs, unsupervised, augment, normalize = s.reader_kwargs, s.unsupervised, s.augment, s.normalize
        self.specs = distribution_specs(name, distributions)
        if augment and unsupervised:
            raise ConfigError("dataset.augment is not allowed with dataset.unsupervised=true (the targets are the "
                              "un-augmented inputs); set dataset.augment=null")
        self.augment = crop_flip(augment)   # training batches only (local_training/local.py)
        reader_kwargs = checked_reader_kwargs(name, reader_kwargs)
        tx, ty, vx, vy = READERS[name](Path(root).expanduser(), download=download, **reader_kwargs)
        self.test_size, self.train_size, self.seed = s.test_size, s.train_size, seed
        if unsupervised:   # reconstruction targets instead of labels (CLoVE's unsupervised mode)
            self.task = "reconstruction"
        self.distribution_names = [
            (f"{s['subset']}_" if s["subset"] else "") + f"rot{s['rotation']}" for s in self.specs]
        self.in_shape = tuple(tx.shape[1:])
        self.normalize = bool(normalize)
        self.channel_mean, self.channel_std = channel_stats(tx) if self.normalize else (None, None)
        self.decode = ImageDecode(self.channel_mean, self.channel_std)   # stored uint8 -> model inputs
        self._pools = {"train": self._shards(tx, ty, name, seed, "train"),
                       "test": self._shards(vx, vy, name, seed, "test")}
        labels = set()
        for x, y in self._pools["train"]:
            labels.update(y.unique().tolist())
        self.num_classes = int(max(labels)) + 1

    def _shards(self, x, y, name, seed, split):
        """One pool of (uint8 images, labels) per distribution."""
        groups: Dict[Optional[str], List[int]] = {}
        for i, spec in enumerate(self.specs):
            groups.setdefault(spec["subset"], []).append(i)
        pools = [None] * len(self.specs)
        for subset, members in groups.items():
            if subset is None:
                idx = torch.arange(len(y))
                labels = y
            else:
                r = SUBSETS[name][subset]
                idx = torch.nonzero((y >= r.start) & (y < r.stop)).squeeze(1)
                labels = y[idx] - r.start
            perm = torch.randperm(len(idx), generator=generator(seed, f"shards-{split}-{subset}"))
            for j, member in enumerate(members):
                part = perm[j::len(members)]
                pools[member] = (x[idx[part]], labels[part])
        return pools

    def _stored(self, x: torch.Tensor, distribution: int) -> torch.Tensor:
        """uint8 images rotated by the distribution's angle (counter-clockwise; exact on pixels).
        They stay uint8 until a batch is read: `self.decode` (data/samples.py) makes the floats."""
        k = self.specs[distribution]["rotation"] // 90
        return torch.rot90(x, k, dims=(-2, -1)) if k else x

    def pool(self, split: str, distribution: int = 0):
        """Every image of `split` in one distribution (a random train_size / test_size of them
        when those are set), for label partitions."""
        x, y = self._pools[split][distribution]
        limit = self.train_size if split == "train" else self.test_size
        if limit is not None and limit < len(y):
            keep = torch.randperm(len(y), generator=generator(self.seed, f"subsample-{split}"))[:limit]
            x, y = x[keep], y[keep]
        return self._stored(x, distribution), y

    def sample(self, split, distribution, n, g):
        x, y = self._pools[split][distribution]
        if n is None:
            n = len(y) if self.test_size is None else min(self.test_size, len(y))
        if n > len(y):
            raise ConfigError(
                f"distribution {self.distribution_names[distribution]} has {len(y)} {split} images but the "
                f"partition asks for {n}; lower partition.num_clients or the per-client sample sizes")
        pick = torch.randperm(len(y), generator=g)[:n]
        return self._stored(x[pick], distribution), y[pick]
