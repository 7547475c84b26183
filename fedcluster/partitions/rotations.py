"""CLoVE's feature skew: each cluster's images rotated by its own angle (conf/partition/feature_skew.yaml)."""
import numpy as np

from ..errors import ConfigError
from .skews import ClusterSkew


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
