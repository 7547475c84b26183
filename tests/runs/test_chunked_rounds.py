"""Rounds trained in chunks of rows (hardware.chunk) give every algorithm the metrics of the
round trained at once (issue 56: bounded memory). Each algorithm option runs on the tiny data of
test_every_option.py, composed as the CLI composes it, once with the whole round as one chunk and
once in chunks of 3 rows (its 4 clients, 8 rows for the CAM methods and FedEM: chunks that cut
across the plans trained together): `chunked_metrics_match`, which test_resume_every_algorithm.py
calls after its uninterrupted run (that run is the one-chunk one). A row trains to the same numbers in any chunk up to float
rounding (elementwise kernels round a tensor's tail differently), and a fold sums the chunks' sums:
so equal within 1e-4 relative, not to the bit."""
import numpy as np
import pandas as pd
import pytest
import torch

from fedcluster.algorithms.fold import KeepRows, Parts, WeightedMeans
from fedcluster.local_training.clients import chunk_slices
from fedcluster.errors import ConfigError
from fedcluster.hardware import Hardware
from fedcluster.models.rows import Rows, cat_rows, take_rows
from fedcluster.runner import run


def chunked_metrics_match(algorithm, root, whole_dir, tmp_path):
    """The run of `resume_config` (test_resume_every_algorithm.py) in `whole_dir` (one chunk: its 4 clients fit `auto`) against the same config in chunks
    of 3 rows, run here: the same rows of metrics.csv, values within 1e-4 relative. Called by
    test_resume_every_algorithm.py after its uninterrupted run, so each algorithm's one-chunk run serves both."""
    from test_resume_every_algorithm import resume_config   # that module imports this one
    cfg = resume_config(algorithm, root)
    cfg.hardware.chunk = 3
    chunked = run(cfg, tmp_path / "chunked")
    assert chunked["status"] == "complete"
    a = pd.read_csv(whole_dir / "metrics.csv")
    b = pd.read_csv(tmp_path / "chunked" / "metrics.csv")
    keys = ["round", "model", "eval_set", "metric"]
    assert a[keys].equals(b[keys])
    assert np.allclose(a["value"], b["value"], rtol=1e-4, atol=1e-5, equal_nan=True), \
        (a["value"] - b["value"]).abs().max()
    assert "chunks of up to 3 rows" in (tmp_path / "chunked" / "run.log").read_text()
    assert "chunks of up to 3 rows" not in (whole_dir / "run.log").read_text()


def test_chunk_slices_cover_the_rows_in_order():
    assert chunk_slices(7, 3) == [slice(0, 3), slice(3, 6), slice(6, 7)]
    assert chunk_slices(7, None) == [slice(0, 7)]
    assert chunk_slices(7, 100) == [slice(0, 7)]


def test_rows_read_the_source_when_used_and_keep_their_index():
    source = {"w": torch.arange(6.0).view(3, 2)}
    index = torch.tensor([2, 0, 2, 1])
    rows = Rows(source, index)
    index[0] = 1                                   # the planner reassigns later: the rows keep theirs
    assert torch.equal(rows["w"], source["w"][torch.tensor([2, 0, 2, 1])])
    assert torch.equal(take_rows(rows, slice(1, 3))["w"], source["w"][torch.tensor([0, 2])])
    joined = cat_rows([rows, Rows({"w": torch.ones(1, 2)}, torch.zeros(2, dtype=torch.long))])
    assert joined.count == 6 and torch.equal(joined["w"][4:], torch.ones(2, 2))


def test_weighted_means_over_chunks_is_the_weighted_mean_of_each_group():
    g = torch.Generator().manual_seed(0)
    trained = {"w": torch.randn(10, 4, generator=g, dtype=torch.float64)}
    groups = torch.tensor([0, 1, 0, 2, 1, 0, 0, 1, 2, 2])
    weights = torch.rand(10, generator=g, dtype=torch.float64) + 0.1
    got = {}
    fold = WeightedMeans(groups, weights, got.update)
    for rows in chunk_slices(10, 4):
        fold.add(rows, {k: v[rows] for k, v in trained.items()})
    fold.finish()
    for j in range(3):
        m = groups == j
        expected = (weights[m, None] * trained["w"][m]).sum(0) / weights[m].sum()
        assert torch.allclose(got[j]["w"][0], expected)


def test_parts_route_rows_across_the_boundary_of_plans_trained_together():
    seen = []

    class Record(KeepRows):
        def __init__(self):
            pass

        def add(self, rows, trained):
            seen.append((len(seen), rows, trained["w"].flatten().tolist()))

        def finish(self):
            pass
    fold = Parts([(3, Record()), (2, Record())])
    fold.add(slice(2, 4), {"w": torch.tensor([[2.0], [3.0]])})
    assert seen == [(0, slice(2, 3), [2.0]), (1, slice(0, 1), [3.0])]


def test_keep_rows_refuses_a_client_twice():
    with pytest.raises(ValueError, match="twice"):
        KeepRows({"w": torch.zeros(3, 1)}, torch.tensor([0, 1, 0]))


@pytest.mark.parametrize("bad", [0, -2, "many", 1.5, True])
def test_a_bad_chunk_is_one_line_naming_it(bad):
    with pytest.raises(ConfigError, match=r"hardware.chunk=.*'auto' or a whole number >= 1"):
        Hardware(chunk=bad)


def test_personal_models_read_only_through_chunks_are_declared_host_state():
    """Issue 56, per-client state off the compute device: the algorithms whose personal models are read
    only through a round's chunks and the chunked scoring keep them in host memory (`host_state`, put
    back there after a checkpoint is read onto the device); every host_state is checkpointed state."""
    import fedcluster.algorithms as algorithms
    from fedcluster.algorithms.fedsoft import FedSoft
    from fedcluster.algorithms.local import LocalOnly
    every = [c for c in (getattr(algorithms, name) for name in algorithms.__all__)
             if isinstance(c, type) and issubclass(c, algorithms.Algorithm)]
    assert len(every) > 15
    for cls in every:
        assert set(cls.host_state) <= set(cls.state), cls
    assert LocalOnly.host_state == ("local",) and FedSoft.host_state == ("local",)
    alg = LocalOnly()
    alg.load_state_dict({"local": {"w": torch.ones(3, 2)}})
    assert alg.local["w"].device.type == "cpu" and torch.equal(alg.local["w"], torch.ones(3, 2))


def test_show_names_what_a_chunk_allows():
    """`fedcluster show hardware=cpu` lists the rule the check applies (declared once, on the setting)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "fedcluster", "show", "hardware=cpu"], capture_output=True, text=True)
    line = next(l for l in out.stdout.splitlines() if l.strip().startswith("chunk "))
    assert line.rstrip().endswith("'auto' or a whole number >= 1")
