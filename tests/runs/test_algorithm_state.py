"""Each algorithm declares the attributes a checkpoint saves (`Algorithm.state`): whatever changes
from round to round must be declared, or a resumed run would silently start that part over."""
import copy

import numpy as np
import pytest
import torch

from fedcluster.algorithms.fold import aggregate_at_once
from fedcluster.assemble import build
from fedcluster.local_training.clients import run_clients
from fedcluster.run_records.record import RunRecord

from conftest import CONF, make_cfg, SAME_CLASS_AS_ANOTHER
from test_every_option import CONTEXT, data_root, shrink   # noqa: F401 -- data_root is a fixture

ALGORITHMS = sorted(f.stem for f in (CONF / "algorithm").glob("*.yaml"))


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:   # noqa: BLE001 -- arrays and other values without a plain truth value
        return a is b


def _undeclared(alg, before: dict, path: str):
    """Public attributes of `alg` (and of the algorithms it is built from) that changed since
    `before` without being declared state."""
    found = []
    for k, v in vars(alg).items():
        if k.startswith("_"):
            continue
        parts = v if isinstance(v, list) and v and hasattr(v[0], "state") else [v] if hasattr(v, "state") else None
        if parts is not None:   # composite methods: their parts declare their own state
            for i, part in enumerate(parts):
                found += _undeclared(part, before[k][i] if isinstance(v, list) else before[k], f"{path}.{k}")
        elif k not in alg.state and not _same(before.get(k), v):
            found.append(f"{path}.{k}")
    return found


def _snapshot(alg):
    out = {}
    for k, v in vars(alg).items():
        if isinstance(v, list) and v and hasattr(v[0], "state"):
            out[k] = [_snapshot(m) for m in v]
        elif hasattr(v, "state") and not isinstance(v, type):
            out[k] = _snapshot(v)
        else:
            out[k] = copy.deepcopy(v)
    return out


@pytest.mark.parametrize("algorithm", [pytest.param(a, marks=pytest.mark.slow) if a in SAME_CLASS_AS_ANOTHER else a
                                       for a in ALGORITHMS])   # one option per class in CI (test_resume_every_algorithm)
def test_what_changes_between_rounds_is_declared_state(algorithm, data_root):
    cfg = shrink(make_cfg(CONTEXT["algorithm"] + [f"algorithm={algorithm}"]), data_root)
    _, fed, alg, trainer = build(cfg)
    alg.setup(fed)
    before = _snapshot(alg)
    record = RunRecord()
    for t in range(2):
        plan = alg.plan(t, fed)
        result = run_clients(t, plan, trainer, fed.data.train, "sequential", 0, record.client_rows(plan, alg, trainer, fed))
        record.keep_client_rows(plan, result)
        aggregate_at_once(alg.aggregation(t, plan, fed), result.params)
    assert _undeclared(alg, before, "algorithm") == []
    assert set(alg.state_dict()) <= set(alg.state) | {"base", "members"}


def test_a_forgotten_attribute_is_found():
    from fedcluster.algorithms import FedAvg
    alg = FedAvg()
    before = _snapshot(alg)
    alg.global_model = {"w": torch.ones(1)}
    alg.momentum = torch.zeros(2)
    assert _undeclared(alg, before, "algorithm") == ["algorithm.momentum"]
