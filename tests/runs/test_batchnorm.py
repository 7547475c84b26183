"""Batch norm and dropout: per-client running statistics, eval mode, sequential fallback."""
import copy

import pandas as pd
import pytest
import torch

from fedcluster.local_training.forward import outputs_on_shared
from fedcluster.local_training.local import LocalJob, LocalTrainer
from fedcluster.local_training.schedule import Schedule
from fedcluster.local_training.optim import build_optimizer
from fedcluster.models import BatchNormCNN
from fedcluster.models.stacked import init_stack
from fedcluster.assemble import choose_engine
from fedcluster.runner import run

from conftest import make_cfg
from fakedata import write_cifar10


def test_each_row_keeps_its_own_running_statistics_and_matches_plain_torch():
    torch.manual_seed(0)
    build = lambda: BatchNormCNN((3, 8, 8), 4, channels=(4, 8), hidden=16, dropout=0.0)
    stack = init_stack(build, 2, seed=1, device="cpu", dtype=torch.float32)
    assert any("running_mean" in k for k in stack)
    x = torch.randn(2, 12, 3, 8, 8)
    x[1] = x[1] * 3 + 2                                          # client 1's data: other statistics
    y = torch.randint(0, 4, (2, 12))
    model = build()
    opt = build_optimizer("sgd", lr=0.05, momentum=0.0, weight_decay=0.0)
    trainer = LocalTrainer(model, "classification", opt, epochs=1, batch_size=6)
    index = torch.arange(12).view(1, 2, 6).expand(2, -1, -1).clone()
    job = LocalJob(x, y, torch.arange(2), stack, trainer.init_state(stack),
                   Schedule(index, torch.ones_like(index, dtype=torch.bool)))
    out = trainer.train(job, "sequential").params
    key = next(k for k in out if k.endswith("running_mean"))
    assert not torch.allclose(out[key][0], out[key][1])          # per-row statistics

    for m in range(2):                                           # the same steps in plain torch
        ref = build()
        ref.load_state_dict({k: v[m] for k, v in stack.items()}, strict=False)
        sgd = torch.optim.SGD(ref.parameters(), lr=0.05)
        for s in range(2):
            sgd.zero_grad()
            torch.nn.functional.cross_entropy(ref(x[m, index[m, s]]), y[m, index[m, s]]).backward()
            sgd.step()
        state = dict(ref.named_parameters()) | dict(ref.named_buffers())
        for k in out:
            assert torch.allclose(out[k][m], state[k].detach(), atol=1e-5), k
        ref.eval()                                               # evaluation uses the row's statistics
        expected = ref(x[m])
        got = outputs_on_shared(model, {k: v[m: m + 1] for k, v in out.items()}, x[m])[0]
        assert torch.allclose(got, expected, atol=1e-5)
    assert model.training                                        # the shared module is back in train mode


def test_batched_request_falls_back_to_sequential_with_a_notice(capsys):
    model = BatchNormCNN((3, 8, 8), 4, channels=(4, 8), hidden=16)
    assert choose_engine("batched", model, torch.device("cpu")) == "sequential"
    assert "sequential engine" in capsys.readouterr().err
    assert choose_engine("auto", model, torch.device("cuda")) == "sequential"


def test_bn_model_runs_clove_end_to_end_and_engines_agree(tmp_path):
    write_cifar10(tmp_path / "data", per_batch=200, n_test=200)
    common = ["dataset=cifar10", f"dataset.root={tmp_path / 'data'}", "dataset.distributions=[{rotation:0}]",
              "model=bn_cnn", "partition=label_skew2", "partition.num_clients=4", "partition.default_clusters=2",
              "partition.samples_per_client=30", "partition.test_samples_per_client=10", "algorithm=clove",
              "train.optimizer=adam", "train.lr=0.001", "train.epochs=1", "train.batch_size=20", "rounds=2",
              "progress=false", "plots=false", "checkpoint_every=0"]
    a = run(make_cfg(common + ["engine=batched"]), tmp_path / "a")
    b = run(make_cfg(common + ["engine=sequential"]), tmp_path / "b")
    assert a["engine"] == b["engine"] == "sequential"
    assert a["local"] == b["local"] and a["ari_by_round"] == b["ari_by_round"]   # dropout masks are seeded
