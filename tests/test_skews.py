"""Invariants of CLoVE's cluster skews (CLoVE §5.1, App. C.1.2)."""
import itertools

import numpy as np
import pytest
import torch

from fedcluster.data.federated import build_label_federated_data
from fedcluster.errors import ConfigError
from fedcluster.partitions import ConceptShift, FeatureSkew, LabelSkew1, LabelSkew2, LabelSkew3, LabelSkew4

C = 10
TRAIN = torch.arange(30000) % C            # 3000 per class
TEST = torch.arange(5000) % C              # 500 per class
G = lambda s=0: torch.Generator().manual_seed(s)


def cluster_label_sets(split, labels, K):
    sets = [set() for _ in range(K)]
    for i, idx in enumerate(split.train):
        sets[int(split.truth[i])] |= set(labels[idx].tolist())
    return sets


@pytest.mark.parametrize("part", [
    LabelSkew1(num_clusters=5, num_clients=20), LabelSkew2(num_clusters=4, num_clients=20),
    LabelSkew3(num_clusters=5, num_clients=25), LabelSkew4(num_clusters=5, num_clients=25),
    FeatureSkew(num_clusters=4, num_clients=20), ConceptShift(num_clusters=4, num_clients=20)])
def test_sizes_truth_and_no_sample_used_twice(part):
    split = part.split(TRAIN, TEST, C, G())
    m, K = part.num_clients, part.num_clusters
    assert [len(p) for p in split.train] == [500] * m and [len(p) for p in split.test] == [100] * m
    for parts, pool in ((split.train, TRAIN), (split.test, TEST)):
        every = torch.cat(parts)
        assert len(torch.unique(every)) == len(every) and int(every.max()) < len(pool)
    assert torch.equal(split.truth, torch.arange(m) // (m // K))


def test_label_skew1_disjoint_pairs_and_test_follows_train():
    split = LabelSkew1(num_clusters=5, num_clients=20).split(TRAIN, TEST, C, G(1))
    sets = cluster_label_sets(split, TRAIN, 5)
    assert all(len(s) == 2 for s in sets)
    assert set().union(*sets) == set(range(C))                 # 5 disjoint pairs cover all classes
    for i in range(20):
        assert set(TEST[split.test[i]].tolist()) <= sets[int(split.truth[i])]


def test_label_skew2_sets_of_four_sharing_at_least_two():
    split = LabelSkew2(num_clusters=4, num_clients=20).split(TRAIN, TEST, C, G(2))
    sets = cluster_label_sets(split, TRAIN, 4)
    assert all(len(s) == 4 for s in sets)
    assert all(len(a & b) >= 2 for a, b in itertools.combinations(sets, 2))
    assert len({frozenset(s) for s in sets}) == 4               # distinct clusters


def test_label_skew3_each_of_the_first_clusters_misses_a_distinct_class():
    split = LabelSkew3(num_clusters=5, num_clients=25).split(TRAIN, TEST, C, G(3))
    missing = []
    for k in range(5):
        clients = [i for i in range(25) if split.truth[i] == k]
        held = set(torch.cat([TRAIN[split.train[i]] for i in clients]).tolist())
        missing.append(set(range(C)) - held)
    assert all(len(mk) == 1 for mk in missing[:4]) and len(set().union(*missing[:4])) == 4
    assert missing[4] == set()
    # Dirichlet(0.5) within classes: clients of one cluster differ in their class proportions.
    hist = np.stack([np.bincount(TRAIN[split.train[i]].numpy(), minlength=C) for i in range(20, 25)])
    assert hist.std(0).max() > 20


def test_label_skew4_one_third_uniform_rest_dominant():
    split = LabelSkew4(num_clusters=5, num_clients=25).split(TRAIN, TEST, C, G(4))
    dominants = set()
    for i in range(25):
        counts = np.bincount(TRAIN[split.train[i]].numpy(), minlength=C)
        top = int(counts.argmax())
        dominants.add((int(split.truth[i]), top))
        assert abs(counts[top] - (500 * (2 / 3) + 500 / 30)) <= 1
        assert (np.delete(counts, top) >= 16).all() and (np.delete(counts, top) <= 17).all()
    assert len({d for _, d in dominants}) == 5 and len(dominants) == 5   # one distinct dominant class per cluster


class Pool:
    """A tiny single-distribution source whose images encode their index, to follow transforms."""
    task, num_classes, in_shape, distribution_names = "classification", C, (1, 4, 4), ["rot0"]

    def __init__(self):
        self.tx = torch.arange(2000 * 16, dtype=torch.float32).view(2000, 1, 4, 4)
        self.ty, self.vy = torch.arange(2000) % C, torch.arange(1000) % C
        self.vx = -torch.arange(1000 * 16, dtype=torch.float32).view(1000, 1, 4, 4)

    def pool(self, split, distribution=0):
        return (self.tx, self.ty) if split == "train" else (self.vx, self.vy)


def test_feature_skew_rotates_each_cluster_by_its_angle():
    source = Pool()
    data = build_label_federated_data(source, FeatureSkew(num_clusters=4, num_clients=8, samples_per_client=50,
                                                          test_samples_per_client=20), seed=0)
    for i in range(8):
        k = int(data.truth[i])
        x = data.train.x[i, 0]
        index = int(x.flatten().min()) // 16                         # the image's own index survives rotation
        assert torch.equal(x, torch.rot90(source.tx[index], k, dims=(-2, -1)))
        assert int(data.train.y[i, 0]) == int(source.ty[index])


def test_concept_shift_swaps_two_distinct_pairs_per_cluster():
    part = ConceptShift(num_clusters=5, num_clients=10, samples_per_client=100, test_samples_per_client=20)
    source = Pool()
    data = build_label_federated_data(source, part, seed=0)
    maps = part.label_maps(C, np.random.default_rng(0))
    pairs = set()
    for k in range(5):
        moved = np.nonzero(maps[k] != np.arange(C))[0]
        assert len(moved) == 4 and (maps[k][maps[k]] == np.arange(C)).all()     # two swaps
        pairs |= {tuple(sorted((int(a), int(maps[k][a])))) for a in moved}
    assert len(pairs) == 10                                                   # no pair reused
    # The stored labels are the swapped ones, in train and test alike.
    for i in range(10):
        n = int(data.train.n[i])
        index = (data.train.x[i, :n, 0, 0, 0] // 16).long()
        original = source.ty[index]
        relabelled = data.train.y[i, :n]
        assert (original != relabelled).any()
        swapped_classes = set(original[original != relabelled].tolist())
        assert len(swapped_classes) == 4


@pytest.mark.parametrize("part,message", [
    (lambda: LabelSkew1(num_clusters=6, num_clients=12), "needs 12 classes"),
    (lambda: FeatureSkew(num_clusters=5, num_clients=10), "num_clusters=5 > 4"),
    (lambda: LabelSkew1(num_clusters=5, num_clients=20, samples_per_client=3000), "class"),
    (lambda: LabelSkew2(num_clusters=3, num_clients=10), "must divide"),
])
def test_impossible_skews_name_the_bad_value(part, message):
    with pytest.raises(ConfigError, match=message):
        part().split(TRAIN, TEST, C, G())
