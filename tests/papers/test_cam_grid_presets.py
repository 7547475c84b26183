"""The Fed-CAM grids on Fashion-MNIST (conf/preset/cam/fmnist/table1.yaml, table2.yaml) and the rows sweeper
they run with (fedcluster/command/rows_sweeper.py): every job composes as the CLI composes it, has its own
directory, and is named as the archived runs of the GPU sessions are, so a grid over an archive skips them;
a key on the command line chooses rows; a real sweep runs the chosen jobs and skips them when run again."""
import subprocess
import sys

import pytest

from conftest import ROOT, archived_run_names, make_cfg
from fakedata import write_mnist_like
from fedcluster.command.rows_sweeper import row_jobs
from rows_grid import PARSER, grid, name

ARCHIVE = ROOT / "docs" / "results" / "paper_protocol" / "cam_runs"


@pytest.mark.parametrize("table,count", [("table1", 4 * (3 * 5 + 6)), ("table2", 4 * (3 * 5 + 6) - 2 * 3)])
def test_every_job_composes_and_has_its_own_directory(table, count):
    """4 cells x (3 seeds x 5 core rows + 6 sensitivity rows on seed 0); Table 2 runs FedAvg once per partition
    and seed (its client-wise data do not depend on K)."""
    jobs = grid(f"cam/fmnist/{table}")
    assert len(jobs) == count and len({name(j) for j in jobs}) == count
    composed = set()
    for job in jobs:
        shape = tuple(o for o in job if o.partition("=")[0] not in ("seed", "num_clusters"))
        if shape in composed:                    # seeds and K compose alike: each other job shape once (CI time)
            continue
        composed.add(shape)
        cfg = make_cfg([f"+preset=cam/fmnist/{table}", *job])   # raises on a key the composed algorithm lacks
        assert cfg.model.name == "fedavg_cnn" and cfg.partition.num_clients == 20 and cfg.table == f"cam_{table}"
    seeds = {o for j in jobs if "algorithm.init=identical" in j for o in j if o.startswith("seed=")}
    assert seeds == {"seed=0"}                   # a sensitivity row runs on seed 0 only
    cells = [tuple(o for o in j if o.split("=")[0] in ("partition", "num_clusters")) for j in jobs]
    assert cells == sorted(cells, key=cells.index) and len(set(cells[:count // 4])) == 1   # cell by cell


def test_the_archived_gpu_runs_are_jobs_of_the_grids_by_name():
    """The H100 sessions' run folders (archived under docs/results) carry exactly a grid job's name, so copying
    the archive into a sweep directory makes the grid skip them."""
    names = {name(j) for t in ("table1", "table2") for j in grid(f"cam/fmnist/{t}", ["hardware=cuda"])}
    archived = archived_run_names(ARCHIVE / "h100")
    assert len(archived) >= 49 and [a for a in archived if a not in names] == []


def test_a_key_the_rows_set_chooses_rows_and_any_other_goes_to_every_job():
    jobs = grid("cam/fmnist/table1", ["algorithm=ifca,ifca_cam", "hardware=cuda"])
    algorithms = [next(o for o in j if o.startswith("algorithm=")) for j in jobs]
    # per cell: IFCA and IFCA-CAM on 3 seeds, IFCA's two sensitivity rows and IFCA-CAM's one on seed 0
    assert len(jobs) == 4 * (2 * 3 + 3) and set(algorithms) == {"algorithm=ifca", "algorithm=ifca_cam"}
    assert all("hardware=cuda" in j for j in jobs)


def test_the_papers_200_clients_replace_the_per_client_scale():
    jobs = grid("cam/fmnist/table2", ["partition.num_clients=200", "dataset.train_size=null", "dataset.test_size=null"])
    assert len(jobs) == 78
    cfg = make_cfg(["+preset=cam/fmnist/table2", *jobs[0]])
    assert cfg.partition.num_clients == 200 and cfg.dataset.train_size is None and cfg.table == "cam_table2"


def test_without_rows_it_is_the_basic_product():
    params = PARSER.parse_overrides(["a=1,2", "b=x,y", "a=3"])   # a later key replaces an earlier one
    assert row_jobs(params, []) == [["a=3", "b=x"], ["a=3", "b=y"]]
    rows = [PARSER.parse_overrides(["m=p"]), PARSER.parse_overrides(["m=q", "b=x"])]
    assert row_jobs(PARSER.parse_overrides(["b=x,y"]), rows) == [["b=x", "m=p"], ["b=x", "m=q"], ["b=y", "m=p"]]


def test_a_grid_runs_through_the_cli_with_the_rows_sweeper_and_skips_its_finished_jobs(tmp_path):
    """The rows chosen on the command line (FedAvg; FeSEM as the matched control and, on seed 0, plain FeSEM), one
    cell, seed 0, one round on a tiny fake Fashion-MNIST: three jobs, named as the grid names them; run again,
    all three are skipped."""
    root = tmp_path / "data"
    write_mnist_like(root / "FashionMNIST" / "raw", n_train=400, n_test=100)
    sweep = tmp_path / "sweep"
    args = [sys.executable, "-m", "fedcluster", "+preset=cam/fmnist/table1", "algorithm=fedavg,fesem", "seed=0",
            "partition=cluster_dirichlet", "num_clusters=5", "partition.num_clients=10", "dataset.train_size=400",
            "dataset.test_size=100", "rounds=1", "eval_every=1", "train.steps=1", "model=lenet", "plots=false",
            f"dataset.root={root}", f"hydra.sweep.dir={sweep}"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    runs = sorted(p.parent.name for p in sweep.glob("*/summary.json"))
    assert len(runs) == 3 and sum(r.startswith("algorithm=fesem,") for r in runs) == 1   # plain FeSEM
    assert sum(r.startswith("algorithm.distance_on=fc,algorithm.startup_epochs=3,algorithm=fesem,") for r in runs) == 1
    assert "3 finished" in first.stdout + first.stderr
    again = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert again.returncode == 0 and "0 finished, 3 skipped" in again.stdout + again.stderr
