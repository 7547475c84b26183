"""A paper table's runs must use the table's data: their `dataset.*` and `partition.*` settings
must be those of the table's preset, composed as the CLI composes it for the run's partition
option, data set and swept values. Only the keys that set the scale (SCALE_KEYS: clients,
samples per client, test size, data location) may differ; the table labels those as protocol
differences. E.g. `+preset=fedsoft/table1_synthetic partition.minor=0.3` runs 30:70 data under
the option name mix_10_90: it is no run of FedSoft Table 1's 10:90 row.

The check needs the preset files (conf/preset/*/*.yaml, `table: <name>`); a run whose preset
cannot be composed for its values (an option that no longer exists) is not judged here, the
table's Identity still is. Only the keys both configs have are compared: a run made before a
setting existed is not judged on it."""
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from ..run_records.yaml_safe import safe_load

from .runs import ABSENT, Run, identity_keys, show

# The leaf names of data settings that only set the scale of a run (how many clients, clusters
# and samples, how large the test set, where the files are), not what kind of data they are:
# the CPU-scale runs change these (e.g. CLoVE's label skew 1 with 4 clusters of 2 clients).
SCALE_KEYS = frozenset({"num_clients", "min_samples", "max_samples", "samples_per_client", "test_samples_per_client",
                        "local_test_fraction", "test_size", "train_size", "root", "download", "default_clusters",
                        "num_clusters"})
GROUPS = ("dataset", "partition")


@lru_cache(maxsize=None)
def presets_of_tables() -> Dict[str, Tuple[Tuple[str, Tuple[Tuple[str, str], ...]], ...]]:
    """{table: ((preset, its sweeper params as (key, "a,b,c") pairs), ...)} from conf/preset."""
    from ..config.store import config_dir
    root = config_dir() / "preset"
    out: Dict[str, list] = {}
    for f in sorted(root.rglob("*.yaml")):
        doc = safe_load(f.read_text()) or {}
        table = doc.get("table")
        if not isinstance(table, str):
            continue
        params = ((doc.get("hydra") or {}).get("sweeper") or {}).get("params") or {}
        out.setdefault(table, []).append((str(f.relative_to(root))[:-5],
                                          tuple((str(k), str(v)) for k, v in params.items())))
    return {k: tuple(v) for k, v in out.items()}


@lru_cache(maxsize=256)
def _composed(overrides: Tuple[str, ...]) -> Optional[Dict[str, object]]:
    """The flattened config the CLI would run for `overrides` (None when it cannot be composed)."""
    from hydra.core.global_hydra import GlobalHydra

    from ..config.store import compose_config
    from ..run_records.identity import requested_config
    if GlobalHydra.instance().is_initialized():
        return None   # inside someone else's Hydra session: not ours to reset
    try:
        return identity_keys(requested_config(compose_config(overrides)))
    except Exception:   # noqa: BLE001 -- an option that no longer exists: not judged here
        return None


def _references(table: str, run: Run) -> List[Dict[str, object]]:
    """The preset's composed configs for this run's partition option and swept values, one per
    data set option the preset sweeps."""
    refs = []
    for preset, params in presets_of_tables().get(table, ()):
        base = [f"+preset={preset}"]
        datasets = [None]
        for key, values in params:
            if key == "partition":
                base.append(f"partition={show(run.value('partition.name'))}")
            elif key == "dataset":
                datasets = [v.strip() for v in values.split(",")]
            elif key in ("algorithm", "model") or "(" in values:
                continue
            elif run.value(key) is not ABSENT and not isinstance(run.value(key), tuple):
                base.append(f"{key}={run.value(key)}")
        if run.value("seed") is not ABSENT:
            base.append(f"seed={run.value('seed')}")
        for d in dict.fromkeys(datasets + [show(run.value("dataset.name"))]):   # also the run's own option
            ref = _composed(tuple(base + ([f"dataset={d}"] if d else [])))
            if ref is not None:
                refs.append(ref)
    return refs


def _data_keys(flat: Dict[str, object]) -> Dict[str, object]:
    return {k: v for k, v in flat.items() if k.split(".")[0] in GROUPS and k.rsplit(".", 1)[-1] not in SCALE_KEYS}


def data_mismatches(table: str, run: Run) -> List[str]:
    """'partition.minor 0.3 (the table's: 0.1)' for each data setting of `run` that is not its
    table preset's; empty when the run's data are the table's (or no preset can be composed)."""
    refs = [r for r in _references(table, run)
            if r.get("dataset.name") == run.value("dataset.name") and r.get("partition.name") == run.value("partition.name")]
    if not refs:
        return []
    mine = _data_keys(run.flat)
    best: Optional[List[str]] = None
    for ref in refs:
        theirs = _data_keys(ref)
        # keys both have: a run made before a setting existed (an older config.yaml) is not judged on it
        diff = [f"{k} {show(mine[k])} (the table's: {show(theirs[k])})"
                for k in sorted(set(mine) & set(theirs)) if mine[k] != theirs[k]]
        if best is None or len(diff) < len(best):
            best = diff
    return best or []
