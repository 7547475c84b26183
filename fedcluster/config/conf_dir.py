"""Where fedcluster's own config folder is (the CLI, the API, the plugins' checks read it), and
the config groups whose options a user (or a plugin) adds."""
import os
from pathlib import Path

GROUPS = ("dataset", "partition", "model", "algorithm", "hardware", "privacy", "logger")


def config_dir() -> Path:
    """The config folder: $FEDCLUSTER_CONF; else conf/ shipped inside the installed package (a wheel
    or `pip install .`, setup.py copies it there); else conf/ at the repository top level (an
    editable install or a checkout)."""
    env = os.environ.get("FEDCLUSTER_CONF")
    here = Path(__file__).resolve().parent.parent   # fedcluster/ (this file is fedcluster/config/conf_dir.py)
    candidates = [Path(env)] if env else [here / "conf", here.parent / "conf"]
    for path in candidates:
        if (path / "config.yaml").exists():
            return path
    from ..errors import ConfigError   # one line, exit 2 from the commands; raised as such through the API
    if env:
        what = "does not exist" if not Path(env).exists() else "is not a folder" if not Path(env).is_dir() \
            else "holds no config.yaml"
        raise ConfigError(f"FEDCLUSTER_CONF={env} {what}; allowed: a config folder holding config.yaml (fedcluster's "
                          "conf/ or a copy of it), or unset FEDCLUSTER_CONF to use the installed one")
    raise ConfigError(f"no config.yaml in {' or '.join(map(str, candidates))}; reinstall fedcluster or set "
                      "FEDCLUSTER_CONF to the conf/ folder")
