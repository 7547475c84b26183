"""What a run accumulates round by round (metric rows, assignments, cluster sizes, the clients'
persistent optimizer state), and its checkpoint: everything needed to resume after round t.

The last two checkpoints are kept (checkpoint.pt and checkpoint.prev.pt), each sealed with a
checksum and the config fingerprint (integrity.py). A damaged newest one is set aside as
checkpoint.damaged.pt and the run resumes from the previous one, saying so in one line; with
no good checkpoint left the resume is a one-line error saying what to do."""
import io
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import torch

from ..models.stacked import on_device, put_rows, take_at
from ..errors import ConfigError
from .integrity import DamagedFile, pack_checkpoint, read_checkpoint
from . import fsops
from .io import torch_bytes, write_bytes, write_csv

if TYPE_CHECKING:   # only a type here: the CLI's start-up (and its refusals) skip pandas
    import pandas as pd

CHECKPOINT = "checkpoint.pt"
PREVIOUS_CHECKPOINT = "checkpoint.prev.pt"
DAMAGED_CHECKPOINT = "checkpoint.damaged.pt"
METRICS_FILE = "metrics.csv"
ID_COLUMNS = ("run_id", "algorithm", "dataset", "partition", "seed")   # which run a row belongs to
ROW_COLUMNS = ("round", "model", "model_index", "eval_set", "metric", "value")


def run_ids(cfg, fingerprint: str) -> dict:
    """The identifiers every metrics.csv row carries, so tables from many runs concatenate without
    a join: the config's fingerprint (same config, same id) and the names a reader groups by."""
    return {"run_id": fingerprint, "algorithm": cfg.algorithm.name, "dataset": cfg.dataset.name,
            "partition": cfg.partition.name, "seed": int(cfg.seed)}


def metrics_table(rows: List[dict], ids: dict) -> "pd.DataFrame":
    """metrics.csv's frame: the identifier columns, then round, model, model_index, eval_set,
    metric, value (a fixed order, so rows appended round by round line up)."""
    import pandas as pd
    frame = pd.DataFrame(list(rows), columns=list(ROW_COLUMNS))
    for i, (k, v) in enumerate(ids.items()):
        frame.insert(i, k, v)
    return frame


@dataclass
class RunRecord:
    metrics: List[dict] = field(default_factory=list)
    assignments: List[dict] = field(default_factory=list)
    sizes: List[dict] = field(default_factory=list)
    participation: List[dict] = field(default_factory=list)   # {round, client}: who trained, where a method samples
    communication: List[dict] = field(default_factory=list)   # {round, direction, what, clients, bytes} (wire.py)
    client_state: Optional[dict] = None   # persistent optimizer state of all clients, when the algorithm keeps it
    next_round: int = 0
    elapsed: float = 0.0                  # seconds spent before the last resume
    train_seconds: List[float] = field(default_factory=list)   # per round, local training only (not checkpointed)

    def note_participation(self, t: int, plan, alg) -> None:
        """The clients that train in round t, where the method draws them (`client_fraction` < 1 or a
        `client_dropout`): participation.csv lets a reader check the sample and the dropouts."""
        if getattr(alg, "client_fraction", 1.0) < 1 or getattr(alg, "client_dropout", 0.0) > 0:
            self.participation += [{"round": t, "client": int(c)} for c in torch.unique(plan.clients).tolist()]

    def note_messages(self, t: int, messages) -> None:
        """What crossed the wire in round t (Algorithm.messages): communication.csv's rows."""
        self.communication += [{"round": t, "direction": m.direction, "what": m.what, "clients": m.clients,
                                "bytes": m.bytes} for m in messages]

    def client_rows(self, plan, alg, trainer, fed, rows: slice = slice(None)) -> Optional[dict]:
        """The optimizer state of the plan's clients (its rows `rows`) where the algorithm keeps
        each client's across rounds (the plan's `keep_client_state`; created at the first use), else None
        (the engine then starts every job from fresh state)."""
        if not plan.keep_client_state:
            return None
        if self.client_state is None:
            self.client_state = trainer.init_state(alg.local_models(fed))
        return on_device(take_at(self.client_state, plan.clients[rows]), fed.device)   # kept where the models are

    def state_of(self, plan, alg, trainer, fed):
        """`client_rows` of a plan's chunk of rows, for engine/clients.client_chunks (None: fresh state)."""
        if not plan.keep_client_state:
            return None
        return lambda rows: self.client_rows(plan, alg, trainer, fed, rows)

    def keep_client_rows(self, plan, result, rows: slice = slice(None)) -> None:
        """Store the trained rows' (rows `rows` of the plan) optimizer state back (plans that keep client state)."""
        if plan.keep_client_state:
            put_rows(self.client_state, plan.clients[rows], result.opt_state)

    @classmethod
    def resume(cls, out: Path, fingerprint: str, alg, watch, device, accepted=None) -> "RunRecord":
        """A fresh record, or the one checkpointed in `out` (the algorithm's and the divergence
        watch's state are restored too). A checkpoint of another config is refused."""
        ckpt = load_checkpoint(out, fingerprint, device, accepted)   # accepted: identity.accepted_fingerprints
        if ckpt is None:
            return cls()
        alg.load_state_dict(ckpt["algorithm"])
        watch.load_state_dict(ckpt.get("divergence", {}))
        return cls(ckpt["metrics"], ckpt["assignments"], ckpt["cluster_sizes"], ckpt.get("participation", []),
                   ckpt.get("communication", []), ckpt["client_state"], ckpt["next_round"], ckpt["elapsed"])

    def save(self, out: Path, fingerprint: str, alg, watch, next_round: int, elapsed: float) -> None:
        """Checkpoint after round next_round - 1 (the one before becomes checkpoint.prev.pt). The metrics so
        far are written apart (write_metrics), after the caller notes the checkpoint: a fault in that write
        (a full disk) then names the checkpoint it resumes from."""
        payload = torch_bytes({"fingerprint": fingerprint, "next_round": next_round,
                               "algorithm": alg.state_dict(), "client_state": self.client_state,
                               "metrics": self.metrics, "assignments": self.assignments,
                               "cluster_sizes": self.sizes, "participation": self.participation,
                               "communication": self.communication,
                               "divergence": watch.state_dict(),
                               "elapsed": elapsed})
        data = pack_checkpoint(payload, fingerprint, next_round)
        if os.path.lexists(out / CHECKPOINT):   # renamed in the claimed directory (a link moves itself)
            fsops.rename(out / CHECKPOINT, out / PREVIOUS_CHECKPOINT)
        write_bytes(out / CHECKPOINT, data)

    def write_metrics(self, out: Path, ids: dict) -> None:
        write_csv(out / METRICS_FILE, metrics_table(self.metrics, ids))

    @staticmethod
    def drop_checkpoint(out: Path) -> None:
        for name in (CHECKPOINT, PREVIOUS_CHECKPOINT, DAMAGED_CHECKPOINT):
            if (out / name).is_file() and not os.path.islink(out / name):   # a folder or a link in its place is not ours
                fsops.unlink(out / name)


def read_checkpoint_file(path: Path, device="cpu") -> dict:
    """A checkpoint's contents after its checksum is verified (DamagedFile otherwise)."""
    header, payload = read_checkpoint(path)
    try:
        # weights_only: tensors and plain data only. A digest stored beside the payload proves nothing
        # against whoever can write the directory, so no checkpoint is ever unpickled with code in it
        ckpt = torch.load(io.BytesIO(payload), map_location=device, weights_only=True)
    except Exception as e:   # noqa: BLE001 -- a payload that passed its checksum but does not load (or holds code)
        raise DamagedFile(f"cannot be loaded ({type(e).__name__})") from None
    if not isinstance(ckpt, dict) or ckpt.get("fingerprint") != header.get("fingerprint"):
        raise DamagedFile("does not match its header")
    return ckpt


def load_checkpoint(out: Path, fingerprint: str, device, accepted=None) -> Optional[dict]:
    """The newest good checkpoint in `out` (None: there is none, the run starts at round 0).
    A damaged newest one is renamed checkpoint.damaged.pt (kept for inspection) and the previous
    one resumes, with a one-line notice; a checkpoint of another config is refused."""
    newest, previous = out / CHECKPOINT, out / PREVIOUS_CHECKPOINT
    candidates = [p for p in (newest, previous) if os.path.lexists(p)]
    if not candidates:
        return None
    problems = []
    for path in candidates:
        try:
            ckpt = read_checkpoint_file(path, device)
        except DamagedFile as e:
            problems.append(f"{path} {e}")
            continue
        if ckpt["fingerprint"] != fingerprint and ckpt["fingerprint"] not in (accepted or ()):
            raise ConfigError(f"{path} belongs to a different configuration; use a new hydra.run.dir "
                              "or overwrite=true to start over")
        if problems:
            newest.replace(out / DAMAGED_CHECKPOINT)
            if path == previous:
                previous.replace(newest)
            print(f"fedcluster: warning: {problems[0]}; set aside as {DAMAGED_CHECKPOINT}, resuming from the "
                  f"previous checkpoint (after round {ckpt['next_round']})", file=sys.stderr)
        return ckpt
    raise ConfigError(f"{problems[0]}" + (f" and {problems[1]}" if len(problems) > 1 else "")
                      + "; no good checkpoint is left to resume from: overwrite=true runs this config again from "
                      "round 1 (or use a new hydra.run.dir)")
