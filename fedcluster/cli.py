"""`fedcluster` command: a thin Hydra shell over fedcluster.runner.run."""
import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from .config import register_schemas
from .errors import ConfigError, DataNotFoundError, NonFiniteLossError


def config_dir() -> Path:
    """conf/ at the repository top level (next to the package); FEDCLUSTER_CONF overrides."""
    env = os.environ.get("FEDCLUSTER_CONF")
    path = Path(env) if env else Path(__file__).resolve().parent.parent / "conf"
    if not (path / "config.yaml").exists():
        sys.exit(f"fedcluster: no config.yaml in {path}; install with `pip install -e .` from the repository "
                 "or set FEDCLUSTER_CONF to the conf/ folder")
    return path


def user_error(e: BaseException):
    """The ConfigError/DataNotFoundError/NonFiniteLossError behind e (hydra wraps errors
    raised while instantiating), or None."""
    while e is not None:
        if isinstance(e, (ConfigError, DataNotFoundError, NonFiniteLossError)):
            return e
        e = e.__cause__ or e.__context__
    return None


def _task(cfg: DictConfig) -> None:
    from .runner import run
    try:
        summary = run(cfg, HydraConfig.get().runtime.output_dir)
    except Exception as e:   # noqa: BLE001 -- user errors become one line, the rest propagate
        cause = user_error(e)
        if cause is None:
            raise
        print(f"fedcluster: error: {cause}", file=sys.stderr)
        sys.exit(2)
    print(f"fedcluster: wrote {HydraConfig.get().runtime.output_dir} ({summary['wall_time_s']:.1f} s)", file=sys.stderr)


def main() -> None:
    register_schemas()
    hydra.main(config_path=str(config_dir()), config_name="config", version_base="1.3")(_task)()


if __name__ == "__main__":
    main()
