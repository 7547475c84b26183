"""Flower Datasets' partitioners as a fedcluster partition (conf/partition/flower.yaml; optional extra
`fedcluster[flower]`, which installs flwr-datasets).

Why: FL-bench and Flower's users split data with flwr-datasets (Dirichlet, InnerDirichlet, Pathological,
Shard, NaturalId, the size-based ones); a study that cites one of them can run it here unchanged. The
partitioner sees a table of the source's training pools with two columns, `label` and `group` (the
distribution each sample comes from: a rotation, a domain, or the value of dataset=tensors' distributions
column), and returns each client's training rows. Each client's local test split then follows its own
training shares, as fedcluster's label partitions do: for every (group, class), the test pool's samples are
split over the clients in proportion to their training samples of that group and class (largest remainder,
disjoint), so a client holding 30 % of group 2's training images of class 7 gets 30 % of its test images of
class 7."""
import inspect
from contextlib import contextmanager
from typing import Annotated, Any, Dict, List, Optional

import numpy as np
import torch

from ..errors import ConfigError
from ..rules import AtLeast, CheckedSettings, HoldoutShare, OneOf, Probability
from .allocation import Allocation
from .shares import largest_remainder

# option -> flwr_datasets.partitioner class; the columns a partitioner can split by: label, group
KINDS = {"dirichlet": "DirichletPartitioner", "inner_dirichlet": "InnerDirichletPartitioner",
         "pathological": "PathologicalPartitioner", "shard": "ShardPartitioner", "iid": "IidPartitioner",
         "natural_id": "NaturalIdPartitioner", "linear": "LinearPartitioner", "square": "SquarePartitioner",
         "exponential": "ExponentialPartitioner"}
SET_BY_FEDCLUSTER = {"num_partitions", "partition_by", "seed"}   # from num_clients, partition_by and the run's seed
DEFAULT_CLIENTS = 10   # num_clients=null for a partitioner that splits into a count (natural_id counts the groups)
# settings a partitioner requires that flwr-datasets leaves without a default: these, unless options give them
REQUIRED_DEFAULTS = {"dirichlet": {"alpha": 0.5}, "inner_dirichlet": {"alpha": 0.5},
                     "pathological": {"num_classes_per_partition": 2}, "shard": {"num_shards_per_partition": 2}}


@contextmanager
def quiet():
    """flwr-datasets and HF datasets without their progress bars and resampling warnings: a run's log keeps to
    fedcluster's lines (a split that fails still raises, in one line)."""
    import warnings
    import datasets
    was = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if was:
            datasets.enable_progress_bars()


def partitioner_class(kind: str):
    """flwr-datasets' partitioner class of `kind`; without the extra (flwr-datasets, and the HF datasets it
    needs), one line saying what to install."""
    try:
        import datasets  # noqa: F401 -- the table the partitioners split (allocate)
        import flwr_datasets.partitioner as module
    except ImportError:
        raise ConfigError("partition=flower needs flwr-datasets, which is not installed; allowed: "
                          "pip install 'fedcluster[flower]' (or pip install flwr-datasets)") from None
    return getattr(module, KINDS[kind])


class FlowerPartition(CheckedSettings, group="partition"):   # declared rules checked when built (rules.py)
    name = "flower"

    def __init__(self, kind: Annotated[str, OneOf(sorted(KINDS))] = "dirichlet",
                 options: Optional[Dict[str, Any]] = None,
                 num_clients: Annotated[Optional[int], AtLeast(1)] = None,
                 partition_by: Annotated[str, OneOf("auto", "label", "group")] = "auto",
                 min_samples: Annotated[int, AtLeast(1)] = 1,
                 val_fraction: Annotated[float, Probability] = 0.1, holdout_clients: HoldoutShare = 0.0):
        """kind: the flwr-datasets partitioner; options: its own settings (e.g. {alpha: 0.3} for dirichlet,
        {num_classes_per_partition: 3} for pathological), each checked against its signature, over
        REQUIRED_DEFAULTS for the settings flwr-datasets requires; num_clients, partition_by and the run's seed are given to it by
        fedcluster. partition_by: the column the partitioner splits by; auto: `group` for natural_id (one client
        per distribution: a rotation, a domain, a value of dataset=tensors' distributions column, whatever
        num_clients says), `label` for the others. num_clients: null is 10 clients, or for natural_id one per
        value of its column; natural_id splits by value, not by count, so a number there must be that count
        (refused in one line otherwise, rather than ignored). min_samples: a client with fewer training samples is
        refused, naming it."""
        self.kind, self.options = kind, dict(options or {})
        self.num_clients, self.partition_by, self.min_samples = num_clients, partition_by, min_samples
        self.val_fraction, self.holdout_clients = val_fraction, holdout_clients   # rules declared above

    @property
    def column(self) -> str:
        """The column the partitioner splits by (`partition_by`, auto resolved)."""
        if self.partition_by != "auto":
            return self.partition_by
        return "group" if self.kind == "natural_id" else "label"

    @property
    def count(self) -> int:
        """The clients a count-based partitioner splits into (num_clients; null: DEFAULT_CLIENTS)."""
        return DEFAULT_CLIENTS if self.num_clients is None else self.num_clients

    @property
    def num_true_clusters(self) -> Optional[int]:
        return None   # a partitioner's clients have no true clusters (no ARI); set num_clusters for a clustered method

    def size_bound(self):
        return None   # the clients' sizes come from the partitioner

    def partitioner(self, seed: int, pool_size: int):
        """The flwr-datasets partitioner of `kind` with `options` (over REQUIRED_DEFAULTS; inner_dirichlet's
        partition_sizes default to the pool split evenly), refused in one line where an option is not one of
        its settings or fedcluster sets it."""
        cls = partitioner_class(self.kind)
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
        for key in self.options:
            if key in SET_BY_FEDCLUSTER or key not in accepted:
                allowed = sorted(accepted - SET_BY_FEDCLUSTER)
                raise ConfigError(f"partition.options.{key} is not a setting of {cls.__name__} "
                                  f"(partition.kind={self.kind}) that fedcluster leaves to you; allowed: {allowed}")
        given = {"num_partitions": self.count, "partition_by": self.column, "seed": seed}
        options = {**REQUIRED_DEFAULTS.get(self.kind, {}), **self.options}
        if self.kind == "inner_dirichlet" and "partition_sizes" not in options:
            options["partition_sizes"] = [len(p) for p in np.array_split(np.arange(pool_size), self.count)]
        kwargs = {k: v for k, v in given.items() if k in accepted}
        try:
            return cls(**kwargs, **options)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"partition.kind={self.kind} with options {self.options}: {cls.__name__} refuses them: "
                              f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None

    def allocate(self, view, g: torch.Generator) -> Allocation:
        """The partition protocol (partitions/allocation.py): the partitioner's training rows per client, each
        client's test rows following its training shares (module docstring)."""
        partitioner_class(self.kind)   # the extra is installed, or one line saying how
        from datasets import Dataset
        groups = range(len(view.distribution_names))
        if self.column == "group" and len(groups) < 2:   # one group is one client: nothing federated
            raise ConfigError(f"partition.kind={self.kind} with partition_by=group makes one client per distribution of "
                              f"the data set, and it has one ({view.distribution_names[0]}); allowed: a data set with "
                              "groups (dataset=tensors: dataset.distributions=<its client-id column>), or another "
                              "partition.kind")
        labels = [view.labels("train", s).long() if view.task == "classification" else   # a regression's one "class"
                  torch.zeros(len(view.labels("train", s)), dtype=torch.long) for s in groups]
        part = None
        try:
            with quiet():
                table = Dataset.from_dict({"label": torch.cat(labels).numpy(),
                                           "group": np.concatenate([np.full(len(y), s) for s, y in zip(groups, labels)]),
                                           "row": np.concatenate([np.arange(len(y)) for y in labels])})
                part = self.partitioner(int(torch.randint(0, 2 ** 31 - 1, (1,), generator=g)), len(table))   # the run's stream
                part.dataset = table
                count = part.num_partitions
                if self.kind == "natural_id" and self.num_clients not in (None, count):
                    raise ConfigError(f"partition.num_clients={self.num_clients} with partition.kind=natural_id: it makes "
                                      f"one client per value of its column ({self.column}), and the data has {count}; "
                                      f"allowed: null (one per value) or {count}")
                rows = [part.load_partition(i) for i in range(count)]
        except ConfigError:
            raise   # fedcluster's own line, not the partitioner's
        except (ValueError, KeyError) as e:
            if part is None:
                raise
            raise ConfigError(f"partition.kind={self.kind}: the partitioner could not split the data "
                              f"({str(e).splitlines()[0][:200] if str(e) else type(e).__name__}); allowed: fewer "
                              "partition.num_clients, or other partition.options (e.g. a lower "
                              "+partition.options.min_partition_size, flwr-datasets' 10 for dirichlet)") from None
        train = []
        counts = np.zeros((len(groups), max(view.num_classes, 1), count), dtype=np.int64)
        for k, client in enumerate(rows):
            if len(client) < self.min_samples:
                raise ConfigError(f"partition=flower gives client {k} {len(client)} training samples; allowed: at "
                                  f"least partition.min_samples={self.min_samples} (fewer clients, other options)")
            group, row, label = (np.asarray(client[c], dtype=np.int64) for c in ("group", "row", "label"))
            train.append([(("train", s), torch.as_tensor(np.sort(row[group == s]))) for s in groups
                          if (group == s).any()])
            np.add.at(counts, (group, label, k), 1)
        test = self.test_following_train(view, counts, g)
        draws = {(split, s): None for split in ("train", "test") for s in groups}
        return Allocation(train, test, draws, torch.zeros(count, 0))

    @staticmethod
    def test_following_train(view, counts: np.ndarray, g: torch.Generator) -> List[list]:
        """Each client's test pieces: for every (group s, class c), the test pool's class-c samples of group s
        shuffled and split over the clients by their training counts counts[s, c, :] (largest remainder)."""
        S, C, m = counts.shape
        pieces: List[list] = [[] for _ in range(m)]
        for s in range(S):
            y = view.labels("test", s).long() if view.task == "classification" else \
                torch.zeros(len(view.labels("test", s)), dtype=torch.long)
            per_client: List[List[torch.Tensor]] = [[] for _ in range(m)]
            totals = np.array([int((y == c).sum()) for c in range(C)])
            shares = counts[s] / np.maximum(counts[s].sum(1, keepdims=True), 1)
            split = largest_remainder(shares, totals)   # [C, m]
            for c in range(C):
                members = torch.nonzero(y == c).squeeze(1)
                members = members[torch.randperm(len(members), generator=g)]
                for k, part in enumerate(torch.split(members[: int(split[c].sum())], split[c].tolist())):
                    per_client[k].append(part)
            for k in range(m):
                if per_client[k]:
                    idx = torch.sort(torch.cat(per_client[k])).values
                    if len(idx):
                        pieces[k].append((("test", s), idx))
        return pieces
