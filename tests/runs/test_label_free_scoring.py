"""No algorithm lets the labels of the data being scored choose the model that scores a client.

For every algorithm option in conf/algorithm/ (found by listing, so a new one is covered the
moment it lands), built from the composed config as the CLI builds it and trained for 2 rounds on
tiny fake Fashion-MNIST: each client's predictions on its test split ("local", and every other
predictor except the labelled paper-code picks "local:label_pick") are the same with the test
labels replaced by other classes. A paper code's rule that does read them (IFCA's re-pick by test
loss, `report_label_pick`) is shown to react to the labels, so the check can fail."""
import dataclasses

import pytest
import torch

from conftest import CONF, make_cfg, SAME_CLASS_AS_ANOTHER
from fakedata import write_mnist_like
from fedcluster.algorithms.fold import aggregate_at_once
from fedcluster.assemble import build, choose_engine
from fedcluster.local_training.clients import run_clients
from test_every_option import CONTEXT, shrink

ALGORITHMS = sorted(f.stem for f in (CONF / "algorithm").glob("*.yaml"))
LABELLED = ("local:label_pick",)   # predictors that read the scored labels by design, reported apart


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=1200, n_test=300)
    return root


def trained(overrides, root, rounds=2, adjust=None, local_training=False):
    """(algorithm, federation) after `rounds` rounds of the composed config, by the run's own steps;
    `adjust(cfg)`: a change to the shrunk config before it is built. `local_training`: also the run's local
    training for newcomers (runner.newcomer_training, as evaluation hands it to RunView.newcomer_view)."""
    cfg = shrink(make_cfg(overrides), root)
    if adjust is not None:
        adjust(cfg)
    hw, fed, alg, trainer = build(cfg)
    engine = choose_engine(cfg.engine, fed.model, hw.torch_device)
    fed.batched_forward = engine == "batched"
    alg.setup(fed)
    for t in range(rounds):
        plan = alg.plan(t, fed)
        result = run_clients(t, plan, trainer, fed.data.train, engine, cfg.seed)
        aggregate_at_once(alg.aggregation(t, plan, fed), result.params)
    if local_training:
        from fedcluster.runner import newcomer_training
        train = newcomer_training(trainer, engine, cfg.seed, None)
        return alg, fed, (lambda plan, view: train(rounds - 1, plan, view))
    return alg, fed


def other_labels(split, num_classes: int, seed: int = 0):
    """The split with every label replaced by a different class (a random non-zero shift)."""
    g = torch.Generator().manual_seed(seed)
    shift = torch.randint(1, num_classes, split.y.shape, generator=g).to(split.y.device)
    return dataclasses.replace(split, y=(split.y + shift) % num_classes)


def changed_predictors(alg, fed, relabelled) -> list:
    """Names of the predictors whose outputs on the test split differ between the true and the
    `relabelled` labels (over each client's real samples)."""
    split = fed.data.local_test
    before, after = alg.predictors(fed, split), alg.predictors(fed, relabelled)
    assert sorted(before) == sorted(after)
    mask = split.mask
    return [name for name in before if not torch.equal(before[name][mask], after[name][mask])]


@pytest.mark.parametrize("algorithm", [pytest.param(a, marks=pytest.mark.slow) if a in SAME_CLASS_AS_ANOTHER else a
                                       for a in ALGORITHMS])   # one option per class in CI (test_resume_every_algorithm)
def test_test_labels_cannot_change_which_model_scores_a_client(algorithm, data_root):
    overrides = CONTEXT["algorithm"] + [f"algorithm={algorithm}"]
    alg, fed = trained(overrides, data_root)
    relabelled = other_labels(fed.data.local_test, fed.data.num_classes)
    assert not torch.equal(relabelled.y[relabelled.mask], fed.data.local_test.y[relabelled.mask])
    changed = [name for name in changed_predictors(alg, fed, relabelled) if name not in LABELLED]
    assert changed == [], f"algorithm={algorithm}: test labels change the predictions of {changed}"


@pytest.mark.parametrize("algorithm,option", [("ifca", "algorithm.report_label_pick=true"),
                                              ("ifca_cam", "algorithm.base.report_label_pick=true")])
def test_the_labelled_pick_reads_the_labels_and_the_score_does_not(algorithm, option, data_root):
    """IFCA's code's rule, kept as `local:label_pick`: label each client's test samples with what a
    cluster model other than its own predicts, and the pick moves to that model (the check above
    would catch a predictor doing this); the method's own score stays as it was."""
    alg, fed = trained(CONTEXT["algorithm"] + [f"algorithm={algorithm}", option], data_root)
    ifca = getattr(alg, "base", alg)
    split = fed.data.local_test
    other = (ifca.assignment + 1) % ifca.num_clusters
    partner = alg.global_logits(fed, split) if algorithm == "ifca_cam" else None
    from fedcluster.local_training.forward import outputs_paired
    from fedcluster.models.stacked import repeat
    logits = outputs_paired(fed.model, repeat(ifca.centers, other), split.x, split.n, fed.batched_forward)
    if partner is not None:
        logits = logits + partner
    relabelled = dataclasses.replace(split, y=logits.argmax(-1).to(split.y.dtype))
    assert torch.equal(ifca.models_on(fed, relabelled, partner), other)
    assert changed_predictors(alg, fed, relabelled) == ["local:label_pick"]


def test_the_label_free_center_matching_follows_the_clients_weights_not_the_test_data():
    """evaluation.assignment_costs: center 1 carries the clients that hold distribution 0 and center 0
    those of distribution 1, so the pairing is 1 -> theta_0, 0 -> theta_1 whatever the test losses say
    (it reads none); a 10:90 / 90:10 mixture pairs the same way."""
    import numpy as np
    import pandas as pd
    from fedcluster.evaluation import assignment_costs
    from fedcluster.metrics import hungarian_match
    mixture = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.1, 0.9], [0.9, 0.1]])
    weights = [[0.0, 1.0], [0.2, 0.8], [0.9, 0.1], [0.7, 0.3], [0.25, 0.75]]
    assign = pd.DataFrame([{"round": 3, "client": c, "cluster": k, "weight": w}
                           for c, row in enumerate(weights) for k, w in enumerate(row)]
                          + [{"round": 2, "client": 0, "cluster": 0, "weight": 1.0}])
    cost = assignment_costs(assign, 3, mixture, num_centers=2)
    assert list(hungarian_match(cost)) == [1, 0]
    assert assignment_costs(assign, 7, mixture, num_centers=2) is None     # a round without weights


def _center_runs(tmp_path, by_assignment):
    """Two FedSoft Table 1 runs whose test-loss pairing (matched_center) is the identity and whose
    weight pairing (matched_center_by_assignment) is the swap, or absent."""
    from test_report import make_run
    preset = {"table": "fedsoft_table1_synthetic",
              "algorithm": {"_target_": "fedcluster.algorithms.FedSoft", "name": "fedsoft", "lam": 1.0}}
    extra = {"centers": {"mse": {"theta_0": [1.0, 9.0], "theta_1": [8.0, 2.0]}},
             "matched_center": {"theta_0": 0, "theta_1": 1}}
    if by_assignment:
        extra["matched_center_by_assignment"] = {"theta_0": 1, "theta_1": 0}
    for seed in (0, 1):
        make_run(tmp_path / f"s{seed}", seed, preset, summary=extra)


@pytest.mark.parametrize("by_assignment", [True, False])
def test_center_tables_pair_centers_by_the_clients_weights_not_by_test_loss(tmp_path, by_assignment):
    """FedSoft's center tables show in column c(theta_j) the center the clients' weights pair with
    theta_j, even where another center has the lower test loss; a run without that pairing falls
    back to test loss, and the table says so."""
    import pandas as pd
    from fedcluster.report import build_report
    _center_runs(tmp_path, by_assignment)
    text = build_report(tmp_path)
    frame = pd.read_csv(tmp_path / "report_fedsoft_table1_synthetic.csv")
    on_theta_0 = frame[frame["test"] == "theta_0"]
    expected = 9.0 if by_assignment else 1.0   # theta_0's test MSE on center 1 (weights) or 0 (test loss)
    assert on_theta_0["ours c(theta_0) mean"].item() == expected
    note = "Centers of 2 of 2 runs are paired with distributions by test loss"
    assert (note in text) is (not by_assignment)
