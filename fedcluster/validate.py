"""Up-front checks of a composed config, before a run writes anything.

Every number anywhere in the config must be finite; the keys below must lie in their range.
Rules are keyed by the key's last name, so they hold in every group and in nested nodes
(e.g. CAM's `algorithm.base.*`). Types are already enforced by the schemas (config.py)."""
import math
from typing import Callable, Dict, Tuple

from omegaconf import DictConfig, OmegaConf

from .errors import ConfigError

Rule = Tuple[Callable[[float], bool], str]


def _at_least(lo):
    return (lambda v: v >= lo), f">= {lo}"


def _positive():
    return (lambda v: v > 0), "> 0"


def _in(lo, hi, closed_hi=True):
    if closed_hi:
        return (lambda v: lo <= v <= hi), f"in [{lo}, {hi}]"
    return (lambda v: lo <= v < hi), f"in [{lo}, {hi})"


def _open_closed(lo, hi):
    return (lambda v: lo < v <= hi), f"in ({lo}, {hi}]"


RULES: Dict[str, Rule] = {
    # run
    "rounds": _at_least(1), "seed": _at_least(0), "eval_every": _at_least(1), "checkpoint_every": _at_least(0),
    "warmup_rounds": _at_least(0), "num_clusters": _at_least(1), "divergence_factor": _positive(),
    "split_after_round": _at_least(0), "local_rounds": _at_least(1),
    # train
    "lr": _positive(), "epochs": _at_least(1), "batch_size": _at_least(1), "steps": _at_least(1),
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
    # algorithm
    "lam": _at_least(0), "tau": _at_least(1), "selection_size": _at_least(1), "smoother": _at_least(0),
    "client_fraction": _open_closed(0, 1), "mu": _at_least(0), "eps1": _at_least(0), "eps2": _at_least(0),
    "kmeans_iters": _at_least(1), "max_clusters": _at_least(0),
}
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


def validate(cfg: DictConfig) -> None:
    """Raise ConfigError naming the first bad key, its value and what is allowed."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    for key, value in sorted(_walk(plain), key=lambda kv: kv[0].count(".")):   # what the user typed first (num_clusters before algorithm.num_clusters)
        if key.startswith(SKIP_PREFIXES) or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}={value} is not a finite number")
        rule = RULES.get(key.rsplit(".", 1)[-1].split("[")[0])
        if rule is not None and not rule[0](value):
            raise ConfigError(f"{key}={value} is out of range; allowed: {rule[1]}")
    objective = plain.get("objective")
    if objective is not None and not str(objective).startswith("local_val_"):
        raise ConfigError(f"objective={objective} is not a validation metric; allowed: local_val_<metric> (e.g. "
                          "local_val_accuracy, local_val_mse): hyperparameter search never reads test data")
    part = plain.get("partition", {})
    if part.get("min_samples") is not None and part.get("max_samples") is not None \
            and part["min_samples"] > part["max_samples"]:
        raise ConfigError(f"partition.min_samples={part['min_samples']} exceeds partition.max_samples="
                          f"{part['max_samples']}; allowed: min_samples <= max_samples")
