"""The logger protocol and what the trackers share: one scalar per (model, eval set, metric) and
round, the mean over the models of that kind (clients' local models, cluster models, ...)."""
import importlib
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional

from ..errors import ConfigError


class Logger:
    """Receives a run's rows as they are made. Constructing one checks that its package is
    installed and writes nothing (it comes before the run directory is claimed)."""

    def open(self, out: Path, config: dict, ids: dict, rows: List[dict], first_round: int) -> None:
        """The run starts (first_round 0) or resumes; `rows` are the metric rows it already has."""

    def log_round(self, t: int, rows: List[dict], train_seconds: float) -> None:
        """Round t (0-based) was evaluated; `rows` are the metric rows made since the last call."""

    def close(self, summary: Optional[dict]) -> None:
        """The run ended: finished (its summary) or stopped (None)."""


def require(module: str, extra: str, option: str):
    """Import an optional package, or a one-line error naming the pip command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"logger={option} needs the `{module.split('.')[0]}` package, which is not installed: "
                          f"pip install 'fedcluster[{extra}]'") from None


def round_scalars(rows: List[dict]) -> Dict[int, Dict[str, float]]:
    """{round: {"<model>/<eval_set>_<metric>": mean over model_index}} of metric rows."""
    sums = defaultdict(lambda: [0.0, 0])
    for r in rows:
        cell = sums[(int(r["round"]), f"{r['model']}/{r['eval_set']}_{r['metric']}")]
        cell[0] += float(r["value"])
        cell[1] += 1
    out: Dict[int, Dict[str, float]] = defaultdict(dict)
    for (t, name), (total, n) in sorted(sums.items()):
        out[t][name] = total / n
    return dict(out)


def flat_params(config: dict) -> Dict[str, object]:
    """A nested config as {"train.lr": 0.01, ...} (identity.flatten), values trackers can store:
    scalars as they are, anything else (lists, empty mappings) as text."""
    from ..run_records.identity import flatten
    return {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in flatten(config).items()}


def make_loggers(node) -> List[Logger]:
    """The loggers a config's `logger` node names (a mapping name -> options with _target_)."""
    from hydra.utils import instantiate
    made = []
    for name in sorted(node or {}):
        try:
            made.append(instantiate(node[name]))
        except Exception as e:   # Hydra wraps the constructor's error; ours is the one to show
            cause = e
            while cause is not None and not isinstance(cause, ConfigError):
                cause = cause.__cause__ or cause.__context__
            if cause is None:
                raise
            raise cause from None
    return made
