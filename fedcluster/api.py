"""The Python API for notebooks and scripts: `run` one experiment from command-line-style
overrides, `load_runs` every finished run below a folder as one tidy DataFrame."""
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd


@dataclass
class RunResult:
    summary: dict           # summary.json
    metrics: pd.DataFrame   # metrics.csv
    path: Path              # the run directory


def run(overrides: Sequence[str] = (), output_dir: Optional[str] = None) -> RunResult:
    """One run, as `fedcluster <overrides>` would do it (same config, checks and files), in
    `output_dir` or the CLI's default directory outputs/runs/<time>_<algorithm>_..._<4 hex>/
    (relative to the working directory). `+preset=...` works; a preset's multirun grid does not
    (sweeps: the `fedcluster -m` command)."""
    from omegaconf import open_dict

    from .config import compose_config
    from .runner import run as run_config

    cfg = compose_config(overrides, with_hydra=output_dir is None)
    out = Path(output_dir) if output_dir is not None else Path(cfg.hydra.run.dir)
    if output_dir is None:
        with open_dict(cfg):
            del cfg["hydra"]
    summary = run_config(cfg, out, progress=False)
    return RunResult(summary, pd.read_csv(out / "metrics.csv"), out)


def load_runs(path) -> pd.DataFrame:
    """Every finished run below `path`: its metrics.csv rows with the run's config keys as columns
    (dotted names such as `algorithm.name`, `train.lr`, `seed`) and `run_dir`. Unfinished or
    diverged runs are left out (fedcluster-report lists them)."""
    from .results.runs import discover

    frames = []
    for r in discover(Path(path)).runs:
        metrics = pd.read_csv(r.path / "metrics.csv")
        config = {k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for k, v in r.flat.items()}
        config["seed"] = r.seed
        frames.append(metrics.assign(**config, run_dir=str(r.path)))
    if not frames:
        raise FileNotFoundError(f"no finished fedcluster run under {path}")
    return pd.concat(frames, ignore_index=True)
