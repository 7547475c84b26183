"""Fed-CAM family on hand-made tensors: additive forward, eq. 6 and eq. 11 updates,
soft voting, plan concatenation."""
import math

import pytest
import torch

from fedcluster.algorithms import CAM, IFCA
from fedcluster.algorithms.base import RoundPlan, concat_plans, split_rows
from fedcluster.algorithms.fold import aggregate_at_once
from fedcluster.local_training.terms import Proximal
from fedcluster.algorithms.ensemble import soft_vote
from fedcluster.algorithms.fesem import fc_parameter_names
from fedcluster.algorithms.kmeans import kmeans_plus_plus, weighted_kmeans
from fedcluster.data.federated import ClientSplit
from fedcluster.models import LeNetCNN


def test_eq6_cluster_update_moves_by_share_of_all_data():
    centers = {"w": torch.tensor([[0.0, 0.0], [10.0, 10.0], [5.0, 5.0]])}
    trained = {"w": torch.tensor([[2.0, 4.0], [6.0, 8.0], [20.0, 20.0]])}
    groups = torch.tensor([0, 0, 1])          # cluster 2 got no client
    alg = IFCA(num_clusters=3, update="eq6")
    alg.centers, alg.assignment = centers, torch.cat([groups, torch.tensor([2])])   # client 3 did not train
    fed = type("Fed", (), {"sizes": torch.tensor([10.0, 30.0, 20.0, 40.0])})()   # n = 100 over all clients
    aggregate_at_once(alg.aggregation(0, RoundPlan(torch.tensor([0, 1, 2]), None), fed), trained)
    out = alg.centers
    # Theta_0 = (1 - 0.4) * 0 + 0.1 * [2, 4] + 0.3 * [6, 8]
    torch.testing.assert_close(out["w"][0], torch.tensor([0.2 + 1.8, 0.4 + 2.4]))
    # Theta_1 = 0.8 * 10 + 0.2 * 20
    torch.testing.assert_close(out["w"][1], torch.tensor([12.0, 12.0]))
    torch.testing.assert_close(out["w"][2], torch.tensor([5.0, 5.0]))


def test_eq11_weighted_kmeans_centroids_and_assignment():
    points = torch.tensor([[0.0, 0.0], [1.0, 0.0], [10.0, 10.0], [12.0, 10.0]])
    weights = torch.tensor([1.0, 3.0, 1.0, 1.0])
    assignment, centers = weighted_kmeans(points, weights, torch.tensor([[0.0, 1.0], [9.0, 9.0], [50.0, 50.0]]))
    assert assignment.tolist() == [0, 0, 1, 1]
    torch.testing.assert_close(centers[0], torch.tensor([0.75, 0.0], dtype=centers.dtype))   # (0*1 + 1*3) / 4
    torch.testing.assert_close(centers[1], torch.tensor([11.0, 10.0], dtype=centers.dtype))
    torch.testing.assert_close(centers[2], torch.tensor([50.0, 50.0], dtype=centers.dtype))  # empty keeps its center


def test_kmeans_plus_plus_picks_distinct_far_points():
    points = torch.tensor([[0.0], [0.1], [100.0], [100.1]])
    chosen = kmeans_plus_plus(points, 2, torch.Generator().manual_seed(0))
    assert abs(float(chosen[0] - chosen[1])) > 50


def test_fc_parameter_names_are_the_linear_layers():
    names = fc_parameter_names(LeNetCNN((1, 28, 28), 10))
    assert names == ["classifier.0.weight", "classifier.0.bias", "classifier.2.weight", "classifier.2.bias",
                     "classifier.4.weight", "classifier.4.bias"]


def test_soft_vote_averages_probabilities():
    a = torch.tensor([[2.0, 0.0]])
    b = torch.tensor([[0.0, 4.0]])
    probs = soft_vote([a, b]).exp()
    expected = (torch.softmax(a, -1) + torch.softmax(b, -1)) / 2
    torch.testing.assert_close(probs, expected)
    # hard majority would tie; soft voting follows the more confident member
    assert int(probs.argmax()) == 1


def test_concat_plans_block_diagonal_coefficients_and_split():
    p1 = RoundPlan(torch.tensor([0, 1]), {"w": torch.zeros(2, 3)},
                   [Proximal({"w": torch.ones(2, 3)}, torch.tensor([[1.0, 0.0], [0.0, 2.0]]))])
    p2 = RoundPlan(torch.tensor([1]), {"w": torch.ones(1, 3)})
    p3 = RoundPlan(torch.tensor([0]), {"w": 2 * torch.ones(1, 3)}, [Proximal({"w": 5 * torch.ones(1, 3)},
                                                                        torch.tensor([[3.0]]))])
    plan = concat_plans([p1, p2, p3])
    assert plan.clients.tolist() == [0, 1, 1, 0]
    assert plan.term(Proximal).coeffs.tolist() == [[1, 0, 0], [0, 2, 0], [0, 0, 0], [0, 0, 3]]
    parts = split_rows(plan.start, [2, 1, 1])
    assert [p["w"][:, 0].tolist() for p in plan.split(plan.start)] == [[0, 0], [1], [2]]
    assert [p["w"][:, 0].tolist() for p in parts] == [[0, 0], [1], [2]]


class _TinyFed:
    """What CAM touches, with a linear 'model' f(x; w) = x @ w for hand checks."""
    def __init__(self, x, n):
        self.model = torch.nn.Linear(2, 2, bias=False)
        self.batched_forward = False
        mask = torch.arange(x.shape[1])[None, :] < n[:, None]
        self.split = ClientSplit(x, torch.zeros(x.shape[:2], dtype=torch.long), torch.where(mask, 0, -1), n)


def test_cam_prediction_is_global_plus_assigned_cluster():
    """eq. (1): client i's logits = h(x; Theta_g) + f(x; Theta_c(i)), c(i) its assigned cluster
    (IFCA-CAM's scoring, conf/algorithm/ifca_cam.yaml)."""
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 0.0]]])
    fed = _TinyFed(x, torch.tensor([2, 1]))
    g = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    k0, k1 = torch.eye(2), -torch.eye(2)
    base = IFCA(num_clusters=2)
    base.centers = {"weight": torch.stack([k0, k1])}
    base.assignment = torch.tensor([1, 0])
    cam = CAM(base, warmup_rounds=0)
    cam.global_model = {"weight": g[None]}
    out = cam.predictors(fed, fed.split)["local"]
    lin = lambda w, v: v @ w.T
    torch.testing.assert_close(out[0], lin(g, x[0]) + lin(k1, x[0]))
    torch.testing.assert_close(out[1, :1], lin(g, x[1, :1]) + lin(k0, x[1, :1]))
    # during the FedAvg warm-up only the global model predicts
    cam.warmup_rounds = 5
    cam.serving = cam.phase(0)   # what round 0 trains, and so what serves, under a 5-round warm-up
    torch.testing.assert_close(cam.predictors(fed, fed.split)["local"][0], lin(g, x[0]))


def test_cam_serves_the_phase_of_the_last_round_planned_also_from_an_older_checkpoint():
    """Which predictor serves is state (`serving`), not a round counter: a checkpoint written before it
    (which kept `round`) restores the same phase."""
    cam = CAM(IFCA(num_clusters=2), warmup_rounds=3)
    assert cam.serving == "fedavg"
    for last_round, phase in [(2, "fedavg"), (3, "cam"), (7, "cam")]:
        cam.load_state_dict({"round": last_round, "base": {}})
        assert cam.serving == phase
    assert "round" not in cam.state and "serving" in cam.state


def test_a_plan_keeps_client_state_only_where_it_trains_and_only_with_plans_like_it():
    with pytest.raises(ValueError, match="gradient-only plan"):
        RoundPlan(torch.tensor([0]), {"w": torch.zeros(1, 2)}, local="gradient", keep_client_state=True)
    kept = RoundPlan(torch.tensor([0]), {"w": torch.zeros(1, 2)}, keep_client_state=True)
    fresh = RoundPlan(torch.tensor([1]), {"w": torch.zeros(1, 2)})
    with pytest.raises(ValueError, match="keep client state"):
        concat_plans([kept, fresh])
    assert concat_plans([kept, kept]).keep_client_state and not concat_plans([fresh, fresh]).keep_client_state


def test_cam_min_loss_assignment_sees_the_additive_model():
    """eq. (2): with a global model that already predicts class 0 strongly, the cluster model
    chosen is the one whose *sum* with it has the least loss, not the best model alone."""
    from fedcluster.algorithms.base import RunView
    from fedcluster.data.federated import FederatedData
    x = torch.ones(1, 4, 2)
    y = torch.zeros(1, 4, dtype=torch.long)       # class 0
    split = ClientSplit(x, y, torch.zeros(1, 4, dtype=torch.long), torch.tensor([4]))
    data = FederatedData("classification", 2, (2,), ["d"], split, split, [], torch.zeros(1, 0))
    model = torch.nn.Linear(2, 2, bias=False)
    fed = RunView(data, model, lambda: torch.nn.Linear(2, 2, bias=False), 0, torch.device("cpu"), torch.float32)
    centers = {"weight": torch.stack([torch.tensor([[0.0, 0.0], [3.0, 3.0]]),     # alone: favours class 1
                                      torch.tensor([[-5.0, -5.0], [5.0, 5.0]])])}  # alone: strongly class 1
    alone = fed.mean_train_losses(centers)
    offset = torch.zeros(1, 4, 2)
    offset[..., 0] = 30.0                          # h predicts class 0 with margin 30
    both = fed.with_offsets(offset).mean_train_losses(centers)
    assert alone.argmin(1).tolist() == [0]
    expected = [math.log1p(math.exp(6.0 - 30.0)), math.log1p(math.exp(20.0 - 30.0))]
    torch.testing.assert_close(both[0].double(), torch.tensor(expected, dtype=torch.float64), rtol=1e-4, atol=1e-6)
    assert both.argmin(1).tolist() == [0]
