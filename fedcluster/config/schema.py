"""A structured-config schema derived from a class's constructor signature (config.py registers
one per group option): `_target_`, `name`, and one typed field per parameter, following `**kw`
into the base classes."""
import dataclasses
import inspect
import sys
import typing
from dataclasses import field
from typing import Any, Dict, List, Optional

from omegaconf import MISSING

from ..rules import unwrap

RUNTIME_ARGS = {"seed", "in_shape", "num_outputs"}   # given by assemble.build, not by the config
SHARED = {"num_clusters": (Optional[int], "${num_clusters}")}


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
    """The OmegaConf type of a parameter: its annotation where OmegaConf can check it, else Any
    (the allowed values of an `Annotated` one are checked by validate.py, rules.py)."""
    annotation = unwrap(annotation)[0]
    if annotation in (int, float, bool, str):
        return annotation if default is not None else Optional[annotation]
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Union and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1 and inner[0] in (int, float, bool, str):
            return Optional[inner[0]]
        if len(inner) == 1 and _element(inner[0]) is not None:
            return Optional[List[_element(inner[0])]]
        return Any
    if _element(annotation) is not None:   # Sequence[int] and the like: a list, so `model.hidden=10` is refused
        return List[_element(annotation)]
    return Any


def _element(annotation):
    """int for Sequence[int], List[int] or Tuple[int, ...] (any plain element type), else None."""
    import collections.abc
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (list, collections.abc.Sequence) and len(args) == 1 and args[0] in (int, float, bool, str):
        return args[0]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in (int, float, bool, str):
        return args[0]
    return None


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
