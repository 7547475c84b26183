import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from fedcluster.config import register_schemas

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"

# Small, fast settings for end-to-end tests of the synthetic default.
SMALL = ["partition.num_clients=12", "partition.min_samples=20", "partition.max_samples=40",
         "train.epochs=2", "rounds=3", "progress=false", "plots=false", "dataset.test_size=200"]


def make_cfg(overrides=()):
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.fixture
def small_cfg():
    def build(*extra, algorithm="fedsoft"):
        base = SMALL + [f"algorithm={algorithm}"]
        if algorithm == "fedsoft":
            base.append("algorithm.selection_size=6")
        return make_cfg(base + list(extra))
    return build
