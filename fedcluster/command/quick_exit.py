"""The commands' processes end without the interpreter's teardown.

Once a command's work is done and every exit hook has run (threads' shutdown hooks: worker
pools stopped; atexit: logging's handlers closed, multiprocessing's children joined, weakref
finalizers such as temporary folders), CPython still clears every module and frees every object
one by one. With torch imported (and torch._dynamo, which torch.func and torch.optim load) that
takes about a second: a fifth of a short command (a refused override, `fedcluster show`, a report)
and of each CLI call in the test suite. Nothing fedcluster writes waits on it: result files are
written, flushed and closed atomically (run_records/io.py) before the work returns.

`arm()` registers the ending as the first atexit hook, so it runs after all the others (atexit
calls hooks last-registered first); it is called by the console scripts' entry functions
(entry.py) before anything that registers a hook is imported. The code is the one the work
exited with (`exiting`); a process that ends any other way (an uncaught exception, a signal)
has not called `exiting` and tears down as usual."""
import atexit
import os
import sys
from typing import Optional

_code: Optional[int] = None


def arm() -> None:
    atexit.register(_end)


def exiting(code) -> None:
    """Note the exit code the interpreter gives `sys.exit(code)`: None -> 0, an int as is, anything
    else (a message, already printed by the interpreter) -> 1."""
    global _code
    _code = 0 if code is None else code if isinstance(code, int) else 1


def _end() -> None:
    if _code is None:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a reader that has gone (`| head`), or a stream closed on purpose
            pass
    os._exit(_code)
