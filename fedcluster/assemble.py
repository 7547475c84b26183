"""Assembling a run from its composed config: hardware, data, model, algorithm, local solver,
and the choice of training engine. Every check that needs built objects (the model against the
data's inputs, the memory the data will take) happens here, before the run writes anything."""
import inspect
import sys
from dataclasses import dataclass
from typing import Any, Optional

import hydra
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from . import signals
from .algorithms.base import RunView
from .data.budget import RunSize, check_fits
from .data.federated import as_reconstruction, carve_validation, federate
from .data.holdout import hold_out_clients
from .local_training.local import LocalTrainer
from .local_training.losses import per_sample_loss
from .local_training.optim import build_optimizer
from .local_training.precision import autocast, full_precision
from .errors import ConfigError
from .metrics import model_metrics
from .protocols import check_built
from .run_records.identity import flatten
from .run_keys import ENGINES   # declared with the `engine` key


# `auto` trains convolutional models on a CPU grouped (one call per layer for all of a step's clients) at solver
# batches up to this size, looped above it. Measured side by side, 1 thread, 10 clients' copies, one training step
# (forward, backward), 2-core AMD EPYC, quiet, 2026-12-07 (docs/performance.md, "One call per layer"): grouped /
# looped time 0.70 (LeNet) and 0.65 (GenConvNet) at batch 10, 0.87-0.91 at 16, 0.94 at 20, 1.0 at 32 (LeNet; the
# FedAvg CNN 1.01), 1.33 at 50 and 1.75 at 100 (GenConvNet). Batch 16 is left looped: its gain is within what
# clients of skewed sizes take back (steps where few clients train), unmeasured on a whole workload.
GROUPED_MAX_BATCH = 10


def choose_engine(requested: str, model: torch.nn.Module, device: torch.device, batch_size: Optional[int] = None) -> str:
    """`auto`: batched (vmap) everywhere except convolutional models on CPU, where vmap over convolutions measured
    slower than a per-client loop: there grouped at batches up to GROUPED_MAX_BATCH (where the model can run many
    copies in one call per layer, `rows_unsupported`), looped above (benchmarks/benchmark.py)."""
    if requested not in ENGINES:
        raise ConfigError(f"engine={requested!r} is unknown; allowed: {list(ENGINES)}")
    stateful = [type(m).__name__ for m in model.modules()
                if isinstance(m, (torch.nn.modules.batchnorm._BatchNorm, torch.nn.Dropout))]
    if stateful:   # batch statistics would include padded samples; vmap has no per-row dropout masks here
        if requested in ("batched", "grouped"):
            print(f"fedcluster: the model has {sorted(set(stateful))}; training with the sequential engine "
                  "(per-client batch-norm statistics and dropout masks)", file=sys.stderr)
        return "sequential"
    why = model.rows_unsupported() if hasattr(model, "rows_unsupported") else f"{type(model).__name__} has none"
    if requested == "grouped" and why is not None:
        raise ConfigError(f"engine=grouped needs a model that runs many copies in one call per layer; "
                          f"{type(model).__name__}: {why}; allowed: engine=auto, batched, looped, sequential")
    if requested != "auto":
        return requested
    has_conv = any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules())
    if device.type != "cpu" or not has_conv:
        return "batched"
    small = batch_size is not None and batch_size <= GROUPED_MAX_BATCH
    return "grouped" if small and why is None else "looped"


def _takes_name(target: str) -> bool:
    """Whether the class or function `target` declares a `name` parameter (the image and text sources
    choose their reader by it; for every other component `name` only labels the config)."""
    try:
        params = inspect.signature(hydra.utils.get_object(target)).parameters
    except (ImportError, AttributeError, TypeError, ValueError):
        return False   # instantiate names the target's own problem
    return "name" in params and params["name"].kind is not inspect.Parameter.VAR_KEYWORD


def _drop_names(plain):
    """Remove the descriptive `name` key of every node that will be instantiated (nested
    ones too, e.g. CAM's base), except where the target takes a `name` (`_takes_name`)."""
    if isinstance(plain, dict):
        if "_target_" in plain and "name" in plain and not _takes_name(str(plain["_target_"])):
            plain.pop("name")
        for v in plain.values():
            _drop_names(v)
    return plain


def make(node: DictConfig, **kwargs):
    """hydra.utils.instantiate without the groups' descriptive `name` keys; a class's own one-line refusal
    (ConfigError) comes out as it is, not wrapped in Hydra's InstantiationException."""
    try:
        return hydra.utils.instantiate(_drop_names(OmegaConf.to_container(node, resolve=True)), **kwargs)
    except hydra.errors.InstantiationException as e:
        if isinstance(e.__cause__, ConfigError):
            raise e.__cause__ from None
        raise


def build_data(source, partition, seed: int, fits=None):
    """The federated data: every partition's allocation materialised the same way (`federate`);
    an unsupervised source's targets become its inputs."""
    data = carve_validation(federate(source, partition, seed, fits), partition.val_fraction, seed)
    return as_reconstruction(data) if source.task == "reconstruction" else data


def expected_output_shape(task: str, batch: int, in_shape, num_classes: int) -> tuple:
    """The output shape the task's loss and metrics read (local_training/losses.py, metrics.py)."""
    if task == "regression":
        return (batch,)
    if task == "reconstruction":
        return (batch, *in_shape)
    return (batch, num_classes)


def _reason(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:200] if text else type(e).__name__


def check_model_fits(model: torch.nn.Module, data, cfg: DictConfig, batch: int = 4) -> None:
    """A dry run of what training and evaluation do with the model, on a real batch of a few
    training samples with their targets, in the run's device, dtype and precision: one forward
    pass, the training loss of the data's task (local_training/losses.py) and the evaluation metrics
    (metrics.py). A model that cannot read the inputs, or whose outputs do not have the shape
    the task's loss needs (an autoencoder on labels, a classifier on reconstruction targets),
    is a one-line error naming both, not a traceback after the run started."""
    k = int(torch.argmax(data.train.n))            # the client with the most training samples
    n = max(1, min(batch, int(data.train.n[k])))
    x, y = data.train.x[k, :n], data.train.y[k, :n]
    was_training = model.training
    model.eval()   # leave batch-norm running statistics untouched
    try:
        with torch.no_grad():
            with autocast():
                out = model(x)
            out = full_precision(out)
            if not isinstance(out, torch.Tensor):
                raise ValueError(f"it returns {type(out).__name__}, not a tensor")
            expected = expected_output_shape(data.task, n, data.in_shape, data.num_classes)
            if tuple(out.shape) != expected:
                raise ValueError(f"it outputs shape {tuple(out.shape)} for a batch of {n}; the {data.task} "
                                 f"loss needs {expected}")
            loss = per_sample_loss(data.task, out, y)
            if tuple(loss.shape) != (n,):
                raise ValueError(f"the {data.task} loss has shape {tuple(loss.shape)}, not one value per sample")
            mask = torch.ones(1, n, dtype=torch.bool, device=x.device)
            model_metrics(data.task, out[None], y[None], mask, data.num_classes)
    except ConfigError:
        raise
    except Exception as e:   # noqa: BLE001 -- whatever the model raises, the user gets one line
        raise ConfigError(f"model={cfg.model.name} does not fit dataset={cfg.dataset.name}'s inputs "
                          f"(shape {tuple(data.in_shape)}, task {data.task}): {_reason(e)}") from None
    finally:
        model.train(was_training)


def check_model_features(model: torch.nn.Module, data, cfg: DictConfig, algorithm) -> None:
    """For an algorithm that reads features: the model must return (outputs, features) for a
    real batch, not raise a TypeError in the first round."""
    if not getattr(algorithm, "reads_features", False):
        return
    k = int(torch.argmax(data.train.n))
    x = data.train.x[k, :max(1, min(4, int(data.train.n[k])))]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), autocast():
            out = model(x, with_features=True)
        if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)):
            raise ValueError("model(x, with_features=True) does not return (outputs, features)")
    except Exception as e:   # noqa: BLE001 -- whatever the model raises, the user gets one line
        raise ConfigError(f"algorithm={cfg.algorithm.name} reads the model's features but model={cfg.model.name} "
                          f"has none ({_reason(e)}); allowed: a model whose forward(x, with_features=True) returns "
                          "(outputs, features), e.g. mlp, lenet, letters_cnn, cifar_cnn, bn_cnn, textcnn "
                          "(docs/plugins.md)") from None
    finally:
        model.train(was_training)


def count_parameters(build_model) -> int:
    """The model's parameter count, from a copy built on the meta device (no memory, no draws
    from the global random stream): a model too large for memory is refused before torch
    allocates its weights."""
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        return sum(p.numel() for p in build_model().parameters())


PROBE_ON_CPU_BYTES = 2 ** 28   # a model whose parameters take at most this is sized on an uninitialised CPU copy


def activation_numel(build_model, in_shape, num_params: int = None) -> int:
    """Values in one sample's layer outputs (every leaf module's), from a forward pass of one zero sample
    through a copy of the model that draws no weights: an uninitialised CPU copy (`to_empty`) where its
    `num_params` take at most PROBE_ON_CPU_BYTES, else a copy on the meta device (shapes only, no memory; a
    convolution there loads torch._dynamo, about 1.2 s of start-up that a looped-engine run needs nowhere
    else). 0 where the model cannot run on such an input (the check then leaves activations out, and stays a
    lower bound)."""
    sizes = []
    with torch.random.fork_rng(devices=[]):
        try:
            with torch.device("meta"):
                model = build_model()
            device = "cpu" if num_params is not None and num_params * 4 <= PROBE_ON_CPU_BYTES else "meta"
            if device == "cpu":
                model = model.to_empty(device="cpu")
            for m in model.modules():   # a copy of our own, dropped after: its hooks need no removal
                if not list(m.children()):
                    m.register_forward_hook(lambda _m, _i, o: sizes.append(o.numel()) if torch.is_tensor(o) else None)
            for dtype in (torch.float32, torch.long):
                sizes.clear()
                try:
                    with torch.no_grad():
                        model(torch.zeros(1, *in_shape, dtype=dtype, device=device))
                    break
                except Exception:   # noqa: BLE001 -- e.g. an embedding wants integer inputs
                    sizes.clear()
        except Exception:   # noqa: BLE001
            sizes.clear()
    return int(sum(sizes))


def size_keys(cfg: DictConfig, source, partition, in_shape) -> dict:
    """`key=value` texts of the settings that drive the run's memory, for budget.check_fits."""
    ds = cfg.dataset
    named = getattr(source, "size_setting", None)   # the setting a source's sample size follows, where one does
    dim = f"dataset.{named}={ds[named]}" if named and named in ds else \
        f"dataset={ds.name} (samples of shape {tuple(in_shape)})"
    samples = None
    for key in ("samples_per_client", "max_samples"):
        if getattr(partition, key, None) is not None:
            samples = f"partition.{key}={getattr(partition, key)}"
            break
    return {"dim": dim, "samples": samples, "model": f"model={cfg.model.name} on inputs of shape {tuple(in_shape)}"}


def resolve_num_clusters(cfg: DictConfig, source, partition) -> int:
    """K: the run's `num_clusters`, or where it is null the data's own number of clusters: the
    partition's true clusters (cluster-wise label partitions, CLoVE's skews), else the source's number
    of distributions (mixtures; 1 for a client-wise label split). Written into the config, which the
    algorithms read by interpolation (config.SHARED)."""
    if cfg.get("num_clusters") is None:
        with open_dict(cfg):
            cfg.num_clusters = partition.num_true_clusters or len(source.distribution_names)
    return int(cfg.num_clusters)


@dataclass
class DataInputs:
    """The run's data source and partition, made once: `settle` reads from them what the config leaves to
    the data, `build` partitions the source with them."""
    source: Any
    partition: Any


def settle(cfg: DictConfig) -> DataInputs:
    """What the config leaves to the data, settled into `cfg` before the run is recorded, so config.yaml
    holds what ran: K (`num_clusters: null`, the data's own count; resolve_num_clusters). Makes the data
    source (it reads the data set) and the partition, which `build` then uses."""
    source = make(cfg.dataset, seed=cfg.seed)
    signals.check()   # each stage of the build is a safe point: a stop signal ends a preparation, not after it
    partition = make(cfg.partition)
    check_built("dataset", source, cfg.dataset.get("name", "?"))
    check_built("partition", partition, cfg.partition.get("name", "?"))
    resolve_num_clusters(cfg, source, partition)
    return DataInputs(source, partition)


def build(cfg: DictConfig, inputs: Optional[DataInputs] = None):
    """Instantiate hardware, data, model and algorithm from the composed config (`inputs`: its settled data
    source and partition; made here when not given). The memory the run needs is checked before any data
    is drawn or the model allocated."""
    hw = make(cfg.hardware)
    inputs = inputs or settle(cfg)
    source, partition = inputs.source, inputs.partition
    in_shape = tuple(source.in_shape)
    num_outputs = 1 if source.task == "regression" else source.num_classes

    def build_model():
        try:
            return make(cfg.model, in_shape=in_shape, num_outputs=num_outputs)
        except Exception as e:   # noqa: BLE001 -- a model that cannot be built for these inputs
            cause = e.__cause__ or e
            if isinstance(cause, ConfigError):
                raise cause
            raise ConfigError(f"model={cfg.model.name} does not fit dataset={cfg.dataset.name}'s inputs "
                              f"(shape {in_shape}): {_reason(cause)}") from None

    num_params = count_parameters(build_model)
    signals.check()
    keys = size_keys(cfg, source, partition, in_shape)
    source_bytes = source.held_bytes() if hasattr(source, "held_bytes") else {}   # what the source keeps in memory

    per_sample = activation_numel(build_model, in_shape, num_params)
    element_size = torch.empty(0, dtype=hw.torch_dtype).element_size()
    algorithm = make(cfg.algorithm)
    privacy = make(cfg.privacy) if "privacy" in cfg else None
    refusal = algorithm.client_dp_refusal() if getattr(privacy, "active", False) else None
    if refusal:
        raise ConfigError(f"privacy=client_dp is refused for algorithm={cfg.algorithm.name}: {refusal}")

    def fits(num_clients, train_width, test_width):
        batch = min(cfg.train.batch_size or train_width, train_width)
        size = RunSize(num_clients, train_width, test_width, int(np.prod(in_shape)), num_params,
                       rows=1 if hw.chunk == "auto" else min(hw.chunk, algorithm.training_rows(num_clients)),
                       row_activation_bytes=batch * per_sample * element_size, element_size=element_size,
                       value_bytes=getattr(source, "value_bytes", 4))
        check_fits(size, hw.torch_device, keys=keys, fixed=source_bytes)

    clients = hold_out_clients(build_data(source, partition, cfg.seed, fits), getattr(partition, "holdout_clients", 0.0),
                            cfg.seed)
    signals.check()
    data = clients.seen.to(hw.torch_device, hw.torch_dtype)   # the clients that train; the unseen: newcomers
    newcomers = None if clients.unseen is None else clients.unseen.to(hw.torch_device, hw.torch_dtype)
    model = build_model().to(hw.torch_device, hw.torch_dtype)
    check_model_fits(model, data, cfg)
    signals.check()
    # algorithms take K by interpolation (config.SHARED) unless a node sets its own
    nested = flatten(OmegaConf.to_container(cfg.algorithm, resolve=True))   # e.g. CAM's base.num_clusters
    for K in [cfg.num_clusters, *(v for k, v in nested.items() if k.rsplit(".", 1)[-1] == "num_clusters")]:
        if K is not None and not 1 <= K <= data.num_clients:
            raise ConfigError(f"num_clusters={K} must be between 1 and the number of clients ({data.num_clients})")
    check_model_features(model, data, cfg, algorithm)
    fed = RunView(data, model, lambda: build_model(), cfg.seed, hw.torch_device, hw.torch_dtype,
                     batch_size=cfg.train.batch_size, newcomers=newcomers,
                     newcomer_ids=tuple(clients.unseen_ids),
                     privacy=privacy if getattr(privacy, "active", False) else None)
    t = cfg.train
    optimizer = build_optimizer(t.optimizer, lr=t.lr, momentum=t.momentum, weight_decay=t.weight_decay)
    trainer = LocalTrainer(model, data.task, optimizer, t.epochs, t.batch_size, t.steps,
                           augment=getattr(source, "augment", None))
    return hw, fed, algorithm, trainer


