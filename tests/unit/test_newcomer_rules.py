"""Each clustered method's rule for a client that joins after training, in numbers (tests/runs/test_unseen_clients.py runs
every rule through the CLI's run): CFL's parameter tree, FlexCFL's cold start, FeSEM's E-step on a locally trained
model, PACFL's principal angles, FedEM's mixture weights alone, and IFCA-CAM's pick by the additive model's loss."""
import math
from types import SimpleNamespace

import numpy as np
import torch

from fedcluster.algorithms import CAM, CFL, FedEM, FeSEM, FlexCFL, IFCA, PACFL
from fedcluster.algorithms.base import RunView
from fedcluster.algorithms.cfl import split_node
from fedcluster.data.federated import ClientSplit, FederatedData


def moving_by(steps):
    """A newcomers' view whose local training moves each row of a plan by `steps(plan)` ([M, ...] per parameter),
    keeping the plans it was given."""
    seen = []

    def train(plan):
        seen.append(plan)
        return {k: v + steps(plan)[k] for k, v in plan.start.items()}
    return SimpleNamespace(num_clients=3, device=torch.device("cpu"), train=train, plans=seen)


def test_cfl_walks_its_parameter_tree_toward_the_half_with_the_more_similar_updates():
    """Root cluster 0 split into 0 (updates along +x) and 1 (+y); cluster 1 later split into 1 (+x) and 2 (-x).
    A newcomer moving along +y from the root's model and along -x from cluster 1's reaches cluster 2; one along +x
    stays in 0; at each split it trains from the model the cluster had then."""
    alg = CFL()
    alg.centers = {"w": torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 1.0]])}
    alg.assignment = torch.tensor([0, 1, 2])
    root, later = {"w": torch.zeros(1, 2)}, {"w": torch.tensor([[9.0, 9.0], [0.0, 0.5]])}   # at the second split
    alg.tree = [split_node(0, 1, root, torch.tensor([[1.0, 0.1], [2.0, 0.0], [0.0, 3.0], [0.1, 1.0]]),
                           np.array([0, 0, 1, 1])),
                split_node(1, 2, later, torch.tensor([[1.0, 0.0], [-2.0, 0.1]]), np.array([0, 1]))]
    assert torch.equal(alg.tree[1]["model"]["w"], torch.tensor([0.0, 0.5]))
    # newcomer 0: +x at the root; 1: +y at the root, then -x at cluster 1; 2: +y, then +x
    at_root = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    at_cluster_1 = torch.tensor([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0]])

    def steps(plan):
        table = at_root if torch.equal(plan.start["w"][0], torch.zeros(2)) else at_cluster_1
        return {"w": table[plan.clients]}
    newcomers = moving_by(steps)
    picked = alg.newcomer_models(None, newcomers)
    assert picked["w"].tolist() == [[1.0, 0.0], [-1.0, 1.0], [0.0, 1.0]]
    assert newcomers.plans[0].clients.tolist() == [0, 1, 2] and newcomers.plans[1].clients.tolist() == [1, 2]
    assert torch.equal(newcomers.plans[1].start["w"], torch.tensor([[0.0, 0.5], [0.0, 0.5]]))


def test_flexcfl_cold_starts_a_newcomer_from_w0_into_the_group_of_the_nearest_update_direction():
    alg = FlexCFL(num_clusters=2)
    alg.initial = {"w": torch.tensor([[1.0, 1.0]])}
    alg.centers = {"w": torch.tensor([[10.0, 0.0], [0.0, 10.0]])}
    alg.assignment = torch.tensor([0, 1])
    alg.opt_updates = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    newcomers = moving_by(lambda plan: {"w": torch.tensor([[0.0, 2.0], [3.0, 0.1], [-1.0, 5.0]])})
    picked = alg.newcomer_models(None, newcomers)
    assert picked["w"].tolist() == [[0.0, 10.0], [10.0, 0.0], [0.0, 10.0]]
    assert torch.equal(newcomers.plans[0].start["w"], torch.ones(3, 2))   # every newcomer from w0


def test_fesem_trains_a_newcomer_from_the_centers_weighted_mean_and_takes_the_nearest_center():
    alg = FeSEM(num_clusters=2)
    alg.centers = {"w": torch.tensor([[0.0, 0.0], [4.0, 4.0]])}
    alg.assignment = torch.tensor([0, 1, 1])
    alg._keys = None
    fed = SimpleNamespace(sizes=torch.tensor([10, 5, 5]), device=torch.device("cpu"))
    newcomers = moving_by(lambda plan: {"w": torch.tensor([[-1.5, -1.5], [1.5, 1.5], [0.1, 0.0]])})
    picked = alg.newcomer_models(fed, newcomers)
    assert torch.equal(newcomers.plans[0].start["w"], torch.full((3, 2), 2.0))   # (10 * 0 + 10 * 4) / 20
    assert picked["w"].tolist() == [[0.0, 0.0], [4.0, 4.0], [4.0, 4.0]]


def _tiny_federation(x, y, classes=2):
    n = torch.full((x.shape[0],), x.shape[1])
    split = ClientSplit(x, y, torch.zeros_like(y), n)
    data = FederatedData("classification", classes, tuple(x.shape[2:]), ["d"], split, split, [],
                         torch.zeros(x.shape[0], 0))
    model = torch.nn.Linear(x.shape[2], classes, bias=False)
    return RunView(data, model, lambda: torch.nn.Linear(x.shape[2], classes, bias=False), 0, torch.device("cpu"),
                      torch.float32)


def test_pacfl_places_a_newcomer_in_the_cluster_whose_clients_span_its_data_subspace():
    g = torch.Generator().manual_seed(0)
    a, b = torch.eye(4)[:2], torch.eye(4)[2:]                  # two 2-d subspaces of R^4

    def client(basis, m=12):
        return torch.randn(m, 2, generator=g) @ basis

    x = torch.stack([client(a), client(a), client(b), client(b)])
    seen = _tiny_federation(x, torch.zeros(4, 12, dtype=torch.long))
    new = _tiny_federation(torch.stack([client(b), client(a)]), torch.zeros(2, 12, dtype=torch.long))
    for linkage in ("average", "complete", "single"):
        alg = PACFL(num_clusters=2, n_basis=2, linkage=linkage)
        alg.setup(seen)
        assert alg.assignment.tolist() in ([0, 0, 1, 1], [1, 1, 0, 0])
        picked = alg.newcomer_models(seen, new)["weight"]
        want = [int(alg.assignment[2]), int(alg.assignment[0])]
        assert torch.equal(picked, alg.centers["weight"][want]), linkage


def test_fedem_learns_only_a_newcomers_mixture_weights_from_its_training_data():
    """Component 0 fits class 0 and component 1 class 1: a newcomer holding class-1 samples only gets pi near
    (0, 1), so its mixture predicts as component 1; the components stay as trained."""
    x = torch.ones(2, 6, 2)
    y = torch.tensor([[1] * 6, [0] * 6])
    fed = _tiny_federation(x, y)
    alg = FedEM(num_clusters=2)
    alg.components = {"weight": torch.tensor([[[3.0, 3.0], [-3.0, -3.0]], [[-3.0, -3.0], [3.0, 3.0]]])}
    alg.pi = torch.full((2, 2), 0.5)
    before = alg.components["weight"].clone()
    out = alg.newcomer_predictors(fed, fed, fed.data.local_test)
    probs = out["local"].exp()[:, 0]                              # [newcomer, class]
    assert probs[0, 1] > 0.99 and probs[1, 0] > 0.99
    top = out["local:top_component"].argmax(-1)[:, 0]
    assert top.tolist() == [1, 0] and torch.equal(alg.components["weight"], before)


def test_ifca_cam_picks_a_newcomers_cluster_model_by_the_additive_models_loss_and_scores_h_plus_f():
    """eq. 2 for a newcomer, 3 classes, its samples of class 0: h rules out class 1, so model A (which puts its
    weight on class 1) is harmless beside h and fits best, where alone model B fits best. Scored as h + f (eq. 1)."""
    x = torch.tensor([[[1.0, 0.0]] * 4])
    fed = _tiny_federation(x, torch.zeros(1, 4, dtype=torch.long), classes=3)
    column = lambda *v: torch.tensor([[v[0], 0.0], [v[1], 0.0], [v[2], 0.0]])   # noqa: E731  (logits = v for x)
    base = IFCA(num_clusters=2)
    base.centers = {"weight": torch.stack([column(0.0, 5.0, 0.0), column(1.0, 0.0, 2.0)])}   # A, B
    cam = CAM(base, warmup_rounds=0)
    cam.global_model = {"weight": column(0.0, -100.0, 0.0)[None]}
    out = cam.newcomer_predictors(fed, fed, fed.data.local_test)["local"][0, 0]
    assert torch.allclose(out, torch.tensor([0.0, -95.0, 0.0]))   # h + f_A
    assert math.isclose(float(torch.nn.functional.cross_entropy(out[None], torch.tensor([0]))), math.log(2), rel_tol=1e-5)
    alone = base.newcomer_models(fed, fed)["weight"]
    assert torch.equal(alone[0], base.centers["weight"][1])       # IFCA's own rule, without h: model B
