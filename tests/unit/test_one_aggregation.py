"""Issue 77, one aggregation per method: every algorithm states how its updates reduce once, as
`aggregation(t, plan, fed) -> Fold` (algorithms/fold.py), and the round has one path for all of them."""
import ast

import pytest
import torch

from conftest import ROOT
from fedcluster.algorithms import Algorithm, FedAvg, gathered
from fedcluster.algorithms.base import RoundPlan
from fedcluster.algorithms.fold import Gathered, aggregate_at_once
from fedcluster.config import store

RETIRED = {"aggregate", "fold", "round_fold"}


def test_no_algorithm_class_defines_a_second_aggregation():
    """An AST count over the package: no class defines aggregate, fold or round_fold beside `aggregation`."""
    found = []
    for path in sorted((ROOT / "fedcluster").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
                found += [(path.name, node.name, n) for n in names & RETIRED]
    assert not found


def test_every_algorithm_option_states_its_aggregation():
    classes = store.option_classes("algorithm")
    assert {"CAM", "CFL", "Ensemble", "FedAvg", "FedPAC", "LocalOnly"} <= {c.__name__ for c in classes}
    for cls in classes:
        assert cls.aggregation is not Algorithm.aggregation, cls.__name__


def test_a_class_written_the_old_way_is_refused_with_the_new_way_named():
    with pytest.raises(TypeError, match=r"defines aggregate\(\).*aggregation\(t, plan, fed\) -> Fold.*@gathered"):
        type("Old", (FedAvg,), {"aggregate": lambda self, t, plan, trained, fed: None})


def test_a_gathered_aggregation_gets_every_row_once_however_the_round_is_chunked():
    seen = []

    class Median(FedAvg):
        @gathered
        def aggregation(self, t, plan, trained, fed):
            seen.append({k: v.clone() for k, v in trained.items()})

    rows = {"w": torch.arange(10.0).view(5, 2)}
    fold = Median().aggregation(0, RoundPlan(torch.arange(5), None), None)
    assert isinstance(fold, Gathered)
    for part in (slice(0, 2), slice(2, 4), slice(4, 5)):   # three chunks
        fold.add(part, {k: v[part] for k, v in rows.items()})
    fold.finish()
    aggregate_at_once(Median().aggregation(0, RoundPlan(torch.arange(5), None), None), rows)   # one chunk
    assert len(seen) == 2 and all(torch.equal(s["w"], rows["w"]) for s in seen)
