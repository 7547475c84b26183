"""`fedcluster-report label-pairs`: rebuilds a finished n-class run's partition from its
config.yaml and splits the final per-client accuracy by whether a client's two classes are
of one kind (the explanation of the n-class K = 5 seed spread in the Fed-CAM Table 1 report)."""
import copy

import pandas as pd
import pytest

from fedcluster.runner import run

from conftest import make_cfg
from fakedata import write_mnist_like
from test_report import make_run


@pytest.fixture
def script():
    import fedcluster.report.label_pairs
    return fedcluster.report.label_pairs


@pytest.fixture(scope="module")
def nclass_run(tmp_path_factory):
    """One finished run the tests only read (each test that changes the config changes a copy)."""
    tmp_path = tmp_path_factory.mktemp("nclass")
    write_mnist_like(tmp_path / "data" / "FashionMNIST" / "raw", n_train=600, n_test=200)
    cfg = make_cfg(["+preset=cam/table1", f"dataset.root={tmp_path / 'data'}", "partition=cluster_nclass",
                    "algorithm=fedavg", "partition.num_clients=20", "rounds=2", "eval_every=1",
                    "progress=false", "checkpoint_every=0", "num_clusters=2", "seed=3",
                    "model=lenet"])   # the script reads any model; LeNet keeps the run short
    out = tmp_path / "run"
    run(cfg, str(out))
    return cfg, out


def test_split_matches_the_runs_partition_and_its_final_accuracies(script, nclass_run):
    cfg, out = nclass_run
    sets = script.client_label_sets(cfg)
    assert len(sets) == 20 and all(1 <= len(s) <= 2 for s in sets)   # n-class: two classes per client
    r = script.same_kind_split(out)
    expected_same = [len(s) > 1 and (s <= {0, 2, 3, 4, 6} or s <= {5, 7, 9}) for s in sets]
    assert r["same_kind"] == sum(expected_same) and r["clients"] == 20 and r["seed"] == 3
    m = pd.read_csv(out / "metrics.csv")
    last = m[(m.model == "local") & (m.metric == "accuracy") & (m.eval_set == "local_test")
             & (m["round"] == m["round"].max())].sort_values("model_index").value.to_numpy()
    same = pd.Series(expected_same).to_numpy()
    assert 0 < same.sum() < 20                    # seed 3 has clients on both sides of the split
    assert r["acc_same_kind"] == pytest.approx(last[same].mean())
    assert r["acc_others"] == pytest.approx(last[~same].mean())


def test_a_run_it_cannot_read_is_refused_in_one_line(script, nclass_run, tmp_path, capsys):
    cfg, out = nclass_run
    with pytest.raises(SystemExit) as e:
        script.main([str(tmp_path / "no_such_run")])
    assert e.value.code == 2 and "no config.yaml" in capsys.readouterr().err
    other = make_run(tmp_path / "mnist_run", 0, {"dataset.name": "mnist"})   # a finished run of another data set
    with pytest.raises(SystemExit) as e:
        script.main([str(other)])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1 and "dataset.name='mnist'" in err and "fashion_mnist" in err


def test_another_seed_gives_counts_only_of_that_seeds_partition(script, nclass_run, capsys):
    cfg, out = nclass_run
    r = script.same_kind_split(out, seed=4)
    assert r["seed"] == 4 and "acc_same_kind" not in r
    cfg = copy.deepcopy(cfg)
    cfg.seed = 4
    assert r["pairs"][0][1] == max(pd.Series([tuple(sorted(s)) for s in script.client_label_sets(cfg)]).value_counts())
    script.main([str(out), "--seed", "4"])
    assert f"seed 4: {r['same_kind']} of 20 clients" in capsys.readouterr().out
