"""The worked example of docs/architecture.md ('adding an algorithm'), taken from the page and run
as the page says: one class file plus one yaml in the user's own package, named by
FEDCLUSTER_PLUGINS, run by the `fedcluster` command."""
import importlib
import json
import os
import re
import subprocess
import sys

import torch

from conftest import ROOT, SMALL
from fedcluster.algorithms import RoundPlan
from fedcluster.algorithms.fold import aggregate_at_once


def _blocks():
    page = (ROOT / "docs" / "architecture.md").read_text()
    grab = lambda tag, lang: re.search(rf"<!-- example: {tag} -->\s*```{lang}\n(.*?)```", page, re.S).group(1)
    return grab("algorithm", "python"), grab("config", "yaml")


def test_the_worked_example_runs(tmp_path, monkeypatch):
    code, yaml_text = _blocks()
    (tmp_path / "mypkg" / "conf" / "algorithm").mkdir(parents=True)
    (tmp_path / "mypkg" / "__init__.py").write_text(code)
    (tmp_path / "mypkg" / "conf" / "algorithm" / "fedmedian.yaml").write_text(yaml_text)
    env = {**os.environ, "FEDCLUSTER_PLUGINS": "mypkg"}
    proc = subprocess.run([sys.executable, "-m", "fedcluster", *SMALL, "algorithm=fedmedian",
                           "algorithm.client_fraction=0.5", "progress=false", f"hydra.run.dir={tmp_path / 'run'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["algorithm"] == "fedmedian"
    config = (tmp_path / "run" / "config.yaml").read_text()
    assert "_target_: mypkg.FedMedian" in config and "client_fraction: 0.5" in config

    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        alg = importlib.import_module("mypkg").FedMedian()
        trained = {"w": torch.tensor([[1.0, 9.0], [2.0, -1.0], [7.0, 3.0]])}
        aggregate_at_once(alg.aggregation(0, RoundPlan(torch.arange(3), None), None), trained)
        assert alg.global_model["w"].tolist() == [[2.0, 3.0]]   # the median, not the mean [3.33, 3.67]
    finally:
        sys.modules.pop("mypkg", None)
