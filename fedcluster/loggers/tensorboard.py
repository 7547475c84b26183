"""TensorBoard event files in <run dir>/tensorboard: one scalar per (model kind, eval set,
metric) and round (the mean over clients or clusters), the local training time, and the config
as text. Steps are rounds counted from 1. A resumed run purges the steps after its checkpoint."""
from .base import Logger, flat_params, require, round_scalars


class TensorBoardLogger(Logger):
    def __init__(self, subdir: str = "tensorboard"):
        require("tensorboard", "tensorboard", "tensorboard")
        self.subdir = subdir
        self.writer = None

    def open(self, out, config, ids, rows, first_round):
        from torch.utils.tensorboard import SummaryWriter
        self.writer = SummaryWriter(log_dir=str(out / self.subdir), purge_step=first_round + 1 if first_round else None)
        if not first_round:
            table = "\n".join(f"| {k} | {v} |" for k, v in flat_params(config).items())
            self.writer.add_text("config", "| key | value |\n|---|---|\n" + table)

    def log_round(self, t, rows, train_seconds):
        for r, scalars in round_scalars(rows).items():
            for name, value in scalars.items():
                self.writer.add_scalar(name, value, r + 1)
        self.writer.add_scalar("time/local_training_s", train_seconds, t + 1)
        self.writer.flush()

    def close(self, summary):
        if self.writer is not None:
            self.writer.close()
