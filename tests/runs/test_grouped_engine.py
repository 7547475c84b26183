"""engine=auto trains a CNN at batch 10 on a CPU with the grouped formulation (one call per layer for all of a
step's clients); a whole run from the composed config gives the looped engine's metrics up to float rounding,
for a plain method and one whose terms rewrite the objective (Per-FedAvg's meta step, which the grouped engine
trains row by row). Per-sample terms (IFCA-CAM's offsets, sample weights) are held equal at the job level in
tests/unit/test_fast_paths.py."""
import numpy as np
import pandas as pd
import pytest

from conftest import ENGINE_CHECK, IMAGE_SKEW, make_cfg
from fedcluster.runner import run


@pytest.mark.parametrize("algorithm", ["fedavg", "perfedavg"])
def test_auto_at_batch_10_is_grouped_and_equals_looped(tmp_path, fmnist_root, algorithm):
    common = IMAGE_SKEW + ENGINE_CHECK + [f"dataset.root={fmnist_root}", f"algorithm={algorithm}", "rounds=2",
                                          "train.batch_size=10", "train.optimizer=sgd", "train.lr=0.05"]
    auto = run(make_cfg(common), tmp_path / "auto")
    looped = run(make_cfg(common + ["engine=looped"]), tmp_path / "looped")
    assert (auto["engine"], looped["engine"]) == ("grouped", "looped")
    a, b = (pd.read_csv(tmp_path / d / "metrics.csv") for d in ("auto", "looped"))
    pd.testing.assert_frame_equal(a.drop(columns=["value", "run_id"]), b.drop(columns=["value", "run_id"]))
    np.testing.assert_allclose(a["value"], b["value"], rtol=1e-3, atol=1e-4)
