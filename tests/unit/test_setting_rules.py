"""A setting is checked once (issue 58): each rule is declared on the setting in the signature of the class
that takes it, and that one declaration refuses a bad value whether the class is built from a config (the
CLI, validate.py) or from Python (settings.checked_init); no constructor repeats a single value's check."""
import ast
import importlib
import inspect
import math
import pkgutil
import typing
from pathlib import Path

import pytest

import fedcluster.algorithms as algorithms_pkg
from fedcluster.algorithms.base import Algorithm
from fedcluster.errors import ConfigError
from fedcluster.config.schema import parameters
from fedcluster.rules import Between, OneOf, unwrap

for _m in pkgutil.iter_modules(algorithms_pkg.__path__):
    importlib.import_module(f"fedcluster.algorithms.{_m.name}")


def all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from all_subclasses(sub)


ALGORITHMS = sorted({c for c in all_subclasses(Algorithm) if c.__module__.startswith("fedcluster.algorithms")},
                    key=lambda c: c.__name__)
from fedcluster.partitions.labels import LabelPartition   # noqa: E402
from fedcluster.partitions.mixture import Partition   # noqa: E402
PARTITIONS = sorted({c for base in (LabelPartition, Partition) for c in [base, *all_subclasses(base)]},
                    key=lambda c: c.__name__)
GROUP = {**{c: "algorithm" for c in ALGORITHMS}, **{c: "partition" for c in PARTITIONS}}


def required(cls):
    """Arguments a class cannot be built without (CAM's base algorithm; a cluster partition's K)."""
    from fedcluster.algorithms.fedavg import FedAvg
    out = {"num_clusters": 2, "num_clients": 20} if "num_clusters" in {p.name for p in parameters(cls)} \
        and GROUP[cls] == "partition" else {}
    for p in parameters(cls):
        if p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD:
            if unwrap(p.annotation)[0] is Algorithm:
                out[p.name] = FedAvg()
            else:
                return None
    return out


def numeric(annotation) -> bool:
    bare = unwrap(annotation)[0]
    args = [a for a in typing.get_args(bare) if a is not type(None)] if typing.get_origin(bare) is typing.Union else [bare]
    return any(a in (int, float) for a in args)


def bad_value(rule, annotation):
    if isinstance(rule, OneOf):
        return "no-such-choice"
    if isinstance(rule, Between):
        if rule.lo != -math.inf:
            value = rule.lo - 1
        else:
            value = rule.hi + 1
        bare = unwrap(annotation)[0]
        kinds = set(typing.get_args(bare)) if typing.get_origin(bare) is typing.Union else {bare}
        return int(value) if int in kinds and float not in kinds else float(value)
    return None


from fedcluster.config.store import option_classes   # noqa: E402
DATASETS = sorted(option_classes("dataset"), key=lambda c: c.__name__)
# what a data source cannot be built without; building it reads its files, so only refusals are built here
DATASET_REQUIRED = {"ImageSource": {"name": "fashion_mnist", "distributions": [{"rotation": 0}]},
                    "TextSource": {"name": "ag_news"}}


@pytest.mark.parametrize("cls", ALGORITHMS + PARTITIONS + DATASETS, ids=lambda c: c.__name__)
def test_every_numeric_setting_declares_its_rule(cls):
    missing = [p.name for p in parameters(cls) if numeric(p.annotation) and not unwrap(p.annotation)[1]]
    assert not missing, f"{cls.__name__}: numeric settings without a declared rule: {missing}"


@pytest.mark.parametrize("cls", ALGORITHMS + PARTITIONS, ids=lambda c: c.__name__)
def test_a_declared_rule_refuses_a_bad_value_when_the_class_is_built(cls):
    base = required(cls)
    if base is None:
        pytest.skip(f"{cls.__name__} needs arguments that cannot be made here")
    cls(**base)   # the defaults are allowed
    checked = refusals_checked(cls, base, GROUP[cls])
    assert checked or not any(unwrap(p.annotation)[1] for p in parameters(cls))


def refusals_checked(cls, base: dict, group: str) -> int:
    """Build `cls` with each declared rule's bad value in turn: each a ConfigError naming `<group>.<key>=`."""
    checked = 0
    for p in parameters(cls):
        for rule in unwrap(p.annotation)[1]:
            value = bad_value(rule, p.annotation)
            if value is None:
                continue
            with pytest.raises(ConfigError, match=rf"^{group}\.{p.name}="):
                cls(**{**base, p.name: value})
            checked += 1
    return checked


@pytest.mark.parametrize("cls", DATASETS, ids=lambda c: c.__name__)
def test_a_data_sources_declared_rule_refuses_a_bad_value_before_any_file_is_read(cls, tmp_path):
    """The check runs before the constructor's body: a refusal names the setting even where the files are missing."""
    base = {**DATASET_REQUIRED.get(cls.__name__, {}), "root": str(tmp_path)} if "root" in \
        {p.name for p in parameters(cls)} else dict(DATASET_REQUIRED.get(cls.__name__, {}))
    assert refusals_checked(cls, base, "dataset")


@pytest.mark.parametrize("package, classes", [("algorithms", ALGORITHMS), ("partitions", PARTITIONS),
                                              ("data", DATASETS)])
def test_no_constructor_repeats_a_single_values_check(package, classes):
    """A value's rule lives in the signature; a constructor may check what several values say together."""
    found = []
    for path in sorted((Path(algorithms_pkg.__file__).parent.parent / package).glob("*.py")):
        tree = ast.parse(path.read_text())
        names_of_algorithms = {c.__name__ for c in classes}
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in names_of_algorithms):
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"):
                params = {a.arg for a in fn.args.args + fn.args.kwonlyargs} - {"self"}
                for node in ast.walk(fn):
                    if isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in ast.walk(node)):
                        if isinstance(node.test, ast.Compare) and isinstance(node.test.ops[0], (ast.Is, ast.IsNot)):
                            continue   # whether a setting is given (`x is None`, `is not None`): no range a rule could state
                        names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)} | \
                            {n.attr for n in ast.walk(node.test) if isinstance(n, ast.Attribute)
                             and isinstance(n.value, ast.Name) and n.value.id == "self"}
                        names -= {"self"}   # a check naming one setting alone (with self.<other> it names two)
                        if len(names) == 1 and names <= params:
                            found.append(f"{path.name}:{node.lineno} {cls.name} checks {names.pop()}")
                    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "check_choice":
                        found.append(f"{path.name}:{node.lineno} {cls.name} check_choice")
    assert not found, found


def test_the_python_api_and_the_cli_word_a_refusal_alike(tmp_path):
    from conftest import make_cfg
    from fedcluster.algorithms.fedsoft import FedSoft
    from fedcluster.config.validate import validate
    with pytest.raises(ConfigError) as built:
        FedSoft(tau=0)
    with pytest.raises(ConfigError) as composed:
        validate(make_cfg(["algorithm=fedsoft", "algorithm.tau=0"]))
    assert str(built.value) == str(composed.value) == "algorithm.tau=0 is out of range; allowed: >= 1"


def test_a_shared_setting_has_one_declaration():
    """client_fraction means the same on every algorithm that samples clients: each takes settings.ClientFraction,
    so its rule, (0, 1], is written once."""
    from fedcluster.rules import ClientFraction
    takers = [c for c in ALGORITHMS if any(p.name == "client_fraction" for p in parameters(c))]
    assert len(takers) >= 10
    for cls in takers:
        p = next(p for p in parameters(cls) if p.name == "client_fraction")
        assert p.annotation == ClientFraction, cls.__name__


def test_a_rule_over_two_settings_is_declared_once_and_checked_alike_from_a_config_and_from_python():
    """min_samples <= max_samples of the mixture partitions: `joint_rules` on their base, the same one-line refusal
    from validate.py (before anything is built) and from the constructor; equal values are allowed."""
    from conftest import make_cfg
    from fedcluster.errors import ConfigError
    from fedcluster.partitions import RandomMix
    from fedcluster.rules import NotAbove
    from fedcluster.config.validate import validate
    message = "partition.min_samples=100 exceeds partition.max_samples=50; allowed: min_samples <= max_samples"
    with pytest.raises(ConfigError) as from_config:
        validate(make_cfg(["partition=random", "partition.min_samples=100", "partition.max_samples=50"]))
    with pytest.raises(ConfigError) as from_python:
        RandomMix(min_samples=100, max_samples=50)
    assert str(from_config.value) == str(from_python.value) == message
    RandomMix(min_samples=50, max_samples=50)
    assert NotAbove("min_samples", "max_samples").problem("partition", {"min_samples": 3}) is None   # one side unset
