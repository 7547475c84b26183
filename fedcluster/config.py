"""Structured-config schemas, registered in Hydra's ConfigStore.

Every option file in conf/<group>/ starts from one of these schemas (its defaults list
names `/schemas/<group>/<kind>@_here_`), so a misspelt key or a value of the wrong type is
rejected at composition time with an error that names the key."""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


@dataclass
class TrainConfig:
    """The clients' local solver."""
    optimizer: str = "adam"
    lr: float = 5e-3
    epochs: int = 10
    batch_size: int = 10
    momentum: float = 0.0
    weight_decay: float = 0.0
    steps: Optional[int] = None   # set: exactly this many mini-batch steps per round instead of `epochs` epochs


@dataclass
class Config:
    dataset: Any = MISSING
    partition: Any = MISSING
    model: Any = MISSING
    algorithm: Any = MISSING
    hardware: Any = MISSING
    train: TrainConfig = field(default_factory=TrainConfig)
    seed: int = 0
    rounds: int = 50
    engine: str = "auto"          # auto | batched | sequential
    eval_every: int = 1           # evaluate every this many rounds (and always after the last)
    eval_local_train: bool = True # also score local models on their training split (FedSoft's paper did)
    num_clusters: Optional[int] = None   # K shared by cluster-wise partitions and clustered algorithms
    warmup_rounds: int = 30       # warm-up rounds of the methods that have one (Fed-CAM: 30 of 100)
    checkpoint_every: int = 10    # rounds between checkpoints (0 = never)
    progress: bool = True
    plots: bool = True
    overwrite: bool = False       # replace a finished (or another config's) run in the output directory
    divergence_factor: Optional[float] = 1e4   # stop when a loss exceeds this times the starting loss (divergence.py)
    table: Optional[str] = None   # which paper table a preset reproduces (read by fedcluster-report)


# -- dataset -------------------------------------------------------------------------------
@dataclass
class SyntheticDataset:
    _target_: str = "fedcluster.data.SyntheticRegression"
    name: str = "synthetic"
    dim: int = 10
    num_distributions: int = 2
    theta_var: float = 10.0   # variance of theta's coordinates (FedSoft's code: weight_var = 10; its text's "sigma0")
    noise_std: float = 1.0
    test_size: int = 2000


@dataclass
class SeparatedDataset:
    """CLoVE App. C.1.1: unit-norm cluster models with pairwise distances in [delta, 5 delta]."""
    _target_: str = "fedcluster.data.SeparatedRegression"
    name: str = "separated_regression"
    dim: int = 10
    num_distributions: int = 5
    delta: float = 1.0
    noise_std: float = 0.01
    test_size: int = 2000


@dataclass
class ImageDataset:
    _target_: str = "fedcluster.data.ImageSource"
    name: str = MISSING
    root: str = "data"
    download: bool = False
    distributions: List[Dict[str, Any]] = field(default_factory=lambda: [{"rotation": 0}])
    test_size: Optional[int] = None
    train_size: Optional[int] = None     # label partitions: use a random subset of this many training images
    unsupervised: bool = False           # true: reconstruction (MSE) of the images, no labels (CLoVE Table 5)
    augment: Optional[Dict[str, Any]] = None   # e.g. {padding: 4, hflip: true}: random crop + flip of training batches
    reader_kwargs: Dict[str, Any] = field(default_factory=dict)


# -- partition -----------------------------------------------------------------------------
@dataclass
class Partition:
    _target_: str = MISSING
    name: str = MISSING
    num_clients: int = 100
    min_samples: int = 100
    max_samples: int = 200
    local_test_fraction: float = 0.2


@dataclass
class LabelPartition:
    _target_: str = MISSING
    name: str = MISSING
    num_clients: int = 200
    min_samples: int = 10


@dataclass
class DirichletLabelPartition(LabelPartition):
    _target_: str = "fedcluster.partitions.DirichletLabels"
    name: str = "dirichlet"
    alpha: float = 0.1


@dataclass
class ClusteredDirichletLabelPartition(LabelPartition):
    _target_: str = "fedcluster.partitions.ClusteredDirichletLabels"
    name: str = "cluster_dirichlet"
    num_clusters: Optional[int] = "${num_clusters}"
    alpha_cluster: float = 0.1
    alpha_client: float = 10.0


@dataclass
class NClassLabelPartition(LabelPartition):
    _target_: str = "fedcluster.partitions.NClassLabels"
    name: str = "nclass"
    classes_per_client: int = 2


@dataclass
class ClusteredNClassLabelPartition(LabelPartition):
    _target_: str = "fedcluster.partitions.ClusteredNClassLabels"
    name: str = "cluster_nclass"
    num_clusters: Optional[int] = "${num_clusters}"
    classes_per_cluster: int = 3
    classes_per_client: int = 2


@dataclass
class SkewPartition:
    """CLoVE's cluster skews, built as the authors' code builds them (fedcluster/partitions/skews.py):
    num_clusters clusters of num_clients/num_clusters clients, each client with samples_per_client
    training and test_samples_per_client test samples drawn from its cluster's pool (null: the
    authors' rule, min(samples_per_client, the cluster's test pool // its clients))."""
    _target_: str = MISSING
    name: str = MISSING
    num_clients: int = 20
    num_clusters: Optional[int] = "${num_clusters}"   # null: default_clusters
    default_clusters: int = 4
    samples_per_client: int = 500
    test_samples_per_client: Optional[int] = 100


@dataclass
class LabelSkew1Partition(SkewPartition):
    _target_: str = "fedcluster.partitions.LabelSkew1"
    name: str = "label_skew1"
    classes_per_cluster: int = 2
    shuffle_classes: bool = False          # true: groups from a random class permutation (not 0-1, 2-3, ...)


@dataclass
class LabelSkew2Partition(SkewPartition):
    _target_: str = "fedcluster.partitions.LabelSkew2"
    name: str = "label_skew2"
    classes_per_cluster: int = 4
    shared_classes: int = 2                # every two clusters share exactly this many classes
    alpha: float = 0.5                     # Dirichlet split of a class over the clusters holding it
    reserve_fraction: float = 0.1          # of each class, split evenly over its clusters first
    min_cluster_fraction: float = 0.085    # smallest cluster pool, of the training set (5,100 / 60,000)
    min_cluster_test_fraction: float = 0.051   # of the test set (510 / 10,000)
    test_follows_train: bool = False       # true: test pools split with the training side's proportions


@dataclass
class LabelSkew3Partition(SkewPartition):
    _target_: str = "fedcluster.partitions.LabelSkew3"
    name: str = "label_skew3"
    alpha: float = 0.5
    reserve_fraction: float = 0.1
    min_cluster_fraction: float = 0.1      # 6,000 / 60,000
    min_cluster_test_fraction: float = 0.075   # 750 / 10,000
    test_follows_train: bool = False
    shuffle_classes: bool = False          # true: random missing classes (not 9, 0, 1, 2, ...)


@dataclass
class LabelSkew4Partition(SkewPartition):
    _target_: str = "fedcluster.partitions.LabelSkew4"
    name: str = "label_skew4"
    uniform_share: float = 0.334           # non-dominant part of a cluster's data (exp501: 66.6 % dominant)
    uniform_over: str = "others"           # others: the other clusters' dominant classes; all: every class
    shuffle_classes: bool = False          # true: random dominant classes (not 0, 1, ..., K-1)


@dataclass
class FeatureSkewPartition(SkewPartition):
    _target_: str = "fedcluster.partitions.FeatureSkew"
    name: str = "feature_skew"
    disjoint_clusters: bool = False        # true: no image in two clusters' pools


@dataclass
class ConceptShiftPartition(SkewPartition):
    _target_: str = "fedcluster.partitions.ConceptShift"
    name: str = "concept_shift"
    # Each cluster's labels, swapped in adjacent pairs (the authors' exp111); null: random pairs.
    swaps: Optional[List[List[int]]] = field(default_factory=lambda: [[0, 3, 8, 9], [1, 4, 6, 9], [1, 2, 3, 6],
                                                                      [3, 5, 4, 7]])
    class_samples_per_cluster: int = 1250      # training samples of each class in a cluster's pool
    test_class_samples_per_cluster: int = 200


@dataclass
class MixPartition(Partition):
    _target_: str = "fedcluster.partitions.TwoGroupMix"
    minor: float = 0.1


# -- model ---------------------------------------------------------------------------------
@dataclass
class Model:
    _target_: str = MISSING
    name: str = MISSING
    init: str = "xavier"   # xavier (FedSoft's code) | pytorch (PyTorch's default; CLoVE §5.2): models/init.py


@dataclass
class MLPModel(Model):
    _target_: str = "fedcluster.models.MLP"
    name: str = "mlp"
    hidden: List[int] = field(default_factory=lambda: [200])


# -- algorithm -----------------------------------------------------------------------------
@dataclass
class FedSoftAlgorithm:
    _target_: str = "fedcluster.algorithms.FedSoft"
    name: str = "fedsoft"
    num_clusters: Optional[int] = None   # null: one per source distribution
    lam: float = 1.0
    tau: int = 2
    selection_size: int = 60
    smoother: float = 1e-4
    replacement: bool = False        # false: distinct clients (authors' servers.py); true: independent draws (appendix)
    keep_client_state: bool = True   # true: each client's optimizer state persists (authors' clients.py)


@dataclass
class IFCAAlgorithm:
    _target_: str = "fedcluster.algorithms.IFCA"
    name: str = "ifca"
    num_clusters: Optional[int] = None
    client_fraction: float = 1.0
    update: str = "mean"          # mean (IFCA) | eq6 (Fed-CAM eq. 6)
    init: str = "independent"     # independent | identical (CLoVE §5.2)
    first_round: str = "evaluation"   # evaluation | random (CLoVE §5.2; random: every model >= 1 client, as CLoVE's code)
    eval_assignment: str = "evaluated_data"   # evaluated_data (IFCA's code: each client's min-loss model on the
                                              # data being scored) | training (the model it trained this round)


@dataclass
class FedEMAlgorithm:
    _target_: str = "fedcluster.algorithms.FedEM"
    name: str = "fedem"
    num_clusters: Optional[int] = None    # M components; null: one per source distribution
    client_fraction: float = 1.0
    local_predictor: str = "mixture"      # mixture | top_component (FedSoft's Table 2)


@dataclass
class FeSEMAlgorithm:
    _target_: str = "fedcluster.algorithms.FeSEM"
    name: str = "fesem"
    num_clusters: Optional[int] = None
    lam: float = 0.01
    distance_on: str = "all"      # all | fc
    kmeans_iters: int = 10
    warmup_rounds: int = 1


@dataclass
class CLoVEAlgorithm:
    _target_: str = "fedcluster.algorithms.CLoVE"
    name: str = "clove"
    num_clusters: Optional[int] = None
    client_fraction: float = 1.0
    clustering: str = "kmeans"       # kmeans | agglomerative
    embedding: str = "loss"          # loss | sqrt_loss: the vectors clustered and summed in the matching cost
    matching: str = "hungarian"      # hungarian | none
    init: str = "independent"        # independent | identical
    first_round: str = "evaluation"  # evaluation | random (every model >= 1 client, as the authors' code)
    averaging: str = "model"         # model (Option I) | gradient (Option II: full-batch gradients, server step)
    server_optimizer: str = "${train.optimizer}"   # Option II's server step: the clients' optimizer kind
    server_lr: float = "${train.lr}"               # and learning rate, as the authors' code


@dataclass
class CFLAlgorithm:
    _target_: str = "fedcluster.algorithms.CFL"
    name: str = "cfl"
    eps1: float = 0.4
    eps2: float = 1.6
    warmup_rounds: int = 20
    max_clusters: int = 0            # 0: no limit


@dataclass
class CAMAlgorithm:
    _target_: str = "fedcluster.algorithms.CAM"
    name: str = MISSING
    base: Any = MISSING
    warmup: str = "fedavg"        # fedavg | base
    warmup_rounds: int = 30


@dataclass
class EnsembleAlgorithm:
    _target_: str = "fedcluster.algorithms.Ensemble"
    name: str = MISSING
    base: Any = MISSING
    num_clusters: Optional[int] = None


@dataclass
class FedAvgAlgorithm:
    _target_: str = "fedcluster.algorithms.FedAvg"
    name: str = "fedavg"
    client_fraction: float = 1.0


@dataclass
class FedProxAlgorithm(FedAvgAlgorithm):
    _target_: str = "fedcluster.algorithms.FedProx"
    name: str = "fedprox"
    mu: float = 0.01


@dataclass
class LocalAlgorithm:
    _target_: str = "fedcluster.algorithms.LocalOnly"
    name: str = "local"


# -- hardware ------------------------------------------------------------------------------
@dataclass
class HardwareConfig:
    _target_: str = "fedcluster.hardware.Hardware"
    device: str = "cpu"
    dtype: str = "float32"
    precision: str = "fp32"   # fp32 | tf32 (NVIDIA GPUs) | bf16 (autocast forward passes); see engine/precision.py


SCHEMAS = {
    "dataset": {"synthetic": SyntheticDataset, "separated": SeparatedDataset, "image": ImageDataset},
    "partition": {"partition": Partition, "mix": MixPartition, "dirichlet": DirichletLabelPartition,
                  "cluster_dirichlet": ClusteredDirichletLabelPartition, "nclass": NClassLabelPartition,
                  "cluster_nclass": ClusteredNClassLabelPartition, "skew": SkewPartition,
                  "label_skew1": LabelSkew1Partition, "label_skew2": LabelSkew2Partition,
                  "label_skew3": LabelSkew3Partition, "label_skew4": LabelSkew4Partition,
                  "feature_skew": FeatureSkewPartition, "concept_shift": ConceptShiftPartition},
    "model": {"model": Model, "mlp": MLPModel},
    "algorithm": {"fedsoft": FedSoftAlgorithm, "ifca": IFCAAlgorithm, "fedavg": FedAvgAlgorithm,
                  "fedprox": FedProxAlgorithm, "fedem": FedEMAlgorithm, "local": LocalAlgorithm, "fesem": FeSEMAlgorithm,
                  "cam": CAMAlgorithm, "clove": CLoVEAlgorithm, "cfl": CFLAlgorithm, "ensemble": EnsembleAlgorithm},
    "hardware": {"hardware": HardwareConfig},
}


def register_schemas() -> None:
    cs = ConfigStore.instance()
    cs.store(name="schema_config", node=Config)
    for group, kinds in SCHEMAS.items():
        for kind, node in kinds.items():
            cs.store(group=f"schemas/{group}", name=kind, node=node)
