import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score

from fedcluster.errors import NonFiniteLossError
from fedcluster.metrics import ari, classification_metrics, hungarian_match
from fedcluster.runner import run

from conftest import SMALL, make_cfg


def test_macro_f1_matches_sklearn_per_model():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 40, 5, generator=g)
    y = torch.randint(0, 4, (3, 40), generator=g)
    mask = torch.ones(3, 40, dtype=torch.bool)
    mask[1, 25:] = False
    m = classification_metrics(logits, y, mask, 5)
    for i in range(3):
        keep = mask[i].numpy()
        pred = logits[i].argmax(-1).numpy()[keep]
        assert m["macro_f1"][i].item() == pytest.approx(f1_score(y[i].numpy()[keep], pred, average="macro"))
        assert m["accuracy"][i].item() == pytest.approx((pred == y[i].numpy()[keep]).mean())


def test_hungarian_matching_on_loss_matrix():
    cost = np.array([[5.0, 1.0], [2.0, 9.0]])        # [centers, distributions]
    assert hungarian_match(cost).tolist() == [1, 0]
    assert hungarian_match(np.array([[1.0, 2.0, 3.0]])).tolist() == [0, -1, -1]


def test_ari_invariant_to_labels():
    assert ari([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0
    assert ari([0, 0, 1, 1], [0, 1, 0, 1]) < 0


def test_nan_loss_stops_with_round_and_client(tmp_path):
    with pytest.raises(NonFiniteLossError, match=r"round 1: .*client \d+"):
        run(make_cfg(SMALL + ["algorithm=fedavg", "train.optimizer=sgd", "train.lr=1e6"]), tmp_path)
    assert not (tmp_path / "metrics.csv").exists()


def test_reconstruction_mse_is_the_mean_per_sample_pixel_error():
    from fedcluster.metrics import model_metrics
    x = torch.zeros(1, 3, 2, 2)
    out = torch.zeros(1, 3, 2, 2)
    out[0, 0] = 1.0            # sample 0: every pixel off by 1 -> MSE 1
    out[0, 1, 0, 0] = 2.0      # sample 1: one of 4 pixels off by 2 -> MSE 1
    out[0, 2] = 5.0            # sample 2: padding, ignored
    mask = torch.tensor([[True, True, False]])
    assert model_metrics("reconstruction", out, x, mask, 0)["mse"].tolist() == [1.0]
    from fedcluster.local_training.losses import per_sample_loss
    assert per_sample_loss("reconstruction", out[0], x[0]).tolist() == [1.0, 1.0, 25.0]


def test_ari_equals_sklearns_to_the_last_bit():
    """Our ARI (pair counts in exact integers) against sklearn.metrics.adjusted_rand_score: the same float, over
    random labelings of every size the runs see (and special cases: one cluster, full agreement, one sample,
    none, labels that are not 0..K-1)."""
    from sklearn.metrics import adjusted_rand_score
    g = np.random.default_rng(0)
    cases = [([0] * 5, [0] * 5), ([0, 0, 1, 1], [1, 1, 0, 0]), ([0, 1, 2], [0, 0, 0]), ([3], [7]), ([], []),
             ([5, 5, 9, 2], [-1, 4, 4, 4]), (np.array(["a", "b", "a"]), np.array([1, 2, 2]))]
    for _ in range(300):
        n = int(g.integers(2, 400))
        cases.append((g.integers(0, g.integers(1, 12), n), g.integers(0, g.integers(1, 12), n)))
    for truth, assigned in cases:
        ours = ari(truth, assigned)
        assert type(ours) is float and ours == float(adjusted_rand_score(truth, assigned)), (truth, assigned)
    with pytest.raises(ValueError, match="labelings of 3 and 2 samples"):
        ari([0, 1, 1], [0, 1])
