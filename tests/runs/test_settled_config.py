"""Issue 77: a run is settled before it is recorded. What the config leaves to the data (num_clusters: null, the
data's own count) is settled first, so config.yaml says what ran and agrees with summary.json; a run recorded
before that (config.yaml with the null) is still the same run to the same request."""
import yaml
from omegaconf import OmegaConf

from conftest import ROOT, assert_config_is_what_ran, make_cfg, unpacked_copy
from fedcluster.run_records.identity import accepted_fingerprints, as_settled, config_fingerprint, unsettled
from fedcluster.runner import requested_config, run

CAMPAIGN = ROOT / "docs" / "results" / "fedsoft_runs" / "table3_synthetic"   # recorded 2026-12-01, K null


def archived_config() -> dict:
    from fedcluster.report.runs import discover
    run = next(r for r in discover(CAMPAIGN).runs if r.path.name == "seed=0")
    return yaml.safe_load(run.files.read_text("config.yaml"))


def test_a_null_count_is_recorded_as_the_count_that_ran(tmp_path):
    cfg = make_cfg(["algorithm=ifca", "rounds=1", "progress=false", "plots=false"])
    assert cfg.num_clusters is None and "dataset.num_distributions" not in cfg   # left to the data
    run(cfg, tmp_path / "run")
    assert cfg.num_clusters is None   # the caller's config is left as given
    assert_config_is_what_ran(tmp_path / "run")
    recorded = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert recorded["num_clusters"] == recorded["algorithm"]["num_clusters"] == recorded["dataset"]["num_distributions"]


def test_a_run_recorded_before_runs_were_settled_is_the_same_run(tmp_path):
    old = archived_config()
    assert old["num_clusters"] is None and old["algorithm"]["num_clusters"] is None
    folder = unpacked_copy(CAMPAIGN, tmp_path / "archive") / "seed=0"
    recorded = (folder / "config.yaml").read_text()
    summary = run(OmegaConf.create(old), folder)   # the same request, settled now to K = 8
    assert summary.get("already_complete") and summary["config"]["num_clusters"] == 8
    assert (folder / "config.yaml").read_text() == recorded   # untouched


def test_the_settled_form_reads_an_old_record_and_its_fingerprints():
    old = archived_config()
    settled = {**old, "num_clusters": 8, "algorithm": {**old["algorithm"], "num_clusters": 8}}
    assert as_settled(old, settled) == settled
    assert as_settled(old, {**settled, "num_clusters": None}) == old   # nothing settled: nothing filled
    assert as_settled(settled, old) == settled                        # a settled record stays as it is
    assert unsettled(settled) == old
    assert config_fingerprint(old) in accepted_fingerprints(settled)   # a checkpoint written before: still resumes
    assert config_fingerprint(settled) in accepted_fingerprints(settled)


def test_requested_config_is_taken_after_settling(tmp_path):
    """The form config.yaml stores is taken from the settled config (runner.run settles first)."""
    from fedcluster.assemble import settle
    cfg = make_cfg(["algorithm=fedavg_plus"])
    before = requested_config(cfg)
    settle(cfg)
    after = requested_config(cfg)
    assert before["num_clusters"] is None and after["num_clusters"] == cfg.num_clusters is not None
    assert after["algorithm"]["num_clusters"] == after["num_clusters"]
