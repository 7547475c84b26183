"""What values a setting allows, declared next to its default in the signature of the class
that takes it:

    def __init__(self, alpha: Annotated[float, Positive] = 0.5, update: Annotated[str, OneOf("mean", "sgd")] = "mean")

One declaration serves three readers: the config check before a run (validate.py calls
`check_node` on every node of the composed config that builds a class), the class itself when
built directly (`check_args`), and `fedcluster show`, which prints each setting's type, default
and allowed values. A rule on a list setting holds for each of its entries (model.hidden)."""
import inspect
import math
import typing
from dataclasses import dataclass
from typing import Dict, List, Tuple

from .errors import ConfigError

MAX_COUNT = 10 ** 6   # rounds, epochs or steps above this are typos (weeks of training for the smallest model here)
MAX_BATCH = 10 ** 5   # more samples than any client of the data sets here holds


class Rule:
    text = ""

    def ok(self, value) -> bool:
        raise NotImplementedError

    def problem(self, key: str, value):
        """The one-line error for `key=value`, or None when the value is allowed."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or self.ok(value):
            return None
        return f"{key}={value} is out of range; allowed: {self.text}"


@dataclass(frozen=True)
class Between(Rule):
    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False

    def ok(self, value) -> bool:
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    @property
    def text(self) -> str:
        if self.hi == math.inf:
            return f"{'>' if self.lo_open else '>='} {self.lo}"
        return f"in {'(' if self.lo_open else '['}{self.lo}, {self.hi}{')' if self.hi_open else ']'}"


def AtLeast(lo) -> Between:
    return Between(lo)


Positive = Between(0, lo_open=True)
Fraction = Between(0, 1)                     # a share: [0, 1]
Probability = Between(0, 1, hi_open=True)    # [0, 1): momentum, dropout, a held-out share
Count = Between(1, MAX_COUNT)


@dataclass(frozen=True)
class OneOf(Rule):
    values: Tuple

    def __init__(self, *values):
        object.__setattr__(self, "values", tuple(values[0]) if len(values) == 1 and
                           isinstance(values[0], (tuple, list)) else tuple(values))

    def ok(self, value) -> bool:
        return value in self.values

    def problem(self, key, value):
        return None if value in self.values else f"{key}={value!r} is unknown; allowed: {list(self.values)}"

    @property
    def text(self) -> str:
        return "one of " + ", ".join(map(str, self.values))


def unwrap(annotation):
    """(the annotation without Annotated, its rules)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return annotation.__origin__, [m for m in annotation.__metadata__ if isinstance(m, Rule)]
    return annotation, []


def rules_of(params: List[inspect.Parameter]) -> Dict[str, List[Rule]]:
    return {p.name: unwrap(p.annotation)[1] for p in params if unwrap(p.annotation)[1]}


def problems(rules: Dict[str, List[Rule]], values: dict, prefix: str = ""):
    """The first rule broken by `values` (a node's settings), as a one-line error, or None."""
    for name, value in values.items():
        for rule in rules.get(name, ()):
            for i, v in enumerate(value if isinstance(value, (list, tuple)) else [value]):
                key = f"{prefix}{name}" + (f"[{i}]" if isinstance(value, (list, tuple)) else "")
                found = rule.problem(key, v)
                if found is not None:
                    return found
    return None


def check_node(cls, values: dict, prefix: str) -> None:
    """Raise ConfigError for the first setting of a config node (which builds `cls`) that its
    signature's rules refuse."""
    from .schema import parameters
    found = problems(rules_of(parameters(cls)), values, prefix)
    if found is not None:
        raise ConfigError(found)
