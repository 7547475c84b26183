"""What a run accumulates round by round (metric rows, assignments, cluster sizes, the clients'
persistent optimizer state), and its checkpoint: everything needed to resume after round t."""
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import pandas as pd
import torch

from .errors import ConfigError
from .io import save_torch, write_csv

CHECKPOINT = "checkpoint.pt"
METRICS_FILE = "metrics.csv"
ID_COLUMNS = ("run_id", "algorithm", "dataset", "partition", "seed")   # which run a row belongs to
ROW_COLUMNS = ("round", "model", "model_index", "eval_set", "metric", "value")


def run_ids(cfg, fingerprint: str) -> dict:
    """The identifiers every metrics.csv row carries, so tables from many runs concatenate without
    a join: the config's fingerprint (same config, same id) and the names a reader groups by."""
    return {"run_id": fingerprint, "algorithm": cfg.algorithm.name, "dataset": cfg.dataset.name,
            "partition": cfg.partition.name, "seed": int(cfg.seed)}


def metrics_table(rows: List[dict], ids: dict) -> pd.DataFrame:
    """metrics.csv's frame: the identifier columns, then round, model, model_index, eval_set,
    metric, value (a fixed order, so rows appended round by round line up)."""
    frame = pd.DataFrame(list(rows), columns=list(ROW_COLUMNS))
    for i, (k, v) in enumerate(ids.items()):
        frame.insert(i, k, v)
    return frame


@dataclass
class RunRecord:
    metrics: List[dict] = field(default_factory=list)
    assignments: List[dict] = field(default_factory=list)
    sizes: List[dict] = field(default_factory=list)
    client_state: Optional[dict] = None   # persistent optimizer state of all clients, when the algorithm keeps it
    next_round: int = 0
    elapsed: float = 0.0                  # seconds spent before the last resume
    train_seconds: List[float] = field(default_factory=list)   # per round, local training only (not checkpointed)

    @classmethod
    def resume(cls, out: Path, fingerprint: str, alg, watch, device) -> "RunRecord":
        """A fresh record, or the one checkpointed in `out` (the algorithm's and the divergence
        watch's state are restored too). A checkpoint of another config is refused."""
        path = out / CHECKPOINT
        if not path.exists():
            return cls()
        ckpt = torch.load(path, map_location=device, weights_only=False)
        if ckpt["fingerprint"] != fingerprint:
            raise ConfigError(f"{path} belongs to a different configuration; use a new hydra.run.dir "
                              "or overwrite=true to start over")
        alg.load_state_dict(ckpt["algorithm"])
        watch.load_state_dict(ckpt.get("divergence", {}))
        return cls(ckpt["metrics"], ckpt["assignments"], ckpt["cluster_sizes"], ckpt["client_state"],
                   ckpt["next_round"], ckpt["elapsed"])

    def save(self, out: Path, fingerprint: str, alg, watch, next_round: int, elapsed: float, ids: dict) -> None:
        """Checkpoint after round next_round - 1, and the metrics so far."""
        save_torch(out / CHECKPOINT, {"fingerprint": fingerprint, "next_round": next_round,
                                      "algorithm": alg.state_dict(), "client_state": self.client_state,
                                      "metrics": self.metrics, "assignments": self.assignments,
                                      "cluster_sizes": self.sizes, "divergence": watch.state_dict(),
                                      "elapsed": elapsed})
        write_csv(out / METRICS_FILE, metrics_table(self.metrics, ids))

    @staticmethod
    def drop_checkpoint(out: Path) -> None:
        if (out / CHECKPOINT).exists():
            (out / CHECKPOINT).unlink()
