"""The leaderboard: its presets' jobs (conf/preset/leaderboard/) compose (and the small-protocol ones build
their model on their data), and `fedcluster-report leaderboard` lays constructed runs with known values out
with their intervals, the significantly-best mark and the missing cells, and draws its figure."""
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, make_cfg
from fedcluster.assemble import build
from fedcluster.report import leaderboard
from fedcluster.report.grid import PRESETS, planned_jobs
from test_report import make_run

T2 = 4.302652729911275


def job_args(job: dict) -> list:
    """A job of the grid as the overrides it composes with: its preset and its sweeper parameters' values."""
    return [f"+preset={job['preset']}"] + [f"{k}={v}" for k, v in job.items() if k != "preset"]


def test_every_job_composes_and_the_small_protocol_builds(tmp_path):
    jobs = [job_args(j) for j in planned_jobs()]
    assert len(jobs) == 19 * 3 * (6 + 2 + 4)     # 19 methods x 3 seeds x (6 CLoVE + 2 Fed-CAM + 4 small settings)
    assert len(PRESETS) == 6
    shapes = {}
    for args in jobs:
        o = args
        shapes.setdefault(tuple(x for x in o if not x.startswith("seed=")), args)
    # every method in one setting and every setting with one method (all 228 shapes take minutes)
    first = {}
    for shape, args in shapes.items():
        method = next(x for x in shape if x.startswith("algorithm="))
        setting = tuple(x for x in shape if not x.startswith("algorithm"))
        first.setdefault(("method", method), args)
        first.setdefault(("setting", setting), args)
    for preset in PRESETS:
        make_cfg([f"+preset={preset}"])   # what the CLI composes at launch (the preset alone)
    for args in {id(a): a for a in first.values()}.values():
        make_cfg(args)                     # the job
    for dataset in ("digits", "mnist_subset"):     # data bundled with pip packages: build the model on it
        args = next(a for s, a in shapes.items() if f"dataset={dataset}" in s and "algorithm=fedavg" in s)
        build(make_cfg(args))
    # the plan `--plan` writes is exactly the presets' jobs (what the page lists as missing)
    assert leaderboard.main([str(tmp_path / "sweep"), "--plan"]) == 0
    plan = leaderboard.read_plan(tmp_path / "sweep")
    launched = {}
    for args in jobs:
        o = dict(x.split("=", 1) for x in args if "=" in x)
        launched.setdefault((o["dataset"], o["partition"]), {}).setdefault(o["algorithm"], set()).add(int(o["seed"]))
    assert plan == launched and sum(len(v) for m in plan.values() for v in m.values()) == len(jobs)


def test_the_plan_part_writes_the_whole_plan_and_runs_nothing(tmp_path):
    assert leaderboard.main([str(tmp_path / "sweep"), "--plan"]) == 0
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == ["leaderboard_plan.tsv"]
    plan = leaderboard.read_plan(tmp_path / "sweep")
    assert len(plan) == 12 and all(len(methods) == 19 for methods in plan.values())


def _run(root, name, algorithm, seed, acc, ari=None):
    make_run(root / f"{name}_s{seed}", seed, {"algorithm": {"_target_": "x", "name": algorithm}},
             {"local": {"local_test_accuracy": acc}, "ari": ari, "dataset": "fashion_mnist", "partition": "label_skew1",
              "algorithm": algorithm})


def test_the_page_shows_intervals_the_significant_best_and_missing_cells(tmp_path):
    for seed, (a, b) in enumerate([(0.80, 0.70), (0.82, 0.71), (0.81, 0.69)]):
        _run(tmp_path, "clove", "clove", seed, a, ari=1.0)
        _run(tmp_path, "fedavg", "fedavg", seed, b)
    _run(tmp_path, "ifca", "ifca", 0, 0.75, ari=0.5)
    out, fig = tmp_path / "lb.md", tmp_path / "fig" / "lb.png"
    assert leaderboard.main([str(tmp_path), "--out", str(out), "--figure", str(fig)]) == 0
    text = out.read_text()
    half = T2 * 0.01 / math.sqrt(3) * 100       # the sample sd of 0.80, 0.82, 0.81 (and 0.70, 0.71, 0.69) is 0.01
    assert f"| clove | 81.0 ± {half:.1f} |" in text and f"| fedavg | 70.0 ± {half:.1f} |" in text
    assert "| ifca | 75.0 (n=1) |" in text
    assert "fashion_mnist/label_skew1 K=2: 1 of 3 seeds: ifca" in text
    # each column's protocol, from its runs' configs (test_report's BASE_CONFIG: 6 clients, 2 rounds, Adam)
    assert "| fashion_mnist/label_skew1 K=2 | 6 | 2 | linear | " in text and "| adam lr 0.005, batch 10, 1 epoch |" in text
    assert fig.stat().st_size > 0
    # the same cells, unrounded, in the tidy CSV beside the page
    assert "The cells unrounded, one row per setting, method and metric: [lb.csv](lb.csv)." in text
    rows = pd.read_csv(tmp_path / "lb.csv", dtype={"seeds": str}).set_index(["method", "metric"])
    assert rows.loc[("clove", "local_test_accuracy"), "mean"] == pytest.approx(81.0)
    assert rows.loc[("clove", "local_test_accuracy"), "ci95_half_width"] == pytest.approx(half)
    assert rows.loc[("clove", "local_test_accuracy"), "seeds"] == "0;1;2"
    assert rows.loc[("ifca", "ari"), "n"] == 1 and math.isnan(rows.loc[("ifca", "ari"), "ci95_half_width"])
    assert rows.loc[("clove", "ari"), "unit"] == "ari" and rows.loc[("clove", "ari"), "num_clusters"] == 2
    assert not rows["significantly_best"].any()                    # as on the page: ifca's one seed blocks it
    # one seed of ifca: no interval against it, so no method is significantly best; with 3 seeds, clove is
    _run(tmp_path, "ifca", "ifca", 1, 0.74, ari=0.5)
    _run(tmp_path, "ifca", "ifca", 2, 0.76, ari=0.6)
    leaderboard.main([str(tmp_path), "--out", str(out), "--figure", str(fig)])
    text = out.read_text()
    assert f"| clove | 81.0 ± {half:.1f} ▲ |" in text and "None: every cell has 3 seeds." in text
    rows = pd.read_csv(tmp_path / "lb.csv").set_index(["method", "metric"])
    assert rows["significantly_best"].sum() == 2                      # clove's accuracy and its ARI (1.0 vs 0.53)
    assert rows.loc[("clove", "local_test_accuracy"), "significantly_best"]
    assert "| clove | 1.00 ± 0.00 ▲ |" in text     # ARI: 1.0 every seed against ifca's 0.5-0.6


def test_a_partition_that_counts_its_own_clients_shows_the_count_the_run_had(tmp_path):
    # partition=flower's num_clients is null by default (10, or natural_id's count of groups): the Settings
    # table reads the count the run trained, from its summary.json, not the config's null
    for seed in range(2):
        make_run(tmp_path / f"fedavg_s{seed}", seed, {"algorithm": {"_target_": "x", "name": "fedavg"},
                                                       "partition.num_clients": None},
                 {"local": {"local_test_accuracy": 0.8}, "dataset": "fashion_mnist", "partition": "flower",
                  "algorithm": "fedavg", "num_clients": 7})
    out = tmp_path / "lb.md"
    assert leaderboard.main([str(tmp_path), "--out", str(out), "--figure", str(tmp_path / "lb.png")]) == 0
    assert "| fashion_mnist/flower K=2 | 7 | 2 | linear | " in out.read_text()


def test_a_column_whose_methods_train_with_their_own_solvers_names_each_with_its_methods(tmp_path):
    # a solver profile gives each baseline its repository's solver: the Settings row says which method trained how,
    # not the first run's solver as the column's
    for seed in range(2):
        _run(tmp_path, "clove", "clove", seed, 0.8)
        make_run(tmp_path / f"cfl_s{seed}", seed, {"algorithm": {"_target_": "x", "name": "cfl"}, "train.optimizer": "sgd",
                                                   "train.lr": 0.1, "train.momentum": 0.9, "train.batch_size": 128},
                 {"local": {"local_test_accuracy": 0.7}, "dataset": "fashion_mnist", "partition": "label_skew1",
                  "algorithm": "cfl"})
    out = tmp_path / "lb.md"
    assert leaderboard.main([str(tmp_path), "--out", str(out), "--figure", str(tmp_path / "lb.png")]) == 0
    assert ("| linear | – | a pool of 100 split with the same shares | sgd lr 0.1 momentum 0.9, batch 128, 1 epoch (cfl); "
            "adam lr 0.005, batch 10, 1 epoch (clove) |" in out.read_text())


def test_missing_cells_include_planned_settings_not_started_and_the_time_is_summed(tmp_path):
    for seed in range(3):
        make_run(tmp_path / f"clove_s{seed}", seed, {"algorithm": {"_target_": "x", "name": "clove"}},
                 {"local": {"local_test_accuracy": 0.8}, "dataset": "fashion_mnist", "partition": "label_skew1",
                  "algorithm": "clove", "wall_time_s": 120.0, "device": "cpu"})
    (tmp_path / leaderboard.PLAN).write_text(
        "dataset\tpartition\tmethod\tseed\n"
        + "".join(f"fashion_mnist\t{p}\t{m}\t{s}\n" for p in ("label_skew1", "label_skew3")
                  for m in ("clove", "fedavg") for s in range(3)))
    out = tmp_path / "lb.md"
    assert leaderboard.main([str(tmp_path), "--out", str(out), "--figure", str(tmp_path / "lb.png")]) == 0
    text = out.read_text()
    missing = text.split("## Missing cells")[1]
    assert "fashion_mnist/label_skew1 K=2: 0 of 3 seeds: fedavg" in missing
    assert "fashion_mnist/label_skew3: not started (2 methods x 3 seeds)" in missing
    assert "clove" not in missing.split("label_skew3")[0]                 # its 3 seeds ran
    assert "| fashion_mnist/label_skew1 K=2 | 3 | 2.0 | 0.10 |" in text       # 3 runs of 120 s
    assert "The 9 planned runs not finished would take about 0 run-hours" in text   # 9 x 2 min


def test_a_gpu_run_counts_as_finished_but_not_in_this_machines_times_and_the_devices_are_named(tmp_path):
    for seed, device in enumerate(["cpu", "cpu", "cuda (NVIDIA H100 80GB HBM3)"]):
        make_run(tmp_path / f"clove_s{seed}", seed, {"algorithm": {"_target_": "x", "name": "clove"}},
                 {"local": {"local_test_accuracy": 0.8}, "dataset": "fashion_mnist", "partition": "label_skew1",
                  "algorithm": "clove", "wall_time_s": 120.0 if device == "cpu" else 15.0, "device": device})
    out = tmp_path / "lb.md"
    assert leaderboard.main([str(tmp_path), "--out", str(out), "--figure", str(tmp_path / "lb.png")]) == 0
    text = out.read_text()
    assert "Devices the runs ran on: cpu (2 runs), cuda (1 runs). A cell may hold seeds from each" in text
    assert "| fashion_mnist/label_skew1 K=2 | 2 | 2.0 | 0.07 |" in text            # the two CPU runs only
    assert "1 runs on other devices are left out of the times." in text
    assert "None: every cell has 3 seeds." in text                                 # the GPU seed is finished


def test_two_runs_of_one_cell_and_seed_are_refused(tmp_path):
    """Two runs of one method, setting and seed with different settings (here a solver value) would
    otherwise replace one another in the cell unseen."""
    for name, lr in (("clove_s0", 0.1), ("clove_s0_lr", 0.01)):
        make_run(tmp_path / name, 0, {"algorithm": {"_target_": "x", "name": "clove"}, "train.lr": lr},
                 {"local": {"local_test_accuracy": 0.8}, "dataset": "fashion_mnist", "partition": "label_skew1",
                  "algorithm": "clove", "device": "cpu"})
    with pytest.raises(SystemExit, match="clove seed 0 in fashion_mnist/label_skew1 K=2 has two runs"):
        leaderboard.collect(tmp_path)


def test_a_run_repeating_another_is_listed_as_not_counted(tmp_path):
    """The same config and seed twice (the same job on this CPU and on a GPU): the report's discovery keeps
    one, and the page names the other, with the run it repeats, instead of dropping it silently."""
    for name, device in (("clove_s0", "cpu"), ("clove_s0_again", "cuda (NVIDIA H100 80GB HBM3)")):
        make_run(tmp_path / name, 0, {"algorithm": {"_target_": "x", "name": "clove"}},
                 {"local": {"local_test_accuracy": 0.8}, "dataset": "fashion_mnist", "partition": "label_skew1",
                  "algorithm": "clove", "device": device})
    out = tmp_path / "lb.md"
    assert leaderboard.main([str(tmp_path), "--out", str(out), "--figure", str(tmp_path / "lb.png")]) == 0
    text = out.read_text()
    assert "## Runs not counted" in text
    assert "clove_s0_again: duplicate: the same config and seed 0 as" in text


def test_no_best_mark_where_the_difference_is_not_significant(tmp_path):
    for seed, (a, b) in enumerate([(0.80, 0.70), (0.60, 0.75), (0.90, 0.72)]):
        _run(tmp_path, "clove", "clove", seed, a)
        _run(tmp_path, "fedavg", "fedavg", seed, b)
    out = tmp_path / "lb.md"
    leaderboard.main([str(tmp_path), "--out", str(out), "--figure", str(tmp_path / "lb.png")])
    assert "▲" not in out.read_text().split("## Missing")[0].split("'▲'")[1]


def test_the_committed_page_is_made_from_the_committed_runs(tmp_path):
    """docs/leaderboard.md is `fedcluster-report leaderboard docs/results/leaderboard_runs` of the runs committed
    there (scripts/archive_runs.py), so the page cannot drift from them; each run's seal holds. The committed plan
    beside them is the presets' grid."""
    archive = ROOT / "docs" / "results" / "leaderboard_runs"
    table, found = leaderboard.collect(archive)
    assert found.runs and not found.skipped
    assert leaderboard.main([str(tmp_path), "--plan"]) == 0
    assert leaderboard.read_plan(tmp_path) == leaderboard.read_plan(archive)
    page = leaderboard.render(table, archive, "figures/leaderboard.png", leaderboard.read_plan(archive), found,
                              "leaderboard.csv")
    assert page == (ROOT / "docs" / "leaderboard.md").read_text()
    committed = pd.read_csv(ROOT / "docs" / "leaderboard.csv", dtype={"seeds": str})
    made = leaderboard.cells(table)
    assert committed.shape == made.shape and list(committed.columns) == leaderboard.CSV_COLUMNS
    assert (committed["mean"] - made["mean"]).abs().max() < 1e-9
    pd.testing.assert_frame_equal(committed, made.astype({"num_clusters": "float64"}), check_dtype=False, rtol=1e-12)
    # the settings the grid gave a method beyond its defaults are read from its runs
    assert "fedsoft: algorithm.lam=0.1, algorithm.selection_size=12;" in page
    assert "ifca_cam: warmup_rounds=9 (12 of its" in page                 # only the small protocol's runs


def test_runs_of_one_cell_in_different_configurations_are_refused_not_averaged(tmp_path):
    """Seeds 0-1 of ifca at 4 rounds and seed 2 at 3 would be averaged as one cell; the page refuses,
    naming the key, its values and their seeds. The device may differ (a GPU's seed joins the CPU's)."""
    for seed, rounds in ((0, 4), (1, 4), (2, 3)):
        make_run(tmp_path / f"ifca_s{seed}", seed, {"algorithm": {"_target_": "x", "name": "ifca"}, "rounds": rounds},
                 {"local": {"local_test_accuracy": 0.8}, "dataset": "fashion_mnist", "partition": "label_skew1",
                  "algorithm": "ifca"})
    with pytest.raises(SystemExit, match=r"ifca in fashion_mnist/label_skew1 K=2 has runs of different configurations "
                                         r"\(rounds: 3 \(seed 2\) vs 4 \(seeds 0, 1\)\)"):
        leaderboard.collect(tmp_path)
    make_run(tmp_path / "ifca_s2", 2, {"algorithm": {"_target_": "x", "name": "ifca"}, "rounds": 4,
                                       "hardware.device": "cuda"},
             {"local": {"local_test_accuracy": 0.8}, "dataset": "fashion_mnist", "partition": "label_skew1",
              "algorithm": "ifca"})
    table, _ = leaderboard.collect(tmp_path)
    assert sorted(table["fashion_mnist/label_skew1 K=2"]["ifca"]) == [0, 1, 2]


def test_a_sweep_of_ones_own_gets_its_page_inside_it_not_the_committed_one(tmp_path, monkeypatch):
    for seed in range(2):
        _run(tmp_path, "clove", "clove", seed, 0.8)
    page = ROOT / "docs" / "leaderboard.md"
    before = page.read_bytes()
    assert leaderboard.main([str(tmp_path)]) == 0
    assert page.read_bytes() == before
    for name in ("leaderboard.md", "leaderboard.png", "leaderboard.csv"):
        assert (tmp_path / name).stat().st_size > 0
    assert "[leaderboard.csv](leaderboard.csv)" in (tmp_path / "leaderboard.md").read_text()
    # a page put elsewhere links the sweep's figure and CSV relative to itself, the sweep given relative
    monkeypatch.chdir(tmp_path.parent)
    assert leaderboard.main([tmp_path.name, "--out", "pages/lb.md", "--csv", "pages/lb.csv"]) == 0
    page = (tmp_path.parent / "pages" / "lb.md").read_text()
    assert f"![accuracy by setting](../{tmp_path.name}/leaderboard.png)" in page and "[lb.csv](lb.csv)" in page


def test_the_users_rounds_set_ifca_cams_warm_up_share_and_their_own_warm_up_wins(tmp_path):
    """IFCA-CAM's warm-up is its own setting (30 % of the rounds), never a grid parameter; a user's rounds or
    warm-up on the command line set it for IFCA-CAM's jobs alone."""
    assert not any("warmup" in k for j in planned_jobs() for k in j)

    def ifca_cam(preset, *extra):
        job = next(job_args(j) for j in planned_jobs() if j["preset"] == preset and j["algorithm"] == "ifca_cam")
        return make_cfg(job + list(extra)).algorithm.warmup_rounds
    assert ifca_cam("leaderboard/small_digits") == 9              # 30 % of the small protocol's 30 rounds
    assert ifca_cam("leaderboard/small_digits", "rounds=3") == 0  # of the user's 3
    assert ifca_cam("leaderboard/fmnist_images", "rounds=20") == 6
    assert ifca_cam("leaderboard/fmnist_images", "rounds=20", "algorithm.warmup_rounds=2") == 2
    make_cfg(["+preset=clove/images", "algorithm=ifca_cam", "rounds=3", "algorithm.warmup_rounds=0"])   # composes and validates
    bad = subprocess.run([sys.executable, "-m", "fedcluster.report", "leaderboard"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage: fedcluster-report leaderboard" in bad.stderr


def test_clove_tables_7_to_9_page_is_the_report_of_the_committed_label_skew_runs(tmp_path, monkeypatch):
    """docs/results/paper_protocol/clove_label_skews/report.md (CLoVE Tables 7-9's rows, which
    docs/reproductions.md quotes) is `fedcluster-report docs/results/leaderboard_runs --table clove_label_skews
    --out <that folder>` of the committed runs, run from the repository root."""
    from fedcluster.report import make_report
    committed = "docs/results/paper_protocol/clove_label_skews"
    monkeypatch.chdir(ROOT)
    fresh = make_report(Path("docs/results/leaderboard_runs"), table="clove_label_skews", out=tmp_path).text
    assert fresh.replace(str(tmp_path), committed) == (ROOT / committed / "report.md").read_text()


@pytest.mark.slow   # about a minute (four 20-round jobs, twice started): `pytest -m slow` runs it
def test_a_part_of_the_grid_runs_with_the_parallel_launcher_from_its_preset_and_resumes_after_a_kill(tmp_path):
    """2 methods x 2 seeds of the digits part (label skew 1) through joblib's launcher; the sweep killed (SIGKILL) once a job has
    finished; the same command finishes the rest and skips the finished ones; the page lists the four runs."""
    import json
    import os
    import signal
    import time
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    sweep = tmp_path / "lb"
    command = [sys.executable, "-m", "fedcluster", "-m", "+preset=leaderboard/small_digits", "hydra/launcher=parallel",
               "partition=label_skew1", "algorithm=fedavg,ifca", "seed=0,1", "rounds=20", "checkpoint_every=5",
               f"hydra.sweep.dir={sweep}"]
    first = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    deadline = time.time() + 240
    while not list(sweep.glob("*/summary.json")):
        assert first.poll() is None and time.time() < deadline, first.stderr.read()[-2000:] if first.poll() else "slow"
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)   # the launcher and its workers, as a scheduler's kill does
    first.wait(timeout=30)
    done = len(list(sweep.glob("*/summary.json")))
    assert 1 <= done < 4
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{4 - done} finished, {done} skipped (already finished), 0 failed" in again.stderr, again.stderr[-1500:]
    runs = sorted((json.loads(p.read_text())["algorithm"], json.loads(p.read_text())["seed"])
                  for p in sweep.glob("*/summary.json"))
    assert runs == [("fedavg", 0), ("fedavg", 1), ("ifca", 0), ("ifca", 1)]
    assert leaderboard.main([str(sweep)]) == 0
    assert "digits/label_skew1" in (sweep / "leaderboard.md").read_text()


def test_the_traffic_section_shows_each_methods_mib_per_client_and_marks_no_best(tmp_path):
    """Issue 78: summary.json's communication as a leaderboard section (runs recorded before it have none, and the
    section is left out then); less traffic is cheaper, not better, so no method is marked best there."""
    for seed in range(3):
        for name, acc, mib in (("clove", 0.8 + seed / 100, 4.0), ("fedavg", 0.7 + seed / 100, 1.0)):
            make_run(tmp_path / f"{name}_s{seed}", seed, {"algorithm": {"_target_": "x", "name": name}},
                     {"local": {"local_test_accuracy": acc}, "dataset": "fashion_mnist", "partition": "label_skew1",
                      "algorithm": name,
                      "communication": {"bytes_down": int(mib * 2 ** 20 * 6 * 0.75),
                                        "bytes_up": int(mib * 2 ** 20 * 6 * 0.25), "clients": 6}})
    out = tmp_path / "lb.md"
    assert leaderboard.main([str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text()
    assert "## MiB per client sent and received over the run" in text
    assert "| clove | 4.00 ± 0.00 |" in text and "| fedavg | 1.00 ± 0.00 |" in text
    rows = pd.read_csv(tmp_path / "lb.csv").set_index(["method", "metric"])
    assert rows.loc[("clove", "mib_per_client"), "unit"] == "MiB" and not rows.loc[("clove", "mib_per_client"),
                                                                                     "significantly_best"]
    assert rows.loc[("clove", "local_test_accuracy"), "significantly_best"]   # accuracy still ranks
    _run(tmp_path / "old", "ifca", "ifca", 0, 0.75)                        # a run without communication
    leaderboard.main([str(tmp_path / "old"), "--out", str(tmp_path / "old.md")])
    assert "MiB per client" not in (tmp_path / "old.md").read_text()
