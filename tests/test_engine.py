"""The batched (vmap) engine and the per-client sequential engine do the same math."""
import pytest
import torch

from fedcluster.engine.local import LocalJob, LocalTrainer, epoch_orders
from fedcluster.engine.optim import SGD, Adam
from fedcluster.models import LeNetCNN, LinearRegression
from fedcluster.models.stacked import init_stack
from fedcluster.runner import run

from conftest import make_cfg, SMALL


def _job(model_fn, x_shape, M=5, width=23, task="regression", refs=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = torch.tensor([23, 7, 15, 1, 12])[:M]
    x = torch.randn(M, width, *x_shape, generator=g)
    y = torch.randn(M, width, generator=g) if task == "regression" else torch.randint(0, 10, (M, width), generator=g)
    start = init_stack(model_fn, M, seed=1, device="cpu", dtype=torch.float32)
    ref_stack = init_stack(model_fn, 2, seed=2, device="cpu", dtype=torch.float32) if refs else None
    coeffs = torch.rand(M, 2, generator=g) if refs else None
    return n, x, y, start, ref_stack, coeffs


@pytest.mark.parametrize("opt", [Adam(lr=0.01), SGD(lr=0.05, momentum=0.9)])
@pytest.mark.parametrize("refs", [False, True])
def test_batched_equals_sequential_linear(opt, refs):
    model_fn = lambda: LinearRegression((10,))
    n, x, y, start, ref_stack, coeffs = _job(model_fn, (10,), refs=refs)
    trainer = LocalTrainer(model_fn(), "regression", opt, epochs=3, batch_size=4)
    orders = epoch_orders(n, 3, x.shape[1], torch.Generator().manual_seed(3))
    results = [trainer.train(LocalJob(x, y, n, start, opt.init(start), orders, ref_stack, coeffs), engine)
               for engine in ("batched", "sequential")]
    for k in start:
        assert not torch.allclose(results[0].params[k], start[k])
        torch.testing.assert_close(results[0].params[k], results[1].params[k], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(results[0].last_loss, results[1].last_loss, rtol=1e-5, atol=1e-6)


def test_batched_equals_sequential_cnn():
    model_fn = lambda: LeNetCNN((1, 28, 28), 10)
    n, x, y, start, ref_stack, coeffs = _job(model_fn, (1, 28, 28), M=3, task="classification", refs=True)
    opt = Adam(lr=1e-3)
    trainer = LocalTrainer(model_fn(), "classification", opt, epochs=1, batch_size=8)
    orders = epoch_orders(n, 1, x.shape[1], torch.Generator().manual_seed(3))
    a, b = (trainer.train(LocalJob(x, y, n, start, opt.init(start), orders, ref_stack, coeffs), e)
            for e in ("batched", "sequential"))
    for k in start:
        torch.testing.assert_close(a.params[k], b.params[k], rtol=1e-4, atol=1e-5)


def test_functional_adam_matches_torch_adam():
    """One client, full-batch steps: our stacked Adam equals torch.optim.Adam."""
    model_fn = lambda: LinearRegression((4,))
    x, y = torch.randn(16, 4), torch.randn(16)
    start = init_stack(model_fn, 1, seed=0, device="cpu", dtype=torch.float32)
    opt = Adam(lr=0.1)
    trainer = LocalTrainer(model_fn(), "regression", opt, epochs=5, batch_size=16)
    orders = torch.arange(16).repeat(1, 5, 1)
    ours = trainer.train(LocalJob(x[None], y[None], torch.tensor([16]), start, opt.init(start), orders), "batched")

    ref = model_fn()
    ref.linear.weight.data = start["linear.weight"][0].clone()
    torch_opt = torch.optim.Adam(ref.parameters(), lr=0.1)
    for _ in range(5):
        torch_opt.zero_grad()
        ((ref(x) - y) ** 2).mean().backward()
        torch_opt.step()
    torch.testing.assert_close(ours.params["linear.weight"][0], ref.linear.weight.data, rtol=1e-4, atol=1e-5)


def test_inactive_clients_keep_state():
    """A client with fewer batches is untouched by the extra steps of others (masking)."""
    model_fn = lambda: LinearRegression((3,))
    start = init_stack(model_fn, 2, seed=0, device="cpu", dtype=torch.float32)
    x, y = torch.randn(2, 8, 3), torch.randn(2, 8)
    opt = Adam(lr=0.1)
    trainer = LocalTrainer(model_fn(), "regression", opt, epochs=1, batch_size=2)
    orders = epoch_orders(torch.tensor([8, 2]), 1, 8, torch.Generator().manual_seed(0))
    both = trainer.train(LocalJob(x, y, torch.tensor([8, 2]), start, opt.init(start), orders), "batched")
    alone = trainer.train(LocalJob(x[1:], y[1:], torch.tensor([2]), {k: v[1:] for k, v in start.items()},
                                   opt.init({k: v[1:] for k, v in start.items()}), orders[1:]), "batched")
    torch.testing.assert_close(both.params["linear.weight"][1], alone.params["linear.weight"][0])
    assert both.opt_state["step"].tolist() == [4.0, 1.0]


@pytest.mark.parametrize("algorithm", ["fedsoft", "ifca", "fedprox"])
def test_whole_run_same_metrics_both_engines(tmp_path, algorithm):
    extra = ["algorithm.selection_size=6"] if algorithm == "fedsoft" else []
    summaries = []
    for engine in ("batched", "sequential"):
        cfg = make_cfg(SMALL + [f"algorithm={algorithm}", f"engine={engine}"] + extra)
        summaries.append(run(cfg, tmp_path / engine))
    for key in ("local_test_mse", "local_train_mse"):
        assert summaries[0]["local"][key] == pytest.approx(summaries[1]["local"][key], rel=1e-4)
    for d, values in summaries[0]["centers"]["mse"].items():
        assert values == pytest.approx(summaries[1]["centers"]["mse"][d], rel=1e-4)
