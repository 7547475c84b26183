"""CLoVE's label skew 4: each cluster dominated by one class (conf/partition/label_skew4.yaml)."""
from typing import Annotated

import numpy as np

from ..errors import ConfigError
from ..rules import Fraction, OneOf
from .skews import ClusterSkew, class_members


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

    def __init__(self, uniform_share: Annotated[float, Fraction] = 0.334,
                 uniform_over: Annotated[str, OneOf("others", "all")] = "others", shuffle_classes: bool = False,
                 **kw):
        super().__init__(**kw)
        self.uniform_share, self.uniform_over, self.shuffle_classes = uniform_share, uniform_over, shuffle_classes

    def layout(self, C, rng):
        if self.num_clusters > C:
            raise ConfigError(f"label_skew4 needs a distinct dominant class per cluster: num_clusters="
                              f"{self.num_clusters} > classes ({C})")
        return self._order(C, rng, self.shuffle_classes)[: self.num_clusters]

    def pools(self, labels, C, dominant, rng, need, split):
        K, u = self.num_clusters, self.uniform_share
        dominant = [int(c) for c in dominant]
        members = class_members(labels, C, rng)
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
