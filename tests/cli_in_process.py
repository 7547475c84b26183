"""`fedcluster <args>` run inside the test's process: the command's own `main()` (fedcluster/command/cli.py), with
sys.argv, the working directory, stdout and stderr as a console call has them, and its exit status; for tests of
what the command says and leaves when it refuses, where a new interpreter (2-3 s of torch and Hydra imports a call)
tests nothing more. What only a new process shows (the console script, the entry's signal handling and
quick exit, a run's figures and trackers) stays with the subprocess tests (test_cli.py, test_run_safety.py,
test_startup_imports.py). Every piece of process state the command touches is put back as it was, so a call
depends on no test before it: Hydra's global state, the signal handlers and noted signals, the sweep record,
sys.argv and the working directory."""
import contextlib
import io
import os
import signal
import subprocess
import sys


def fedcluster_in_process(args, cwd) -> subprocess.CompletedProcess:
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.singleton import Singleton
    from fedcluster import signals
    from fedcluster.command import cli, sweep
    handlers = {s: signal.getsignal(s) for s in signals.STOP_SIGNALS}
    saved_argv, saved_cwd = list(sys.argv), os.getcwd()
    saved_singletons = Singleton.get_state()
    saved_sweep = (sweep.Sweep.dir, list(sweep.Sweep.outcomes))
    out, err, code = io.StringIO(), io.StringIO(), 0
    try:
        os.chdir(cwd)
        sys.argv = ["fedcluster", *map(str, args)]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, (int, type(None))):
                    print(e.code, file=sys.stderr)
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        GlobalHydra.instance().clear()
        Singleton.set_state(saved_singletons)
        sweep.Sweep.dir, sweep.Sweep.outcomes = saved_sweep
        signals._pending.clear()
        for s, h in handlers.items():
            signal.signal(s, h)
    return subprocess.CompletedProcess(["fedcluster", *args], code, out.getvalue(), err.getvalue())
