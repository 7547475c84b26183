"""The end-to-end reliability harness (tests/reliability_check.sh): each case a fresh `fedcluster` process as a
user starts it (bad input refused in one line before anything is written; runs never lost, overwritten or mixed
under locks, concurrent starts, Ctrl-C, kill -9 and resume, divergence, multirun re-runs, report). About 8
minutes on 2 cores, so kept out of CI's 15: `pytest -m slow tests/cli/test_reliability.py` runs it."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest


@pytest.mark.slow
def test_every_reliability_case_passes(tmp_path):
    if shutil.which("fedcluster") is None:
        pytest.skip("needs the installed `fedcluster` command")
    script = Path(__file__).resolve().parents[1] / "reliability_check.sh"
    proc = subprocess.run(["bash", str(script), str(tmp_path / "work")], capture_output=True, text=True, timeout=1800)
    summary = re.search(r"(\d+) passed, (\d+) failed", proc.stdout)
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert summary and int(summary.group(2)) == 0 and proc.returncode == 0, "\n".join(failed) or proc.stdout[-3000:]
    assert int(summary.group(1)) > 100
