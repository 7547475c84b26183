"""The plugin's own tests: the aggregate, and one run through fedcluster's API."""
import torch

import fedcluster
from fedtrim import FedTrim, trimmed_mean


def test_trimmed_mean_drops_the_extremes_per_coordinate():
    values = torch.tensor([[1.0, 100.0], [2.0, 3.0], [3.0, -50.0], [4.0, 4.0], [1000.0, 5.0]])
    assert trimmed_mean(values, 0.2).tolist() == [[3.0, 4.0]]        # one value dropped from each end
    assert torch.allclose(trimmed_mean(values, 0.0), values.mean(0, keepdim=True))


def test_fedtrim_runs_from_the_config(tmp_path):
    result = fedcluster.run(["algorithm=fedtrim", "algorithm.trim=0.2", "rounds=2", "partition.num_clients=10",
                             "dataset.test_size=100", "train.epochs=1", "plots=false"], tmp_path / "run")
    assert result.summary["status"] == "complete" and result.summary["algorithm"] == "fedtrim"
    assert isinstance(FedTrim(trim=0.2), FedTrim)
