"""The papers' reported numbers live in one tidy file (fedcluster/tables/paper_numbers.csv) with
one loader; the paper tables read them from there."""
from pathlib import Path

import pandas as pd
import pytest

from fedcluster import tables
from fedcluster.tables.paper_numbers import CSV, reported

PAPERS = Path(__file__).resolve().parents[2] / "shared" / "papers"
TEXT = {"FedSoft": "fedsoft-aaai2022.txt", "Fed-CAM": "cam-fedcam.txt", "CLoVE": "clove.txt"}


def test_the_file_is_tidy_one_number_per_row_each_with_its_source():
    frame = pd.read_csv(CSV, dtype=str, keep_default_na=False)
    assert list(frame.columns) == ["table", "setting", "k", "method", "dataset", "metric", "distribution", "center",
                                   "mean", "std", "source"]
    assert (frame["source"].str.split().str[0].isin(TEXT)).all()
    key = ["table", "setting", "k", "method", "dataset", "metric", "distribution", "center"]
    assert not frame.duplicated(key).any(), frame[frame.duplicated(key, keep=False)]


def test_every_table_with_reported_numbers_is_registered():
    used = set(pd.read_csv(CSV, dtype=str)["table"])
    assert used <= set(tables.TABLES), used - set(tables.TABLES)


def test_the_tables_read_the_file():
    from fedcluster.tables.cam import FEDCAM_TABLES
    from fedcluster.tables.clove import CLOVE_ACCURACY
    from fedcluster.tables.fedsoft import FEDSOFT_TABLE1_SYNTHETIC_MSE
    row = reported("fedsoft_table1_synthetic", setting="mix_10_90", distribution=0, center=0)
    assert FEDSOFT_TABLE1_SYNTHETIC_MSE["mix_10_90"][0][0] == float(row["mean"].iloc[0]) == 68.4
    assert FEDCAM_TABLES[("cam_table1", "fashion_mnist", "cluster_dirichlet")][(5, "ifca_cam")] == (93.33, 79.64)
    assert CLOVE_ACCURACY["label_skew1"][("clove", "mnist")] == (99.8, 0.0)


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
