"""A plugin of a data set, a model and a partition (fedcluster's docs/plugins.md), each
meeting fedcluster's contract for its group (fedcluster/protocols.py):

- `WineSource` (dataset=wine): scikit-learn's wine table (178 wines, 13 measurements, 3 cultivars; bundled with
  scikit-learn, nothing to download), standardised with the training rows' statistics, a seeded quarter held out.
  A data set takes `seed` and offers `pool(split, distribution)` (label partitions) and `sample(...)` (mixtures),
  and sets task, num_classes, in_shape and distribution_names.
- `TwoLayerNet` (model=two_layer): one hidden layer; takes `in_shape` and `num_outputs`, and returns its hidden
  features beside the outputs when asked (`with_features`), which FedProto, FedPAC and FedALA's feature use read.
- `LabelShards` (partition=label_shards): McMahan et al.'s pathological split (FedAvg paper, §3): the training
  samples sorted by label, cut into `shards_per_client` shards per client and dealt at random; each client's test
  samples are drawn from its own classes in its own proportions. A partition offers `allocate(view, g)` and
  `size_bound()` and sets val_fraction and num_true_clusters."""
from typing import Annotated

import numpy as np
import torch

from fedcluster.partitions.allocation import Allocation
from fedcluster.rules import AtLeast, CheckedSettings, Probability


class WineSource(CheckedSettings, group="dataset"):
    task = "classification"

    def __init__(self, test_fraction: Annotated[float, Probability] = 0.25, seed: Annotated[int, AtLeast(0)] = 0):
        from sklearn.datasets import load_wine
        x, y = load_wine(return_X_y=True)
        order = np.random.default_rng(seed).permutation(len(y))
        cut = int(round(len(y) * test_fraction))
        test, train = order[:cut], order[cut:]
        mean, std = x[train].mean(0), x[train].std(0)
        x = torch.as_tensor((x - mean) / std, dtype=torch.float32)
        y = torch.as_tensor(y, dtype=torch.long)
        self._pools = {"train": (x[train], y[train]), "test": (x[test], y[test])}
        self.num_classes, self.in_shape, self.distribution_names = 3, (x.shape[1],), ["wine"]

    def pool(self, split: str, distribution: int = 0):
        return self._pools[split]

    def sample(self, split, distribution, n, g):
        x, y = self._pools[split]
        if n is None:
            return x, y
        pick = torch.randperm(len(y), generator=g)[:n]
        return x[pick], y[pick]


class TwoLayerNet(torch.nn.Module):
    def __init__(self, in_shape, num_outputs: int, hidden: Annotated[int, AtLeast(1)] = 16):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(int(np.prod(in_shape)), hidden),
                                        torch.nn.ReLU())
        self.head = torch.nn.Linear(hidden, num_outputs)

    def forward(self, x: torch.Tensor, with_features: bool = False):
        features = self.body(x)
        out = self.head(features)
        return (out, features) if with_features else out


class LabelShards(CheckedSettings, group="partition"):
    name = "label_shards"
    num_true_clusters = None   # clients share classes by chance: no true clusters

    def __init__(self, num_clients: Annotated[int, AtLeast(1)] = 6, shards_per_client: Annotated[int, AtLeast(1)] = 2,
                 val_fraction: Annotated[float, Probability] = 0.0):
        self.num_clients, self.shards_per_client, self.val_fraction = num_clients, shards_per_client, val_fraction

    def size_bound(self):
        return None   # the sizes follow from the data

    def allocate(self, view, g: torch.Generator) -> Allocation:
        labels, test_labels = view.labels("train"), view.labels("test")
        by_label = torch.argsort(labels, stable=True)
        shards = torch.tensor_split(by_label, self.num_clients * self.shards_per_client)
        dealt = torch.randperm(len(shards), generator=g).view(self.num_clients, self.shards_per_client)
        train = [torch.cat([shards[int(s)] for s in row]) for row in dealt]
        counts = torch.stack([torch.bincount(labels[idx], minlength=view.num_classes) for idx in train]).double()
        test = [[] for _ in range(self.num_clients)]
        for c in range(view.num_classes):   # class c's test samples to its holders, by their training share of c
            idx = torch.nonzero(test_labels == c).flatten()
            idx = idx[torch.randperm(len(idx), generator=g)]
            if counts[:, c].sum() == 0:
                continue
            ends = torch.round(counts[:, c].cumsum(0) / counts[:, c].sum() * len(idx)).long()
            for k, (a, b) in enumerate(zip(torch.cat([ends.new_zeros(1), ends[:-1]]), ends)):
                test[k].append(idx[a:b])
        test = [torch.cat(t) if t else torch.zeros(0, dtype=torch.long) for t in test]
        return Allocation([[(("train", 0), idx)] for idx in train], [[(("test", 0), idx)] for idx in test],
                          {("train", 0): None, ("test", 0): None}, torch.zeros(self.num_clients, 0))


FEDCLUSTER_OPTIONS = {"dataset": [WineSource], "model": [TwoLayerNet], "partition": [LabelShards]}
