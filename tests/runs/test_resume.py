"""A run killed mid-way and started again in the same output dir ends with the same metrics."""
import pandas as pd
import pytest

from fedcluster.algorithms.fedsoft import FedSoft
from fedcluster.run_records.record import CHECKPOINT
from fedcluster.runner import run

from conftest import SMALL, die_in_round, make_cfg


class Killed(Exception):
    pass


def test_resume_gives_same_metrics(tmp_path, monkeypatch):
    overrides = SMALL + ["rounds=7", "checkpoint_every=2", "algorithm.selection_size=6"]
    reference = run(make_cfg(overrides), tmp_path / "uninterrupted")

    undo = die_in_round(monkeypatch, FedSoft, 5, Killed())
    with pytest.raises(Killed):
        run(make_cfg(overrides), tmp_path / "resumed")
    assert (tmp_path / "resumed" / CHECKPOINT).exists()
    partial = pd.read_csv(tmp_path / "resumed" / "metrics.csv")
    assert partial["round"].max() == 4          # appended live through round 4 (the checkpoint: after round 3)
    from fedcluster.run_records.record import read_checkpoint_file   # a sealed checkpoint: checksum verified, then loaded
    assert read_checkpoint_file(tmp_path / "resumed" / CHECKPOINT)["next_round"] == 4

    undo()
    resumed = run(make_cfg(overrides), tmp_path / "resumed")
    assert not (tmp_path / "resumed" / CHECKPOINT).exists()
    a = pd.read_csv(tmp_path / "uninterrupted" / "metrics.csv")
    b = pd.read_csv(tmp_path / "resumed" / "metrics.csv")
    pd.testing.assert_frame_equal(a, b)
    assert resumed["local"] == reference["local"]
    assert resumed["centers"] == reference["centers"]


def test_checkpoint_from_other_config_is_refused(tmp_path, monkeypatch):
    overrides = SMALL + ["rounds=4", "checkpoint_every=1", "algorithm.selection_size=6"]
    undo = die_in_round(monkeypatch, FedSoft, 2, Killed())
    with pytest.raises(Killed):
        run(make_cfg(overrides), tmp_path)
    undo()
    from fedcluster.errors import ConfigError
    with pytest.raises(ConfigError, match="different configuration"):
        run(make_cfg(overrides + ["seed=5"]), tmp_path)


def test_same_seed_same_metrics(tmp_path):
    cfg = SMALL + ["algorithm.selection_size=6"]
    run(make_cfg(cfg), tmp_path / "a")
    run(make_cfg(cfg), tmp_path / "b")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a" / "metrics.csv"), pd.read_csv(tmp_path / "b" / "metrics.csv"))
    run(make_cfg(cfg + ["seed=1"]), tmp_path / "c")
    assert not pd.read_csv(tmp_path / "a" / "metrics.csv").equals(pd.read_csv(tmp_path / "c" / "metrics.csv"))
