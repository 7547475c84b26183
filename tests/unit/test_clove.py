"""CLoVE's clustering and matching steps, CFL's split rule, ARI convergence metrics."""
import numpy as np
import pytest
import torch

from fedcluster.algorithms.run_view import RunView
from fedcluster.algorithms.fold import aggregate_at_once
from fedcluster.algorithms.cfl import bipartition, flat_updates, split_criterion
from fedcluster.algorithms.clove import cluster_vectors, match_groups_to_models
from fedcluster.evaluation import convergence
from fedcluster.metrics import ari


def test_matching_minimises_summed_group_losses():
    # 6 clients in 3 groups; the greedy per-group argmin would send groups 0 and 1 both to model 0.
    losses = np.array([[1.0, 2.0, 9.0], [1.0, 2.0, 9.0],       # group 0: model 0 best, model 1 close
                       [0.5, 5.0, 9.0], [0.5, 5.0, 9.0],       # group 1: model 0 much better than the rest
                       [9.0, 9.0, 1.0], [9.0, 9.0, 1.0]])      # group 2: model 2
    groups = np.array([2, 2, 0, 0, 1, 1])                      # arbitrary group labels
    model_of_group = match_groups_to_models(groups, losses)
    assert model_of_group[2] == 1 and model_of_group[0] == 0 and model_of_group[1] == 2
    # total cost 2+2 + 0.5+0.5 + 1+1 = 7 beats the alternative 1+1 + 5+5 + 1+1 = 14
    assert sorted(model_of_group.tolist()) == [0, 1, 2]


def test_no_matching_orders_groups_by_smallest_client():
    groups = np.array([2, 0, 2, 1, 0, 1])
    assert match_groups_to_models(groups, np.zeros((6, 3)), "none").tolist() == [1, 2, 0]


@pytest.mark.parametrize("method", ["kmeans", "agglomerative"])
def test_loss_vectors_of_two_distributions_separate(method):
    rng = np.random.default_rng(0)
    a = rng.normal([2.0, 2.3], 0.02, size=(5, 2))     # IFCA's argmin would put both groups on model 0
    b = rng.normal([1.5, 2.6], 0.02, size=(5, 2))
    labels = cluster_vectors(np.vstack([a, b]), 2, method, seed=0)
    assert ari([0] * 5 + [1] * 5, labels) == 1.0
    assert np.vstack([a, b]).argmin(1).tolist() == [0] * 10


def test_cfl_split_criterion_on_hand_made_updates():
    # Two groups pulling in opposite directions: the mean update is ~0, single updates are large.
    u = torch.tensor([[2.0, 0.1], [2.1, -0.1], [1.9, 0.0], [-2.0, 0.0], [-2.1, 0.1], [-1.9, -0.1]])
    n = torch.full((6,), 100.0)
    split, mean_norm, max_norm = split_criterion(u, n, eps1=0.4, eps2=1.6)
    assert split and mean_norm == pytest.approx(0.0, abs=1e-6) and max_norm == pytest.approx(float(torch.tensor([2.1, 0.1]).norm()))
    assert bipartition(u).tolist() in ([0, 0, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0])
    # All clients agree: a large mean update means the joint objective is not stationary: no split.
    agree = u.abs()
    assert not split_criterion(agree, n, 0.4, 1.6)[0]
    # Small updates everywhere: stationary for every client: no split.
    assert not split_criterion(u * 0.1, n, 0.4, 1.6)[0]
    # Weighted mean: a heavy client dominates.
    assert split_criterion(u[[0, 3]], torch.tensor([3.0, 1.0]), 0.4, 1.6)[1] == pytest.approx(1.0, abs=0.01)


def test_flat_updates():
    start = {"w": torch.zeros(2, 2, 2), "b": torch.zeros(2, 3)}
    trained = {"w": torch.ones(2, 2, 2), "b": torch.full((2, 3), 2.0)}
    assert flat_updates(trained, start).tolist() == [[1.0] * 4 + [2.0] * 3] * 2


def test_convergence_metrics_on_hand_made_ari_curves():
    curve = [0.2, 0.95, 1.0] + [1.0] * 17
    c = convergence(curve)
    assert c["first_round_ari_ge_0.9"] == 2 and c["ari_pct_of_final_by_round10"] == 100.0
    slow = [0.1] * 12 + [0.8] * 8
    c = convergence(slow)
    assert c["first_round_ari_ge_0.9"] is None and c["ari_pct_of_final_by_round10"] == pytest.approx(12.5)
    assert convergence([0.0] * 10)["ari_pct_of_final_by_round10"] is None     # final ARI 0: undefined
    assert convergence([0.5, 1.0])["ari_pct_of_final_by_round10"] is None     # fewer than 10 rounds
    assert ari([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0 and ari([0, 0, 1, 1], [0, 1, 0, 1]) < 0


def test_option2_gradient_averaging_is_one_sgd_step_then_model_averaging():
    """CLoVE Alg. 1 line 15 (Option II) == Option I with a single plain SGD step."""
    from fedcluster.algorithms.base import weighted_mean_rows
    from fedcluster.local_training.local import LocalJob, LocalTrainer
    from fedcluster.local_training.schedule import Schedule
    from fedcluster.local_training.optim import build_optimizer
    torch.manual_seed(0)
    from fedcluster.models import LinearRegression
    model = LinearRegression((3,))
    x, w_true = torch.randn(4, 10, 3), torch.randn(3)
    y = x @ w_true + 0.1 * torch.randn(4, 10)
    theta = {"linear.weight": torch.randn(1, 1, 3)}
    start = {"linear.weight": theta["linear.weight"].expand(4, -1, -1).clone()}
    lr, sizes = 0.1, torch.tensor([10.0, 10.0, 10.0, 10.0])
    opt = build_optimizer("sgd", lr=lr, momentum=0.0, weight_decay=0.0)
    trainer = LocalTrainer(model, "regression", opt, epochs=1, batch_size=10, steps=1)
    schedule = Schedule(torch.arange(10).expand(4, 1, 10).clone(), torch.ones(4, 1, 10, dtype=torch.bool))
    job = LocalJob(x, y, torch.arange(4), start, opt.init(start), schedule)
    averaged = weighted_mean_rows(trainer.train(job, "batched").params, torch.arange(4), sizes)["linear.weight"][0]
    grads = []
    for m in range(4):
        w = theta["linear.weight"][0].clone().requires_grad_(True)
        loss = ((x[m] @ w.T).squeeze(-1) - y[m]).pow(2).mean()
        grads.append(torch.autograd.grad(loss, w)[0])
    expected = theta["linear.weight"][0] - lr * torch.stack(grads).mean(0)
    assert torch.allclose(averaged, expected, atol=1e-6)


class _LossFed:
    """A stand-in RunView whose clients report fixed loss vectors (its mean fold is the RunView's own, without
    privacy)."""
    private = False
    mean_fold = RunView.mean_fold

    def __init__(self, losses):
        self.losses = torch.as_tensor(losses, dtype=torch.float64)
        self.num_clients = len(self.losses)
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.seed = 0
        self.sizes = torch.full((self.num_clients,), 10.0)

    def mean_train_losses(self, models):
        return self.losses

    def generator(self, purpose, *keys):
        from fedcluster.rng import generator
        return generator(self.seed, purpose, *keys)

    def sample_clients(self, fraction, t, dropout=0.0):
        return torch.arange(self.num_clients)


# Two groups of two clients. Summed raw losses favour group A -> model 0, B -> model 1 (cost 1 + 1 = 2
# against 0 + 2.5); summed square roots favour the other pairing (1 + 1 = 2 against 0 + sqrt(2.5) = 1.58).
_MATCH_LOSSES = [[1.0, 0.0], [1.0, 0.0], [2.5, 1.0], [2.5, 1.0]]


@pytest.mark.parametrize("embedding,expected", [("loss", [0, 0, 1, 1]), ("sqrt_loss", [1, 1, 0, 0])])
def test_matching_costs_use_the_clustering_embedding(embedding, expected):
    """The authors' code (utils/algorithm_utils.py, clustered_federated_training_function) passes the
    square-rooted loss vectors to match_clusters_to_models, so the Hungarian cost is on them too."""
    from fedcluster.algorithms.clove import CLoVE
    alg = CLoVE(num_clusters=2, embedding=embedding)
    alg.centers = {"w": torch.zeros(2, 1)}
    fed = _LossFed(_MATCH_LOSSES)
    assert alg.assign(1, fed, torch.arange(4)).tolist() == expected


@pytest.mark.parametrize("algorithm", ["clove", "ifca"])
def test_random_first_round_gives_every_model_a_client(algorithm):
    """The authors' code (utils/algorithm_utils.py, first round with 'random' assignment, used by
    CLoVE and IFCA alike) hands a random client to every model that drew none. 5 clients on 4
    models leave a model empty in most plain uniform draws; over 20 seeds none may."""
    from fedcluster.algorithms import IFCA
    from fedcluster.algorithms.clove import CLoVE
    for seed in range(20):
        fed = _LossFed(np.ones((5, 4)))
        fed.seed = seed
        alg = (CLoVE if algorithm == "clove" else IFCA)(num_clusters=4, first_round="random")
        alg.centers = {"w": torch.zeros(4, 1)}
        alg.assignment = torch.zeros(5, dtype=torch.long)
        alg.plan(0, fed)
        assert sorted(set(alg.assignment.tolist())) == [0, 1, 2, 3], (seed, alg.assignment.tolist())


def test_random_assignment_with_fewer_clients_than_models_uses_distinct_models():
    from fedcluster.algorithms.base import random_assignment
    from fedcluster.rng import generator
    for seed in range(10):
        a = random_assignment(3, 5, generator(seed, "test"))
        assert len(set(a.tolist())) == 3 and a.max() < 5
        b = random_assignment(40, 3, generator(seed, "test"))
        assert torch.bincount(b, minlength=3).min() >= 1


def test_option2_client_gradients_are_full_batch_mean_loss_gradients():
    """CLoVE Option II as the authors' compute_gradient: the gradient of each client's mean loss
    over all its samples (padding excluded) at its starting model, with no step."""
    from fedcluster.local_training.local import LocalJob, LocalTrainer
    from fedcluster.local_training.schedule import full_batch_schedule
    from fedcluster.local_training.optim import build_optimizer
    from fedcluster.models import LinearRegression
    torch.manual_seed(0)
    model = LinearRegression((3,))
    n = torch.tensor([10, 4, 7])
    x, y = torch.randn(3, 10, 3), torch.randn(3, 10)
    start = {k: torch.randn(2, *v.shape) for k, v in model.named_parameters()}
    trainer = LocalTrainer(model, "regression", build_optimizer("sgd", lr=0.1), epochs=1, batch_size=2)
    trainer.GRADIENT_CHUNK = 3   # several chunks per client: their gradients must add up to the full batch's
    rows = torch.tensor([2, 0])
    job = LocalJob(x, y, rows, start, {}, full_batch_schedule(n[rows], 10))
    result = trainer.gradients(job)
    for m, c in enumerate(rows.tolist()):
        w = {k: v[m].clone().requires_grad_(True) for k, v in start.items()}
        out = torch.func.functional_call(model, w, (x[c, :n[c]],))
        loss = ((out - y[c, :n[c]]) ** 2).mean()
        expected = torch.autograd.grad(loss, list(w.values()))
        for k, g in zip(w, expected):
            assert torch.allclose(result.params[k][m], g, atol=1e-5)
        assert result.last_loss[m] == pytest.approx(float(loss.detach()), rel=1e-5)
    for k in start:   # the starting parameters are untouched
        assert torch.equal(job.start[k], start[k])


@pytest.mark.parametrize("server_optimizer", ["sgd", "adam"])
def test_option2_server_step_on_the_weighted_mean_gradient(server_optimizer):
    """Line 15 with the authors' server step: a fresh optimizer of the clients' kind each round.
    SGD: theta - lr * mean gradient; Adam from fresh state: theta - lr * g / (|g| + eps)."""
    from fedcluster.algorithms.base import RoundPlan
    from fedcluster.algorithms.clove import CLoVE
    lr = 0.1
    alg = CLoVE(num_clusters=2, averaging="gradient", server_optimizer=server_optimizer, server_lr=lr)
    alg.centers = {"w": torch.tensor([[1.0, 1.0], [5.0, 5.0]])}
    alg.assignment = torch.tensor([0, 0, 0])            # model 1 gets no client: unchanged
    grads = {"w": torch.tensor([[1.0, -2.0], [4.0, 4.0], [0.0, 0.0]])}
    fed = _LossFed(np.zeros((3, 2)))
    fed.sizes = torch.tensor([10.0, 30.0, 60.0])
    aggregate_at_once(alg.aggregation(0, RoundPlan(torch.arange(3), None, local="gradient"), fed), grads)
    g = (10 * grads["w"][0] + 30 * grads["w"][1]) / 100
    step = g if server_optimizer == "sgd" else g / (g.abs() + 1e-8)
    assert torch.allclose(alg.centers["w"][0], torch.tensor([1.0, 1.0]) - lr * step, atol=1e-6)
    assert torch.equal(alg.centers["w"][1], torch.tensor([5.0, 5.0]))
    alg2 = CLoVE(num_clusters=2, averaging="gradient", server_optimizer=server_optimizer, server_lr=lr)
    alg2.centers, alg2.assignment = alg.centers, torch.zeros(3, dtype=torch.long)
    assert alg2.plan(1, _LossFed([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0]])).local == "gradient"


def test_cfl_keeps_the_authors_thresholds_and_offers_calibrated_ones():
    """algorithm=cfl: eps1 = 0.4, eps2 = 1.6 and 20 warm-up rounds as in the authors' notebook;
    algorithm=cfl_calibrated: thresholds read off this tool's cfl_splits.csv for CLoVE's FMNIST
    setting (see its yaml)."""
    from conftest import make_cfg
    from fedcluster.assemble import make
    default = make_cfg(["algorithm=cfl"]).algorithm
    assert (default.eps1, default.eps2, default.split_after_round) == (0.4, 1.6, 20)
    calibrated = make_cfg(["algorithm=cfl_calibrated"]).algorithm
    assert calibrated.name == "cfl_calibrated" and (calibrated.eps1, calibrated.eps2) == (0.3, 0.43)
    assert calibrated.split_after_round == 20 and make(calibrated).eps2 == 0.43


@pytest.mark.parametrize("preset", ["images", "label_skews_3_4", "text", "text_amazon"])
def test_comparison_presets_sweep_the_papers_twelve_methods(preset):
    """CLoVE's Tables 1-3 and 7 have twelve rows; each comparison preset sweeps exactly those methods,
    each has its config, and the report module holds the paper's number for each row."""
    from omegaconf import OmegaConf
    from conftest import CONF
    from fedcluster.report.tables.clove import CLOVE_ACCURACY, CLOVE_METHODS
    swept = str(OmegaConf.load(CONF / "preset" / "clove" / f"{preset}.yaml").hydra.sweeper.params.algorithm).split(",")
    assert len(CLOVE_METHODS) == 12 and sorted(swept) == sorted(CLOVE_METHODS)
    assert all((CONF / "algorithm" / f"{m}.yaml").exists() for m in swept)
    for mixing in ("label_skew1", "concept_shift", "label_skew2", "feature_skew", "label_skew3", "label_skew4"):
        assert {m for m, d in CLOVE_ACCURACY[mixing] if d == "fashion_mnist"} == set(CLOVE_METHODS)
