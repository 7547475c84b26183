"""The jobs a command line runs, without running them: one override list per job, as Hydra's sweeper would
launch them (a plain run: its own overrides). A sweep is `-m`/`--multirun` or a preset that sets
`hydra.mode: MULTIRUN`; its jobs are the product of `hydra.sweeper.params` and the command line's sweeps, or a
rows sweeper's rows at each point of it (command/rows_sweeper.py's `row_jobs`, the function the sweeper itself
calls)."""
from pathlib import Path
from typing import List, Tuple


def job_overrides(arguments: List[str], conf: Path) -> Tuple[bool, List[List[str]]]:
    """(whether it is a sweep, each job's overrides)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf
    from .rows_sweeper import row_jobs
    from .swept_groups import per_job
    from ..config.store import GROUP_PACKAGES, compose_config
    flags = {"-m", "--multirun"}
    overrides = per_job([a for a in arguments if a not in flags], GROUP_PACKAGES)
    parser = OverridesParser.create()
    plain = [o for o in overrides if not parser.parse_overrides([o])[0].is_sweep_override()]
    hydra = compose_config(plain, conf, with_hydra=True).hydra
    sweep = bool(flags & set(arguments)) or str(hydra.mode) == "RunMode.MULTIRUN" or str(hydra.mode) == "MULTIRUN"
    if not sweep:
        return False, [overrides]
    sweeper = OmegaConf.to_container(hydra.sweeper, resolve=False)
    params = [f"{k}={v}" for k, v in (sweeper.get("params") or {}).items()]
    rows = [parser.parse_overrides([str(o) for o in row]) for row in (sweeper.get("rows") or [])]
    grid = parser.parse_overrides(params + overrides)
    on_command_line = [o.get_key_element() for o in parser.parse_overrides(overrides)]
    return True, row_jobs(grid, rows, on_command_line)
