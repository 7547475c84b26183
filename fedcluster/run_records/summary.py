"""The run's summary.json: the last round's scores averaged over clients (and pooled over
samples), the cluster models per distribution, the center matching, ARI and its convergence,
and the importance-weight error of soft methods."""
import platform
from typing import TYPE_CHECKING

import numpy as np
import torch
from omegaconf import OmegaConf

from .. import __version__
from ..hardware import machine
from ..threads import wait_policy
from ..evaluation import UNSEEN_TEST, ari_by_true_round, assignment_costs, convergence, matching_costs
from ..metrics import hungarian_match, key_metric
from .pairing import center_pairing
from .provenance import source_revision

if TYPE_CHECKING:   # types only here: a refused run never loads pandas
    import pandas as pd


def mean_over_clients(rows: "pd.DataFrame") -> dict:
    """{"<eval_set>_<metric>": mean over clients} of one predictor's metric rows."""
    return {f"{s}_{m}": float(g["value"].mean()) for (s, m), g in rows.groupby(["eval_set", "metric"])}


SAMPLE_MEAN_METRICS = ("accuracy", "mse")   # metrics that are means over a client's samples (macro-F1 is not)


def pooled_over_clients(rows: "pd.DataFrame", sizes: dict) -> dict:
    """{"<eval_set>_<metric>": the metric over all clients' samples of that split pooled}, i.e.
    the mean over clients weighted by each one's sample count in the split (`sizes`: eval_set ->
    [N] counts), for the metrics that are per-sample means. Fed-CAM §5 scores 'micro accuracy'
    this way; `mean_over_clients` gives every client the same weight."""
    out = {}
    for (s, m), g in rows.groupby(["eval_set", "metric"]):
        if m not in SAMPLE_MEAN_METRICS or s not in sizes:
            continue
        n = sizes[s][g["model_index"].to_numpy()].astype(np.float64)
        if n.sum() > 0:
            out[f"{s}_{m}"] = float((g["value"].to_numpy() * n).sum() / n.sum())
    return out


def summarize(cfg, fed, frame, assign, engine, hw, wall) -> dict:
    data, final = fed.data, cfg.rounds - 1
    at = frame[frame["round"] == final]
    key = key_metric(data.task)
    summary = {
        "algorithm": cfg.algorithm.name, "dataset": cfg.dataset.name, "partition": cfg.partition.name,
        "model": cfg.model.name, "seed": int(cfg.seed), "rounds": int(cfg.rounds), "task": data.task,
        "table": cfg.get("table"), "key_metric": key, "distributions": data.distribution_names,
        "num_clients": data.num_clients, "engine": engine, "device": hw.describe(), "dtype": hw.dtype,
        "threads": torch.get_num_threads(), "omp_wait_policy": wait_policy(),
        "status": "complete", "wall_time_s": round(wall, 3),
        "config": {**{g: OmegaConf.to_container(cfg[g], resolve=True)
                      for g in ("dataset", "partition", "model", "algorithm", "train")},
                   "num_clusters": cfg.get("num_clusters")},
        "machine": machine(),
        "versions": {"fedcluster": __version__, "revision": source_revision(), "torch": torch.__version__,
                     "python": platform.python_version(), "numpy": np.__version__},
    }
    summary["local"] = mean_over_clients(at[at["model"] == "local"])
    split_sizes = {"local_test": data.local_test.n.cpu().numpy(), "local_train": data.train.n.cpu().numpy()}
    if data.validation is not None:
        split_sizes["local_val"] = data.validation.n.cpu().numpy()
    if fed.newcomers is not None:   # the clients kept out of training (partition.holdout_clients)
        split_sizes[UNSEEN_TEST] = fed.newcomers.local_test.n.cpu().numpy()
        summary["unseen_clients"] = list(fed.newcomer_ids)   # their ids in the partition's numbering
    summary["local_micro"] = pooled_over_clients(at[at["model"] == "local"], split_sizes)
    alternatives = at[at["model"].str.startswith("local:")]
    if len(alternatives):   # the same method's other predictors (FedEM: mixture / top component)
        summary["local_alternatives"] = {name.split(":", 1)[1]: mean_over_clients(a)
                                         for name, a in alternatives.groupby("model")}
    centers = at[at["model"] == "center"]
    if len(centers):
        summary["centers"] = {
            f"{m}": {d: [float(v) for v in g[g["eval_set"] == d].sort_values("model_index")["value"]]
                     for d in data.distribution_names}
            for m, g in centers.groupby("metric")}
        cost = matching_costs(frame, final, data.task, data.distribution_names)
        match = hungarian_match(cost)
        # matched_center: a one-to-one pairing (Hungarian on test loss); best_center: each
        # distribution's lowest-loss center (two distributions may share one).
        summary["matched_center"] = {d: int(match[i]) for i, d in enumerate(data.distribution_names)}
        summary["best_center"] = {d: int(np.argmin(cost[:, i])) for i, d in enumerate(data.distribution_names)}
        # the same pairing without test data: by the clients' final weights and their true mixtures. The tables
        # and importance_error use this one where a run has it (pairing.center_pairing); the test-loss
        # one stays recorded beside it, with whether the two agree.
        label_free = assignment_costs(assign, final, data.mixture.cpu().numpy(), cost.shape[0]) if len(assign) else None
        if label_free is not None and label_free.shape[1] == len(data.distribution_names):
            by_weights = hungarian_match(label_free)
            summary["matched_center_by_assignment"] = {d: int(by_weights[i]) for i, d in enumerate(data.distribution_names)}
            summary["center_matchings_agree"] = bool((by_weights == match).all())
    ari_frame = frame[frame["metric"] == "ari"].sort_values("round") if len(frame) else frame
    if len(ari_frame):
        summary["ari"] = float(ari_frame["value"].iloc[-1])
        summary["ari_by_round"] = ari_by_true_round(ari_frame, int(cfg.rounds))
        summary.update(convergence(summary["ari_by_round"]))
    if len(assign) and len(centers):
        summary["importance_error"] = importance_error(assign, final, data, center_pairing(summary)[0])
    return summary


def importance_error(assign: "pd.DataFrame", final: int, data, matched: dict) -> dict:
    """Per group of clients with the same true mixture (at most 4 groups): mean estimated
    weight on the center matched to each distribution vs the true share."""
    mixture = data.mixture.cpu().numpy()
    groups = {}
    for k, row in enumerate(np.round(mixture, 6)):
        groups.setdefault(tuple(row), []).append(k)
    if len(groups) > 4:
        return {}
    w = assign[assign["round"] == final].pivot(index="client", columns="cluster", values="weight").to_numpy()
    result = {}
    for ratios, members in groups.items():
        name = ":".join(f"{round(100 * r)}" for r in ratios)
        est = [float(w[members, matched[d]].mean()) if matched[d] >= 0 else float("nan")
               for d in data.distribution_names]
        result[name] = {"true": list(ratios), "estimated": est,
                        "max_abs_error": float(np.max(np.abs(np.array(est) - np.array(ratios))))}
    return result


def diverged_summary(cfg, fed, error: str, t: int) -> dict:
    """A diverged run's summary, marked `status: diverged` (never a finished result:
    fedcluster-report lists it as skipped)."""
    return {"status": "diverged", "error": error, "diverged_in_round": t,
            "algorithm": cfg.algorithm.name, "dataset": cfg.dataset.name, "partition": cfg.partition.name,
            "model": cfg.model.name, "seed": int(cfg.seed), "rounds": int(cfg.rounds), "num_clients": fed.num_clients,
            "machine": machine(),
        "versions": {"fedcluster": __version__, "revision": source_revision(), "torch": torch.__version__}}
