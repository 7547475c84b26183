"""scripts/per_run_csv.py: one row per finished run, its settings away from the algorithm's defaults
named, an unfinished run left out, and a missing directory refused in one line."""
import csv
import subprocess
import sys

from conftest import ROOT
from test_report import make_run


def test_one_row_per_finished_run_with_its_non_default_settings(tmp_path):
    sweep = tmp_path / "sweep"
    make_run(sweep / "a", 0)
    make_run(sweep / "b", 1, {"algorithm.init": "identical"})
    make_run(sweep / "c", 2, write_summary=False)                      # unfinished
    make_run(sweep / "d", 0, {"dataset.normalize": True})              # other inputs: its own row, not seed 0's twin
    out = tmp_path / "runs.csv"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "per_run_csv.py"), str(out), str(sweep)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(out.open()))
    assert [(r["seed"], r["options"]) for r in rows] == [("0", ""), ("0", "dataset.normalize=True"),
                                                         ("1", "init=identical")]
    assert rows[0]["run_dir"] == "a" and rows[0]["method"] == "ifca"
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "per_run_csv.py"), str(out), str(tmp_path / "nope")],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 1 and "is not a directory" in bad.stderr
