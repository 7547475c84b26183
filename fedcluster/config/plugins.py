"""A researcher's own algorithms, models, data sets, partitions and loggers, as first class as
fedcluster's own: typed settings from the class signature, one-line errors, `--help` and
`fedcluster show` entries, sweeps on every launcher, the report.

A plugin is a Python module, found through
- the entry-point group `fedcluster.plugins` of any installed distribution (pyproject.toml:
  `[project.entry-points."fedcluster.plugins"]` `fedtrim = "fedtrim"`), or
- `FEDCLUSTER_PLUGINS=module[,module]` for code that is not installed (importable from sys.path or
  the working directory).
Importing it is all it takes. Its classes are found as fedcluster's own are (a class of the module that
one of its yamls builds from, `- /schemas/<group>/<ClassName>`), or named in a module-level
`FEDCLUSTER_OPTIONS = {"model": [MyNet], ...}`.
Each class gets the schema `schemas/<group>/<ClassName>`, as a built-in does (config.py). Its yaml
files sit in `conf/<group>/<option>.yaml` beside the module (in its package's folder), in the same
form as a built-in's, and are put on Hydra's config search path (`PluginConfigs`, registered with
Hydra's plugin registry, which launchers hand to their job processes), so no `hydra.searchpath` is
needed. A plugin may not reuse the name of a built-in option, schema or another plugin's."""
import importlib
import os
import sys
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Dict, List, Optional

from hydra.plugins.search_path_plugin import SearchPathPlugin

from .conf_dir import GROUPS
from ..errors import ConfigError

ENTRY_POINT_GROUP = "fedcluster.plugins"
ENV = "FEDCLUSTER_PLUGINS"


@dataclass
class Plugin:
    name: str                  # the module's import name
    origin: str                # where it was named: an entry point of a distribution, or $FEDCLUSTER_PLUGINS
    module: object
    conf: Optional[Path]       # its conf/ folder, if it ships yaml
    options: Dict[str, list] = field(default_factory=dict)   # FEDCLUSTER_OPTIONS


_LOADED: Optional[List[Plugin]] = None


def _named() -> List[tuple]:
    """(module name, origin) of every plugin: entry points first, then $FEDCLUSTER_PLUGINS."""
    found = [(ep.value.split(":")[0].strip(), f"entry point {ep.name!r} of "
              f"{getattr(getattr(ep, 'dist', None), 'name', 'an installed package')}")
             for ep in entry_points(group=ENTRY_POINT_GROUP)]
    found += [(name.strip(), f"${ENV}") for name in os.environ.get(ENV, "").split(",") if name.strip()]
    seen, unique = set(), []
    for name, origin in found:
        if name not in seen:
            seen.add(name)
            unique.append((name, origin))
    return unique


def _import(name: str, origin: str):
    if os.getcwd() not in sys.path:   # a plugin that is not installed, in the working directory
        sys.path.append(os.getcwd())
    try:
        return importlib.import_module(name)
    except (Exception, SystemExit) as e:   # noqa: BLE001 -- any failure to import a plugin (an exit too) is one line
        raise ConfigError(f"plugin {name!r} ({origin}) cannot be imported: {type(e).__name__}: {e}".splitlines()[0]) from None


def _conf_of(module) -> Optional[Path]:
    """`conf/` beside the module: in its package's folder (mypkg/conf for mypkg or mypkg.plugin)."""
    path = Path(module.__file__).resolve().parent / "conf" if getattr(module, "__file__", None) else None
    return path if path is not None and path.is_dir() else None


def _options_of(module, name: str, origin: str) -> Dict[str, list]:
    options = getattr(module, "FEDCLUSTER_OPTIONS", {}) or {}
    if not isinstance(options, dict) or any(g not in GROUPS for g in options):
        raise ConfigError(f"plugin {name!r} ({origin}): FEDCLUSTER_OPTIONS must map groups ({', '.join(GROUPS)}) "
                          f"to lists of classes; got {options!r}")
    from ..protocols import check_class
    for group, classes in options.items():
        for cls in classes:
            check_class(group, cls, f"plugin {name!r} ({origin})")
    return {group: list(classes) for group, classes in options.items()}


def load() -> List[Plugin]:
    """Import every plugin once (later calls return the same list) and put their conf/ folders on
    Hydra's search path. A plugin that cannot be imported, or whose yaml would shadow a built-in
    option or another plugin's, is a one-line ConfigError."""
    global _LOADED
    if _LOADED is not None:
        return _LOADED
    plugins = []
    for name, origin in _named():
        module = _import(name, origin)
        plugins.append(Plugin(name, origin, module, _conf_of(module), _options_of(module, name, origin)))
    _check_yaml_names(plugins)
    _LOADED = plugins
    if any(p.conf for p in plugins):
        from hydra.core.plugins import Plugins
        Plugins.instance().register(PluginConfigs)
    return plugins


def _check_yaml_names(plugins: List[Plugin]) -> None:
    from .conf_dir import config_dir
    owner = {str(f.relative_to(config_dir())): "fedcluster" for f in config_dir().rglob("*.yaml")}
    for plugin in plugins:
        if plugin.conf is None or plugin.conf == config_dir():
            continue
        for f in sorted(plugin.conf.rglob("*.yaml")):
            rel = str(f.relative_to(plugin.conf))
            if rel in owner:
                group, option = rel[:-5].split("/", 1) if "/" in rel else ("", rel[:-5])
                raise ConfigError(f"plugin {plugin.name!r} ({plugin.origin}) ships {f}, the name of {owner[rel]}'s "
                                  f"{group}={option}; rename the plugin's yaml")
            owner[rel] = f"plugin {plugin.name!r}"


def options(group: str) -> list:
    """The classes plugins add to a config group, found the way fedcluster's own are: each class the plugin's
    module holds that one of its yamls builds from (`- /schemas/<group>/<ClassName>`), and those its
    FEDCLUSTER_OPTIONS names."""
    from .store import _named_in
    out = []
    for p in load():
        named = _named_in(p.conf)[group] if p.conf is not None else []
        out += [getattr(p.module, n) for n in named if isinstance(getattr(p.module, n, None), type)]
        out += p.options.get(group, [])
    return list(dict.fromkeys(out))


def config_dirs(conf: Optional[Path] = None) -> List[Path]:
    """fedcluster's conf/ (or `conf`) and every plugin's, in search order: where a group's options
    are listed from."""
    from .conf_dir import config_dir
    main = conf or config_dir()
    return [main] + [p.conf for p in load() if p.conf is not None and p.conf != main]


def group_options(group: str, conf: Optional[Path] = None) -> List[str]:
    """Every option of a config group: fedcluster's yaml files (or those in `conf`) and the plugins'."""
    names = set()
    for conf in config_dirs(conf):
        if (conf / group).is_dir():
            names |= {str(f.relative_to(conf / group))[:-5] for f in (conf / group).rglob("*.yaml")}
    return sorted(names)


def option_file(group: str, option: str, conf: Optional[Path] = None) -> Optional[Path]:
    """The yaml file of `group=option`, in fedcluster's conf/ (or `conf`) or a plugin's."""
    for conf in config_dirs(conf):
        path = conf / group / f"{option}.yaml"
        if path.is_file():
            return path
    return None


class PluginConfigs(SearchPathPlugin):
    """Hydra's search path plus every plugin's conf/ folder (after fedcluster's own)."""

    def manipulate_search_path(self, search_path) -> None:
        for plugin in load():
            if plugin.conf is not None:
                search_path.append(provider=f"fedcluster-plugin-{plugin.name}", path=f"file://{plugin.conf}")
