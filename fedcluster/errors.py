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
    """Ctrl-C (or SIGTERM/SIGUSR1: `signum`) during a run: how far it got and where it can resume from."""

    def __init__(self, output_dir, rounds_done: int, rounds: int, checkpoint_round: int, signum: int = 2):
        self.output_dir, self.rounds_done, self.rounds, self.checkpoint_round = output_dir, rounds_done, rounds, checkpoint_round
        self.signum = signum
        super().__init__(f"interrupted after {rounds_done} of {rounds} rounds")


class RunFault(Exception):
    """The run stopped on a fault of the machine (a result file could not be written): the
    message names the file and the reason, and where the same command resumes from."""


class WriteFailed(OSError):
    """A result file could not be written (disk full, read-only, no permission); the file's old
    version is intact."""

    def __init__(self, path, reason: str):
        self.path, self.reason = path, reason
        super().__init__(f"cannot write {path} ({reason})")

    def __str__(self) -> str:
        return f"cannot write {self.path} ({self.reason})"


class DataFileError(ConfigError):
    """A data file exists but cannot be read (truncated, not gzip, wrong format): the message
    names the file, what is wrong with it and how to replace it."""
