"""client_dropout (issue 59): a client sampled in a round fails to report with the given chance, from its own
seeded stream, so the clients that report are a subset of the same sample; at least one reports. It changes the
run where it is set and nothing where it is 0 (an earlier run's identity too); a method that trains every client
each round (or picks them by its own rule) has no random sample to drop from, so it has no such setting: it is
each sampling method's own (algorithm.client_dropout, beside client_fraction), and elsewhere refused in one line."""
import subprocess
import sys

import pandas as pd
import pytest
import torch

from fedcluster.run_records.identity import config_fingerprint
from fedcluster.runner import run


def federation(n=40, seed=0):
    from fedcluster.algorithms.run_view import RunView
    fed = RunView.__new__(RunView)
    fed.seed, fed.device = seed, torch.device("cpu")
    fed.data = type("D", (), {"num_clients": n})()
    return fed


def test_the_clients_that_report_are_a_seeded_subset_of_the_same_sample():
    kept = []
    for t in range(200):
        full = federation().sample_clients(0.5, t, 0.0)
        some = federation().sample_clients(0.5, t, 0.25)
        assert len(full) == 20 and 1 <= len(some) <= 20
        assert set(some.tolist()) <= set(full.tolist())
        assert torch.equal(some, federation().sample_clients(0.5, t, 0.25))        # seeded
        kept.append(len(some) / 20)
    assert abs(sum(kept) / len(kept) - 0.75) < 0.03
    assert len(federation().sample_clients(1.0, 3, 0.999)) == 1                  # never nobody


def test_a_dropout_changes_the_run_and_zero_is_the_run_without_the_key(tmp_path, small_cfg):
    on = run(small_cfg("algorithm.client_dropout=0.4", "algorithm.client_fraction=0.8", algorithm="ifca"), tmp_path / "on")
    off = run(small_cfg("algorithm.client_dropout=0.0", "algorithm.client_fraction=0.8", algorithm="ifca"), tmp_path / "off")
    assert on["status"] == off["status"] == "complete"
    a, b = pd.read_csv(tmp_path / "on" / "metrics.csv"), pd.read_csv(tmp_path / "off" / "metrics.csv")
    assert not a["value"].equals(b["value"])
    config = {"seed": 0, "rounds": 3, "algorithm": {"name": "ifca"}}
    assert config_fingerprint({**config, "client_dropout": 0.0}) == config_fingerprint(config)   # an earlier run's key
    assert config_fingerprint({**config, "client_dropout": 0.1}) != config_fingerprint(config)
    moved = {**config, "algorithm": {"name": "ifca", "client_dropout": 0.0}}
    assert config_fingerprint(moved) == config_fingerprint(config)
    assert config_fingerprint({**config, "algorithm": {"name": "ifca", "client_dropout": 0.1}}) != config_fingerprint(config)


@pytest.mark.parametrize("algorithm", ["local", pytest.param("fedsoft", marks=pytest.mark.slow)])   # a second
# method without client sampling: the same refusal, two more CLI processes (12 s), out of CI's 15 minutes
def test_a_method_that_samples_no_clients_refuses_a_dropout_in_one_line(tmp_path, algorithm):
    out = tmp_path / "run"
    for given, said in (("algorithm.client_dropout=0.1", "algorithm.client_dropout is not a setting; allowed at algorithm:"),
                        ("client_dropout=0.1", "client_dropout is not a setting: it is algorithm.client_dropout")):
        proc = subprocess.run([sys.executable, "-m", "fedcluster", f"algorithm={algorithm}", given,
                               f"hydra.run.dir={out}"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert said in lines[0]
        assert not given.startswith("algorithm.") or "client_fraction" not in lines[0]   # it samples no clients
        assert not out.exists()


def test_participation_csv_records_who_trained_each_round_and_a_resumed_run_keeps_it(tmp_path, small_cfg, monkeypatch):
    """Where a method samples clients, participation.csv lists each round's clients that reported: a subset of that
    round's seeded sample (fed.sample_clients without dropouts), sealed in summary.json, with its mean count; a run
    killed in round 3 and resumed from its checkpoint writes the same file, byte for byte. A run that trains every
    client every round writes none."""
    import fedcluster.runner as runner
    from fedcluster.algorithms.run_view import RunView
    overrides = ("algorithm.client_dropout=0.4", "algorithm.client_fraction=0.5", "checkpoint_every=1")
    summary = run(small_cfg(*overrides, algorithm="ifca"), tmp_path / "straight")
    table = pd.read_csv(tmp_path / "straight" / "participation.csv")
    fed = RunView.__new__(RunView)
    fed.seed, fed.device = 0, torch.device("cpu")
    fed.data = type("D", (), {"num_clients": summary["num_clients"]})()
    for t, rows in table.groupby("round"):
        sampled = set(fed.sample_clients(0.5, int(t)).tolist())
        assert set(rows["client"]) <= sampled and set(rows["client"]) == set(fed.sample_clients(0.5, int(t), 0.4).tolist())
    assert sorted(table["round"].unique()) == list(range(summary["rounds"]))
    assert summary["clients_per_round"] == pytest.approx(table.groupby("round").size().mean())
    assert "participation.csv" in summary["integrity"]["files"]
    original = runner.client_chunks

    def dies_in_round_3(t, *args, **kwargs):
        if t == 2:
            raise KeyboardInterrupt
        return original(t, *args, **kwargs)
    monkeypatch.setattr(runner, "client_chunks", dies_in_round_3)
    with pytest.raises(Exception):
        run(small_cfg(*overrides, algorithm="ifca"), tmp_path / "resumed")
    monkeypatch.setattr(runner, "client_chunks", original)
    run(small_cfg(*overrides, algorithm="ifca"), tmp_path / "resumed")
    for name in ("participation.csv", "metrics.csv"):
        assert (tmp_path / "resumed" / name).read_bytes() == (tmp_path / "straight" / name).read_bytes()
    run(small_cfg(algorithm="ifca"), tmp_path / "everyone")
    assert not (tmp_path / "everyone" / "participation.csv").exists()


def test_a_cam_method_records_participation_from_its_base_methods_sampling(tmp_path, small_cfg):
    """IFCA-CAM's client_fraction and client_dropout are its base method's (algorithm.base.*): after the FedAvg
    warm-up (every client) each round's reporting clients are the base's seeded sample, so participation.csv is
    written as for IFCA alone."""
    from fedcluster.algorithms.run_view import RunView
    summary = run(small_cfg("algorithm.base.client_fraction=0.5", "algorithm.base.client_dropout=0.2",
                            "algorithm.warmup_rounds=1", algorithm="ifca_cam"), tmp_path / "cam")
    table = pd.read_csv(tmp_path / "cam" / "participation.csv")
    fed = RunView.__new__(RunView)
    fed.seed, fed.device = 0, torch.device("cpu")
    fed.data = type("D", (), {"num_clients": summary["num_clients"]})()
    rounds = sorted(table["round"].unique())
    assert rounds == list(range(summary["rounds"]))
    assert len(table[table["round"] == 0]) == summary["num_clients"]   # the warm-up trains everyone
    for t in rounds[1:]:
        assert set(table[table["round"] == t]["client"]) == set(fed.sample_clients(0.5, int(t), 0.2).tolist())
