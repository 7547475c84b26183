"""An algorithm's own settings, as its config group composes them: what a report compares a run's
algorithm settings with, to tell a method's default configuration from its sensitivity rows."""
from functools import lru_cache
from typing import Dict

# Settings that change what a run reports, never its training or the model that scores a client
# (IFCA's test-label pick, reported in its own column): not a configuration of their own.
REPORTING_ONLY = ("report_label_pick",)


@lru_cache(maxsize=None)
def algorithm_defaults(name: str) -> Dict[str, object]:
    """`algorithm=<name>`'s settings flattened to 'algorithm.<path>' -> value; {} where the name is
    no config option here (a run from elsewhere)."""
    from omegaconf import OmegaConf
    from ..config import compose_config
    try:
        node = OmegaConf.to_container(compose_config([f"algorithm={name}"]).algorithm, resolve=True)
    except Exception:   # noqa: BLE001 -- not composable here: no defaults to compare with
        return {}
    flat: Dict[str, object] = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        else:
            flat[prefix] = value
    walk("algorithm", node)
    return flat


def reporting_only(key: str) -> bool:
    """Whether a dotted algorithm key only changes what is reported ('algorithm.base.report_label_pick')."""
    return key.rsplit(".", 1)[-1] in REPORTING_ONLY
