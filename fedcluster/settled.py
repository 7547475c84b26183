"""One run as it will train, put together once: what the round loop and the result writers read.

`runner._run_owned` builds it after every check has passed (the config validated, the directory ours, the
data, model, algorithm and trainer built, the engine and chunk size chosen, the record resumed or new);
`runner._write_run`, `runner.train_round` and `finished_run.write_results` read it instead of a dozen
positional arguments, so a new part of a run is one field here, not a parameter threaded through three calls.
`Reporting` is how this process shows the run (progress bar, loggers, the CLI's hook), which is no part of
what the run computes."""
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Optional


@dataclass
class SettledRun:
    """cfg: the run's config (config.yaml holds `requested`, its plain-data form); out: its directory;
    hw, fed, alg, trainer: the built hardware, the run view algorithms use (data, model, device), algorithm and local trainer;
    engine: the gradient formulation chosen ('batched', 'looped', 'grouped' or 'sequential'); chunk: rows trained at once (None: all);
    fingerprint: the config's identity; watch: the divergence check; record: what the rounds so far produced."""
    cfg: Any
    out: Path
    requested: dict
    hw: Any
    fed: Any
    alg: Any
    trainer: Any
    engine: str
    chunk: Optional[int]
    fingerprint: str
    watch: Any
    record: Any

    @property
    def seed(self) -> int:
        return self.cfg.seed


@dataclass
class Reporting:
    """How this process shows a run: `progress` (None: the config's), the trackers' loggers, `on_claimed(out)`
    (the CLI writes Hydra's .hydra/ files there) and when the process started on it (wall time)."""
    progress: Optional[bool]
    on_claimed: Optional[Callable[[Path], None]]
    loggers: List[Any]
    started: float
