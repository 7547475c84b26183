"""Label-skew partitions of one labelled pool (Fed-CAM §5), conf/partition/*.yaml.

A partitioner decides `shares[c, i]`: the fraction of class c's samples that client i
gets. The same shares split the training pool and the test pool, so each client's
held-out test split follows its own label distribution. Counts are rounded with largest
remainders, every sample goes to at most one client, and clients below `min_samples`
training samples (or without any test sample) are topped up by moving samples from the
largest clients; no rejection sampling, so tiny alpha or many clients cannot hang.

Cluster-wise partitions keep each client's ground-truth cluster (for ARI); client-wise
ones have no clusters (truth = None)."""
from typing import Annotated, Optional, Tuple

import numpy as np
import torch

from ..errors import ConfigError
from ..rules import AtLeast, HoldoutShare, Positive, Probability, CheckedSettings
from .allocation import Allocation
from .shares import LabelSplit, dirichlet, ensure_minimum, largest_remainder, numpy_rng, take_indices


class LabelPartition(CheckedSettings, group="partition"):   # declared rules checked when built (rules.py)
    """Base: subclasses define `shares(num_classes, rng) -> (shares [C, m], truth or None)`."""
    name = "labels"

    def __init__(self, num_clients: Annotated[int, AtLeast(1)] = 200, min_samples: Annotated[int, AtLeast(1)] = 10,
                 val_fraction: Annotated[float, Probability] = 0.1, holdout_clients: HoldoutShare = 0.0):
        self.num_clients, self.min_samples = num_clients, min_samples
        self.val_fraction, self.holdout_clients = val_fraction, holdout_clients   # rules declared above

    @property
    def num_true_clusters(self) -> Optional[int]:
        return None

    def shares(self, num_classes: int, rng: np.random.Generator) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        raise NotImplementedError

    def size_bound(self):
        """None: a label partition's sizes follow from the pool it splits (checked after `split`;
        `allocate` refuses more clients than the pool can give min_samples each, before splitting)."""
        return None

    def allocate(self, view, g: torch.Generator) -> Allocation:
        """The partition protocol (partitions/allocation.py): one labelled pool split over the
        clients by class (`split`), each client's held-out local test samples from the source's
        test pool with the same class shares."""
        require_one_labelled_pool(self.name, view)
        train_labels, test_labels = view.labels("train"), view.labels("test")
        need = self.num_clients * self.min_samples
        if need > len(train_labels):
            raise ConfigError(f"partition.num_clients={self.num_clients} clients x at least {self.min_samples} "
                              f"samples each need {need:,} training samples; the pool has {len(train_labels):,}")
        split = self.split(train_labels, test_labels, view.num_classes, g)
        return Allocation([[(("train", 0), idx)] for idx in split.train], [[(("test", 0), idx)] for idx in split.test],
                          {("train", 0): None, ("test", 0): None}, torch.zeros(len(split.train), 0), split.truth,
                          split.quarter_turns, split.label_map)

    def split(self, train_labels: torch.Tensor, test_labels: torch.Tensor, num_classes: int,
              g: torch.Generator) -> LabelSplit:
        rng = numpy_rng(g)
        shares, truth = self.shares(num_classes, rng)
        per_class = lambda y: np.bincount(y.numpy(), minlength=num_classes)[:num_classes]
        train = ensure_minimum(largest_remainder(shares, per_class(train_labels)), self.min_samples)
        # Test pool: class c goes to clients in proportion to their training samples of c.
        held = train.sum(1, keepdims=True)
        test_shares = np.divide(train, held, out=np.zeros(train.shape, dtype=np.float64), where=held > 0)
        test = ensure_minimum(largest_remainder(test_shares, per_class(test_labels)), 1, prefer=train.argmax(0),
                              pool="test pool", advice="raise the data set's test samples (dataset.test_size, where "
                              "the data set has it) or lower partition.num_clients")
        return LabelSplit(take_indices(train_labels, train, g), take_indices(test_labels, test, g),
                          None if truth is None else torch.as_tensor(truth, dtype=torch.long))


class DirichletLabels(LabelPartition):
    """Client-wise Dirichlet (Hsu et al. 2019): class c's samples split over all clients by
    Dirichlet(alpha). Fed-CAM Table 2: alpha = 0.1."""
    name = "dirichlet"

    def __init__(self, alpha: Annotated[float, Positive] = 0.1, **kw):
        super().__init__(**kw)
        self.alpha = alpha

    def shares(self, C, rng):
        return dirichlet(rng, self.alpha, self.num_clients, C), None


class ClusterPartition(LabelPartition):
    """A label partition with K true clusters: clients 0..m/K-1 form cluster 0, the next m/K
    cluster 1, and so on (the base of the cluster-wise label partitions and CLoVE's skews)."""

    def __init__(self, num_clusters: Annotated[Optional[int], AtLeast(1)] = None, **kw):
        super().__init__(**kw)
        if num_clusters is None:
            raise ConfigError(f"partition={self.name} needs the number of clusters: set num_clusters=K")
        if not 1 <= num_clusters <= self.num_clients or self.num_clients % num_clusters:
            raise ConfigError(f"num_clusters={num_clusters} must divide partition.num_clients={self.num_clients} "
                              "(each cluster gets num_clients/K clients)")
        self.num_clusters = num_clusters
        self.per_cluster = self.num_clients // num_clusters

    @property
    def num_true_clusters(self):
        return self.num_clusters

    def truth(self) -> np.ndarray:
        return np.arange(self.num_clients) // self.per_cluster


class ClusteredDirichletLabels(ClusterPartition):
    """Cluster-wise Dirichlet (Fed-CAM §5, alpha = (0.1, 10)): each class is split over the K
    clusters by Dirichlet(alpha_cluster), then each cluster's part over its m/K clients by
    Dirichlet(alpha_client)."""
    name = "cluster_dirichlet"

    def __init__(self, alpha_cluster: Annotated[float, Positive] = 0.1,
                 alpha_client: Annotated[float, Positive] = 10.0, **kw):
        super().__init__(**kw)
        self.alpha_cluster, self.alpha_client = alpha_cluster, alpha_client

    def shares(self, C, rng):
        K, per = self.num_clusters, self.per_cluster
        to_cluster = dirichlet(rng, self.alpha_cluster, K, C)                         # [C, K]
        within = dirichlet(rng, self.alpha_client, per, C * K).reshape(C, K, per)     # [C, K, m/K]
        return (to_cluster[:, :, None] * within).reshape(C, K * per), self.truth()


def _equal_split(has: np.ndarray) -> np.ndarray:
    """has [C, m] bool -> shares: class c split equally among the clients that hold it."""
    holders = has.sum(1, keepdims=True)
    return np.divide(has, holders, out=np.zeros(has.shape, dtype=np.float64), where=holders > 0)


class NClassLabels(LabelPartition):
    """Client-wise n-class (McMahan et al. 2017; Fed-CAM Table 2: n = 2): each client picks n
    distinct classes at random; a class's samples are split equally among its holders."""
    name = "nclass"

    def __init__(self, classes_per_client: Annotated[int, AtLeast(1)] = 2, **kw):
        super().__init__(**kw)
        self.classes_per_client = classes_per_client

    def shares(self, C, rng):
        n = self.classes_per_client
        if not 1 <= n <= C:
            raise ConfigError(f"partition.classes_per_client={n} must be between 1 and the number of classes ({C})")
        has = np.zeros((C, self.num_clients), dtype=bool)
        for i in range(self.num_clients):
            has[rng.choice(C, n, replace=False), i] = True
        return _equal_split(has), None


class ClusteredNClassLabels(ClusterPartition):
    """Cluster-wise n-class (Fed-CAM §5, (3, 2)): cluster k gets classes_per_cluster classes,
    read off a random class permutation in turn (perm[3k], perm[3k+1], perm[3k+2], wrapping),
    so every class serves about the same number of clusters; each client then takes
    classes_per_client of its cluster's classes at random."""
    name = "cluster_nclass"

    def __init__(self, classes_per_cluster: Annotated[int, AtLeast(1)] = 3,
                 classes_per_client: Annotated[int, AtLeast(1)] = 2, **kw):
        super().__init__(**kw)
        if classes_per_client > classes_per_cluster:
            raise ConfigError(f"partition needs 1 <= classes_per_client <= classes_per_cluster; got "
                              f"{classes_per_client}, {classes_per_cluster}")
        self.classes_per_cluster, self.classes_per_client = classes_per_cluster, classes_per_client

    def cluster_classes(self, C, rng) -> np.ndarray:
        if self.classes_per_cluster > C:
            raise ConfigError(f"partition.classes_per_cluster={self.classes_per_cluster} exceeds the number of classes ({C})")
        perm = rng.permutation(C)
        slots = np.arange(self.num_clusters)[:, None] * self.classes_per_cluster + np.arange(self.classes_per_cluster)
        return perm[slots % C]                                                       # [K, classes_per_cluster]

    def shares(self, C, rng):
        sets = self.cluster_classes(C, rng)
        truth = self.truth()
        has = np.zeros((C, self.num_clients), dtype=bool)
        for i in range(self.num_clients):
            has[rng.choice(sets[truth[i]], self.classes_per_client, replace=False), i] = True
        return _equal_split(has), truth


def require_one_labelled_pool(partition: str, view) -> None:
    """A label partition splits one labelled pool by class: refuse a regression source (no
    classes; the fix is another data set) or a source of several distributions (the fix, for an
    image set, is one rotation), each with the fix that applies."""
    if view.task not in ("classification", "reconstruction"):
        raise ConfigError(f"partition={partition} splits a labelled pool by class; this dataset is {view.task} data "
                          "without classes: use an image or text data set (e.g. dataset=fashion_mnist), or a mixture "
                          "partition (mix_10_90, mix_30_70, linear, random, clustered)")
    if len(view.distribution_names) != 1:
        raise ConfigError(f"partition={partition} splits one labelled pool by class; the dataset has "
                          f"{len(view.distribution_names)} distributions ({view.distribution_names[:6]}); allowed: one "
                          "distribution (an image set: dataset.distributions='[{rotation: 0}]'; a table: no "
                          "dataset.distributions, its group column left out with dataset.ignore_columns=[<column>]), "
                          "or a partition that splits by group (partition=natural, partition=flower)")

