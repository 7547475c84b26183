"""The figure and count subcommands of `fedcluster-report` (fedcluster/report/{cluster_sizes,importance,
clove_within}.py) on runs the CLI's config makes: each draws from the runs as sealed, and a run whose file was
changed after it finished, an input that is not there or a table without the columns it reads is refused in one
line, exit 2, before a figure is written."""
import pandas as pd
import pytest

from fedcluster.report.command import main
from fedcluster.runner import run


def _main(*args):
    with pytest.raises(SystemExit) as e:
        main([*map(str, args)])
    return e.value.code


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, request):
    """FedSoft and IFCA, three rounds each on the small synthetic regression setting (conftest.SMALL)."""
    from conftest import SMALL, make_cfg
    root = tmp_path_factory.mktemp("runs")
    dirs = []
    for algorithm, extra in (("fedsoft", ["algorithm.selection_size=6"]), ("ifca", [])):
        out = root / algorithm
        run(make_cfg(SMALL + [f"algorithm={algorithm}", "checkpoint_every=0"] + extra),
            str(out))
        dirs.append(out)
    return dirs


def test_cluster_sizes_draws_one_panel_per_run(two_runs, tmp_path, capsys):
    out = tmp_path / "sizes.png"
    assert _main("cluster-sizes", out, *two_runs) == 0, capsys.readouterr().err
    assert out.stat().st_size > 1000 and out.with_suffix(".pdf").is_file()
    assert "2 runs" in capsys.readouterr().out


def test_importance_draws_each_clients_final_weight_on_the_first_cluster(two_runs, tmp_path, capsys):
    from fedcluster.report.arguments import finished_runs
    from fedcluster.report.figures import final_first_cluster_weights
    fedsoft, ifca = finished_runs("test", two_runs)
    for r in (fedsoft, ifca):
        w = final_first_cluster_weights(r.summary, pd.read_csv(r.path / "assignments.csv"))
        assert len(w) == r.summary["num_clients"] and ((w >= 0) & (w <= 1)).all()
    ifca_w = final_first_cluster_weights(ifca.summary, pd.read_csv(ifca.path / "assignments.csv"))
    assert set(ifca_w.unique()) <= {0.0, 1.0}   # IFCA's assignment is one-hot
    out = tmp_path / "fig2.png"
    assert _main("importance", out, *two_runs) == 0, capsys.readouterr().err
    assert out.stat().st_size > 1000 and out.with_suffix(".pdf").is_file()


def test_a_run_changed_after_it_finished_is_not_drawn(two_runs, tmp_path, capsys):
    import shutil
    changed = tmp_path / "changed"
    shutil.copytree(two_runs[0], changed)
    with (changed / "cluster_sizes.csv").open("a") as f:
        f.write("99,0,1\n")
    out = tmp_path / "sizes.png"
    assert _main("cluster-sizes", out, changed) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no finished fedcluster run" in err and "cluster_sizes.csv" in err, err
    assert not out.exists()


@pytest.mark.parametrize("name", ["cluster-sizes", "importance"])
def test_a_figure_into_a_folder_or_through_a_file_is_refused(two_runs, tmp_path, capsys, name):
    (tmp_path / "file").write_text("x")
    for out in (tmp_path, tmp_path / "file" / "f.png"):
        assert _main(name, out, *two_runs) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "cannot be written" in err and "allowed: a .png" in err
    assert (tmp_path / "file").read_text() == "x"


def test_clove_within_counts_the_reports_verdict_columns(tmp_path, capsys):
    from fedcluster.report.clove_within import ACCURACY, ARI, TRAIN_ACCURACY
    frame = pd.DataFrame({"mixing": ["label_skew1", "label_skew1", "concept_shift"],
                          "method": ["fedavg", "clove", "clove"],
                          ACCURACY: [True, False, True], TRAIN_ACCURACY: [True, None, None],
                          ARI: [None, True, False]})
    path = tmp_path / "report_clove_images.csv"
    frame.to_csv(path, index=False)
    assert _main("clove-within", path) == 0
    assert capsys.readouterr().out.splitlines() == [
        "label_skew1: accuracy 2 of 3 within; ARI 1 of 1 within (methods: fedavg, clove)",
        "concept_shift: accuracy 1 of 1 within; ARI 0 of 1 within (methods: clove)"]


def test_clove_within_refuses_a_table_without_its_columns_in_one_line(tmp_path, capsys):
    path = tmp_path / "other.csv"
    path.write_text("mixing,method\nlabel_skew1,clove\n")
    for arg, needle in ((path, "has no column"), (tmp_path / "nope.csv", "cannot be read")):
        assert _main("clove-within", arg) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err and "allowed" in err, err
