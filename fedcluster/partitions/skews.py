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
cluster's pool is the whole data set, rotated).

The skews: label_sets.py (labels 1-3: clusters by label sets), dominant_class.py (label 4),
rotations.py (feature skew), label_swaps.py (concept shift). Each derives from `ClusterSkew`
and declares all of its own settings in its signature."""
from typing import Annotated, List, Optional

import numpy as np
import torch

from ..errors import ConfigError
from ..rng import generator
from ..rules import AtLeast
from .labels import ClusterPartition
from .shares import LabelSplit, numpy_rng


def class_members(labels: np.ndarray, C: int, rng: np.random.Generator) -> List[np.ndarray]:
    """Each class's sample positions, shuffled."""
    return [rng.permutation(np.flatnonzero(labels == c)) for c in range(C)]


class ClusterSkew(ClusterPartition):
    """Base of the CLoVE skews: subclasses define `layout(C, rng)` (what the training and the
    test side share) and `pools(labels, C, layout, rng, need, split)` (each cluster's sample
    indices), or own a `pooling` component and define `cluster_classes(C, rng)` (label skews
    1-3); they may set `quarter_turns()` or `label_maps(C, rng)`."""
    name = "skew"

    def __init__(self, samples_per_client: Annotated[int, AtLeast(1)] = 500,
                 test_samples_per_client: Annotated[Optional[int], AtLeast(1)] = 100,
                 num_clusters: Annotated[Optional[int], AtLeast(1)] = None,
                 default_clusters: Annotated[int, AtLeast(1)] = 4, min_samples: Annotated[int, AtLeast(1)] = 1,
                 cluster_seed: Annotated[Optional[int], AtLeast(0)] = None, **kw):
        """num_clusters: K (the run's top-level num_clusters); null: default_clusters, this
        skew's usual K, which then becomes the run's K. test_samples_per_client null: as the
        authors' code, min(samples_per_client, the cluster's test pool // its clients).
        min_samples 1: every client gets samples_per_client samples, so no minimum is needed
        (declared here, not set in the body, so the config's schema carries the same default).
        cluster_seed: the seed of stage 1, the clusters' layout and pools; the clients' draws of
        stage 2 keep the run's seed. The authors' driver builds the cluster pools once, at the
        first seed of its sweep, and redraws only the clients' shares for the later seeds
        (mlflow_driver.py at b602090f: `mix_data_classes` runs when the data set changes, the
        client assignment when the seed does), so their seeds share one cluster split.
        null, or the run's own seed: both stages from the run's seed, one stream."""
        super().__init__(num_clusters=default_clusters if num_clusters is None else num_clusters,
                         min_samples=min_samples, **kw)
        self.samples_per_client, self.test_samples_per_client = samples_per_client, test_samples_per_client
        self.cluster_seed = cluster_seed

    # -- what a skew defines ------------------------------------------------------------------
    pooling = None   # a pool builder the skew owns (label_sets.LabelSetPools, from `cluster_classes`)

    def layout(self, C: int, rng: np.random.Generator):
        if self.pooling is None:
            return None
        return self.pooling.holders(self.cluster_classes(C, rng), C, self.num_clusters)

    def pools(self, labels: np.ndarray, C: int, layout, rng: np.random.Generator, need: int,
              split: str) -> List[np.ndarray]:
        """[K] index arrays into `labels`: each cluster's pool. `need`: the samples a cluster's
        clients take from it."""
        if self.pooling is None:
            raise NotImplementedError
        return self.pooling.pools(labels, C, layout, rng, need, split, self.num_clusters, self.name)

    def quarter_turns(self) -> np.ndarray:
        """[K] counter-clockwise quarter turns of each cluster's images (none by default)."""
        return np.zeros(self.num_clusters, dtype=np.int64)

    def label_maps(self, C: int, rng: np.random.Generator) -> np.ndarray:
        """[K, C] each cluster's relabelling y -> map[y] (identity by default)."""
        return np.tile(np.arange(C), (self.num_clusters, 1))

    # -- shared machinery ---------------------------------------------------------------------
    def _order(self, C: int, rng: np.random.Generator, shuffle: bool) -> np.ndarray:
        return rng.permutation(C) if shuffle else np.arange(C)

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
        pool_rng = rng
        if self.cluster_seed is not None:
            own = numpy_rng(generator(self.cluster_seed, "partition"))
            # the run's own seed as cluster_seed is the one-stream split of null, draw for draw
            if own.bit_generator.state != rng.bit_generator.state:
                pool_rng = own
        C = num_classes
        layout = self.layout(C, pool_rng)
        truth = self.truth()
        turns = self.quarter_turns()[truth]
        maps = self.label_maps(C, pool_rng)[truth]
        n_test = self.test_samples_per_client or 1
        train_pools = self.pools(train_labels.numpy(), C, layout, pool_rng, self.per_cluster * self.samples_per_client,
                                 "training")
        test_pools = self.pools(test_labels.numpy(), C, layout, pool_rng, self.per_cluster * n_test, "test")
        return LabelSplit(self._draw(train_pools, self.samples_per_client, rng, "training"),
                          self._draw(test_pools, self.test_samples_per_client, rng, "test"),
                          torch.as_tensor(truth, dtype=torch.long),
                          quarter_turns=torch.as_tensor(turns, dtype=torch.long),
                          label_map=torch.as_tensor(maps, dtype=torch.long))
