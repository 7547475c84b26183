"""Client data as padded, stacked tensors that stay resident on the device."""
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, List, Optional, Tuple

import torch

from ..rng import generator

if TYPE_CHECKING:
    from ..partitions import PartitionPlan


@dataclass
class ClientSplit:
    """Samples of all clients, padded to the largest client: row k holds client k's n[k] samples."""
    x: torch.Tensor        # [N, Nmax, *in_shape]
    y: torch.Tensor        # [N, Nmax]
    source: torch.Tensor   # [N, Nmax] distribution of each sample (-1 = padding)
    n: torch.Tensor        # [N]

    @property
    def mask(self) -> torch.Tensor:
        return self.source >= 0

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


def _stack(per_client: List[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]], in_shape) -> ClientSplit:
    n = torch.tensor([len(y) for _, y, _ in per_client])
    width = max(int(n.max()), 1)
    x = torch.zeros(len(per_client), width, *in_shape)
    y = torch.zeros(len(per_client), width, dtype=per_client[0][1].dtype)
    src = torch.full((len(per_client), width), -1, dtype=torch.long)
    for k, (xk, yk, sk) in enumerate(per_client):
        x[k, : len(yk)], y[k, : len(yk)], src[k, : len(yk)] = xk, yk, sk
    return ClientSplit(x, y, src, n)


def build_federated_data(source, plan: "PartitionPlan", seed: int) -> FederatedData:
    """Draw each client's train and local-test samples from the source distributions.

    Local test samples come from the training pool too (disjoint from every client's
    training data); each distribution's own test set comes from the source's test split."""
    S = len(source.distribution_names)
    N = plan.train_counts.shape[0]
    train_parts = [[] for _ in range(N)]
    test_parts = [[] for _ in range(N)]
    for s in range(S):
        need_train, need_test = plan.train_counts[:, s], plan.test_counts[:, s]
        x, y = source.sample("train", s, int(need_train.sum() + need_test.sum()), generator(seed, "draw-train", s))
        offset = 0
        for k in range(N):
            for parts, count in ((train_parts, int(need_train[k])), (test_parts, int(need_test[k]))):
                parts[k].append((x[offset: offset + count], y[offset: offset + count],
                                 torch.full((count,), s, dtype=torch.long)))
                offset += count

    def merge(parts, purpose):
        merged = []
        for k, chunks in enumerate(parts):
            xs, ys, ss = (torch.cat(c) for c in zip(*chunks))
            order = torch.randperm(len(ys), generator=generator(seed, purpose, k))
            merged.append((xs[order], ys[order], ss[order]))
        return merged

    source_test = [source.sample("test", s, None, generator(seed, "draw-test", s)) for s in range(S)]
    return FederatedData(source.task, source.num_classes, tuple(source.in_shape), list(source.distribution_names),
                         _stack(merge(train_parts, "order-train"), source.in_shape),
                         _stack(merge(test_parts, "order-test"), source.in_shape),
                         source_test, plan.mixture)


def build_label_federated_data(source, partition, seed: int, fits=None) -> FederatedData:
    """Split one labelled pool over clients by class (a label partition): each client's
    training samples come from the source's training pool and its held-out local test
    samples from the source's test pool, with the same class shares."""
    from ..errors import ConfigError
    if source.task not in ("classification", "reconstruction") or len(source.distribution_names) != 1:
        raise ConfigError(f"partition={partition.name} splits one labelled pool by class; the dataset has "
                          f"{len(source.distribution_names)} distributions ({source.distribution_names}). "
                          "Use dataset.distributions='[{rotation: 0}]'")
    tx, ty = source.pool("train")
    vx, vy = source.pool("test")
    need = partition.num_clients * getattr(partition, "min_samples", 1)
    if need > len(ty):
        raise ConfigError(f"partition.num_clients={partition.num_clients} clients x at least "
                          f"{getattr(partition, 'min_samples', 1)} samples each need {need:,} training samples; "
                          f"the pool has {len(ty):,}")
    split = partition.split(ty, vy, source.num_classes, generator(seed, "partition"))
    if fits is not None:
        fits(len(split.train), max(len(i) for i in split.train), max(len(i) for i in split.test))

    def client(x, y, i, idx):
        xi, yi = x[idx], y[idx]
        if split.quarter_turns is not None and int(split.quarter_turns[i]) % 4:
            xi = torch.rot90(xi, int(split.quarter_turns[i]), dims=(-2, -1))   # feature skew
        if split.label_map is not None:
            yi = split.label_map[i][yi]                                        # concept shift
        return xi, yi, torch.zeros(len(idx), dtype=torch.long)

    def clients(x, y, parts):
        return _stack([client(x, y, i, idx) for i, idx in enumerate(parts)], source.in_shape)

    N = len(split.train)
    return FederatedData(source.task, source.num_classes, tuple(source.in_shape), list(source.distribution_names),
                         clients(tx, ty, split.train), clients(vx, vy, split.test), [],
                         torch.zeros(N, 0), split.truth)


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
        rows = (tr.x[k], tr.y[k], tr.source[k])
        held.append(tuple(a[order[:v]] for a in rows))
        keep.append(tuple(a[torch.sort(order[v:]).values] for a in rows))
    return replace(data, train=_stack(keep, data.in_shape), validation=_stack(held, data.in_shape))
