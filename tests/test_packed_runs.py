"""Packed runs (issue 57): runs trained side by side in one process, their local training packed
into one job where they can be, end with the metrics each run ends with alone, byte for byte, for
every algorithm; a packed sweep stopped mid-way resumes every run to those metrics."""
import pytest

import fedcluster.runner as runner
from fedcluster.packed import run_packed
from fedcluster.runner import run

from conftest import CONF, make_cfg
from test_every_option import CONTEXT, data_root, shrink   # noqa: F401 -- data_root is a fixture

ALGORITHMS = sorted(f.stem for f in (CONF / "algorithm").glob("*.yaml"))


def config(algorithm, root, seed=0, rounds=2):
    cfg = shrink(make_cfg(CONTEXT["algorithm"] + [f"algorithm={algorithm}", f"seed={seed}"]), root)
    cfg.rounds, cfg.checkpoint_every, cfg.eval_every = rounds, 1, 1
    return cfg


def packed(cfgs, dirs, chunk="auto"):
    outcomes, packer = run_packed([lambda train_with, c=c, d=d: run(c, d, train_with=train_with)
                                   for c, d in zip(cfgs, dirs)], chunk)
    for o in outcomes:
        if isinstance(o, BaseException):
            raise o
    return outcomes, packer


def same_bytes(a, b, name="metrics.csv"):
    return (a / name).read_bytes() == (b / name).read_bytes()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_packed_ends_as_alone(algorithm, data_root, tmp_path):
    cfgs = [config(algorithm, data_root, seed) for seed in (0, 1)]
    for i, c in enumerate(cfgs):
        run(c, tmp_path / f"alone{i}")
    outcomes, packer = packed(cfgs, [tmp_path / f"packed{i}" for i in range(2)])
    assert all(o["status"] == "complete" for o in outcomes)
    for i in range(2):
        assert same_bytes(tmp_path / f"alone{i}", tmp_path / f"packed{i}"), (algorithm, i)
    assert packer.members == 0 and packer.jobs_in >= 2 * cfgs[0].rounds


def test_different_methods_and_seeds_train_as_one_job(data_root, tmp_path):
    """FedAvg, IFCA and local-only over two seeds: six runs, one packed job per step of the round
    loop where their solver agrees, and each run's metrics are its own."""
    cfgs = [config(a, data_root, s) for a in ("fedavg", "ifca", "local") for s in (0, 1)]
    for i, c in enumerate(cfgs):
        run(c, tmp_path / f"alone{i}")
    _, packer = packed(cfgs, [tmp_path / f"packed{i}" for i in range(len(cfgs))])
    assert all(same_bytes(tmp_path / f"alone{i}", tmp_path / f"packed{i}") for i in range(len(cfgs)))
    assert packer.packed_jobs < packer.jobs_in   # jobs were merged, not only taken in turn
    # a packed job limited to a few rows splits the same jobs into more parts: still the same numbers
    _, small = packed(cfgs, [tmp_path / f"small{i}" for i in range(len(cfgs))], chunk=3)
    assert small.packed_jobs > packer.packed_jobs
    assert all(same_bytes(tmp_path / f"alone{i}", tmp_path / f"small{i}") for i in range(len(cfgs)))


class Died(Exception):
    pass


def test_a_packed_run_that_fails_leaves_the_others_going_and_resumes(data_root, tmp_path, monkeypatch):
    cfgs = [config(a, data_root, 0, rounds=3) for a in ("fedavg", "ifca")]
    for i, c in enumerate(cfgs):
        run(c, tmp_path / f"alone{i}")
    original = runner.write_results

    def dies_when_ifca_ends(out, cfg, *args, **kwargs):
        if cfg.algorithm.name == "ifca":
            raise Died()
        return original(out, cfg, *args, **kwargs)

    monkeypatch.setattr(runner, "write_results", dies_when_ifca_ends)
    outcomes, _ = run_packed([lambda tw, c=c, i=i: run(c, tmp_path / f"packed{i}", train_with=tw)
                              for i, c in enumerate(cfgs)])
    assert isinstance(outcomes[1], Died) and outcomes[0]["status"] == "complete"
    assert same_bytes(tmp_path / "alone0", tmp_path / "packed0")
    assert (tmp_path / "packed1" / "checkpoint.pt").exists()
    monkeypatch.setattr(runner, "write_results", original)
    outcomes, _ = packed(cfgs, [tmp_path / f"packed{i}" for i in range(2)])   # the same command again
    assert outcomes[0].get("already_complete") and outcomes[1]["status"] == "complete"
    assert same_bytes(tmp_path / "alone1", tmp_path / "packed1")
