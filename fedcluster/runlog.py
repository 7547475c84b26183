"""The run's log: one line per evaluated round (round, key metric, seconds of local training)
into run.log in the run directory, appended across resumes; also to stderr when a progress bar was
asked for but stderr is not a terminal (a batch job's log gets lines, not one long run of carriage
returns)."""
import logging
import sys
from pathlib import Path

LOG = logging.getLogger("fedcluster")


def open_run_log(out: Path, to_stderr: bool) -> logging.Logger:
    handlers = [logging.FileHandler(out / "run.log", mode="a", encoding="utf-8")]
    if to_stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    for h in handlers:
        h.setFormatter(logging.Formatter("%(asctime)s fedcluster: %(message)s", "%Y-%m-%d %H:%M:%S"))
        LOG.addHandler(h)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False
    return LOG


def close_run_log(log: logging.Logger) -> None:
    for h in list(log.handlers):
        log.removeHandler(h)
        h.close()
