"""fedcluster-report on hand-made run directories (config.yaml + summary.json, no training):
grouping by differing config keys, skipped runs, sample std, formats, unwritable folders."""
import copy
import json
import math
import os
import statistics

import pandas as pd
import pytest
import yaml

import fedcluster.report.command as report
from fedcluster.report import build_report, main

BASE_CONFIG = {
    "dataset": {"_target_": "fedcluster.data.SyntheticRegression", "name": "synthetic", "dim": 10,
                "num_distributions": 2, "theta_var": 10.0, "noise_std": 1.0, "test_size": 100},
    "partition": {"_target_": "fedcluster.partitions.TwoGroupMix", "name": "mix_10_90", "num_clients": 6,
                  "min_samples": 20, "max_samples": 30, "local_test_fraction": 0.2, "minor": 0.1},
    "model": {"_target_": "fedcluster.models.LinearRegression", "name": "linear"},
    "algorithm": {"_target_": "fedcluster.algorithms.IFCA", "name": "ifca", "num_clusters": None,
                  "client_fraction": 1.0, "update": "mean", "init": "independent", "first_round": "evaluation"},
    "hardware": {"_target_": "fedcluster.hardware.Hardware", "device": "cpu", "dtype": "float32", "precision": "fp32"},
    "train": {"optimizer": "adam", "lr": 0.005, "epochs": 1, "batch_size": 10, "momentum": 0.0,
              "weight_decay": 0.0, "steps": None},
    "seed": 0, "rounds": 2, "engine": "auto", "eval_every": 1, "eval_local_train": True, "num_clusters": None,
    "warmup_rounds": 30, "checkpoint_every": 10, "progress": False, "plots": False, "table": None,
}


def _set(config: dict, dotted: str, value) -> None:
    node = config
    *parents, last = dotted.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value


def make_run(path, seed=0, overrides=None, summary=None, write_summary=True, status=None, config_file=True):
    """A fake finished run: config.yaml (BASE_CONFIG with dotted `overrides`) and a summary.json
    with the fields the report reads (`summary` entries override them)."""
    config = copy.deepcopy(BASE_CONFIG)
    config["seed"] = seed
    for k, v in (overrides or {}).items():
        _set(config, k, v)
    path.mkdir(parents=True, exist_ok=True)
    if config_file:
        (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    rounds = config["rounds"]
    s = {"algorithm": config["algorithm"]["name"], "dataset": config["dataset"]["name"],
         "partition": config["partition"]["name"], "model": config["model"]["name"], "seed": seed,
         "rounds": rounds, "task": "regression", "table": config.get("table"), "key_metric": "mse",
         "distributions": ["theta_0", "theta_1"], "num_clients": config["partition"]["num_clients"],
         "engine": "batched", "status": "complete",
         "config": {g: config[g] for g in ("dataset", "partition", "model", "algorithm", "train")}
         | {"num_clusters": 2, "warmup_rounds": 30},
         "versions": {"fedcluster": "0.1.0"},
         "local": {"local_test_mse": 1.0 + seed, "local_train_mse": 0.5 + seed},
         "centers": {"mse": {"theta_0": [1.0, 9.0], "theta_1": [8.0, 2.0]}},
         "matched_center": {"theta_0": 0, "theta_1": 1}, "best_center": {"theta_0": 0, "theta_1": 1},
         "ari": 1.0, "ari_by_round": [0.5] * (rounds - 1) + [1.0], "first_round_ari_ge_0.9": rounds}
    if status:
        s["status"] = status
    s.update(summary or {})
    if write_summary:
        (path / "summary.json").write_text(json.dumps(s))
    return path


def _csv(root, name="runs"):
    return pd.read_csv(root / f"report_{name}.csv")


def test_two_learning_rates_are_two_rows_of_three_seeds(tmp_path):
    for lr in (0.01, 0.1):
        for seed in range(3):
            make_run(tmp_path / f"lr{lr}_s{seed}", seed, {"train.lr": lr})
    text = build_report(tmp_path)
    frame = _csv(tmp_path)
    assert frame["train.lr"].tolist() == [0.01, 0.1]
    assert frame["seeds"].tolist() == [3, 3]
    assert frame["local test mse n"].tolist() == [3, 3]
    assert "Config keys that vary between these runs (laid out in the table: train.lr)" in text and "ddof=1" in text


def test_runs_of_different_lengths_are_never_averaged(tmp_path):
    make_run(tmp_path / "long", 0, {"rounds": 30})
    make_run(tmp_path / "short", 1, {"rounds": 12})
    build_report(tmp_path)
    frame = _csv(tmp_path)
    assert sorted(frame["rounds"].tolist()) == [12, 30] and frame["seeds"].tolist() == [1, 1]


def test_same_config_and_seed_twice_is_listed_and_counted_once(tmp_path, capsys):
    """A duplicate run is not fatal: the table is printed with one of them (the first by path) and
    the other is listed as skipped, naming the one it repeats."""
    make_run(tmp_path / "a", 0)
    make_run(tmp_path / "b", 0)
    make_run(tmp_path / "c", 1)
    build_report(tmp_path)
    assert _csv(tmp_path)["seeds"].tolist() == [2]
    report = (tmp_path / "report.md").read_text()
    assert f"{tmp_path / 'b'}" in report and f"the same config and seed 0 as {tmp_path / 'a'}" in report


def test_ignored_keys_do_not_split(tmp_path):
    make_run(tmp_path / "a", 0, {"progress": True, "checkpoint_every": 5})
    make_run(tmp_path / "b", 1, {"plots": True, "overwrite": True})
    build_report(tmp_path)
    assert _csv(tmp_path)["seeds"].tolist() == [2]


def test_algorithm_options_compared_only_within_one_algorithm(tmp_path):
    """fedsoft has options ifca lacks: no variation, one row per algorithm, no option columns."""
    make_run(tmp_path / "ifca", 0)
    make_run(tmp_path / "fedsoft", 0, {"algorithm": {"_target_": "fedcluster.algorithms.FedSoft", "name": "fedsoft",
                                                    "lam": 1.0, "tau": 2}})
    text = build_report(tmp_path)
    frame = _csv(tmp_path)
    assert frame["algorithm.name"].tolist() == ["fedsoft", "ifca"]
    assert "algorithm.lam" not in frame.columns and "algorithm.lam" not in text


def test_std_is_the_sample_std(tmp_path):
    for seed in range(3):
        make_run(tmp_path / f"s{seed}", seed)     # local_test_mse = 1, 2, 3
    text = build_report(tmp_path)
    frame = _csv(tmp_path)
    assert frame["local test mse mean"].item() == pytest.approx(2.0)
    assert frame["local test mse std"].item() == pytest.approx(statistics.stdev([1, 2, 3]))   # 1.0 (ddof=0: 0.816)
    assert "2.00 ± 1.0" in text


def test_csv_is_numeric(tmp_path):
    make_run(tmp_path / "one", 0)
    build_report(tmp_path)
    frame = _csv(tmp_path)
    for col in ("local test mse", "ARI", "c(theta_0) on theta_0"):
        assert pd.api.types.is_float_dtype(frame[f"{col} mean"]), col
        assert math.isnan(frame[f"{col} std"].item())      # one seed: no std
        assert frame[f"{col} n"].item() == 1


def test_skipped_runs_are_listed(tmp_path):
    make_run(tmp_path / "good", 0)
    bad = make_run(tmp_path / "truncated", 1)
    (bad / "summary.json").write_text((bad / "summary.json").read_text()[:40])
    make_run(tmp_path / "diverged", 2, status="diverged", summary={"error": "round 3: loss became NaN"})
    make_run(tmp_path / "unfinished", 3, write_summary=False)
    text = build_report(tmp_path)
    skipped = text[text.index("Skipped runs"):]
    assert f"{tmp_path / 'truncated'}: corrupt summary.json" in skipped
    assert f"{tmp_path / 'diverged'}: diverged: round 3: loss became NaN" in skipped
    assert f"{tmp_path / 'unfinished'}: unfinished" in skipped
    assert _csv(tmp_path)["seeds"].tolist() == [1]


def test_nothing_usable_is_a_one_line_error(tmp_path, capsys):
    make_run(tmp_path / "unfinished", 0, write_summary=False)
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and str(tmp_path) in err[0] and "unfinished" in err[0]


@pytest.mark.parametrize("target", ["missing", "file"])
def test_bad_directory_is_a_one_line_error(tmp_path, capsys, target):
    path = tmp_path / target
    if target == "file":
        path.write_text("x")
    with pytest.raises(SystemExit) as e:
        main([str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and str(path) in err[0]


def test_unrelated_folder_only_picks_fedcluster_runs(tmp_path):
    (tmp_path / "other" / "deep").mkdir(parents=True)
    (tmp_path / "other" / "summary.json").write_text('{"accuracy": 0.9}')
    (tmp_path / "other" / "deep" / "config.yaml").write_text("lr: 0.1\n")
    (tmp_path / "other" / "deep" / "checkpoint.pt").write_bytes(b"\0")
    make_run(tmp_path / "x" / "run_a", 0, {"train.lr": 0.01})
    make_run(tmp_path / "y" / "run_b", 0, {"train.lr": 0.02})
    text = build_report(tmp_path)
    assert _csv(tmp_path)["train.lr"].tolist() == [0.01, 0.02]
    assert "unfinished" not in text and "ignored 1 summary.json" in text


def test_config_from_summary_when_config_yaml_is_missing(tmp_path):
    make_run(tmp_path / "old", 0, config_file=False)
    text = build_report(tmp_path)
    assert _csv(tmp_path)["seeds"].tolist() == [1] and "config.yaml missing" in text


def test_latex_format(tmp_path, capsys):
    make_run(tmp_path / "a", 0, {"train.lr": 0.01})
    make_run(tmp_path / "b", 1, {"train.lr": 0.01})
    main([str(tmp_path), "--format", "latex"])
    out = capsys.readouterr().out
    assert "\\begin{tabular}" in out and "\\end{tabular}" in out
    assert "$\\pm$" in out and "±" not in out
    assert "local test mse" in out and "c(theta\\_0) on theta\\_0" in out
    assert (tmp_path / "report.tex").exists() and (tmp_path / "report_runs.csv").exists()


def test_latex_escaping():
    from fedcluster.report.cells import latex_escape
    assert latex_escape("a_b 50% & c ± d #1 {x} \\") == "a\\_b 50\\% \\& c $\\pm$ d \\#1 \\{x\\} \\textbackslash{}"


def _check_printed_with_warning(capsys, root):
    main([str(root)])
    captured = capsys.readouterr()
    assert "| seeds |" in captured.out or "seeds" in captured.out
    warning = captured.err.strip().splitlines()
    assert len(warning) == 1 and "could not write" in warning[0] and "report.md" in warning[0]
    assert "Traceback" not in captured.err


def test_read_only_folder_prints_the_report(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root ignores file permissions (the monkeypatched test covers this)")
    make_run(tmp_path / "run", 0)
    tmp_path.chmod(0o555)
    try:
        _check_printed_with_warning(capsys, tmp_path)
        assert not (tmp_path / "report.md").exists()
    finally:
        tmp_path.chmod(0o755)


def test_unwritable_report_files_print_the_report(tmp_path, capsys, monkeypatch):
    make_run(tmp_path / "run", 0)

    def refuse(path, *args):
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(report, "write_text", refuse)
    monkeypatch.setattr(report, "write_csv", refuse)
    monkeypatch.setattr(report, "write_figure", refuse)
    _check_printed_with_warning(capsys, tmp_path)


def test_paper_column_labelled_when_the_protocol_differs(tmp_path):
    table1 = {"table": "fedsoft_table1_synthetic", "partition.num_clients": 100, "partition.min_samples": 100,
              "partition.max_samples": 200,
              "algorithm": {"_target_": "fedcluster.algorithms.FedSoft", "name": "fedsoft", "lam": 1.0}}
    make_run(tmp_path / "paper_rounds" / "r", 0, dict(table1, rounds=50))
    make_run(tmp_path / "short" / "r", 0, dict(table1, rounds=20))
    matching = build_report(tmp_path / "paper_rounds")
    assert "| paper c(theta_0) |" in matching and "different protocol" not in matching
    text = build_report(tmp_path / "short")
    assert "paper c(theta_0) (different protocol: rounds 50 vs ours 20)" in text
    frame = pd.read_csv(tmp_path / "short" / "report_fedsoft_table1_synthetic.csv")
    assert not [c for c in frame.columns if "(" in c.replace("c(theta", "")]   # plain CSV column names
    assert "paper c(theta_0) mean" in frame.columns and set(frame["paper protocol differs"]) == {"rounds 50 vs ours 20"}
    assert "ours c(theta_0) − paper" in frame.columns and "ours c(theta_0) − paper within 2 std" in frame.columns


def test_ari_by_round_with_none_entries(tmp_path):
    """A warm-up method: rounds 1-3 without a clustering (None); the first round with ARI >= 0.9
    is a true round; the figure is written."""
    preset = {"table": "clove_linreg", "rounds": 6,
              "algorithm": {"_target_": "fedcluster.algorithms.CLoVE", "name": "clove"},
              "partition": {"_target_": "fedcluster.partitions.Clustered", "name": "clustered", "num_clients": 6},
              "dataset": {"_target_": "fedcluster.data.SeparatedRegression", "name": "separated_regression",
                          "delta": 0.1}}
    curve = [None, None, None, 0.5, 0.95, 1.0]
    for seed in range(2):
        make_run(tmp_path / f"s{seed}", seed, preset,
                 summary={"ari_by_round": curve, "first_round_ari_ge_0.9": 5, "ari": 1.0})
    text = build_report(tmp_path)
    frame = pd.read_csv(tmp_path / "report_clove_linreg.csv")
    assert math.isnan(frame["ARI r1 mean"].item()) and frame["ARI r1 n"].isna().item()
    assert frame["ARI r5 mean"].item() == pytest.approx(0.95)
    assert frame["first round ARI>=0.9 mean"].item() == 5
    assert (tmp_path / "ari_over_rounds.png").stat().st_size > 1000
    assert "ARI over rounds" in text


def test_old_right_aligned_ari_curve_is_padded(tmp_path):
    """Older summaries listed ARI only from the first clustered round: aligned to the end."""
    from fedcluster.report.tables import ari_curve, first_round_reached
    s = {"rounds": 5, "ari_by_round": [0.5, 0.95]}
    assert ari_curve(s) == [None, None, None, 0.5, 0.95] and first_round_reached(s) == 5


def test_sub_tables_per_other_varying_key(tmp_path):
    """A paper table lays out its own keys; any other varying key makes sub-tables."""
    preset = {"table": "fedsoft_table1_synthetic",
              "algorithm": {"_target_": "fedcluster.algorithms.FedSoft", "name": "fedsoft", "lam": 1.0}}
    for lr in (0.01, 0.1):
        for part in ("mix_10_90", "linear"):
            target = "fedcluster.partitions.LinearMix" if part == "linear" else "fedcluster.partitions.TwoGroupMix"
            make_run(tmp_path / f"{lr}_{part}", 0, dict(preset, **{"train.lr": lr, "partition.name": part,
                                                                  "partition._target_": target}))
    text = build_report(tmp_path)
    assert "### train.lr=0.01" in text and "### train.lr=0.1" in text
    assert "laid out in the table: partition.name" in text and "one table per combination of: train.lr" in text
    frame = pd.read_csv(tmp_path / "report_fedsoft_table1_synthetic.csv")
    assert set(frame["train.lr"]) == {0.01, 0.1} and set(frame["partition"]) == {"mix_10_90", "linear"}


def test_cam_keeps_one_k_free_run_per_seed(tmp_path):
    """FedAvg run once per K of a client-wise sweep: the same run twice, one kept per seed."""
    cam = {"table": "cam_table2", "dataset": {"_target_": "fedcluster.data.ImageSource", "name": "fashion_mnist"},
           "partition": {"_target_": "fedcluster.partitions.DirichletLabels", "name": "dirichlet", "num_clients": 10},
           "model": {"_target_": "fedcluster.models.LeNetCNN", "name": "lenet"}}
    extra = {"local": {"local_test_accuracy": 0.8, "local_test_macro_f1": 0.5}}
    for K in (5, 10):
        make_run(tmp_path / f"fedavg_K{K}", 0, dict(cam, num_clusters=K, algorithm={
            "_target_": "fedcluster.algorithms.FedAvg", "name": "fedavg"}), summary=extra)
        make_run(tmp_path / f"ifca_K{K}", 0, dict(cam, num_clusters=K, **{"algorithm.num_clusters": K}),
                 summary=dict(extra, config={"num_clusters": K}))
    text = build_report(tmp_path)
    frame = pd.read_csv(tmp_path / "report_cam_table2.csv")
    assert frame[["K", "method"]].astype(str).values.tolist() == [["1", "fedavg"], ["5", "ifca"], ["10", "ifca"]]
    assert frame["fashion_mnist/dirichlet seeds"].tolist() == [1, 1, 1]
    assert "1 identical-apart-from-K runs left out" in text


def test_a_cell_with_missing_seeds_says_how_many_it_holds():
    from fedcluster.report.cells import Stat
    assert Stat.of([1.0, None, 3.0]).text() == "2.00 ± 1.4 (n=2 of 3)"
    assert Stat.of([1.0, 2.0, 3.0]).text() == "2.00 ± 1.0"
    assert Stat.of([float("nan"), 5.0]).text() == "5.00 (n=1 of 2)"


def test_a_folder_of_links_gathers_seeds_from_two_sweeps_once_each(tmp_path):
    """Seeds run in separate sweeps are combined by linking their run folders into one folder;
    a run linked twice, or a link back to the folder itself, adds nothing and cannot loop."""
    make_run(tmp_path / "sweep_s0" / "run", 0)
    make_run(tmp_path / "sweep_s1" / "run", 1)
    combined = tmp_path / "combined"
    combined.mkdir()
    (combined / "s0").symlink_to(tmp_path / "sweep_s0" / "run", target_is_directory=True)
    (combined / "s1").symlink_to(tmp_path / "sweep_s1" / "run", target_is_directory=True)
    (combined / "s1_again").symlink_to(tmp_path / "sweep_s1", target_is_directory=True)
    (combined / "loop").symlink_to(combined, target_is_directory=True)
    build_report(combined)
    frame = _csv(combined)
    assert frame["seeds"].tolist() == [2]
    assert frame["local test mse n"].tolist() == [2]


def test_out_puts_the_files_elsewhere_and_table_keeps_one_papers_runs(tmp_path, capsys):
    """--out: a folder of committed runs stays as committed; --table: only the runs a preset filed
    under that paper table (a leaderboard folder holds several), and a name no run has is a one-line
    error naming those there, before anything is written."""
    runs, out = tmp_path / "runs", tmp_path / "out" / "deeper"
    make_run(runs / "a", 0, {"table": "fedsoft_table1_synthetic"})
    make_run(runs / "b", 0, {"table": None, "train.lr": 0.1})
    before = sorted(p.name for p in runs.iterdir())
    main([str(runs), "--out", str(out), "--table", "fedsoft_table1_synthetic"])
    text = capsys.readouterr().out
    assert sorted(p.name for p in runs.iterdir()) == before             # nothing written beside the runs
    assert (out / "report.md").read_text().strip() == text.strip()
    assert len(pd.read_csv(next(out.glob("report_*.csv")))) == 1       # run b (another table) left out
    with pytest.raises(SystemExit) as e:
        main([str(runs), "--table", "clove_images", "--out", str(tmp_path / "none")])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1
    assert "--table 'clove_images': no finished run under" in err and err.endswith("allowed: fedsoft_table1_synthetic")
    assert not (tmp_path / "none").exists()
