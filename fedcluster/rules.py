"""What values a setting allows, declared next to its default in the signature of the class
that takes it (or in the class's `Settings` record, `CheckedSettings`):

    def __init__(self, alpha: Annotated[float, Positive] = 0.5, update: Annotated[str, OneOf("mean", "sgd")] = "mean")

One declaration serves the config check before a run (validate.py reads the rules of the class
every config node builds, nested nodes included) and `fedcluster show`, which prints each
setting's type, default and allowed values. A rule on a list setting holds for each of its
entries (model.hidden). The rules are checked once, by `checked_init` when a class is built and by
validate.py on a config; a class checks only what one value cannot say alone (min <= max)."""
import inspect
import math
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Dict, List, Tuple


MAX_COUNT = 10 ** 6   # rounds, epochs or steps above this are typos (weeks of training for the smallest model here)
MAX_BATCH = 10 ** 5   # more samples than any client of the data sets here holds


@dataclass(frozen=True)
class Help:
    """A setting's one-line help (`fedcluster show`), beside its type, default and rules in one declaration."""
    text: str


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
# `client_fraction`, the share of the clients a round samples, in (0, 1]: its type and rule, declared once for
# every algorithm that samples clients (each takes `client_fraction: ClientFraction = 1.0`).
ClientFraction = typing.Annotated[float, Between(0, 1, lo_open=True), Help("the share of the clients a round samples")]
# `client_dropout`, the chance that a client a round samples never reports, in [0, 1): declared beside every
# client_fraction (a method that samples no clients has no dropout to set).
ClientDropout = typing.Annotated[float, Probability, Help("the chance that a sampled client never reports")]
# partition.holdout_clients: the share of the clients kept out of training, scored as newcomers (data/holdout.py)
HoldoutShare = typing.Annotated[float, Probability]


@dataclass(frozen=True)
class OneOf(Rule):
    """One of `values`. `kind`: what the values are, for the refusal ("is not <kind>"; "is unknown" without)."""
    values: Tuple
    kind: str = ""

    def __init__(self, *values, kind: str = ""):
        object.__setattr__(self, "values", tuple(values[0]) if len(values) == 1 and
                           isinstance(values[0], (tuple, list)) else tuple(values))
        object.__setattr__(self, "kind", kind)

    def ok(self, value) -> bool:
        return value in self.values

    def problem(self, key, value):
        if value in self.values:
            return None
        return f"{key}={value!r} is {'not ' + self.kind if self.kind else 'unknown'}; allowed: {list(self.values)}"

    @property
    def text(self) -> str:
        return "one of " + ", ".join(map(str, self.values))


@dataclass(frozen=True)
class AutoOr(Rule):
    """"auto" (the program chooses) or a whole number that `rule` allows (hardware.chunk)."""
    rule: Rule

    def ok(self, value) -> bool:
        return value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and self.rule.ok(value))

    def problem(self, key, value):
        return None if self.ok(value) else f"{key}={value!r} is not allowed; allowed: {self.text}"

    @property
    def text(self) -> str:
        return f"'auto' or a whole number {self.rule.text}"


def unwrap(annotation):
    """(the annotation without Annotated, its rules)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return annotation.__origin__, [m for m in annotation.__metadata__ if isinstance(m, Rule)]
    return annotation, []


def rules_of(params: List[inspect.Parameter]) -> Dict[str, List[Rule]]:
    return {p.name: unwrap(p.annotation)[1] for p in params if unwrap(p.annotation)[1]}


def check_values(group: str, values: Dict[str, object], rules: Dict[str, List[Rule]]) -> None:
    """The one check of declared rules: raise ConfigError naming `<group>.<key>=<value>` and what is
    allowed for the first value a rule refuses (a list's entries each)."""
    from .errors import ConfigError
    for key, key_rules in rules.items():
        if key not in values:
            continue
        value = values[key]
        for entry in (value if isinstance(value, Sequence) and not isinstance(value, str) else [value]):   # a ListConfig too
            for rule in key_rules:
                problem = rule.problem(f"{group}.{key}", entry)
                if problem is not None:
                    raise ConfigError(problem)


@dataclass(frozen=True)
class NotAbove:
    """A rule over two settings of one class, declared on the class (`joint_rules`): `low` <= `high`.
    Checked where the single-value rules are, once: when the class is built and by validate.py."""
    low: str
    high: str

    def problem(self, group: str, values: Dict[str, object]):
        a, b = values.get(self.low), values.get(self.high)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > b:
            return (f"{group}.{self.low}={a} exceeds {group}.{self.high}={b}; allowed: {self.low} <= {self.high}")
        return None


def check_joint(group: str, joint, values: Dict[str, object]) -> None:
    """Rules over several settings (a class's `joint_rules`), on its settings' values (defaults filled in)."""
    from .errors import ConfigError
    for rule in joint:
        problem = rule.problem(group, values)
        if problem is not None:
            raise ConfigError(problem)


def checked_init(init, group: str, joint=()):
    """`init` (a class's __init__) that first checks its arguments against the rules its signature
    declares, so a class built from Python (the API, tests) gets the same one-line error as a config
    (validate.py), and no constructor repeats a rule. The signature stays the class's own."""
    import functools
    signature = inspect.signature(init)
    rules = rules_of(list(signature.parameters.values()))
    if (not rules and not joint) or getattr(init, "_checked", False):
        return init

    @functools.wraps(init)
    def checked(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        check_values(group, bound.arguments, rules)
        if joint:   # the class that declares them takes both settings: defaults filled in
            bound.apply_defaults()
            check_joint(group, joint, bound.arguments)
        return init(self, *args, **kwargs)
    checked._checked = True
    return checked


def record_signature(record) -> inspect.Signature:
    """The constructor signature of a class that takes its settings as one record: `self`, then each field of
    the dataclass `record` in its order, with its type (rules included) and default. Every reader of a class's
    settings (the config schema, validate.py, `fedcluster show`, `checked_init`) reads a signature, so a record
    is read exactly as a signature is. A record whose class passes the other settings on to its base's
    constructor says so (`rest_to_base: ClassVar[bool] = True`): its signature ends in `**kw`, which the
    readers follow into the base."""
    import dataclasses
    hints = typing.get_type_hints(record, include_extras=True)
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for f in dataclasses.fields(record):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else inspect.Parameter.empty)
        params.append(inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                        annotation=hints[f.name]))
    if getattr(record, "rest_to_base", False):
        params.append(inspect.Parameter("kw", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)


def own_settings(record, args: tuple, given: dict):
    """(the record of a class's own settings from `args` and `given`, the rest for its base's constructor)."""
    import dataclasses
    own = {f.name for f in dataclasses.fields(record)}
    return record(*args, **{k: v for k, v in given.items() if k in own}), {k: v for k, v in given.items() if k not in own}


class CheckedSettings:
    """Base of a config group's classes (`class Algorithm(CheckedSettings, group="algorithm")`): every
    class below it, the base included, has its declared rules checked when it is built (`checked_init`),
    a refusal naming `<group>.<key>`.

    A class with many settings declares them as one record instead of a long signature: a dataclass
    `Settings` of typed fields (`Annotated[type, rule..., Help(...)] = default`) and `__init__(self, *args, **given)`,
    whose body reads `self.Settings(*args, **given)`; its signature is the record's (`record_signature`)."""
    settings_group = "settings"

    def __init_subclass__(cls, group: str = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if group is not None:
            cls.settings_group = group
        if "Settings" in cls.__dict__ and "__init__" in cls.__dict__:
            cls.__dict__["__init__"].__signature__ = record_signature(cls.__dict__["Settings"])
        if "__init__" in cls.__dict__:
            cls.__init__ = checked_init(cls.__dict__["__init__"], cls.settings_group, cls.__dict__.get("joint_rules", ()))
