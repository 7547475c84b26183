"""FedPAC: its statistics, QP and head combination on hand-made inputs (the QP against a grid
search over the simplex), the head/extractor split of every model with features, training in
phases that freeze parameters (every engine), a short run and the engines agreeing."""
import itertools

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import ENGINE_CHECK, IMAGE_SKEW, make_cfg
from fedcluster.algorithms.fold import aggregate_at_once
from fedcluster.algorithms.fedpac import (collaboration_matrix, feature_statistics, head_names, head_weights,
                                          solve_simplex_qp)
from fedcluster.local_training.local import LocalJob, LocalTrainer
from fedcluster.local_training.optim import SGD, Adam, PartialUpdate
from fedcluster.local_training.terms import PrototypePull
from fedcluster.models import MLP, CifarCNN, LeNetCNN, LettersCNN, TextCNN
from fedcluster.models.stacked import init_stack
from fedcluster.runner import run


def grid_minimum(P, step=0.002):
    """min of a^T P a over a grid of the 3-simplex, and where."""
    best, arg = np.inf, None
    ticks = np.arange(0, 1 + step / 2, step)
    for a0, a1 in itertools.product(ticks, ticks):
        if a0 + a1 > 1 + 1e-12:
            continue
        a = np.array([a0, a1, max(0.0, 1 - a0 - a1)])
        val = a @ P @ a
        if val < best:
            best, arg = val, a
    return best, arg


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_qp_matches_a_grid_search_over_the_simplex(seed):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(3, 2))
    P = B @ B.T + np.diag(rng.uniform(0.05, 0.5, 3))        # positive definite: one minimiser
    a = solve_simplex_qp(P)
    best, arg = grid_minimum(P)
    assert a.min() >= 0 and a.sum() == pytest.approx(1.0)
    assert a @ P @ a <= best + 1e-12
    np.testing.assert_allclose(a, arg, atol=0.01)


def test_qp_against_the_grid_and_a_closed_form_minimiser():
    P = np.array([[1.0, 0.0, 0.0], [0.0, 9.0, 8.0], [0.0, 8.0, 9.0]])
    best, arg = grid_minimum(P)
    a = solve_simplex_qp(P)
    assert a @ P @ a <= best + 1e-12 and a @ P @ a == pytest.approx(8.5 / 9.5, abs=1e-9)
    # minimiser of a0^2 + 9 (1-a0)^2 (a1 = a2 = (1-a0)/2 -> 8.5 (1-a0)^2): a0 = 8.5 / 9.5
    np.testing.assert_allclose(a, [8.5 / 9.5, 0.5 / 9.5, 0.5 / 9.5], atol=1e-5)


def test_feature_statistics_by_hand():
    feats = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]])
    v, H = feature_statistics(feats, torch.tensor([0, 0, 1]), 3)
    p = [2 / 3, 1 / 3, 0]
    # class 0: mu (2, 0), mean squared norm (1 + 9) / 2 = 5; class 1: mu (0, 2), mean squared norm 4
    expected = (p[0] * 5 - p[0] ** 2 * 4 + p[1] * 4 - p[1] ** 2 * 4) / 3
    assert v == pytest.approx(expected)
    np.testing.assert_allclose(H.numpy(), [[4 / 3, 0], [0, 2 / 3], [0, 0]])


def test_collaboration_matrix_by_hand():
    V = torch.tensor([0.1, 0.2, 0.3])
    H = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]], [[1.0, 1.0]]])      # [M=3, C=1, D=2]
    P = collaboration_matrix(V, H, 0)
    d = [np.array([0.0, 0.0]), np.array([1.0, -1.0]), np.array([0.0, -1.0])]   # H_0 - H_j
    expected = np.array([[d[j] @ d[k] for k in range(3)] for j in range(3)]) + np.diag([0.1, 0.2, 0.3])
    np.testing.assert_allclose(P, expected)


def test_head_weights_stay_within_a_group_of_alike_clients():
    # two groups of two clients: equal statistics within a group, far apart between groups; with
    # equal variances each client splits its weight evenly within its group (the bias term is 0
    # there and any weight outside adds to it)
    H = torch.tensor([[[5.0, 0.0]], [[5.0, 0.0]], [[0.0, 5.0]], [[0.0, 5.0]]])
    A = head_weights(torch.full((4,), 0.1), H)
    np.testing.assert_allclose(A.numpy(), [[0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 0.5, 0.5]],
                               atol=1e-6)


def test_small_weights_are_cut_and_the_rest_renormalised():
    H = torch.tensor([[[0.0]], [[0.0]], [[30.0]]])
    A = head_weights(torch.tensor([1.0, 1.0, 1e-6]), H, eps=1e-3)
    assert float(A[0, 2]) == 0.0
    np.testing.assert_allclose(A[0].numpy(), [0.5, 0.5, 0.0], atol=1e-6)


@pytest.mark.parametrize("model, x", [
    (LeNetCNN((1, 28, 28), 10), torch.randn(3, 1, 28, 28)), (LettersCNN((1, 28, 28), 26), torch.randn(3, 1, 28, 28)),
    (CifarCNN((3, 32, 32), 10), torch.randn(3, 3, 32, 32)), (MLP((6,), 4, hidden=[5]), torch.randn(3, 6)),
    (TextCNN((7,), 4, vocab_size=20, embed_dim=4), torch.randint(0, 21, (3, 7)).float())])
def test_the_head_is_the_layer_that_reads_the_features(model, x):
    names = head_names(model)
    assert len(names) == 2 and names[0].endswith("weight") and names[1].endswith("bias")
    module = model.get_submodule(names[0].rsplit(".", 1)[0]) if "." in names[0] else model
    out, feats = model(x, with_features=True)
    torch.testing.assert_close(module(feats), out)


@pytest.mark.parametrize("make", [lambda: SGD(lr=0.1, momentum=0.9, weight_decay=0.1),
                                  lambda: Adam(lr=0.01, weight_decay=0.1)])
def test_partial_update_leaves_frozen_parameters_and_their_state_alone(make):
    opt = PartialUpdate(make(), ["b"])
    params = {"a": torch.ones(2, 3), "b": torch.ones(2, 3)}
    state = opt.init(params)
    grads = {"a": torch.ones(2, 3), "b": torch.ones(2, 3)}
    new_p, new_s = opt.update(params, grads, state, torch.ones(2, dtype=torch.bool))
    assert torch.equal(new_p["a"], params["a"]) and not torch.equal(new_p["b"], params["b"])
    frozen_state = [v["a"] for v in new_s.values() if isinstance(v, dict)]
    assert frozen_state and all(float(s.abs().max()) == 0 for s in frozen_state)
    full_p, _ = make().update(params, grads, make().init(params), torch.ones(2, dtype=torch.bool))
    torch.testing.assert_close(new_p["b"], full_p["b"])        # the trained part moves as without freezing


def LENET():
    return LeNetCNN((1, 28, 28), 10)


def phase_job(trainable, terms=()):
    torch.manual_seed(0)
    model = LENET()
    N, n = 3, 12
    x, y = torch.randn(N, n, 1, 28, 28), torch.randint(0, 10, (N, n))
    trainer = LocalTrainer(model, "classification", Adam(lr=0.01), epochs=2, batch_size=5)
    start = init_stack(LENET, N, 1, torch.device("cpu"), torch.float32)
    sched = trainer.schedule(torch.full((N,), n), n, torch.Generator().manual_seed(3))
    job = LocalJob(x, y, torch.arange(N), start, trainer.init_state(start), sched, list(terms),
                   trainable=tuple(trainable))
    return trainer, job, start


@pytest.mark.parametrize("engine", ["batched", "looped", "sequential"])
def test_a_phase_trains_only_its_parameters(engine):
    head = head_names(LENET())
    trainer, job, start = phase_job(head)
    out = trainer.train(job, engine).params
    for k in start:
        changed = not torch.equal(out[k], start[k])
        assert changed == (k in head), k


def test_engines_agree_on_a_body_phase_with_the_centroid_pull():
    head = head_names(LENET())
    body = [k for k, _ in LENET().named_parameters() if k not in head]
    pull = PrototypePull(torch.randn(10, 84), torch.ones(10, dtype=torch.bool), torch.full((3, 1), 0.5))
    results = {}
    for engine in ("batched", "looped", "sequential"):
        trainer, job, start = phase_job(body, [pull])
        results[engine] = trainer.train(job, engine).params
    for k in start:
        assert torch.equal(results["sequential"][k], start[k]) == (k in head)
        for engine in ("batched", "looped"):
            torch.testing.assert_close(results[engine][k], results["sequential"][k], rtol=1e-4, atol=1e-5)


IMAGES = IMAGE_SKEW + ["algorithm=fedpac"]


def test_fedpac_learns_a_label_skew(tmp_path, fmnist_root):
    s = run(make_cfg(IMAGES + [f"dataset.root={fmnist_root}", "rounds=4"]), tmp_path)
    assert s["local"]["local_test_accuracy"] > 0.6


def test_clients_share_the_extractor_and_keep_their_own_heads(tmp_path, fmnist_root):
    from fedcluster.assemble import build
    from fedcluster.local_training.clients import run_clients
    cfg = make_cfg(IMAGES + [f"dataset.root={fmnist_root}", "rounds=1"])
    _, fed, alg, trainer = build(cfg)
    alg.setup(fed)
    plan = alg.plan(0, fed)
    assert [p.trainable for p in plan.phases] == [tuple(alg._head), tuple(alg._body)]
    result = run_clients(0, plan, trainer, fed.data.train, "sequential", 0)
    aggregate_at_once(alg.aggregation(0, plan, fed), result.params)
    for k in alg._body:
        assert torch.equal(alg.local[k], alg.local[k][:1].expand_as(alg.local[k]))
    heads = alg.local[alg._head[0]]
    assert not torch.equal(heads[0], heads[-1])       # clients of different label sets: different heads
    assert alg.centroids is not None and bool(alg.have.any())


def test_engines_agree(tmp_path, fmnist_root):
    common = IMAGES + ENGINE_CHECK + [f"dataset.root={fmnist_root}", "rounds=2"]   # round 2 adds the centroid pull
    frames = {}
    for engine in ("batched", "looped", "grouped", "sequential"):
        run(make_cfg(common + [f"engine={engine}"]), tmp_path / engine)
        frames[engine] = pd.read_csv(tmp_path / engine / "metrics.csv")
    for engine in ("batched", "looped", "grouped"):
        a, b = frames[engine], frames["sequential"]
        pd.testing.assert_frame_equal(a.drop(columns=["value", "run_id"]), b.drop(columns=["value", "run_id"]))
        np.testing.assert_allclose(a["value"], b["value"], rtol=1e-3, atol=1e-4)


def test_a_model_without_layers_below_the_head_is_refused(tmp_path, fmnist_root):
    from fedcluster.errors import ConfigError
    with pytest.raises(ConfigError, match="layers below its head"):
        run(make_cfg(IMAGES + [f"dataset.root={fmnist_root}", "model=mlp", "model.hidden=[]"]), tmp_path / "r")
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


@pytest.mark.parametrize("engine", ["batched", "looped", "sequential"])
def test_freezing_does_not_change_the_trained_parameters_gradient(engine):
    """One optimizer step: the head after a head-only step equals the head after a step of every
    parameter (the frozen extractor is cut out of the backward pass, not out of the forward)."""
    torch.manual_seed(1)
    N, n = 2, 6
    x, y = torch.randn(N, n, 1, 28, 28), torch.randint(0, 10, (N, n))
    trainer = LocalTrainer(LENET(), "classification", SGD(lr=0.5), epochs=1, batch_size=n)
    start = init_stack(LENET, N, 2, torch.device("cpu"), torch.float32)
    head = tuple(head_names(LENET()))
    out = {}
    for trainable in (head, None):
        sched = trainer.schedule(torch.full((N,), n), n, torch.Generator().manual_seed(0))
        job = LocalJob(x, y, torch.arange(N), start, trainer.init_state(start), sched, [], trainable=trainable)
        out[trainable] = trainer.train(job, engine).params
    for k in head:
        assert not torch.equal(out[head][k], start[k])
        torch.testing.assert_close(out[head][k], out[None][k])


def test_a_stopped_run_resumes_to_the_same_metrics(tmp_path, fmnist_root, monkeypatch):
    """FedPAC's state (local models, centroids) goes through the checkpoint."""
    from fedcluster.algorithms.fedpac import FedPAC
    overrides = IMAGES + [f"dataset.root={fmnist_root}", "rounds=4", "checkpoint_every=2"]
    run(make_cfg(overrides), tmp_path / "whole")
    original = FedPAC.aggregation

    def dies_in_round_4(self, t, *args):
        if t == 3:
            raise KeyboardInterrupt
        return original(self, t, *args)
    monkeypatch.setattr(FedPAC, "aggregation", dies_in_round_4)
    from fedcluster.errors import RunInterrupted
    with pytest.raises(RunInterrupted):
        run(make_cfg(overrides), tmp_path / "resumed")
    monkeypatch.setattr(FedPAC, "aggregation", original)
    run(make_cfg(overrides), tmp_path / "resumed")
    a, b = (pd.read_csv(tmp_path / d / "metrics.csv") for d in ("whole", "resumed"))
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("key, value", [("lam", -1.0), ("head_epochs", -2), ("eps", 1.5), ("client_fraction", 0.0)])
def test_bad_settings_are_one_line_naming_the_key(key, value):
    from fedcluster.algorithms.fedpac import FedPAC
    from fedcluster.errors import ConfigError
    with pytest.raises(ConfigError, match=rf"^algorithm\.{key}={value} is out of range; allowed: "):
        FedPAC(**{key: value})
