"""Finding fedcluster runs under a directory and grouping them by what their configs say.

A run is identified by its resolved config (config.yaml, or the `config` block of summary.json
when config.yaml is missing), flattened to dotted keys. Runs whose configs agree on every key
except `seed` (and the keys that never change results) form one *cell*: its seeds are averaged.
Anything else that differs between runs keeps them apart."""
import json
import os
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import yaml
from ..run_records.yaml_safe import safe_load

from ..run_records.identity import VOLATILE_KEYS, as_settled, comparable
from ..run_records.identity import flatten as rundir_flatten
from ..run_records.run_files import FolderFiles, PackedFiles
from .packs import PACK_NAME, PackError, read_pack

CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
CHECKPOINT_FILE = "checkpoint.pt"
METRICS_FILE = "metrics.csv"

# Top-level keys that never change a run's numbers (the runner's own list); `seed` is the key runs
# are averaged over, so it is no part of a run's identity either.
IGNORED_KEYS = VOLATILE_KEYS
SEED_KEY = "seed"
# Config groups whose options depend on the chosen option (`<group>.name`): their keys are
# compared only between runs that chose the same option.
SCOPED_GROUPS = ("algorithm", "dataset", "partition", "model")
# Directories never searched: hidden ones (.hydra, .git, virtual environments) and caches.
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages"}


class ReportError(Exception):
    """A condition the report refuses to paper over (one line for the user, exit status 2)."""


class _Absent:
    """Marks a key a run's config does not have (compared like a value, shown as '–')."""
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<absent>"

    def __lt__(self, other) -> bool:
        return not isinstance(other, _Absent)


ABSENT = _Absent()


@dataclass
class Run:
    """One finished run: where it is, its summary, its config (flattened) and seed; `files`: where its files are
    read (its folder, or the pack that holds it at `path`: run_records/run_files.py)."""
    path: Path
    summary: dict
    flat: Dict[str, object]
    seed: object
    config_source: str = CONFIG_FILE
    files: object = None

    def __post_init__(self):
        if self.files is None:
            self.files = FolderFiles(self.path)

    def value(self, key: str):
        """A dotted config key's value (ABSENT when the config has no such key)."""
        return self.flat.get(key, ABSENT)


@dataclass
class Skipped:
    """A run directory left out of every table, and why."""
    path: Path
    reason: str


@dataclass
class Found:
    """Everything discover() saw under a directory."""
    runs: List[Run] = field(default_factory=list)
    skipped: List[Skipped] = field(default_factory=list)
    foreign: List[Path] = field(default_factory=list)   # summary.json files that are not fedcluster's
    notes: List[str] = field(default_factory=list)


def freeze(value):
    """A hashable, comparable form of a config value (YAML lists and mappings become tuples),
    so values can be dictionary keys and compared across runs."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def flatten(node, prefix: str = "") -> Dict[str, object]:
    """{"train.lr": 0.01, ...}: the run directory's dotted keys (identity.flatten) with each value
    frozen, so that any two configs can be compared key by key."""
    return {k: freeze(v) for k, v in rundir_flatten(node, prefix).items()}


def identity_keys(config: dict) -> Dict[str, object]:
    """The flattened config without the keys that do not identify a result (IGNORED_KEYS, and the keys
    added later at their neutral value: identity.comparable, so a run recorded before a key existed and
    one that holds it at that value are one cell) and without `seed`, which the report averages over."""
    kept = {k: v for k, v in comparable(config).items() if k not in IGNORED_KEYS and k != SEED_KEY}
    return flatten(kept)


def show(value) -> str:
    """A config value as the report prints it (tables, titles, error messages)."""
    if value is ABSENT:
        return "–"
    if value is None:
        return "null"
    if isinstance(value, tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) for v in value):
            return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value) + "}"
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def sort_key(value):
    """Orders config values: numbers numerically, then text, then null and absent, so that
    rows and sub-tables come out as 0.001, 0.01, 0.1 and 9 before 10."""
    if isinstance(value, bool) or value is None or value is ABSENT:
        return (2, str(value))
    if isinstance(value, (int, float)):
        return (0, float(value), "")
    return (1, 0.0, show(value))


def _is_fedcluster_config(config) -> bool:
    """A config.yaml written by fedcluster, whatever classes it names (a plugin's algorithm or model
    included): the run's five group nodes, each instantiating a class, beside `rounds` and `seed`.
    Keeps unrelated folders' config.yaml files (e.g. under /tmp) out of the report."""
    if not isinstance(config, dict) or not {"rounds", "seed"} <= set(config):
        return False
    nodes = [config.get(group) for group in ("dataset", "partition", "model", "algorithm", "hardware")]
    return all(isinstance(node, dict) and node.get("_target_") for node in nodes)


def _read_config(files) -> Tuple[Optional[dict], Optional[str]]:
    """(config.yaml as a dict, None) or (None, why it could not be used)."""
    if not files.is_file(CONFIG_FILE):
        return None, "missing"
    try:
        config = safe_load(files.read_text(CONFIG_FILE))
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as e:
        return None, f"unreadable ({type(e).__name__})"
    if not _is_fedcluster_config(config):
        return None, "not a fedcluster config"
    return config, None


def _fallback_config(summary: dict) -> dict:
    """The config a summary.json records (older runs, or a lost config.yaml): its groups plus
    the top-level keys the summary keeps. Fewer keys than config.yaml holds: a key missing
    here compares as absent, so such runs are never averaged with fully described ones."""
    config = dict(summary.get("config") or {})
    for key in ("rounds", "table"):
        if key in summary:
            config[key] = summary[key]
    return config


def _looks_like_run_dir(files) -> bool:
    """Whether a directory holds other files a fedcluster run writes beside summary.json (used
    to decide if an unparsable summary.json is a damaged run of ours)."""
    names = set(files.names())
    if METRICS_FILE in names or CHECKPOINT_FILE in names:
        return True
    return CONFIG_FILE in names and _read_config(files)[0] is not None


def _diverged_reason(summary: dict) -> str:
    """The skipped-run reason of a summary marked `status: diverged`."""
    error = " ".join(str(summary.get("error") or "").split())
    if error:
        return f"diverged: {error[:200]}"
    where = summary.get("diverged_in_round")
    return "diverged" + (f" (round index {where})" if where is not None else "")


def _load_summary(path: Path, files, found: Found) -> None:
    """Classify one directory (or a pack's entry, `files`) that has a summary.json: a usable run, a skipped one
    (corrupt, diverged, unknown status) or someone else's file (ignored, counted)."""
    f = path / SUMMARY_FILE
    try:
        text = files.read_text(SUMMARY_FILE)
    except (OSError, UnicodeDecodeError) as e:
        if _looks_like_run_dir(files):
            found.skipped.append(Skipped(path, f"summary.json unreadable ({type(e).__name__})"))
        return
    try:
        summary = json.loads(text)
    except ValueError:
        if _looks_like_run_dir(files) or '"fedcluster"' in text:
            found.skipped.append(Skipped(path, "corrupt summary.json (does not parse; truncated?)"))
        else:
            found.foreign.append(f)
        return
    versions = summary.get("versions") if isinstance(summary, dict) else None
    if not (isinstance(versions, dict) and versions.get("fedcluster")):
        found.foreign.append(f)
        return
    status = summary.get("status", "complete")
    if status == "diverged":
        found.skipped.append(Skipped(path, _diverged_reason(summary)))
        return
    if status != "complete":
        found.skipped.append(Skipped(path, f"summary.json status {status!r} (not a finished run)"))
        return
    if isinstance(summary.get("integrity"), dict):   # a sealed run: trusted only as sealed (config.yaml included)
        from ..run_records.integrity import finished_run_problem, sealed_problem
        changed = finished_run_problem(path, summary) if isinstance(files, FolderFiles) else sealed_problem(files, summary)
        if changed is not None:   # a sealed run whose files no longer match its seal
            found.skipped.append(Skipped(path, f"{changed.removeprefix('its ')} (not reported as it stands)"))
            return
    config, problem = _read_config(files)
    source = CONFIG_FILE
    if config is None:
        if not isinstance(summary.get("config"), dict):
            found.skipped.append(Skipped(path, f"config.yaml {problem} and summary.json records no config"))
            return
        config, source = _fallback_config(summary), SUMMARY_FILE
        found.notes.append(f"{path}: config.yaml {problem}; grouped by the config summary.json records "
                           "(fewer keys, so it is only averaged with runs described the same way)")
    config = as_settled(config, summary.get("config"))   # recorded before runs were settled: what it settled
    seed = config.get(SEED_KEY, summary.get("seed"))
    found.runs.append(Run(path, summary, identity_keys(config), seed, source, files))


def _load_unfinished(path: Path, names, found: Found) -> None:
    """A directory without summary.json: an unfinished run when it has fedcluster's config.yaml,
    or a checkpoint written beside metrics.csv (what the runner leaves at a checkpoint)."""
    names = set(names)
    config, _ = _read_config(FolderFiles(path)) if CONFIG_FILE in names else (None, None)
    if config is not None:
        found.skipped.append(Skipped(path, "unfinished (config.yaml but no summary.json)"))
    elif CHECKPOINT_FILE in names and METRICS_FILE in names:
        found.skipped.append(Skipped(path, "unfinished (checkpoint.pt but no summary.json)"))


def discover(root: Path) -> Found:
    """Walk `root` (not entering hidden directories) and sort what is there into usable runs,
    skipped runs and foreign files. Unreadable folders are passed by.

    Links to directories are followed, so a folder of links can gather the seeds of several
    sweeps into one table (`ln -s ../sweep_s1/<run> ...`); each real directory is read once,
    so a run reached by two paths counts once and a link back up the tree cannot loop."""
    found = Found()
    seen = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS
                             and os.path.realpath(os.path.join(dirpath, d)) not in seen)
        path = Path(dirpath)
        if PACK_NAME in filenames:
            _load_pack(path, found)
        if SUMMARY_FILE in filenames:
            _load_summary(path, FolderFiles(path), found)
        elif CONFIG_FILE in filenames or CHECKPOINT_FILE in filenames:
            _load_unfinished(path, filenames, found)
    found.runs.sort(key=lambda r: str(r.path))
    _skip_duplicates(found)
    found.skipped.sort(key=lambda s: str(s.path))
    return found


def _load_pack(folder: Path, found: Found) -> None:
    """The runs of the pack in `folder` (report/packs.py), each at the path its folder had, read and checked
    against its seal as a folder's run is; a pack that cannot be read is one skipped entry."""
    try:
        runs = read_pack(folder / PACK_NAME)
    except PackError as e:
        found.skipped.append(Skipped(folder / PACK_NAME, str(e).split(": ", 1)[-1]))
        return
    for name in sorted(runs):
        files = PackedFiles(runs[name])
        if files.is_file(SUMMARY_FILE):
            _load_summary(folder / name, files, found)
        else:
            found.skipped.append(Skipped(folder / name, "packed without its summary.json"))


def _skip_duplicates(found: Found) -> None:
    """The same config and seed twice (a sweep run twice into new directories, a copied folder):
    one experiment, so one run is kept, the first by path, and each other is listed as skipped,
    naming the run it repeats."""
    kept: Dict[tuple, Run] = {}
    unique = []
    for run in found.runs:
        key = (tuple(sorted((k, freeze(v)) for k, v in run.flat.items())), freeze(run.seed))
        if key in kept:
            found.skipped.append(Skipped(run.path, f"duplicate: the same config and seed {run.seed} as "
                                                   f"{kept[key].path} (kept; not averaged twice)"))
        else:
            kept[key] = run
            unique.append(run)
    found.runs = unique


def _scope(key: str) -> Optional[str]:
    """The `<group>.name` key that scopes `key` (None for keys compared across all runs)."""
    group, _, rest = key.partition(".")
    if group in SCOPED_GROUPS and rest and rest != "name":
        return f"{group}.name"
    return None


def varying_keys(runs: Sequence[Run]) -> List[str]:
    """Every dotted key whose value differs between the runs. A group's option keys (e.g.
    `algorithm.lam`) count only where runs with the same `<group>.name` differ in them:
    different algorithms having different option sets is no variation."""
    keys = sorted(set().union(*(r.flat for r in runs))) if runs else []
    out = []
    for key in keys:
        scope = _scope(key)
        buckets: Dict[object, set] = {}
        for r in runs:
            bucket = r.value(scope) if scope else None
            buckets.setdefault(bucket, set()).add(r.value(key))
        if any(len(values) > 1 for values in buckets.values()):
            out.append(key)
    return out


@dataclass
class Cell:
    """Runs with the same config apart from their seeds: one row (or table cell) of results.
    `key` holds the values of the keys that vary in the table being built."""
    key: Tuple[Tuple[str, object], ...]
    runs: List[Run]

    def value(self, key: str):
        """A config key's value, shared by all the cell's runs (ABSENT when not in the config)."""
        return self.runs[0].value(key)

    @property
    def seeds(self) -> list:
        """The distinct seeds averaged in this cell."""
        return sorted({r.seed for r in self.runs}, key=str)

    @property
    def summaries(self) -> List[dict]:
        """The runs' summary.json contents, in seed order."""
        return [r.summary for r in self.runs]


def make_cells(runs: Sequence[Run], keys: Sequence[str]) -> List[Cell]:
    """Group runs by their values of `keys` (the varying keys): seeds are averaged, nothing
    else. Two runs with the same values and the same seed are the same experiment twice; the
    report cannot tell which to keep, so that is an error naming both directories."""
    groups: Dict[tuple, List[Run]] = {}
    for r in runs:
        groups.setdefault(tuple((k, r.value(k)) for k in keys), []).append(r)
    cells = []
    for key, members in groups.items():
        members.sort(key=lambda r: (str(r.seed), str(r.path)))
        for a, b in zip(members, members[1:]):
            if a.seed == b.seed:
                raise ReportError(f"runs {a.path} and {b.path} have the same config and seed {a.seed}; "
                                  "remove one")
        cells.append(Cell(key, members))
    cells.sort(key=lambda c: tuple(sort_key(v) for _, v in c.key))
    return cells


def matches(key: str, patterns: Iterable[str]) -> bool:
    """Whether a dotted key is one of `patterns` (shell-style wildcards allowed)."""
    return any(fnmatch(key, p) for p in patterns)


def split_by(cells: Sequence[Cell], keys: Sequence[str]) -> List[Tuple[str, List[Cell]]]:
    """Cells grouped by their values of `keys` (the varying keys a table does not lay out),
    each group titled "k=v, ..." ("" when `keys` is empty: one group)."""
    if not keys:
        return [("", list(cells))]
    groups: Dict[tuple, List[Cell]] = {}
    for c in cells:
        groups.setdefault(tuple(c.value(k) for k in keys), []).append(c)
    ordered = sorted(groups.items(), key=lambda kv: tuple(sort_key(v) for v in kv[0]))
    return [(", ".join(f"{k}={show(v)}" for k, v in zip(keys, values)), members) for values, members in ordered]
