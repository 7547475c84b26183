"""Client data that stays resident on the device: each split's samples stored compactly
(data/samples.py ClientSamples, read like a padded [N, Nmax, ...] tensor), labels padded."""
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

import torch

from ..errors import ConfigError
from ..rng import generator
from .samples import ClientSamples


@dataclass
class ClientSplit:
    """Samples of all clients: row k holds client k's n[k] samples; x is stored unpadded in the
    source's dtype and read as a padded [N, Nmax, *in_shape] tensor of inputs."""
    x: ClientSamples       # [N, Nmax, *in_shape] when read
    y: torch.Tensor        # [N, Nmax]
    source: torch.Tensor   # [N, Nmax] distribution of each sample (-1 = padding)
    n: torch.Tensor        # [N]

    @property
    def mask(self) -> torch.Tensor:
        return self.source >= 0

    def class_counts(self, num_classes: int) -> torch.Tensor:
        """[N, C] each client's label counts over its real samples (padding left out)."""
        y = torch.where(self.mask, self.y.long(), num_classes)   # padding -> one extra bin, dropped
        counts = torch.zeros(y.shape[0], num_classes + 1, dtype=torch.long, device=y.device)
        counts.scatter_add_(1, y, torch.ones_like(y))
        return counts[:, :num_classes]

    def to(self, device, dtype):
        return ClientSplit(self.x.to(device, dtype), self.y.to(device, dtype if self.y.is_floating_point() else None),
                           self.source.to(device), self.n.to(device))


@dataclass
class FederatedData:
    task: str
    num_classes: int
    in_shape: Tuple[int, ...]
    distribution_names: List[str]
    train: ClientSplit
    local_test: ClientSplit
    source_test: List[Tuple[torch.Tensor, torch.Tensor]]   # held-out test set of each distribution
    mixture: torch.Tensor                                  # [N, S] ground truth
    truth: Optional[torch.Tensor] = None                   # [N] ground-truth cluster (None: mixture's argmax)
    validation: Optional[ClientSplit] = None               # carved from each client's training data (carve_validation)

    @property
    def num_clients(self) -> int:
        return self.train.n.shape[0]

    @property
    def num_distributions(self) -> int:
        return len(self.distribution_names)

    def dominant_distribution(self) -> torch.Tensor:
        return self.mixture.argmax(1)

    @property
    def num_true_clusters(self) -> Optional[int]:
        """K of a cluster-wise label partition; None otherwise."""
        return None if self.truth is None else int(self.truth.max()) + 1

    @property
    def cluster_truth(self) -> Optional[torch.Tensor]:
        """[N] the ground-truth cluster of each client, for ARI; None where the partition has
        no clusters (client-wise label skew). Mixture partitions: the dominant distribution."""
        if self.truth is not None:
            return self.truth
        return self.dominant_distribution() if self.mixture.numel() else None

    def to(self, device, dtype):
        cast = lambda y: y.to(device, dtype if y.is_floating_point() else None)
        return FederatedData(self.task, self.num_classes, self.in_shape, self.distribution_names,
                             self.train.to(device, dtype), self.local_test.to(device, dtype),
                             [(x.to(device, dtype), cast(y)) for x, y in self.source_test],
                             self.mixture.to(device), None if self.truth is None else self.truth.to(device),
                             None if self.validation is None else self.validation.to(device, dtype))


def _stack(per_client: List[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]], decode=None) -> ClientSplit:
    """One split of every client: the samples back to back as stored (`decode` makes inputs of them),
    the labels and source ids padded to the largest client (source -1 at padding)."""
    n = torch.tensor([len(y) for _, y, _ in per_client])
    width = max(int(n.max()), 1)
    first = per_client[0][1]   # labels [n], or an unsupervised split's targets [n, *in_shape]
    y = torch.zeros(len(per_client), width, *first.shape[1:], dtype=first.dtype)
    src = torch.full((len(per_client), width), -1, dtype=torch.long)
    for k, (_, yk, sk) in enumerate(per_client):
        y[k, : len(yk)], src[k, : len(yk)] = yk, sk
    return ClientSplit(ClientSamples.of_clients([xk for xk, _, _ in per_client], decode), y, src, n)


def federate(source, partition, seed: int, fits=None) -> FederatedData:
    """The federated data of `partition` over `source`: the partition's `Allocation`
    (partitions/allocation.py) materialised. The partition sees the source's description and
    the labels of its labelled pools (`SourceView`), never the samples. `fits(clients,
    train_width, test_width)` checks the memory before any sample is gathered."""
    view = SourceView(source)
    bound = partition.size_bound()
    if fits is not None and bound is not None:   # known from the settings alone: checked before allocating
        fits(*bound)
    alloc = partition.allocate(view, generator(seed, "partition"))
    if fits is not None:
        fits(alloc.num_clients, *alloc.widths())
    pools = {}
    for (split, s), n in alloc.draws.items():
        pools[(split, s)] = view.pool(split, s) if n is None else \
            source.sample(split, s, n, generator(seed, f"draw-{split}", s))

    def client(pieces, k, purpose):
        if pieces:
            x = torch.cat([pools[p][0][idx] for p, idx in pieces])
            y = torch.cat([pools[p][1][idx] for p, idx in pieces])
            src = torch.cat([torch.full((len(idx),), p[1], dtype=torch.long) for p, idx in pieces])
        else:
            stored = next(iter(pools.values()))[0]
            x, y, src = stored.new_zeros(0, *stored.shape[1:]), torch.zeros(0), torch.zeros(0, dtype=torch.long)
        if alloc.quarter_turns is not None and int(alloc.quarter_turns[k]) % 4:
            x = torch.rot90(x, int(alloc.quarter_turns[k]), dims=(-2, -1))   # feature skew
        if alloc.label_map is not None:
            y = alloc.label_map[k][y]                                        # concept shift
        if alloc.shuffle_clients:
            order = torch.randperm(len(y), generator=generator(seed, purpose, k))
            x, y, src = x[order], y[order], src[order]
        return x, y, src

    S = len(source.distribution_names)
    decode = getattr(source, "decode", None)
    inputs = decode or (lambda x: x)
    source_test = [(inputs(x), y) for x, y in (source.sample("test", s, None, generator(seed, "draw-test", s))
                                               for s in range(S))] if alloc.distribution_tests else []
    return FederatedData(source.task, source.num_classes, tuple(source.in_shape), list(source.distribution_names),
                         _stack([client(p, k, "order-train") for k, p in enumerate(alloc.train)], decode),
                         _stack([client(p, k, "order-test") for k, p in enumerate(alloc.local_test)], decode),
                         source_test, alloc.mixture, alloc.truth)


class SourceView:
    """What a partition may read of a source: its task, classes and distributions, and the
    labels of a split's labelled pool (read once; `federate` gathers the samples from the same
    read)."""

    def __init__(self, source):
        self._source = source
        self.task, self.num_classes = source.task, source.num_classes
        self.distribution_names = list(source.distribution_names)
        self._pools = {}

    def pool(self, split: str, distribution: int = 0):
        key = (split, distribution)
        if key not in self._pools:
            if not callable(getattr(self._source, "pool", None)):
                raise ConfigError(f"this partition splits a data set's whole labelled pool, which the data set "
                                  f"({type(self._source).__name__}) does not offer: it has no pool(split, distribution); "
                                  "allowed: a mixture partition (random, clustered, mix_10_90, linear) or a pool() "
                                  "method on the data set (docs/plugins.md)")
            self._pools[key] = self._source.pool(split, distribution)
        return self._pools[key]

    def labels(self, split: str, distribution: int = 0) -> torch.Tensor:
        return self.pool(split, distribution)[1]


def as_reconstruction(data: FederatedData) -> FederatedData:
    """The unsupervised view of `data` (CLoVE Table 5): every target is its input image, so
    the models (autoencoders) are trained and scored on reconstruction MSE. Partitions, and
    hence the true clusters, were made from the labels before they are dropped here."""
    def recon(split: ClientSplit) -> ClientSplit:
        return ClientSplit(split.x, split.x, split.source, split.n)
    return FederatedData("reconstruction", data.num_classes, data.in_shape, data.distribution_names,
                         recon(data.train), recon(data.local_test), [(x, x) for x, _ in data.source_test],
                         data.mixture, data.truth, None if data.validation is None else recon(data.validation))


def carve_validation(data: FederatedData, fraction: float, seed: int) -> FederatedData:
    """Each client's validation split: floor(fraction * n_k) of its training samples, drawn at
    random (its own stream per client), at most n_k - 1 so every client keeps a training sample.
    fraction 0: no validation split, the data unchanged. Tuning reads these, never test data."""
    if fraction <= 0:
        return data
    tr = data.train
    keep, held = [], []
    for k in range(data.num_clients):
        n = int(tr.n[k])
        v = min(int(fraction * n), max(n - 1, 0))
        order = torch.randperm(n, generator=generator(seed, "validation", k))
        rows = (tr.x.stored(k), tr.y[k, :n], tr.source[k, :n])
        held.append(tuple(a[order[:v]] for a in rows))
        keep.append(tuple(a[torch.sort(order[v:]).values] for a in rows))
    return replace(data, train=_stack(keep, tr.x.decode), validation=_stack(held, tr.x.decode))
