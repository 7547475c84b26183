"""Invariants of the label-skew partitions (Fed-CAM §5)."""
import time

import numpy as np
import pytest
import torch

from fedcluster.errors import ConfigError
from fedcluster.partitions import ClusteredDirichletLabels, ClusteredNClassLabels, DirichletLabels, NClassLabels
from fedcluster.partitions.shares import dirichlet, ensure_minimum, largest_remainder

C = 10
TRAIN = torch.arange(6000) % C            # 600 per class
TEST = torch.arange(1000) % C             # 100 per class
G = lambda s=0: torch.Generator().manual_seed(s)


def _check_disjoint_and_complete(parts, pool_size):
    allidx = torch.cat(parts)
    assert len(torch.unique(allidx)) == len(allidx), "a sample was given to two clients"
    assert int(allidx.max()) < pool_size


def _label_sets(parts, labels):
    return [set(labels[p].tolist()) for p in parts]


@pytest.mark.parametrize("part", [
    DirichletLabels(alpha=0.1, num_clients=50), NClassLabels(classes_per_client=2, num_clients=50),
    ClusteredDirichletLabels(num_clusters=5, num_clients=50), ClusteredNClassLabels(num_clusters=5, num_clients=50)])
def test_every_partition_is_disjoint_with_minimums(part):
    split = part.split(TRAIN, TEST, C, G())
    assert len(split.train) == len(split.test) == 50
    _check_disjoint_and_complete(split.train, len(TRAIN))
    _check_disjoint_and_complete(split.test, len(TEST))
    assert min(len(p) for p in split.train) >= part.min_samples
    assert min(len(p) for p in split.test) >= 1


def test_test_split_follows_the_clients_label_distribution():
    split = DirichletLabels(alpha=0.1, num_clients=20, min_samples=1).split(TRAIN, TEST, C, G(3))
    for tr, te in zip(split.train, split.test):
        if len(tr) >= 100:
            p_train = np.bincount(TRAIN[tr].numpy(), minlength=C) / len(tr)
            p_test = np.bincount(TEST[te].numpy(), minlength=C) / len(te)
            assert np.abs(p_train - p_test).sum() < 0.35


def test_nclass_clients_hold_exactly_n_classes():
    split = NClassLabels(classes_per_client=2, num_clients=40).split(TRAIN, TEST, C, G())
    assert all(len(s) == 2 for s in _label_sets(split.train, TRAIN))
    assert split.truth is None
    # a class's samples are split equally among its holders (up to rounding)
    for c in range(C):
        holders = [len(p[TRAIN[p] == c]) for p in split.train if (TRAIN[p] == c).any()]
        assert max(holders) - min(holders) <= 1


def test_cluster_nclass_label_sets():
    part = ClusteredNClassLabels(num_clusters=5, num_clients=50, classes_per_cluster=3, classes_per_client=2)
    split = part.split(TRAIN, TEST, C, G())
    sets = _label_sets(split.train, TRAIN)
    truth = split.truth.numpy()
    assert np.bincount(truth).tolist() == [10] * 5
    for k in range(5):
        cluster_classes = set().union(*[sets[i] for i in np.nonzero(truth == k)[0]])
        assert len(cluster_classes) <= 3
        assert all(len(sets[i]) == 2 for i in np.nonzero(truth == k)[0])
    # K=10 over 10 classes: every class serves exactly 3 clusters
    ten = ClusteredNClassLabels(num_clusters=10, num_clients=50)
    counts = np.bincount(ten.cluster_classes(C, np.random.default_rng(0)).ravel(), minlength=C)
    assert counts.tolist() == [3] * C


def test_cluster_dirichlet_clusters_differ_and_clients_within_agree():
    part = ClusteredDirichletLabels(num_clusters=4, num_clients=40, alpha_cluster=0.1, alpha_client=10.0)
    split = part.split(TRAIN, TEST, C, G(1))
    truth = split.truth.numpy()
    dist = np.stack([np.bincount(TRAIN[p].numpy(), minlength=C) / len(p) for p in split.train])
    within = np.mean([np.abs(dist[i] - dist[truth == truth[i]].mean(0)).sum() for i in range(40)])
    centers = np.stack([dist[truth == k].mean(0) for k in range(4)])
    between = np.mean([np.abs(centers[a] - centers[b]).sum() for a in range(4) for b in range(a + 1, 4)])
    assert between > 3 * within


def test_tiny_alpha_many_clients_is_fast_and_complete():
    """alpha = 0.01 with 1,000 clients: finishes quickly (no rejection loop) and every
    client still gets min_samples training samples."""
    labels = torch.arange(60000) % C
    tick = time.perf_counter()
    split = DirichletLabels(alpha=0.01, num_clients=1000, min_samples=10).split(labels, torch.arange(10000) % C, C, G())
    assert time.perf_counter() - tick < 30   # generous bound; typically well under a second
    assert min(len(p) for p in split.train) >= 10
    _check_disjoint_and_complete(split.train, 60000)


def test_dirichlet_rows_are_distributions_even_when_gammas_underflow():
    rows = dirichlet(np.random.default_rng(0), 1e-4, 50, 200)
    assert np.allclose(rows.sum(1), 1) and np.isfinite(rows).all()


def test_counts_and_topping_up():
    counts = largest_remainder(np.array([[0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3], [0, 0, 0]]), np.array([5, 10, 7]))
    assert counts.sum(1).tolist() == [5, 10, 0]
    fixed = ensure_minimum(np.array([[30, 0, 1], [0, 0, 0]]), 5)
    assert fixed.sum(0).min() >= 5 and fixed.sum() == 31


def test_impossible_partitions_are_clear_errors():
    with pytest.raises(ConfigError, match="must divide"):
        ClusteredDirichletLabels(num_clusters=3, num_clients=10)
    with pytest.raises(ConfigError, match="cannot give every client"):
        DirichletLabels(num_clients=100, min_samples=10).split(torch.arange(500) % C, torch.arange(100) % C, C, G())
    with pytest.raises(ConfigError, match="set num_clusters"):
        ClusteredNClassLabels(num_clients=10)
