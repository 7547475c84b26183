"""fedcluster-report --baseline: differences to a baseline method with 95 % intervals over seeds,
on hand-made runs whose differences are known (make_run from test_report)."""
import math

import pandas as pd
import pytest

from fedcluster.report import build_report, main
from fedcluster.report.compare import difference, paired_difference, welch_difference
from test_report import make_run

FEDSOFT = {"_target_": "fedcluster.algorithms.FedSoft", "name": "fedsoft"}
FEDEM = {"_target_": "fedcluster.algorithms.FedEM", "name": "fedem"}
T2 = 4.302652729911275     # t(0.975, 2 df)
T4 = 2.7764451051977987    # t(0.975, 4 df)


def runs(root, name, algorithm, seeds, mse, ari=None):
    for i, seed in enumerate(seeds):
        overrides = {"algorithm": algorithm} if algorithm else {}
        summary = {"local": {"local_test_mse": mse[i]}, "ari": ari[i] if ari else 1.0}
        make_run(root / f"{name}_s{seed}", seed, overrides, summary)


def test_paired_and_welch_intervals_by_hand():
    b = {0: 1.0, 1: 2.0, 2: 3.0}
    x = {0: 1.5, 1: 2.6, 2: 3.4}                      # per-seed differences 0.5, 0.6, 0.4
    d = paired_difference(x, b)
    half = T2 * 0.1 / math.sqrt(3)
    assert (d.test, d.n) == ("paired", "3")
    assert d.diff == pytest.approx(0.5) and d.low == pytest.approx(0.5 - half) and d.high == pytest.approx(0.5 + half)
    assert d.excludes_zero
    w = welch_difference([1.5, 2.5, 3.5], [1.0, 2.0, 3.0])   # equal variances 1: df = 4, se = sqrt(2/3)
    assert (w.test, w.n) == ("Welch", "3 vs 3")
    assert w.low == pytest.approx(0.5 - T4 * math.sqrt(2 / 3)) and not w.excludes_zero
    assert difference(x, b).test == "paired"
    assert difference({3: 1.5, 4: 2.5, 5: 3.5}, b).test == "Welch"    # other seeds: other data draws
    one = difference({0: 2.0}, {0: 1.0})
    assert one.diff == 1.0 and one.test == "paired" and not one.has_interval and not one.excludes_zero


def test_report_pairs_by_seed_and_marks_what_excludes_zero(tmp_path, capsys):
    """Same seeds: paired, so a steady +0.5 shows although the seeds spread by 1 (Welch would not
    see it); a method on other seeds is compared by Welch, and its interval includes 0."""
    runs(tmp_path, "ifca", None, [0, 1, 2], [1.0, 2.0, 3.0])
    runs(tmp_path, "fedsoft", FEDSOFT, [0, 1, 2], [1.5, 2.6, 3.4])
    runs(tmp_path, "fedem", FEDEM, [3, 4, 5], [1.5, 2.5, 3.5])
    main([str(tmp_path), "--baseline", "ifca"])
    text = capsys.readouterr().out
    assert "Differences to ifca (95 % confidence intervals over seeds)" in text and "paired by seed" in text
    table = pd.read_csv(tmp_path / "report_runs_vs_ifca.csv")
    row = table.set_index("method")
    half = T2 * 0.1 / math.sqrt(3)
    assert row.loc["fedsoft", "MSE − ifca"] == pytest.approx(0.5)
    assert row.loc["fedsoft", "MSE − ifca ci low"] == pytest.approx(0.5 - half)
    assert bool(row.loc["fedsoft", "MSE − ifca excludes 0"]) and row.loc["fedsoft", "test"] == "paired (3)"
    assert row.loc["fedem", "test"] == "Welch (3 vs 3)" and not bool(row.loc["fedem", "MSE − ifca excludes 0"])
    assert "ifca (baseline)" in row.index
    md = (tmp_path / "report.md").read_text()
    assert "+0.5 [+0.252, +0.748] *" in md


def test_best_in_column_only_where_significantly_best(tmp_path):
    """ARI: fedsoft is above both others in every seed by a steady margin, so it is marked best;
    MSE: fedsoft has the lowest mean but not significantly (seed noise), so no mark."""
    runs(tmp_path, "ifca", None, [0, 1, 2], [1.0, 2.0, 3.0], ari=[0.50, 0.52, 0.48])
    runs(tmp_path, "fedsoft", FEDSOFT, [0, 1, 2], [0.5, 2.5, 2.0], ari=[0.90, 0.91, 0.89])
    runs(tmp_path, "fedem", FEDEM, [0, 1, 2], [1.2, 1.8, 3.1], ari=[0.60, 0.70, 0.65])
    build_report(tmp_path, baseline="ifca")
    row = pd.read_csv(tmp_path / "report_runs_vs_ifca.csv").set_index("method")
    assert bool(row.loc["fedsoft", "ARI − ifca best"]) and not bool(row.loc["fedem", "ARI − ifca best"])
    assert not row["MSE − ifca best"].fillna(False).astype(bool).any()
    assert "▲best" in (tmp_path / "report.md").read_text()


def test_baseline_as_the_significantly_best_is_marked_on_its_own_row(tmp_path):
    runs(tmp_path, "ifca", None, [0, 1, 2], [1.0, 2.0, 3.0], ari=[0.95, 0.96, 0.955])   # 3 seeds: an interval
    runs(tmp_path, "fedsoft", FEDSOFT, [0, 1, 2], [1.0, 2.0, 3.0], ari=[0.50, 0.52, 0.51])
    build_report(tmp_path, baseline="ifca")
    row = pd.read_csv(tmp_path / "report_runs_vs_ifca.csv").set_index("method")
    assert bool(row.loc["ifca (baseline)", "ARI − ifca best"]) and row.loc["ifca (baseline)", "ARI − ifca"] == 0
    assert "0.955 (its mean) ▲best" in (tmp_path / "report.md").read_text()


def test_two_seeds_give_no_interval_and_no_star(tmp_path):
    """Two seeds: t(0.975, 1) = 12.7 makes any interval say nothing, so none is printed, nor a star or a best."""
    runs(tmp_path, "ifca", None, [0, 1], [1.0, 2.0], ari=[0.95, 0.96])
    runs(tmp_path, "fedsoft", FEDSOFT, [0, 1], [1.5, 2.5], ari=[0.50, 0.52])
    build_report(tmp_path, baseline="ifca")
    md = (tmp_path / "report.md").read_text()
    assert "n=2: too few seeds for an interval" in md and "(its mean) ▲best" not in md
    row = next(l for l in md.splitlines() if l.startswith("| – | fedsoft |"))
    assert "[" not in row and " *" not in row, row


def test_a_star_only_where_both_sides_have_the_full_count_of_seeds(tmp_path):
    runs(tmp_path, "ifca", None, [0, 1, 2, 3], [1.0, 1.1, 0.9, 1.0])
    runs(tmp_path, "fedsoft", FEDSOFT, [0, 1, 2], [5.0, 5.1, 4.9])   # far above, but one seed short of ifca's 4
    build_report(tmp_path, baseline="ifca")
    md = (tmp_path / "report.md").read_text()
    row = next(l for l in md.splitlines() if l.startswith("| – | fedsoft |"))
    assert "+4 [+3." in row and "] *" not in row, row


def test_an_unknown_baseline_is_a_one_line_error_before_anything_is_written(tmp_path, capsys):
    runs(tmp_path, "ifca", None, [0], [1.0])
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path), "--baseline", "clove"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1
    assert "--baseline 'clove' is not a method of these runs; allowed: ifca" in err
    assert not list(tmp_path.glob("report*"))


def test_the_baseline_is_the_methods_default_configuration_beside_its_sensitivity_rows(tmp_path):
    """IFCA run at its defaults and again with init=identical (a sensitivity row): both set one
    algorithm option, so only the defaults (conf/algorithm/ifca.yaml) say which is the baseline;
    the other is compared with it like any configuration."""
    runs(tmp_path, "ifca", None, [0, 1, 2], [1.0, 2.0, 3.0])
    runs(tmp_path, "ifca_identical", {"_target_": "fedcluster.algorithms.IFCA", "name": "ifca", "num_clusters": None,
                                      "client_fraction": 1.0, "update": "mean", "init": "identical",
                                      "first_round": "evaluation"}, [0, 1, 2], [2.0, 3.0, 4.0])
    build_report(tmp_path, baseline="ifca")
    row = pd.read_csv(tmp_path / "report_runs_vs_ifca.csv").set_index("method")
    assert "ifca (init=independent) (baseline)" in row.index
    assert row.loc["ifca (init=identical)", "MSE − ifca"] == pytest.approx(1.0)
    assert row.loc["ifca (init=identical)", "test"] == "paired (3)"


def _cam_run(path, seed, overrides, accuracy):
    """A hand-made finished run of the cam/table1 preset at the per-client scale: config.yaml as
    the CLI composes it, a summary with the fields Fed-CAM's table reads."""
    from conftest import make_cfg
    from fedcluster.runner import requested_config
    import yaml
    config = requested_config(make_cfg(["+preset=cam/table1", "partition.num_clients=20", "dataset.train_size=6000",
                                        "dataset.test_size=1000", "num_clusters=5", f"seed={seed}", *overrides]))
    config.pop("hydra", None)
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    summary = {"local": {"local_test_accuracy": accuracy, "local_test_macro_f1": accuracy},
               "local_micro": {"local_test_accuracy": accuracy}, "num_clients": 20, "rounds": 100,
               "table": "cam_table1", "task": "classification", "key_metric": "accuracy",
               "config": {g: config[g] for g in ("dataset", "partition", "model", "algorithm", "train")},
               "cluster_sizes": [4, 4, 4, 4, 4], "ari": 1.0, "ari_by_round": [1.0] * 100}
    make_run(path, seed, None, summary, config_file=False)


def test_cam_sensitivity_rows_are_rows_of_one_table_labelled_alike_in_every_partition(tmp_path):
    """IFCA at its defaults in both partitions and with init=identical in one, IFCA-CAM in both:
    one table (not one per init), each IFCA configuration one row labelled by its init in every
    partition, and IFCA-CAM compared with IFCA's default configuration. FeSEM-CAM run only with
    lambda = 0.1 is labelled so, though no other FeSEM-CAM configuration is there to tell it apart."""
    for seed in (0, 1):
        for partition in ("cluster_dirichlet", "cluster_nclass"):
            _cam_run(tmp_path / f"ifca_{partition}_{seed}", seed, [f"partition={partition}", "algorithm=ifca"], 0.80)
            _cam_run(tmp_path / f"cam_{partition}_{seed}", seed, [f"partition={partition}", "algorithm=ifca_cam"],
                     0.85 + 0.01 * seed)
        _cam_run(tmp_path / f"ident_{seed}", seed, ["partition=cluster_dirichlet", "algorithm=ifca",
                                                     "algorithm.init=identical"], 0.70)
    _cam_run(tmp_path / "lam", 0, ["partition=cluster_dirichlet", "algorithm=fesem_cam", "algorithm.base.lam=0.1"], 0.6)
    build_report(tmp_path, baseline="ifca")
    table = pd.read_csv(tmp_path / "report_cam_table1.csv")
    assert "algorithm.init" not in table.columns          # laid out in rows, not split into sub-tables
    assert list(table.loc[table["method"] == "fesem_cam", "K"]) == ["5 (base.lam=0.1)"]   # a lone sensitivity row
    ifca = table[table["method"] == "ifca"].set_index("K")
    assert sorted(ifca.index) == ["5 (init=identical)", "5 (init=independent)"]
    assert ifca.loc["5 (init=independent)", "fashion_mnist/cluster_nclass seeds"] == 2
    assert ifca.loc["5 (init=identical)", "fashion_mnist/cluster_nclass seeds"] == 0
    diff = pd.read_csv(tmp_path / "report_cam_table1_vs_ifca.csv")
    cam = diff[diff["method"].str.startswith("ifca_cam")]
    assert len(cam) == 2 and list(cam["acc (pts) − ifca"]) == pytest.approx([5.5, 5.5])
    assert diff["method"].str.contains(r"init=identical\)$").sum() == 1      # compared, not the baseline


def test_cam_rows_apart_by_a_reporting_only_setting_stay_two_rows(tmp_path):
    """IFCA with and without the test-label column (report_label_pick) trains alike, but the runs are
    two configurations: two rows, each named by that setting, none dropped."""
    for pick in ("true", "false"):
        _cam_run(tmp_path / f"ifca_{pick}", 0, ["partition=cluster_dirichlet", "algorithm=ifca",
                                               f"algorithm.report_label_pick={pick}"], 0.8)
    build_report(tmp_path)
    table = pd.read_csv(tmp_path / "report_cam_table1.csv")
    assert sorted(table["K"]) == ["5 (report_label_pick=False)", "5 (report_label_pick=True)"]


def test_a_method_outside_the_paper_table_is_compared_with_the_baseline_inside_it(tmp_path):
    """CLoVE run under Fed-CAM's preset is no row of Fed-CAM's table (it goes to the generic table of
    runs); IFCA, inside that table, is still its baseline: the same whole setting, looked up among all
    the report's runs, and shown first as the baseline's row."""
    for seed in (0, 1, 2):
        _cam_run(tmp_path / f"ifca_{seed}", seed, ["partition=cluster_dirichlet", "algorithm=ifca"], 0.80 + 0.01 * seed)
        _cam_run(tmp_path / f"clove_{seed}", seed, ["partition=cluster_dirichlet", "algorithm=clove"], 0.90 + 0.01 * seed)
    text = build_report(tmp_path, baseline="ifca")
    generic = text.split("## Runs: final metrics per configuration")[1]
    assert "no ifca configuration to compare with" not in text
    diff = pd.read_csv(tmp_path / "report_runs_vs_ifca.csv")
    assert list(diff["method"]) == ["ifca (baseline)", "clove"]
    assert diff.loc[1, "acc (pts) − ifca"] == pytest.approx(10.0) and diff.loc[1, "test"] == "paired (3)"
    assert diff.loc[0, "acc (pts) − ifca baseline mean"] == pytest.approx(81.0)
    assert "81.0 (its mean)" in generic and "+10.0 [" in generic


def test_the_warm_up_only_ifca_cam_reads_is_its_setting_not_the_comparisons(tmp_path):
    """IFCA-CAM's FedAvg warm-up (algorithm.warmup_rounds, here 9 of a shorter run) is IFCA-CAM's own
    setting: FedAvg, which has none, is in the same setting and is compared."""
    for seed in (0, 1):
        _cam_run(tmp_path / f"fedavg_{seed}", seed, ["partition=cluster_dirichlet", "algorithm=fedavg"], 0.70)
        _cam_run(tmp_path / f"cam_{seed}", seed, ["partition=cluster_dirichlet", "algorithm=ifca_cam",
                                                   "algorithm.warmup_rounds=9"], 0.75 + 0.01 * seed)
    text = build_report(tmp_path, baseline="fedavg")
    assert "left out" not in text
    diff = pd.concat(pd.read_csv(f) for f in tmp_path.glob("report_*_vs_fedavg.csv"))
    row = diff.set_index("method")
    assert row.loc["ifca_cam", "acc (pts) − fedavg"] == pytest.approx(5.5)


def test_settings_without_the_baseline_are_named_even_where_no_setting_has_it(tmp_path):
    """--baseline fedsoft where fedsoft ran only in a setting of its own (another lr): the table of the
    other setting gets no differences, and says so, rather than saying nothing."""
    runs(tmp_path, "ifca", None, [0, 1], [1.0, 2.0])
    for seed in (0, 1):
        make_run(tmp_path / f"fedsoft_lr_s{seed}", seed, {"algorithm": FEDSOFT, "train.lr": 0.1},
                 {"local": {"local_test_mse": 1.0}})
    text = build_report(tmp_path, baseline="fedsoft")
    assert "no fedsoft configuration to compare with; left out." in text


def test_a_metric_the_baseline_lacks_gets_no_empty_column_and_k_is_no_method_option(tmp_path):
    for seed in (0, 1):
        make_run(tmp_path / f"fedsoft_s{seed}", seed, {"algorithm": FEDSOFT}, {"local": {"local_test_mse": 1.0}, "ari": None})
    runs(tmp_path, "ifca", None, [0, 1], [2.0, 2.5])
    build_report(tmp_path, baseline="fedsoft")
    diff = pd.read_csv(tmp_path / "report_runs_vs_fedsoft.csv")
    assert not any(c.startswith("ARI") for c in diff.columns) and "MSE − fedsoft" in diff.columns
    assert not diff["method"].str.contains("num_clusters").any()


def test_differences_are_printed_without_a_negative_zero_or_a_bound_rounded_onto_zero():
    from fedcluster.report.compare import Difference
    from fedcluster.report.cells import latex_escape
    assert Difference(-0.0004, -0.0009, -0.0002, "paired", "3", 100).text() == "−0.04 [−0.1, −0.02] *"
    assert Difference(0.0, -0.01, 0.01, "paired", "3", 100).text() == "0.0 [−1.0, +1.0]"
    assert Difference.of_baseline(0.4, 3, 100, False).text() == "40.0 (its mean)"
    assert Difference.of_baseline(0.955, 3, 1, True).text() == "0.955 (its mean) ▲best"
    assert Difference(4.6e-18, -0.05, 0.05, "paired", "3", 100).text() == "0.0 [−5.0, +5.0]"   # noise of equal means
    assert latex_escape("−1.2 ▲best") == r"$-$1.2 $\blacktriangle$best"


def test_runs_recorded_with_the_retired_top_level_warm_up_join_those_without_it(tmp_path):
    """Until 2026-11-28 every run's config had a top-level warmup_rounds (30 by default) that only IFCA-CAM read
    (it is now IFCA-CAM's own algorithm.warmup_rounds, identity.RETIRED_KEYS): fedsoft runs recorded with it and
    ifca runs without it are one setting and are compared (not left out, no row named after the key)."""
    for seed in (0, 1, 2):
        make_run(tmp_path / f"fedsoft_s{seed}", seed, {"algorithm": FEDSOFT, "warmup_rounds": 30},
                 {"local": {"local_test_mse": 1.0 + seed}})
        make_run(tmp_path / f"ifca_s{seed}", seed, {}, {"local": {"local_test_mse": 2.0 + seed}})
    text = build_report(tmp_path, baseline="fedsoft")
    assert "left out" not in text and "warmup_rounds" not in text
    diff = pd.read_csv(tmp_path / "report_runs_vs_fedsoft.csv").set_index("method")
    assert list(diff.index) == ["fedsoft (baseline)", "ifca"]
    assert diff.loc["ifca", "MSE − fedsoft"] == pytest.approx(1.0)


def test_a_k_set_on_the_algorithm_names_its_row_and_a_k_that_repeats_the_settings_does_not(tmp_path):
    # the setting's K is 3 (a run records the K it settled to, so its own count is never null there), each
    # IFCA run's K is set on the algorithm itself
    for seed, mse in ((0, 1.0), (1, 2.0)):
        make_run(tmp_path / f"fedsoft_s{seed}", seed, {"algorithm": FEDSOFT, "num_clusters": 3},
                 {"local": {"local_test_mse": mse}, "ari": 1.0})
    for k, mse in ((2, 4.0), (4, 6.0)):
        for seed in (0, 1):
            make_run(tmp_path / f"ifca_k{k}_s{seed}", seed, {"algorithm.num_clusters": k, "num_clusters": 3},
                     {"local": {"local_test_mse": mse + seed}})
    build_report(tmp_path, baseline="fedsoft")
    diff = pd.read_csv(tmp_path / "report_runs_vs_fedsoft.csv").set_index("method")
    assert diff.loc["ifca (num_clusters=2)", "MSE − fedsoft"] == pytest.approx(3.0)
    assert diff.loc["ifca (num_clusters=4)", "MSE − fedsoft"] == pytest.approx(5.0)


def test_a_table_of_the_baseline_alone_has_no_differences_table_but_says_why(tmp_path):
    runs(tmp_path, "ifca", None, [0, 1], [1.0, 2.0])
    text = build_report(tmp_path, baseline="ifca")
    assert "Differences to ifca" not in text and not (tmp_path / "report_runs_vs_ifca.csv").exists()
    assert "setting the table's only one: only ifca ran there; nothing to compare with it." in text
