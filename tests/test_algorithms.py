"""Each algorithm's decisions on hand-made inputs."""
import torch

from fedcluster.algorithms import IFCA, FedAvg, FedProx, FedSoft
from fedcluster.algorithms.base import RoundPlan
from fedcluster.algorithms.fedsoft import importance_weights, selection_probabilities

INF = float("inf")


def test_importance_weights_count_argmin_per_sample_with_smoother():
    # 2 centers, 2 clients; client 0 has 4 samples, client 1 has 2 (+2 padding).
    losses = torch.tensor([
        [[1.0, 5.0, 1.0, 1.0], [9.0, 9.0, INF, INF]],   # center 0
        [[2.0, 1.0, 2.0, 2.0], [1.0, 1.0, INF, INF]],   # center 1
    ])
    u = importance_weights(losses, torch.tensor([4, 2]), smoother=1e-4)
    assert torch.allclose(u, torch.tensor([[0.75, 0.25], [1e-4, 1.0]], dtype=torch.float64))


def test_selection_probabilities_eq6():
    u = torch.tensor([[0.9, 0.1], [0.2, 0.8]], dtype=torch.float64)
    n = torch.tensor([100, 200])
    v = selection_probabilities(u, n)
    assert torch.allclose(v[:, 0], torch.tensor([90 / 130, 40 / 130], dtype=torch.float64))
    assert torch.allclose(v[:, 1], torch.tensor([10 / 170, 160 / 170], dtype=torch.float64))


class _Fed:
    """Just enough of a Federation for aggregation rules."""
    def __init__(self, sizes):
        self.sizes = torch.tensor(sizes)
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.num_clients = len(sizes)


def test_fedsoft_centers_are_plain_means_over_each_selection():
    alg = FedSoft(num_clusters=2, selection_size=2)
    alg.local = {"w": torch.zeros(4, 3)}
    alg.selection = torch.tensor([[0, 1], [1, 3]])
    trained = {"w": torch.tensor([[1.0, 1, 1], [3, 3, 3], [5, 5, 5]])}
    alg.aggregate(0, RoundPlan(torch.tensor([0, 1, 3]), None), trained, _Fed([10, 20, 30, 40]))
    assert torch.equal(alg.local["w"][2], torch.zeros(3))          # not selected: unchanged
    assert torch.allclose(alg.centers["w"][0], torch.full((3,), 2.0))   # mean of clients 0, 1
    assert torch.allclose(alg.centers["w"][1], torch.full((3,), 4.0))   # mean of clients 1, 3


def test_ifca_aggregates_by_assignment_weighted_by_size_and_keeps_empty_clusters():
    alg = IFCA(num_clusters=3)
    alg.centers = {"w": torch.tensor([[0.0], [0.0], [7.0]])}
    alg.assignment = torch.tensor([0, 1, 0])
    trained = {"w": torch.tensor([[1.0], [2.0], [4.0]])}
    alg.aggregate(0, RoundPlan(torch.tensor([0, 1, 2]), None), trained, _Fed([10, 20, 30]))
    assert torch.allclose(alg.centers["w"][:, 0], torch.tensor([(10 * 1 + 30 * 4) / 40, 2.0, 7.0]))


def test_ifca_assigns_min_mean_loss():
    class Fed(_Fed):
        def mean_train_losses(self, models):
            return torch.tensor([[3.0, 1.0], [0.5, 2.0]])
        def sample_clients(self, fraction, t):
            return torch.arange(2)
    alg = IFCA(num_clusters=2)
    alg.centers = {"w": torch.tensor([[10.0], [20.0]])}
    plan = alg.plan(0, Fed([5, 5]))
    assert alg.assignment.tolist() == [1, 0]
    assert plan.start["w"][:, 0].tolist() == [20.0, 10.0]


def test_fedavg_weighted_average_and_fedprox_coefficients():
    alg = FedAvg()
    trained = {"w": torch.tensor([[1.0, 0.0], [4.0, 3.0]])}
    alg.aggregate(0, RoundPlan(torch.tensor([0, 1]), None), trained, _Fed([1, 2]))
    assert torch.allclose(alg.global_model["w"], torch.tensor([[3.0, 2.0]]))

    prox = FedProx(mu=0.5)
    prox.global_model = {"w": torch.zeros(1, 2)}
    class Fed(_Fed):
        def sample_clients(self, fraction, t):
            return torch.arange(3)
    plan = prox.plan(0, Fed([1, 1, 1]))
    assert plan.coeffs.shape == (3, 1) and torch.all(plan.coeffs == 0.5)
    assert plan.refs is prox.global_model
