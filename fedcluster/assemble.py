"""Assembling a run from its composed config: hardware, data, model, algorithm, local solver,
and the choice of training engine. Every check that needs built objects (the model against the
data's inputs, the memory the data will take) happens here, before the run writes anything."""
import sys

import hydra
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from .algorithms.base import Federation
from .data.budget import check_fits
from .data.federated import as_reconstruction, carve_validation
from .engine.local import LocalTrainer
from .engine.optim import build_optimizer
from .errors import ConfigError
from .rundir import flatten

ENGINES = ("auto", "batched", "looped", "sequential")


def choose_engine(requested: str, model: torch.nn.Module, device: torch.device) -> str:
    """`auto`: batched (vmap) everywhere except convolutional models on CPU, where vmap over
    convolutions measured slower than a per-client loop (scripts/benchmark.py)."""
    if requested not in ENGINES:
        raise ConfigError(f"engine={requested!r} is unknown; allowed: {list(ENGINES)}")
    stateful = [type(m).__name__ for m in model.modules()
                if isinstance(m, (torch.nn.modules.batchnorm._BatchNorm, torch.nn.Dropout))]
    if stateful:   # batch statistics would include padded samples; vmap has no per-row dropout masks here
        if requested == "batched":
            print(f"fedcluster: the model has {sorted(set(stateful))}; training with the sequential engine "
                  "(per-client batch-norm statistics and dropout masks)", file=sys.stderr)
        return "sequential"
    if requested != "auto":
        return requested
    has_conv = any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules())
    return "looped" if (device.type == "cpu" and has_conv) else "batched"


def _drop_names(plain):
    """Remove the descriptive `name` key of every node that will be instantiated (nested
    ones too, e.g. CAM's base), except the image and text sources, whose reader is chosen by name."""
    if isinstance(plain, dict):
        if "_target_" in plain and not str(plain["_target_"]).endswith(("ImageSource", "TextSource")):
            plain.pop("name", None)
        for v in plain.values():
            _drop_names(v)
    return plain


def make(node: DictConfig, **kwargs):
    """hydra.utils.instantiate without the groups' descriptive `name` keys."""
    return hydra.utils.instantiate(_drop_names(OmegaConf.to_container(node, resolve=True)), **kwargs)


def build_data(source, partition, seed: int, fits=None):
    """The federated data: every partitioner builds it the same way (`federate`); an
    unsupervised source's targets become its inputs."""
    data = carve_validation(partition.federate(source, seed, fits), partition.val_fraction, seed)
    return as_reconstruction(data) if source.task == "reconstruction" else data


def check_model_fits(model: torch.nn.Module, data, cfg: DictConfig) -> None:
    """One forward pass on one training sample: a model that cannot read the data's inputs is
    a one-line error naming both, not a traceback from inside a convolution."""
    x = data.train.x[:1, :1].reshape(1, *data.in_shape)
    try:
        with torch.no_grad():
            model(x)
    except (RuntimeError, ValueError, IndexError) as e:
        reason = str(e).strip().splitlines()[0][:200]
        raise ConfigError(f"model={cfg.model.name} does not fit dataset={cfg.dataset.name}'s inputs "
                          f"(shape {tuple(data.in_shape)}): {reason}") from None


def build(cfg: DictConfig):
    """Instantiate hardware, data, model and algorithm from the composed config."""
    hw = make(cfg.hardware)
    source = make(cfg.dataset, seed=cfg.seed)
    partition = make(cfg.partition)
    in_shape = tuple(source.in_shape)
    num_outputs = 1 if source.task == "regression" else source.num_classes

    def build_model():
        try:
            return make(cfg.model, in_shape=in_shape, num_outputs=num_outputs)
        except Exception as e:   # noqa: BLE001 -- a model that cannot be built for these inputs
            cause = e.__cause__ or e
            if isinstance(cause, ConfigError):
                raise cause
            reason = str(cause).strip().splitlines()[0][:200] if str(cause).strip() else type(cause).__name__
            raise ConfigError(f"model={cfg.model.name} does not fit dataset={cfg.dataset.name}'s inputs "
                              f"(shape {in_shape}): {reason}") from None

    model = build_model()
    num_params = sum(p.numel() for p in model.parameters())

    def fits(num_clients, train_width, test_width):
        check_fits(num_clients, train_width, test_width, int(np.prod(in_shape)), num_params,
                   hw.torch_device, f"partition.num_clients={num_clients}")

    data = build_data(source, partition, cfg.seed, fits).to(hw.torch_device, hw.torch_dtype)
    model = model.to(hw.torch_device, hw.torch_dtype)
    check_model_fits(model, data, cfg)
    with open_dict(cfg):
        if cfg.get("num_clusters") is None:   # default K: the data's own number of clusters
            cfg.num_clusters = data.num_true_clusters or data.num_distributions
    # algorithms take K by interpolation (config.SHARED) unless a node sets its own
    nested = flatten(OmegaConf.to_container(cfg.algorithm, resolve=True))   # e.g. CAM's base.num_clusters
    for K in [cfg.num_clusters, *(v for k, v in nested.items() if k.rsplit(".", 1)[-1] == "num_clusters")]:
        if K is not None and not 1 <= K <= data.num_clients:
            raise ConfigError(f"num_clusters={K} must be between 1 and the number of clients ({data.num_clients})")
    algorithm = make(cfg.algorithm)
    fed = Federation(data, model, lambda: build_model(), cfg.seed, hw.torch_device, hw.torch_dtype)
    t = cfg.train
    optimizer = build_optimizer(t.optimizer, lr=t.lr, momentum=t.momentum, weight_decay=t.weight_decay)
    trainer = LocalTrainer(model, data.task, optimizer, t.epochs, t.batch_size, t.steps,
                           augment=getattr(source, "augment", None))
    return hw, fed, algorithm, trainer


