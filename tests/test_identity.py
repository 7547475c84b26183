"""One declaration of a run's identity (fedcluster/identity.py) read by the fingerprint, the run
directory's check and Hydra's sweep directory names."""
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from conftest import CONF
from fedcluster.config import register_resolvers
from fedcluster.config import register_schemas
from fedcluster.identity import NAME_EXCLUDED_KEYS, VOLATILE_KEYS, config_fingerprint


def test_sweep_directory_names_leave_out_exactly_the_volatile_keys():
    register_resolvers()
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", return_hydra_config=True)
    excluded = list(cfg.hydra.job.config.override_dirname.exclude_keys)
    assert excluded == list(NAME_EXCLUDED_KEYS)
    assert {k for k in VOLATILE_KEYS if k != "hydra"} <= set(excluded)


def test_the_fingerprint_ignores_volatile_keys_only():
    base = {"rounds": 3, "train": {"lr": 0.1}, "progress": True}
    assert config_fingerprint(base) == config_fingerprint({**base, "progress": False, "plots": False,
                                                           "logger": {"x": 1}})
    assert config_fingerprint(base) != config_fingerprint({**base, "rounds": 4})
