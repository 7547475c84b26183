"""`hydra/launcher=packed`: a sweep's jobs run side by side in this process, their local training
packed into one job where model, solver and inputs agree (packed.py, local_training/packing.py).

Each job is composed, named and placed as Hydra's basic launcher does it (its directory under
hydra.sweep.dir, its `.hydra/` files, its outcome in the sweep's closing line) and runs as it runs
alone: the same checks, directory, checkpoints, resume and results. `batch` jobs share one packed
pass at a time (the rest wait for the next batch); a stop (Ctrl-C, SIGTERM) stops every running job
at its next training step, each saying where it resumes, and the same command resumes them all.

    fedcluster -m hydra/launcher=packed seed=0,1,2 algorithm=fedavg,ifca,local

A Hydra launcher is found by class name in the `hydra_plugins` namespace; this one is built by
fedcluster's own launcher hook instead (sweep.py), so it needs no separate package."""
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from .errors import ConfigError

TARGET = "fedcluster.packed_launcher.PackedLauncher"


class PackedLauncher:
    """batch: jobs trained side by side at once (null: all of the sweep's); chunk: rows of one packed
    job ("auto": sized from free memory, as a run's own chunk)."""

    def __init__(self, batch: Optional[int] = None, chunk="auto", _target_: str = TARGET):
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            raise ConfigError(f"hydra.launcher.batch={batch!r} must be an integer >= 1 or null (all jobs at once)")
        if chunk != "auto" and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
            raise ConfigError(f"hydra.launcher.chunk={chunk!r} must be 'auto' or an integer >= 1")
        self.batch, self.chunk = batch, chunk
        self.config = self.hydra_context = self.task_function = None

    def setup(self, *, hydra_context, task_function, config: DictConfig) -> None:
        self.hydra_context, self.task_function, self.config = hydra_context, task_function, config

    def _job_config(self, overrides: Sequence[str], idx: int) -> DictConfig:
        cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(cfg):
            cfg.hydra.job.id = idx
            cfg.hydra.job.num = idx
        out = os.path.join(str(OmegaConf.select(cfg, "hydra.sweep.dir")), str(OmegaConf.select(cfg, "hydra.sweep.subdir")))
        with read_write(cfg.hydra.runtime), open_dict(cfg.hydra.runtime):
            cfg.hydra.runtime.output_dir = os.path.abspath(out)
        return cfg

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int):
        from hydra.core.utils import JobReturn, JobStatus, setup_globals
        from .command.cli import run_job
        from .packed import run_packed
        setup_globals()
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        step = self.batch or max(len(job_overrides), 1)
        returns: List[JobReturn] = []
        for first in range(0, len(job_overrides), step):
            configs = [self._job_config(o, initial_job_idx + first + i)
                       for i, o in enumerate(job_overrides[first:first + step])]
            tasks = []
            for cfg in configs:
                task_cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
                Path(cfg.hydra.runtime.output_dir).mkdir(parents=True, exist_ok=True)
                tasks.append(lambda train_with, c=task_cfg, hc=cfg.hydra: run_job(c, hc, train_with))
            print(f"fedcluster: training {len(tasks)} jobs side by side (hydra/launcher=packed)", file=sys.stderr,
                  flush=True)
            outcomes, _ = run_packed(tasks, self.chunk)
            stops = [o for o in outcomes if isinstance(o, SystemExit)]
            for cfg, outcome in zip(configs, outcomes):
                ret = JobReturn()
                ret.cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
                ret.hydra_cfg = OmegaConf.create({"hydra": cfg.hydra})
                ret.overrides = list(OmegaConf.to_container(cfg.hydra.overrides.task))
                ret.working_dir = os.getcwd()
                if isinstance(outcome, BaseException) and not isinstance(outcome, SystemExit):
                    ret.status, ret.return_value = JobStatus.FAILED, outcome
                else:
                    ret.status, ret.return_value = JobStatus.COMPLETED, None if isinstance(outcome, SystemExit) else outcome
                returns.append(ret)
            if stops:   # a stop signal: every job said where it resumes; the sweep ends as a stopped run does
                raise SystemExit(max(int(s.code or 0) for s in stops))
        return returns
