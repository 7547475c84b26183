"""Where a run's numbers go while it runs (config group `logger`, lightning-hydra-template's
pattern: `logger=csv`, `logger=tensorboard`, `logger=[tensorboard,mlflow]`). Each chosen logger
sits under its own key (`logger.csv`, `logger.tensorboard`, ...). The result files a run leaves
(metrics.csv, summary.json, ...) do not depend on the logger; `csv` makes metrics.csv grow every
evaluated round, and every other option includes it."""
from .base import Logger, make_loggers, round_scalars
from .csv import CSVLogger
from .mlflow import MLflowLogger
from .tensorboard import TensorBoardLogger
from .wandb import WandbLogger

__all__ = ["Logger", "make_loggers", "round_scalars", "CSVLogger", "TensorBoardLogger", "MLflowLogger",
           "WandbLogger"]
