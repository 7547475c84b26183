"""CLoVE's concept shift: each cluster swaps its own pairs of labels (conf/partition/concept_shift.yaml)."""
from typing import Annotated, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import ConfigError
from ..rules import AtLeast
from .skews import ClusterSkew, class_members

# exp111 (concept shift): each cluster swaps the label pairs (a0, a1), (a2, a3) of its list.
AUTHORS_SWAPS = [[0, 3, 8, 9], [1, 4, 6, 9], [1, 2, 3, 6], [3, 5, 4, 7]]


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
                 class_samples_per_cluster: Annotated[int, AtLeast(1)] = 1250,
                 test_class_samples_per_cluster: Annotated[int, AtLeast(1)] = 200, **kw):
        super().__init__(**kw)
        self.swap_lists = None if swaps is None else [[int(v) for v in row] for row in swaps]
        self.class_samples_per_cluster = class_samples_per_cluster
        self.test_class_samples_per_cluster = test_class_samples_per_cluster

    def pools(self, labels, C, layout, rng, need, split):
        K = self.num_clusters
        members = class_members(labels, C, rng)
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
