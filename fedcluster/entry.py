"""The `fedcluster` command's first lines: stop signals (Ctrl-C, SIGTERM, SIGUSR1) are handled
before torch and Hydra are imported, so a stop while starting is one line, not a traceback."""
import sys


def main() -> None:
    from . import signals
    signals.install()
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt as e:
        print("fedcluster: interrupted while starting; nothing was written", file=sys.stderr)
        sys.exit(signals.exit_code(e))
    cli_main()


if __name__ == "__main__":
    main()
