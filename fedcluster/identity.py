"""A run's identity: which config keys decide its results. One declaration that the run
directory's ownership check (rundir.py), the config fingerprint sealed into checkpoints and
summaries (integrity.py), the report's grouping (results/runs.py) and Hydra's sweep directory
names (conf/config.yaml's `exclude_keys`, through the `fc_name_excluded_keys` resolver) all read.

A volatile key changes how a run is shown or kept (progress bar, plots, checkpoint interval,
trackers, a sweep's objective), never its numbers; two requests that differ only in volatile
keys are the same run."""
import hashlib
import json

VOLATILE_KEYS = ("progress", "checkpoint_every", "plots", "overwrite", "objective", "logger", "hydra")
# Command-line overrides left out of a sweep job's directory name: the volatile keys (Hydra's
# own settings by their full names) and the preset, whose settings name the directory instead.
NAME_EXCLUDED_KEYS = ("hydra.run.dir", "hydra.sweep.dir", "+preset", "preset") + \
    tuple(k for k in VOLATILE_KEYS if k != "hydra")


# Keys added after runs were recorded, each with the value that changes nothing (the behaviour before it existed):
# at that value a key is left out of the identity, so every earlier run keeps its fingerprint, run_id and
# directory, and a run that sets it is another run.
NEUTRAL_ADDED_KEYS = {("eval_round_start_train",): False, ("dataset", "normalize"): False, ("hardware", "chunk"): "auto",
                      ("partition", "cluster_seed"): None,        # 2026-11-28, CLoVE's skews
                      ("algorithm", "keep_client_state"): True}   # 2026-11-28 on local-only (FedSoft's had it before)
# A key added to some options of a group only: neutral there alone (its sibling key has this value), so the runs
# that always carried it (FedSoft's keep_client_state) keep theirs.
NEUTRAL_ONLY_WHERE = {("algorithm", "keep_client_state"): ("_target_", "fedcluster.algorithms.LocalOnly")}


def comparable(config: dict) -> dict:
    """The config without the keys that do not change a run's results (and the added keys at their neutral value)."""
    out = {k: v for k, v in config.items() if k not in VOLATILE_KEYS}
    for path, neutral in NEUTRAL_ADDED_KEYS.items():   # paths of one or two keys
        parent, key = (out, path[0]) if len(path) == 1 else (out.get(path[0]), path[1])
        sibling, value = NEUTRAL_ONLY_WHERE.get(path, (None, None))
        if sibling is not None and (not isinstance(parent, dict) or parent.get(sibling) != value):
            continue
        if isinstance(parent, dict) and key in parent and type(parent[key]) is type(neutral) and parent[key] == neutral:
            trimmed = {k: v for k, v in parent.items() if k != key}
            if len(path) == 1:
                out = trimmed
            else:
                out[path[0]] = trimmed   # a new dict: the caller's config is left as it was
    return out


def flatten(node, prefix: str = "") -> dict:
    """{"train.lr": 0.01, ...}: nested dicts as dotted keys (lists stay values)."""
    if not isinstance(node, dict):
        return {prefix: node}
    out = {}
    for k, v in node.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(flatten(v, key) if isinstance(v, dict) and v else {key: v})
    return out


def config_fingerprint(config: dict) -> str:
    """Hash of a config without the keys that do not change results."""
    return _digest(comparable(config))


def accepted_fingerprints(config: dict) -> set:
    """The fingerprints a sealed run or checkpoint of `config` may carry: today's, and the one written by the
    code between a NEUTRAL_ADDED_KEYS key's arrival and its neutral rule (the key at its neutral value counted)."""
    return {config_fingerprint(config), _digest({k: v for k, v in config.items() if k not in VOLATILE_KEYS})}


def _digest(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def json_default(o):
    """JSON for tensors and numpy values (their lists or scalars), anything else as its text."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    return str(o)
