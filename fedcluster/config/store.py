"""Config schemas, derived from the classes they build.

A setting is declared once: in the signature of the class a config node instantiates (or in its `Settings`
record, which stands for that signature: rules.record_signature). For
every class below, `schema_of` (schema.py) turns its constructor's parameters (following `**kw` into the
base classes) into a structured config registered in Hydra's ConfigStore as
`schemas/<group>/<ClassName>`, with `_target_` set to the class. Each option file in
conf/<group>/ starts from its class's schema (`- /schemas/algorithm/IFCA@_here_`), so a
misspelt key or a value of the wrong type is rejected at composition time with an error that
names the key, and every constructor parameter can be overridden from the command line.

Shared settings come by interpolation: a parameter named `num_clusters` defaults to the run's
`${num_clusters}` (null: the data's own number of clusters, settled by assemble.settle before config.yaml records it)."""
import hashlib
import re
import secrets
from pathlib import Path
from dataclasses import field, make_dataclass
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from .. import algorithms, data, hardware, loggers, models, partitions, privacy
from .conf_dir import config_dir
from ..run_records.identity import NAME_EXCLUDED_KEYS
from .schema import config_type, schema_of
from ..run_keys import GROUPS, run_keys

# Each config group's classes live in its package (conf/<group>/ <-> the package): an option is a class there
# that a yaml of the config folder builds from (`- /schemas/<group>/<ClassName>@...`), or a plugin's class;
# `option_classes` finds them so, the one way for every group, with no hand list.
GROUP_PACKAGES = {"dataset": data, "partition": partitions, "model": models, "algorithm": algorithms,
                  "hardware": hardware, "privacy": privacy, "logger": loggers}
_SCHEMA_LINE = re.compile(r"/schemas/(\w+)/(\w+)")


def _named_in(conf: Path) -> dict:
    """{group: class names} every yaml under `conf` builds from, in first-seen order (files sorted)."""
    names: dict = {group: [] for group in GROUP_PACKAGES}
    for path in sorted(conf.rglob("*.yaml")):
        for group, name in _SCHEMA_LINE.findall(path.read_text()):
            if group in names and name not in names[group]:
                names[group].append(name)
    return names


def option_classes(group: str, conf: Optional[Path] = None, named: Optional[dict] = None) -> list:
    """The classes of `group`'s options (without plugins'): each class its package holds that a yaml of `conf`
    (default: the config folder) builds from, sorted by module and name. A name no class of the package has (a
    plugin's class, which plugins.options adds) is left to the plugin. `named`: `_named_in(conf)` where the caller
    has read it already (register_schemas reads the folder once for every group, not once a group)."""
    package = GROUP_PACKAGES[group]
    found = [getattr(package, name) for name in (named or _named_in(conf or config_dir()))[group]
             if isinstance(getattr(package, name, None), type)]
    return sorted(dict.fromkeys(found), key=lambda c: (c.__module__, c.__name__))


UNNAMED = ("hardware", "privacy", "logger")   # groups whose options carry no `name` label


def _structured(name: str, declared, leading=()):
    """A structured-config dataclass of declared run keys (run_keys.py): each field typed as OmegaConf checks it,
    with its declared default; `leading` fields first."""
    fields = list(leading)
    for key in declared:
        fields.append((key.key.rsplit(".", 1)[-1], config_type(key.annotation, key.default), field(default=key.default)))
    return make_dataclass(name, fields)


# The run's settings as Hydra composes them (conf/config.yaml starts from `schema_config`): the groups (their nodes
# typed by their own schemas), the trackers, `train` and the run keys, every value and type from run_keys.py.
TrainConfig = _structured("TrainConfig", [k for k in run_keys() if k.key.startswith("train.")])
Config = _structured("Config", [k for k in run_keys() if "." not in k.key], leading=[
    *((group, Any, field(default=MISSING)) for group in GROUPS), ("logger", Any, field(default=None)),
    ("train", TrainConfig, field(default_factory=TrainConfig))])


def algorithm_classes() -> list:
    """The algorithm options' classes (option_classes): a new algorithm is its class and its yaml."""
    return option_classes("algorithm")


_REGISTERED: Optional[dict] = None   # the classes register_schemas last stored, per group
_UNIQUE = secrets.token_hex(2)   # this process's run-directory suffix: two starts in one second never share one


def _unique() -> str:
    return _UNIQUE


NAME_MAX = 255   # bytes in one path component on Linux and macOS file systems


def safe_component(name: str) -> str:
    """`name` as ONE path component that stays inside its folder, whatever an override value says:
    '%' and then '/', '\\' and NUL are percent-encoded (so distinct names stay distinct), and so is the
    leading '.' of a name that starts with one ('..', '.', a hidden name). `dataset.root=../../x` names
    the job `dataset.root=..%2F..%2Fx`, inside the sweep directory."""
    out = name.replace("%", "%25").replace("/", "%2F").replace("\\", "%5C").replace("\0", "%00")
    return "%2E" + out[1:] if out.startswith(".") else out


def sweep_job_dirname(override_dirname: str) -> str:
    """A sweep job's directory: its overrides (the keys that change results), or `default`.
    A name over the file system's NAME_MAX would fail with "File name too long"; it is shortened instead and
    stays one directory per override set (a re-run finds it again): its first bytes, `~`, 12 hex digits of the
    whole name's SHA-256, `~`, and its last whole overrides within TAIL_BYTES. The keys sort by name, so the
    tail keeps `seed=` (and `train.*`) readable, whatever a long value before them says."""
    name = safe_component(override_dirname or "default")
    raw = name.encode()
    if len(raw) <= NAME_MAX:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:12]
    tail = raw[-TAIL_BYTES:]
    if b"," in tail:   # start the tail at a whole override
        tail = tail[tail.index(b",") + 1:]
    head = raw[:NAME_MAX - len(digest) - 2 - len(tail)]
    return head.decode(errors="ignore") + "~" + digest + "~" + tail.decode(errors="ignore")


TAIL_BYTES = 64   # the most of a shortened job name's end kept after its digest


def _name_excluded_keys() -> list:
    """The overrides a sweep job's directory name leaves out (identity.py NAME_EXCLUDED_KEYS)."""
    return list(NAME_EXCLUDED_KEYS)


def percent_of(percent, total) -> int:
    """`${fc_percent_of:P,${rounds}}`: P % of a whole number, rounded down in whole-number arithmetic (30 % of 30
    rounds is 9, not float 0.3 * 30 = 8.999...): a setting that follows the run's length, e.g. IFCA-CAM's FedAvg
    warm-up, 30 of Fed-CAM's 100 rounds (conf/algorithm/ifca_cam.yaml)."""
    return int(total) * int(percent) // 100


def register_resolvers() -> None:
    """fc_unique is cached like Hydra's `now`: a launcher copies the launching process's resolver
    cache into every job's config (ConfigLoader.load_sweep_config) and the cache travels with the
    pickled config, so a job in another process (joblib, submitit, Ray, SLURM) resolves
    hydra.sweep.dir to the directory the sweep announced, not to one with its own suffix."""
    for name, fn, cached in (("fc_unique", _unique, True), ("fc_subdir", sweep_job_dirname, False),
                             ("fc_name_excluded_keys", _name_excluded_keys, False), ("fc_percent_of", percent_of, False)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn, use_cache=cached)


def compose_config(overrides, conf: Optional[Path] = None, with_hydra: bool = False) -> DictConfig:
    """The config `fedcluster <overrides>` would run, composed outside the command (the API,
    `fedcluster show`, the report's preset check): schemas and resolvers registered, Hydra's
    global state reset first and cleared after. `with_hydra`: keep the `hydra` node (its
    run.dir is the CLI's default directory)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    register_schemas()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf or config_dir()), version_base="1.3"):
            return compose("config", overrides=list(overrides), return_hydra_config=with_hydra)
    finally:
        GlobalHydra.instance().clear()


def register_schemas() -> None:
    """The schemas every option's yaml starts from, and the resolvers the configs use: what any
    composition of conf/ needs first (the CLI, the API, the report, the tests). Plugins
    (plugins.py) are imported first, so their classes get schemas too."""
    from . import plugins
    from ..errors import ConfigError
    global _REGISTERED
    register_resolvers()
    plugins.load()
    cs = ConfigStore.instance()
    named = _named_in(config_dir())
    by_group = {group: tuple(dict.fromkeys(option_classes(group, named=named) + plugins.options(group)))
                for group in GROUP_PACKAGES}
    # Building a schema costs more than a composition's own work: skip it where this process has already
    # stored these very classes (a new Algorithm subclass or plugin class changes the key; nothing in
    # fedcluster removes entries from Hydra's ConfigStore, and its presence is checked too).
    if _REGISTERED == by_group and "schema_config.yaml" in cs.repo:
        return
    cs.store(name="schema_config", node=Config)
    for group, classes in by_group.items():
        seen = {}
        for cls in classes:
            other = seen.setdefault(cls.__name__, cls)
            if other is not cls:
                raise ConfigError(f"two {group} classes are named {cls.__name__} ({other.__module__} and "
                                  f"{cls.__module__}); schemas/{group}/<ClassName> must be unique: rename one")
            try:
                cs.store(group=f"schemas/{group}", name=cls.__name__, node=schema_of(cls, named=group not in UNNAMED))
            except Exception as e:   # noqa: BLE001 -- a plugin's class whose signature no schema can describe
                raise ConfigError(f"{group} class {cls.__module__}.{cls.__name__} has a constructor signature fedcluster "
                                  f"cannot turn into settings ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                                  "give every parameter a default or a type OmegaConf knows (int, float, bool, str, "
                                  "lists of them)") from None
    _REGISTERED = by_group
