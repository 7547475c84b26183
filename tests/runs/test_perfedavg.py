"""Per-FedAvg: the meta step's gradient (first-order and Hessian-free) against hand-computed ones,
the one-step personalisation, and the two engines agreeing."""
import numpy as np
import pandas as pd
import pytest
import torch
from torch.func import grad

from conftest import SMALL, make_cfg, softmax_grad
from fedcluster.local_training.local import LocalTrainer
from fedcluster.local_training.objective import Objective
from fedcluster.local_training.optim import build_optimizer
from fedcluster.local_training.terms import MetaStep
from fedcluster.runner import run


@pytest.fixture
def setting():
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Linear(3, 2).double()
    params = {"weight": torch.randn(2, 3, generator=g, dtype=torch.float64),
              "bias": torch.randn(2, generator=g, dtype=torch.float64)}
    x = torch.randn(12, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (12,), generator=g)
    trainer = LocalTrainer(model, "classification", build_optimizer("sgd", lr=0.1), epochs=1, batch_size=12)
    return trainer, params, x, y


def direction(trainer, params, x, y, term):
    objective = Objective(trainer.model, trainer.task, [term])
    return grad(lambda p: objective(p, x, y, torch.ones(len(y), dtype=x.dtype), [term.data[0]])[0])(params)


def test_first_order_step_is_the_gradient_at_the_adapted_point(setting):
    trainer, params, x, y = setting
    alpha = 0.3
    term = MetaStep(alpha, 6, "fo", 1e-3, 1, x)
    got = direction(trainer, params, x, y, term)
    W, b = params["weight"].numpy(), params["bias"].numpy()
    gW, gb = softmax_grad(W, b, x[:6].numpy(), y[:6].numpy())                   # D: the first half
    W1, b1 = W - alpha * gW, b - alpha * gb
    eW, eb = softmax_grad(W1, b1, x[6:].numpy(), y[6:].numpy())                 # D': the second half
    np.testing.assert_allclose(got["weight"].numpy(), eW, rtol=1e-10)
    np.testing.assert_allclose(got["bias"].numpy(), eb, rtol=1e-10)


def test_hessian_free_step_by_hand(setting):
    trainer, params, x, y = setting
    alpha, delta = 0.3, 1e-4
    term = MetaStep(alpha, 4, "hf", delta, 1, x)
    got = direction(trainer, params, x, y, term)
    W, b = params["weight"].numpy(), params["bias"].numpy()
    parts = [(x[i * 4:(i + 1) * 4].numpy(), y[i * 4:(i + 1) * 4].numpy()) for i in range(3)]
    gW, gb = softmax_grad(W, b, *parts[0])
    g2W, g2b = softmax_grad(W - alpha * gW, b - alpha * gb, *parts[1])
    pW, pb = softmax_grad(W + delta * g2W, b + delta * g2b, *parts[2])
    mW, mb = softmax_grad(W - delta * g2W, b - delta * g2b, *parts[2])
    np.testing.assert_allclose(got["weight"].numpy(), g2W - alpha * (pW - mW) / (2 * delta), rtol=1e-8)
    np.testing.assert_allclose(got["bias"].numpy(), g2b - alpha * (pb - mb) / (2 * delta), rtol=1e-8)
    # the finite difference approximates (I - alpha H) g with the exact Hessian-vector product
    fo = MetaStep(alpha, 4, "fo", delta, 1, x)
    assert not np.allclose(direction(trainer, params, x, y, fo)["weight"].numpy(), got["weight"].numpy())


@pytest.mark.parametrize("variant, real, split", [("fo", 7, 6), ("hf", 7, 4)])
def test_a_short_batch_shares_its_real_samples_out_among_the_parts(setting, variant, real, split):
    """A batch with fewer real samples than slots (padding after them) is cut by its real
    samples, ceil(n / parts) each: cut by slot position, D' held padding only and the meta
    gradient was zero (Per-FedAvg on digits, 50 samples per client, batch 100)."""
    trainer, params, x, y = setting
    alpha, delta = 0.3, 1e-4
    term = MetaStep(alpha, split, variant, delta, 1, x)
    objective = Objective(trainer.model, trainer.task, [term])
    valid = (torch.arange(len(y)) < real).to(x.dtype)
    got = grad(lambda p: objective(p, x, y, valid, [term.data[0]])[0])(params)
    W, b = params["weight"].numpy(), params["bias"].numpy()
    cut = [(0, 4), (4, 7)] if variant == "fo" else [(0, 3), (3, 6), (6, 7)]   # ceil(7 / 2) = 4, ceil(7 / 3) = 3
    parts = [(x[i:j].numpy(), y[i:j].numpy()) for i, j in cut]
    gW, gb = softmax_grad(W, b, *parts[0])
    g2W, g2b = softmax_grad(W - alpha * gW, b - alpha * gb, *parts[1])
    if variant == "fo":
        want = g2W, g2b
    else:
        pW, pb = softmax_grad(W + delta * g2W, b + delta * g2b, *parts[2])
        mW, mb = softmax_grad(W - delta * g2W, b - delta * g2b, *parts[2])
        want = g2W - alpha * (pW - mW) / (2 * delta), g2b - alpha * (pb - mb) / (2 * delta)
    np.testing.assert_allclose(got["weight"].numpy(), want[0], rtol=1e-8)
    np.testing.assert_allclose(got["bias"].numpy(), want[1], rtol=1e-8)


def test_clients_smaller_than_half_a_batch_still_train_the_global_model(tmp_path):
    """Every client holds fewer samples than half of train.batch_size: the global model must
    still move (its test error changes from round to round), in both engines alike."""
    common = SMALL + ["algorithm=perfedavg", "model=mlp", "train.batch_size=100", "eval_every=1"]
    for engine in ("batched", "sequential"):
        run(make_cfg(common + [f"engine={engine}"]), tmp_path / engine)
    a, b = (pd.read_csv(tmp_path / e / "metrics.csv") for e in ("batched", "sequential"))
    np.testing.assert_allclose(a["value"], b["value"], rtol=1e-4, atol=1e-6)
    loss = a[(a.model == "center") & (a.eval_set == "theta_0")].groupby("round")["value"].mean()   # test mse
    assert len(loss) >= 3 and loss.diff().abs().iloc[1:].min() > 1e-6, loss


def test_personalisation_is_one_step_from_the_global_model(tmp_path):
    from fedcluster.assemble import build
    cfg = make_cfg(SMALL + ["algorithm=perfedavg", "model=mlp"])
    _, fed, alg, _ = build(cfg)
    alg.setup(fed)
    local = alg.local_models(fed)
    assert local is alg.local_models(fed)                       # every split of one evaluation: same models
    k, tr = 3, fed.data.train
    pick = torch.randperm(int(tr.n[k]), generator=fed.generator("perfedavg-eval", 0, k))[:alg.eval_batch]
    glob = {n: v[0].detach().clone().requires_grad_() for n, v in alg.global_model.items()}
    out = torch.func.functional_call(fed.model, glob, (tr.x[k, pick],))
    loss = ((out - tr.y[k, pick]) ** 2).mean()
    grads = torch.autograd.grad(loss, list(glob.values()))
    for (n, v), g in zip(glob.items(), grads):
        torch.testing.assert_close(local[n][k], (v - alg.alpha * g).detach())


@pytest.mark.parametrize("variant", ["fo", "hf"])
def test_batched_and_sequential_engines_agree(tmp_path, variant):
    common = SMALL + ["algorithm=perfedavg", "model=mlp", f"algorithm.variant={variant}", "train.batch_size=12"]
    run(make_cfg(common + ["engine=batched"]), tmp_path / "b")
    run(make_cfg(common + ["engine=sequential"]), tmp_path / "s")
    a, b = pd.read_csv(tmp_path / "b" / "metrics.csv"), pd.read_csv(tmp_path / "s" / "metrics.csv")
    pd.testing.assert_frame_equal(a.drop(columns=["value", "run_id"]), b.drop(columns=["value", "run_id"]))
    np.testing.assert_allclose(a["value"], b["value"], rtol=1e-4, atol=1e-6)


def test_the_meta_step_cuts_the_runs_own_batches_and_refuses_too_small_ones(tmp_path):
    """One batch size, train.batch_size (no copy in the algorithm's settings): a batch too small to
    cut into the variant's parts is a one-line error before anything is written."""
    from fedcluster.errors import ConfigError
    cfg = make_cfg(SMALL + ["algorithm=perfedavg", "model=mlp", "algorithm.variant=hf", "train.batch_size=2"])
    assert "batch_size" not in cfg.algorithm
    with pytest.raises(ConfigError, match=r"train.batch_size=2 must be >= 3"):
        run(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()
