"""Natural clients (conf/partition/natural.yaml): the data's own groups are the clients, as in LEAF's
writers or flwr-datasets' NaturalIdPartitioner: one client per distribution of the source, holding all of that
group's training samples and all of its test samples. With `dataset=tensors dataset.distributions=<column>`,
each value of the column (a hospital, a device, a writer) is one client; with a multi-domain source, each
domain. The partition draws nothing: every seed has the same clients (which of a group's rows are its test
rows is the source's split: dataset=tensors holds out a seeded test_fraction unless test_path gives them).
The groups' true clusters are unknown (no ARI); set num_clusters for a clustered method (null: one cluster
per client)."""
from typing import Annotated, Optional

import torch

from ..errors import ConfigError
from ..rules import AtLeast, CheckedSettings, HoldoutShare, Probability
from .allocation import Allocation


class NaturalClients(CheckedSettings, group="partition"):   # declared rules checked when built (rules.py)
    name = "natural"

    def __init__(self, min_samples: Annotated[int, AtLeast(1)] = 1, val_fraction: Annotated[float, Probability] = 0.1,
                 holdout_clients: HoldoutShare = 0.0):
        """min_samples: the fewest training samples a group may have (a smaller one is refused, naming it);
        every group also needs one test sample at least."""
        self.min_samples = min_samples
        self.val_fraction, self.holdout_clients = val_fraction, holdout_clients   # rules declared above

    @property
    def num_true_clusters(self) -> Optional[int]:
        return None

    def size_bound(self):
        return None   # the groups' sizes come from the data

    def allocate(self, view, g: torch.Generator) -> Allocation:
        """The partition protocol (partitions/allocation.py): client s is distribution s, whole."""
        names = view.distribution_names
        if len(names) < 2:
            raise ConfigError(f"partition=natural makes one client per group of the data, and it has one ({names[0]!r}); "
                              "allowed: data with groups (dataset=tensors: dataset.distributions=<column>; an image set "
                              "with several distributions), or a partition that splits one pool (e.g. partition=dirichlet)")
        train, test, draws = [], [], {}
        for s, name in enumerate(names):
            n_train, n_test = len(view.labels("train", s)), len(view.labels("test", s))
            if n_train < self.min_samples or n_test < 1:
                raise ConfigError(f"partition=natural: group {name!r} has {n_train} training and {n_test} test samples; "
                                  f"allowed: at least partition.min_samples={self.min_samples} and 1 (drop the group from "
                                  "the data, give it test rows, or lower partition.min_samples)")
            train.append([(("train", s), torch.arange(n_train))])
            test.append([(("test", s), torch.arange(n_test))])
            draws[("train", s)] = draws[("test", s)] = None
        return Allocation(train, test, draws, torch.zeros(len(names), 0))
