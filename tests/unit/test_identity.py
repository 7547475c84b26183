"""One declaration of a run's identity (fedcluster/run_records/identity.py) read by the fingerprint, the run
directory's check and Hydra's sweep directory names."""
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from conftest import CONF
from fedcluster.config.store import register_resolvers
from fedcluster.config.store import register_schemas
from fedcluster.run_records.identity import NAME_EXCLUDED_KEYS, VOLATILE_KEYS, config_fingerprint


def test_sweep_directory_names_leave_out_exactly_the_volatile_keys():
    register_resolvers()
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", return_hydra_config=True)
    excluded = list(cfg.hydra.job.config.override_dirname.exclude_keys)
    assert excluded == list(NAME_EXCLUDED_KEYS)
    assert {k for k in VOLATILE_KEYS if k != "hydra"} <= set(excluded)


def test_the_fingerprint_ignores_volatile_keys_only():
    base = {"rounds": 3, "train": {"lr": 0.1}, "progress": True}
    assert config_fingerprint(base) == config_fingerprint({**base, "progress": False, "plots": False,
                                                           "logger": {"x": 1}})
    assert config_fingerprint(base) != config_fingerprint({**base, "rounds": 4})


def test_a_retired_top_level_key_keeps_earlier_runs_identity_and_their_seals():
    """warmup_rounds was a top-level key (default 30) that IFCA-CAM alone read; since 2026-11-28 it is IFCA-CAM's
    own algorithm.warmup_rounds (identity.RETIRED_KEYS). A run recorded with it is the same run as today's config
    without it (the directory check, the report's grouping), with the fingerprint and run_id it had then, and the
    seals written then are accepted; another warm-up is not."""
    import hashlib
    import json
    from fedcluster.run_records.identity import accepted_fingerprints, comparable, config_fingerprint
    digest = lambda c: hashlib.sha256(json.dumps(c, sort_keys=True).encode()).hexdigest()[:16]   # the old seal
    for old, now in (({"seed": 0, "warmup_rounds": 30, "algorithm": {"name": "fedavg"}},
                      {"seed": 0, "algorithm": {"name": "fedavg"}}),
                     ({"seed": 0, "warmup_rounds": 9, "algorithm": {"name": "ifca_cam", "warmup": "fedavg", "warmup_rounds": 9}},
                      {"seed": 0, "algorithm": {"name": "ifca_cam", "warmup": "fedavg", "warmup_rounds": 9}})):
        assert comparable(old) == comparable(now) and config_fingerprint(old) == config_fingerprint(now) == digest(old)
        assert digest(old) in accepted_fingerprints(now) and digest(old) in accepted_fingerprints(old)
        assert "warmup_rounds" in old   # the caller's dict unchanged
    fesem_cam = {"seed": 0, "algorithm": {"name": "fesem_cam", "warmup": "base", "warmup_rounds": 1}}   # its start-up
    assert config_fingerprint(fesem_cam) == digest({**fesem_cam, "warmup_rounds": 30})       # the old default, not 1
    other = {"seed": 0, "algorithm": {"name": "ifca_cam", "warmup": "fedavg", "warmup_rounds": 10}}
    sealed = digest({"seed": 0, "warmup_rounds": 9, "algorithm": {"name": "ifca_cam", "warmup": "fedavg", "warmup_rounds": 9}})
    assert sealed not in accepted_fingerprints(other) and config_fingerprint(other) != sealed


def test_a_moved_top_level_key_is_refused_in_one_line_naming_where_it_lives_now():
    """identity.MOVED_KEYS is the one declaration of the top-level keys that became a component's setting: the
    refusal's text and the retired keys' identity rule both come from it."""
    import pytest
    from fedcluster.config.composition import one_line
    from fedcluster.config.store import compose_config
    from fedcluster.run_records.identity import MOVED_KEYS, RETIRED_KEYS
    assert set(RETIRED_KEYS) <= set(MOVED_KEYS) and "warmup_rounds" in RETIRED_KEYS
    for key, moved in MOVED_KEYS.items():
        with pytest.raises(Exception) as caught:
            compose_config([f"{key}=1"])
        assert one_line(caught.value) == f"{key} is not a setting: it is {moved.now}, {moved.what}"
        assert compose_config([f"algorithm={'ifca_cam' if key == 'warmup_rounds' else 'ifca'}", f"{moved.now}=1"])


def test_an_image_sources_reader_key_keeps_the_runs_recorded_before_it():
    """Until 2026-12-03 an image or text source's `name` also picked the files it read; now `name` is the label and
    `reader` the files (identity.ECHO_KEYS). Every dataset option composed today has the fingerprint and accepted
    seals of its config recorded then (no `reader`), and a reader other than the name is another run."""
    from fedcluster.run_records.identity import accepted_fingerprints
    register_resolvers()
    register_schemas()
    readers = 0
    for option in sorted(p.stem for p in (CONF / "dataset").glob("*.yaml")):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            from omegaconf import OmegaConf
            now = OmegaConf.to_container(compose("config", overrides=[f"dataset={option}"]), resolve=False)
        if "reader" not in now["dataset"]:
            continue
        readers += 1
        assert now["dataset"]["reader"] == now["dataset"]["name"], option
        before = {**now, "dataset": {k: v for k, v in now["dataset"].items() if k != "reader"}}
        assert config_fingerprint(now) == config_fingerprint(before), option
        assert accepted_fingerprints(now) == accepted_fingerprints(before), option
        other = {**now, "dataset": {**now["dataset"], "reader": "something_else"}}
        assert config_fingerprint(other) != config_fingerprint(now), option
    assert readers >= 10
