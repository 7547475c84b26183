"""The plugin's own tests: the shards partition, and one run through fedcluster's API."""
import torch

import fedcluster
from fedtabular import LabelShards


class View:
    num_classes = 3

    def __init__(self, train, test):
        self._labels = {"train": train, "test": test}

    def labels(self, split, distribution=0):
        return self._labels[split]


def test_each_client_holds_its_shards_and_is_tested_on_its_own_classes():
    train, test = torch.arange(120) % 3, torch.arange(30) % 3
    alloc = LabelShards(num_clients=6, shards_per_client=1).allocate(View(train, test), torch.Generator().manual_seed(0))
    held = [set(train[idx].tolist()) for (_, idx), in alloc.train]
    assert all(len(h) == 1 for h in held)                          # 6 shards of 20 label-sorted samples: one class each
    assert sorted(len(idx) for (_, idx), in alloc.train) == [20] * 6
    assert all(set(test[idx].tolist()) <= h for ((_, idx),), h in zip(alloc.local_test, held))


def test_wine_runs_from_the_config(tmp_path):
    result = fedcluster.run(["dataset=wine", "model=two_layer", "partition=label_shards", "algorithm=fedavg",
                             "rounds=2", "plots=false"], tmp_path / "run")
    assert result.summary["status"] == "complete" and result.summary["num_clients"] == 6
