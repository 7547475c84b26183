"""An MLflow run per fedcluster run: the flattened config as parameters, per-round scalars (steps
= rounds from 1), the summary's numbers at the end, the run directory's path as a tag. The store
is `tracking_uri` when set, else MLflow's own default ($MLFLOW_TRACKING_URI, else in the working
directory: ./mlflow.db for MLflow 3, ./mlruns for MLflow 2). A resumed run continues the same MLflow run (its id is kept in the run
directory, mlflow_run_id.txt)."""
from pathlib import Path
from typing import Optional

from ..run_records.io import write_text
from .base import Logger, flat_params, require, round_scalars

RUN_ID_FILE = "mlflow_run_id.txt"


class MLflowLogger(Logger):
    def __init__(self, experiment: str = "fedcluster", tracking_uri: Optional[str] = None):
        self.mlflow = require("mlflow", "mlflow", "mlflow")
        self.experiment, self.tracking_uri = experiment, tracking_uri
        self.run = None

    def open(self, out, config, ids, rows, first_round):
        mlflow = self.mlflow
        if self.tracking_uri:
            mlflow.set_tracking_uri(self.tracking_uri)
        mlflow.set_experiment(self.experiment)
        kept = Path(out) / RUN_ID_FILE
        if first_round and kept.exists():
            self.run = mlflow.start_run(run_id=kept.read_text().strip())
        else:
            self.run = mlflow.start_run(run_name=Path(out).name)
            write_text(kept, self.run.info.run_id + "\n")
            params = flat_params(config)
            items = list(params.items())
            for i in range(0, len(items), 100):   # MLflow takes at most 100 parameters per call
                mlflow.log_params({k: str(v)[:500] for k, v in items[i:i + 100]})
            mlflow.set_tags({"run_dir": str(Path(out).resolve()), **{f"fedcluster.{k}": v for k, v in ids.items()}})

    def log_round(self, t, rows, train_seconds):
        for r, scalars in round_scalars(rows).items():
            self.mlflow.log_metrics({k.replace("/", "."): v for k, v in scalars.items()}, step=r + 1)
        self.mlflow.log_metric("time.local_training_s", train_seconds, step=t + 1)

    def close(self, summary):
        if self.run is None:
            return
        if summary is not None:
            numbers = {f"final.{k}": float(v) for k, v in flat_params(summary).items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)}
            self.mlflow.log_metrics(numbers)
        self.mlflow.end_run(status="FINISHED" if summary is not None else "KILLED")
        self.run = None
