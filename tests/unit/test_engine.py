"""The batched (vmap) engine and the per-client sequential engine do the same math."""
import pytest
import torch

from fedcluster.local_training.terms import terms_from
from fedcluster.local_training.local import LocalJob, LocalTrainer
from fedcluster.local_training.schedule import Schedule, epoch_schedule, step_schedule
from fedcluster.local_training.optim import SGD, Adam
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
    sched = epoch_schedule(n, 3, 4, x.shape[1], torch.Generator().manual_seed(3))
    results = [trainer.train(LocalJob(x, y, torch.arange(5), start, opt.init(start), sched, terms_from(ref_stack, coeffs)), engine)
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
    sched = epoch_schedule(n, 1, 8, x.shape[1], torch.Generator().manual_seed(3))
    a, b = (trainer.train(LocalJob(x, y, torch.arange(3), start, opt.init(start), sched, terms_from(ref_stack, coeffs)), e)
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
    sched = Schedule(torch.arange(16).repeat(1, 5, 1), torch.ones(1, 5, 16, dtype=torch.bool))
    ours = trainer.train(LocalJob(x[None], y[None], torch.tensor([0]), start, opt.init(start), sched), "batched")

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
    sched = epoch_schedule(torch.tensor([8, 2]), 1, 2, 8, torch.Generator().manual_seed(0))
    both = trainer.train(LocalJob(x, y, torch.tensor([0, 1]), start, opt.init(start), sched), "batched")
    alone = trainer.train(LocalJob(x, y, torch.tensor([1]), {k: v[1:] for k, v in start.items()},
                                   opt.init({k: v[1:] for k, v in start.items()}),
                                   Schedule(sched.index[1:], sched.valid[1:])), "batched")
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


def test_step_schedule_gives_exact_steps_and_covers_data():
    """`steps` mode: every client takes exactly `steps` steps of min(B, n) samples, walking
    through fresh permutations of its data (no sample repeats before all were seen)."""
    n = torch.tensor([100, 7, 32, 1])
    sched = step_schedule(n, steps=10, batch_size=32, g=torch.Generator().manual_seed(0))
    assert sched.index.shape == (4, 10, 32)
    assert sched.valid.sum((1, 2)).tolist() == [320, 70, 320, 10]
    first = sched.index[0][sched.valid[0]][:100]          # client 0: first 100 draws = one permutation
    assert sorted(first.tolist()) == list(range(100))
    assert (sched.index[1][sched.valid[1]] < 7).all()


def test_offsets_batched_equals_sequential_and_change_the_result():
    """Fed-CAM's additive objective loss(offset + f(x; w)): both engines agree, and the frozen
    offset really enters the gradient."""
    model_fn = lambda: LeNetCNN((1, 28, 28), 10)
    n, x, y, start, _, _ = _job(model_fn, (1, 28, 28), M=3, task="classification")
    offsets = torch.randn(4, x.shape[1], 10, generator=torch.Generator().manual_seed(5)) * 3
    rows = torch.tensor([0, 2, 2, 1])                      # rows may repeat a client (two threads)
    start4 = {k: torch.cat([v, v[:1]]) for k, v in start.items()}
    opt = SGD(lr=0.05, momentum=0.9)
    trainer = LocalTrainer(model_fn(), "classification", opt, epochs=1, batch_size=4, steps=3)
    sched = trainer.schedule(n[rows], x.shape[1], torch.Generator().manual_seed(1))
    job = lambda off: LocalJob(x, y, rows, start4, opt.init(start4), sched, terms_from(offsets=off))
    a, b = (trainer.train(job(offsets), e) for e in ("batched", "sequential"))
    plain = trainer.train(job(None), "batched")
    for k in start:
        torch.testing.assert_close(a.params[k], b.params[k], rtol=1e-4, atol=1e-5)
    assert not torch.allclose(a.params["classifier.4.weight"], plain.params["classifier.4.weight"])
