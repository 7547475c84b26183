"""Errors a user can act on: each message names the bad value and what is allowed."""


class ConfigError(ValueError):
    """A configuration value is invalid or inconsistent with another one."""


class DataNotFoundError(FileNotFoundError):
    """A data set is not on this machine; the message says how to get it."""


class NonFiniteLossError(RuntimeError):
    """Training produced NaN/inf; the message names the round and the client."""


class RunDirectoryError(ConfigError):
    """The output directory cannot be used for this run (another config's, locked, unwritable):
    a ConfigError, since the fix is a different hydra.run.dir."""


class RunInterrupted(Exception):
    """Ctrl-C during a run: how far it got and where it can resume from."""

    def __init__(self, output_dir, rounds_done: int, rounds: int, checkpoint_round: int):
        self.output_dir, self.rounds_done, self.rounds, self.checkpoint_round = output_dir, rounds_done, rounds, checkpoint_round
        super().__init__(f"interrupted after {rounds_done} of {rounds} rounds")
