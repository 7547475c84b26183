"""scripts/label_skew.py on configs the CLI composes: an n-class partition's clients hold exactly their
classes and sit farther from the pool than a mild Dirichlet's; a regression dataset is refused."""
import importlib.util
import json

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("label_skew", ROOT / "scripts" / "label_skew.py")
label_skew = importlib.util.module_from_spec(spec)
spec.loader.exec_module(label_skew)

DIGITS = ["dataset=digits", "dataset.distributions=[{rotation: 0}]", "partition.num_clients=10"]


def test_nclass_clients_hold_their_classes_and_are_farther_from_the_pool_than_dirichlet():
    nclass = label_skew.skew(DIGITS + ["partition=nclass", "partition.classes_per_client=2"], seed=0)
    mild = label_skew.skew(DIGITS + ["partition=dirichlet", "partition.alpha=100"], seed=0)
    assert nclass["mean_classes_per_client"] == 2.0
    assert 0.0 <= mild["mean_tv_to_pool"] < 0.3 < nclass["mean_tv_to_pool"] <= 1.0
    assert mild["mean_classes_per_client"] == 10.0


def test_a_regression_dataset_is_refused():
    with pytest.raises(SystemExit, match="is a regression task; allowed: a classification dataset"):
        label_skew.skew(["dataset=synthetic"], seed=0)


def test_json_lines_accumulate_over_calls(tmp_path):
    out = tmp_path / "skew.jsonl"
    for seeds in ("0", "0,1"):
        label_skew.main(["--seeds", seeds, "--json", str(out), "--"] + DIGITS + ["partition=nclass"])
    lines = out.read_text().splitlines()
    assert [json.loads(x)["seed"] for x in lines] == [0, 0, 1]


def test_class_counts_leave_padding_out():
    """ClientSplit.class_counts (used here and by the partition figure): padded slots carry label 0 and
    source -1, and must not count as class 0."""
    import torch
    from fedcluster.data.federated import ClientSplit
    y = torch.tensor([[2, 2, 1, 0], [0, 0, 0, 0]])
    source = torch.tensor([[0, 0, 0, -1], [0, -1, -1, -1]])
    split = ClientSplit(torch.zeros(2, 4, 1), y, source, torch.tensor([3, 1]))
    assert split.class_counts(3).tolist() == [[0, 1, 2], [1, 0, 0]]
