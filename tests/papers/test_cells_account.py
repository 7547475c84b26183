"""The per-cell account (fedcluster/report/account.py): the page's Cells line is recomputed from the files
(paper_numbers.csv, docs/cells.yaml, the archived runs), each cell is in one category, the verdict rules
(± 2 printed std, a printed ± 0, a printed dash, no std printed) hold, and a cause counts as measured only
where its ablation puts the cell inside the band."""
import math
import re

import pandas as pd
import pytest
import yaml

from conftest import ROOT
from fedcluster.report import account
from fedcluster.report.cells import Reported, Stat
from fedcluster.report.tables.paper_numbers import CSV, CellKey

CELL = CellKey("clove_images", "label_skew2", None, "clove", "fashion_mnist", "accuracy", None, None)


@pytest.fixture(autouse=True)
def in_the_repository(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def entries():
    return account.account(account.load(account.REGISTRY, ROOT), ROOT)


def _line_numbers(line):
    """The line's counts, in order (the '2' of 'ours ± 2 std' inside its parenthesis is no count)."""
    return [int(n) for n in re.findall(r"(\d+) [a-z]", re.sub(r"\([^)]*\)", "", line.split(":", 1)[1]))]


def test_the_cells_line_opens_both_pages_and_is_recomputed_from_the_files(entries):
    line = account.cells_line(entries)
    page = (ROOT / "docs" / "reproductions.md").read_text().splitlines()
    assert line in page[:6], "docs/reproductions.md does not open with the recomputed Cells line"
    assert line in (ROOT / "docs" / "cells.md").read_text().splitlines()
    printed, runnable, run, compared, within, no_std, measured, unexplained, not_compared, not_run = _line_numbers(line)
    # counted here from the files themselves, not through the account's own counts
    csv = pd.read_csv(CSV, keep_default_na=False)
    here = set(yaml.safe_load((ROOT / "docs" / "cells.yaml").read_text())["data_here"])
    assert printed == len(csv)
    assert runnable == int(csv["dataset"].isin(here).sum())
    assert runnable == run + not_run and run == compared + not_compared
    assert compared == within + no_std + measured + unexplained
    by_category = pd.Series([e.category for e in entries]).value_counts()
    assert by_category.get(account.WITHIN, 0) == within and by_category.get(account.NOT_RUN, 0) == not_run


def test_every_cell_outside_or_not_compared_is_listed_with_our_number(entries):
    page = (ROOT / "docs" / "cells.md").read_text()
    for category in (account.MEASURED, account.UNEXPLAINED, account.NOT_COMPARED):
        n = sum(e.category == category for e in entries)
        if n:
            assert f"## {category} ({n})" in page
    listed = [e for e in entries if e.category in (account.UNEXPLAINED, account.MEASURED)]
    assert all(e.ours is not None and e.ours.ran for e in listed)   # a number, or seeds that never reached it


def test_a_within_cell_is_inside_the_printed_band_and_a_no_std_cell_is_not_called_within(entries):
    for e in entries:
        if e.category == account.WITHIN and math.isfinite(e.ours.paper.mean) and e.ours.paper.std:
            assert abs(e.ours.stat.mean - e.ours.paper.mean) <= 2 * e.ours.paper.std + 1e-9
        if e.category == account.NO_STD:
            assert e.ours.paper.std is None and e.ours.stat.n > 1


def _ours(values, mean, std, note="", digits=1):
    return account.Ours(Stat.of(values, note=note), Reported(mean, std, digits, CELL), "here")


def test_the_verdict_rules():
    assert _ours([80.0, 81.0, 82.0], 80.5, 0.5).within is True          # |0.5| <= 2 x 0.5
    assert _ours([80.0, 81.0, 84.0], 80.5, 0.5).within is False
    assert _ours([1.0, 1.0, 1.0], 1.0, 0.0, digits=1).within is True     # a printed "± 0": ours rounds to it
    assert _ours([1.0, 1.0, 2.0], 1.0, 0.0, digits=1).within is False
    assert _ours([], float("nan"), None, note="never").within is True    # a printed dash: a seed of ours never reached it
    assert _ours([3.0], float("nan"), None, note="2 never").within is True
    assert _ours([3.0, 2.0, 2.0], float("nan"), None).within is False    # every seed reached it
    assert _ours([2.0, 2.0], 2.0, 0.0, note="1 never").within is False   # the notebook's mean would be NaN: a dash
    assert _ours([70.0], 71.0, None).within is None                      # one seed, no printed std: no verdict
    assert _ours([70.0, 72.0, 74.0], 71.0, None).within is True          # our mean ± 2 of our std contains it


def test_a_cause_counts_as_measured_only_where_its_ablation_moves_the_cell_in(tmp_path):
    folder = {"paths": ["docs/results/clove_authors_code_runs/ls2_authors_sets"], "ignore": ["partition.cluster_seed"]}
    reg = {"data_here": ["fashion_mnist"], "runs": ["docs/results/clove_authors_code_runs/images"],
           "causes": [{"cells": {"table": "clove_images", "setting": "label_skew2", "dataset": "fashion_mnist",
                                 "metric": "accuracy"}, "measured": folder}]}
    cells = {e.cell: e for e in account.account(reg, ROOT) if e.cell.table == "clove_images"
             and e.cell.setting == "label_skew2" and e.cell.metric == "accuracy" and e.ours is not None}
    there = account.harvest(folder, ROOT)
    moved = [c for c, e in cells.items() if e.category == account.MEASURED]
    stayed = [c for c, e in cells.items() if e.category == account.UNEXPLAINED]
    assert moved, "the replayed label sets move no label skew 2 cell inside its band"
    assert all(there[c].within for c in moved)
    assert all(not there.get(c) or not there[c].within for c in stayed)
    assert all("leaves it outside" in cells[c].cause for c in stayed)


def test_an_argued_cause_stays_unexplained_and_is_printed_beside_the_cell():
    reg = {"data_here": ["fashion_mnist"], "runs": ["docs/results/clove_authors_code_runs/images"],
           "causes": [{"cells": {"table": "clove_images", "setting": "label_skew2", "metric": "accuracy"},
                       "argued": "read in their code, not run"}]}
    outside = [e for e in account.account(reg, ROOT) if e.cell.setting == "label_skew2" and e.cell.metric == "accuracy"
               and e.category in (account.MEASURED, account.UNEXPLAINED)]
    assert outside and all(e.category == account.UNEXPLAINED for e in outside)
    assert all("argued, not measured: read in their code" in e.cause for e in outside)


@pytest.mark.parametrize("registry,message", [
    ({"runs": ["docs/results/nowhere"]}, "run folder docs/results/nowhere does not exist"),
    ({"colour": 1}, r"unknown field\(s\) \['colour'\]"),
    ({"causes": [{"cells": {"table": "x"}}]}, "give exactly one of measured"),
    ({"causes": [{"cells": {"tabel": "x"}, "argued": "y"}]}, "cells must map key columns"),
    ({"causes": [{"cells": {"table": "x"}, "measured": "docs/cells.md", "quote": "not on that page at all"}]},
     "needs a quote found on it"),
])
def test_a_malformed_registry_is_a_one_line_error(tmp_path, registry, message):
    path = tmp_path / "cells.yaml"
    path.write_text(yaml.safe_dump(registry))
    with pytest.raises(account.AccountError, match=message):
        account.load(path, ROOT)


def test_a_folder_that_mixes_two_settings_of_one_cell_is_refused():
    with pytest.raises(account.AccountError, match="two rows give cell"):
        account.harvest("docs/results/paper_protocol/cam_runs/h100/t1", ROOT)


def test_fedsoft_table3_has_all_64_center_cells_beside_the_paper():
    cells = account.harvest("docs/results/fedsoft_runs/table3_synthetic", ROOT)
    assert len([c for c in cells if c.table == "fedsoft_table3_synthetic"]) == 64
    assert {(c.distribution, c.center) for c in cells} == {(d, j) for d in range(8) for j in range(8)}
