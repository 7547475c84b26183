"""The `fedcluster` command's first lines: stop signals (Ctrl-C, SIGTERM, SIGUSR1) are handled
before torch and Hydra are imported (noted, then raised once the imports are done: signals.py),
so a stop while starting is one line, not a traceback or an abort inside torch's import."""
import sys


def main() -> None:
    from .. import signals
    signals.install()
    try:
        from .cli import main as cli_main
        signals.check()   # a stop noted while torch and Hydra were imported
    except KeyboardInterrupt as e:
        print("fedcluster: interrupted while starting; nothing was written", file=sys.stderr)
        sys.exit(signals.exit_code(e))
    cli_main()


if __name__ == "__main__":
    main()
