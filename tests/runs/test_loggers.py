"""The `logger` group: metrics.csv grows every evaluated round (csv), TensorBoard and MLflow receive
the same per-round means that metrics.csv holds, W&B works offline, a missing tracker package is a
one-line error before anything is written, and the logger never changes which run a directory holds."""
import json

import pandas as pd
import pytest

from conftest import make_cfg
from fedcluster.errors import ConfigError
from fedcluster.loggers import CSVLogger
from fedcluster.runner import run

TINY = ["rounds=3", "partition.num_clients=10", "algorithm.selection_size=5", "dataset.test_size=100",
        "plots=false", "progress=false", "checkpoint_every=0"]


def local_test_means(out):
    m = pd.read_csv(out / "metrics.csv")
    sel = m[(m.model == "local") & (m.eval_set == "local_test") & (m.metric == "mse")]
    return sel.groupby("round")["value"].mean()


def test_metrics_rows_carry_the_run_identifiers(tmp_path):
    a = run(make_cfg(TINY + ["seed=3"]), tmp_path / "a")
    run(make_cfg(TINY + ["seed=3"]), tmp_path / "b")
    m, other = pd.read_csv(tmp_path / "a" / "metrics.csv"), pd.read_csv(tmp_path / "b" / "metrics.csv")
    assert list(m.columns[:6]) == ["run_id", "algorithm", "dataset", "partition", "seed", "round"]
    assert set(m.run_id) == {a["run_id"]} and set(other.run_id) == {a["run_id"]}   # same config, same id
    assert set(m.algorithm) == {"fedsoft"} and set(m.seed) == {3} and set(m.partition) == {"mix_10_90"}
    c = run(make_cfg(TINY + ["seed=4"]), tmp_path / "c")
    assert c["run_id"] != a["run_id"]


def test_csv_logger_appends_each_evaluated_round(tmp_path, monkeypatch):
    seen = []
    append = CSVLogger.log_round

    def spy(self, t, rows, seconds):
        append(self, t, rows, seconds)
        seen.append(sorted(set(pd.read_csv(self.path)["round"])))
    monkeypatch.setattr(CSVLogger, "log_round", spy)
    run(make_cfg(TINY), tmp_path / "run")
    assert seen == [[0], [0, 1], [0, 1, 2]]
    final = pd.read_csv(tmp_path / "run" / "metrics.csv")
    assert final.duplicated().sum() == 0 and sorted(set(final["round"])) == [0, 1, 2]


def test_resume_drops_rows_past_the_checkpoint(tmp_path, monkeypatch):
    """A run killed in round 2 (index 1) before its checkpoint has round-1 rows in its live file;
    the resumed run rewrites the file to the checkpoint's rows (round 0) before appending."""
    import fedcluster.runner as runner
    from fedcluster.errors import RunInterrupted
    from fedcluster.loggers import Logger

    class KillAfter(Logger):
        def log_round(self, t, rows, seconds):
            if t == 1:
                raise KeyboardInterrupt
    cfg = make_cfg([o for o in TINY if not o.startswith("checkpoint_every")] + ["checkpoint_every=1"])
    out = tmp_path / "run"
    made = runner.make_loggers
    monkeypatch.setattr(runner, "make_loggers", lambda node: made(node) + [KillAfter()])
    with pytest.raises(RunInterrupted):
        run(cfg, out)
    assert sorted(set(pd.read_csv(out / "metrics.csv")["round"])) == [0, 1]
    monkeypatch.setattr(runner, "make_loggers", made)
    at_open, opened = [], CSVLogger.open

    def spy(self, *a):
        opened(self, *a)
        at_open.append(sorted(set(pd.read_csv(self.path)["round"])) if self.path.exists() else [])
    monkeypatch.setattr(CSVLogger, "open", spy)
    run(cfg, out)
    assert at_open == [[0]]
    resumed = pd.read_csv(out / "metrics.csv")
    run(cfg, tmp_path / "straight")
    pd.testing.assert_frame_equal(resumed, pd.read_csv(tmp_path / "straight" / "metrics.csv"))


def test_tensorboard_scalars_are_the_per_round_means(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    out = tmp_path / "run"
    run(make_cfg(TINY + ["logger=tensorboard"]), out)
    acc = EventAccumulator(str(out / "tensorboard"))
    acc.Reload()
    events = acc.Scalars("local/local_test_mse")
    assert [e.step for e in events] == [1, 2, 3]
    assert [e.value for e in events] == pytest.approx(list(local_test_means(out)), rel=1e-6)


def test_mlflow_run_holds_config_metrics_and_final_summary(tmp_path):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "run"
    summary = run(make_cfg(TINY + ["logger=mlflow", f"logger.mlflow.tracking_uri={uri}"]), out)
    client = MlflowClient(tracking_uri=uri)
    r = client.get_run((out / "mlflow_run_id.txt").read_text().strip())
    assert r.info.status == "FINISHED" and r.data.params["train.lr"] == "0.005"
    assert r.data.tags["fedcluster.run_id"] == summary["run_id"]
    history = client.get_metric_history(r.info.run_id, "local.local_test_mse")
    assert [h.step for h in history] == [1, 2, 3]
    assert [h.value for h in history] == pytest.approx(list(local_test_means(out)), rel=1e-6)
    assert r.data.metrics["final.local.local_test_mse"] == pytest.approx(summary["local"]["local_test_mse"])


def test_wandb_offline_needs_no_network(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    run(make_cfg(TINY + ["logger=wandb"]), out)
    files = list((out / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 1 and files[0].stat().st_size > 0


def test_a_missing_tracker_package_is_one_line_before_anything_is_written(tmp_path, monkeypatch):
    import importlib
    real = importlib.import_module

    def no_tensorboard(name, *a, **k):
        if name.split(".")[0] == "tensorboard":
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(importlib, "import_module", no_tensorboard)
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match=r"logger=tensorboard needs the `tensorboard` package.*"
                                          r"pip install 'fedcluster\[tensorboard\]'") as e:
        run(make_cfg(TINY + ["logger=tensorboard"]), out)
    assert "\n" not in str(e.value) and not out.exists()


def test_the_logger_does_not_change_which_run_a_directory_holds(tmp_path):
    pytest.importorskip("tensorboard")
    out = tmp_path / "run"
    first = run(make_cfg(TINY), out)
    again = run(make_cfg(TINY + ["logger=tensorboard"]), out)
    assert again.get("already_complete") and again["run_id"] == first["run_id"]
    assert json.loads((out / "summary.json").read_text())["run_id"] == first["run_id"]
