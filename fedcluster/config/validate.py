"""Up-front checks of a composed config, before a run writes anything.

Every number anywhere in the config must be finite, and every integer must fit in 64 bits
(|v| <= 2**63 - 1: torch and numpy hold them as int64). A group option's settings must be what
its class's signature allows (rules.py: `Annotated[int, AtLeast(1)]` and the like, read from
the class each config node builds, nested nodes such as CAM's `algorithm.base` included); the
run's own keys where run_keys.py declares them (`RUN_RULES`, by full key). Types are already enforced by the
schemas (store.py)."""
import math
from typing import Dict, Optional

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError

from ..errors import ConfigError
from ..algorithms.base import serves_newcomers
from .schema import parameters
from ..run_keys import rules as run_key_rules
from ..rules import check_joint, Rule, rules_of

INT64_MAX = 2 ** 63 - 1
# The metrics each task's evaluation produces (metrics.model_metrics), for `objective`.
TASK_METRICS = {"regression": ("mse",), "reconstruction": ("mse",), "classification": ("accuracy", "macro_f1")}

RUN_RULES: Dict[str, Rule] = run_key_rules()
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
    """The task a dataset node's source produces (regression, reconstruction, classification), as its
    class declares it (`task`, or `task_for(settings)` where a setting changes it), without building
    it; None for a class that declares none or cannot be found."""
    try:
        cls = get_class(str(dataset.get("_target_", "")))
    except Exception:   # noqa: BLE001 -- an unknown target is reported when the run builds it
        return None
    if hasattr(cls, "task_for"):
        return cls.task_for(dataset)
    task = getattr(cls, "task", None)
    return task if isinstance(task, str) else None


def node_rules(plain: dict, prefix: str = "") -> Dict[str, list]:
    """{"partition.alpha": [its rules], ...}: the rules of every setting of every node that builds
    a class (`_target_`), from the class's signature."""
    found = {}
    if isinstance(plain, dict):
        target = plain.get("_target_")
        if isinstance(target, str):
            try:
                cls = get_class(target)
            except Exception:   # noqa: BLE001 -- an unknown target is reported when the run builds it
                cls = None
            if cls is not None:
                found.update({f"{prefix}{k}": r for k, r in rules_of(parameters(cls)).items()})
        for k, v in plain.items():
            found.update(node_rules(v, f"{prefix}{k}."))
    return found


def validate(cfg: DictConfig) -> None:
    """Raise ConfigError naming the first bad key, its value and what is allowed."""
    plain = _resolved(cfg)
    rules = {**node_rules(plain), **{k: [r] for k, r in RUN_RULES.items()}}
    for key, value in sorted(_walk(plain), key=lambda kv: kv[0].count(".")):   # what the user typed first (num_clusters before algorithm.num_clusters)
        if key.startswith(SKIP_PREFIXES):
            continue
        if value == "???":   # OmegaConf's MISSING: a setting whose class declares no default (a plugin's too)
            raise ConfigError(f"{key} is required and has no default; allowed: set it on the command line, "
                              f"e.g. {key}=<value> (fedcluster show {key.split('.')[0]}=<option> lists its settings)")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}={value} is not a finite number")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT64_MAX:
            raise ConfigError(f"{key}={value} does not fit in 64 bits; allowed: integers of magnitude <= 2**63-1 "
                              f"({INT64_MAX})")
        for rule in rules.get(key.split("[")[0], ()):   # a list's entries: each holds the setting's rule
            problem = rule.problem(key, value)
            if problem is not None:
                raise ConfigError(problem)
    objective = plain.get("objective")
    if objective is not None and not str(objective).startswith("local_val_"):
        raise ConfigError(f"objective={objective} is not a validation metric; allowed: local_val_<metric> (e.g. "
                          "local_val_accuracy, local_val_mse): hyperparameter search never reads test data")
    task = task_of(plain.get("dataset") or {})
    if objective is not None and task is not None and str(objective)[len("local_val_"):] not in TASK_METRICS[task]:
        allowed = [f"local_val_{m}" for m in TASK_METRICS[task]]
        raise ConfigError(f"objective={objective} is not a metric of this run: dataset={plain['dataset'].get('name')} "
                          f"is a {task} task, whose validation metrics are {allowed}")
    alg = plain.get("algorithm") or {}
    holdout = (plain.get("partition") or {}).get("holdout_clients")
    if isinstance(holdout, (int, float)) and holdout > 0 and not _serves_newcomers(alg):
        raise ConfigError(f"partition.holdout_clients={holdout}: algorithm={alg.get('name')} has no rule that picks a "
                          f"model for a client it never trained; allowed: holdout_clients=0 for it, or one of "
                          f"{newcomer_methods()}")
    if alg.get("warmup") == "fedavg" and isinstance(alg.get("warmup_rounds"), int) \
            and isinstance(plain.get("rounds"), int) and alg["warmup_rounds"] >= plain["rounds"]:
        raise ConfigError(f"algorithm.warmup_rounds={alg['warmup_rounds']} covers all rounds={plain['rounds']}: "
                          f"algorithm={alg.get('name')} would never leave its FedAvg warm-up (a FedAvg run under its "
                          "name); allowed: algorithm.warmup_rounds < rounds (Fed-CAM: 30 of 100)")
    for group, node in plain.items():   # each node's rules over several settings, declared on its class
        cls = _class_of(node) if isinstance(node, dict) and "_target_" in node else None
        for klass in (cls.__mro__ if isinstance(cls, type) else ()):
            check_joint(group, klass.__dict__.get("joint_rules", ()), node)


def _class_of(node: dict):
    """The class a config node's `_target_` names, or None where it names none that loads."""
    try:
        return get_class(node["_target_"])
    except Exception:   # noqa: BLE001 -- a node without a loadable target is refused where it is built
        return None


def _serves_newcomers(node: dict) -> bool:
    """The node's class serves newcomers, and so does its base method's where it wraps one (CAM, the ensembles)."""
    base = node.get("base")
    return serves_newcomers(_class_of(node)) and (not isinstance(base, dict) or _serves_newcomers(base))


def newcomer_methods() -> list:
    """The algorithm options (conf/algorithm/ and the plugins') whose classes serve newcomers, for the refusal's
    allowed list: read from each option's schema lines (its class, and its base method's where it has one)."""
    from omegaconf import OmegaConf
    from .plugins import group_options, option_file
    from .store import algorithm_classes
    by_name = {c.__name__: c for c in algorithm_classes()}
    serving = []
    for option in group_options("algorithm"):
        defaults = OmegaConf.to_container(OmegaConf.load(option_file("algorithm", option))).get("defaults", [])
        classes = [by_name.get(d.split("/schemas/algorithm/", 1)[1].split("@", 1)[0]) for d in defaults
                   if isinstance(d, str) and "/schemas/algorithm/" in d]
        if classes and all(serves_newcomers(c) for c in classes):
            serving.append(option)
    return serving
