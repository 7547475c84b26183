"""Errors a user can act on: each message names the bad value and what is allowed."""


class ConfigError(ValueError):
    """A configuration value is invalid or inconsistent with another one."""


class DataNotFoundError(FileNotFoundError):
    """A data set is not on this machine; the message says how to get it."""


class NonFiniteLossError(RuntimeError):
    """Training produced NaN/inf; the message names the round and the client."""
