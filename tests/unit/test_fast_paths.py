"""The fast formulations compute what the plain ones compute: the strided 2x2 max-pool, the
looped training engine, chunked inference-mode scoring, and the precision setting."""
import pytest
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from fedcluster.local_training import forward as ev
from fedcluster.local_training.terms import terms_from
from fedcluster.local_training.local import LocalJob, LocalTrainer
from fedcluster.local_training.optim import SGD, Adam
from fedcluster.errors import ConfigError
from fedcluster.hardware import Hardware
from fedcluster.models import LeNetCNN, LettersCNN
from fedcluster.models.pooling import MIN_TRAIN_ELEMENTS, _StridedMax2x2, max_pool_2x2
from fedcluster.models.stacked import init_stack
from fedcluster.assemble import choose_engine
from fedcluster.runner import run

from conftest import make_cfg, SMALL


@pytest.mark.parametrize("shape", [(3, 4, 24, 24), (2, 3, 9, 7), (5, 2, 16, 16)])
def test_strided_max_pool_equals_max_pool2d_values_and_gradients(shape):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, generator=g)
    x[0, 0, :4, :4] = 1.5                                   # ties inside windows: the first index wins in both
    x = x.relu()                                            # many exact zeros, as after ReLU
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    out_a, out_b = _StridedMax2x2.apply(a[..., :shape[2] // 2 * 2, :shape[3] // 2 * 2]), F.max_pool2d(b, 2)
    assert torch.equal(out_a, out_b)
    up = torch.randn(out_a.shape, generator=g)
    out_a.backward(up)
    out_b.backward(up)
    assert torch.equal(a.grad, b.grad)
    with torch.inference_mode():
        assert torch.equal(max_pool_2x2(x), F.max_pool2d(x, 2))


def test_max_pool_takes_the_strided_kernel_for_inference_and_large_training_maps(monkeypatch):
    """Which kernel runs (pooling.py's measured rule): the strided one for every inference pass and
    for training maps of at least MIN_TRAIN_ELEMENTS elements, the native one below."""
    used = []
    real = _StridedMax2x2.apply
    monkeypatch.setattr(_StridedMax2x2, "apply", lambda x: used.append(x.numel()) or real(x))
    small, large = torch.rand(10, 6, 24, 24), torch.rand(MIN_TRAIN_ELEMENTS // 64 + 1, 1, 8, 8)
    with torch.inference_mode():
        max_pool_2x2(small)
    max_pool_2x2(small.clone().requires_grad_())
    max_pool_2x2(large.clone().requires_grad_())
    assert used == [small.numel(), large.numel()]


def test_strided_max_pool_under_vmap_and_grad():
    x = torch.randn(3, 2, 1, 12, 12)
    f = lambda xi: _StridedMax2x2.apply(xi).square().sum()
    ref = torch.stack([torch.autograd.functional.jacobian(lambda z: F.max_pool2d(z, 2).square().sum(), xi) for xi in x])
    torch.testing.assert_close(vmap(grad(f))(x), ref)


def _job(M=4, width=30, steps=None, refs=True, offsets=False, weights=False, model_fn=None):
    g = torch.Generator().manual_seed(0)
    model_fn = model_fn or (lambda: LeNetCNN((1, 28, 28), 10))
    n = torch.tensor([30, 7, 19, 1, 12, 25])[:M]
    x = torch.randn(M, width, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (M, width), generator=g)
    rows = torch.tensor([0, 2, 2, 1, 3, 0])[:M]              # rows may repeat a client
    start = init_stack(model_fn, M, seed=1, device="cpu", dtype=torch.float32)
    ref_stack = init_stack(model_fn, 2, seed=2, device="cpu", dtype=torch.float32) if refs else None
    coeffs = torch.rand(M, 2, generator=g) if refs else None
    off = torch.randn(M, width, 10, generator=g) if offsets else None
    w = torch.rand(M, width, generator=g) if weights else None
    return model_fn, n, x, y, rows, start, ref_stack, coeffs, off, w


@pytest.mark.parametrize("opt", [Adam(lr=1e-3), SGD(lr=0.05, momentum=0.9)])
@pytest.mark.parametrize("steps", [None, 3])
@pytest.mark.parametrize("extras", ["refs", "offsets+weights"])
def test_looped_equals_sequential_and_batched(opt, steps, extras):
    model_fn, n, x, y, rows, start, refs, coeffs, off, w = _job(
        steps=steps, refs=extras == "refs", offsets=extras != "refs", weights=extras != "refs")
    trainer = LocalTrainer(model_fn(), "classification", opt, epochs=2, batch_size=8, steps=steps)
    sched = trainer.schedule(n[rows], x.shape[1], torch.Generator().manual_seed(3))
    results = {e: trainer.train(LocalJob(x, y, rows, start, opt.init(start), sched, terms_from(refs, coeffs, off, w)), e)
               for e in ("looped", "sequential", "batched", "grouped")}
    # Adam divides by sqrt(v): a weight whose gradient is ~1e-9 (summation noise) can step by
    # up to lr either way, so a few of them may differ by O(lr); all others agree to 1e-5.
    loose = opt.lr / 2 if isinstance(opt, Adam) else 1e-5
    for k in start:
        assert not torch.allclose(results["looped"].params[k], start[k])
        for other in ("sequential", "batched", "grouped"):
            a, b = results["looped"].params[k], results[other].params[k]
            torch.testing.assert_close(a, b, rtol=1e-4, atol=loose)
            assert ((a - b).abs() > 1e-5 + 1e-4 * b.abs()).float().mean() < 1e-3
    for other in ("sequential", "batched", "grouped"):
        torch.testing.assert_close(results["looped"].last_loss, results[other].last_loss, rtol=1e-4, atol=1e-5)
        if isinstance(opt, SGD):
            torch.testing.assert_close(results["looped"].opt_state, results[other].opt_state, rtol=1e-4, atol=1e-5)
    assert results["looped"].finite.all()


def test_looped_flags_a_diverging_row_without_touching_the_others():
    model_fn, n, x, y, rows, start, *_ = _job(refs=False)
    x[2] = float("nan")                                     # client 2's data: rows 1 and 2 train on it
    opt = SGD(lr=0.05)
    trainer = LocalTrainer(model_fn(), "classification", opt, epochs=1, batch_size=8)
    sched = trainer.schedule(n[rows], x.shape[1], torch.Generator().manual_seed(3))
    looped = trainer.train(LocalJob(x, y, rows, start, opt.init(start), sched), "looped")
    seq = trainer.train(LocalJob(x, y, rows, start, opt.init(start), sched), "sequential")
    assert looped.finite.tolist() == [True, False, False, True] == seq.finite.tolist()
    torch.testing.assert_close(looped.params["classifier.4.weight"][0], seq.params["classifier.4.weight"][0])


@pytest.mark.parametrize("model_fn", [lambda: LeNetCNN((1, 28, 28), 10), lambda: LettersCNN((1, 28, 28), 26)])
def test_scoring_equals_one_model_at_a_time_across_chunks(monkeypatch, model_fn):
    """Chunked inference-mode scoring = each model on all inputs at once, with a budget small
    enough that the 203 inputs span many chunks, the last one partial."""
    monkeypatch.setitem(ev.CHUNK_BUDGET, "cpu", 1)           # -> the minimum chunk, 16 samples
    model = model_fn()
    params = init_stack(model_fn, 3, seed=4, device="cpu", dtype=torch.float32)
    x = torch.randn(203, 1, 28, 28)
    assert ev.chunk_size(model, x) == 16
    out = ev.outputs_on_shared(model, params, x)
    assert not out.is_inference()                           # usable later as an autograd constant
    for m in range(3):
        plain = model_fn()
        plain.load_state_dict({k: v[m] for k, v in params.items()})
        with torch.no_grad():
            torch.testing.assert_close(out[m], plain.eval()(x), rtol=1e-5, atol=1e-5)
    y = torch.randint(0, 10, (203,))
    mask = torch.ones(1, 203, dtype=torch.bool)
    losses = ev.losses_on_clients(model, "classification", params, x[None], y[None] % out.shape[-1], mask)
    torch.testing.assert_close(losses[:, 0], torch.stack([F.cross_entropy(o, y % out.shape[-1], reduction="none")
                                                          for o in out]), rtol=1e-5, atol=1e-5)


def test_chunk_size_follows_the_largest_activation():
    lenet, letters = LeNetCNN((1, 28, 28), 10), LettersCNN((1, 28, 28), 26)
    x = torch.zeros(10, 1, 28, 28)
    # LeNet's largest activation: 6 x 24 x 24 floats; the letters CNN's: 32 x 28 x 28
    assert ev.chunk_size(lenet, x) == ev.CHUNK_BUDGET["cpu"] // (6 * 24 * 24 * 4)
    assert ev.chunk_size(letters, x) == ev.CHUNK_BUDGET["cpu"] // (32 * 28 * 28 * 4)


def test_auto_engine_choices():
    cpu, lenet = torch.device("cpu"), LeNetCNN((1, 28, 28), 10)
    assert choose_engine("auto", lenet, cpu) == "looped"
    assert choose_engine("auto", lenet, cpu, batch_size=10) == "grouped"      # one call per layer wins there
    assert choose_engine("auto", lenet, cpu, batch_size=16) == "looped"
    assert choose_engine("auto", torch.nn.Linear(3, 1), cpu, batch_size=10) == "batched"
    assert choose_engine("auto", lenet, torch.device("cuda"), batch_size=10) == "batched"
    with pytest.raises(ConfigError, match="engine='fast'"):
        choose_engine("fast", lenet, cpu)
    with pytest.raises(ConfigError, match="engine=grouped needs a model .*Linear"):
        choose_engine("grouped", torch.nn.Linear(3, 1), cpu)


def test_grouped_runs_a_meta_step_job_row_by_row():
    """Per-FedAvg's meta step rewrites the objective, which one call for many rows cannot compute: the grouped
    engine trains such a job as the looped one does, to the same numbers."""
    from fedcluster.local_training.terms import MetaStep
    model_fn, n, x, y, rows, start, *_ = _job(refs=False)
    opt = SGD(lr=0.05)
    trainer = LocalTrainer(model_fn(), "classification", opt, epochs=1, batch_size=8, steps=2)
    sched = trainer.schedule(n[rows], x.shape[1], torch.Generator().manual_seed(3))
    out = {e: trainer.train(LocalJob(x, y, rows, start, opt.init(start), sched,
                                     [MetaStep(0.01, 4, "fo", 1e-3, len(rows), next(iter(start.values())))]), e)
           for e in ("looped", "grouped")}
    for k in start:
        assert torch.equal(out["looped"].params[k], out["grouped"].params[k])


def test_precision_is_checked_and_bf16_runs(tmp_path):
    with pytest.raises(ConfigError, match=r"hardware.precision='fp16'.*fp32"):
        Hardware(precision="fp16")
    a = run(make_cfg(SMALL + ["algorithm=ifca"]), tmp_path / "fp32")
    b = run(make_cfg(SMALL + ["algorithm=ifca", "hardware.precision=bf16"]), tmp_path / "bf16")
    Hardware()                                              # back to fp32 for the tests that follow
    assert b["local"]["local_test_mse"] == pytest.approx(a["local"]["local_test_mse"], rel=0.05)
    assert b["local"]["local_test_mse"] != a["local"]["local_test_mse"]


def test_looped_engine_and_scoring_are_deterministic_per_thread_count():
    """Work is split into independent pieces, one per thread (local_training/workers.py): the same
    thread count gives bit-identical results; another count the same up to float rounding."""
    model_fn, n, x, y, rows, start, refs, coeffs, *_ = _job()
    opt = SGD(lr=0.05, momentum=0.9)
    trainer = LocalTrainer(model_fn(), "classification", opt, epochs=1, batch_size=8)
    sched = trainer.schedule(n[rows], x.shape[1], torch.Generator().manual_seed(3))
    before = torch.get_num_threads()
    out = {}
    try:
        for threads in (1, 2, 1, 2):
            torch.set_num_threads(threads)
            res = trainer.train(LocalJob(x, y, rows, start, opt.init(start), sched, terms_from(refs, coeffs)), "looped")
            scores = ev.outputs_on_shared(trainer.model, res.params, x[0])
            if threads in out:
                assert all(torch.equal(out[threads][0][k], res.params[k]) for k in start)
                assert torch.equal(out[threads][1], scores)
            out[threads] = (res.params, scores)
    finally:
        torch.set_num_threads(before)
    for k in start:
        torch.testing.assert_close(out[1][0][k], out[2][0][k], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out[1][1], out[2][1], rtol=1e-5, atol=1e-6)


def test_allocator_tunables_are_taken_once_on_glibc():
    import platform
    from fedcluster.local_training.allocator import keep_freed_memory
    first = keep_freed_memory()
    assert keep_freed_memory() is first
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert first is True


def test_a_new_model_never_reads_a_gone_models_activation_size():
    """The size cache is held per model object, weakly: a model created where a collected one lived (the same
    id()) measures its own activations (keyed by id(), a suite order once gave the letters CNN LeNet's size)."""
    import gc
    x = torch.zeros(10, 1, 28, 28)
    for _ in range(5):   # CPython hands a freed model's id to the next one at once: 5 tries meet it (each gc ~0.5 s)
        lenet = LeNetCNN((1, 28, 28), 10)
        assert ev.chunk_size(lenet, x) == ev.CHUNK_BUDGET["cpu"] // (6 * 24 * 24 * 4)
        gone = id(lenet)
        del lenet
        gc.collect()
        letters = LettersCNN((1, 28, 28), 26)
        assert ev.chunk_size(letters, x) == ev.CHUNK_BUDGET["cpu"] // (32 * 28 * 28 * 4), (id(letters) == gone)
        del letters
        gc.collect()


@pytest.mark.parametrize("name", ["lenet", "genconv", "fedavg_cnn", "letters_cnn", "cifar_cnn"])
def test_forward_rows_is_each_models_own_forward(name):
    """models/grouped.py: R stacked models on their own batches in one call per layer give each model's own
    logits and features (the grouped engine's forward), for every CNN without batch norm or dropout; one with
    them says which layer it cannot run."""
    from torch.func import functional_call
    from conftest import make_cfg
    from fedcluster.assemble import make
    cfg = make_cfg([f"model={name}", "dataset=fashion_mnist"] + (["dataset=cifar10"] if name == "cifar_cnn" else []))
    shape = (3, 32, 32) if name == "cifar_cnn" else (1, 28, 28)
    build = lambda: make(cfg.model, in_shape=shape, num_outputs=10)   # noqa: E731
    model = build()
    assert model.rows_unsupported() is None
    R, B = 3, 4
    stack = init_stack(build, R, seed=5, device="cpu", dtype=torch.float32)
    x = torch.randn(R, B, *shape, generator=torch.Generator().manual_seed(1))
    out, feats = model.forward_rows(stack, x, with_features=True)
    for r in range(R):
        own, own_feats = functional_call(model, {k: v[r] for k, v in stack.items()}, (x[r],), {"with_features": True})
        torch.testing.assert_close(out[r], own, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(feats[r], own_feats, rtol=1e-5, atol=1e-5)
    bn = make(make_cfg(["model=bn_cnn", "dataset=cifar10"]).model, in_shape=(3, 32, 32), num_outputs=10)
    assert bn.rows_unsupported() == "BatchNorm2d"
