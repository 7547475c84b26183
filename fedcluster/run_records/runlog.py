"""The run's log: one line per evaluated round (round, key metric, seconds of local training)
into run.log in the run directory, appended across resumes; also to stderr when a progress bar was
asked for but stderr is not a terminal (a batch job's log gets lines, not one long run of carriage
returns)."""
import logging
import sys
from pathlib import Path

from ..errors import WriteFailed

LOG = logging.getLogger("fedcluster")


class RunLogFile(logging.FileHandler):
    """run.log; a line that cannot be written (disk full, read-only) stops the run with
    WriteFailed, like any other result file, instead of logging's multi-line report."""

    def handleError(self, record) -> None:
        import sys as _sys
        error = _sys.exc_info()[1]
        if isinstance(error, OSError):
            from .io import write_failure_reason
            raise WriteFailed(self.baseFilename, write_failure_reason(error)) from error
        super().handleError(record)

    def _open(self):
        """Appended without following a link: a run.log replaced by a symbolic link to a file elsewhere
        (claim refuses that too) is never written through."""
        from . import fsops
        return fsops.open_append(self.baseFilename, create=True, encoding=self.encoding or "utf-8",
                                 errors=self.errors)


def open_run_log(out: Path, to_stderr: bool) -> logging.Logger:
    handlers = [RunLogFile(out / "run.log", mode="a", encoding="utf-8")]
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
        try:
            h.close()
        except OSError:   # a fault while closing after the run stopped: already reported
            pass
