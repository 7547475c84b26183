"""Every algorithm resumes from its checkpoint to exactly the metrics of an uninterrupted run
(issue "Structure, step 2": resume was tested for 3 of the algorithms). Each algorithm option
runs on the tiny data of test_every_option.py, 2 rounds with a checkpoint after the first; the
interrupted run dies in round 2 and the same config resumes it from the checkpoint."""
import pytest

import fedcluster.runner as runner
from fedcluster.runner import run

from conftest import CONF, SAME_CLASS_AS_ANOTHER, assert_config_is_what_ran, make_cfg
from test_every_option import CONTEXT, data_root, shrink   # noqa: F401 -- data_root is a fixture
from test_chunked_rounds import chunked_metrics_match

ALGORITHMS = sorted(f.stem for f in (CONF / "algorithm").glob("*.yaml"))


class Died(Exception):
    pass


def resume_config(algorithm, root):
    """num_clusters=null: K left to the data (cluster_dirichlet's 2 clusters), settled before it is recorded."""
    cfg = shrink(make_cfg(CONTEXT["algorithm"] + [f"algorithm={algorithm}", "num_clusters=null", "partition.num_clusters=2"]),
                 root)
    cfg.rounds, cfg.checkpoint_every, cfg.eval_every = 2, 1, 1
    return cfg




@pytest.mark.parametrize("algorithm", [pytest.param(a, marks=pytest.mark.slow) if a in SAME_CLASS_AS_ANOTHER else a
                                       for a in ALGORITHMS])
def test_every_algorithm_resumes_to_the_uninterrupted_metrics(algorithm, data_root, tmp_path, monkeypatch):
    run(resume_config(algorithm, data_root), tmp_path / "straight")
    assert_config_is_what_ran(tmp_path / "straight")
    original = runner.client_chunks

    def dies_in_round_2(t, *args, **kwargs):
        if t == 1:
            raise Died()
        return original(t, *args, **kwargs)

    monkeypatch.setattr(runner, "client_chunks", dies_in_round_2)
    with pytest.raises(Died):
        run(resume_config(algorithm, data_root), tmp_path / "resumed")
    monkeypatch.setattr(runner, "client_chunks", original)
    assert (tmp_path / "resumed" / "checkpoint.pt").exists()
    summary = run(resume_config(algorithm, data_root), tmp_path / "resumed")
    assert summary["status"] == "complete"
    assert (tmp_path / "resumed" / "metrics.csv").read_bytes() == (tmp_path / "straight" / "metrics.csv").read_bytes()
    chunked_metrics_match(algorithm, data_root, tmp_path / "straight", tmp_path)   # issue 56: the same in chunks of 3 rows
