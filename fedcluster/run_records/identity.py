"""A run's identity: which config keys decide its results. One declaration that the run
directory's ownership check (rundir.py), the config fingerprint sealed into checkpoints and
summaries (integrity.py), the report's grouping (report/runs.py) and Hydra's sweep directory
names (conf/config.yaml's `exclude_keys`, through the `fc_name_excluded_keys` resolver) all read.

A volatile key changes how a run is shown or kept (progress bar, plots, checkpoint interval,
trackers, a sweep's objective), never its numbers; two requests that differ only in volatile
keys are the same run."""
import hashlib
import json
from dataclasses import dataclass
from typing import Optional

from .yaml_safe import safe_load
from omegaconf import OmegaConf

from ..run_keys import volatile_keys

# the run keys marked VOLATILE where they are declared (run_keys.py), the trackers, and Hydra's own node
VOLATILE_KEYS = volatile_keys() + ("logger", "hydra")
# Command-line overrides left out of a sweep job's directory name: the volatile keys (Hydra's
# own settings by their full names) and the preset, whose settings name the directory instead.
NAME_EXCLUDED_KEYS = ("hydra.run.dir", "hydra.sweep.dir", "+preset", "preset") + \
    tuple(k for k in VOLATILE_KEYS if k != "hydra")


# Keys added after runs were recorded, each with the value that changes nothing (the behaviour before it existed):
# at that value a key is left out of the identity, so every earlier run keeps its fingerprint, run_id and
# directory, and a run that sets it is another run.
NEUTRAL_ADDED_KEYS = {("eval_round_start_train",): False, ("dataset", "normalize"): False,
                      ("client_dropout",): 0.0,   # 2026-11-28 top-level; the same day moved into the samplers' nodes:
                      ("algorithm", "client_dropout"): 0.0, ("algorithm", "base", "client_dropout"): 0.0,
                      ("hardware", "chunk"): "auto",
                      ("partition", "cluster_seed"): None,        # 2026-11-28, CLoVE's skews
                      ("partition", "holdout_clients"): 0.0,      # 2026-11-28, unseen clients
                      ("partition", "label_sets"): None,          # 2026-11-28, label skew 2
                      ("partition", "pool_class_counts"): None,   # 2026-11-28, label skew 3
                      ("algorithm", "keep_client_state"): True,   # 2026-11-28 on local-only (FedSoft's had it before)
                      ("algorithm", "client_fraction"): 1.0,      # 2026-11-28 on FeSEM and CFL (the others had it)
                      ("algorithm", "base", "client_fraction"): 1.0,   # and so on FeSEM-CAM's base
                      ("privacy",): {"_target_": "fedcluster.privacy.NoPrivacy"}}   # 2026-12-03, client-level DP
# A key added to some options of a group only: neutral there alone (its sibling key has one of these values), so
# the runs that always carried it (FedSoft's keep_client_state, FedAvg's client_fraction) keep theirs.
NEUTRAL_ONLY_WHERE = {("algorithm", "keep_client_state"): ("_target_", ("fedcluster.algorithms.LocalOnly",)),
                      ("algorithm", "client_fraction"): ("_target_", ("fedcluster.algorithms.FeSEM",
                                                                      "fedcluster.algorithms.CFL")),
                      ("algorithm", "base", "client_fraction"): ("_target_", ("fedcluster.algorithms.FeSEM",))}

# Keys added to say apart what another key said too: at that key's value (or null) a key is left out of the
# identity, as for every run recorded before it, so those keep their fingerprints. 2026-12-03: an image or text
# source's `name` was also the reader it picked; now `name` is the label and `reader` picks the files.
ECHO_KEYS = {("dataset", "reader"): ("dataset", "name")}


def _echoing(config: dict, path) -> bool:
    """The added key `path` is in `config` and repeats what its ECHO_KEYS key says (or is null)."""
    parent, echoed = _parent(config, path), ECHO_KEYS[path]
    if parent is None or path[-1] not in parent:
        return False
    value = parent[path[-1]]
    return value is None or value == (_parent(config, echoed) or {}).get(echoed[-1])


# Top-level keys that became a component's own setting (2026-11-28), declared once: where each lives now, which a
# user who still types one is told in one line (config/composition.py), and how earlier runs keep their identity.
# `client_dropout` was top-level for a day, always at its neutral 0 in recorded runs (NEUTRAL_ADDED_KEYS);
# `warmup_rounds`, IFCA-CAM's FedAvg warm-up, was a key of every run, so it is retired (`retired`, below).
# A stored config that still has a retired key is the same run without it (`comparable`: the directory check and
# the report's grouping); the fingerprint counts it at the run's value, so a run's fingerprint and run_id are those
# it had while the key existed (`config_fingerprint`), and seals written either way are accepted
# (`accepted_fingerprints`). retired: ((the node that took it over, its name there), (a key of that node, the value
# it has where the node took the retired key's value), the default everyone else had). IFCA-CAM (warmup: fedavg)
# interpolated it; FeSEM-CAM's own warmup_rounds (its start-up) is another setting, and the top-level key was its
# default there.
@dataclass(frozen=True)
class MovedKey:
    now: str                        # where the setting lives now, as a user types it
    what: str                       # what it is there, for the one-line refusal
    retired: Optional[tuple] = None


MOVED_KEYS = {
    "client_dropout": MovedKey("algorithm.client_dropout", "beside algorithm.client_fraction, on the methods that "
                                                           "sample clients (fedcluster show algorithm=<name>)"),
    "warmup_rounds": MovedKey("algorithm.warmup_rounds", "IFCA-CAM's own FedAvg warm-up",
                              retired=(("algorithm", "warmup_rounds"), ("warmup", "fedavg"), 30)),
}
RETIRED_KEYS = {key: moved.retired for key, moved in MOVED_KEYS.items() if moved.retired is not None}


def _retired_value(config: dict, key: str):
    """The value a config had for retired `key` while it existed: its own, else that of the node that took it
    over (where that node read it), else the default."""
    if key in config:
        return config[key]
    (group, name), (marker, value), default = RETIRED_KEYS[key]
    owner = config.get(group)
    took_over = isinstance(owner, dict) and name in owner and owner.get(marker) == value
    return owner[name] if took_over else default


def _parent(config: dict, path):
    """The dict that holds the last key of `path` (None where the path does not lead to one)."""
    node = config
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _neutral_here(config: dict, path) -> bool:
    """The added key `path` is in `config` at its neutral value (where NEUTRAL_ONLY_WHERE applies, only there)."""
    neutral = NEUTRAL_ADDED_KEYS[path]
    parent, key = _parent(config, path), path[-1]
    if parent is None or key not in parent:
        return False
    sibling, values = NEUTRAL_ONLY_WHERE.get(path, (None, ()))
    if sibling is not None and parent.get(sibling) not in values:
        return False
    return type(parent[key]) is type(neutral) and parent[key] == neutral


def _without(config: dict, paths) -> dict:
    """`config` without the keys at `paths` (new dicts where changed: the caller's config is left as it was)."""
    out = dict(config)
    for path in paths:
        node = out
        for key in path[:-1]:   # copy each dict on the way down, then drop the last key from the copy
            node[key] = dict(node[key])
            node = node[key]
        node.pop(path[-1], None)
    return out


def comparable(config: dict) -> dict:
    """The config without the keys that do not change a run's results (and the added keys at their neutral value,
    and the retired keys)."""
    out = _without_echoes({k: v for k, v in config.items() if k not in VOLATILE_KEYS and k not in RETIRED_KEYS})
    return _without(out, [p for p in NEUTRAL_ADDED_KEYS if _neutral_here(out, p)])


def _without_echoes(config: dict) -> dict:
    return _without(config, [p for p in ECHO_KEYS if _echoing(config, p)])


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
    """Hash of a config without the keys that do not change results. The retired keys count at the value the
    run had (`_retired_value`), as when they existed, so a run keeps the fingerprint and run_id it had then."""
    return _digest({**comparable(config), **{k: _retired_value(config, k) for k in RETIRED_KEYS}})


SETTLED_KEY = "num_clusters"   # what a config may leave to the data (null: the data's own count), settled before it is recorded


def as_settled(old: dict, settled: dict) -> dict:
    """`old` as the run it describes was settled. A config.yaml written before runs were settled before being
    recorded (2026-12-02) kept `num_clusters: null`, at the top level and where the groups interpolate it, for the
    data's own count; the same request now records the count it settles to, and the run's summary.json records
    what it settled. Each such null of `old` takes `settled`'s value at the same place (`settled`: the settled
    request, or a summary's `config`), where `old`'s top-level count is null and `settled`'s is not."""
    if not isinstance(old, dict) or old.get(SETTLED_KEY) is not None or not isinstance(settled, dict) \
            or settled.get(SETTLED_KEY) is None:
        return old

    def fill(o, s):
        if not isinstance(o, dict):
            return o
        s = s if isinstance(s, dict) else {}
        return {k: (s[k] if k == SETTLED_KEY and v is None and isinstance(s.get(k), int) else fill(v, s.get(k)))
                for k, v in o.items()}
    return fill(old, settled)


def unsettled(config: dict) -> dict:
    """The form code from before 2026-12-02 recorded a settled `config` in: every num_clusters equal to the settled
    top-level count back at null (for the fingerprints of its checkpoints and seals)."""
    K = config.get(SETTLED_KEY)
    if K is None:
        return config

    def clear(node):
        if not isinstance(node, dict):
            return node
        return {k: (None if k == SETTLED_KEY and v == K else clear(v)) for k, v in node.items()}
    return clear(config)


def accepted_fingerprints(config: dict) -> set:
    """The fingerprints a sealed run or checkpoint of `config` may carry: today's, and those written by code
    from before each NEUTRAL_ADDED_KEYS key's neutral rule (each added key at its neutral value counted or not:
    a run sealed while one key's rule existed and another key's did not is accepted too), and, for each of
    those, the one written while the RETIRED_KEYS still were top-level keys (at the value the run had), each
    also in the form recorded before runs were settled (`unsettled`)."""
    from itertools import combinations
    found = set()
    before = unsettled(config)
    for config in [config] + ([before] if before != config else []):
        plain = _without_echoes({k: v for k, v in config.items() if k not in VOLATILE_KEYS and k not in RETIRED_KEYS})
        with_retired = {**plain, **{k: _retired_value(config, k) for k in RETIRED_KEYS}}
        here = [p for p in NEUTRAL_ADDED_KEYS if _neutral_here(plain, p)]
        found |= {_digest(_without(base, chosen)) for base in (plain, with_retired)
                  for n in range(len(here) + 1) for chosen in combinations(here, n)}
    return found


def _digest(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def json_default(o):
    """JSON for tensors and numpy values (their lists or scalars), anything else as its text."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def requested_config(cfg) -> dict:
    """The run's config as plain data, exactly as config.yaml stores it (a YAML round trip, so
    an existing directory's config.yaml compares equal to the same request)."""
    return safe_load(OmegaConf.to_yaml(cfg, resolve=True)) or {}
