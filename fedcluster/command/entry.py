"""The console scripts' first lines.

`fedcluster`: stop signals (Ctrl-C, SIGTERM, SIGUSR1) are handled before torch and Hydra are
imported (noted, then raised once the imports are done: signals.py), so a stop while starting is
one line, not a traceback or an abort inside torch's import. Both commands end their process
without the interpreter's teardown once their work and its exit hooks are done (quick_exit.py)."""
import sys

from .. import signals

if sys.argv and sys.argv[0].endswith(("fedcluster", "__main__.py")):
    # the command's first statement after the package's own two lines: from here a stop signal only notes
    # itself (raised at the next safe point), so Ctrl-C while starting is one line, not a traceback
    signals.install()

from . import quick_exit  # noqa: E402


def _ended(work) -> None:
    """Run `work` (the command), noting the code it exits with for quick_exit."""
    quick_exit.arm()   # first, before any import registers an exit hook of its own
    try:
        work()
    except SystemExit as e:
        quick_exit.exiting(e.code)
        raise
    quick_exit.exiting(0)


def _fedcluster() -> None:
    signals.install()   # again: idempotent (python -m fedcluster and other callers of main())
    try:
        from .cli import main as cli_main
        signals.check()   # a stop noted while torch and Hydra were imported
    except KeyboardInterrupt as e:
        print("fedcluster: interrupted while starting; nothing was written", file=sys.stderr)
        sys.exit(signals.exit_code(e))
    cli_main()


def _report() -> None:
    from ..report.command import main as report_main
    report_main()


def main() -> None:
    """The `fedcluster` command (and `python -m fedcluster`)."""
    _ended(_fedcluster)


def report() -> None:
    """The `fedcluster-report` command."""
    _ended(_report)


if __name__ == "__main__":
    main()
