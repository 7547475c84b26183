"""FedProto: prototype computation and aggregation, nearest-prototype prediction and the
prototype pull on hand-made inputs; a short run; the two engines agreeing."""
import numpy as np
import pandas as pd
import pytest
import torch

from conftest import ENGINE_CHECK, IMAGE_SKEW, make_cfg
from fedcluster.algorithms.fedproto import aggregate_prototypes, class_means, nearest_prototype_logits
from fedcluster.local_training.terms import PrototypePull
from fedcluster.runner import run


def test_class_means_and_counts():
    feats = torch.tensor([[1.0, 0.0], [3.0, 2.0], [0.0, 5.0]])
    protos, counts = class_means(feats, torch.tensor([0, 0, 2]), 3)
    np.testing.assert_allclose(protos.numpy(), [[2, 1], [0, 0], [0, 5]])
    assert counts.tolist() == [2, 0, 1]


def test_prototypes_average_over_the_clients_that_have_the_class():
    local = torch.tensor([[[1.0, 1.0], [2.0, 0.0], [0.0, 0.0]],      # client 0: classes 0, 1
                          [[0.0, 0.0], [4.0, 2.0], [6.0, 6.0]]])     # client 1: classes 1, 2
    counts = torch.tensor([[5, 1, 0], [0, 3, 2]])
    protos, have = aggregate_prototypes(local, counts, "clients")
    np.testing.assert_allclose(protos.numpy(), [[1, 1], [3, 1], [6, 6]])
    assert have.tolist() == [True, True, True]
    weighted, _ = aggregate_prototypes(local, counts, "samples")
    np.testing.assert_allclose(weighted[1].numpy(), [(2 * 1 + 4 * 3) / 4, (0 * 1 + 2 * 3) / 4])
    _, some = aggregate_prototypes(local[:1], counts[:1])
    assert some.tolist() == [True, True, False]


def test_prediction_is_the_nearest_prototype_and_never_a_missing_class():
    protos = torch.tensor([[0.0, 0.0], [10.0, 0.0], [1.0, 1.0]])
    have = torch.tensor([True, True, False])
    feats = torch.tensor([[0.9, 0.9], [7.0, 0.0], [-1.0, 0.0]])
    logits = nearest_prototype_logits(feats, protos, have)
    assert logits.argmax(-1).tolist() == [0, 1, 0]          # [0.9, 0.9] is nearest to class 2's, which is absent
    np.testing.assert_allclose(logits[1, :2].numpy(), [-49.0, -9.0])


def test_prototype_pull_by_hand():
    protos = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    term = PrototypePull(protos, torch.tensor([True, False]), torch.tensor([[0.5]]))
    feats = torch.tensor([[2.0, 1.0], [5.0, 5.0], [1.0, 0.0]])
    y, valid = torch.tensor([0, 1, 0]), torch.tensor([1.0, 1.0, 0.0])        # the third sample is padding
    # sample 0: ||(1, 1)||^2 = 2; sample 1: class without a prototype, 0; mean over 2 samples x 2 dims
    assert float(term.feature_penalty(feats, y, valid, term.data[0])) == pytest.approx(0.5 * 2 / 4)


IMAGES = IMAGE_SKEW + ["algorithm=fedproto"]


def test_fedproto_learns_a_label_skew(tmp_path, fmnist_root):
    s = run(make_cfg(IMAGES + [f"dataset.root={fmnist_root}"]), tmp_path)
    assert s["local"]["local_test_accuracy"] > 0.6


def test_batched_and_sequential_engines_agree(tmp_path, fmnist_root):
    common = IMAGES + ENGINE_CHECK + [f"dataset.root={fmnist_root}", "rounds=2"]
    run(make_cfg(common + ["engine=sequential"]), tmp_path / "s")
    b = pd.read_csv(tmp_path / "s" / "metrics.csv")
    for engine in ("batched", "grouped"):   # grouped: the features come from forward_rows
        run(make_cfg(common + [f"engine={engine}"]), tmp_path / engine)
        a = pd.read_csv(tmp_path / engine / "metrics.csv")
        pd.testing.assert_frame_equal(a.drop(columns=["value", "run_id"]), b.drop(columns=["value", "run_id"]))
        np.testing.assert_allclose(a["value"], b["value"], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("batched", [False, True])
def test_paired_features_are_each_clients_own_forward(batched):
    """round_features and FedProto's prediction read features from one paired pass
    (outputs_paired(..., features=True)); it must give, for each listed client, exactly its own
    model's features of its own real samples (and, looped, zeros at padding)."""
    from torch.func import functional_call
    from fedcluster.local_training.forward import outputs_paired
    from fedcluster.models.cnn import LeNetCNN
    torch.manual_seed(0)
    model = LeNetCNN((1, 28, 28), 10)
    models = [LeNetCNN((1, 28, 28), 10) for _ in range(3)]
    params = {k: torch.stack([dict(m.named_parameters())[k].detach() for m in models]) for k, _ in model.named_parameters()}
    x = torch.randn(5, 7, 1, 28, 28)
    n = torch.tensor([7, 0, 3, 5, 1])
    rows = torch.tensor([4, 0, 2])                      # params row j serves client rows[j]
    feats = outputs_paired(model, params, x, n, batched, rows=rows, features=True)
    for j, k in enumerate(rows.tolist()):
        want = functional_call(model, {name: v[j] for name, v in params.items()}, (x[k, :n[k]],),
                               {"with_features": True})[1]
        torch.testing.assert_close(feats[j, :n[k]], want.detach(), rtol=1e-5, atol=1e-5)
        if not batched:
            assert feats[j, n[k]:].abs().sum() == 0
    logits = outputs_paired(model, params, x, n, batched, rows=rows)
    assert logits.shape[-1] == 10 and feats.shape[-1] != 10
