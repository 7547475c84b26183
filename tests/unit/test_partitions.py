import pytest
import torch

from fedcluster.errors import ConfigError
from fedcluster.partitions import Clustered, LinearMix, RandomMix, TwoGroupMix, counts_from_ratios

G = lambda: torch.Generator().manual_seed(0)


@pytest.mark.parametrize("minor", [0.1, 0.3])
def test_two_group_mix_ratios(minor):
    plan = TwoGroupMix(minor=minor, num_clients=100).plan(2, G())
    assert torch.allclose(plan.mixture[:50], torch.tensor([minor, 1 - minor]))
    assert torch.allclose(plan.mixture[50:], torch.tensor([1 - minor, minor]))
    n = plan.train_counts.sum(1)
    assert ((n >= 100) & (n <= 200)).all()
    # counts follow the ratio up to rounding
    assert (plan.train_counts[:, 0] - plan.mixture[:, 0].double() * n.double()).abs().max() <= 1
    assert torch.allclose(plan.test_counts.sum(1).double(), (0.2 * n.double()).round())


def test_linear_ratios():
    plan = LinearMix(num_clients=100).plan(2, G())
    expected = (torch.arange(100) + 0.5) / 100
    assert torch.allclose(plan.mixture[:, 0], expected)
    assert torch.allclose(plan.mixture.sum(1), torch.ones(100))


def test_random_mixture_rows_are_segments_of_uniform_cuts():
    plan = RandomMix(num_clients=2000).plan(4, G())
    mix = plan.mixture
    assert mix.shape == (2000, 4) and (mix >= 0).all()
    assert torch.allclose(mix.sum(1), torch.ones(2000), atol=1e-6)
    # With S-1 uniform cuts every segment has mean 1/S.
    assert torch.allclose(mix.mean(0), torch.full((4,), 0.25), atol=0.02)
    assert (plan.train_counts.sum(1) == plan.train_counts.sum(1).clamp(100, 200)).all()


def test_clustered_is_one_hot():
    plan = Clustered(num_clients=9).plan(3, G())
    assert torch.equal(plan.mixture.argmax(1), torch.arange(9) % 3)
    assert torch.equal(plan.train_counts.sum(1), plan.train_counts.max(1).values)


def test_counts_sum_exactly():
    mix = torch.tensor([[1 / 3, 1 / 3, 1 / 3], [0.005, 0.995, 0.0]], dtype=torch.float64)
    counts = counts_from_ratios(mix, torch.tensor([100, 150]))
    assert counts.sum(1).tolist() == [100, 150]


def test_two_distribution_partitions_reject_other_s():
    with pytest.raises(ConfigError, match="needs exactly 2 distributions"):
        TwoGroupMix(minor=0.1).plan(3, G())
    with pytest.raises(ConfigError, match="min_samples"):
        RandomMix(min_samples=50, max_samples=10)
