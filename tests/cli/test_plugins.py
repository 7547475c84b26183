"""A researcher's own method as first class as fedcluster's (plugins.py): the example package in
examples/fedtrim installed into a fresh virtual environment, its method run from the CLI with a
typed setting, a typo refused in one line, `--help` and `show` listing it, its runs in one report
beside a built-in's; the same code used without installing it (FEDCLUSTER_PLUGINS), in a
launcher's worker processes too; a plugin that cannot load is one line."""
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "fedtrim"
TINY = ["rounds=2", "partition.num_clients=10", "dataset.test_size=100", "train.epochs=1", "plots=false",
        "progress=false"]


def one_line_error(proc, *needles):
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fedcluster: error:"), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A new virtual environment on top of this one (its packages through a .pth file, so nothing
    is downloaded), with the example plugin installed into it by pip, from a copy of its folder."""
    pytest.importorskip("setuptools")
    root = tmp_path_factory.mktemp("plugin")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    inner = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    Path(inner, "outer_env.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n"
                                                    for p in site.getsitepackages()))
    shutil.copytree(EXAMPLE, root / "fedtrim_src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          str(root / "fedtrim_src")], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr[-2000:]
    return root, python


def cli(python, cwd, *args, env=None):
    return subprocess.run([str(python), "-m", "fedcluster", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


def test_an_installed_plugin_is_first_class(venv):
    root, python = venv
    work = root / "work"
    work.mkdir(exist_ok=True)
    help_text = cli(python, work, "--help").stdout
    assert "fedtrim" in help_text.split("Presets")[0] and "entry point 'fedtrim' of fedcluster-fedtrim" in help_text
    shown = cli(python, work, "show", "algorithm=fedtrim")
    assert shown.returncode == 0 and "trim             0.1    float  0.1            in [0, 0.5)" in shown.stdout, shown.stdout
    one_line_error(cli(python, work, "algorithm=fedtrim", "algorithm.trm=0.2"), "algorithm.trm is not a setting",
                   "did you mean trim?")
    one_line_error(cli(python, work, "algorithm=fedtrim", "algorithm.trim=abc"), "algorithm.trim=abc", "a number")
    one_line_error(cli(python, work, "algorithm=fedtrim", "algorithm.trim=0.7"), "algorithm.trim=0.7 is out of range",
                   "in [0, 0.5)")
    assert not (work / "outputs").exists()

    run = cli(python, work, "-m", "algorithm=fedtrim,fedavg", *TINY)   # the default sweep directory
    assert run.returncode == 0, run.stderr[-2000:]
    sweep = next((work / "outputs" / "multirun").iterdir())
    assert f"the table: fedcluster-report {sweep.relative_to(work)}" in run.stderr
    report = subprocess.run([str(python), "-m", "fedcluster.report", str(sweep)], capture_output=True, text=True,
                            timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    rows = [line for line in report.stdout.splitlines() if line.startswith(("| fedtrim", "| fedavg"))]
    assert len(rows) == 2 and "not a fedcluster config" not in report.stdout + report.stderr, report.stdout
    typed = cli(python, work, "algorithm=fedtrim", "algorithm.trim=0.3", *TINY, f"hydra.run.dir={work / 'one'}")
    assert typed.returncode == 0, typed.stderr[-2000:]
    assert "trim: 0.3" in (work / "one" / "config.yaml").read_text()


def test_the_example_plugins_own_tests_pass_where_it_is_installed(venv):
    root, python = venv
    proc = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                          cwd=root / "fedtrim_src", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "2 passed in" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_a_plugin_that_is_not_installed_runs_in_a_launchers_workers(tmp_path):
    """FEDCLUSTER_PLUGINS names a module in the working directory; joblib's workers compose and
    build its option too."""
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    shutil.copytree(EXAMPLE / "fedtrim", tmp_path / "fedtrim")
    env = {**os.environ, "FEDCLUSTER_PLUGINS": "fedtrim"}
    proc = cli(sys.executable, tmp_path, "-m", "hydra/launcher=parallel", "algorithm=fedtrim",
               "algorithm.trim=0,0.2", *TINY, f"hydra.sweep.dir={tmp_path / 'sweep'}", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 finished, 0 skipped (already finished), 0 failed" in proc.stderr
    assert len(list((tmp_path / "sweep").glob("*/summary.json"))) == 2


def test_a_plugin_that_cannot_load_is_one_line(tmp_path):
    env = {**os.environ, "FEDCLUSTER_PLUGINS": "no_such_plugin"}
    one_line_error(cli(sys.executable, tmp_path, "rounds=1", env=env),
                   "plugin 'no_such_plugin' ($FEDCLUSTER_PLUGINS) cannot be imported: ModuleNotFoundError")
    assert list(tmp_path.iterdir()) == []


def test_a_plugin_yaml_may_not_shadow_a_built_in_option(tmp_path):
    (tmp_path / "shadow" / "conf" / "algorithm").mkdir(parents=True)
    (tmp_path / "shadow" / "__init__.py").write_text("")
    (tmp_path / "shadow" / "conf" / "algorithm" / "ifca.yaml").write_text("name: ifca\n")
    env = {**os.environ, "FEDCLUSTER_PLUGINS": "shadow"}
    one_line_error(cli(sys.executable, tmp_path, "rounds=1", env=env), "plugin 'shadow'",
                   "the name of fedcluster's algorithm=ifca; rename the plugin's yaml")


def test_a_plugin_setting_without_a_type_or_default_is_one_line_when_unset(tmp_path):
    """A plugin's required setting that declares no type (`def __init__(self, width, ...)`): left unset, the run
    says in one line which key to set, not OmegaConf's MissingMandatoryValue trace."""
    shutil.copytree(EXAMPLE / "fedtrim", tmp_path / "fedtrim")
    source = tmp_path / "fedtrim" / "__init__.py"
    text = source.read_text()
    assert "def __init__(self, trim" in text
    source.write_text(text.replace("def __init__(self, trim", "def __init__(self, width, trim", 1))
    env = {**os.environ, "FEDCLUSTER_PLUGINS": "fedtrim"}
    one_line_error(cli(sys.executable, tmp_path, "algorithm=fedtrim", *TINY, f"hydra.run.dir={tmp_path / 'r'}", env=env),
                   "algorithm.width is required and has no default")
    assert not (tmp_path / "r").exists()
