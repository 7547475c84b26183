"""Partitions of S source distributions over N clients (FedSoft §5), conf/partition/*.yaml.

A partitioner fixes each client's ground-truth mixture u_k (its share of each distribution)
and its sample counts n_ks = round(u_ks * n_k) with n_k ~ U[min_samples, max_samples]. Each
client also gets a held-out local test split of round(local_test_fraction * n_k) samples
drawn from the same mixture."""
from dataclasses import dataclass
from typing import Annotated

import torch

from ..errors import ConfigError
from ..rules import AtLeast, Between, HoldoutShare, NotAbove, Probability, CheckedSettings
from .allocation import Allocation


@dataclass
class PartitionPlan:
    mixture: torch.Tensor        # [N, S] ground-truth ratios, rows sum to 1
    train_counts: torch.Tensor   # [N, S] long
    test_counts: torch.Tensor    # [N, S] long


def counts_from_ratios(mixture: torch.Tensor, totals: torch.Tensor) -> torch.Tensor:
    """Integer counts per row summing exactly to `totals` (largest-remainder rounding)."""
    raw = mixture * totals[:, None].to(mixture.dtype)
    counts = raw.floor().long()
    short = totals - counts.sum(1)
    order = torch.argsort(raw - counts, dim=1, descending=True)
    for row in range(len(totals)):
        counts[row, order[row, : int(short[row])]] += 1
    return counts


class Partition(CheckedSettings, group="partition"):   # declared rules checked when built (rules.py)
    """Base: subclasses define `mixture(S, g)`."""
    name = "partition"
    needs_two = False
    joint_rules = (NotAbove("min_samples", "max_samples"),)   # checked once, when built and by validate.py

    def __init__(self, num_clients: Annotated[int, AtLeast(1)] = 100, min_samples: Annotated[int, AtLeast(1)] = 100,
                 max_samples: Annotated[int, AtLeast(1)] = 200,
                 local_test_fraction: Annotated[float, Between(0, 1, lo_open=True, hi_open=True)] = 0.2,
                 val_fraction: Annotated[float, Probability] = 0.1, holdout_clients: HoldoutShare = 0.0):
        self.num_clients, self.min_samples, self.max_samples = num_clients, min_samples, max_samples
        self.local_test_fraction = local_test_fraction
        self.val_fraction, self.holdout_clients = val_fraction, holdout_clients   # rules declared above

    def mixture(self, num_distributions: int, g: torch.Generator) -> torch.Tensor:
        raise NotImplementedError

    @property
    def num_true_clusters(self) -> None:
        """None: a mixture's clusters are its source's distributions (the dominant one per client)."""
        return None

    def size_bound(self):
        """(clients, most training samples of a client, most local test samples): the largest data
        these settings can allocate, checked against the memory before anything is drawn."""
        return self.num_clients, self.max_samples, max(1, round(self.max_samples * self.local_test_fraction))

    def allocate(self, view, g: torch.Generator) -> Allocation:
        """The partition protocol (partitions/allocation.py): a mixture of the source's
        distributions per client. Distribution s is drawn once for all clients (fresh samples:
        the source may generate them); each client takes its training samples and then its local
        test samples from the stream in turn, so no sample is used twice, and its pieces are
        mixed in a random order. Each distribution's own test set is its held-out test split."""
        plan = self.plan(len(view.distribution_names), g)
        N, S = plan.train_counts.shape
        train, test = [[] for _ in range(N)], [[] for _ in range(N)]
        draws = {}
        for s in range(S):
            offset = 0
            for k in range(N):
                for pieces, count in ((train, int(plan.train_counts[k, s])), (test, int(plan.test_counts[k, s]))):
                    pieces[k].append((("train", s), torch.arange(offset, offset + count)))
                    offset += count
            draws[("train", s)] = offset
        return Allocation(train, test, draws, plan.mixture, shuffle_clients=True, distribution_tests=True)

    def plan(self, num_distributions: int, g: torch.Generator) -> PartitionPlan:
        if self.needs_two and num_distributions != 2:
            raise ConfigError(f"partition={self.name} needs exactly 2 distributions but the dataset has "
                              f"{num_distributions}; use partition=random or partition=clustered")
        mix = self.mixture(num_distributions, g).double()
        n = torch.randint(self.min_samples, self.max_samples + 1, (self.num_clients,), generator=g)
        n_test = torch.clamp((n.double() * self.local_test_fraction).round().long(), min=1)
        return PartitionPlan(mix.float(), counts_from_ratios(mix, n), counts_from_ratios(mix, n_test))


class TwoGroupMix(Partition):
    """'a:b' partition: half the clients hold minor:major of (D_A, D_B), the other half major:minor."""
    needs_two = True

    def __init__(self, minor: Annotated[float, Between(0, 0.5)] = 0.1, **kw):
        super().__init__(**kw)
        self.minor = minor
        self.name = f"mix_{round(100 * minor)}_{round(100 * (1 - minor))}"

    def mixture(self, S, g):
        first = torch.full((self.num_clients,), self.minor, dtype=torch.float64)
        first[self.num_clients // 2:] = 1 - self.minor
        return torch.stack([first, 1 - first], dim=1)


class LinearMix(Partition):
    """Client k holds (k + 0.5)/N of D_A and the rest of D_B (FedSoft: (0.5+k)% for N=100)."""
    name = "linear"
    needs_two = True

    def mixture(self, S, g):
        first = (torch.arange(self.num_clients, dtype=torch.float64) + 0.5) / self.num_clients
        return torch.stack([first, 1 - first], dim=1)


class RandomMix(Partition):
    """Each client cuts [0, 1] at S-1 points drawn from U(0, 1); the segments are its mixture."""
    name = "random"

    def mixture(self, S, g):
        cuts = torch.sort(torch.rand(self.num_clients, S - 1, generator=g, dtype=torch.float64), dim=1).values
        edges = torch.cat([torch.zeros(self.num_clients, 1, dtype=torch.float64), cuts,
                           torch.ones(self.num_clients, 1, dtype=torch.float64)], dim=1)
        return edges.diff(dim=1)


class Clustered(Partition):
    """Hard clusters: client k holds only distribution k mod S (the IFCA setting)."""
    name = "clustered"

    def mixture(self, S, g):
        mix = torch.zeros(self.num_clients, S, dtype=torch.float64)
        mix[torch.arange(self.num_clients), torch.arange(self.num_clients) % S] = 1.0
        return mix

