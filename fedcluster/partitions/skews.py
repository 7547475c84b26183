"""CLoVE's cluster skews (CLoVE §5.1 and App. C.1.2), conf/partition/*_skew*.yaml, concept_shift.yaml.

K clusters of m/K clients; every client gets exactly `samples_per_client` training samples
and `test_samples_per_client` held-out test samples, both drawn (without replacement, no
sample used twice) from its own distribution: the same class proportions and the same
transform (rotation for feature skew, label swaps for concept shift). A skew decides each
client's class proportions `probs [m, C]` and, optionally, per-client transforms."""
from typing import List, Optional, Tuple

import numpy as np
import torch

from ..errors import ConfigError
from .labels import LabelSplit, _Clusters, _numpy_rng, dirichlet, largest_remainder, take_indices


class ClusterSkew(_Clusters):
    """Base of the CLoVE skews: subclasses define `probs(C, rng) -> [m, C]` and may set
    `quarter_turns(K)` or `label_maps(C, rng)`."""
    name = "skew"

    def __init__(self, samples_per_client: int = 500, test_samples_per_client: int = 100,
                 num_clusters: Optional[int] = None, default_clusters: int = 4, **kw):
        """num_clusters: K (the run's top-level num_clusters); null: default_clusters, this
        skew's usual K, which then becomes the run's K."""
        kw.setdefault("min_samples", 1)
        super().__init__(num_clusters=default_clusters if num_clusters is None else num_clusters, **kw)
        if samples_per_client < 1 or test_samples_per_client < 1:
            raise ConfigError(f"partition.samples_per_client={samples_per_client} and test_samples_per_client="
                              f"{test_samples_per_client} must be >= 1")
        self.samples_per_client, self.test_samples_per_client = samples_per_client, test_samples_per_client

    def probs(self, C: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def quarter_turns(self) -> np.ndarray:
        """[K] counter-clockwise quarter turns of each cluster's images (none by default)."""
        return np.zeros(self.num_clusters, dtype=np.int64)

    def label_maps(self, C: int, rng: np.random.Generator) -> np.ndarray:
        """[K, C] each cluster's relabelling y -> map[y] (identity by default)."""
        return np.tile(np.arange(C), (self.num_clusters, 1))

    def _counts(self, probs: np.ndarray, n: int, labels: torch.Tensor, C: int, split: str) -> np.ndarray:
        counts = largest_remainder(probs, np.full(len(probs), n)).T          # [C, m]
        have = np.bincount(labels.numpy(), minlength=C)[:C]
        short = np.nonzero(counts.sum(1) > have)[0]
        if len(short):
            c = int(short[0])
            raise ConfigError(f"partition={self.name} needs {int(counts[c].sum())} {split} samples of class {c} but the "
                              f"pool has {int(have[c])}; lower partition.num_clients or the samples per client")
        return counts

    def split(self, train_labels, test_labels, num_classes, g) -> LabelSplit:
        rng = _numpy_rng(g)
        C = num_classes
        probs = self.probs(C, rng)
        truth = self.truth()
        turns = self.quarter_turns()[truth]
        maps = self.label_maps(C, rng)[truth]
        train = take_indices(train_labels, self._counts(probs, self.samples_per_client, train_labels, C, "training"), g)
        test = take_indices(test_labels, self._counts(probs, self.test_samples_per_client, test_labels, C, "test"), g)
        return LabelSplit(train, test, torch.as_tensor(truth, dtype=torch.long),
                          quarter_turns=torch.as_tensor(turns, dtype=torch.long),
                          label_map=torch.as_tensor(maps, dtype=torch.long))

    def _uniform_over(self, sets: List[np.ndarray], C: int) -> np.ndarray:
        """Client i: uniform over the classes of its cluster's set."""
        per_cluster = np.zeros((self.num_clusters, C))
        for k, s in enumerate(sets):
            per_cluster[k, s] = 1.0 / len(s)
        return per_cluster[self.truth()]


class LabelSkew1(ClusterSkew):
    """Label skew 1: each cluster gets `classes_per_cluster` (2) classes, no class shared
    between clusters; clients uniform over their cluster's classes."""
    name = "label_skew1"

    def __init__(self, classes_per_cluster: int = 2, **kw):
        super().__init__(**kw)
        self.classes_per_cluster = classes_per_cluster

    def cluster_classes(self, C, rng) -> List[np.ndarray]:
        u = self.classes_per_cluster
        if u < 1 or u * self.num_clusters > C:
            raise ConfigError(f"label_skew1 gives {self.num_clusters} clusters {u} disjoint classes each, which needs "
                              f"{u * self.num_clusters} classes; the data set has {C}. Lower num_clusters")
        perm = rng.permutation(C)
        return [perm[k * u:(k + 1) * u] for k in range(self.num_clusters)]

    def probs(self, C, rng):
        return self._uniform_over(self.cluster_classes(C, rng), C)


class LabelSkew2(ClusterSkew):
    """Label skew 2: each cluster gets U classes and any two clusters share at least V: V
    core classes shared by all, plus U - V more per cluster taken in turn from the other
    classes (wrapping when K (U - V) > C - V, so then some clusters share more than V).
    CLoVE images: U = 4, V = 2."""
    name = "label_skew2"

    def __init__(self, classes_per_cluster: int = 4, shared_classes: int = 2, **kw):
        super().__init__(**kw)
        self.classes_per_cluster, self.shared_classes = classes_per_cluster, shared_classes

    def cluster_classes(self, C, rng) -> List[np.ndarray]:
        U, V = self.classes_per_cluster, self.shared_classes
        if not 0 <= V < U <= C:
            raise ConfigError(f"label_skew2 needs 0 <= shared_classes < classes_per_cluster <= classes ({C}); "
                              f"got shared_classes={V}, classes_per_cluster={U}")
        perm = rng.permutation(C)
        core, rest = perm[:V], perm[V:]
        return [np.concatenate([core, rest[(k * (U - V) + np.arange(U - V)) % len(rest)]])
                for k in range(self.num_clusters)]

    def probs(self, C, rng):
        return self._uniform_over(self.cluster_classes(C, rng), C)


class LabelSkew3(ClusterSkew):
    """Label skew 3 (CLoVE App. C.1.2): clusters 1..K-1 each miss one distinct class, cluster K
    has all; the data of a class is split among the clients that hold it by Dirichlet(alpha),
    alpha = 0.5 (a client's class proportions follow its Dirichlet shares)."""
    name = "label_skew3"

    def __init__(self, alpha: float = 0.5, **kw):
        super().__init__(**kw)
        if alpha <= 0:
            raise ConfigError(f"partition.alpha={alpha} must be > 0")
        self.alpha = alpha

    def holds(self, C, rng) -> np.ndarray:
        """[K, C] which classes each cluster has."""
        if self.num_clusters - 1 > C:
            raise ConfigError(f"label_skew3 removes a distinct class from {self.num_clusters - 1} clusters; "
                              f"the data set has only {C} classes")
        missing = rng.permutation(C)[: self.num_clusters - 1]
        has = np.ones((self.num_clusters, C), dtype=bool)
        has[np.arange(self.num_clusters - 1), missing] = False
        return has

    def probs(self, C, rng):
        has = self.holds(C, rng)[self.truth()]                    # [m, C]
        w = np.zeros(has.shape)
        for c in range(C):
            holders = np.nonzero(has[:, c])[0]
            w[holders, c] = dirichlet(rng, self.alpha, len(holders), 1)[0]
        w = np.maximum(w, 1e-12) * has
        return w / w.sum(1, keepdims=True)


class LabelSkew4(ClusterSkew):
    """Label skew 4 (CLoVE App. C.1.2, after FedPAC): a `uniform_share` (one third) of each
    client's data is uniform over all classes, the rest comes from its cluster's dominant
    class, distinct per cluster."""
    name = "label_skew4"

    def __init__(self, uniform_share: float = 1 / 3, **kw):
        super().__init__(**kw)
        if not 0 <= uniform_share <= 1:
            raise ConfigError(f"partition.uniform_share={uniform_share} must be in [0, 1]")
        self.uniform_share = uniform_share

    def probs(self, C, rng):
        if self.num_clusters > C:
            raise ConfigError(f"label_skew4 needs a distinct dominant class per cluster: num_clusters="
                              f"{self.num_clusters} > classes ({C})")
        dominant = rng.permutation(C)[: self.num_clusters]
        per_cluster = np.full((self.num_clusters, C), self.uniform_share / C)
        per_cluster[np.arange(self.num_clusters), dominant] += 1 - self.uniform_share
        return per_cluster[self.truth()]


class FeatureSkew(ClusterSkew):
    """Feature skew: cluster k's images are rotated by k * 90 degrees (0/90/180/270); all
    classes, uniform."""
    name = "feature_skew"

    def probs(self, C, rng):
        if self.num_clusters > 4:
            raise ConfigError(f"feature_skew has 4 rotations (0/90/180/270); num_clusters={self.num_clusters} > 4")
        return np.full((self.num_clients, C), 1.0 / C)

    def quarter_turns(self):
        return np.arange(self.num_clusters)


class ConceptShift(ClusterSkew):
    """Concept shift: every cluster swaps two label pairs, the pairs disjoint within a cluster
    and never reused by another cluster; all classes, uniform."""
    name = "concept_shift"

    def probs(self, C, rng):
        return np.full((self.num_clients, C), 1.0 / C)

    def swaps(self, C, rng) -> List[Tuple[Tuple[int, int], Tuple[int, int]]]:
        pairs = [(a, b) for a in range(C) for b in range(a + 1, C)]
        order = rng.permutation(len(pairs))
        used, out = set(), []
        for _ in range(self.num_clusters):
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
            out.append(tuple(chosen))
        return out

    def label_maps(self, C, rng):
        maps = np.tile(np.arange(C), (self.num_clusters, 1))
        for k, pair_list in enumerate(self.swaps(C, rng)):
            for a, b in pair_list:
                maps[k, a], maps[k, b] = b, a
        return maps
