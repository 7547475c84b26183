"""client_dropout (issue 59): a client sampled in a round fails to report with the given chance, from its own
seeded stream, so the clients that report are a subset of the same sample; at least one reports. It changes the
run where it is set and nothing where it is 0 (an earlier run's identity too); a method that trains every client
each round (or picks them by its own rule) has no random sample to drop from and is refused in one line."""
import subprocess
import sys

import pandas as pd
import pytest
import torch

from fedcluster.identity import config_fingerprint
from fedcluster.runner import run


def federation(dropout, n=40, seed=0):
    from fedcluster.algorithms.federation import Federation
    fed = Federation.__new__(Federation)
    fed.seed, fed.device, fed.dropout = seed, torch.device("cpu"), dropout
    fed.data = type("D", (), {"num_clients": n})()
    return fed


def test_the_clients_that_report_are_a_seeded_subset_of_the_same_sample():
    kept = []
    for t in range(200):
        full = federation(0.0).sample_clients(0.5, t)
        some = federation(0.25).sample_clients(0.5, t)
        assert len(full) == 20 and 1 <= len(some) <= 20
        assert set(some.tolist()) <= set(full.tolist())
        assert torch.equal(some, federation(0.25).sample_clients(0.5, t))         # seeded
        kept.append(len(some) / 20)
    assert abs(sum(kept) / len(kept) - 0.75) < 0.03
    assert len(federation(0.999).sample_clients(1.0, 3)) == 1                    # never nobody


def test_a_dropout_changes_the_run_and_zero_is_the_run_without_the_key(tmp_path, small_cfg):
    on = run(small_cfg("client_dropout=0.4", "algorithm.client_fraction=0.8", algorithm="ifca"), tmp_path / "on")
    off = run(small_cfg("client_dropout=0.0", "algorithm.client_fraction=0.8", algorithm="ifca"), tmp_path / "off")
    assert on["status"] == off["status"] == "complete"
    a, b = pd.read_csv(tmp_path / "on" / "metrics.csv"), pd.read_csv(tmp_path / "off" / "metrics.csv")
    assert not a["value"].equals(b["value"])
    config = {"seed": 0, "rounds": 3, "algorithm": {"name": "ifca"}}
    assert config_fingerprint({**config, "client_dropout": 0.0}) == config_fingerprint(config)
    assert config_fingerprint({**config, "client_dropout": 0.1}) != config_fingerprint(config)


@pytest.mark.parametrize("algorithm", ["local", "fedsoft"])
def test_a_method_that_samples_no_clients_refuses_a_dropout_in_one_line(tmp_path, algorithm):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "fedcluster", f"algorithm={algorithm}", "client_dropout=0.1",
                           f"hydra.run.dir={out}"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"client_dropout=0.1: algorithm={algorithm} draws no random sample of clients" in lines[0]
    assert not out.exists()
