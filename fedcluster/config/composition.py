"""Hydra's composition errors and undeclared keys, as the one line every other bad input gets.

Hydra reports a wrong type, an unknown key, an unknown group option or an argument it cannot
parse in 4-30 lines and exits 1. `one_line` turns each into `KEY=VALUE: what is wrong; allowed:
...` (the CLI prints it and exits 2; HYDRA_FULL_ERROR=1 still gives Hydra's full trace).
`undeclared_keys` finds keys added with `+key=value` that no schema declares (Hydra accepts them
and the run would ignore them while storing them in config.yaml)."""
import difflib
import re
from pathlib import Path
from typing import List, Optional

from ..run_records.identity import MOVED_KEYS

TYPE_WORDS = {"Float": "a number", "Integer": "a whole number", "Boolean": "true or false",
              "String": "a string"}


def _first_line(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _keys_of(node) -> List[str]:
    try:
        return [str(k) for k in node.keys() if str(k) != "hydra" and not str(k).startswith("_")]
    except Exception:   # noqa: BLE001 -- a node without keys
        return []


def _override_of(message: str) -> str:
    m = re.search(r"override '?([^'\s]+)", message)
    return m.group(1).strip().rstrip(".'") if m else ""


def _listing(options, limit: int = 30) -> str:
    options = sorted(str(o) for o in options)
    return ", ".join(options[:limit]) + (f", ... ({len(options) - limit} more)" if len(options) > limit else "")


def _group_options(conf: Optional[Path], group: str) -> List[str]:
    """The group's options in `conf` and the plugins' conf folders."""
    from .plugins import group_options
    return group_options(group, conf) if conf is not None else []


# The launchers fedcluster's configs name (conf/hydra/launcher/) and Hydra's own names of them, each with the
# optional extra that installs its plugin (pyproject.toml)
LAUNCHER_EXTRAS = {"parallel": "joblib", "joblib": "joblib", "slurm": "slurm", "slurm_cpu": "slurm",
                   "submitit_local": "slurm", "submitit_slurm": "slurm", "ray_gpus": "ray", "ray": "ray"}


def _yaml_error(error: BaseException) -> Optional[str]:
    """A config file that is not valid YAML (a broken conf/ under FEDCLUSTER_CONF, a plugin's yaml), as one
    line naming the file and line, wherever in the exception chain the parser's error sits."""
    import yaml
    seen = set()
    e = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, yaml.YAMLError):
            mark = getattr(e, "problem_mark", None)
            where = f"{mark.name}, line {mark.line + 1}" if mark is not None else "a config file"
            problem = getattr(e, "problem", None) or _first_line(str(e))
            return f"{where} is not valid YAML ({problem}); fix that file or point FEDCLUSTER_CONF at a valid conf/ folder"
        e = e.__cause__ or e.__context__
    return None


def one_line(error: BaseException, conf: Optional[Path] = None) -> Optional[str]:
    """The one-line message for a composition error (None: not one of those). A ConfigError of ours, also one
    Hydra wrapped (a sweeper's own check of its settings or of the jobs it would make), is its own line."""
    from ..errors import ConfigError
    ours = error
    while ours is not None and not isinstance(ours, ConfigError):
        ours = ours.__cause__ or ours.__context__
    if ours is not None:
        return str(ours)
    from hydra.errors import MissingConfigException, OverrideParseException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException, ValidationError
    broken = _yaml_error(error)
    if broken is not None:
        return broken
    message = str(error)
    cause = error.__cause__ if isinstance(error.__cause__, OmegaConfBaseException) else (
        error if isinstance(error, OmegaConfBaseException) else None)
    if isinstance(error, OverrideParseException):
        bad = re.search(r"override '(.*?)'", message)
        what = bad.group(1) if bad else _first_line(message)
        return (f"cannot read the argument {what!r} ({_first_line(message.split(chr(10), 1)[-1])}): each argument is "
                "key=value or group=option; quote a value that has spaces or special characters, e.g. "
                "'hydra.run.dir=\"my runs/a\"'")
    if isinstance(error, MissingConfigException):
        launcher = re.search(r"Could not (?:find|load) 'hydra/launcher/([^']+)'", message)
        if launcher and launcher.group(1) in LAUNCHER_EXTRAS:
            name = launcher.group(1)
            return (f"hydra/launcher={name} needs its launcher plugin, which is not installed: pip install "
                    f"'fedcluster[{LAUNCHER_EXTRAS[name]}]'")
        m = re.search(r"Could not (?:find|load) '([^'/]+)/([^']+)'", message)
        if m:
            group, option = m.group(1), m.group(2)
            options = getattr(error, "options", None) or _group_options(conf, group)
            return f"{group}={option} is unknown{_suggest(option, options)}; allowed: {_listing(options)}"
        return _first_line(message)
    if cause is not None:
        key = getattr(cause, "full_key", None) or _override_of(message) or "?"
        override = _override_of(message)
        value = override.split("=", 1)[1] if "=" in override else None
        shown = f"{key}={value}" if value is not None else key
        if isinstance(cause, (ConfigAttributeError, ConfigKeyError)):
            name = getattr(cause, "key", None) or str(key).rsplit(".", 1)[-1]
            if str(key) in MOVED_KEYS:
                moved = MOVED_KEYS[str(key)]
                return f"{key} is not a setting: it is {moved.now}, {moved.what}"
            parent = getattr(cause, "parent_node", None)
            siblings = _keys_of(parent)
            where = str(key).rsplit(".", 1)[0] if "." in str(key) else "top level"
            if not siblings and parent is not None and "." in str(key):   # an open map with no keys yet
                return f"{key} is not set yet: {where} holds no keys; a new one is added with a plus, +{key}=<value>"
            return (f"{key} is not a setting{_suggest(name, siblings)}; allowed at {where}: {_listing(siblings)}"
                    if siblings else f"{key} is not a setting")
        if isinstance(cause, ValidationError):
            text = _first_line(getattr(cause, "msg", "") or str(cause))
            m = re.search(r"could not be converted to (\w+)", text)
            if m:
                return f"{shown}: wrong type for {key}; allowed: {TYPE_WORDS.get(m.group(1), m.group(1))}"
            if "is not a valid bool" in text:
                return f"{shown}: wrong type for {key}; allowed: true or false"
            m = re.search(r"Invalid type assigned: (\w+) is not a subclass of (\w+)", text)
            if m:
                return f"{shown}: {key} is a group of settings ({m.group(2)}), not a single value; set its keys, e.g. {key}.<key>=..."
            return f"{shown}: {text}"
        return f"{shown}: {_first_line(getattr(cause, 'msg', '') or str(cause))}"
    from hydra.errors import ConfigCompositionException, HydraException
    if isinstance(error, (ConfigCompositionException, HydraException)):
        return _first_line(message)
    return None


def refusal(error: BaseException, conf: Optional[Path] = None) -> Optional[str]:
    """The one line a command (`fedcluster show`, `fedcluster estimate`) prints for `error` before exiting 2: a value
    the run would refuse or data it would not find, in the run's own words, or Hydra's composition error (a misspelt
    key or option) as the CLI words it; None for anything else (a bug: it propagates)."""
    from ..errors import ConfigError, DataNotFoundError
    if isinstance(error, (ConfigError, DataNotFoundError)):
        return str(error)
    return one_line(error, conf)


def _declared(target: str) -> Optional[set]:
    """The keys a node instantiating `target` may have (None: unknown, not checked)."""
    import inspect
    try:
        from hydra.utils import get_class
        from .schema import RUNTIME_ARGS, parameters
        cls = get_class(target)
        params = parameters(cls)
    except Exception:   # noqa: BLE001 -- not a class we can read: Hydra reports it when instantiating
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params} - RUNTIME_ARGS | {"name"}


def _plain(cfg) -> dict:
    from omegaconf import DictConfig, OmegaConf
    return OmegaConf.to_container(cfg, resolve=False) if isinstance(cfg, DictConfig) else cfg


def undeclared_keys(cfg) -> List[str]:
    """Dotted keys of the composed config that no schema declares, with what was meant: top-level
    keys and `train.*` against their declarations (run_keys.py), every group node (nested ones too,
    e.g. CAM's base) against the signature of the class it instantiates."""
    from .store import GROUP_PACKAGES
    from ..run_keys import top_level_names, train_names
    plain = {k: v for k, v in _plain(cfg).items() if k != "hydra"}
    out = []
    top = set(top_level_names())
    out += [f"{k}{_suggest(k, top)}" for k in plain if k not in top]
    train = set(train_names())
    out += [f"train.{k}{_suggest(k, train)}" for k in (plain.get("train") or {}) if k not in train]

    def walk(node, prefix):
        if not isinstance(node, dict):
            return
        target = node.get("_target_")
        allowed = _declared(str(target)) if target else None
        for k, v in node.items():
            if allowed is not None and not str(k).startswith("_") and k not in allowed:
                out.append(f"{prefix}.{k}{_suggest(k, allowed)}")
            elif isinstance(v, dict):
                walk(v, f"{prefix}.{k}")

    for group in GROUP_PACKAGES:
        if group != "logger":   # {tracker name: options}, checked by fedcluster/loggers
            walk(plain.get(group), group)
    return out


def missing_keys(cfg) -> List[str]:
    """Top-level and `train` settings the composed config lacks (deleted with `~key`): every one
    is needed by the run, so none may be removed."""
    from ..run_keys import may_be_deleted, top_level_names, train_names
    plain = _plain(cfg)
    out = [k for k in top_level_names() if k not in plain and k not in may_be_deleted()]
    train = plain.get("train")
    if isinstance(train, dict):
        out += [f"train.{k}" for k in train_names() if k not in train]
    return out


def check_declared(cfg) -> None:
    """ConfigError naming the first key no schema declares (e.g. `+rouns=3`), or a required
    setting that was deleted (`~rounds`)."""
    from ..errors import ConfigError
    cfg = _plain(cfg)
    gone = missing_keys(cfg)
    if gone:
        raise ConfigError(f"{gone[0]} is missing (deleted with ~{gone[0]}?); every setting the config declares is "
                          "needed: override its value instead of deleting it")
    bad = undeclared_keys(cfg)
    if bad:
        raise ConfigError(f"{bad[0]} is not a fedcluster setting{' (and ' + str(len(bad) - 1) + ' more)' if len(bad) > 1 else ''}; "
                          "a key added with + must be one the config declares: fedcluster --cfg job lists them")
