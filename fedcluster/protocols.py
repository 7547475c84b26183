"""What a data set, partition or model class takes and offers to run in fedcluster: the contract a plugin's class
meets (docs/plugins.md), the built-ins' too. A plugin's classes are checked when
it loads (plugins.py) and what a class sets when built is checked right after (assemble.py), so a missing piece is
one line naming it and what it is for, not Hydra's multi-line TypeError or a traceback in the middle of a run.
An algorithm's contract is its base class, `fedcluster.algorithms.Algorithm`."""
import inspect
from dataclasses import dataclass
from typing import Callable, Dict, List

import torch

from .errors import ConfigError


def takes(*names: str) -> Callable[[type], bool]:
    """The class's constructor takes each of `names` (as a parameter, or through **kwargs)."""
    def check(cls) -> bool:
        try:
            params = inspect.signature(cls).parameters.values()
        except (TypeError, ValueError):
            return False
        given = {p.name for p in params}
        return any(p.kind is p.VAR_KEYWORD for p in params) or set(names) <= given
    return check


def offers(*methods: str) -> Callable[[type], bool]:
    """The class has at least one of `methods`."""
    return lambda cls: any(callable(getattr(cls, m, None)) for m in methods)


@dataclass(frozen=True)
class Need:
    what: str                         # named in the refusal: "lacks <what>"
    why: str                          # what fedcluster does with it
    met: Callable[[type], bool]


PROTOCOLS: Dict[str, List[Need]] = {
    "dataset": [
        Need("a `seed` parameter", "every data set is built with the run's seed, for its own draws", takes("seed")),
        Need("pool(split, distribution) or sample(split, distribution, n, g)",
             "partitions read samples through them: label partitions a distribution's whole labelled pool, "
             "mixture partitions n draws", offers("pool", "sample")),
    ],
    "partition": [
        Need("allocate(view, g)", "it says which samples each client holds (partitions/allocation.py)",
             offers("allocate")),
        Need("size_bound()", "the memory check reads the clients' sizes from it before allocating (None: after)",
             offers("size_bound")),
    ],
    "model": [
        Need("torch.nn.Module as a base", "clients train copies of its parameters", lambda c: issubclass(c, torch.nn.Module)),
        Need("`in_shape` and `num_outputs` parameters", "a model is built for the data set's inputs and outputs",
             takes("in_shape", "num_outputs")),
    ],
}

# What a built object sets (in its class or constructor), read by the round loop and the report.
ATTRIBUTES: Dict[str, Dict[str, str]] = {
    "dataset": {"task": "'classification' or 'regression'", "num_classes": "0 for regression",
                "in_shape": "one sample's shape", "distribution_names": "a name per distribution"},
    "partition": {"val_fraction": "the share of each client's training data held out for validation (0: none)",
                  "num_true_clusters": "K of the clients' true clusters, or None"},
}


def check_class(group: str, cls, where: str) -> None:
    """Refuse, in one line, a `group` class that lacks what PROTOCOLS says it must take or offer."""
    for need in PROTOCOLS.get(group, []):
        if not isinstance(cls, type) or not need.met(cls):
            name = getattr(cls, "__name__", repr(cls))
            raise ConfigError(f"{where}: {group} class {name} lacks {need.what}: {need.why} (docs/plugins.md)")


def check_built(group: str, obj, option: str) -> None:
    """Refuse, in one line, a built `group` object that does not set what ATTRIBUTES lists."""
    missing = [a for a in ATTRIBUTES.get(group, {}) if not hasattr(obj, a)]
    if missing:
        a = missing[0]
        raise ConfigError(f"{group}={option}: its class {type(obj).__name__} sets no `{a}` ({ATTRIBUTES[group][a]}); "
                          "set it in the class or its constructor (docs/plugins.md)")
