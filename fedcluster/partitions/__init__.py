"""Partitioners (conf/partition/*.yaml).

mixture: each client holds a mixture of the source's S distributions (FedSoft §5).
labels: one labelled pool split over clients by class (Fed-CAM §5, Hsu et al. 2019).
skews: K clusters with label, feature (rotation) or concept (label swap) skew (CLoVE §5.1).
natural: the data's own groups as the clients.
flower: flwr-datasets' partitioners (optional extra fedcluster[flower])."""
from .labels import ClusteredDirichletLabels, ClusteredNClassLabels, DirichletLabels, LabelSplit, NClassLabels
from .dominant_class import LabelSkew4
from .label_sets import LabelSkew1, LabelSkew2, LabelSkew3
from .label_swaps import ConceptShift
from .flower import FlowerPartition
from .natural import NaturalClients
from .rotations import FeatureSkew
from .mixture import Clustered, LinearMix, Partition, PartitionPlan, RandomMix, TwoGroupMix, counts_from_ratios

__all__ = ["Partition", "PartitionPlan", "TwoGroupMix", "LinearMix", "RandomMix", "Clustered", "counts_from_ratios",
           "LabelSplit", "DirichletLabels", "ClusteredDirichletLabels", "NClassLabels", "ClusteredNClassLabels",
           "LabelSkew1", "LabelSkew2", "LabelSkew3", "LabelSkew4", "FeatureSkew", "ConceptShift",
           "NaturalClients", "FlowerPartition"]
