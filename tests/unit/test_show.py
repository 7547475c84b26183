"""`fedcluster show`: an option's settings, from the signature its schema and checks come from."""
import subprocess
import sys

import pytest

from conftest import CONF
from fedcluster.command.show import show


def test_an_option_shows_every_setting_with_its_value_type_default_and_range():
    text = show(["algorithm=fedsoft"], CONF)
    row = next(line.split() for line in text.splitlines() if line.strip().startswith("smoother"))
    assert row[1:] == ["0.0001", "float", "0.0001", "in", "(0,", "1)"]
    assert any(line.split()[:2] == ["tau", "2"] for line in text.splitlines())


def test_overrides_and_interpolations_show_the_value_the_run_would_get():
    text = show(["algorithm=ifca", "num_clusters=7", "algorithm.update=eq6"], CONF)
    assert "${num_clusters} = 7" in text and "'eq6'" in text and "one of mean, eq6" in text


def test_a_nested_option_shows_its_base_algorithm_too():
    text = show(["algorithm=ifca_cam"], CONF)
    assert "algorithm.base (fedcluster.algorithms.IFCA)" in text


def test_a_settings_record_shows_each_settings_help_beside_its_rule():
    """CLoVE declares its settings as one record (rules.CheckedSettings): each row ends in what the setting is."""
    text = show(["algorithm=clove"], CONF)
    assert "(settings from the class's Settings record)" in text
    header = next(line for line in text.splitlines() if line.split()[:1] == ["setting"])
    assert header.split()[-3:] == ["what", "it", "is"]
    row = next(line for line in text.splitlines() if line.split()[:1] == ["first_round"])
    assert "one of evaluation, random" in row and row.endswith("round 1's assignment: by evaluation, as every round, or at random")


def test_a_list_setting_shows_the_rule_of_each_entry():
    assert any(line.split()[:3] == ["hidden", "[200]", "List[int]"] for line in show(["model=mlp"], CONF).splitlines())


def test_groups_and_their_options_are_listed():
    assert "label_skew1" in show([], CONF) and "label_skew1" in show(["partition"], CONF)


@pytest.mark.parametrize("args,needle", [(["algorithms=ifca"], "'algorithms' is not a config group"),
                                         (["algorithm=ifcaa"], "algorithm=ifcaa is not an option")])
def test_a_bad_argument_is_a_value_error_naming_it(args, needle):
    with pytest.raises(ValueError, match=needle):
        show(args, CONF)


def test_the_command_prints_it_and_a_bad_override_is_one_line():
    ok = subprocess.run([sys.executable, "-m", "fedcluster.command.cli", "show", "partition=dirichlet"],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "alpha" in ok.stdout and "> 0" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "fedcluster.command.cli", "show", "partition=dirichlet", "partition.alpah=1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "alpah" in bad.stderr


@pytest.mark.parametrize("command", [["-m", "fedcluster", "show", "algorithm=ifca"], ["-m", "fedcluster", "--help"],
                                     ["-m", "fedcluster.report", "RUN"]])
def test_a_reader_that_stops_early_is_not_an_error(command, tmp_path):
    """`fedcluster show algorithm=ifca | head`: the reader goes before the text is written (here it is gone
    before the command starts writing, as when head has read its lines); exit 0 and nothing on stderr, not
    a BrokenPipeError traceback."""
    from test_report import make_run
    make_run(tmp_path / "run")
    command = [str(tmp_path / "run") if a == "RUN" else a for a in command]
    proc = subprocess.Popen([sys.executable, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()                       # before the command's first write: it imports for seconds first
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 0 and err == "", err[-2000:]
