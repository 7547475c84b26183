"""Bad input gives a clear error naming the bad value and what is allowed."""
import pytest
from hydra.errors import ConfigCompositionException, InstantiationException
from omegaconf.errors import ConfigKeyError, ValidationError

from fedcluster.command.cli import user_error
from fedcluster.errors import ConfigError
from fedcluster.runner import run

from conftest import SMALL, make_cfg


def _run_error(tmp_path, overrides):
    with pytest.raises(Exception) as info:
        run(make_cfg(SMALL + overrides), tmp_path)
    err = user_error(info.value)
    assert err is not None, f"not a user error: {info.value!r}"
    return str(err)


def test_misspelt_key_is_named():
    with pytest.raises(ConfigCompositionException) as info:
        make_cfg(["algorithm.lamda=3"])
    assert "lamda" in str(info.value.__cause__ or info.value)


def test_wrong_type_is_named():
    with pytest.raises(ConfigCompositionException) as info:
        make_cfg(["algorithm.lam=abc"])
    assert "lam" in str(info.value.__cause__ or info.value)


def test_unknown_algorithm_lists_options():
    with pytest.raises(ConfigCompositionException) as info:
        make_cfg(["algorithm=fedsofty"])
    text = str(info.value)
    assert "fedsofty" in text and "fedsoft" in text and "ifca" in text


def test_more_clusters_than_clients(tmp_path):
    msg = _run_error(tmp_path, ["algorithm=ifca", "algorithm.num_clusters=50"])
    assert "num_clusters=50" in msg and "12" in msg


def test_selection_larger_than_clients(tmp_path):
    assert "selection_size=60" in _run_error(tmp_path, [])


def test_cuda_without_gpu(tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert "hardware=cpu" in _run_error(tmp_path, ["hardware=cuda"])


def test_mix_partition_with_three_distributions(tmp_path):
    msg = _run_error(tmp_path, ["dataset.num_distributions=3", "algorithm.selection_size=6"])
    assert "mix_10_90" in msg and "3" in msg


def test_unknown_engine_and_optimizer(tmp_path):
    assert "engine='fast'" in _run_error(tmp_path, ["engine=fast", "algorithm.selection_size=6"])
    assert "optimizer='adamw'" in _run_error(tmp_path, ["train.optimizer=adamw", "algorithm.selection_size=6"])


def test_missing_dataset_says_how_to_get_it(tmp_path):
    msg = _run_error(tmp_path, ["dataset=cifar10", f"dataset.root={tmp_path}", "model=lenet"])
    assert "cifar-10-batches-py" in msg and "download=true" in msg
