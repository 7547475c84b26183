"""Image data sets as sources of distributions.

A distribution is a sub-dataset (e.g. EMNIST upper-case letters) seen at a rotation
(0/90/180/270 degrees, exact with torch.rot90). Distributions that share a sub-dataset
get disjoint shards of it, so no image appears in two distributions."""
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch

from ..errors import ConfigError
from ..rng import generator
from .augment import CropFlip
from .readers import READERS

# Label ranges of EMNIST 'byclass': 0-9 digits, 10-35 upper case, 36-61 lower case.
SUBSETS: Dict[str, Dict[str, range]] = {
    "emnist": {"digits": range(0, 10), "upper": range(10, 36), "lower": range(36, 62)},
}


class ImageSource:
    task = "classification"

    def __init__(self, name: str, distributions: Sequence[dict], root: str = "data", download: bool = False,
                 test_size: Optional[int] = None, seed: int = 0, reader_kwargs: Optional[dict] = None,
                 train_size: Optional[int] = None, unsupervised: bool = False, augment: Optional[dict] = None):
        if name not in READERS:
            raise ConfigError(f"dataset.name={name!r} is unknown; allowed: {sorted(READERS)}")
        if not distributions:
            raise ConfigError("dataset.distributions is empty; give at least one {subset, rotation}")
        self.specs = [dict(subset=d.get("subset"), rotation=int(d.get("rotation", 0))) for d in distributions]
        for spec in self.specs:
            if spec["rotation"] % 90:
                raise ConfigError(f"rotation={spec['rotation']} is not allowed; use a multiple of 90 (0, 90, 180, 270)")
            if spec["subset"] is not None and spec["subset"] not in SUBSETS.get(name, {}):
                raise ConfigError(f"subset={spec['subset']!r} is unknown for {name}; "
                                  f"allowed: {sorted(SUBSETS.get(name, {})) or 'none'}")
        if augment and unsupervised:
            raise ConfigError("dataset.augment is not allowed with dataset.unsupervised=true (the targets are the "
                              "un-augmented inputs); set dataset.augment=null")
        self.augment = CropFlip(**augment) if augment else None   # training batches only (engine/local.py)
        tx, ty, vx, vy = READERS[name](Path(root).expanduser(), download=download, **(reader_kwargs or {}))
        self.test_size, self.train_size, self.seed = test_size, train_size, seed
        if unsupervised:   # reconstruction targets instead of labels (CLoVE's unsupervised mode)
            self.task = "reconstruction"
        self.distribution_names = [
            (f"{s['subset']}_" if s["subset"] else "") + f"rot{s['rotation']}" for s in self.specs]
        self.in_shape = tuple(tx.shape[1:])
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

    def _images(self, x: torch.Tensor, distribution: int) -> torch.Tensor:
        """uint8 images -> floats in [0, 1], rotated by the distribution's angle (counter-clockwise)."""
        images = x.float() / 255.0
        k = self.specs[distribution]["rotation"] // 90
        return torch.rot90(images, k, dims=(-2, -1)) if k else images

    def pool(self, split: str, distribution: int = 0):
        """Every image of `split` in one distribution (a random train_size / test_size of them
        when those are set), for label partitions."""
        x, y = self._pools[split][distribution]
        limit = self.train_size if split == "train" else self.test_size
        if limit is not None and limit < len(y):
            keep = torch.randperm(len(y), generator=generator(self.seed, f"subsample-{split}"))[:limit]
            x, y = x[keep], y[keep]
        return self._images(x, distribution), y

    def sample(self, split, distribution, n, g):
        x, y = self._pools[split][distribution]
        if n is None:
            n = len(y) if self.test_size is None else min(self.test_size, len(y))
        if n > len(y):
            raise ConfigError(
                f"distribution {self.distribution_names[distribution]} has {len(y)} {split} images but the "
                f"partition asks for {n}; lower partition.num_clients or the per-client sample sizes")
        pick = torch.randperm(len(y), generator=g)[:n]
        return self._images(x[pick], distribution), y[pick]
