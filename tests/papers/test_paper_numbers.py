"""The papers' reported numbers live in one tidy file (fedcluster/report/tables/paper_numbers.csv) with
one loader; the paper tables read them from there."""
import re
from pathlib import Path

import pandas as pd
import pytest

from fedcluster.report import tables
from fedcluster.report.tables.paper_numbers import CSV, UNBUILT, reported

PAPERS = Path(__file__).resolve().parents[3] / "shared" / "papers"
TEXT = {"FedSoft": "fedsoft-aaai2022.txt", "Fed-CAM": "cam-fedcam.txt", "CLoVE": "clove.txt"}


def test_the_file_is_tidy_one_number_per_row_each_with_its_source():
    frame = pd.read_csv(CSV, dtype=str, keep_default_na=False)
    assert list(frame.columns) == ["table", "setting", "k", "method", "dataset", "metric", "distribution", "center",
                                   "mean", "std", "source"]
    assert (frame["source"].str.split().str[0].isin(TEXT)).all()
    key = ["table", "setting", "k", "method", "dataset", "metric", "distribution", "center"]
    assert not frame.duplicated(key).any(), frame[frame.duplicated(key, keep=False)]


def test_every_table_with_reported_numbers_is_registered():
    """Or is named in UNBUILT: numbers recorded for a table no builder lays out yet."""
    used = set(pd.read_csv(CSV, dtype=str)["table"])
    assert not UNBUILT & set(tables.TABLES), UNBUILT & set(tables.TABLES)      # a built table leaves UNBUILT
    assert UNBUILT <= used, UNBUILT - used
    assert used <= set(tables.TABLES) | UNBUILT, used - set(tables.TABLES) - UNBUILT


def test_the_tables_read_the_file():
    from fedcluster.report.tables.cam import FEDCAM_TABLES
    from fedcluster.report.tables.clove import CLOVE_ACCURACY
    from fedcluster.report.tables.fedsoft import FEDSOFT_TABLE1_SYNTHETIC_MSE
    row = reported("fedsoft_table1_synthetic", setting="mix_10_90", distribution=0, center=0)
    assert FEDSOFT_TABLE1_SYNTHETIC_MSE["mix_10_90"][0][0] == float(row["mean"].iloc[0]) == 68.4
    acc, f1 = FEDCAM_TABLES[("cam_table1", "fashion_mnist", "cluster_dirichlet")][(5, "ifca_cam")]
    assert (acc.mean, acc.std, f1.mean, f1.std) == (93.33, 0.95, 79.64, 4.09)      # the paper's mean ± std
    plus, _ = FEDCAM_TABLES[("cam_table1", "fashion_mnist", "cluster_dirichlet")][(5, "fedavg_plus")]
    assert (plus.mean, plus.std) == (87.61, None)                                   # printed without a std
    clove = CLOVE_ACCURACY["label_skew1"][("clove", "mnist")]
    assert (clove.mean, clove.std) == (99.8, 0.0)
    assert clove.cell == ("clove_images", "label_skew1", None, "clove", "mnist", "accuracy", None, None)   # which printed number


def test_an_unknown_table_is_a_clear_error():
    with pytest.raises(KeyError, match="no reported numbers for table 'nope'"):
        reported("nope")


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers' text is not beside this checkout")
def test_every_reported_mean_appears_in_its_papers_text():
    frame = pd.read_csv(CSV, dtype=str, keep_default_na=False)
    texts = {paper: (PAPERS / name).read_text(errors="replace") for paper, name in TEXT.items()}
    missing = [(r.source, r.method, r.setting, r.mean) for r in frame.itertuples()
               if r.mean and r.mean.rstrip("0").rstrip(".") not in texts[r.source.split()[0]]]
    assert not missing, missing[:10]


def _number_pattern(value: str) -> str:
    """A regex for a decimal as a paper may print it: 9.0 as 9, 9.0 or 9.00; 0.7 as 0.7 or 0.70."""
    whole, _, frac = value.partition(".")
    frac = frac.rstrip("0")
    return re.escape(whole) + (rf"\.{frac}0*" if frac else r"(?:\.0+)?")


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers' text is not beside this checkout")
def test_every_reported_std_appears_beside_its_mean_in_its_papers_text():
    """A std in the file is the one the paper prints right after that mean ('mean ± std'; CLoVE's text
    prints each cell twice, run together, so no boundary is asked before the mean)."""
    frame = pd.read_csv(CSV, dtype=str, keep_default_na=False)
    frame = frame[frame["std"] != ""]
    assert (frame["source"].str.startswith("Fed-CAM")).sum() == 160      # Fed-CAM Tables 1-2's printed stds
    texts = {paper: (PAPERS / name).read_text(errors="replace") for paper, name in TEXT.items()}
    missing = [(r.source, r.method, r.setting, r.mean, r.std) for r in frame.itertuples()
               if not re.search(rf"{_number_pattern(r.mean)}\s*(?:\\pm|±)\s*{_number_pattern(r.std)}(?![\d])",
                                texts[r.source.split()[0]])]
    assert not missing, missing[:10]
