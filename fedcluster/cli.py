"""`fedcluster` command: a thin Hydra shell over fedcluster.runner.run.

What this shell adds to `run`: the run directory is checked before Hydra creates it
(`RunDirGuard.on_run_start`, so a file or an unwritable place is a one-line error and a bad
value is refused before anything exists), Hydra writes nothing itself (`output_subdir: null`,
no job log file): its `.hydra/` files are written by us once the directory is ours, and every
user error, Ctrl-C included, is one line on stderr."""
import os
import secrets
import sys
from pathlib import Path
from typing import List

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from .config import register_schemas
from .errors import ConfigError, DataNotFoundError, NonFiniteLossError, RunInterrupted

_FAILED: List[str] = []          # multirun: jobs that ended with a user error (the sweep goes on)
_UNIQUE = secrets.token_hex(2)   # this process's run-directory suffix: two starts in one second never share one


def _unique() -> str:
    return _UNIQUE


def _subdir(override_dirname: str) -> str:
    """A sweep job's directory: its overrides (the keys that change results), or `default`."""
    return override_dirname or "default"


def register_resolvers() -> None:
    for name, fn in (("fc_unique", _unique), ("fc_subdir", _subdir)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


register_resolvers()   # also in launcher worker processes, which import this module to run _task


def config_dir() -> Path:
    """The config folder: $FEDCLUSTER_CONF; else conf/ shipped inside the installed package (a wheel
    or `pip install .`, setup.py copies it there); else conf/ at the repository top level (an
    editable install or a checkout)."""
    env = os.environ.get("FEDCLUSTER_CONF")
    here = Path(__file__).resolve().parent
    candidates = [Path(env)] if env else [here / "conf", here.parent / "conf"]
    for path in candidates:
        if (path / "config.yaml").exists():
            return path
    sys.exit(f"fedcluster: no config.yaml in {' or '.join(map(str, candidates))}; reinstall fedcluster "
             "or set FEDCLUSTER_CONF to the conf/ folder")


def user_error(e: BaseException):
    """The ConfigError/DataNotFoundError/NonFiniteLossError behind e (hydra wraps errors
    raised while instantiating), or None."""
    while e is not None:
        if isinstance(e, (ConfigError, DataNotFoundError, NonFiniteLossError)):
            return e
        e = e.__cause__ or e.__context__
    return None


def _fail(message: str, code: int = 2):
    print(f"fedcluster: error: {message}", file=sys.stderr)
    sys.exit(code)


class RunDirGuard(Callback):
    """Checks that must come before Hydra creates the output directory."""

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        from .rundir import check_place
        from .validate import validate
        try:
            validate(config)   # validate() leaves out the hydra node
            check_place(config.hydra.run.dir)
        except ConfigError as e:
            _fail(str(e))

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        from .rundir import check_place
        try:
            check_place(config.hydra.sweep.dir)
        except ConfigError as e:
            _fail(str(e))

    def on_multirun_end(self, config: DictConfig, **kwargs) -> None:
        if _FAILED:
            _fail(f"{len(_FAILED)} job(s) of the sweep failed: " + "; ".join(_FAILED))


def _write_hydra_files(out: Path) -> None:
    """What Hydra's output_subdir would hold, written only once the directory is ours."""
    from .io import write_text
    hc = HydraConfig.get()
    write_text(out / ".hydra" / "overrides.yaml", OmegaConf.to_yaml(OmegaConf.create(list(hc.overrides.task))))
    write_text(out / ".hydra" / "hydra.yaml", OmegaConf.to_yaml(OmegaConf.create({"hydra": hc})))


def _remove_if_empty(out) -> None:
    """A refused start leaves no trace: Hydra created the directory before the checks ran."""
    try:
        Path(out).rmdir()   # only succeeds on an empty directory
    except OSError:
        pass


def objective_value(cfg: DictConfig, summary: dict):
    """The sweep's objective: a mean over clients of a validation metric (summary["local"]), so that
    hyperparameter search never reads test data; None when the run has no validation split."""
    name = cfg.get("objective") or f"local_val_{summary.get('key_metric', 'accuracy')}"
    value = (summary.get("local") or {}).get(name)
    return None if value is None else float(value)


def _task(cfg: DictConfig):
    from .runner import run
    hc = HydraConfig.get()
    out = hc.runtime.output_dir
    multirun = hc.mode == RunMode.MULTIRUN
    try:
        summary = run(cfg, out, on_claimed=_write_hydra_files)
    except RunInterrupted as e:
        resume = (f"resumes from the checkpoint after round {e.checkpoint_round}" if e.checkpoint_round
                  else f"starts it over (no checkpoint yet; checkpoint_every={cfg.checkpoint_every})")
        print(f"fedcluster: interrupted after {e.rounds_done} of {e.rounds} rounds; the same command with "
              f"hydra.run.dir={out} {resume}", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("fedcluster: interrupted before training started; nothing to resume", file=sys.stderr)
        sys.exit(130)
    except Exception as e:   # noqa: BLE001 -- user errors become one line, the rest propagate
        cause = user_error(e)
        if cause is None:
            raise
        _remove_if_empty(out)
        if multirun:   # one bad job (e.g. a diverging learning rate of a grid) does not stop the sweep
            print(f"fedcluster: error: {out}: {cause}", file=sys.stderr)
            _FAILED.append(f"{Path(out).name}: {str(cause).splitlines()[0][:120]}")
            return None
        _fail(str(cause))
    if summary.get("already_complete"):
        status = summary.get("status", "complete")
        if status != "complete":
            message = f"{out} holds this config's run, which ended: {summary.get('error', status)}"
            if multirun:
                print(f"fedcluster: error: {message}", file=sys.stderr)
                _FAILED.append(f"{Path(out).name}: {status}")
                return None
            _fail(message + " (overwrite=true runs it again)")
        print(f"fedcluster: {out} already holds this config's finished run; nothing redone "
              "(overwrite=true runs it again)", file=sys.stderr)
        return objective_value(cfg, summary)
    print(f"fedcluster: wrote {out} ({summary['wall_time_s']:.1f} s)", file=sys.stderr)
    return objective_value(cfg, summary)


GROUPS = ("dataset", "partition", "model", "algorithm", "hardware")


def help_text(conf: Path) -> str:
    """`fedcluster --help`: what it is, every group's options and the presets, read from `conf`
    (so a new yaml is listed), and example commands. Hydra's own help: --hydra-help."""
    lines = ["fedcluster: runs clustered federated learning experiments (FedSoft, Fed-CAM, CLoVE, IFCA, FeSEM, CFL,",
             "FedEM, FedAvg, FedProx, ensembles, local-only) from composable configs, and reproduces the papers' tables.",
             "", "Usage: fedcluster [group=option ...] [key=value ...]      one run",
             "       fedcluster -m key=a,b seed=0,1,2 ...              a sweep (one run per combination)",
             "", "Config groups (group=option):"]
    for group in GROUPS:
        options = sorted(f.stem for f in (conf / group).glob("*.yaml"))
        lines.append(f"  {group:<10} {', '.join(options)}")
    presets = sorted(str(f.relative_to(conf / "preset"))[:-5] for f in (conf / "preset").rglob("*.yaml"))
    lines += ["", "Presets, each a paper table's sweep (+preset=...):"]
    lines += [f"  +preset={p}" for p in presets]
    lines += ["", "Examples:",
              "  fedcluster algorithm=ifca dataset=fashion_mnist model=lenet rounds=20",
              "  fedcluster -m algorithm=fedsoft,ifca,fedem seed=0,1,2",
              "  fedcluster +preset=clove/images        then: fedcluster-report <the sweep directory>",
              "", "Every key and its default: fedcluster --cfg job; one group option's settings: fedcluster "
              "--cfg job algorithm=clove.", "Docs: README.md, docs/architecture.md. Hydra's own options: --hydra-help."]
    return "\n".join(lines)


def main() -> None:
    if "--help" in sys.argv[1:] or "-h" in sys.argv[1:]:
        try:
            print(help_text(config_dir()), flush=True)
        except BrokenPipeError:   # `fedcluster --help | head`
            sys.stderr.close()
        return
    register_schemas()
    register_resolvers()
    try:
        hydra.main(config_path=str(config_dir()), config_name="config", version_base="1.3")(_task)()
    except KeyboardInterrupt:   # before or between jobs (composing the config, launching)
        print("fedcluster: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
