"""The run's own keys are declared once (fedcluster/run_keys.py): their defaults are what a config composes to,
their rules are what a run and `fedcluster show` refuse, their volatile marker is what the identity leaves out,
and no yaml or hand list declares them again."""
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from fedcluster.config.conf_dir import config_dir
from fedcluster.config.store import compose_config
from fedcluster.config.validate import RUN_RULES, validate
from fedcluster.errors import ConfigError
from fedcluster.run_records.identity import VOLATILE_KEYS, config_fingerprint
from fedcluster.run_keys import run_keys, top_level_names
from fedcluster.runner import requested_config
from fedcluster.rules import Between, OneOf

KEYS = run_keys()


def test_config_yaml_declares_no_run_key_again():
    top = yaml.safe_load((config_dir() / "config.yaml").read_text())
    assert set(top) == {"defaults", "hydra"}


def test_every_run_key_composes_to_its_declared_default():
    # a data set without a solver file of its own (conf/solver/), so `train` is the declared one too
    cfg = requested_config(compose_config(["dataset=fashion_mnist", "partition=label_skew1", "model=lenet",
                                           "algorithm=fedavg"]))
    assert [k for k in cfg if k not in ("dataset", "partition", "model", "algorithm", "hardware", "logger")] == \
        [k for k in top_level_names() if k not in ("dataset", "partition", "model", "algorithm", "hardware", "logger")]
    for key in KEYS:
        head, _, tail = key.key.partition(".")
        assert (cfg[head][tail] if tail else cfg[head]) == key.default, key.key


def _refused_value(rule):
    if isinstance(rule, OneOf):
        return "not-a-choice"
    assert isinstance(rule, Between)
    return rule.lo - 1 if rule.lo != float("-inf") else rule.hi + 1


@pytest.mark.parametrize("key", [k for k in KEYS if k.rules], ids=lambda k: k.key)
def test_every_declared_rule_is_what_a_run_refuses(key):
    assert RUN_RULES[key.key] in key.rules
    value = _refused_value(key.rules[0])
    if key.annotation in (int,) or "int" in str(key.annotation):
        value = int(value)
    cfg = compose_config(["dataset=fashion_mnist", "partition=label_skew1", "model=lenet", "algorithm=fedavg",
                          f"{key.key}={value}"])
    with pytest.raises(ConfigError, match=f"^{key.key}="):
        validate(cfg)


def test_volatile_keys_are_the_declared_ones_and_change_no_fingerprint():
    declared = [k.key for k in KEYS if k.volatile]
    assert set(declared) == {"checkpoint_every", "progress", "plots", "overwrite", "objective"}
    assert set(VOLATILE_KEYS) == set(declared) | {"logger", "hydra"}
    base = requested_config(compose_config([]))
    assert config_fingerprint({**base, "plots": False, "checkpoint_every": 3}) == config_fingerprint(base)
    assert config_fingerprint({**base, "rounds": 3}) != config_fingerprint(base)


def test_fedcluster_show_run_lists_every_key_with_its_help_and_refuses_a_bad_value():
    out = subprocess.run([sys.executable, "-m", "fedcluster", "show", "run", "+preset=clove/images"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line for line in out.stdout.splitlines()[2:]}
    assert list(rows) == [k.key for k in KEYS]
    for key in KEYS:
        assert key.help and key.help.split(" (")[0][:40] in rows[key.key]
    assert rows["rounds"].split()[1] == "100"   # the preset's value, beside the declared default 50
    bad = subprocess.run([sys.executable, "-m", "fedcluster", "show", "run", "train.lr=0"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "fedcluster: error: train.lr=0.0 is out of range; allowed: > 0"]
