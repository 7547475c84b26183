"""Stop signals: SIGINT (Ctrl-C), SIGTERM and SIGUSR1 (what cluster schedulers such as SLURM send
before they kill a job) all stop a run the same way: the write in progress finishes, the run says
where it resumes from, and the process exits with 128 + the signal's number.

`install()` (the CLI does it first thing) makes each of them raise `Stopped` in the main thread,
except inside `deferred()` (io.py wraps every result write in it), where the signal is held and
raised when the write is complete, so no result file is ever left half-replaced by a stop.
A step under one of torch.func's transforms (vmap, grad) is held the same way (`held`): an
exception raised from a signal handler inside one leaves torch's transform stack corrupted
("dynamicLayerStack.empty() INTERNAL ASSERT FAILED" instead of the stop). A launcher's own
handlers in a job's process (submitit's requeue on SIGUSR2, which exits) are held too
(`hold_foreign`)."""
import functools
import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, List, Tuple

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGUSR1") if hasattr(signal, name))

_depth = 0   # nesting of deferred() blocks in progress in the main thread (where handlers run)
_pending: List[Tuple[Callable, int]] = []   # (handler, signal) received inside one, run when the outermost ends


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


def _stop(signum, frame=None) -> None:
    raise Stopped(signum)


def _handler(signum, frame) -> None:
    if _depth > 0:
        _pending.append((_stop, signum))
        return
    _stop(signum)


class _Held:
    """Another handler (a launcher's), run at once outside held blocks and at their end inside."""

    def __init__(self, original: Callable):
        self.original = original

    def __call__(self, signum, frame) -> None:
        if _depth > 0:
            _pending.append((self.original, signum))
            return
        self.original(signum, frame)


def install() -> None:
    """Handle every stop signal, except one the process was started with ignored (`nohup`, a
    background job of a script): that stays ignored, as Python leaves it."""
    for s in STOP_SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, _handler)


def hold_foreign() -> None:
    """Hold the Python handlers someone else installed (a launcher in a job's process) like ours."""
    for name in ("SIGINT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGCONT"):
        s = getattr(signal, name, None)
        if s is None:
            continue
        h = signal.getsignal(s)
        if callable(h) and h is not _handler and not isinstance(h, _Held):
            signal.signal(s, _Held(h))


@contextmanager
def deferred() -> Iterator[None]:
    """Hold stop signals until the block is done (a file write, a transformed step), then run the
    held handlers (ours raises `Stopped`). Only the main thread counts: handlers run only there."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _pending:
            held_now = list(_pending)
            _pending.clear()
            for handler, signum in held_now:
                handler(signum, None)


def held(fn: Callable) -> Callable:
    """`fn` (a torch.func transform) called with stop signals held until it returns."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with deferred():
            return fn(*args, **kwargs)
    return call
