"""Stop signals: SIGINT (Ctrl-C), SIGTERM and SIGUSR1 (what cluster schedulers such as SLURM send
before they kill a job) all stop a run the same way: the step or write in progress finishes, the
run says where it resumes from, and the process exits with 128 + the signal's number.

A stop is never raised where the signal lands. An exception raised from a signal handler at an
arbitrary bytecode breaks the code it lands in: inside torch's import a pybind11 callback
aborts the process; inside a torch.func transform torch's transform stack is left corrupted
("dynamicLayerStack.empty() INTERNAL ASSERT FAILED"); inside OmegaConf or scikit-learn their
half-updated state gives an AttributeError or a RecursionError instead of the stop. So
`install()` (the `fedcluster` command does it first thing) makes each stop signal only note
itself, and `check()` raises it as `Stopped` at safe points: after the imports, before a run
starts, at every round and every local training step, and at the end of every result write
(`deferred()`, which io.py wraps around each, holds the stop until the write is complete).
A second stop signal while one waits outside a write stops at once (a way out of a step that
never ends). A launcher's own handlers in a job's process (submitit's requeue on SIGUSR2, which
exits) wait for the next safe point the same way (`hold_foreign`)."""
import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, List, Tuple

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGUSR1") if hasattr(signal, name))

_depth = 0   # nesting of deferred() blocks in progress in the main thread (where handlers run)
_pending: List[Tuple[Callable, int]] = []   # (handler, signal) noted, run at the next safe point


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
    if _depth == 0 and any(h is _stop for h, _ in _pending):   # the second stop: at once
        _pending.clear()
        _stop(signum)
    _pending.append((_stop, signum))


class _Held:
    """Another handler (a launcher's), run at the next safe point instead of where it lands."""

    def __init__(self, original: Callable):
        self.original = original

    def __call__(self, signum, frame) -> None:
        _pending.append((self.original, signum))


def install() -> None:
    """Handle every stop signal, except one the process was started with ignored (`nohup`, a
    background job of a script): that stays ignored, as Python leaves it."""
    for s in STOP_SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, _handler)


def hold_foreign() -> None:
    """Hold the Python handlers someone else installed (a launcher, in a job's process) like ours."""
    for name in ("SIGINT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGCONT"):
        s = getattr(signal, name, None)
        if s is None:
            continue
        h = signal.getsignal(s)
        if callable(h) and h is not _handler and not isinstance(h, _Held):
            signal.signal(s, _Held(h))


def worker_should_stop() -> bool:
    """In a worker thread (where `check()` does nothing): a stop signal is noted and waits for the
    main thread's next safe point, so the worker ends its piece of work now and the main thread
    raises the stop once the workers are back."""
    return threading.current_thread() is not threading.main_thread() and any(h is _stop for h, _ in _pending)


def check() -> None:
    """A safe point: run the handlers noted since the last one (ours raises `Stopped`). Only in
    the main thread (where handlers run) and outside a write."""
    if not _pending or _depth > 0 or threading.current_thread() is not threading.main_thread():
        return
    noted = list(_pending)
    _pending.clear()
    for handler, signum in noted:
        handler(signum, None)


@contextmanager
def deferred() -> Iterator[None]:
    """A write: every stop signal (a second one too) waits until the block is done, then `check()`."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        check()
