"""fedcluster: config-driven runner for clustered federated learning experiments.

`fedcluster.run(["algorithm=ifca", "rounds=5"])` runs one experiment as the `fedcluster` command
would; `fedcluster.load_runs("outputs")` reads every finished run below a folder into one DataFrame."""

__version__ = "0.1.0"


def run(overrides=(), output_dir=None):
    """See fedcluster.api.run."""
    from .api import run as _run
    return _run(overrides, output_dir)


def load_runs(path):
    """See fedcluster.api.load_runs."""
    from .api import load_runs as _load
    return _load(path)
