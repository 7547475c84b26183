"""fedcluster installs anywhere (a built wheel carries conf/), runs as `python -m fedcluster`, and has a
Python API: fedcluster.run / fedcluster.load_runs."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pandas as pd

import fedcluster
from conftest import ROOT

TINY = ["rounds=2", "partition.num_clients=10", "algorithm.selection_size=5", "dataset.test_size=100",
        "plots=false", "progress=false"]


def test_python_api_runs_and_loads_runs(tmp_path):
    a = fedcluster.run(TINY, output_dir=tmp_path / "runs" / "a")
    b = fedcluster.run(TINY + ["seed=1"], output_dir=tmp_path / "runs" / "b")
    assert a.summary["status"] == "complete" and a.path == tmp_path / "runs" / "a"
    assert isinstance(a.metrics, pd.DataFrame) and set(a.metrics["round"]) == {0, 1}
    df = fedcluster.load_runs(tmp_path / "runs")
    assert df["run_dir"].nunique() == 2 and sorted(df["seed"].unique()) == [0, 1]
    assert (df["algorithm.name"] == "fedsoft").all() and "train.lr" in df
    assert len(df) == len(a.metrics) + len(b.metrics)

    final = fedcluster.load_runs(tmp_path / "runs", final=True)   # each series' last round only
    assert set(final["round"]) == {1} and final["run_dir"].nunique() == 2
    last = a.metrics[a.metrics["round"] == 1]
    mine = final[final["run_dir"] == str(a.path)]
    assert len(mine) == len(last) and sorted(mine["value"]) == sorted(last["value"])


def test_the_api_is_documented_where_it_is_called():
    """help(fedcluster.run) shows the function's own signature and docstring, not a pointer."""
    import inspect
    assert "overrides" in str(inspect.signature(fedcluster.run)) and "final" in str(inspect.signature(fedcluster.load_runs))
    assert "output_dir:" in fedcluster.run.__doc__ and "final:" in fedcluster.load_runs.__doc__


def test_api_default_directory_is_the_clis(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = fedcluster.run(TINY)
    assert r.path.parent == tmp_path / "outputs" / "runs" or r.path.parent.resolve() == tmp_path / "outputs" / "runs"
    assert "hydra" not in (r.path / "config.yaml").read_text()


def test_built_wheel_runs_from_any_directory(tmp_path):
    """The wheel carries conf/ inside the package: installed alone (no checkout on the path), the
    command runs from an unrelated directory, also as `python -m fedcluster`."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "outputs", "build", "*.egg-info",
                                                             "__pycache__", "docs"))
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []   # venvs of Python >= 3.12 lack it
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, str(src),
                    "-w", str(tmp_path / "wheel")], check=True, cwd=tmp_path)
    wheel = next((tmp_path / "wheel").glob("fedcluster-*.whl"))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True)
    assert (site / "fedcluster" / "conf" / "config.yaml").exists()
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("FEDCLUSTER_CONF", None)
    probe = subprocess.run([sys.executable, "-c", "import fedcluster.command.cli as c; print(c.__file__, c.config_dir())"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    assert probe.startswith(str(site)) and str(site / "fedcluster" / "conf") in probe
    done = subprocess.run([sys.executable, "-m", "fedcluster", *TINY, "hydra.run.dir=run"], cwd=work, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (work / "run" / "summary.json").exists()


def test_help_lists_groups_options_and_presets_not_schemas():
    out = subprocess.run([sys.executable, "-m", "fedcluster", "--help"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("fedcluster: runs clustered federated learning") and "powered by Hydra" not in out
    assert "+preset=clove/images" in out and "ifca_cam" in out and "fashion_mnist" in out
    assert "schemas" not in out and "Examples:" in out


def test_run_log_and_line_progress_outside_a_terminal(tmp_path):
    """Each evaluated round is one line of run.log; with the progress bar asked for but stderr not a
    terminal (here a pipe), the same lines go to stderr instead of a carriage-return bar."""
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "fedcluster", *TINY[:-1], "eval_every=1", f"hydra.run.dir={out}"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    log = (out / "run.log").read_text().splitlines()
    assert [l.split("fedcluster: ")[1].split(":")[0] for l in log[1:]] == ["round 1/2", "round 2/2"]
    assert "round 2/2: local_test_mse" in proc.stderr and "\r" not in proc.stderr
