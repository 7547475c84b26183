"""What the CLI refuses in one line is one line everywhere a user types or points: the Python API,
fedcluster-report's --out, a launcher whose plugin is not installed."""
import subprocess
import sys

import pytest

import fedcluster
from fedcluster.errors import ConfigError


@pytest.mark.parametrize("overrides, needle", [
    ("algorithm=ifca rounds=1", "is not a list of strings"),
    (["rouns=3"], "rouns is not a setting (did you mean rounds?)"),
    (["algorithm=nosuch"], "algorithm=nosuch is unknown; allowed: cfl,"),
    (["a=b=c="], "cannot read the argument"),
    ({"algorithm": "ifca"}, "is a dict; fedcluster.run takes a list of override strings"),   # not "argument 'algorithm'"
])
def test_the_api_raises_fedclusters_one_line_error(tmp_path, overrides, needle):
    with pytest.raises(ConfigError) as e:
        fedcluster.run(overrides, output_dir=str(tmp_path / "run"))
    assert needle in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "run").exists()


def test_report_out_that_is_a_file_is_refused(tmp_path):
    from fedcluster.runner import run
    from conftest import SMALL, make_cfg
    run(make_cfg(SMALL + ["algorithm.selection_size=6"]), tmp_path / "run")
    (tmp_path / "out").write_text("mine")
    for out in (tmp_path / "out", tmp_path / "out" / "sub"):
        proc = subprocess.run([sys.executable, "-m", "fedcluster.report", str(tmp_path / "run"), "--out", str(out)],
                              capture_output=True, text=True, timeout=120)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and "is an existing file, not a folder" in lines[0], proc.stderr
    assert (tmp_path / "out").read_text() == "mine"


def test_a_launcher_without_its_plugin_names_the_extra_to_install():
    from hydra.errors import MissingConfigException
    from fedcluster.config.composition import one_line
    for name, extra in [("joblib", "joblib"), ("submitit_slurm", "slurm"), ("ray", "ray")]:
        e = MissingConfigException(f"In 'hydra/launcher/x': Could not find 'hydra/launcher/{name}'\n\nAvailable "
                                   "options in 'hydra/launcher':\n\tbasic", f"hydra/launcher/{name}")
        assert one_line(e) == (f"hydra/launcher={name} needs its launcher plugin, which is not installed: "
                               f"pip install 'fedcluster[{extra}]'")


def _one_line(proc, *needles):
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for n in needles:
        assert n in lines[0], lines[0]


def _fc(*args, cwd, env=None):
    import os
    from test_cli import _fedcluster
    return subprocess.run([_fedcluster(), *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_show_errors_are_one_line(tmp_path):
    _one_line(_fc("show", "algorithm=nosuch", cwd=tmp_path), "algorithm=nosuch is not an option")
    _one_line(_fc("show", "algorithm=ifca", "rouns=3", cwd=tmp_path), "rouns is not a setting (did you mean rounds?)")


def test_a_broken_conf_file_is_one_line_naming_it(tmp_path):
    import shutil
    from conftest import CONF
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    with open(conf / "config.yaml", "a") as f:
        f.write("defaults: [\n")
    _one_line(_fc("rounds=1", cwd=tmp_path, env={"FEDCLUSTER_CONF": str(conf)}), "config.yaml, line", "is not valid YAML")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("source, needle", [
    ("import sys\nsys.exit(3)\n", "cannot be imported: SystemExit: 3"),
    ("import torch.nn as nn\nclass WeirdNet(nn.Module):\n    def __init__(self, in_shape, num_outputs, f=lambda x: x):\n"
     "        super().__init__()\nFEDCLUSTER_OPTIONS = {'model': [WeirdNet]}\n",
     "model class myplugin.WeirdNet has a constructor signature fedcluster cannot turn into settings"),
])
def test_a_broken_plugin_is_one_line(tmp_path, source, needle):
    (tmp_path / "myplugin.py").write_text(source)
    _one_line(_fc("rounds=1", cwd=tmp_path, env={"FEDCLUSTER_PLUGINS": "myplugin"}), needle)


def test_importance_figure_on_a_missing_run_is_one_line(tmp_path, capsys):
    from fedcluster.report.command import main
    with pytest.raises(SystemExit) as e:
        main(["importance", str(tmp_path / "f.png"), str(tmp_path / "nope")])
    lines = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert e.value.code == 2 and len(lines) == 1 and "no such directory" in lines[0] and "nope" in lines[0], lines
    assert not (tmp_path / "f.png").exists()


def test_a_new_key_of_an_open_map_without_its_plus_is_told_to_add_one():
    """partition=flower's `options` holds the partitioner's own settings, none by default: `partition.options.alpha=0.3`
    (no +) is not a typo but a new key, and the line says how to add it."""
    from conftest import CONF, make_cfg
    from fedcluster.config.composition import one_line
    with pytest.raises(Exception) as e:
        make_cfg(["partition=flower", "partition.options.alpha=0.3"])
    assert one_line(e.value, CONF) == ("partition.options.alpha is not set yet: partition.options holds no keys; a new "
                                       "one is added with a plus, +partition.options.alpha=<value>")
    assert make_cfg(["partition=flower", "+partition.options.alpha=0.3"]).partition.options.alpha == 0.3


def _command(*args, env=None, cwd=None):
    import os
    return subprocess.run([sys.executable, "-m", "fedcluster", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, cwd=cwd)


@pytest.mark.parametrize("make, needle", [
    (lambda p: None, "does not exist"),
    (lambda p: p.mkdir(), "holds no config.yaml"),
])
def test_fedcluster_conf_at_a_missing_or_empty_folder_is_one_line_exit_2(tmp_path, make, needle):
    make(tmp_path / "conf")
    for args in (["rounds=1", f"hydra.run.dir={tmp_path / 'r'}"], ["show", "algorithm=ifca"]):
        _one_line(_command(*args, env={"FEDCLUSTER_CONF": str(tmp_path / "conf")}), f"FEDCLUSTER_CONF={tmp_path / 'conf'} {needle}")
    assert not (tmp_path / "r").exists()


def test_show_refuses_a_value_the_run_refuses():
    _one_line(_command("show", "partition=flower", "partition.kind=nosuch"), "partition.kind='nosuch' is unknown; allowed:")


def test_archive_runs_into_an_existing_file_is_one_line(tmp_path):
    from conftest import ROOT
    (tmp_path / "runs").mkdir()
    (tmp_path / "afile").write_text("mine")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "archive_runs.py"), str(tmp_path / "runs"),
                           str(tmp_path / "afile")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "an existing file, not a folder" in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "afile").read_text() == "mine"


@pytest.mark.parametrize("args, needle", [
    (["+preset=cam/fmnist/table1", "algorithm=local"],
     "algorithm=local chooses none of the sweep's rows; allowed: algorithm one of fedavg, fesem, fesem_cam, ifca, ifca_cam"),
    (["+preset=cam/fmnist/table1", "hydra.sweeper.rows=abc"], "hydra.sweeper.rows=abc: not a list of rows"),
    (["+preset=cam/fmnist/table1", "hydra.sweeper.rows=[a,b]"], "not a list of rows, each a list of overrides"),
])
def test_a_sweep_whose_rows_select_nothing_or_are_misshapen_is_one_line_and_writes_nothing(tmp_path, args, needle):
    _one_line(_command("-m", *args, f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path), needle)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, needle", [
    (["dataset=digits", "dataset.distributions=[{rotation: 0}]", "model=mlp", "partition=dirichlet",
      "partition.num_clients=10", "dataset.test_size=5"], "the test pool has 5 for 10 clients; raise the data set's test "
                                                          "samples (dataset.test_size"),
    (["dataset=fashion_mnist", "dataset.distributions=[{rotation: 0}]", "partition=label_skew2",
      "partition.reserve_fraction=1", "partition.min_cluster_fraction=1"], "from partition.reserve_fraction=1.0); lower "
                                                                           "partition.min_cluster_fraction=1.0"),
])
def test_a_refusal_names_the_setting_that_causes_it(tmp_path, args, needle):
    from conftest import make_cfg
    from fedcluster.runner import run
    if "dataset=fashion_mnist" in args:
        pytest.importorskip("fedcluster.data.readers")
        from fedcluster.data.readers import DEBIAN_FASHION_MNIST
        if not DEBIAN_FASHION_MNIST.exists():
            pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
    with pytest.raises(ConfigError) as e:
        run(make_cfg(args + ["rounds=1", "plots=false"]), tmp_path / "r")
    assert needle in str(e.value), str(e.value)
