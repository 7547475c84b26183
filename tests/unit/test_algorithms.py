"""Each algorithm's decisions on hand-made inputs."""
import pytest
import torch

from fedcluster.algorithms.fold import aggregate_at_once
from fedcluster.algorithms import IFCA, FedAvg, FedProx, FedSoft
from fedcluster.algorithms.base import RoundPlan
from fedcluster.algorithms.run_view import RunView
from fedcluster.local_training.terms import Proximal
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
    """Just enough of a RunView for aggregation rules (its mean fold is the RunView's own, without privacy)."""
    private = False
    mean_fold = RunView.mean_fold

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
    aggregate_at_once(alg.aggregation(0, RoundPlan(torch.tensor([0, 1, 3]), None), _Fed([10, 20, 30, 40])), trained)
    assert torch.equal(alg.local["w"][2], torch.zeros(3))          # not selected: unchanged
    assert torch.allclose(alg.centers["w"][0], torch.full((3,), 2.0))   # mean of clients 0, 1
    assert torch.allclose(alg.centers["w"][1], torch.full((3,), 4.0))   # mean of clients 1, 3


def test_ifca_aggregates_by_assignment_weighted_by_size_and_keeps_empty_clusters():
    alg = IFCA(num_clusters=3)
    alg.centers = {"w": torch.tensor([[0.0], [0.0], [7.0]])}
    alg.assignment = torch.tensor([0, 1, 0])
    trained = {"w": torch.tensor([[1.0], [2.0], [4.0]])}
    aggregate_at_once(alg.aggregation(0, RoundPlan(torch.tensor([0, 1, 2]), None), _Fed([10, 20, 30])), trained)
    assert torch.allclose(alg.centers["w"][:, 0], torch.tensor([(10 * 1 + 30 * 4) / 40, 2.0, 7.0]))


def test_ifca_assigns_min_mean_loss():
    class Fed(_Fed):
        def mean_train_losses(self, models):
            return torch.tensor([[3.0, 1.0], [0.5, 2.0]])
        def sample_clients(self, fraction, t, dropout=0.0):
            return torch.arange(2)
    alg = IFCA(num_clusters=2)
    alg.centers = {"w": torch.tensor([[10.0], [20.0]])}
    plan = alg.plan(0, Fed([5, 5]))
    assert alg.assignment.tolist() == [1, 0]
    assert plan.start["w"][:, 0].tolist() == [20.0, 10.0]


def test_fedavg_weighted_average_and_fedprox_coefficients():
    alg = FedAvg()
    alg.global_model = {"w": torch.zeros(1, 2)}   # as setup leaves it: the model the round's clients trained from
    trained = {"w": torch.tensor([[1.0, 0.0], [4.0, 3.0]])}
    aggregate_at_once(alg.aggregation(0, RoundPlan(torch.tensor([0, 1]), None), _Fed([1, 2])), trained)
    assert torch.allclose(alg.global_model["w"], torch.tensor([[3.0, 2.0]]))

    prox = FedProx(mu=0.5)
    prox.global_model = {"w": torch.zeros(1, 2)}
    class Fed(_Fed):
        def sample_clients(self, fraction, t, dropout=0.0):
            return torch.arange(3)
    plan = prox.plan(0, Fed([1, 1, 1]))
    assert plan.term(Proximal).coeffs.shape == (3, 1) and torch.all(plan.term(Proximal).coeffs == 0.5)
    assert plan.term(Proximal).refs is prox.global_model


def _two_line_federation():
    """Two clients of y = x @ w; client 0 follows w_1, client 1 follows w_0; both were assigned
    model 0 from their training losses."""
    from types import SimpleNamespace
    from fedcluster.models import LinearRegression
    torch.manual_seed(0)
    w = torch.tensor([[1.0, 0.0], [-1.0, 2.0]])
    x = torch.randn(2, 5, 2)
    y = torch.stack([x[0] @ w[1], x[1] @ w[0]])
    n = torch.tensor([5, 3])
    mask = torch.arange(5)[None, :] < n[:, None]
    split = SimpleNamespace(x=x, y=y, n=n, mask=mask)
    fed = SimpleNamespace(model=LinearRegression((2,)), data=SimpleNamespace(task="regression"), batched_forward=False)
    return w, split, fed


@pytest.mark.parametrize("batched", [True, False])
def test_ifca_scores_the_trained_model_and_reports_the_label_pick_apart(batched):
    """A client is scored with the model it trained (its training assignment), whatever the
    scored labels say; IFCA's code's rule (jichan3751/ifca, get_inference_stats: the model of
    smallest loss on the data being scored) is only the labelled `local:label_pick` predictor."""
    w, split, fed = _two_line_federation()
    fed.batched_forward = batched
    for report in (False, True):
        alg = IFCA(num_clusters=2, report_label_pick=report)
        alg.centers = {"linear.weight": w.unsqueeze(1).clone()}
        alg.assignment = torch.tensor([0, 0])
        predictors = alg.predictors(fed, split)
        assert sorted(predictors) == (["local", "local:label_pick"] if report else ["local"])
        for k in range(2):   # "local": the trained model 0 for both clients
            assert torch.allclose(predictors["local"][k, :split.n[k]], split.x[k, :split.n[k]] @ w[0], atol=1e-5)
        if report:            # the label pick: client 0's data follow line 1, client 1's line 0
            for k, m in enumerate([1, 0]):
                assert torch.allclose(predictors["local:label_pick"][k, :split.n[k]],
                                      split.x[k, :split.n[k]] @ w[m], atol=1e-5), (k, m)
        assert alg.assignment.tolist() == [0, 0]   # the training assignment (and ARI) is untouched


def test_ifca_under_cam_label_pick_is_by_the_additive_models_loss():
    """With partner logits h, the label pick minimises the loss of h + f_k, not of f_k alone."""
    w, split, fed = _two_line_federation()
    alg = IFCA(num_clusters=2, report_label_pick=True)
    alg.centers = {"linear.weight": w.unsqueeze(1).clone()}
    alg.assignment = torch.tensor([0, 0])
    partner = torch.stack([split.x[0] @ (w[1] - w[0]), torch.zeros(5)])   # client 0: h + f_0 fits exactly
    assert alg.models_on(fed, split, partner).tolist() == [0, 0]
    assert alg.models_on(fed, split).tolist() == [1, 0]
    out = alg.predictors(fed, split, partner)["local:label_pick"]
    assert torch.allclose(out[0, :5], split.x[0] @ w[0], atol=1e-5)


def test_a_proximal_pull_to_one_reference_per_row_reads_only_that_reference():
    """Block-diagonal coefficients (plans trained together, FeSEM, FedProx) take the one-
    reference path, and its value and gradient are the dense formula's to the bit; a row
    pulled to several references (FedSoft) keeps the dense path."""
    from torch.func import grad, vmap
    g = torch.Generator().manual_seed(0)
    refs = {"w": torch.randn(4, 50, 3, generator=g), "b": torch.randn(4, 7, generator=g)}
    params = {"w": torch.randn(5, 50, 3, generator=g), "b": torch.randn(5, 7, generator=g)}
    coeffs = torch.zeros(5, 4)
    coeffs[0, 1], coeffs[1, 1], coeffs[2, 3], coeffs[3, 0] = 0.3, 0.7, 0.01, 2.0     # row 4: no pull
    term = Proximal(refs, coeffs)
    assert term.one_each

    def dense(p, d):
        sq = sum(((p[k].unsqueeze(0) - refs[k]) ** 2).flatten(1).sum(1) for k in p)
        return 0.5 * (d * sq).sum()

    got_value, want_value = vmap(term.penalty)(params, coeffs), vmap(dense)(params, coeffs)
    assert torch.equal(got_value, want_value) and got_value[4] == 0
    got_grad, want_grad = vmap(grad(term.penalty))(params, coeffs), vmap(grad(dense))(params, coeffs)
    assert all(torch.equal(got_grad[k], want_grad[k]) for k in params)
    coeffs[0, 2] = 0.1
    assert not Proximal(refs, coeffs).one_each
