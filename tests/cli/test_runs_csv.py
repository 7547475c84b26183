"""`fedcluster-report runs-csv`: one row per finished run, its settings away from the algorithm's defaults named, an
unfinished run left out, and a missing directory or an output that cannot be written refused in one line, exit 2,
with nothing written."""
import csv

import pytest

from fedcluster.report.command import main
from test_report import make_run


def _main(*args):
    with pytest.raises(SystemExit) as e:
        main(["runs-csv", *map(str, args)])
    return e.value.code


def test_one_row_per_finished_run_with_its_non_default_settings(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    make_run(sweep / "a", 0)
    make_run(sweep / "b", 1, {"algorithm.init": "identical"})
    make_run(sweep / "c", 2, write_summary=False)                      # unfinished
    make_run(sweep / "d", 0, {"dataset.normalize": True})              # other inputs: its own row, not seed 0's twin
    out = tmp_path / "runs.csv"
    assert _main(out, sweep) == 0, capsys.readouterr().err
    rows = list(csv.DictReader(out.open()))
    assert [(r["seed"], r["options"]) for r in rows] == [("0", ""), ("0", "dataset.normalize=True"),
                                                         ("1", "init=identical")]
    assert rows[0]["run_dir"] == "a" and rows[0]["method"] == "ifca"
    assert "3 runs" in capsys.readouterr().out
    other = tmp_path / "other.csv"
    assert _main(other, tmp_path / "nope") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a directory" in err and not other.exists()


def test_an_output_that_cannot_be_written_is_refused_before_anything_is_written(tmp_path, capsys):
    make_run(tmp_path / "sweep" / "a", 0)
    (tmp_path / "file").write_text("x")
    for out in (tmp_path / "sweep", tmp_path / "file" / "runs.csv"):
        assert _main(out, tmp_path / "sweep") == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "cannot be written" in err and "allowed" in err
    assert (tmp_path / "file").read_text() == "x"
