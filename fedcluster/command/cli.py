"""`fedcluster` command: a thin Hydra shell over fedcluster.runner.run.

What this shell adds to `run`: the run directory is checked before Hydra creates it
(`RunDirGuard.on_run_start`, so a file or an unwritable place is a one-line error and a bad
value is refused before anything exists), Hydra writes nothing itself (`output_subdir: null`,
no job log file): its `.hydra/` files are written by us once the directory is ours, and every
user error, Ctrl-C included, is one line on stderr."""
import os
import sys
from pathlib import Path
from typing import List, Optional

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from .. import signals
from . import sweep
from ..config.store import GROUP_PACKAGES, config_dir, register_resolvers, register_schemas
from ..run_keys import GROUPS   # the groups `--help` lists, as the config composes them
from ..errors import ConfigError, DataNotFoundError, NonFiniteLossError, RunFault, RunInterrupted, WriteFailed
from .sweep import REFUSAL_KEY, JobOutcome, Sweep
from .swept_groups import per_job

register_resolvers()   # also in launcher worker processes, which import this module to run _task
sweep.install()        # there too: one bad job of a sweep is reported, the others go on


def user_error(e: BaseException):
    """The ConfigError/DataNotFoundError/NonFiniteLossError behind e (hydra wraps errors
    raised while instantiating), or None."""
    while e is not None:
        if isinstance(e, (ConfigError, DataNotFoundError, NonFiniteLossError, RunFault, WriteFailed)):
            return e
        e = e.__cause__ or e.__context__
    return None


def _fail(message: str, code: int = 2):
    print(f"fedcluster: error: {message}", file=sys.stderr)
    sys.exit(code)


class RunDirGuard(Callback):
    """Checks that must come before Hydra creates the output directory."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        from ..config.composition import check_declared
        from ..run_records.rundir import check_place
        from ..config.validate import validate
        try:
            validate(config)   # validate() leaves out the hydra node
            check_declared(config)
            check_place(config.hydra.run.dir)
        except ConfigError as e:
            _fail(str(e))

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from ..run_records.rundir import check_place
        try:
            check_place(config.hydra.sweep.dir, key="hydra.sweep.dir")
        except ConfigError as e:
            _fail(str(e))
        Sweep.start(str(config.hydra.sweep.dir))

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        """A sweep whose every job was refused is one line and leaves nothing, like a refused run;
        otherwise the refusals, then one closing line (exit 2 when a job failed)."""
        if Sweep.all_refused():
            Sweep.discard()
            n = len(Sweep.outcomes)
            jobs = "the sweep's only job was" if n == 1 else f"all {n} jobs of the sweep were"
            _fail(f"{jobs} refused, nothing was written: " + " | ".join(Sweep.reasons()))
        for outcome in Sweep.outcomes:
            if outcome.status == "refused":
                print(f"fedcluster: error: {outcome.where}: {outcome.message}", file=sys.stderr)
        print(f"fedcluster: {Sweep.closing_line()}", file=sys.stderr, flush=True)
        if Sweep.count("failed", "refused"):
            sys.exit(2)


def _write_hydra_files(out: Path, hc=None) -> None:
    """What Hydra's output_subdir would hold, written only once the directory is ours. `hc`: the
    job's hydra config (default: Hydra's current one)."""
    from ..run_records.io import write_text
    hc = HydraConfig.get() if hc is None else hc
    write_text(out / ".hydra" / "overrides.yaml", OmegaConf.to_yaml(OmegaConf.create(list(hc.overrides.task))))
    write_text(out / ".hydra" / "hydra.yaml", OmegaConf.to_yaml(OmegaConf.create({"hydra": hc})))


def objective_value(cfg: DictConfig, summary: dict):
    """The sweep's objective: a mean over clients of a validation metric (summary["local"]), so that
    hyperparameter search never reads test data; None when the run has no validation split."""
    name = cfg.get("objective") or f"local_val_{summary.get('key_metric', 'accuracy')}"
    value = (summary.get("local") or {}).get(name)
    return None if value is None else float(value)


def _task(cfg: DictConfig):
    """One run; in a sweep, its JobOutcome (sweep.py hands the sweeper the objective)."""
    signals.hold_foreign()   # a launcher's handlers in a job's process (submitit's requeue) wait for a safe point too
    return run_job(cfg, HydraConfig.get())


def run_job(cfg: DictConfig, hc, train_with=None):
    """`_task` for the job whose hydra config is `hc` (the packed launcher runs several at once, each
    in its own thread, so none reads Hydra's one current config); `train_with`: runner.run's."""
    from ..run_records.rundir import adopt_if_empty, discard_created
    from ..runner import run
    out = hc.runtime.output_dir
    multirun = hc.mode == RunMode.MULTIRUN
    if multirun:
        adopt_if_empty(out)   # Hydra created the job's directory: a refused job removes it again
        if REFUSAL_KEY in cfg:   # its overrides could not be composed (sweep.py)
            discard_created(out)
            return JobOutcome("refused", out, message=str(cfg[REFUSAL_KEY]))
    try:
        signals.check()   # a stop while Hydra composed the config
        summary = run(cfg, out, on_claimed=lambda path: _write_hydra_files(path, hc), train_with=train_with)
    except RunInterrupted as e:
        resume = (f"resumes from the checkpoint after round {e.checkpoint_round}" if e.checkpoint_round
                  else f"starts it over (no checkpoint yet; checkpoint_every={cfg.checkpoint_every})")
        print(f"fedcluster: interrupted{signals.by_signal(e)} after {e.rounds_done} of {e.rounds} rounds; the same command with "
              f"hydra.run.dir={out} {resume}", file=sys.stderr)
        sys.exit(signals.exit_code(e))
    except KeyboardInterrupt as e:
        discard_created(out)
        print(f"fedcluster: interrupted{signals.by_signal(e)} before training started; nothing to resume", file=sys.stderr)
        sys.exit(signals.exit_code(e))
    except Exception as e:   # noqa: BLE001 -- user errors become one line, the rest propagate (a sweep goes on)
        cause = user_error(e)
        if cause is None:
            if not multirun:
                raise
            import traceback   # a bug in one job of a sweep: its traceback now, the other jobs go on
            traceback.print_exc()
            discard_created(out)
            return JobOutcome("failed", out, message=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        discard_created(out)
        if multirun:   # one bad job (e.g. a diverging learning rate of a grid) does not stop the sweep
            message = str(cause).splitlines()[0]
            if isinstance(cause, (ConfigError, DataNotFoundError)) and not Path(out, "config.yaml").exists():
                return JobOutcome("refused", out, message=message)   # reported by the launching process
            print(f"fedcluster: error: {out}: {cause}", file=sys.stderr)
            return JobOutcome("failed", out, message=message)
        _fail(str(cause), code=1 if isinstance(cause, (RunFault, WriteFailed)) else 2)   # a machine fault: exit 1
    objective = objective_value(cfg, summary)
    if summary.get("already_complete"):
        status = summary.get("status", "complete")
        if status != "complete":
            message = f"{out} holds this config's run, which ended: {summary.get('error', status)}"
            if multirun:
                print(f"fedcluster: error: {message}", file=sys.stderr)
                return JobOutcome("failed", out, message=f"ended: {summary.get('error', status)}")
            _fail(message + " (overwrite=true runs it again)")
        print(f"fedcluster: {out} already holds this config's finished run; nothing redone "
              "(overwrite=true runs it again)", file=sys.stderr)
        return JobOutcome("skipped", out, objective) if multirun else objective
    print(f"fedcluster: wrote {out} ({summary['wall_time_s']:.1f} s)", file=sys.stderr)
    return JobOutcome("finished", out, objective) if multirun else objective




def _first_line(conf: Path, group: str, option: str, width: int = 100) -> str:
    """What an option is, from its yaml's opening comment, cut at a word to `width`
    characters ('' for an option that is no yaml under `conf`, a plugin's class, or opens with no comment)."""
    path = conf / group / f"{option}.yaml"
    words = []
    for line in (path.read_text().splitlines() if path.is_file() else []):
        if not line.startswith("#"):
            break
        words += line.lstrip("#").split()
    text = " ".join(words)
    if len(text) > width:
        text = text[:width].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return text


def help_text(conf: Path) -> str:
    """`fedcluster --help`: what it is, every group's options and the presets, read from `conf`
    (so a new yaml is listed), and example commands. Hydra's own help: --hydra-help."""
    lines = ["fedcluster: runs clustered federated learning experiments from composable configs (every method of",
             "FedSoft, Fed-CAM and CLoVE and their baselines, listed below), and reproduces the papers' tables.",
             "", "Usage: fedcluster [group=option ...] [key=value ...]      one run",
             "       fedcluster -m key=a,b seed=0,1,2 ...              a sweep (one run per combination)",
             "       fedcluster estimate [the same arguments]           its FLOPs and hours here, before it runs",
             "", "Config groups (group=option):"]
    from ..config.plugins import group_options, load
    for group in GROUPS:
        lines.append(f"  {group:<10} {', '.join(group_options(group, conf))}")
    lines += ["", "Methods (algorithm=...), each as its yaml's opening comment says:"]
    lines += [f"  {name:<16} {_first_line(conf, 'algorithm', name)}" for name in group_options("algorithm", conf)]
    lines += ["", "Presets, each a paper table's sweep (+preset=...):"]
    lines += [f"  +preset={p}" for p in group_options("preset", conf)]
    plugins = load()
    if plugins:
        lines += ["", "Plugins (their options are listed above with fedcluster's own):"]
        lines += [f"  {p.name:<20} {p.origin}" + (f"; yaml in {p.conf}" if p.conf else "") for p in plugins]
    lines += ["", "Examples:",
              "  fedcluster algorithm=ifca dataset=fashion_mnist model=lenet rounds=20",
              "  fedcluster -m algorithm=fedsoft,ifca,fedem seed=0,1,2",
              "  fedcluster +preset=clove/images        then: fedcluster-report <the sweep directory>",
              "", "An option's settings with their defaults and allowed values: fedcluster show algorithm=clove;",
              "every key of a run's config: fedcluster --cfg job [overrides].", "Docs: README.md and the pages it links in docs/. Hydra's own options: --hydra-help."]
    return "\n".join(lines)


def _one_line_composition_errors(conf: Path) -> None:
    """Hydra's composition errors (wrong type, unknown key or option, an unparsable argument) as
    one line and exit 2, like every other bad input; HYDRA_FULL_ERROR=1 keeps Hydra's trace.
    Hydra routes every error through hydra._internal.utils.run_and_report; errors raised while a
    job runs (inside `_task`) are left to it."""
    import traceback
    import hydra._internal.utils as hydra_utils
    from ..config.composition import one_line
    original = getattr(hydra_utils.run_and_report, "__wrapped__", hydra_utils.run_and_report)

    def run_and_report(func):
        try:
            return func()
        except Exception as e:   # noqa: BLE001 -- reported in one line or handed back to Hydra
            in_job = any(frame.name in ("_task", "run_job") for frame in traceback.extract_tb(e.__traceback__))
            line = None if (in_job or os.environ.get("HYDRA_FULL_ERROR") == "1") else one_line(e, conf)
            if line is not None:
                Sweep.discard()   # a sweep stopped before its jobs ran leaves nothing
                _fail(line)

            def again(error=e):   # Hydra's own report of the same error
                raise error
            return original(again)

    run_and_report.__wrapped__ = original
    hydra_utils.run_and_report = run_and_report


def _unknown_flag(argv: List[str]) -> Optional[str]:
    """The first command-line flag Hydra does not know (`--rounds=3` for `rounds=3`), or None."""
    import contextlib
    import io
    from hydra._internal.utils import get_args_parser
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            _, unknown = get_args_parser().parse_known_args(argv)
    except SystemExit:   # a malformed Hydra flag: Hydra reports it itself
        return None
    return next((a for a in unknown if a.startswith("-")), None)


def main() -> None:
    signals.install()
    if sys.argv[1:2] == ["show"]:   # an option's settings, defaults and allowed values (show.py)
        from .show import main as show_main
        try:
            conf = config_dir()
        except ConfigError as e:
            _fail(str(e))
        sys.exit(show_main(sys.argv[2:], conf))
    if sys.argv[1:2] == ["estimate"]:   # what a run or sweep will compute and how long it takes here (cost/)
        from .estimate import main as estimate_main
        try:
            conf = config_dir()
        except ConfigError as e:
            _fail(str(e))
        sys.exit(estimate_main(sys.argv[2:], conf))
    flag = _unknown_flag(sys.argv[1:])
    if flag is not None:
        setting = flag.lstrip("-")
        _fail(f"{flag} is not an option of fedcluster; settings are key=value arguments"
              f"{f' ({setting})' if '=' in setting else ''}; fedcluster --help lists the options")
    if "--help" in sys.argv[1:] or "-h" in sys.argv[1:]:
        try:
            print(help_text(config_dir()), flush=True)
        except BrokenPipeError:   # `fedcluster --help | head`
            sys.stderr.close()
        except ConfigError as e:   # a plugin that cannot be loaded
            _fail(str(e))
        return
    try:
        register_schemas()
        register_resolvers()
        conf = config_dir()
        _one_line_composition_errors(conf)
        sys.argv[1:] = per_job(sys.argv[1:], GROUP_PACKAGES)   # a swept group's settings go to its jobs (swept_groups.py)
        hydra.main(config_path=str(conf), config_name="config", version_base="1.3")(_task)()
    except ConfigError as e:   # a plugin that cannot be loaded (plugins.py), before any config exists
        _fail(str(e))
    except ValueError as e:   # Hydra's check of its own flags (e.g. -m with --cfg), before any config exists
        if not str(e).startswith("Only one of"):
            raise
        _fail(f"{e} (got {' '.join(a for a in sys.argv[1:] if a.startswith('-'))})")
    except KeyboardInterrupt as e:   # before or between jobs (composing the config, launching)
        print(f"fedcluster: interrupted{signals.by_signal(e)} before a run started; nothing was written", file=sys.stderr)
        sys.exit(signals.exit_code(e))


if __name__ == "__main__":
    main()
