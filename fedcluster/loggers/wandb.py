"""A Weights & Biases run per fedcluster run. `mode: offline` (the default) needs no network or
account: the run is kept in <run dir>/wandb and `wandb sync` uploads it later; `mode: online`
logs live. Steps are rounds from 1; a resumed run continues the same W&B run (id = the run's
config fingerprint and directory)."""
import hashlib
from pathlib import Path
from typing import Optional

from .base import Logger, flat_params, require, round_scalars


class WandbLogger(Logger):
    def __init__(self, project: str = "fedcluster", mode: str = "offline", entity: Optional[str] = None):
        from ..errors import ConfigError
        if mode not in ("offline", "online", "disabled"):
            raise ConfigError(f"logger.wandb.mode={mode!r} is not one of offline, online, disabled")
        self.wandb = require("wandb", "wandb", "wandb")
        self.project, self.mode, self.entity = project, mode, entity
        self.run = None

    def open(self, out, config, ids, rows, first_round):
        out = Path(out).resolve()
        run_id = hashlib.sha256(f"{ids['run_id']}:{out}".encode()).hexdigest()[:16]
        self.run = self.wandb.init(project=self.project, entity=self.entity, mode=self.mode, dir=str(out),
                                   id=run_id, name=out.name, resume="allow", config=flat_params(config),
                                   settings=self.wandb.Settings(silent=True, console="off"))

    def log_round(self, t, rows, train_seconds):
        per_round = round_scalars(rows)
        per_round.setdefault(t, {})["time/local_training_s"] = train_seconds
        for r in sorted(per_round):
            self.run.log(per_round[r], step=r + 1)

    def close(self, summary):
        if self.run is None:
            return
        if summary is not None:
            for k, v in flat_params(summary).items():
                if isinstance(v, (int, float, str, bool)):
                    self.run.summary[f"final/{k}"] = v
        self.run.finish(exit_code=0 if summary is not None else 1)
        self.run = None
