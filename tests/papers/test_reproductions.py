"""docs/reproductions.md is generated from docs/reproductions.yaml and the committed results it
quotes: it regenerates byte-identical, and an entry whose quote is no longer in its results page
(the numbers changed) stops generation with a one-line error naming the entry."""
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from fedcluster.report import reproductions


@pytest.fixture(autouse=True)
def in_the_repository(monkeypatch):
    monkeypatch.chdir(ROOT)   # `fedcluster-report reproductions` runs in the repository's root


def test_the_committed_page_regenerates_byte_identical(capsys):
    assert reproductions.main(["--check"]) == 0
    assert "docs/reproductions.md is up to date (" in capsys.readouterr().out
    assert "Not listed: Table 6 lists the GitHub repositories" in (ROOT / "docs" / "reproductions.md").read_text()


def test_every_table_of_the_three_papers_has_a_status():
    entries = reproductions.load()
    assert {e["paper"] for e in entries} == set(reproductions.PAPERS)
    assert all(e["status"] in reproductions.STATUSES for e in entries)


def _registry(tmp_path, entry):
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "page.md").write_text("| ifca | 91.4 ± 3.1 |\n")
    path = tmp_path / "docs" / "reproductions.yaml"
    path.write_text(yaml.safe_dump([entry]))
    return path


ENTRY = {"paper": "fedcam", "table": "Table 1", "what": "accuracy", "data": "here", "preset": "fedcluster +preset=x",
         "results": "docs/results/page.md", "time": None, "status": "partly", "reason": "budget",
         "evidence": ["| ifca | 91.4 ± 3.1 |"]}


def test_a_quote_that_left_its_results_page_stops_generation(tmp_path):
    registry = _registry(tmp_path, ENTRY)
    assert reproductions.load(registry, tmp_path)[0]["status"] == "partly"
    (tmp_path / "docs" / "results" / "page.md").write_text("| ifca | 90.0 ± 3.1 |\n")   # the numbers changed
    with pytest.raises(reproductions.RegistryError, match=r"entry 1 \(fedcam Table 1\): evidence '\| ifca \| 91.4"):
        reproductions.load(registry, tmp_path)


@pytest.mark.parametrize("change,message", [({"status": "done"}, "status='done' is unknown; allowed"),
                                            ({"results": "docs/results/gone.md"}, "gone.md does not exist"),
                                            ({"results": None, "evidence": []}, "needs the results page"),
                                            ({"evidence": []}, "status 'partly' needs evidence: at least one quote")])
def test_a_malformed_entry_is_a_one_line_error(tmp_path, change, message):
    registry = _registry(tmp_path, {**ENTRY, **change})
    with pytest.raises(reproductions.RegistryError, match=message):
        reproductions.load(registry, tmp_path)


def test_a_registry_that_is_not_valid_yaml_is_a_one_line_error(tmp_path):
    registry = tmp_path / "reproductions.yaml"
    registry.write_text("- paper: fedcam\n  reason: IFCA-CAM gains by about a point: Dirichlet K = 10\n")
    with pytest.raises(reproductions.RegistryError, match=r"line 2, column \d+: not valid YAML .*quote a text"):
        reproductions.load(registry, tmp_path)


def test_it_is_a_fedcluster_report_subcommand_that_names_where_it_must_run(tmp_path):
    # the command reaches reproductions.main (its own refusal below); what --check finds in the repository's root is
    # test_the_committed_page_regenerates_byte_identical's, in this process (a second whole check here is 15 s)
    away = subprocess.run([sys.executable, "-m", "fedcluster.report", "reproductions"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert away.returncode == 2 and "no docs/reproductions.yaml here; run it in the repository's root" in away.stderr
    assert list(tmp_path.iterdir()) == []
