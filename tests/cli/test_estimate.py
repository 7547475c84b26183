"""`fedcluster estimate`: a sweep's jobs counted and timed before anything runs, nothing written but the
machine's rates (kept where FEDCLUSTER_RATES says, measured once per model), bad input one line and exit 2."""
import json
import subprocess
import sys

import pytest

from conftest import CONF
from fedcluster.command import estimate as estimate_module
from fedcluster.cost import rates as rates_module

SMALL = ["partition.num_clients=10", "rounds=3"]


@pytest.fixture
def rates_file(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "rates.json"
    monkeypatch.setenv("FEDCLUSTER_RATES", str(path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rates_module, "TARGET_SECONDS", 0.05)   # short calibrations: their code runs, their rates are not judged
    return path


def test_a_sweep_is_counted_per_method_and_in_total_and_nothing_is_written_but_the_rates(rates_file, capsys):
    assert estimate_module.main(["-m", "algorithm=fedavg,ifca", "seed=0,1"] + SMALL, CONF) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["method", "jobs", "TFLOP", "hours", "CPU-hours"]
    rows = {line.split()[0]: line.split() for line in lines[1:-1]}
    assert rows["fedavg"][1] == "2" and rows["ifca"][1] == "2" and rows["total"][1] == "4"
    assert lines[-1].startswith("at the rates measured on ")
    assert sorted(p.name for p in rates_file.parent.parent.iterdir()) == ["cache"]   # no run directory, no outputs/
    kept = json.loads(rates_file.read_text())
    (machine,) = kept
    assert len(kept[machine]) == 3   # the model's plain rates, and each method's rounds
    assert all(r["train"] > 0 and r["forward"] > 0 for r in kept[machine].values())


def test_kept_rates_are_read_not_measured_again(rates_file, capsys, monkeypatch):
    assert estimate_module.main(SMALL + ["algorithm=fedavg"], CONF) == 0
    first = capsys.readouterr().out

    def measured(*_a, **_k):
        raise AssertionError("measured again")
    monkeypatch.setattr(rates_module, "measure", measured)
    monkeypatch.setattr(rates_module, "measure_method", measured)
    assert estimate_module.main(SMALL + ["algorithm=fedavg"], CONF) == 0
    assert capsys.readouterr().out == first


def test_json_rows_count_each_kind_of_work_and_rounds_scale_them(rates_file, capsys):
    assert estimate_module.main(["--json", "-m", "algorithm=fedavg,ifca"] + SMALL, CONF) == 0
    fedavg, ifca = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert fedavg["score_flops"] == 0 < ifca["score_flops"]      # IFCA scores its K models every round
    assert fedavg["train_flops"] == ifca["train_flops"] > 0
    assert fedavg["seconds"] > 0 and fedavg["flops"] == pytest.approx(
        fedavg["train_flops"] + fedavg["score_flops"] + fedavg["evaluate_flops"])
    assert estimate_module.main(["--json", "partition.num_clients=10", "rounds=6", "algorithm=fedavg"], CONF) == 0
    six = json.loads(capsys.readouterr().out)
    assert six["train_flops"] == pytest.approx(2 * fedavg["train_flops"])


@pytest.mark.parametrize("args, words", [(["--bogus"], "--bogus is not an option of estimate"),
                                         (["rounds=0"], "rounds=0"),
                                         (["algorithm=nope"], "nope")])
def test_bad_input_is_one_line_and_exit_2(rates_file, capsys, args, words):
    assert estimate_module.main(args, CONF) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err and err.startswith("fedcluster: error: ")
    assert not rates_file.exists()


def test_the_command_line_runs_it(rates_file, tmp_path):
    out = subprocess.run([sys.executable, "-m", "fedcluster", "estimate", "algorithm.selection_size=5"] + SMALL,
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].split()[:2] == ["fedsoft", "1"]   # the default run's method
