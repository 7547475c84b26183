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
    from fedcluster.composition import one_line
    for name, extra in [("joblib", "joblib"), ("submitit_slurm", "slurm"), ("ray", "ray")]:
        e = MissingConfigException(f"In 'hydra/launcher/x': Could not find 'hydra/launcher/{name}'\n\nAvailable "
                                   "options in 'hydra/launcher':\n\tbasic", f"hydra/launcher/{name}")
        assert one_line(e) == (f"hydra/launcher={name} needs its launcher plugin, which is not installed: "
                               f"pip install 'fedcluster[{extra}]'")
