"""CLoVE's cluster skews (CLoVE §5.1 and App. C.1.2), conf/partition/*_skew*.yaml, concept_shift.yaml.

Built as the authors' code builds them: github.com/Nokia-Bell-Labs/Loss-Vector-based-Clustered-
Federated-Learning. Its README maps the paper's cases to entries of `dict_overlap_swap_exps` in
utils/dataset_modifier.py: label skew 1 = exp203, 2 = exp201, 3 = exp202, 4 = exp501, feature
skew = exp301, concept shift = exp111; utils/data_utils.py `mix_data_classes` builds them and
`assign_data_to_clients_RR_without_replacement` hands them to clients. In two stages:

1. Cluster pools. A skew first fixes what the training and the test side share (the clusters'
   label sets, dominant classes, rotations, label swaps), then builds each cluster's pool of
   sample indices from the training set and, with fresh random draws, from the test set.
2. Clients. The m/K clients of cluster k take disjoint random subsets of cluster k's pool (the
   authors shuffle the pool and cut it into chunks): IID draws without replacement, so a
   client's class proportions are its cluster's up to sampling noise. Every client gets
   `samples_per_client` training samples and `test_samples_per_client` test samples. The
   authors hand out test data with the training size too, capped at an equal share of the
   cluster's test pool (min(samples per client, pool // (m/K))); `test_samples_per_client: null`
   does that, the default 100 gives every client an equally sized test set.

Within a cluster no sample is used twice; across clusters only feature skew reuses samples (each
cluster's pool is the whole data set, rotated)."""
import math
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..errors import ConfigError
from .labels import ClusterPartition
from .shares import LabelSplit, dirichlet, numpy_rng

# exp111 (concept shift): each cluster swaps the label pairs (a0, a1), (a2, a3) of its list.
AUTHORS_SWAPS = [[0, 3, 8, 9], [1, 4, 6, 9], [1, 2, 3, 6], [3, 5, 4, 7]]


class ClusterSkew(ClusterPartition):
    """Base of the CLoVE skews: subclasses define `layout(C, rng)` (what the training and the
    test side share) and `pools(labels, C, layout, rng, need, split)` (each cluster's sample
    indices); they may set `quarter_turns()` or `label_maps(C, rng)`."""
    name = "skew"

    def __init__(self, samples_per_client: int = 500, test_samples_per_client: Optional[int] = 100,
                 num_clusters: Optional[int] = None, default_clusters: int = 4, min_samples: int = 1, **kw):
        """num_clusters: K (the run's top-level num_clusters); null: default_clusters, this
        skew's usual K, which then becomes the run's K. test_samples_per_client null: as the
        authors' code, min(samples_per_client, the cluster's test pool // its clients).
        min_samples 1: every client gets samples_per_client samples, so no minimum is needed
        (declared here, not set in the body, so the config's schema carries the same default)."""
        super().__init__(num_clusters=default_clusters if num_clusters is None else num_clusters,
                         min_samples=min_samples, **kw)
        if samples_per_client < 1 or (test_samples_per_client is not None and test_samples_per_client < 1):
            raise ConfigError(f"partition.samples_per_client={samples_per_client} and test_samples_per_client="
                              f"{test_samples_per_client} must be >= 1")
        self.samples_per_client, self.test_samples_per_client = samples_per_client, test_samples_per_client

    # -- what a skew defines ------------------------------------------------------------------
    def layout(self, C: int, rng: np.random.Generator):
        return None

    def pools(self, labels: np.ndarray, C: int, layout, rng: np.random.Generator, need: int,
              split: str) -> List[np.ndarray]:
        """[K] index arrays into `labels`: each cluster's pool. `need`: the samples a cluster's
        clients take from it."""
        raise NotImplementedError

    def quarter_turns(self) -> np.ndarray:
        """[K] counter-clockwise quarter turns of each cluster's images (none by default)."""
        return np.zeros(self.num_clusters, dtype=np.int64)

    def label_maps(self, C: int, rng: np.random.Generator) -> np.ndarray:
        """[K, C] each cluster's relabelling y -> map[y] (identity by default)."""
        return np.tile(np.arange(C), (self.num_clusters, 1))

    # -- shared machinery ---------------------------------------------------------------------
    def _order(self, C: int, rng: np.random.Generator, shuffle: bool) -> np.ndarray:
        return rng.permutation(C) if shuffle else np.arange(C)

    def _members(self, labels: np.ndarray, C: int, rng: np.random.Generator) -> List[np.ndarray]:
        return [rng.permutation(np.flatnonzero(labels == c)) for c in range(C)]

    def _draw(self, pools: List[np.ndarray], per_client: Optional[int], rng: np.random.Generator,
              split: str) -> List[torch.Tensor]:
        """Client j of cluster k: a disjoint random slice of cluster k's shuffled pool."""
        out = []
        for k, pool in enumerate(pools):
            n = per_client if per_client is not None else min(self.samples_per_client, len(pool) // self.per_cluster)
            if n < 1 or n * self.per_cluster > len(pool):
                raise ConfigError(f"partition={self.name}: cluster {k}'s {split} pool holds {len(pool)} samples but its "
                                  f"{self.per_cluster} clients need {max(n, 1)} each; lower partition.num_clients or "
                                  "the samples per client, or use a data set with more samples per class")
            shuffled = rng.permutation(pool)
            out += [torch.as_tensor(np.sort(shuffled[j * n:(j + 1) * n]), dtype=torch.long)
                    for j in range(self.per_cluster)]
        return out

    def split(self, train_labels, test_labels, num_classes, g) -> LabelSplit:
        rng = numpy_rng(g)
        C = num_classes
        layout = self.layout(C, rng)
        truth = self.truth()
        turns = self.quarter_turns()[truth]
        maps = self.label_maps(C, rng)[truth]
        n_test = self.test_samples_per_client or 1
        train_pools = self.pools(train_labels.numpy(), C, layout, rng, self.per_cluster * self.samples_per_client,
                                 "training")
        test_pools = self.pools(test_labels.numpy(), C, layout, rng, self.per_cluster * n_test, "test")
        return LabelSplit(self._draw(train_pools, self.samples_per_client, rng, "training"),
                          self._draw(test_pools, self.test_samples_per_client, rng, "test"),
                          torch.as_tensor(truth, dtype=torch.long),
                          quarter_turns=torch.as_tensor(turns, dtype=torch.long),
                          label_map=torch.as_tensor(maps, dtype=torch.long))


class _LabelSetSkew(ClusterSkew):
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

    def __init__(self, alpha: float = 0.5, reserve_fraction: float = 0.1, min_cluster_fraction: float = 0.1,
                 min_cluster_test_fraction: float = 0.075, test_follows_train: bool = False, **kw):
        super().__init__(**kw)
        if alpha <= 0:
            raise ConfigError(f"partition.alpha={alpha} must be > 0")
        for key, v in (("reserve_fraction", reserve_fraction), ("min_cluster_fraction", min_cluster_fraction),
                       ("min_cluster_test_fraction", min_cluster_test_fraction)):
            if not 0 <= v <= 1:
                raise ConfigError(f"partition.{key}={v} must be in [0, 1]")
        self.alpha, self.reserve_fraction = alpha, reserve_fraction
        self.min_cluster_fraction, self.min_cluster_test_fraction = min_cluster_fraction, min_cluster_test_fraction
        self.test_follows_train = test_follows_train
        self._train_shares = None

    def cluster_classes(self, C: int, rng: np.random.Generator) -> List[np.ndarray]:
        raise NotImplementedError

    def layout(self, C, rng):
        sets = self.cluster_classes(C, rng)
        self._train_shares = None
        return [[k for k, s in enumerate(sets) if c in set(s.tolist())] for c in range(C)]   # holders of each class

    def _assemble(self, members, holders, props, reserve) -> List[np.ndarray]:
        parts: List[List[np.ndarray]] = [[] for _ in range(self.num_clusters)]
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

    def pools(self, labels, C, holders, rng, need, split):
        if split == "test" and self.test_follows_train and self._train_shares is not None:
            reserve, props = self._train_shares
            return self._assemble(self._members(labels, C, rng), holders, props, reserve)
        fraction = self.min_cluster_fraction if split == "training" else self.min_cluster_test_fraction
        threshold = max(math.ceil(fraction * len(labels)), need)
        reserve, step = self.reserve_fraction, 0.05
        while True:
            props = [dirichlet(rng, self.alpha, len(who), 1)[0] if who else None for who in holders]
            pools = self._assemble(self._members(labels, C, rng), holders, props, reserve)
            if min(len(p) for p in pools) >= threshold:
                if split == "training":
                    self._train_shares = (reserve, props)
                return pools
            reserve += step
            if reserve > 1.0:
                raise ConfigError(f"partition={self.name} could not give every cluster {threshold} {split} samples of "
                                  f"its classes (smallest pool {min(len(p) for p in pools)}, reserve up to "
                                  f"{reserve - step:.2f}); lower partition.num_clients or the samples per client")


class LabelSkew1(_LabelSetSkew):
    """Label skew 1 = the authors' exp203 (dataset_modifier.py `dict_overlap_swap_exps`,
    `get_label_skew_data_split`): cluster k holds the fixed classes 2k, 2k+1 (`label_groups`
    [0,1], [2,3], ..., [8,9]; `classes_per_cluster` consecutive classes in general), none shared,
    so each cluster's pool is all samples of its classes and its clients draw IID from it (class
    proportions about, not exactly, equal). `shuffle_classes: true` deals the groups from a
    random class permutation instead (our earlier construction)."""
    name = "label_skew1"

    def __init__(self, classes_per_cluster: int = 2, shuffle_classes: bool = False, min_cluster_fraction: float = 0.0,
                 min_cluster_test_fraction: float = 0.0, **kw):
        # A cluster's pool is all of its classes, whatever the draws: exp203's minimum pool
        # (6,000 / 750) holds for any two classes; we only require what the clients need.
        super().__init__(min_cluster_fraction=min_cluster_fraction, min_cluster_test_fraction=min_cluster_test_fraction,
                         **kw)
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


class LabelSkew2(_LabelSetSkew):
    """Label skew 2 = the authors' exp201 (dataset_modifier.py `generate_label_assignments`,
    `partition_dataset_with_label_overlap`, `try_partition_until_min`): K = 5 clusters, each a
    random set of U = `classes_per_cluster` (4) classes, every two sets sharing exactly V =
    `shared_classes` (2) classes; each class split over its holding clusters by Dirichlet(0.5)
    with a 10 % reserve split evenly; minimum pool 5,100 of 60,000 training and 510 of 10,000
    test samples per cluster (min_cluster_fraction 0.085, min_cluster_test_fraction 0.051).
    Clients draw IID from their cluster's pool."""
    name = "label_skew2"

    def __init__(self, classes_per_cluster: int = 4, shared_classes: int = 2, min_cluster_fraction: float = 0.085,
                 min_cluster_test_fraction: float = 0.051, **kw):
        super().__init__(min_cluster_fraction=min_cluster_fraction, min_cluster_test_fraction=min_cluster_test_fraction,
                         **kw)
        self.classes_per_cluster, self.shared_classes = classes_per_cluster, shared_classes

    def cluster_classes(self, C, rng) -> List[np.ndarray]:
        U, V = self.classes_per_cluster, self.shared_classes
        if not 0 <= V < U <= C:
            raise ConfigError(f"label_skew2 needs 0 <= shared_classes < classes_per_cluster <= classes ({C}); "
                              f"got shared_classes={V}, classes_per_cluster={U}")
        return overlapping_label_sets(C, self.num_clusters, U, V, rng)


class LabelSkew3(_LabelSetSkew):
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

    def __init__(self, shuffle_classes: bool = False, **kw):
        super().__init__(**kw)
        self.shuffle_classes = shuffle_classes

    def cluster_classes(self, C, rng) -> List[np.ndarray]:
        K = self.num_clusters
        if K - 1 > C:
            raise ConfigError(f"label_skew3 removes a distinct class from {K - 1} clusters; "
                              f"the data set has only {C} classes")
        order = self._order(C, rng, self.shuffle_classes)
        return [np.setdiff1d(np.arange(C), [order[(k - 1) % C]]) for k in range(K - 1)] + [np.arange(C)]


class LabelSkew4(ClusterSkew):
    """Label skew 4 = the authors' exp501 (dataset_modifier.py `partition_dataset_dominance_based`,
    `get_dominance_data_split`): one cluster per class, K = C = 10, cluster k's dominant class k
    (the first K classes in general; `shuffle_classes: true`: K random ones). From the selected
    (dominant) classes' samples, each cluster's pool gets g = floor(0.9 * the smallest selected
    class) samples: floor(0.666 g) of its dominant class (exp501's dominance_percent 66.6, "2/3rd")
    and floor((g - that) / (K - 1)) of every other selected class, no sample in two pools.
    `uniform_share` (0.334) is the non-dominant part. `uniform_over: others` (the code) spreads
    it over the other selected classes; `all` (the paper's wording "uniformly sampled from all
    classes", our earlier construction) over all C classes, the dominant one included. No
    Dirichlet here, although the paper's App. C.1.2 names one for label skew 4. Clients draw IID
    from their cluster's pool, so about 2/3 of each client's data is its dominant class."""
    name = "label_skew4"

    def __init__(self, uniform_share: float = 0.334, uniform_over: str = "others", shuffle_classes: bool = False,
                 **kw):
        super().__init__(**kw)
        if not 0 <= uniform_share <= 1:
            raise ConfigError(f"partition.uniform_share={uniform_share} must be in [0, 1]")
        if uniform_over not in ("others", "all"):
            raise ConfigError(f"partition.uniform_over={uniform_over!r} must be 'others' or 'all'")
        self.uniform_share, self.uniform_over, self.shuffle_classes = uniform_share, uniform_over, shuffle_classes

    def layout(self, C, rng):
        if self.num_clusters > C:
            raise ConfigError(f"label_skew4 needs a distinct dominant class per cluster: num_clusters="
                              f"{self.num_clusters} > classes ({C})")
        return self._order(C, rng, self.shuffle_classes)[: self.num_clusters]

    def pools(self, labels, C, dominant, rng, need, split):
        K, u = self.num_clusters, self.uniform_share
        dominant = [int(c) for c in dominant]
        members = self._members(labels, C, rng)
        spread = list(range(C)) if self.uniform_over == "all" else dominant
        smallest = min(len(members[c]) for c in set(spread) | set(dominant))
        # Every class is one cluster's dominant class at most and spread over the other pools:
        # what it gives must stay within 90 % of the smallest class.
        if self.uniform_over == "others":
            group = int(0.9 * smallest)
        else:
            group = int(0.9 * smallest / ((1 - u) + K * u / C))
        own = int((1 - u) * group)
        taken = np.zeros(C, dtype=np.int64)
        pools = []
        for d in dominant:
            rest = [c for c in spread if self.uniform_over == "all" or c != d]
            each = int((group - own) / len(rest)) if rest else 0
            parts = []
            for c, n in [(d, own)] + [(c, each) for c in rest]:
                parts.append(members[c][taken[c]:taken[c] + n])
                taken[c] += n
            pools.append(np.concatenate(parts))
        return pools


class FeatureSkew(ClusterSkew):
    """Feature skew = the authors' exp301 (dataset_modifier.py `get_feature_skew_data_split`):
    cluster k's pool is the whole data set rotated by k * 90 degrees (0/90/180/270; torchvision's
    rotate, counter-clockwise like torch.rot90), all classes in their natural proportions; clients
    draw IID from it. The four pools are independent shuffles of the same images, so one image
    can reach clients of several clusters, rotated differently. `disjoint_clusters: true` splits
    the data set into K disjoint pools instead (no image in two clusters)."""
    name = "feature_skew"

    def __init__(self, disjoint_clusters: bool = False, **kw):
        super().__init__(**kw)
        self.disjoint_clusters = disjoint_clusters

    def layout(self, C, rng):
        if self.num_clusters > 4:
            raise ConfigError(f"feature_skew has 4 rotations (0/90/180/270); num_clusters={self.num_clusters} > 4")
        return None

    def pools(self, labels, C, layout, rng, need, split):
        everything = np.arange(len(labels))
        if self.disjoint_clusters:
            return np.array_split(rng.permutation(everything), self.num_clusters)
        return [everything for _ in range(self.num_clusters)]

    def quarter_turns(self):
        return np.arange(self.num_clusters)


class ConceptShift(ClusterSkew):
    """Concept shift = the authors' exp111 (dataset_modifier.py `split_dataset`, `generate_swap_pairs`,
    `swap_labels_in_group`): K = 4 clusters, each with `class_samples_per_cluster` (1,250) training
    and `test_class_samples_per_cluster` (200) test samples of every class, no sample in two
    clusters (fewer when a class has less than K times that: an equal share of the smallest
    class), and its own label swaps: `swaps` lists each cluster's labels, swapped in adjacent
    pairs; the authors' lists [0,3,8,9], [1,4,6,9], [1,2,3,6], [3,5,4,7] swap (0,3),(8,9) /
    (1,4),(6,9) / (1,2),(3,6) / (3,5),(4,7), no pair reused. Clusters beyond the list, or all
    with `swaps: null` (our earlier construction), take two random disjoint pairs no cluster has
    used. Clients draw IID from their cluster's pool."""
    name = "concept_shift"

    def __init__(self, swaps: Optional[Sequence[Sequence[int]]] = tuple(map(tuple, AUTHORS_SWAPS)),
                 class_samples_per_cluster: int = 1250, test_class_samples_per_cluster: int = 200, **kw):
        super().__init__(**kw)
        if class_samples_per_cluster < 1 or test_class_samples_per_cluster < 1:
            raise ConfigError(f"partition.class_samples_per_cluster={class_samples_per_cluster} and "
                              f"test_class_samples_per_cluster={test_class_samples_per_cluster} must be >= 1")
        self.swap_lists = None if swaps is None else [[int(v) for v in row] for row in swaps]
        self.class_samples_per_cluster = class_samples_per_cluster
        self.test_class_samples_per_cluster = test_class_samples_per_cluster

    def pools(self, labels, C, layout, rng, need, split):
        K = self.num_clusters
        members = self._members(labels, C, rng)
        cap = self.class_samples_per_cluster if split == "training" else self.test_class_samples_per_cluster
        per = min(cap, min(len(m) for m in members) // K)
        return [np.concatenate([m[k * per:(k + 1) * per] for m in members]) for k in range(K)]

    def swaps(self, C, rng) -> List[List[Tuple[int, int]]]:
        out, used = [], set()
        for row in (self.swap_lists or [])[: self.num_clusters]:
            if len(row) % 2 or len(set(row)) != len(row) or not all(0 <= v < C for v in row):
                raise ConfigError(f"partition.swaps row {row}: needs an even number of distinct labels in "
                                  f"[0, {C - 1}]")
            pairs = [tuple(sorted(row[i:i + 2])) for i in range(0, len(row), 2)]
            used.update(pairs)
            out.append(pairs)
        pairs = [(a, b) for a in range(C) for b in range(a + 1, C)]
        order = rng.permutation(len(pairs))
        while len(out) < self.num_clusters:
            chosen = []
            for j in order:
                p = pairs[j]
                if p in used or any(set(p) & set(q) for q in chosen):
                    continue
                chosen.append(p)
                if len(chosen) == 2:
                    break
            if len(chosen) < 2:
                raise ConfigError(f"concept_shift cannot give {self.num_clusters} clusters two unused label swaps "
                                  f"with {C} classes; lower num_clusters")
            used.update(chosen)
            out.append(chosen)
        return out

    def label_maps(self, C, rng):
        maps = np.tile(np.arange(C), (self.num_clusters, 1))
        for k, pair_list in enumerate(self.swaps(C, rng)):
            for a, b in pair_list:
                maps[k, a], maps[k, b] = b, a
        return maps
