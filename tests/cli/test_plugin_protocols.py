"""Each group's contract for a class of one's own (protocols.py, docs/plugins.md "Your own method, model, data or
partition"): examples/fedtabular's data set, model and partition run through the CLI in a sweep and the report,
not installed (FEDCLUSTER_PLUGINS); a class that lacks a piece of its contract is refused in one line naming the
piece, when its plugin loads or when it is built, before anything is written."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from test_plugins import cli, one_line_error

EXAMPLE = ROOT / "examples" / "fedtabular"
TINY = ["rounds=3", "plots=false", "progress=false"]


def test_a_data_set_model_and_partition_of_ones_own_run_in_a_sweep_and_the_report(tmp_path):
    shutil.copytree(EXAMPLE / "fedtabular", tmp_path / "fedtabular")
    env = {**os.environ, "FEDCLUSTER_PLUGINS": "fedtabular"}
    sweep = cli(sys.executable, tmp_path, "-m", "dataset=wine", "model=two_layer", "partition=label_shards",
                "algorithm=fedavg,fedproto,ifca", "num_clusters=2", "seed=0,1", *TINY,
                f"hydra.sweep.dir={tmp_path / 'sweep'}", env=env)
    assert sweep.returncode == 0 and "6 finished" in sweep.stderr, sweep.stderr[-2000:]
    report = subprocess.run([sys.executable, "-m", "fedcluster.report", str(tmp_path / "sweep"), "--baseline", "fedavg"],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "| fedproto |" in report.stdout and "Differences to fedavg" in report.stdout
    shown = cli(sys.executable, tmp_path, "show", "partition=label_shards", env=env)
    assert shown.returncode == 0 and "shards_per_client" in shown.stdout


BROKEN = {
    "dataset lacking seed": ('''
        class Table:
            task, num_classes, in_shape, distribution_names = "classification", 2, (3,), ["all"]
            def __init__(self, rows: int = 10): pass
            def pool(self, split, distribution=0): pass
        FEDCLUSTER_OPTIONS = {"dataset": [Table]}''', "dataset class Table lacks a `seed` parameter"),
    "dataset lacking pool and sample": ('''
        class Table:
            def __init__(self, seed: int = 0): pass
        FEDCLUSTER_OPTIONS = {"dataset": [Table]}''', "dataset class Table lacks pool(split, distribution) or sample("),
    "partition lacking allocate": ('''
        class Halves:
            def size_bound(self): return None
        FEDCLUSTER_OPTIONS = {"partition": [Halves]}''', "partition class Halves lacks allocate(view, g)"),
    "model that is no module": ('''
        class Net:
            def __init__(self, in_shape, num_outputs): pass
        FEDCLUSTER_OPTIONS = {"model": [Net]}''', "model class Net lacks torch.nn.Module as a base"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_class_lacking_a_piece_of_its_contract_is_one_line_when_its_plugin_loads(tmp_path, case):
    code, needle = BROKEN[case]
    (tmp_path / "mine.py").write_text(textwrap.dedent(code))
    env = {**os.environ, "FEDCLUSTER_PLUGINS": "mine"}
    one_line_error(cli(sys.executable, tmp_path, "rounds=1", env=env), "plugin 'mine' ($FEDCLUSTER_PLUGINS)", needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["__pycache__", "mine.py"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["mine.py"]


def _plugin(tmp_path, code, yaml_files):
    pkg = tmp_path / "mine"
    for rel, text in yaml_files.items():
        (pkg / "conf" / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / "conf" / rel).write_text(textwrap.dedent(text))
    (pkg / "__init__.py").write_text(textwrap.dedent(code))
    return {**os.environ, "FEDCLUSTER_PLUGINS": "mine"}


SAMPLER = '''
    import torch
    class Draws:
        task, num_classes, in_shape, distribution_names = "classification", 2, (4,), ["all"]
        def __init__(self, seed: int = 0):
            self.g = torch.Generator().manual_seed(seed)
        def sample(self, split, distribution, n, g):
            n = 50 if n is None else n
            x = torch.randn(n, 4, generator=g)
            return x, (x[:, 0] > 0).long()
    class Plain(torch.nn.Module):
        def __init__(self, in_shape, num_outputs):
            super().__init__()
            self.lin = torch.nn.Linear(in_shape[0], num_outputs)
        def forward(self, x):
            return self.lin(x)
    class Unnamed:
        def __init__(self, seed: int = 0):
            self.distribution_names = ["all"]
        def sample(self, split, distribution, n, g): pass
    FEDCLUSTER_OPTIONS = {"dataset": [Draws, Unnamed], "model": [Plain]}
'''
SAMPLER_YAML = {"dataset/draws.yaml": "defaults:\n  - /schemas/dataset/Draws@_here_\n  - _self_\nname: draws\n",
                "dataset/unnamed.yaml": "defaults:\n  - /schemas/dataset/Unnamed@_here_\n  - _self_\nname: unnamed\n",
                "model/plain.yaml": "defaults:\n  - /schemas/model/Plain@_here_\n  - _self_\nname: plain\n"}


@pytest.mark.parametrize("overrides, needles", [
    (["dataset=draws", "partition=dirichlet", "model=plain", "algorithm=fedavg"],
     ["this partition splits a data set's whole labelled pool", "(Draws) does not offer", "a mixture partition"]),
    (["dataset=draws", "partition=random", "model=plain", "algorithm=fedproto"],
     ["algorithm=fedproto reads the model's features but model=plain", "forward(x, with_features=True)"]),
    (["dataset=unnamed", "partition=random", "model=plain", "algorithm=fedavg"],
     ["dataset=unnamed: its class Unnamed sets no `task`"]),
])
def test_what_a_built_class_lacks_is_one_line_before_anything_is_written(tmp_path, overrides, needles):
    env = _plugin(tmp_path, SAMPLER, SAMPLER_YAML)
    out = tmp_path / "run"
    one_line_error(cli(sys.executable, tmp_path, *overrides, "rounds=1", "partition.num_clients=4",
                       f"hydra.run.dir={out}", env=env), *needles)
    assert not out.exists()
