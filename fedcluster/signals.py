"""Stop signals: SIGINT (Ctrl-C), SIGTERM and SIGUSR1 (what cluster schedulers such as SLURM send
before they kill a job) all stop a run the same way: the write in progress finishes, the run says
where it resumes from, and the process exits with 128 + the signal's number.

`install()` (the CLI does it first thing) makes each of them raise `Stopped` in the main thread,
except inside `deferred()` (io.py wraps every result write in it), where the signal is held and
raised when the write is complete, so no result file is ever left half-replaced by a stop."""
import signal
from contextlib import contextmanager
from typing import Iterator, Optional

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGUSR1") if hasattr(signal, name))

_depth = 0                      # nesting of deferred() blocks in progress
_pending: Optional[int] = None  # a signal received inside one, raised when the outermost ends


class Stopped(KeyboardInterrupt):
    """A stop signal arrived; `signum` says which (a KeyboardInterrupt, so code that handles Ctrl-C
    handles every stop signal the same way)."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal_name(signum))


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def by_signal(error: BaseException) -> str:
    """' by SIGTERM' for a stop other than Ctrl-C (empty for Ctrl-C), for the one-line messages."""
    signum = getattr(error, "signum", signal.SIGINT)
    return "" if signum == signal.SIGINT else f" by {signal_name(signum)}"


def exit_code(error: BaseException) -> int:
    """128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM, 138 for SIGUSR1)."""
    return 128 + getattr(error, "signum", signal.SIGINT)


def _handler(signum, frame) -> None:
    global _pending
    if _depth > 0:
        _pending = signum
        return
    raise Stopped(signum)


def install() -> None:
    """Handle every stop signal, except one the process was started with ignored (`nohup`, a
    background job of a script): that stays ignored, as Python leaves it."""
    for s in STOP_SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, _handler)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold stop signals until the block is done (a file write), then raise the held one."""
    global _depth, _pending
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _pending is not None:
            signum, _pending = _pending, None
            raise Stopped(signum)
