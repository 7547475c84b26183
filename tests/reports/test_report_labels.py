"""A report puts a run beside a paper's numbers only when the run's algorithm, data and model are
that table's (tables/common.Identity, checked in report/sections.py); any other run of a preset's
sweep (e.g. `+preset=fedsoft/table1_synthetic algorithm=ifca`) is shown in the generic table with a
note naming the key. Real tiny runs for the report; every preset composed (no training) for the
tie between each table's allow-lists and the presets."""
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

import fedcluster
from fedcluster.config.store import register_schemas
from fedcluster.report import build_report
from fedcluster.report.preset_data import data_mismatches
from fedcluster.report.runs import Run, identity_keys
from fedcluster.runner import requested_config
from fedcluster.report.tables import TABLES

from conftest import CONF

# The paper tables' presets. The leaderboard's (preset/leaderboard/) are a grid of every method on every setting
# under one protocol: they extend a CLoVE preset and file their runs under its table, whose rows the report fills
# with the methods and partitions that table holds, the others going to the generic table of runs
# (tests/reports/test_leaderboard.py checks their jobs).
PRESETS = sorted(str(p.relative_to(CONF / "preset").with_suffix("")) for p in (CONF / "preset").rglob("*.yaml")
                 if p.parent.name != "leaderboard" and yaml.safe_load(p.read_text()).get("table", "") is not None)
# (a preset that says `table: null`, as clove/ls3_participation does, runs a study of its own, not a paper's table)

TABLE1 = ["+preset=fedsoft/table1_synthetic", "hydra.mode=RUN", "partition=linear", "partition.num_clients=10",
          "partition.min_samples=20", "partition.max_samples=30", "train.epochs=1", "rounds=2", "dataset.test_size=100",
          "plots=false", "checkpoint_every=0"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Tiny real runs of the FedSoft Table 1 preset: its own method (fedsoft), IFCA, and FedSoft
    on another data set (separated_regression, 2 distributions); {name: run directory}."""
    root = tmp_path_factory.mktemp("table1_runs")
    made = {"fedsoft": ["algorithm.selection_size=5"],
            "ifca": ["algorithm=ifca"],
            "other_mix": ["algorithm.selection_size=5", "partition=mix_10_90", "partition.minor=0.3"],
            "own_mix": ["algorithm.selection_size=5", "partition=mix_10_90"],
            "other_data": ["algorithm.selection_size=5", "dataset=separated_regression", "dataset.num_distributions=2"]}
    for name, extra in made.items():
        fedcluster.run(TABLE1 + extra, str(root / name))
    return {name: root / name for name in made}


def _sweep(tmp_path, runs, *names) -> Path:
    """A sweep folder holding links to the named runs (the report follows links)."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    for n in names:
        (sweep / n).symlink_to(runs[n], target_is_directory=True)
    return sweep


def _section(text: str, heading: str) -> str:
    """The markdown of the section whose title starts with `heading` ('' when there is none)."""
    for part in text.split("\n## "):
        if part.lstrip("# ").startswith(heading):
            return part
    return ""


def test_ifca_run_of_the_table1_preset_is_not_under_fedsoft_table1(tmp_path, runs):
    sweep = _sweep(tmp_path, runs, "ifca")
    text = build_report(sweep)
    assert "FedSoft Table 1" not in text.split("Runs not shown under")[0]     # no paper section at all
    assert not (sweep / "report_fedsoft_table1_synthetic.csv").exists()
    assert ("Runs not shown under FedSoft Table 1 (synthetic) because their config is not that table's: "
            f"{sweep / 'ifca'}: algorithm.name ifca (the table's: fedsoft).") in text
    generic = _section(text, "Runs: final metrics per configuration")
    assert "algorithm.name=ifca" in generic and "paper c(" not in generic
    assert len(pd.read_csv(sweep / "report_runs.csv")) == 1


def test_the_presets_own_run_stays_under_its_table_and_ifca_leaves_it(tmp_path, runs):
    sweep = _sweep(tmp_path, runs, "fedsoft", "ifca")
    text = build_report(sweep)
    paper = _section(text, "FedSoft Table 1 (synthetic)")
    assert paper and "paper c(theta_0)" in paper and "ifca" not in paper
    assert "1 run(s) with table: fedsoft_table1_synthetic are not in this table" in paper
    frame = pd.read_csv(sweep / "report_fedsoft_table1_synthetic.csv")
    assert set(frame["partition"]) == {"linear"} and (frame["seeds"] == 1).all()
    generic = pd.read_csv(sweep / "report_runs.csv")
    assert generic["seeds"].tolist() == [1] and "algorithm.name=ifca" in _section(text, "Runs: final metrics")


def test_the_presets_own_runs_alone_make_the_paper_table_without_notes(tmp_path, runs):
    text = build_report(_sweep(tmp_path, runs, "fedsoft"))
    assert _section(text, "FedSoft Table 1 (synthetic)") and "not shown under" not in text
    assert "not in this table" not in text and "Runs: final metrics" not in text


def test_a_run_on_other_data_leaves_the_paper_table(tmp_path, runs):
    sweep = _sweep(tmp_path, runs, "fedsoft", "other_data", "ifca")
    text = build_report(sweep)
    note = text[text.index("Runs not shown under FedSoft Table 1 (synthetic)"):].split("\n")[0]
    assert f"{sweep / 'other_data'}: dataset.name separated_regression (the table's: synthetic)" in note
    assert f"{sweep / 'ifca'}: algorithm.name ifca (the table's: fedsoft)" in note
    assert "2 run(s) with table: fedsoft_table1_synthetic" in _section(text, "FedSoft Table 1")
    generic = pd.read_csv(sweep / "report_runs.csv")
    assert sorted(generic["dataset.name"]) == ["separated_regression", "synthetic"]
    assert sorted(generic["algorithm.name"]) == ["fedsoft", "ifca"]



def test_a_run_whose_partition_settings_are_not_the_tables_leaves_it(tmp_path, runs):
    """`partition.minor=0.3` under the option mix_10_90 is 30:70 data: no run of the 10:90 row
    (report/preset_data.py); the same option at its own settings, at a smaller scale, stays."""
    sweep = _sweep(tmp_path, runs, "other_mix", "own_mix")
    text = build_report(sweep)
    paper = _section(text, "FedSoft Table 1 (synthetic)")
    assert paper and "1 run(s) with table: fedsoft_table1_synthetic are not in this table" in paper
    assert f"{sweep / 'other_mix'}: partition.minor 0.3 (the table's: 0.1)." in text
    frame = pd.read_csv(sweep / "report_fedsoft_table1_synthetic.csv")
    assert set(frame["partition"]) == {"mix_10_90"} and (frame["seeds"] == 1).all()
    assert len(pd.read_csv(sweep / "report_runs.csv")) == 1

def test_moved_runs_of_two_tables_stay_apart_by_their_table(tmp_path):
    """The same IFCA config under two paper tables' names: both leave their tables, and `table`
    keeps them apart in the generic table (no 'same config and seed' error)."""
    from test_report import make_run
    make_run(tmp_path / "t1", 0, {"table": "fedsoft_table1_synthetic", "partition.name": "random"})
    make_run(tmp_path / "t6", 0, {"table": "fedsoft_table6_sigma0", "partition.name": "random"})
    text = build_report(tmp_path)
    assert "Runs not shown under FedSoft Table 1 (synthetic)" in text
    assert "Runs not shown under FedSoft Table 6 (sigma0 study, random partition)" in text
    frame = pd.read_csv(tmp_path / "report_runs.csv")
    assert sorted(frame["table"]) == ["fedsoft_table1_synthetic", "fedsoft_table6_sigma0"]


def test_a_key_missing_from_the_config_is_not_taken_for_the_tables():
    spec = TABLES["fedsoft_table1_synthetic"]
    flat = {"algorithm.name": "fedsoft", "dataset.name": "synthetic", "model.name": "linear", "partition.name": "linear"}
    assert spec.mismatches(Run(Path("r"), {}, flat, 0)) == ["dataset.num_distributions – (the table's: 2)",
                                                            "dataset.dim – (the table's: 10)",
                                                            "dataset.noise_std – (the table's: 1)",
                                                            "dataset.theta_var – (the table's: 10)"]
    paper_data = {"dataset.num_distributions": 2, "dataset.dim": 10, "dataset.noise_std": 1.0, "dataset.theta_var": 10.0}
    assert spec.mismatches(Run(Path("r"), {}, dict(flat, **paper_data), 0)) == []
    other_data = {**flat, **paper_data, "dataset.theta_var": 1.0}   # the paper's Table 1 draws theta with variance 10
    assert spec.mismatches(Run(Path("r"), {}, other_data, 0)) == ["dataset.theta_var 1 (the table's: 10)"]


# -- Every preset against its own table's Spec (composition only). Each preset's sweep grid is
# composed one parameter at a time (the others at their first value); the group choices
# (algorithm, dataset, partition, model) are what a table's Identity checks.
GROUPS = ("algorithm", "dataset", "partition", "model")
# Variations a preset's own comment documents for its table (not in its grid).
DOCUMENTED = {
    "clove/images": [["dataset=mnist"], ["dataset=cifar10", "model=lenet"], ["algorithm=cfl_calibrated"]],
    "clove/ablation": [["dataset=fashion_mnist"]],
    "clove/init_study": [["dataset=mnist"]],
    "fedsoft/letters": [["algorithm=fedem_top"]],   # FedEM scored by its top component, as FedSoft scored it
    "fedsoft/table5_lambda": [["dataset=fashion_mnist"]],
    "cam/table1": [["model=lenet"]],   # the earlier results' model, documented in the preset (issue 37)
    "cam/table2": [["model=lenet"]],
}
# Allowed values no preset run reaches but the paper's own table has (its rows or columns).
PAPER_ONLY = {
    ("clove_images", "partition.name"): {"label_skew3", "label_skew4"},      # Tables 7-9 in the same layout
    ("clove_label_skews", "partition.name"): {"label_skew1", "concept_shift", "label_skew2", "feature_skew"},
    ("clove_label_skews", "dataset.name"): {"mnist", "cifar10"},
    ("clove_label_skews", "algorithm.name"): {"cfl_calibrated"},
    ("clove_unsupervised", "dataset.name"): {"mnist", "cifar10"},           # Table 5's other columns
    # the runs made before the presets ran the authors' GenConvNet (docs/results/leaderboard_runs, Tables 7-9's page)
    ("clove_label_skews", "model.name"): {"lenet"},
}


def _grid(preset: str) -> dict:
    raw = yaml.safe_load((CONF / "preset" / f"{preset}.yaml").read_text())
    params = ((raw.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
    return {k: [v.strip() for v in str(values).split(",")] for k, values in params.items()}


def _variants(preset: str):
    """Override lists for the preset's runs: each grid value of a group (or of a key a table
    checks: names, the synthetic data's number of distributions and theta variance) with the
    other parameters at their first value, then the documented variations."""
    grid = _grid(preset)
    base = [f"{k}={v[0]}" for k, v in grid.items()]
    yield base
    for key, values in grid.items():
        if key in GROUPS or key.endswith(".name") or key in ("dataset.num_distributions", "dataset.theta_var"):
            for v in values[1:]:
                yield [o for o in base if not o.startswith(f"{key}=")] + [f"{key}={v}"]
    for extra in DOCUMENTED.get(preset, []):
        yield base + extra


_COMPOSED = {}


def _composed(preset: str):
    """[(overrides, config as config.yaml stores it)] for the preset's variants (cached)."""
    if preset not in _COMPOSED:
        register_schemas()
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            _COMPOSED[preset] = [(o, requested_config(compose("config", overrides=[f"+preset={preset}"] + o)))
                                 for o in _variants(preset)]
        GlobalHydra.instance().clear()
    return _COMPOSED[preset]


def test_every_table_has_an_identity_and_a_preset():
    tables_of_presets = {yaml.safe_load((CONF / "preset" / f"{p}.yaml").read_text())["table"] for p in PRESETS}
    assert tables_of_presets == set(TABLES)
    assert all(spec.identity is not None for spec in TABLES.values())


@pytest.mark.parametrize("preset", PRESETS)
def test_every_presets_runs_are_accepted_by_its_table(preset):
    for overrides, config in _composed(preset):
        spec = TABLES[config["table"]]
        run = Run(Path(preset), {}, identity_keys(config), config.get("seed"))
        assert spec.mismatches(run) == [], (preset, overrides)
        assert data_mismatches(config["table"], run) == [], (preset, overrides)   # its data are the table's


def test_every_allowed_value_comes_from_a_preset_or_the_papers_table():
    """The other direction: an allow-list wider than what the presets run would let a
    mislabelled run through, so each allowed value is reached by a preset (with its documented
    variations) or is in PAPER_ONLY."""
    reached = {}
    for preset in PRESETS:
        for _, config in _composed(preset):
            flat = identity_keys(config)
            for key, _ in TABLES[config["table"]].identity.allowed:
                reached.setdefault((config["table"], key), set()).add(flat.get(key))
    for name, spec in TABLES.items():
        for key, allowed in spec.identity.allowed:
            extra = set(allowed) - reached[(name, key)] - PAPER_ONLY.get((name, key), set())
            assert not extra, f"{name}: {key} allows {sorted(extra)}, which no preset runs"
