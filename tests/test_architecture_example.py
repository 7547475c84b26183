"""The worked example of docs/architecture.md ('adding an algorithm'), taken from the page and run:
one class file plus one yaml are all a new algorithm needs."""
import importlib
import re
import sys

import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from conftest import CONF, ROOT, SMALL
from fedcluster.config import register_schemas
from fedcluster.runner import run


def _blocks():
    page = (ROOT / "docs" / "architecture.md").read_text()
    grab = lambda tag, lang: re.search(rf"<!-- example: {tag} -->\s*```{lang}\n(.*?)```", page, re.S).group(1)
    return grab("algorithm", "python"), grab("config", "yaml")


def test_the_worked_example_runs(tmp_path, monkeypatch):
    code, yaml_text = _blocks()
    (tmp_path / "fedmedian_example.py").write_text(code)
    (tmp_path / "conf" / "algorithm").mkdir(parents=True)
    (tmp_path / "conf" / "algorithm" / "fedmedian.yaml").write_text(yaml_text)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("fedmedian_example")
    try:
        register_schemas()   # finds the new Algorithm subclass, as it would in fedcluster/algorithms/
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=SMALL + ["algorithm=fedmedian", "algorithm.client_fraction=0.5",
                                                        f"hydra.searchpath=[file://{tmp_path / 'conf'}]"])
        assert cfg.algorithm._target_ == "fedmedian_example.FedMedian" and cfg.algorithm.client_fraction == 0.5
        summary = run(cfg, tmp_path / "run")
        assert summary["status"] == "complete" and summary["algorithm"] == "fedmedian"

        alg = module.FedMedian()
        trained = {"w": torch.tensor([[1.0, 9.0], [2.0, -1.0], [7.0, 3.0]])}
        alg.aggregate(0, None, trained, None)
        assert alg.global_model["w"].tolist() == [[2.0, 3.0]]   # the median, not the mean [3.33, 3.67]
    finally:
        sys.modules.pop("fedmedian_example", None)
