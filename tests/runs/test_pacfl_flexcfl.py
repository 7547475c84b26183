"""PACFL (principal angles, hierarchical clustering) and FlexCFL (decomposed cosine similarity,
cold start, migration, inter-group aggregation): their rules on hand-made inputs, the two engines
agreeing, and short runs that recover the clusters of a label skew."""
import math

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import IMAGE_SKEW, SMALL, make_cfg
from fedcluster.algorithms.fold import aggregate_at_once
from fedcluster.algorithms.flexcfl import cosine_dissimilarity, decomposed_cosine, inter_group, shifted
from fedcluster.algorithms.pacfl import angle_matrix, client_basis, hierarchical_clusters
from fedcluster.runner import run


def test_principal_angle_is_the_angle_between_lines_and_ignores_signs():
    theta = math.radians(25)
    e1 = torch.tensor([[1.0], [0.0], [0.0]], dtype=torch.float64)
    tilted = torch.tensor([[math.cos(theta)], [math.sin(theta)], [0.0]], dtype=torch.float64)
    A = angle_matrix([e1, tilted, -e1], "principal")
    assert A[0, 1] == pytest.approx(25.0) and A[0, 2] == pytest.approx(0.0, abs=1e-6)
    code = angle_matrix([e1, tilted, -e1], "code")   # the authors' signed column-pair minimum
    assert code[0, 1] == pytest.approx(25.0) and code[0, 2] == pytest.approx(180.0)


def test_planes_sharing_a_line_have_smallest_angle_zero():
    plane = torch.eye(4, dtype=torch.float64)[:, :2]            # span(e1, e2)
    other = torch.eye(4, dtype=torch.float64)[:, [0, 3]]        # span(e1, e4)
    far = torch.eye(4, dtype=torch.float64)[:, [2, 3]]          # span(e3, e4)
    A = angle_matrix([plane, other, far], "principal")
    assert A[0, 1] == pytest.approx(0.0, abs=1e-6) and A[0, 2] == pytest.approx(90.0)


def test_client_basis_is_per_class_left_singular_vectors():
    x = torch.tensor([[2.0, 0, 0], [3.0, 0, 0], [0, 0, 1.0], [0, 0, 5.0]])   # class 0 on e1, class 1 on e3
    y = torch.tensor([0, 0, 1, 1])
    U = client_basis(x, y, n_basis=1, per_class=True)
    assert U.shape == (3, 2)
    np.testing.assert_allclose(U.abs().numpy(), [[1, 0], [0, 0], [0, 1]], atol=1e-12)
    assert client_basis(x, y, n_basis=2, per_class=False).shape == (3, 2)   # all samples at once


@pytest.mark.parametrize("linkage,merged", [("average", 15.0), ("complete", 20.0), ("single", 10.0)])
def test_hierarchical_clustering_stops_at_the_threshold(linkage, merged):
    A = np.array([[0, 1, 10], [1, 0, 20], [10, 20, 0]], dtype=float)   # {0,1} merge first, then 2 at `merged`
    assert list(hierarchical_clusters(A, merged - 0.5, None, linkage)) == [0, 0, 1]
    assert list(hierarchical_clusters(A, merged + 0.5, None, linkage)) == [0, 0, 0]
    assert list(hierarchical_clusters(A, 0.5, None, linkage)) == [0, 1, 2]
    assert list(hierarchical_clusters(A, None, 2, linkage)) == [0, 0, 1]


def test_decomposed_cosine_separates_two_directions_of_updates():
    g = torch.Generator().manual_seed(0)
    e1, e2 = torch.eye(50, dtype=torch.float64)[0], torch.eye(50, dtype=torch.float64)[1]
    updates = torch.stack([3 * e1, 2 * e1, 4 * e2, 1 * e2]) + 0.01 * torch.randn(4, 50, generator=g, dtype=torch.float64)
    S = decomposed_cosine(updates, 2).abs()
    top = S.argmax(1)
    assert top[0] == top[1] and top[2] == top[3] and top[0] != top[2]
    assert S.max(1).values.min() > 0.99 and S.min(1).values.max() < 0.05


def test_cosine_dissimilarity_of_cold_start():
    groups = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    np.testing.assert_allclose(cosine_dissimilarity(torch.tensor([3.0, 0.0]), groups).numpy(), [0.0, 0.5])
    np.testing.assert_allclose(cosine_dissimilarity(torch.tensor([0.0, -1.0]), groups).numpy(), [0.5, 1.0])


def test_inter_group_aggregation_by_hand():
    centers = {"w": torch.tensor([[3.0, 4.0], [0.0, 2.0]], dtype=torch.float64)}   # norms 5 and 2
    out = inter_group(centers, 1.0)["w"]
    np.testing.assert_allclose(out[0].numpy(), (np.array([3, 4]) + 0.5 * np.array([0, 2])) / 1.5)
    np.testing.assert_allclose(out[1].numpy(), (np.array([0, 2]) + 0.2 * np.array([3, 4])) / 1.2)
    np.testing.assert_allclose(inter_group(centers, 0.0)["w"].numpy(), centers["w"].numpy())


def test_migration_threshold():
    old = np.array([250, 250, 0, 0])
    assert not shifted(old, old, 500, 4)
    assert not shifted(old, np.array([240, 260, 0, 0]), 500, 4)          # distance 5 <= 0.2 * 500 / 4 = 25
    assert shifted(old, np.array([0, 0, 250, 250]), 500, 4) is False      # same multiset of counts: the code's quirk
    assert shifted(old, np.array([500, 0, 0, 0]), 500, 4)                 # distance 62.5 > 25


IMAGES = IMAGE_SKEW


@pytest.mark.parametrize("algorithm", ["pacfl", "flexcfl"])
def test_recovers_the_clusters_of_label_skew1(tmp_path, fmnist_root, algorithm):
    s = run(make_cfg(IMAGES + [f"dataset.root={fmnist_root}", f"algorithm={algorithm}"]), tmp_path)
    assert s["ari"] == 1.0 and s["nonempty_clusters"] == 4
    if algorithm == "pacfl":
        angles = pd.read_csv(tmp_path / "pacfl_angles.csv").to_numpy()
        assert angles.shape == (8, 8) and np.allclose(angles, angles.T)


def test_pacfl_threshold_decides_the_number_of_clusters(tmp_path, fmnist_root):
    few = run(make_cfg(IMAGES + [f"dataset.root={fmnist_root}", "algorithm=pacfl", "algorithm.threshold=180"]), tmp_path / "a")
    assert few["nonempty_clusters"] == 1 and few["ari"] == 0.0


def test_flexcfl_migrates_a_client_whose_labels_change(fmnist_root):
    from fedcluster.assemble import build
    _, fed, alg, _ = build(make_cfg(IMAGES + [f"dataset.root={fmnist_root}", "algorithm=flexcfl"]))
    alg.setup(fed)
    plan = alg.plan(0, fed)
    assert len(plan.clients) == 8 and bool((alg.assignment < 0).all())        # round 1 pre-trains everyone from w0
    truth = fed.data.cluster_truth
    direction = torch.nn.functional.one_hot(truth, 4).double()                # hand-made updates: one direction per cluster
    trained = {k: v.clone() for k, v in plan.start.items()}
    first = sorted(trained)[0]
    flat = trained[first].reshape(8, -1)
    flat[:, :4] += direction.to(flat.dtype)
    aggregate_at_once(alg.aggregation(0, plan, fed), trained)
    assert len(set(zip(alg.assignment.tolist(), truth.tolist()))) == 4         # the groups are the clusters
    members = torch.nonzero(alg.assignment == alg.assignment[0]).squeeze(1)
    np.testing.assert_allclose(alg.centers[first][alg.assignment[0]].numpy(), trained[first][members].mean(0).numpy())
    same = alg.plan(1, fed)
    assert bool((alg.assignment >= 0).all()) and len(same.clients) == 8
    tr = fed.data.train
    tr.y[0, :int(tr.n[0])] = 9          # client 0's labels all become 9
    moved = alg.plan(2, fed)
    assert int(alg.assignment[0]) == -1 and 0 in moved.clients.tolist()
    row = moved.clients.tolist().index(0)
    np.testing.assert_allclose(moved.start[first][row].numpy(), alg.initial[first][0].numpy())   # cold start from w0


@pytest.mark.parametrize("algorithm", ["pacfl", "flexcfl"])
def test_batched_and_sequential_engines_agree(tmp_path, algorithm):
    common = SMALL + ["partition=clustered", f"algorithm={algorithm}", "num_clusters=2"]
    run(make_cfg(common + ["engine=batched"]), tmp_path / "b")
    run(make_cfg(common + ["engine=sequential"]), tmp_path / "s")
    a, b = pd.read_csv(tmp_path / "b" / "metrics.csv"), pd.read_csv(tmp_path / "s" / "metrics.csv")
    pd.testing.assert_frame_equal(a.drop(columns=["value", "run_id"]), b.drop(columns=["value", "run_id"]))   # run_id: engine differs
    np.testing.assert_allclose(a["value"], b["value"], rtol=1e-4, atol=1e-6)
