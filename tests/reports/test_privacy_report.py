"""fedcluster-report privacy (issue 78): the table of accuracy at each privacy level and its three figures, from
finished runs composed as the command composes them."""
import json
import math

import pytest

from conftest import SMALL, make_cfg
from fedcluster.report import privacy as report
from fedcluster.runner import run

pytest.importorskip("dp_accounting")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("privacy_runs")
    for method in ("fedavg", "ifca"):
        for level in ([], ["privacy=client_dp", "privacy.noise_multiplier=2.0"]):
            name = f"{method}_{'dp' if level else 'none'}"
            run(make_cfg(SMALL + ["dataset=digits", "partition=clustered", "model=mlp", "checkpoint_every=0",
                                  f"algorithm={method}", "num_clusters=2", *level]), root / name)
    return root


def test_the_table_has_one_row_per_method_and_level_with_the_runs_epsilon(runs, tmp_path, capsys):
    assert report.main([str(runs), "--out", str(tmp_path)]) == 0
    table = (tmp_path / "privacy_table.md").read_text()
    assert capsys.readouterr().out == table
    rows = [line for line in table.splitlines()[2:]]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == ["fedavg", "fedavg", "ifca", "ifca"]
    groups = report.collect([runs])
    eps = groups[("ifca", "client_dp, clip 1", 2.0)][0]["epsilon"]
    assert math.isfinite(eps) and f"| ifca | client_dp, clip 1 | {eps:.2f} | 2 |" in table
    assert "| ifca | none | inf | 0 |" in table and "no interval: < 3 seeds" in table
    for name in ("accuracy_vs_epsilon.png", "accuracy_vs_megabytes.png", "cluster_size_vs_accuracy.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = tmp_path / "again"   # the page again from the records alone, without the runs
    assert report.main(["--records", str(tmp_path / "privacy_table.md").replace("privacy_table.md",
                                                                                "privacy_records.json"),
                        "--out", str(again)]) == 0
    assert (again / "privacy_table.md").read_text() == table
    assert (again / "privacy_records.json").read_text() == (tmp_path / "privacy_records.json").read_text()


def test_cluster_points_count_every_client_once(runs):
    (ifca,) = report.collect([runs])[("ifca", "none", 0.0)]
    points = ifca["clusters"]
    assert sum(n for n, _ in points) == 12 and all(0 <= a <= 100 for _, a in points)   # SMALL's 12 clients


def test_no_run_or_an_unreadable_records_file_is_one_line_and_exit_2(tmp_path, capsys):
    assert report.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"fedcluster-report privacy: no finished run under {tmp_path}"]
    (tmp_path / "bad.json").write_text("{not json")
    assert report.main(["--records", str(tmp_path / "bad.json")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"fedcluster-report privacy: --records {tmp_path / 'bad.json'} cannot be read")


def test_the_studys_page_is_its_records_rendered(tmp_path):
    """docs/results/privacy/dp_study.md's table is `fedcluster-report privacy --records` of the committed records."""
    from conftest import ROOT
    folder = ROOT / "docs" / "results" / "privacy"
    assert report.main(["--records", str(folder / "privacy_records.json"), "--out", str(tmp_path)]) == 0
    table = (tmp_path / "privacy_table.md").read_text()
    assert table == (folder / "privacy_table.md").read_text() and table in (folder / "dp_study.md").read_text()
    assert (tmp_path / "privacy_records.json").read_text() == (folder / "privacy_records.json").read_text()
    records = json.loads((folder / "privacy_records.json").read_text())
    assert len(records) == 60 and len({r["run_id"] for r in records}) == 60


def test_a_link_planted_at_a_figures_name_is_replaced_not_written_through(runs, tmp_path):
    outside = tmp_path / "outside.png"
    outside.write_bytes(b"mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / "accuracy_vs_epsilon.png").symlink_to(outside)
    assert report.main([str(runs), "--out", str(out)]) == 0
    assert outside.read_bytes() == b"mine" and not (out / "accuracy_vs_epsilon.png").is_symlink()
