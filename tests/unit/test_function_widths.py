"""No function in the package takes more than 8 parameters (issue 77: a run's parts travel as one settled
object, settled.SettledRun, not as a dozen positional arguments). The functions still wider are named
below; the list may only shrink: a new wide function fails, and so does a listed one that was narrowed
(take it off the list)."""
import ast

from conftest import ROOT

MOST = 8
# (file, function): still wider than MOST. Empty: the group options with many settings declare them as one
# record (rules.CheckedSettings, `Settings`), not as a long signature.
STILL_WIDE = set()


def parameters(node) -> int:
    a = node.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
    return n - (1 if a.args and a.args[0].arg in ("self", "cls") else 0)


def wide_functions():
    out = {}
    for path in sorted((ROOT / "fedcluster").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameters(node) > MOST:
                out[(path.relative_to(ROOT).as_posix(), node.name)] = parameters(node)
    return out


def test_no_new_function_takes_more_than_eight_parameters():
    wide = wide_functions()
    assert set(wide) <= STILL_WIDE, {k: v for k, v in wide.items() if k not in STILL_WIDE}


def test_the_list_of_wide_functions_only_shrinks():
    assert STILL_WIDE <= set(wide_functions()), STILL_WIDE - set(wide_functions())


def test_the_round_loop_reads_one_settled_run():
    wide = wide_functions()
    for name in ("_write_run", "train_round", "write_results"):
        assert not [k for k in wide if k[1] == name], name


def test_every_groups_options_are_found_one_way_from_the_yamls():
    """store.option_classes: each yaml of conf/<group>/ names a class its group's package holds, and the
    classes found are exactly those the yamls name (no hand list beside them)."""
    import re
    from fedcluster.config.store import GROUP_PACKAGES, option_classes
    for group, package in GROUP_PACKAGES.items():
        named = set()
        for path in (ROOT / "conf" / group).glob("*.yaml"):
            named |= {n for g, n in re.findall(r"/schemas/(\w+)/(\w+)", path.read_text()) if g == group}
        found = {c.__name__ for c in option_classes(group)}
        assert named <= found, (group, named - found)
        assert all(getattr(package, n) is c for c in option_classes(group) for n in [c.__name__]), group


def test_a_settings_record_is_read_as_the_signature_it_replaces():
    """A class that declares its settings as one record (`Settings`) offers them as a signature would: the
    config schema's fields in the record's order (then its base's, where the record passes the rest on), its
    rules checked when built, an unknown key refused."""
    import dataclasses
    import pytest
    from fedcluster.algorithms import CLoVE, FedALA
    from fedcluster.config.schema import parameters
    from fedcluster.errors import ConfigError
    from fedcluster.partitions.label_sets import LabelSkew2
    from fedcluster.rules import CheckedSettings
    from fedcluster.data.hf import HuggingFaceSource
    from fedcluster.data.images import ImageSource
    from fedcluster.data.tensors import TensorSource
    from fedcluster.data.text import TextSource
    from fedcluster.config.schema import RUNTIME_ARGS
    for cls in (CLoVE, FedALA, LabelSkew2, HuggingFaceSource, ImageSource, TensorSource, TextSource):
        assert issubclass(cls, CheckedSettings) and "Settings" in cls.__dict__
        own = [f.name for f in dataclasses.fields(cls.Settings) if f.name not in RUNTIME_ARGS]
        assert [p.name for p in parameters(cls)][:len(own)] == own, cls
    assert [p.name for p in parameters(LabelSkew2)][8:10] == ["samples_per_client", "test_samples_per_client"]
    with pytest.raises(ConfigError, match=r"^algorithm\.server_lr=0 is out of range; allowed: > 0$"):
        CLoVE(server_lr=0)
    with pytest.raises(ConfigError, match=r"^partition\.samples_per_client=0 is out of range"):   # the base's rule
        LabelSkew2(samples_per_client=0)
    with pytest.raises(TypeError, match="server_rate"):
        CLoVE(server_rate=0.1)
    assert FedALA(eta=0.5).eta == 0.5 and CLoVE(first_round="random").first_round == "random"
