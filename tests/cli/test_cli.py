"""The installed `fedcluster` command, run from a directory outside the repository."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

COMMON = ["partition.num_clients=10", "partition.min_samples=20", "partition.max_samples=30",
          "train.epochs=1", "rounds=2", "dataset.test_size=100"]
SMALL_CLI = COMMON + ["algorithm.selection_size=5"]


def _script(name):
    beside = Path(sys.executable).parent / name     # the venv running pytest
    return str(beside) if beside.exists() else shutil.which(name)


def _fedcluster():
    exe = _script("fedcluster")
    if exe is None:
        pytest.fail("the fedcluster console script is not installed (pip install -e .)")
    return exe


def test_installed_cli_runs_from_any_directory(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([_fedcluster(), *SMALL_CLI, f"hydra.run.dir={out}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("config.yaml", "metrics.csv", "summary.json", "assignments.csv", "centers.png", "importance.png"):
        assert (out / name).exists(), name
    metrics = pd.read_csv(out / "metrics.csv")
    assert list(metrics.columns) == ["run_id", "algorithm", "dataset", "partition", "seed",
                                     "round", "model", "model_index", "eval_set", "metric", "value"]
    assert set(metrics["eval_set"]) >= {"theta_0", "theta_1", "local_test", "local_train"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["algorithm"] == "fedsoft" and summary["partition"] == "mix_10_90"
    assert set(summary["matched_center"]) == {"theta_0", "theta_1"}


def test_cli_multirun_and_report(tmp_path):
    sweep = tmp_path / "sweep"
    proc = subprocess.run([_fedcluster(), "-m", *COMMON, "algorithm=fedavg,ifca", "plots=false",
                           f"hydra.sweep.dir={sweep}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len(list(sweep.rglob("summary.json"))) == 2
    rep = subprocess.run([_script("fedcluster-report"), str(sweep)], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert "fedavg" in rep.stdout and "ifca" in rep.stdout
    assert (sweep / "report.md").exists()


def test_a_sweep_job_with_an_over_long_name_gets_a_shortened_directory_it_finds_again(tmp_path):
    """Overrides naming more than 255 bytes (NAME_MAX) once crashed the job with "File name too long";
    now the name keeps its head, a hash of the whole and its last overrides (seed=3, after the long value),
    and a second run skips it as finished."""
    sweep = tmp_path / "sweep"
    long_lam = "'0.1" + "0" * 260 + "1'"   # quoted: Hydra names the directory by the text, over NAME_MAX alone
    cmd = [_fedcluster(), "-m", *SMALL_CLI, f"algorithm.lam={long_lam}", "seed=3", "plots=false", f"hydra.sweep.dir={sweep}"]
    first = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    jobs = [p for p in sweep.iterdir() if p.is_dir()]
    assert len(jobs) == 1 and len(jobs[0].name.encode()) == 255
    head, digest, tail = jobs[0].name.split("~")
    assert head.startswith("algorithm.lam='0.1000") and len(digest) == 12
    assert tail.endswith(",seed=3,train.epochs=1") and "1'" not in head + tail
    assert (jobs[0] / "summary.json").exists()
    again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "1 skipped (already finished)" in again.stdout + again.stderr
    assert [p for p in sweep.iterdir() if p.is_dir()] == jobs


def test_cli_bad_value_is_one_line_error(tmp_path):
    proc = subprocess.run([_fedcluster(), *SMALL_CLI, "algorithm.selection_size=500"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    errors = [l for l in proc.stderr.splitlines() if "error" in l]
    assert len(errors) == 1 and "selection_size=500" in errors[0]
    assert "Traceback" not in proc.stderr


def test_help_lists_every_method_with_what_it_is():
    """`fedcluster --help` names every algorithm option on its own line, with its yaml's opening comment."""
    from fedcluster.command.cli import help_text
    from fedcluster.config.plugins import group_options
    from fedcluster.config.conf_dir import config_dir
    conf = config_dir()
    text = help_text(conf)
    methods = text.split("Methods (algorithm=...)", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    names = [line.split()[0] for line in methods]
    assert names == list(group_options("algorithm", conf)) and len(names) >= 19
    assert any(line.split(None, 1)[1].startswith("IFCA (Ghosh et al. 2020)") for line in methods if line.split()[0] == "ifca")
