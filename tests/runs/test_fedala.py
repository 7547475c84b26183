"""FedALA: the element-wise weight learning against a hand-computed step, clipping, the stopping
rule, the local model it builds, and the two engines agreeing."""
import numpy as np
import pandas as pd
import pytest
import torch

from conftest import SMALL, make_cfg, softmax_grad
from fedcluster.algorithms.fold import aggregate_at_once
from fedcluster.algorithms.fedala import ALASteps, ala_weights
from fedcluster.runner import run


def test_one_step_of_weight_learning_by_hand():
    model = torch.nn.Linear(3, 2).double()
    g = torch.Generator().manual_seed(0)
    local = {"weight": torch.randn(2, 3, generator=g, dtype=torch.float64), "bias": torch.randn(2, generator=g, dtype=torch.float64)}
    glob = {"weight": torch.randn(2, 3, generator=g, dtype=torch.float64), "bias": torch.randn(2, generator=g, dtype=torch.float64)}
    x, y = torch.randn(5, 3, generator=g, dtype=torch.float64), torch.tensor([0, 1, 1, 0, 1])
    weights = {k: torch.full_like(v, 0.5) for k, v in local.items()}
    eta = 0.7
    ala_weights(model, "classification", local, glob, weights, ["weight", "bias"], [(x, y)], ALASteps(eta, converge=False))
    mixed = {k: (local[k] + 0.5 * (glob[k] - local[k])).numpy() for k in local}
    gW, gb = softmax_grad(mixed["weight"], mixed["bias"], x.numpy(), y.numpy())
    expect_W = np.clip(0.5 - eta * gW * (glob["weight"] - local["weight"]).numpy(), 0, 1)
    expect_b = np.clip(0.5 - eta * gb * (glob["bias"] - local["bias"]).numpy(), 0, 1)
    np.testing.assert_allclose(weights["weight"].numpy(), expect_W, rtol=1e-10)
    np.testing.assert_allclose(weights["bias"].numpy(), expect_b, rtol=1e-10)


def test_weights_are_clipped_to_the_unit_interval():
    model = torch.nn.Linear(3, 2).double()
    g = torch.Generator().manual_seed(1)
    local = {"weight": torch.zeros(2, 3, dtype=torch.float64), "bias": torch.zeros(2, dtype=torch.float64)}
    glob = {"weight": 5 * torch.randn(2, 3, generator=g, dtype=torch.float64), "bias": torch.ones(2, dtype=torch.float64)}
    x, y = torch.randn(8, 3, generator=g, dtype=torch.float64), torch.randint(0, 2, (8,), generator=g)
    weights = {k: torch.ones_like(v) for k, v in local.items()}
    ala_weights(model, "classification", local, glob, weights, ["weight", "bias"], [(x, y)] * 3, ALASteps(1e3, converge=False))
    w = torch.cat([v.flatten() for v in weights.values()])
    assert float(w.min()) >= 0 and float(w.max()) <= 1 and bool(((w == 0) | (w == 1)).any())


def test_first_call_repeats_passes_until_the_losses_settle():
    model = torch.nn.Linear(3, 2).double()
    g = torch.Generator().manual_seed(2)
    local = {k: v.detach().clone() for k, v in model.state_dict().items()}
    glob = {k: v + 1.0 for k, v in local.items()}
    x, y = torch.randn(6, 3, generator=g, dtype=torch.float64), torch.randint(0, 2, (6,), generator=g)
    w = {k: torch.ones_like(v) for k, v in local.items()}
    settled = ala_weights(model, "classification", local, glob, w, ["bias"], [(x, y)],
                          ALASteps(0.1, converge=True, threshold=1e9, num_pre_loss=4))
    assert len(settled) == 5   # more than num_pre_loss passes, then std < threshold
    capped = ala_weights(model, "classification", local, glob, w, ["bias"], [(x, y)],
                         ALASteps(0.1, converge=True, threshold=0.0, num_pre_loss=4, max_passes=7))
    assert len(capped) == 7
    once = ala_weights(model, "classification", local, glob, w, ["bias"], [(x, y)], ALASteps(0.1, converge=False))
    assert len(once) == 1


def test_local_models_take_the_global_lower_layers_and_a_weighted_top(tmp_path):
    from fedcluster.assemble import build
    cfg = make_cfg(SMALL + ["algorithm=fedala", "model=mlp", "rounds=2"])
    run(cfg, tmp_path / "run")
    _, fed, alg, _ = build(cfg)
    alg.setup(fed)
    names = [n for n, _ in fed.model.named_parameters()]
    assert alg._top == names[-2:] and len(names) > 2
    plan = alg.plan(0, fed)
    trained = {k: v + 0.01 * torch.randn(v.shape, generator=torch.Generator().manual_seed(3), dtype=v.dtype)
               for k, v in plan.start.items()}
    aggregate_at_once(alg.aggregation(0, plan, fed), trained)
    for name in names[:-2]:
        torch.testing.assert_close(alg.local[name], alg.global_model[name].expand_as(alg.local[name]))
    for name in alg._top:
        W = alg.weights[name]
        assert float(W.min()) >= 0 and float(W.max()) <= 1
        torch.testing.assert_close(alg.local[name], trained[name] + (alg.global_model[name] - trained[name]) * W)
    assert bool(alg.started.all())


def test_batched_and_sequential_engines_agree(tmp_path):
    common = SMALL + ["algorithm=fedala", "model=mlp"]
    run(make_cfg(common + ["engine=batched"]), tmp_path / "b")
    run(make_cfg(common + ["engine=sequential"]), tmp_path / "s")
    a, b = pd.read_csv(tmp_path / "b" / "metrics.csv"), pd.read_csv(tmp_path / "s" / "metrics.csv")
    pd.testing.assert_frame_equal(a.drop(columns=["value", "run_id"]), b.drop(columns=["value", "run_id"]))
    np.testing.assert_allclose(a["value"], b["value"], rtol=1e-4, atol=1e-6)
