"""The Python API for notebooks and scripts: `run` one experiment from command-line-style
overrides, `load_runs` every finished run below a folder as one tidy DataFrame."""
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd


@dataclass
class RunResult:
    """What `run` returns: the run's summary.json, its metrics.csv and its directory."""
    summary: dict           # summary.json: status, final means over clients ("local"), ARI, times, versions
    metrics: pd.DataFrame   # metrics.csv: one row per round, model, model_index, eval_set, metric, value
    path: Path              # the run directory


def run(overrides: Sequence[str] = (), output_dir: Optional[str] = None) -> RunResult:
    """Run one experiment as `fedcluster <overrides>` would: the same composed config, checks,
    files and results.

    overrides: command-line style strings, e.g. ["algorithm=ifca", "dataset=fashion_mnist",
        "rounds=5", "train.lr=0.01"]; `+preset=...` works, but a preset's multirun grid does not
        (sweeps: the `fedcluster -m` command).
    output_dir: the run directory; None: the CLI's default, outputs/runs/<time>_<algorithm>_..._<4 hex>/
        under the working directory. A directory that holds this config's finished run is not
        redone (its results are returned); another config's run there is an error.
    Returns a RunResult (summary, metrics, path). Bad values raise fedcluster.errors.ConfigError
    with the one-line message the CLI prints, before anything is written.

    >>> r = fedcluster.run(["algorithm=ifca", "rounds=5"], output_dir="outputs/api/ifca")
    >>> r.summary["local"]["local_test_mse"]
    """
    from omegaconf import open_dict

    from ..runner import run as run_config

    cfg = composed(overrides, with_hydra=output_dir is None)
    out = Path(output_dir) if output_dir is not None else Path(cfg.hydra.run.dir)
    if output_dir is None:
        with open_dict(cfg):
            del cfg["hydra"]
    summary = run_config(cfg, out, progress=False)
    return RunResult(summary, pd.read_csv(out / "metrics.csv"), out)


def composed(overrides, with_hydra: bool):
    """The config `fedcluster <overrides>` composes; what the CLI refuses in one line (a string where a
    list belongs, a misspelt key or option, an unparsable argument) is a one-line ConfigError here too."""
    from ..config.composition import one_line
    from ..config.store import compose_config, config_dir
    from ..errors import ConfigError
    from collections.abc import Mapping
    if isinstance(overrides, (str, bytes, Mapping)) or not all(isinstance(o, str) for o in overrides):
        kind = "a dict" if isinstance(overrides, Mapping) else "not a list of strings"
        raise ConfigError(f"overrides={str(overrides)[:120]} is {kind}; fedcluster.run takes a list of override "
                          "strings, e.g. ['algorithm=ifca', 'rounds=1'] (one item per command-line argument)")
    try:
        return compose_config(list(overrides), with_hydra=with_hydra)
    except Exception as e:   # noqa: BLE001 -- Hydra's composition errors, as the CLI words them
        line = one_line(e, config_dir())
        if line is None:
            raise
        raise ConfigError(line) from None


def load_runs(path, final: bool = False) -> pd.DataFrame:
    """Every finished run below `path` as one tidy DataFrame: each run's metrics.csv rows
    (round, model, model_index, eval_set, metric, value) with the run's config keys as columns
    (dotted names such as `algorithm.name`, `train.lr`, `seed`) and `run_dir`. Unfinished or
    diverged runs are left out, and of two runs with the same config and seed the first by path
    is kept (fedcluster-report lists both kinds).

    final: keep only each series' last recorded round (per run, model, model_index, eval_set and
        metric), i.e. the run's final values; False: every round (learning curves).

    >>> df = fedcluster.load_runs("outputs/multirun/2026-11-25_10-00-00_ab12", final=True)
    >>> local = df[(df.model == "local") & (df.eval_set == "local_test") & (df.metric == "accuracy")]
    >>> local.groupby(["algorithm.name", "seed"])["value"].mean()   # mean over clients, per run
    """
    from ..report.runs import discover

    frames = []
    for r in discover(Path(path)).runs:
        metrics = pd.read_csv(io.StringIO(r.files.read_text("metrics.csv")))   # a run folder's, or a pack's
        config = {k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for k, v in r.flat.items()}
        config["seed"] = r.seed
        frames.append(metrics.assign(**config, run_dir=str(r.path)))
    if not frames:
        raise FileNotFoundError(f"no finished fedcluster run under {path}")
    df = pd.concat(frames, ignore_index=True)
    if final:
        series = ["run_dir", "model", "model_index", "eval_set", "metric"]
        last = df.groupby(series, dropna=False)["round"].transform("max")
        df = df[df["round"] == last].reset_index(drop=True)
    return df
