"""fedcluster: config-driven runner for clustered federated learning experiments.

`fedcluster.run(["algorithm=ifca", "rounds=5"])` runs one experiment as the `fedcluster` command
would; `fedcluster.load_runs("outputs", final=True)` reads every finished run below a folder into
one DataFrame (its last round's values). Both live in fedcluster.command.api and are imported on first use,
so `import fedcluster` stays light (the CLI installs its signal handlers before torch loads)."""

from .threads import apply_process_defaults

apply_process_defaults()   # OpenMP threads sleep between ops (threads.py): before torch loads

__version__ = "0.1.0"
__all__ = ["run", "load_runs", "RunResult"]


def __getattr__(name):
    if name in __all__:
        from .command import api
        return getattr(api, name)
    raise AttributeError(f"module 'fedcluster' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
