"""fedcluster: config-driven runner for clustered federated learning experiments."""

__version__ = "0.1.0"
