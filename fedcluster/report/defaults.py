"""An algorithm's own settings, as its config group composes them: what a report compares a run's
algorithm settings with, to tell a method's default configuration from its sensitivity rows."""
from functools import lru_cache
from typing import Dict

from .runs import ABSENT

# Settings that change what a run reports, never its training or the model that scores a client
# (IFCA's test-label pick, reported in its own column): not a configuration of their own.
REPORTING_ONLY = ("report_label_pick",)


@lru_cache(maxsize=None)
def algorithm_defaults(name: str) -> Dict[str, object]:
    """`algorithm=<name>`'s settings flattened to 'algorithm.<path>' -> value; {} where the name is
    no config option here (a run from elsewhere)."""
    from omegaconf import OmegaConf
    from ..config.store import compose_config
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


def setting_name(key: str) -> str:
    """An algorithm setting by its own name, where the method is already named: 'algorithm.init' -> 'init'."""
    return key[len("algorithm."):] if key.startswith("algorithm.") else key


def non_default_settings(item, method: str) -> Dict[str, object]:
    """{dotted key: value} of `item`'s (a Run's or a Cell's) algorithm settings that differ from
    `method`'s defaults, leaving out K (it follows the run's num_clusters) and reporting-only ones."""
    return {k: item.value(k) for k, d in algorithm_defaults(str(method)).items()
            if k != "algorithm.name" and not k.endswith("num_clusters") and not reporting_only(k)
            and item.value(k) is not ABSENT and item.value(k) != d}


def reporting_only(key: str) -> bool:
    """Whether a dotted algorithm key only changes what is reported ('algorithm.base.report_label_pick')."""
    return key.rsplit(".", 1)[-1] in REPORTING_ONLY


# Data settings that change what every method is trained on: a run with one set is its own row (a sensitivity
# row), never a seed of the row without it. {dotted key: its value when off}.
INPUT_SETTINGS = {"dataset.normalize": False}


def options_text(run) -> str:
    """A run's settings away from its method's defaults, as 'key=value' words in key order ('' for the
    method's default configuration): its algorithm settings (non_default_settings) and the data settings
    of INPUT_SETTINGS that are on."""
    from .runs import show
    method = run.summary.get("algorithm") or run.value("algorithm.name")
    words = [f"{setting_name(k)}={show(v)}" for k, v in sorted(non_default_settings(run, method).items())]
    words += [f"{k}={show(run.value(k))}" for k, off in INPUT_SETTINGS.items()
              if run.value(k) not in (off, None) and run.value(k) is not ABSENT]
    return " ".join(words)
