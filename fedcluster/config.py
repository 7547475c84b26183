"""Config schemas, derived from the classes they build.

A setting is declared once: in the signature of the class a config node instantiates. For
every class below, `schema_of` turns its constructor's parameters (following `**kw` into the
base classes) into a structured config registered in Hydra's ConfigStore as
`schemas/<group>/<ClassName>`, with `_target_` set to the class. Each option file in
conf/<group>/ starts from its class's schema (`- /schemas/algorithm/IFCA@_here_`), so a
misspelt key or a value of the wrong type is rejected at composition time with an error that
names the key, and every constructor parameter can be overridden from the command line.

Shared settings come by interpolation: a parameter named `num_clusters` defaults to the run's
`${num_clusters}` (null: the data's own number of clusters, filled in by assemble.build)."""
import dataclasses
import inspect
import sys
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from . import algorithms, data, hardware, models, partitions

OPTIONS = {
    "dataset": [data.SyntheticRegression, data.SeparatedRegression, data.ImageSource],
    "partition": [partitions.TwoGroupMix, partitions.LinearMix, partitions.RandomMix, partitions.Clustered,
                  partitions.DirichletLabels, partitions.ClusteredDirichletLabels, partitions.NClassLabels,
                  partitions.ClusteredNClassLabels, partitions.LabelSkew1, partitions.LabelSkew2,
                  partitions.LabelSkew3, partitions.LabelSkew4, partitions.FeatureSkew, partitions.ConceptShift],
    "model": [models.LinearRegression, models.MLP, models.LeNetCNN, models.LettersCNN, models.CifarCNN,
              models.BatchNormCNN, models.FCAutoencoder, models.ConvAutoencoder],
    "algorithm": None,   # every concrete Algorithm subclass imported (algorithm_classes)
    "hardware": [hardware.Hardware],
}
RUNTIME_ARGS = {"seed", "in_shape", "num_outputs"}   # given by assemble.build, not by the config
SHARED = {"num_clusters": (Optional[int], "${num_clusters}")}


@dataclass
class TrainConfig:
    """The clients' local solver (values: conf/config.yaml `train`)."""
    optimizer: str = MISSING
    lr: float = MISSING
    epochs: int = MISSING
    batch_size: int = MISSING
    momentum: float = MISSING
    weight_decay: float = MISSING
    steps: Optional[int] = MISSING


@dataclass
class Config:
    """Types of the top-level keys; their values and meaning: conf/config.yaml."""
    dataset: Any = MISSING
    partition: Any = MISSING
    model: Any = MISSING
    algorithm: Any = MISSING
    hardware: Any = MISSING
    train: TrainConfig = field(default_factory=TrainConfig)
    seed: int = MISSING
    rounds: int = MISSING
    engine: str = MISSING
    eval_every: int = MISSING
    eval_local_train: bool = MISSING
    num_clusters: Optional[int] = MISSING
    warmup_rounds: int = MISSING
    checkpoint_every: int = MISSING
    progress: bool = MISSING
    plots: bool = MISSING
    overwrite: bool = MISSING
    divergence_factor: Optional[float] = MISSING
    table: Optional[str] = None


def algorithm_classes() -> list:
    """Every Algorithm subclass imported so far (fedcluster.algorithms imports all of its modules),
    except abstract bases (`abstract = True` in the class body): a new algorithm needs no
    registration line."""
    found, todo = [], list(algorithms.Algorithm.__subclasses__())
    while todo:
        cls = todo.pop(0)
        todo += cls.__subclasses__()
        if not cls.__dict__.get("abstract", False) and cls not in found:
            found.append(cls)
    return sorted(found, key=lambda c: (c.__module__, c.__name__))


def target_of(cls) -> str:
    """`package.Class` where the package exports the class (fedcluster.algorithms.IFCA), else the
    class's own module path."""
    package = cls.__module__.rsplit(".", 1)[0]
    module = sys.modules.get(package)
    return f"{package}.{cls.__name__}" if getattr(module, cls.__name__, None) is cls else f"{cls.__module__}.{cls.__name__}"


def parameters(cls) -> List[inspect.Parameter]:
    """The constructor parameters of `cls`, following `**kw` into its bases (a subclass's
    default wins)."""
    found: Dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        more = False
        for p in inspect.signature(init).parameters.values():
            if p.name == "self" or p.kind is p.VAR_POSITIONAL:
                continue
            if p.kind is p.VAR_KEYWORD:
                more = True
            elif p.name not in found:
                found[p.name] = p
        if not more:
            break
    return [p for p in found.values() if p.name not in RUNTIME_ARGS]


def plain(value):
    """Tuples (immutable defaults in signatures) as lists, as a config holds them."""
    return [plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def config_type(annotation, default):
    """The OmegaConf type of a parameter: its annotation where OmegaConf can check it, else Any."""
    if annotation in (int, float, bool, str):
        return annotation if default is not None else Optional[annotation]
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Union and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1 and inner[0] in (int, float, bool, str):
            return Optional[inner[0]]
    return Any


def schema_of(cls, named: bool = True):
    """A structured-config dataclass with `_target_`, `name` (a group option's label in
    summaries and reports, set by its yaml; not passed to the class) and one field per parameter."""
    fields = [("_target_", str, field(default=target_of(cls)))]
    params = parameters(cls)
    if named and "name" not in {p.name for p in params}:
        fields.append(("name", str, field(default=MISSING)))
    for p in params:
        if p.name in SHARED:
            kind, default = SHARED[p.name]
        else:
            default = MISSING if p.default is inspect.Parameter.empty else plain(p.default)
            kind = config_type(p.annotation, default)
        if isinstance(default, (list, dict)):
            fields.append((p.name, kind, field(default_factory=lambda d=default: plain(d))))
        else:
            fields.append((p.name, kind, field(default=default)))
    return dataclasses.make_dataclass(f"{cls.__name__}Config", fields)


def register_schemas() -> None:
    cs = ConfigStore.instance()
    cs.store(name="schema_config", node=Config)
    for group, classes in OPTIONS.items():
        for cls in classes or algorithm_classes():
            cs.store(group=f"schemas/{group}", name=cls.__name__, node=schema_of(cls, named=group != "hardware"))
