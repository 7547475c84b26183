"""A sweep's jobs, whatever launcher runs them: each job ends as a JobOutcome that the launching
process collects, and the sweep ends with one line (finished, skipped, failed jobs) and the
`fedcluster-report` command that reads them.

Hydra ends a sweep at its first failed job (its sweepers read every JobReturn's value, which
re-raises the job's exception) and at the first job whose config cannot be composed (the basic
sweeper composes every job before launching any). `install` wraps three Hydra methods in the
launching process so that one bad job is reported and the others go on (and a fourth, so that a sweeper of
fedcluster's own, rows_sweeper.py, is built as its launchers are):
- composing a job: a job whose overrides cannot be composed gets the sweep's base config, its own
  overrides (so its own directory name) and the one-line reason under REFUSAL_KEY; its task
  returns "refused" without building anything;
- launching: each job's return value (a JobOutcome, made in this process or in a launcher's worker)
  is recorded and replaced by the job's objective, the number a sweeper (basic, Optuna) expects; a
  job that raised outside fedcluster's task is recorded as failed;
- the sweeper's pass that composes every job before the first starts is skipped (what it would stop
  at, the job's own composition refuses): each job is composed once, when it starts.
A launcher runs jobs in other processes (joblib, submitit, Ray, SLURM), so nothing here relies on
state shared with a job: the outcome travels back in the JobReturn."""
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

REFUSAL_KEY = "fc_job_refused"   # set on a job's config when its overrides could not be composed


@dataclass
class JobOutcome:
    """How one job ended. status: finished (ran now), skipped (its finished run was already
    there), failed (stopped after it started: divergence, a fault, a bug), refused (a bad value
    or a config that cannot be composed: nothing was written)."""
    status: str
    where: str
    objective: Optional[float] = None
    message: str = ""


class Sweep:
    """The launching process's sweep."""
    dir: Optional[str] = None
    outcomes: List[JobOutcome] = []

    @classmethod
    def start(cls, sweep_dir: str) -> None:
        cls.dir, cls.outcomes = sweep_dir, []

    @classmethod
    def record(cls, outcome: JobOutcome) -> None:
        cls.outcomes.append(outcome)

    @classmethod
    def count(cls, *statuses: str) -> int:
        return sum(o.status in statuses for o in cls.outcomes)

    @classmethod
    def all_refused(cls) -> bool:
        return bool(cls.outcomes) and cls.count("refused") == len(cls.outcomes)

    @classmethod
    def reasons(cls) -> List[str]:
        """Each distinct refusal reason once, in order."""
        return list(dict.fromkeys(o.message for o in cls.outcomes if o.status == "refused"))

    @classmethod
    def closing_line(cls) -> str:
        """`sweep DIR: 3 finished, 1 skipped (already finished), 1 failed; the table: fedcluster-report DIR`."""
        parts = [f"{cls.count('finished')} finished", f"{cls.count('skipped')} skipped (already finished)",
                 f"{cls.count('failed', 'refused')} failed"]
        return f"sweep {cls.dir}: {', '.join(parts)}; the table: fedcluster-report {cls.dir}"

    @classmethod
    def discard(cls) -> None:
        """Remove the sweep directory this process created (and its new parents) when no job wrote
        anything in it: only Hydra's multirun.yaml (and submitit's job logs) are there."""
        import shutil
        from ..run_records.rundir import created_here, discard_created
        d = cls.dir
        if d is None or not created_here(d):
            return
        entries = {e.name for e in Path(d).iterdir()} if Path(d).is_dir() else set()
        if entries <= {"multirun.yaml", ".submitit"}:
            if "multirun.yaml" in entries:
                (Path(d) / "multirun.yaml").unlink()
            if ".submitit" in entries:
                shutil.rmtree(Path(d) / ".submitit")
            discard_created(d)


def _output_dir(ret) -> str:
    try:
        return str(ret.hydra_cfg.hydra.runtime.output_dir)
    except Exception:   # noqa: BLE001 -- a launcher that failed before the job's config was set
        return ""


def collect(ret) -> None:
    """Record one JobReturn's outcome and leave the sweeper the job's objective."""
    from hydra.core.utils import JobStatus
    if ret.status == JobStatus.FAILED:   # raised outside fedcluster's task (a launcher, Hydra itself)
        error = ret._return_value
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        print(text.rstrip(), file=sys.stderr)
        outcome = JobOutcome("failed", _output_dir(ret), message=f"{type(error).__name__}: {error}".splitlines()[0])
        ret.status = JobStatus.COMPLETED
        ret.return_value = None
    else:
        value = ret._return_value
        outcome = value if isinstance(value, JobOutcome) else JobOutcome("finished", _output_dir(ret), objective=value)
        ret.return_value = outcome.objective
    Sweep.record(outcome)


def _refusing_load_sweep_config(original):
    def load_sweep_config(self, master_config, sweep_overrides):
        from omegaconf import open_dict, read_write
        from ..config.composition import one_line
        from ..config.store import config_dir
        try:
            return original(self, master_config, sweep_overrides)
        except Exception as e:   # noqa: BLE001 -- a composition error becomes this job's refusal
            line = one_line(e, config_dir())
            if line is None:
                raise
        from hydra._internal.config_loader_impl import get_overrides_dirname
        from hydra.core.override_parser.overrides_parser import OverridesParser
        cfg = original(self, master_config, [])
        naming = cfg.hydra.job.config.override_dirname
        dirname = get_overrides_dirname(overrides=OverridesParser.create().parse_overrides(list(sweep_overrides)),
                                        exclude_keys=list(naming.exclude_keys), item_sep=naming.item_sep,
                                        kv_sep=naming.kv_sep)
        with read_write(cfg), open_dict(cfg):
            cfg.hydra.overrides.task = list(sweep_overrides)
            cfg.hydra.job.override_dirname = dirname
            cfg[REFUSAL_KEY] = line
        return cfg
    load_sweep_config.__wrapped__ = original
    return load_sweep_config


def _collecting_instantiate_launcher(original):
    def instantiate_launcher(self, hydra_context, task_function, config):
        launcher = own_launcher(hydra_context, task_function, config) or original(self, hydra_context, task_function,
                                                                                  config)
        launch = launcher.launch

        def launch_and_collect(job_overrides, initial_job_idx):
            try:
                returns = launch(job_overrides, initial_job_idx)
            except Exception as e:   # noqa: BLE001 -- a worker process killed under a job (kill -9, out of memory)
                if not worker_died(e):
                    raise
                return after_worker_death(launcher, launch_and_collect, launch, job_overrides, initial_job_idx, e)
            for ret in returns:
                collect(ret)
            return returns
        launcher.launch = launch_and_collect
        return launcher
    instantiate_launcher.__wrapped__ = original
    return instantiate_launcher


def _ours(target) -> bool:
    """A `_target_` in this package: a launcher or sweeper fedcluster builds itself (Hydra builds only those of its
    `hydra_plugins` namespace)."""
    return isinstance(target, str) and target.startswith(__package__.split(".")[0] + ".")


def own_launcher(hydra_context, task_function, config):
    """A launcher of fedcluster's own (hydra/launcher=packed: a `_target_` in this package), built here: Hydra
    builds launchers only from its `hydra_plugins` namespace. None for any other launcher."""
    from hydra.utils import get_class
    from omegaconf import OmegaConf
    from ..errors import ConfigError
    launcher_cfg = config.hydra.launcher
    target = None if launcher_cfg is None else launcher_cfg.get("_target_")
    if not _ours(target):
        return None
    try:
        launcher = get_class(target)(**OmegaConf.to_container(launcher_cfg, resolve=True))
    except ConfigError as e:   # a bad launcher setting: one line, and the sweep leaves nothing
        Sweep.discard()
        print(f"fedcluster: error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
    launcher.setup(hydra_context=hydra_context, task_function=task_function, config=config)
    return launcher


def _own_sweeper_first(original):
    def instantiate_sweeper(self, *, hydra_context, task_function, config):
        """A sweeper of fedcluster's own (hydra/sweeper=rows: a `_target_` in this package), built here, as
        `own_launcher` builds launchers; Hydra's own and its plugins' as Hydra builds them."""
        from hydra.utils import get_class
        from omegaconf import OmegaConf
        target = config.hydra.sweeper.get("_target_") if config.hydra.sweeper is not None else None
        if not _ours(target):
            return original(self, hydra_context=hydra_context, task_function=task_function, config=config)
        settings = {k: v for k, v in OmegaConf.to_container(config.hydra.sweeper, resolve=True).items() if k != "_target_"}
        sweeper = get_class(target)(**settings)
        sweeper.setup(hydra_context=hydra_context, task_function=task_function, config=config)
        return sweeper
    instantiate_sweeper.__wrapped__ = original
    return instantiate_sweeper


def worker_died(error: BaseException) -> bool:
    """A launcher's worker process ended under a job (joblib/loky: TerminatedWorkerError, a broken
    process pool), rather than the job raising."""
    return type(error).__name__ in ("TerminatedWorkerError", "BrokenProcessPool", "BrokenExecutor")


def _job_dir(launcher, overrides) -> Optional[Path]:
    """The directory Hydra gives the job with these overrides (its config composed as the launcher would)."""
    try:
        from omegaconf import OmegaConf
        cfg = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
        return Path(str(cfg.hydra.sweep.dir)) / str(OmegaConf.select(cfg, "hydra.sweep.subdir"))
    except Exception:   # noqa: BLE001 -- a job whose config cannot be composed was refused in its worker
        return None


def _returned(outcome: JobOutcome):
    from hydra.core.utils import JobReturn, JobStatus
    Sweep.record(outcome)
    ret = JobReturn()
    ret.status, ret.return_value = JobStatus.COMPLETED, outcome.objective
    return ret


def after_worker_death(launcher, launch_and_collect, launch, job_overrides, initial_job_idx, error):
    """A worker died while the batch ran (its pool is gone, and with it every job's return). Each job is
    then told apart by its directory: finished (summary.json) is recorded as such; one that was running
    (its run started, no summary) is named in one line and run again alone, once, so a job killed for
    its memory is named as failed and the others go on; the jobs not yet started are launched again. Unless
    this process was told to stop too (`timeout`, a scheduler's SIGTERM, Ctrl-C reach the whole process group,
    and with it the workers): then the sweep stops here, as a stopped run does, and relaunches nothing."""
    from .. import signals
    signals.check()   # a stop noted while the batch ran: raised now (Stopped), before anything is run again
    dirs = [_job_dir(launcher, o) for o in job_overrides]
    done = [d is not None and (d / "summary.json").is_file() for d in dirs]
    running = [d is not None and not f and (d / "config.yaml").exists() for d, f in zip(dirs, done)]
    names = [d.name for d, r in zip(dirs, running) if r] or ["(none had started)"]
    import re
    found = re.search(r"exit codes of the workers are \{([^}]*)\}", str(error))
    code = found.group(1) if found else "unknown"
    print(f"fedcluster: error: a worker process of the sweep died (exit code {code}: killed, or out of memory) while "
          f"it ran {', '.join(names)}; each such job runs again alone, the others go on", file=sys.stderr, flush=True)
    returns = []
    for i, (overrides, d, f, r) in enumerate(zip(job_overrides, dirs, done, running)):
        idx = initial_job_idx + i
        if f:
            returns.append(_returned(JobOutcome("finished", str(d))))
        elif r:
            try:
                returns += launch_and_collect_alone(launch, overrides, idx)
            except Exception as e:   # noqa: BLE001
                if not worker_died(e):
                    raise
                message = "its worker process died again (killed, or out of memory); rerun the sweep to resume it"
                print(f"fedcluster: error: {d}: {message}", file=sys.stderr, flush=True)
                returns.append(_returned(JobOutcome("failed", str(d), message=message)))
        else:
            returns += launch_and_collect([overrides], idx)
    return returns


def launch_and_collect_alone(launch, overrides, idx):
    returns = launch([overrides], idx)
    for ret in returns:
        collect(ret)
    return returns


def watch_parent() -> None:
    """In a launcher's worker process (joblib/loky): exit once the launching process is gone, so no
    idle worker (each holding a run's memory) outlives its sweep."""
    import multiprocessing
    import os
    import threading
    import time
    if multiprocessing.parent_process() is None or getattr(watch_parent, "started", False):
        return
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(2)
        os._exit(1)
    threading.Thread(target=watch, name="fedcluster-parent-watch", daemon=True).start()
    watch_parent.started = True


def install() -> None:
    """Wrap Hydra's job composition and launcher creation: in the launching process (the CLI) and
    in a launcher's workers, some of which compose their job's config themselves (joblib); the
    workers import fedcluster.command.cli to run the task, which calls this."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.plugins import Plugins
    load = getattr(ConfigLoaderImpl.load_sweep_config, "__wrapped__", ConfigLoaderImpl.load_sweep_config)
    ConfigLoaderImpl.load_sweep_config = _refusing_load_sweep_config(load)
    make = getattr(Plugins.instantiate_launcher, "__wrapped__", Plugins.instantiate_launcher)
    Plugins.instantiate_launcher = _collecting_instantiate_launcher(make)
    sweeper = getattr(Plugins.instantiate_sweeper, "__wrapped__", Plugins.instantiate_sweeper)
    Plugins.instantiate_sweeper = _own_sweeper_first(sweeper)
    from hydra.plugins.sweeper import Sweeper
    validate = getattr(Sweeper.validate_batch_is_legal, "__wrapped__", Sweeper.validate_batch_is_legal)
    Sweeper.validate_batch_is_legal = _composed_by_the_launcher(validate)
    watch_parent()


def _composed_by_the_launcher(original):
    """Hydra's sweepers compose every job of a batch (for the basic sweeper: the whole sweep) before launching
    the first, to stop early at one that cannot be composed. Here a job that cannot be composed is refused on
    its own (`_refusing_load_sweep_config`), so that pass finds nothing and only composes each job twice: a
    paper preset's 84 jobs took 39 s before its first job started. Each job is composed once, when its
    launcher starts it (in this process or its worker)."""
    def validate_batch_is_legal(self, batch):
        return None
    validate_batch_is_legal.__wrapped__ = original
    return validate_batch_is_legal
