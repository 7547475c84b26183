"""eval_round_start_train: each client's model on its own training data as a round BEGINS (CLoVE's
notebook scores FedAvg so), in rows of its own that change no other number of the run."""
import pandas as pd

from fedcluster.runner import run


def _metrics(path):
    return pd.read_csv(path / "metrics.csv")


def test_round_start_score_is_the_previous_rounds_model_on_training_data(tmp_path, small_cfg):
    on = run(small_cfg("eval_round_start_train=true", "eval_local_train=true", algorithm="fedavg"), tmp_path / "on")
    m = _metrics(tmp_path / "on")
    start = m[(m["eval_set"] == "round_start_train") & (m["model"] == "local")]
    end = m[(m["eval_set"] == "local_train") & (m["model"] == "local")]
    assert sorted(start["round"].unique()) == [0, 1, 2]
    for t in (1, 2):   # the model a round starts from is the one the previous round's aggregation left
        a = start[start["round"] == t].sort_values(["metric", "model_index"])["value"].to_numpy()
        b = end[end["round"] == t - 1].sort_values(["metric", "model_index"])["value"].to_numpy()
        assert len(a) == len(b) > 0 and (abs(a - b) < 1e-9).all()
    assert on["local"]["round_start_train_mse"] == start[start["round"] == 2].query("metric == 'mse'")["value"].mean()


def test_round_start_rows_change_no_other_number(tmp_path, small_cfg):
    run(small_cfg("eval_round_start_train=true", algorithm="ifca"), tmp_path / "on")
    run(small_cfg("eval_round_start_train=false", algorithm="ifca"), tmp_path / "off")
    on, off = _metrics(tmp_path / "on"), _metrics(tmp_path / "off")
    kept = on[on["eval_set"] != "round_start_train"].drop(columns=["run_id"]).reset_index(drop=True)
    assert len(on) > len(kept) and kept.equals(off.drop(columns=["run_id"]).reset_index(drop=True))


def test_added_keys_at_their_neutral_value_keep_earlier_runs_identity():
    """eval_round_start_train and dataset.normalize arrived after runs were recorded: at false they change
    nothing, so a config without them is the same run (same fingerprint, run_id and directory)."""
    from fedcluster.run_records.identity import accepted_fingerprints, config_fingerprint
    before = {"seed": 0, "rounds": 3, "dataset": {"name": "fashion_mnist", "root": "data"}}
    now = {**before, "eval_round_start_train": False, "dataset": {**before["dataset"], "normalize": False}}
    assert config_fingerprint(now) == config_fingerprint(before)
    assert now["dataset"]["normalize"] is False and "eval_round_start_train" in now   # the caller's dict unchanged
    for changed in ({**now, "eval_round_start_train": True}, {**now, "dataset": {**now["dataset"], "normalize": True}}):
        assert config_fingerprint(changed) != config_fingerprint(before)
    # a run sealed by the code that counted the neutral keys is still accepted
    legacy = __import__("hashlib").sha256(__import__("json").dumps(now, sort_keys=True).encode()).hexdigest()[:16]
    assert legacy in accepted_fingerprints(now) and config_fingerprint(now) in accepted_fingerprints(now)


def test_this_sessions_added_keys_keep_earlier_runs_identity_and_fedsofts_own():
    """partition.cluster_seed (null) and local-only's keep_client_state (true) arrived on 2026-11-28: at those
    values a run is the run recorded before them. FedSoft always carried keep_client_state: its identity keeps it."""
    from fedcluster.run_records.identity import config_fingerprint
    skew = {"seed": 0, "partition": {"name": "label_skew4", "num_clients": 50}}
    assert config_fingerprint({**skew, "partition": {**skew["partition"], "cluster_seed": None}}) == config_fingerprint(skew)
    assert config_fingerprint({**skew, "partition": {**skew["partition"], "cluster_seed": 0}}) != config_fingerprint(skew)
    local = {"seed": 0, "algorithm": {"_target_": "fedcluster.algorithms.LocalOnly", "name": "local"}}
    kept = {**local, "algorithm": {**local["algorithm"], "keep_client_state": True}}
    fresh = {**local, "algorithm": {**local["algorithm"], "keep_client_state": False}}
    assert config_fingerprint(kept) == config_fingerprint(local) != config_fingerprint(fresh)
    soft = {"seed": 0, "warmup_rounds": 30,   # every run's config had the top-level warm-up then (identity.RETIRED_KEYS)
            "algorithm": {"_target_": "fedcluster.algorithms.FedSoft", "name": "fedsoft", "keep_client_state": True}}
    legacy = __import__("hashlib").sha256(__import__("json").dumps(soft, sort_keys=True).encode()).hexdigest()[:16]
    assert config_fingerprint(soft) == legacy


def test_a_run_sealed_between_two_keys_neutral_rules_is_accepted():
    """Sealed by code that trimmed eval_round_start_train but counted partition.cluster_seed (the days between
    the key's arrival and its rule): accepted, and a different value is not."""
    import hashlib
    import json
    from fedcluster.run_records.identity import accepted_fingerprints
    config = {"seed": 0, "eval_round_start_train": False, "partition": {"name": "label_skew4", "cluster_seed": None}}
    sealed = hashlib.sha256(json.dumps({"seed": 0, "partition": config["partition"]}, sort_keys=True).encode()).hexdigest()[:16]
    assert sealed in accepted_fingerprints(config)
    other = {**config, "partition": {"name": "label_skew4", "cluster_seed": 0}}
    assert sealed not in accepted_fingerprints(other)
