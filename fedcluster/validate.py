"""Up-front checks of a composed config, before a run writes anything.

Every number anywhere in the config must be finite, and every integer must fit in 64 bits
(|v| <= 2**63 - 1: torch and numpy hold them as int64); the keys below must lie in their range.
Rules are keyed by the key's last name, so they hold in every group and in nested nodes
(e.g. CAM's `algorithm.base.*`). Types are already enforced by the schemas (config.py).

Upper bounds: a count of rounds or local steps above MAX_COUNT (10**6: weeks of training for
the smallest model here) and a batch above MAX_BATCH (10**5 samples: more than any client of
the data sets here holds) are typos, refused before any time is spent."""
import math
from typing import Callable, Dict, Optional, Tuple

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError

from .engine.optim import OPTIMIZERS
from .errors import ConfigError

Rule = Tuple[Callable[[float], bool], str]
INT64_MAX = 2 ** 63 - 1
MAX_COUNT = 10 ** 6
MAX_BATCH = 10 ** 5
# The metrics each task's evaluation produces (metrics.model_metrics), for `objective`.
TASK_METRICS = {"regression": ("mse",), "reconstruction": ("mse",), "classification": ("accuracy", "macro_f1")}


def _at_least(lo):
    return (lambda v: v >= lo), f">= {lo}"


def _positive():
    return (lambda v: v > 0), "> 0"


def _in(lo, hi, closed_hi=True):
    if closed_hi:
        return (lambda v: lo <= v <= hi), f"in [{lo}, {hi}]"
    return (lambda v: lo <= v < hi), f"in [{lo}, {hi})"


def _open(lo, hi):
    return (lambda v: lo < v < hi), f"in ({lo}, {hi})"


def _open_closed(lo, hi):
    return (lambda v: lo < v <= hi), f"in ({lo}, {hi}]"


RULES: Dict[str, Rule] = {
    # run
    "rounds": _in(1, MAX_COUNT), "seed": _at_least(0), "eval_every": _at_least(1), "checkpoint_every": _at_least(0),
    "warmup_rounds": _in(0, MAX_COUNT), "num_clusters": _at_least(1), "divergence_factor": _positive(),
    "split_after_round": _at_least(0), "local_rounds": _in(1, MAX_COUNT),
    # train
    "lr": _positive(), "epochs": _in(1, MAX_COUNT), "batch_size": _in(1, MAX_BATCH), "steps": _in(1, MAX_COUNT),
    "momentum": _in(0, 1, closed_hi=False), "weight_decay": _at_least(0),
    # partition
    "num_clients": _at_least(1), "min_samples": _at_least(1), "max_samples": _at_least(1),
    "local_test_fraction": _in(0, 1, closed_hi=False), "val_fraction": _in(0, 1, closed_hi=False), "alpha": _positive(), "alpha_cluster": _positive(),
    "alpha_client": _positive(), "classes_per_client": _at_least(1), "classes_per_cluster": _at_least(1),
    "shared_classes": _at_least(0), "samples_per_client": _at_least(1), "test_samples_per_client": _at_least(1),
    "default_clusters": _at_least(1), "uniform_share": _in(0, 1), "minor": _in(0, 1),
    "reserve_fraction": _in(0, 1), "min_cluster_fraction": _in(0, 1), "min_cluster_test_fraction": _in(0, 1),
    "class_samples_per_cluster": _at_least(1), "test_class_samples_per_cluster": _at_least(1),
    # dataset
    "dim": _at_least(1), "num_distributions": _at_least(1), "theta_var": _positive(), "noise_std": _at_least(0),
    "test_size": _at_least(1), "train_size": _at_least(1), "delta": _positive(),
    # algorithm (smoother: FedSoft's floor on the importance weights u, in (0, 1) as fedsoft.py requires)
    "lam": _at_least(0), "tau": _at_least(1), "selection_size": _at_least(1), "smoother": _open(0, 1),
    "client_fraction": _open_closed(0, 1), "mu": _at_least(0), "eps1": _at_least(0), "eps2": _at_least(0),
    "kmeans_iters": _at_least(1), "max_clusters": _at_least(0), "server_lr": _positive(), "eval_batch": _at_least(1),
    # model (layer sizes, also each entry of a list such as model.hidden)
    "hidden": _at_least(1), "channels": _at_least(1), "kernel_sizes": _at_least(1), "latent": _at_least(1),
    "embed_dim": _at_least(1), "vocab_size": _at_least(1), "max_len": _at_least(1), "dropout": _in(0, 1, closed_hi=False),
}
# Keys whose value is one of a few names, by the key's last name.
CHOICES: Dict[str, Tuple[str, ...]] = {"optimizer": tuple(sorted(OPTIMIZERS)), "server_optimizer": tuple(sorted(OPTIMIZERS))}
# Keys whose rule would misfire: a string or structured value with a ruled name (none today).
SKIP_PREFIXES = ("hydra.",)


def _walk(node, prefix=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{prefix}[{i}]")
    else:
        yield prefix, node


def _choice(cfg: DictConfig, group: str) -> str:
    """`group=name` of the config's option for a group (e.g. model=textcnn), read without resolving."""
    try:
        node = cfg.get(group)
        return f"{group}={node.get('name', '?')}" if isinstance(node, DictConfig) else f"{group}=?"
    except Exception:   # noqa: BLE001 -- only used to word an error
        return f"{group}=?"


def _resolved(cfg: DictConfig) -> dict:
    """The config as plain data; an interpolation that cannot be resolved (e.g. model=textcnn's
    `${dataset.vocab_size}` on an image data set) is a ConfigError naming both ends."""
    try:   # without the hydra node: its own interpolations (sweep.subdir) would be named instead of the user's key
        keys = [k for k in cfg.keys() if k != "hydra"]
        plain = OmegaConf.to_container(OmegaConf.masked_copy(cfg, keys), resolve=True)
    except InterpolationResolutionError as e:
        key = getattr(e, "full_key", None) or "a key"
        reason = str(e).strip().splitlines()[0][:160]
        raise ConfigError(f"{key} cannot be resolved with {_choice(cfg, 'model')}, {_choice(cfg, 'dataset')}: "
                          f"{reason}; choose options that fit together or set {key} explicitly") from None
    plain.pop("hydra", None)
    return plain


def task_of(dataset: dict) -> Optional[str]:
    """The task a dataset node's source produces (regression, reconstruction, classification),
    from its class and `unsupervised` flag, without building it; None for an unknown class."""
    target = str(dataset.get("_target_", ""))
    if target.endswith(("SyntheticRegression", "SeparatedRegression")):
        return "regression"
    if target.endswith(("ImageSource", "TextSource")):
        return "reconstruction" if dataset.get("unsupervised") else "classification"
    return None


def validate(cfg: DictConfig) -> None:
    """Raise ConfigError naming the first bad key, its value and what is allowed."""
    plain = _resolved(cfg)
    for key, value in sorted(_walk(plain), key=lambda kv: kv[0].count(".")):   # what the user typed first (num_clusters before algorithm.num_clusters)
        if key.startswith(SKIP_PREFIXES):
            continue
        choices = CHOICES.get(key.rsplit(".", 1)[-1])
        if choices is not None and value not in choices:
            raise ConfigError(f"{key}={value!r} is unknown; allowed: {list(choices)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}={value} is not a finite number")
        if isinstance(value, int) and abs(value) > INT64_MAX:
            raise ConfigError(f"{key}={value} does not fit in 64 bits; allowed: integers of magnitude <= 2**63-1 "
                              f"({INT64_MAX})")
        rule = RULES.get(key.rsplit(".", 1)[-1].split("[")[0])
        if rule is not None and not rule[0](value):
            raise ConfigError(f"{key}={value} is out of range; allowed: {rule[1]}")
    objective = plain.get("objective")
    if objective is not None and not str(objective).startswith("local_val_"):
        raise ConfigError(f"objective={objective} is not a validation metric; allowed: local_val_<metric> (e.g. "
                          "local_val_accuracy, local_val_mse): hyperparameter search never reads test data")
    task = task_of(plain.get("dataset") or {})
    if objective is not None and task is not None and str(objective)[len("local_val_"):] not in TASK_METRICS[task]:
        allowed = [f"local_val_{m}" for m in TASK_METRICS[task]]
        raise ConfigError(f"objective={objective} is not a metric of this run: dataset={plain['dataset'].get('name')} "
                          f"is a {task} task, whose validation metrics are {allowed}")
    part = plain.get("partition", {})
    if part.get("min_samples") is not None and part.get("max_samples") is not None \
            and part["min_samples"] > part["max_samples"]:
        raise ConfigError(f"partition.min_samples={part['min_samples']} exceeds partition.max_samples="
                          f"{part['max_samples']}; allowed: min_samples <= max_samples")
