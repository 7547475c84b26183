"""What a finished run leaves in its directory: metrics.csv, assignments.csv, cluster_sizes.csv,
participation.csv (where the method samples clients), communication.csv (what crossed the wire),
the algorithm's own tables (`Algorithm.artifacts`), figures, and summary.json last (its presence
marks the run finished)."""

import time
from typing import Optional

import numpy as np

from .algorithms.wire import totals
from .privacy.ledger import privacy_summary
from .run_records.integrity import seal_summary
from .run_records.io import write_csv, write_json
from .run_records.record import METRICS_FILE, RunRecord, metrics_table
from .run_records.summary import summarize


def communication_table(rows, num_clients: int):
    """communication.csv: per round, direction and kind of message, how many clients sent or received it and its
    bytes, then the megabytes per client of the whole federation so far in that direction (cumulative, over
    all `num_clients` clients, for figures of accuracy against traffic)."""
    import pandas as pd
    frame = pd.DataFrame(rows, columns=["round", "direction", "what", "clients", "bytes"])
    frame["cumulative_mb_per_client"] = frame.groupby("direction")["bytes"].cumsum() / 2 ** 20 / num_clients
    return frame


def write_results(run, wall: float, ids: dict, peak_mb=None, timings: Optional[dict] = None) -> dict:
    """A finished run's tables, figures and summary.json (run: settled.SettledRun). `timings`: this process's
    seconds before the first round it trained (`setup_s`: building the data, model and method, claiming the
    directory) and in its rounds (`rounds_s`), with those writing the tables (`results_s`) and drawing the figures
    (`figures_s`; plots=false skips them) added here: summary.json's `timings`. The figures come before the summary:
    every file a run writes is listed in the record its summary seals (run_records/integrity.py)."""
    written = time.time()
    out, cfg, fed, alg, record, engine, hw = run.out, run.cfg, run.fed, run.alg, run.record, run.engine, run.hw
    import pandas as pd   # imported when used: a refused run never loads pandas
    frame = pd.DataFrame(record.metrics)
    write_csv(out / METRICS_FILE, metrics_table(record.metrics, ids))
    if record.assignments:
        write_csv(out / "assignments.csv", pd.DataFrame(record.assignments))
    if record.sizes:
        write_csv(out / "cluster_sizes.csv", pd.DataFrame(record.sizes))
    if record.participation:   # who trained each round, where the method samples clients
        write_csv(out / "participation.csv", pd.DataFrame(record.participation))
    if record.communication:   # what crossed the wire each round (algorithms/wire.py)
        write_csv(out / "communication.csv", communication_table(record.communication, fed.num_clients))
    summary = {"run_id": ids["run_id"],
               **summarize(cfg, fed, frame, pd.DataFrame(record.assignments), engine, hw, wall)}
    # median: robust to the first rounds' warm-up
    summary["train_seconds_per_round"] = float(np.median(record.train_seconds)) if record.train_seconds else None
    if peak_mb is not None:
        summary["peak_gpu_memory_mb"] = peak_mb
    summary["communication"] = {**totals(record.communication), "clients": fed.num_clients}
    if fed.private:   # privacy=client_dp: the mechanism, epsilon at the run's delta, what it covers (privacy/ledger.py)
        summary["privacy"] = privacy_summary(alg, fed, cfg.rounds, record.communication)
    if record.participation:
        per_round = pd.DataFrame(record.participation).groupby("round").size()
        summary["clients_per_round"] = float(per_round.mean())
    if record.sizes:
        final_sizes = [r["size"] for r in record.sizes if r["round"] == cfg.rounds - 1]
        summary["cluster_sizes"] = final_sizes
        summary["nonempty_clusters"] = int(sum(s > 0 for s in final_sizes))
        summary["largest_cluster_share"] = max(final_sizes) / max(sum(final_sizes), 1)
    tables = alg.artifacts()
    for name, table in tables.items():
        write_csv(out / f"{name}.csv", table)
    tabled = time.time()
    if cfg.plots:   # before the summary's seal: the figures are files of the run, listed with the others it wrote
        from .report.figures import write_loss_heatmap, write_run_figures
        write_run_figures(out, frame, pd.DataFrame(record.assignments), fed.data, summary, pd.DataFrame(record.sizes))
        losses = tables.get("loss_vectors")
        if losses is not None and len(losses) == fed.num_clients:
            truth = fed.data.cluster_truth
            write_loss_heatmap(out / "loss_heatmap.png", losses.to_numpy(), None if truth is None else truth.cpu().numpy(),
                               f"{summary['algorithm']}: client x model loss, last round ({summary['partition']})")
    if timings is not None:
        summary["timings"] = {**{k: round(v, 3) for k, v in timings.items()}, "results_s": round(tabled - written, 3),
                              "figures_s": round(time.time() - tabled, 3)}
    summary = seal_summary(summary, out, ids["run_id"], [METRICS_FILE, "assignments.csv", "cluster_sizes.csv",
                                                         "participation.csv", "communication.csv",
                                                         *(f"{name}.csv" for name in tables)])
    write_json(out / "summary.json", summary)
    RunRecord.drop_checkpoint(out)
    return summary

