"""client_fraction on FeSEM and CFL (issue 59): a round trains only its sampled clients; an absent client keeps its
cluster; full participation (1.0, the default) is the run it was before the setting existed."""
import pandas as pd
import pytest

from conftest import make_cfg
from fedcluster.assemble import build
from fedcluster.run_records.identity import config_fingerprint
from fedcluster.runner import run

SPLIT_EARLY = ["algorithm.split_after_round=0", "algorithm.eps1=100", "algorithm.eps2=0"]   # CFL splits when it can


def clusters_by_round(path):
    a = pd.read_csv(path / "assignments.csv")
    best = a.loc[a.groupby(["round", "client"])["weight"].idxmax()]
    return {t: dict(zip(g["client"], g["cluster"])) for t, g in best.groupby("round")}


@pytest.mark.parametrize("algorithm, extra", [("fesem", []), ("cfl", SPLIT_EARLY)])
def test_only_a_rounds_sampled_clients_change_cluster(tmp_path, small_cfg, algorithm, extra):
    cfg = small_cfg("algorithm.client_fraction=0.5", "eval_every=1", "rounds=5", *extra, algorithm=algorithm)
    summary = run(cfg, tmp_path / "run")
    assert summary["status"] == "complete"
    fed = build(cfg)[1]
    by_round = clusters_by_round(tmp_path / "run")
    changed_somewhere = False
    for t in range(1, 5):
        sampled = set(fed.sample_clients(0.5, t).tolist())
        assert len(sampled) == 6
        moved = {k for k in by_round[t] if by_round[t][k] != by_round[t - 1][k]}
        assert moved <= sampled, (t, moved, sampled)
        changed_somewhere |= bool(moved)
    if algorithm == "cfl":
        splits = pd.read_csv(tmp_path / "run" / "cfl_splits.csv")
        assert splits["clients"].max() <= 6 and splits["split"].any()   # criteria over this round's clients alone
        assert changed_somewhere


@pytest.mark.parametrize("algorithm", ["fesem", "cfl"])
def test_full_participation_is_the_run_from_before_the_setting(tmp_path, small_cfg, algorithm):
    cfg = small_cfg(algorithm=algorithm)
    config = {"seed": 0, "algorithm": {"_target_": f"fedcluster.algorithms.{'FeSEM' if algorithm == 'fesem' else 'CFL'}",
                                       "name": algorithm}}
    with_key = {**config, "algorithm": {**config["algorithm"], "client_fraction": 1.0}}
    assert config_fingerprint(with_key) == config_fingerprint(config)          # earlier runs keep their identity
    fedavg = {"seed": 0, "algorithm": {"_target_": "fedcluster.algorithms.FedAvg", "name": "fedavg"}}
    assert config_fingerprint({**fedavg, "algorithm": {**fedavg["algorithm"], "client_fraction": 1.0}}) != \
        config_fingerprint(fedavg)                                            # FedAvg always carried it
    cam = make_cfg(["algorithm=fesem_cam"]).algorithm
    assert cam.base.client_fraction == 1.0
    assert run(cfg, tmp_path / "run")["status"] == "complete"
