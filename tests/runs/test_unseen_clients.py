"""Unseen clients (partition.holdout_clients, data/holdout.py; Algorithm.newcomer_models).

A seeded share of the partition's clients never trains; each method that has a rule for a client joining
later picks its model from the newcomer's training data alone, and the model is scored on the newcomer's test
split (eval_set unseen_test). Built from the composed config as the CLI builds it, on tiny fake Fashion-MNIST."""
import dataclasses
import json
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from conftest import make_cfg
from fakedata import write_mnist_like
from fedcluster.algorithms.clove import CLoVE
from fedcluster.algorithms.fedsoft import importance_weights
from fedcluster.data.holdout import hold_out_clients, holdout_count
from fedcluster.local_training.forward import outputs_paired
from fedcluster.errors import ConfigError
from fedcluster.runner import run
from fedcluster.config.validate import newcomer_methods
from conftest import SAME_CLASS_AS_ANOTHER
from test_every_option import CONTEXT, shrink
from test_label_free_scoring import other_labels, trained as trained_as_scored

HOLDOUT = ["partition.holdout_clients=0.25"]


def eight_clients(cfg):
    """8 clients in 2 clusters (FedSoft selecting 2 of them a round)."""
    from omegaconf import open_dict
    with open_dict(cfg):
        cfg.partition.num_clients = 8
        if cfg.algorithm.get("selection_size") is not None:
            cfg.algorithm.selection_size = 2


def small(overrides, root):
    """The composed config, tiny (test_every_option.shrink), with 8 clients in 2 clusters."""
    cfg = shrink(make_cfg(CONTEXT["algorithm"] + overrides), root)
    eight_clients(cfg)
    return cfg


def trained(overrides, root, rounds=2):
    """(algorithm, federation, the run's local training for newcomers) after `rounds` rounds of the run's own steps
    (test_label_free_scoring.trained)."""
    return trained_as_scored(CONTEXT["algorithm"] + overrides, root, rounds, adjust=eight_clients, local_training=True)



@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=1200, n_test=300)
    return root


def test_how_many_clients_are_held_out():
    assert [holdout_count(s, 10) for s in (0.0, 0.01, 0.25, 0.5, 0.99)] == [0, 1, 2, 5, 9]   # one trains at least
    assert holdout_count(0.5, 2) == 1 and holdout_count(0.2, 1) == 0


def test_the_held_out_clients_keep_their_data_and_the_others_are_renumbered(data_root):
    """Seeded, disjoint and whole: every client is either trained or held out, with all of its samples, its true
    cluster and mixture; the same seed holds out the same clients, another seed others."""
    from fedcluster.assemble import build_data, make
    cfg = small(["algorithm=ifca"], data_root)
    source, partition = make(cfg.dataset, seed=cfg.seed), make(cfg.partition)
    data = build_data(source, partition, cfg.seed)
    held = hold_out_clients(data, 0.25, seed=3)
    assert len(held.unseen_ids) == 2 and held.unseen.num_clients == 2 and held.seen.num_clients == 6
    assert held.unseen_ids == hold_out_clients(data, 0.25, seed=3).unseen_ids
    assert any(hold_out_clients(data, 0.25, seed=s).unseen_ids != held.unseen_ids for s in range(4, 10))
    seen_ids = [k for k in range(8) if k not in held.unseen_ids]
    for part, ids in ((held.seen, seen_ids), (held.unseen, held.unseen_ids)):
        for row, k in enumerate(ids):
            for split in ("train", "local_test"):
                a, b = getattr(part, split), getattr(data, split)
                n = int(b.n[k])
                assert int(a.n[row]) == n and torch.equal(a.y[row, :n], b.y[k, :n])
                assert torch.equal(a.x[row, :n], b.x[k, :n])
        assert torch.equal(part.truth, data.truth[ids]) and torch.equal(part.mixture, data.mixture[ids])
    assert hold_out_clients(data, 0.0, seed=3).unseen is None


ONE_PER_CLASS = [pytest.param(a, marks=pytest.mark.slow) if a in SAME_CLASS_AS_ANOTHER else a for a in newcomer_methods()]


@pytest.mark.parametrize("algorithm", ONE_PER_CLASS)
def test_each_method_with_a_rule_scores_its_newcomers_in_their_own_rows(algorithm, data_root, tmp_path):
    """The run the CLI makes: the held-out clients never train (the assignments list the others only), and each
    has its own unseen_test rows; summary.json names them by their partition ids and averages their score."""
    cfg = small([f"algorithm={algorithm}"] + HOLDOUT, data_root)
    run(cfg, tmp_path / "run", progress=False)
    metrics = pd.read_csv(tmp_path / "run" / "metrics.csv")
    unseen = metrics[metrics["eval_set"] == "unseen_test"]
    assert sorted(unseen["model_index"].unique()) == [0, 1] and "local" in set(unseen["model"])
    assert set(unseen["round"]) == {0, 1} and unseen["value"].between(0, 1).all()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["num_clients"] == 6 and len(summary["unseen_clients"]) == 2
    last = unseen[(unseen["round"] == 1) & (unseen["metric"] == "accuracy") & (unseen["model"] == "local")]
    assert summary["local"]["unseen_test_accuracy"] == pytest.approx(last["value"].mean())
    trained_rows = metrics[metrics["eval_set"] == "local_test"]["model_index"]
    assert trained_rows.max() == 5


@pytest.mark.parametrize("algorithm", ["ifca", "fedavg", "fedsoft", "perfedavg"])
def test_a_newcomer_like_a_trained_client_gets_that_clients_model(algorithm, data_root):
    """The rule a newcomer follows is the one the trained clients follow: newcomers holding exactly the trained
    clients' data get the models those clients are given (IFCA: the lowest-loss center at the round's start;
    FedSoft: sum_s u_s c_s with the importance weights of a round that re-estimates them; Per-FedAvg: the same
    one-step adaptation; FedAvg: the global model)."""
    alg, fed, _ = trained([f"algorithm={algorithm}"], data_root)
    twins = dataclasses.replace(fed, newcomers=fed.data).newcomer_view()
    if algorithm == "ifca":
        alg.plan(2, fed)                 # assigns every client by its training losses, centers unchanged
        expected = alg.local_models(fed)
    elif algorithm == "fedsoft":
        u = importance_weights(fed.train_losses(alg.centers), fed.sizes, alg.smoother)
        expected = {k: torch.einsum("ns,s...->n...", u.to(c.dtype), c) for k, c in alg.centers.items()}
    else:
        expected = alg.local_models(fed)
    got = alg.newcomer_models(fed, twins)
    split = fed.data.local_test
    a = outputs_paired(fed.model, got, split.x, split.n, False)
    b = outputs_paired(fed.model, expected, split.x, split.n, False)
    assert torch.allclose(a[split.mask], b[split.mask], atol=1e-5)


def test_clove_puts_a_newcomer_in_the_group_nearest_its_loss_vector():
    """CLoVE's rule in numbers: trained clients 0, 1 form model 0's group and client 2 model 2's (model 1 has
    none and is no group); a newcomer whose losses are low on model 2 joins it, one low on model 0 joins that,
    under the loss and the square-root embeddings alike."""
    centers = {"w": torch.arange(3.0).view(3, 1)}
    seen = torch.tensor([[0.1, 2.0, 2.0], [0.2, 2.1, 1.9], [2.0, 2.0, 0.1]])
    new = torch.tensor([[1.9, 0.2, 0.3], [0.3, 0.1, 2.2]])
    for embedding in ("loss", "sqrt_loss"):
        alg = CLoVE(num_clusters=3, embedding=embedding)
        alg.centers, alg.assignment = centers, torch.tensor([0, 0, 2])
        fed = SimpleNamespace(mean_train_losses=lambda c: seen)
        newcomers = SimpleNamespace(mean_train_losses=lambda c: new)
        picked = alg.newcomer_models(fed, newcomers)
        assert picked["w"].view(-1).tolist() == [2.0, 0.0], embedding


@pytest.mark.parametrize("algorithm", ONE_PER_CLASS)
def test_a_newcomers_test_labels_never_choose_its_model(algorithm, data_root):
    """Each rule reads the newcomer's training data alone (those that train it too: FeSEM, CFL, FlexCFL)."""
    alg, fed, train = trained([f"algorithm={algorithm}"] + HOLDOUT, data_root)
    view = fed.newcomer_view(train)
    relabelled = dataclasses.replace(view, data=dataclasses.replace(
        view.data, local_test=other_labels(view.data.local_test, view.data.num_classes)))
    split = view.data.local_test
    a = alg.newcomer_predictors(fed, view, split)["local"]
    b = alg.newcomer_predictors(fed, relabelled, split)["local"]
    assert torch.equal(a[split.mask], b[split.mask])


def test_a_method_without_a_rule_is_refused_in_one_line_before_anything_is_written(data_root, tmp_path):
    cfg = small(["algorithm=fedala"] + HOLDOUT, data_root)
    with pytest.raises(ConfigError) as e:
        run(cfg, tmp_path / "run", progress=False)
    text = str(e.value)
    assert "\n" not in text and "partition.holdout_clients=0.25" in text and "algorithm=fedala" in text
    assert "ifca" in text and "cfl" in text and "fedala" not in text.split("one of", 1)[1]
    assert not (tmp_path / "run").exists()


def test_the_report_of_held_out_and_sampled_runs_says_so_and_scores_the_newcomers_in_a_column(data_root, tmp_path):
    """A sweep's runs outside a paper table: the newcomers' accuracy has its own column, and the note above the table
    names which clients trained where every row shares it (partition.holdout_clients, client_fraction, dropout)."""
    from fedcluster.report import build_report
    for algorithm in ("fedavg", "ifca"):
        cfg = small([f"algorithm={algorithm}", *HOLDOUT, "algorithm.client_fraction=0.5", "algorithm.client_dropout=0.1"],
                    data_root)
        run(cfg, tmp_path / "sweep" / algorithm, progress=False)
    text = build_report(tmp_path / "sweep")
    assert "unseen clients test accuracy %" in text
    same = next(line for line in text.splitlines() if line.startswith("Same in every row:"))
    assert same.endswith("partition.holdout_clients=0.25, algorithm.client_fraction=0.5, algorithm.client_dropout=0.1.")
    plain = small(["algorithm=fedavg"], data_root)          # all clients, every round: nothing more is said
    run(plain, tmp_path / "plain" / "fedavg", progress=False)
    note = next(line for line in build_report(tmp_path / "plain").splitlines() if line.startswith("Same in every row:"))
    assert "holdout" not in note and "client_fraction" not in note
