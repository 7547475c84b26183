"""scripts/ablation_table.py (issue 76): before / after / paper per cell, computed from sealed runs; no verdict
below 3 seeds; a folder that is not there is one line, exit 2."""
import subprocess
import sys

from conftest import ROOT, SMALL, make_cfg
from fedcluster.runner import run

SCRIPT = ROOT / "scripts" / "ablation_table.py"
IFCA = SMALL + ["algorithm=ifca", "num_clusters=2", "rounds=2"]


def test_the_page_shows_before_after_and_judges_only_full_cells(tmp_path):
    for seed in (0, 1, 2):
        run(make_cfg(IFCA + [f"seed={seed}"]), tmp_path / "before" / f"s{seed}")
    run(make_cfg(IFCA + ["seed=0", "algorithm.first_round=random"]), tmp_path / "after" / "s0")
    out = tmp_path / "page.md"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--title", "T", "--before", str(tmp_path / "before"),
                           "--after", str(tmp_path / "after"), "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    row = next(l for l in out.read_text().splitlines() if l.startswith("| ifca |") and "| ARI |" in l)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[5].endswith("(1 of 3 seeds)") and "±" in cells[4] and "of 3 seeds" not in cells[4]


def test_a_missing_folder_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--title", "T", "--before", str(tmp_path / "nope"),
                           "--after", str(tmp_path / "nope"), "--out", str(tmp_path / "p.md")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "is not a folder of runs" in proc.stderr
    assert not (tmp_path / "p.md").exists()
