"""CLoVE's label skews 1-3: each cluster a set of classes (conf/partition/label_skew{1,2,3}.yaml).
How each class is split over the clusters holding it is one component, `LabelSetPools`, that
the three skews own (composition: each skew declares all its settings, in its signature or its `Settings` record)."""
import math
from dataclasses import dataclass, field
from typing import Annotated, ClassVar, Dict, List, Optional

import numpy as np

from ..errors import ConfigError
from ..rules import AtLeast, Fraction, Help, Positive, own_settings
from .shares import dirichlet
from .skews import ClusterSkew, class_members


@dataclass
class LabelSetPools:
    """Clusters with label sets (labels 1-3), dataset_modifier.py `partition_dataset_with_label_overlap`
    and `try_partition_until_min`: each class's samples are shuffled, `reserve_fraction` of them
    (10 %) is split evenly over the clusters that hold the class, the rest by Dirichlet(alpha)
    proportions (alpha = 0.5; cut points floor(cumsum * n), the last holder takes the rest).
    While some cluster's pool is smaller than `min_cluster_fraction` of the data set (the authors'
    N_train / N_test minimum per cluster, over 60,000 training / 10,000 test samples), or smaller
    than its clients need, all classes are drawn again with a reserve larger by 0.05 (the
    authors' float loop tries 0.10, 0.15, ..., 0.95). The test pools are drawn independently of
    the training pools (the same label sets, fresh Dirichlet proportions), as in the authors'
    `get_label_skew_data_split`; `test_follows_train: true` splits the test set with the
    training side's proportions instead (the paper: "both test and train data of a client have
    the same distribution")."""
    alpha: float
    reserve_fraction: float
    min_cluster_fraction: float
    min_cluster_test_fraction: float
    test_follows_train: bool
    train_shares: Optional[tuple] = field(default=None, compare=False, repr=False)   # (reserve, props) of the training split
    class_counts: Optional[dict] = None   # {"train": [K][C], "test": [K][C]}: each cluster's pool fixed, not drawn

    def __post_init__(self):
        if self.alpha <= 0:
            raise ConfigError(f"partition.alpha={self.alpha} must be > 0")
        for key in ("reserve_fraction", "min_cluster_fraction", "min_cluster_test_fraction"):
            v = getattr(self, key)
            if not 0 <= v <= 1:
                raise ConfigError(f"partition.{key}={v} must be in [0, 1]")

    def holders(self, sets: List[np.ndarray], C: int, K: int) -> List[List[int]]:
        """The clusters holding each class (starts a new split: the training shares are reset)."""
        self.train_shares = None
        return [[k for k, s in enumerate(sets) if c in set(s.tolist())] for c in range(C)]

    @staticmethod
    def assemble(members, holders, props, reserve, K: int) -> List[np.ndarray]:
        parts: List[List[np.ndarray]] = [[] for _ in range(K)]
        for idx, who, p in zip(members, holders, props):
            if not who:
                continue
            n_res = int(len(idx) * reserve)
            rest = idx[n_res:]
            cuts = (np.cumsum(p) * len(rest)).astype(int)[:-1]
            for k, piece in zip(who, np.split(rest, cuts)):
                parts[k].append(piece)
            for k, piece in zip(who, np.array_split(idx[:n_res], len(who))):
                parts[k].append(piece)
        return [np.concatenate(p) if p else np.zeros(0, dtype=np.int64) for p in parts]

    def counted(self, labels, C, holders, rng, need, split, K: int, name: str) -> List[np.ndarray]:
        """Each cluster's pool with the class counts `class_counts` gives for this split: the class's
        shuffled samples dealt out in cluster order (a replay of a partition another program drew)."""
        side = "train" if split == "training" else "test"
        key = f"partition.pool_class_counts.{side}"
        given = self.class_counts.get(side)
        counts = np.asarray(given, dtype=object)
        if counts.shape != (K, C) or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                                             for v in counts.ravel()):
            raise ConfigError(f"{key}={given} "
                              f"is not allowed; allowed: {K} rows (one per cluster) of {C} whole numbers >= 0 "
                              "(samples of each class), under both keys train and test")
        counts = counts.astype(np.int64)
        members = class_members(labels, C, rng)
        for c in range(C):
            if counts[:, c].sum() > len(members[c]):
                raise ConfigError(f"{key} asks {int(counts[:, c].sum())} samples of class {c}; the {split} set has "
                                  f"{len(members[c])}")
            if any(counts[k, c] and k not in holders[c] for k in range(K)):
                raise ConfigError(f"{key} gives class {c} to a cluster that does not hold it (clusters holding it: "
                                  f"{holders[c]}); allowed: 0 there")
        starts = np.vstack([np.zeros((1, C), dtype=np.int64), np.cumsum(counts, axis=0)])
        pools = [np.concatenate([members[c][starts[k, c]:starts[k + 1, c]] for c in range(C)]) for k in range(K)]
        if min(len(p) for p in pools) < need:
            raise ConfigError(f"{key}: cluster {int(np.argmin([len(p) for p in pools]))}'s pool of "
                              f"{min(len(p) for p in pools)} is smaller than its clients need ({need}); lower "
                              "partition.num_clients or the samples per client")
        return pools

    def pools(self, labels, C, holders, rng, need, split, K: int, name: str) -> List[np.ndarray]:
        if self.class_counts is not None:
            return self.counted(labels, C, holders, rng, need, split, K, name)
        if split == "test" and self.test_follows_train and self.train_shares is not None:
            reserve, props = self.train_shares
            return self.assemble(class_members(labels, C, rng), holders, props, reserve, K)
        fraction = self.min_cluster_fraction if split == "training" else self.min_cluster_test_fraction
        threshold = max(math.ceil(fraction * len(labels)), need)
        key = "min_cluster_fraction" if split == "training" else "min_cluster_test_fraction"
        by_fraction = math.ceil(fraction * len(labels)) >= need   # which setting asks for the pools' size
        reserve, step = self.reserve_fraction, 0.05
        while True:
            props = [dirichlet(rng, self.alpha, len(who), 1)[0] if who else None for who in holders]
            pools = self.assemble(class_members(labels, C, rng), holders, props, reserve, K)
            if min(len(p) for p in pools) >= threshold:
                if split == "training":
                    self.train_shares = (reserve, props)
                return pools
            reserve += step
            if reserve > 1.0:
                raise ConfigError(f"partition={name} could not give every cluster {threshold} {split} samples of "
                                  f"its classes (smallest pool {min(len(p) for p in pools)}, reserve up to "
                                  f"{reserve - step:.2f}, from partition.reserve_fraction={self.reserve_fraction}); "
                                  + (f"lower partition.{key}={fraction}" if by_fraction else
                                     "lower partition.num_clients or the samples per client"))


class LabelSkew1(ClusterSkew):
    """Label skew 1 = the authors' exp203 (dataset_modifier.py `dict_overlap_swap_exps`,
    `get_label_skew_data_split`): cluster k holds the fixed classes 2k, 2k+1 (`label_groups`
    [0,1], [2,3], ..., [8,9]; `classes_per_cluster` consecutive classes in general), none shared,
    so each cluster's pool is all samples of its classes and its clients draw IID from it (class
    proportions about, not exactly, equal). `shuffle_classes: true` deals the groups from a
    random class permutation instead (our earlier construction)."""
    name = "label_skew1"

    def __init__(self, classes_per_cluster: Annotated[int, AtLeast(1)] = 2, shuffle_classes: bool = False,
                 min_cluster_fraction: Annotated[float, Fraction] = 0.0,
                 min_cluster_test_fraction: Annotated[float, Fraction] = 0.0, alpha: Annotated[float, Positive] = 0.5,
                 reserve_fraction: Annotated[float, Fraction] = 0.1, test_follows_train: bool = False, **kw):
        # A cluster's pool is all of its classes, whatever the draws: exp203's minimum pool
        # (6,000 / 750) holds for any two classes; we only require what the clients need.
        super().__init__(**kw)
        self.pooling = LabelSetPools(alpha, reserve_fraction, min_cluster_fraction, min_cluster_test_fraction,
                                     test_follows_train)
        self.classes_per_cluster, self.shuffle_classes = classes_per_cluster, shuffle_classes

    def cluster_classes(self, C, rng) -> List[np.ndarray]:
        u = self.classes_per_cluster
        if u < 1 or u * self.num_clusters > C:
            raise ConfigError(f"label_skew1 gives {self.num_clusters} clusters {u} disjoint classes each, which needs "
                              f"{u * self.num_clusters} classes; the data set has {C}. Lower num_clusters")
        order = self._order(C, rng, self.shuffle_classes)
        return [order[k * u:(k + 1) * u] for k in range(self.num_clusters)]


def overlapping_label_sets(C: int, K: int, U: int, V: int, rng: np.random.Generator,
                           batch: int = 1000, batches: int = 20, restarts: int = 200) -> List[np.ndarray]:
    """K random U-subsets of range(C), every two sharing exactly V labels: cluster k's set is a
    uniform U-subset redrawn until it meets all earlier ones in V labels (dataset_modifier.py
    `generate_label_assignments`). The authors' loop never ends when the earlier sets leave no
    candidate (about 1 % of the draws for C=10, U=4, V=2, K=5); we start over instead, which
    gives their sets conditioned on their loop ending."""
    for _ in range(restarts):
        chosen = np.zeros((0, C), dtype=np.int64)
        for _ in range(K):
            found = None
            for _ in range(batches):
                cand = np.zeros((batch, C), dtype=np.int64)
                np.put_along_axis(cand, np.argsort(rng.random((batch, C)), axis=1)[:, :U], 1, axis=1)
                ok = np.flatnonzero((cand @ chosen.T == V).all(1))
                if len(ok):
                    found = cand[ok[0]]
                    break
            if found is None:
                break
            chosen = np.vstack([chosen, found])
        else:
            return [np.flatnonzero(row) for row in chosen]
    raise ConfigError(f"label_skew2 found no {K} sets of {U} of the {C} classes with every two sharing exactly {V}; "
                      "lower num_clusters or change classes_per_cluster / shared_classes")


class LabelSkew2(ClusterSkew):
    """Label skew 2 = the authors' exp201 (dataset_modifier.py `generate_label_assignments`,
    `partition_dataset_with_label_overlap`, `try_partition_until_min`): K = 5 clusters, each a
    random set of U = `classes_per_cluster` (4) classes, every two sets sharing exactly V =
    `shared_classes` (2) classes; each class split over its holding clusters by Dirichlet(0.5)
    with a 10 % reserve split evenly; minimum pool 5,100 of 60,000 training and 510 of 10,000
    test samples per cluster (min_cluster_fraction 0.085, min_cluster_test_fraction 0.051).
    Clients draw IID from their cluster's pool."""
    name = "label_skew2"

    @dataclass(frozen=True)
    class Settings:
        """The rest are ClusterSkew's (skews.py)."""
        rest_to_base: ClassVar[bool] = True
        classes_per_cluster: Annotated[int, AtLeast(1), Help("U, the classes of each cluster's set")] = 4
        shared_classes: Annotated[int, AtLeast(0), Help("V, the classes every two sets share")] = 2
        min_cluster_fraction: Annotated[float, Fraction, Help("a cluster's smallest training pool, as a share")] = 0.085
        min_cluster_test_fraction: Annotated[float, Fraction, Help("a cluster's smallest test pool, as a share")] = 0.051
        alpha: Annotated[float, Positive, Help("the Dirichlet concentration splitting a class over its clusters")] = 0.5
        reserve_fraction: Annotated[float, Fraction, Help("the share of each class split evenly over its clusters")] = 0.1
        test_follows_train: Annotated[bool, Help("the test set split with the training side's Dirichlet proportions")] = False
        label_sets: Annotated[Optional[List[List[int]]], Help(
            "the clusters' class sets, fixed instead of drawn: K sets of classes_per_cluster distinct classes, "
            "every two sharing exactly shared_classes (e.g. the sets the authors' code drew for Fashion-MNIST at "
            "its first seed, docs/results/paper_protocol/clove_authors_code.md)")] = None

    def __init__(self, *args, **given):
        s, rest = own_settings(self.Settings, args, given)
        super().__init__(**rest)
        self.pooling = LabelSetPools(s.alpha, s.reserve_fraction, s.min_cluster_fraction, s.min_cluster_test_fraction,
                                     s.test_follows_train)
        self.classes_per_cluster, self.shared_classes = s.classes_per_cluster, s.shared_classes
        self.label_sets = None if s.label_sets is None else [list(map(int, c)) for c in s.label_sets]

    def cluster_classes(self, C, rng) -> List[np.ndarray]:
        U, V = self.classes_per_cluster, self.shared_classes
        if not 0 <= V < U <= C:
            raise ConfigError(f"label_skew2 needs 0 <= shared_classes < classes_per_cluster <= classes ({C}); "
                              f"got shared_classes={V}, classes_per_cluster={U}")
        if self.label_sets is None:
            return overlapping_label_sets(C, self.num_clusters, U, V, rng)
        sets = [set(s) for s in self.label_sets]
        fits = len(sets) == self.num_clusters and all(len(s) == len(l) == U and s <= set(range(C))
                                                       for s, l in zip(sets, self.label_sets)) \
            and all(len(a & b) == V for i, a in enumerate(sets) for b in sets[i + 1:])
        if not fits:
            raise ConfigError(f"partition.label_sets={self.label_sets} is not allowed; allowed: {self.num_clusters} "
                              f"sets (one per cluster) of {U} distinct classes in [0, {C}), every two sharing exactly "
                              f"{V} (classes_per_cluster, shared_classes)")
        return [np.array(sorted(s)) for s in self.label_sets]


class LabelSkew3(ClusterSkew):
    """Label skew 3 = the authors' exp202 (dataset_modifier.py `dict_overlap_swap_exps`,
    `partition_dataset_with_label_overlap`, `try_partition_until_min`): clusters 1..K-1 each miss
    one class, cluster K holds all; the fixed `label_groups` drop 9, 0, 1, 2 from clusters 1-4
    (cluster k misses class (k - 1) mod C in general; `shuffle_classes: true`: random distinct
    classes, our earlier choice). Each class is split over the *clusters* holding it by
    Dirichlet(alpha = 0.5) with a 10 % reserve split evenly; minimum pool 6,000 of 60,000
    training and 750 of 10,000 test samples per cluster. Clients draw IID from their cluster's
    pool, so clients of a cluster share its class proportions (the paper's "distributed amongst
    the clients ... by Dirichlet" happens between clusters in the code)."""
    name = "label_skew3"

    def __init__(self, shuffle_classes: bool = False, min_cluster_fraction: Annotated[float, Fraction] = 0.1,
                 min_cluster_test_fraction: Annotated[float, Fraction] = 0.075,
                 alpha: Annotated[float, Positive] = 0.5, reserve_fraction: Annotated[float, Fraction] = 0.1,
                 test_follows_train: bool = False, pool_class_counts: Optional[Dict[str, List[List[int]]]] = None,
                 **kw):
        """pool_class_counts: each cluster's pool fixed instead of drawn, {train: K rows of C counts, test: ...}:
        how many samples of each class cluster k's training and test pools hold (the samples themselves are
        still drawn). E.g. the pools the authors' code drew for Fashion-MNIST at its first seed
        (docs/results/paper_protocol/clove_authors_code.md); alpha, reserve_fraction and the minimum pool
        sizes then have no effect."""
        super().__init__(**kw)
        self.pooling = LabelSetPools(alpha, reserve_fraction, min_cluster_fraction, min_cluster_test_fraction,
                                     test_follows_train, class_counts=None if pool_class_counts is None else
                                     {k: [list(r) for r in v] for k, v in dict(pool_class_counts).items()})
        self.shuffle_classes = shuffle_classes

    def cluster_classes(self, C, rng) -> List[np.ndarray]:
        K = self.num_clusters
        if K - 1 > C:
            raise ConfigError(f"label_skew3 removes a distinct class from {K - 1} clusters; "
                              f"the data set has only {C} classes")
        order = self._order(C, rng, self.shuffle_classes)
        return [np.setdiff1d(np.arange(C), [order[(k - 1) % C]]) for k in range(K - 1)] + [np.arange(C)]
