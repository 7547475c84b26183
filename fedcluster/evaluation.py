"""Per-round evaluation: cluster models on each distribution's held-out test set, local
models on each client's held-out local test split and (labelled separately) on its training
split, and the clustering's agreement with the ground truth."""
from typing import Callable, List, Optional

import numpy as np
import torch

from .algorithms.base import Algorithm, RunView
from .local_training.forward import outputs_on_shared
from .local_training.losses import per_sample_loss
from .metrics import ari, model_metrics


def evaluate(t: int, alg: Algorithm, fed: RunView, on_train: bool = True,
             local_training: Optional[Callable] = None) -> List[dict]:
    """Every metric row of round t: the cluster models on each distribution's test set, each client's predictors
    on its own splits, and the held-out clients (`newcomer_rows`; `local_training(t, plan, view)`: the run's local
    training, for a newcomer rule that trains)."""
    data, rows = fed.data, []
    task, C = data.task, data.num_classes

    def add(model, index, eval_set, metrics):
        for metric, values in metrics.items():
            for i, v in zip(index, values.tolist()):
                rows.append({"round": t, "model": model, "model_index": int(i), "eval_set": eval_set,
                             "metric": metric, "value": float(v)})

    centers = alg.cluster_models()
    if centers is not None:
        K = next(iter(centers.values())).shape[0]
        for d, (x, y) in enumerate(data.source_test):
            out = outputs_on_shared(fed.model, centers, x)
            mask = torch.ones(K, len(y), dtype=torch.bool, device=y.device)
            metrics = model_metrics(task, out, y.expand(K, *y.shape), mask, C)
            if task == "classification":   # test loss, used for center <-> distribution matching
                metrics["loss"] = torch.stack([per_sample_loss(task, o, y).mean() for o in out])
            add("center", range(K), data.distribution_names[d], metrics)

    splits = [("local_test", data.local_test)] + ([("local_train", data.train)] if on_train else []) \
        + ([("local_val", data.validation)] if data.validation is not None else [])
    for eval_set, split in splits:
        rows += score_split(t, alg, fed, eval_set, split)
    return rows + newcomer_rows(t, alg, fed, local_training)


UNSEEN_TEST = "unseen_test"


def newcomer_rows(t: int, alg: Algorithm, fed: RunView, local_training: Optional[Callable] = None) -> List[dict]:
    """The held-out clients (partition.holdout_clients), each with the model the method's own rule picks from
    its training data (`Algorithm.newcomer_models`), scored on its test split: eval_set `unseen_test`, model
    `local`, model_index its position among the held-out clients (summary.json's `unseen_clients` gives
    their partition ids)."""
    if fed.newcomers is None:
        return []
    train = None if local_training is None else (lambda plan, view: local_training(t, plan, view))
    view = fed.newcomer_view(train)
    split = view.data.local_test
    return split_rows(t, view, UNSEEN_TEST, split, alg.newcomer_predictors(fed, view, split))


ROUND_START_TRAIN = "round_start_train"


def round_start_rows(t: int, alg: Algorithm, fed: RunView) -> List[dict]:
    """Each client's local predictor on its own training split at the START of round t, before it
    trains (the models the previous round's aggregation left), as eval_set `round_start_train`.

    Why: CLoVE's tables score FedAvg (and Local-only, the centralised bound) so. Its notebook
    (plot_utils/exp_evaluations_supervised.ipynb, `get_rounds_data_for_CLoVE`) averages the accuracy
    lines a round logs before its first 'Server: Aggregating model' line, which for vanillaFL come from
    `generate_loss_vectors(..., dataloaders=trainloaders)`: the global model on each client's training
    samples as the round begins. A training-data score, kept in its own column, never in place of the
    held-out `local_test` one."""
    return score_split(t, alg, fed, ROUND_START_TRAIN, fed.data.train)


def score_split(t: int, alg: Algorithm, fed: RunView, eval_set: str, split) -> List[dict]:
    """Metric rows of every local predictor of `alg` on one per-client split (clients without samples
    in it have no score)."""
    return split_rows(t, fed, eval_set, split, alg.predictors(fed, split))


def split_rows(t: int, fed: RunView, eval_set: str, split, predictors: dict) -> List[dict]:
    """Metric rows of each predictor's outputs ({model: [N, Nmax, ...]}) on a per-client split."""
    task, C, rows = fed.data.task, fed.data.num_classes, []
    has = split.n > 0
    index = torch.nonzero(has).squeeze(1).tolist()
    for model, out in predictors.items():
        for metric, values in model_metrics(task, out[has], split.y[has], split.mask[has], C).items():
            for i, v in zip(index, values.tolist()):
                rows.append({"round": t, "model": model, "model_index": int(i), "eval_set": eval_set,
                             "metric": metric, "value": float(v)})
    return rows


def ari_rows(t: int, alg: Algorithm, data) -> List[dict]:
    """ARI of the clients' current clustering against the ground truth, recorded every round
    (CLoVE Table 4 needs the round at which it first reaches 0.9)."""
    weights, truth = alg.assignment_weights(), data.cluster_truth
    if weights is None or truth is None:
        return []
    assigned = weights.argmax(1).cpu().numpy()
    return [{"round": t, "model": "assignment", "model_index": -1, "eval_set": "local_train",
             "metric": "ari", "value": ari(truth.cpu().numpy(), assigned)}]


def ari_by_true_round(ari_frame, rounds: int) -> List[Optional[float]]:
    """[rounds] the ARI after each round, position t = metrics round t (1-based round t+1);
    None where the method had no clustering yet (warm-up rounds of the CAM methods), so
    positions are always true rounds."""
    out: List[Optional[float]] = [None] * rounds
    for t, v in zip(ari_frame["round"], ari_frame["value"]):
        out[int(t)] = round(float(v), 6)
    return out


def convergence(ari_by_round: List[Optional[float]], by_round: int = 10, threshold: float = 0.9) -> dict:
    """CLoVE Table 4: the share of the final ARI reached by round `by_round` (ARI there /
    final ARI, in %), and the first round (1-based) whose ARI is >= threshold (None: never).
    `ari_by_round` is indexed by true round (`ari_by_true_round`); a round without a
    clustering (None) has reached nothing."""
    final = ari_by_round[-1]
    out = {f"ari_pct_of_final_by_round{by_round}": None, f"first_round_ari_ge_{threshold}": None}
    if final is not None and len(ari_by_round) >= by_round and final > 0:
        at = ari_by_round[by_round - 1]
        out[f"ari_pct_of_final_by_round{by_round}"] = 0.0 if at is None else 100.0 * at / final
    hits = [t + 1 for t, v in enumerate(ari_by_round) if v is not None and v >= threshold]
    if hits:
        out[f"first_round_ari_ge_{threshold}"] = hits[0]
    return out


def cluster_size_rows(t: int, alg: Algorithm) -> List[dict]:
    sizes = alg.cluster_sizes()
    if sizes is None:
        return []
    return [{"round": t, "cluster": j, "size": int(s) if float(s).is_integer() else round(float(s), 6)}
            for j, s in enumerate(sizes.tolist())]


def assignment_rows(t: int, alg: Algorithm) -> List[dict]:
    weights = alg.assignment_weights()
    if weights is None:
        return []
    w = weights.detach().cpu().numpy()
    return [{"round": t, "client": int(k), "cluster": int(s), "weight": float(w[k, s])}
            for k in range(w.shape[0]) for s in range(w.shape[1])]


def assignment_costs(assign, at_round: int, mixture: np.ndarray, num_centers: int) -> Optional[np.ndarray]:
    """[centers, distributions] cost of pairing center k with distribution j that reads no test
    data: minus the weight the clients put on k, each client counted by its true share of j
    (sum over clients of mixture[c, j] * weight[c, k], from assignments.csv at `at_round`). A
    label-free alternative to matching_costs' test loss; None where the round has no weights."""
    rows = assign[assign["round"] == at_round]
    if not len(rows):
        return None
    rows = rows[(rows["cluster"] >= 0) & (rows["cluster"] < num_centers)]
    weights = np.zeros((mixture.shape[0], num_centers))
    weights[rows["client"].to_numpy(int), rows["cluster"].to_numpy(int)] = rows["weight"].to_numpy(float)
    return -(weights.T @ mixture)


def matching_costs(frame, at_round: int, task: str, distributions: List[str]) -> np.ndarray:
    """[centers, distributions] test-loss matrix (MSE for regression) from the metrics table."""
    metric = "mse" if task in ("regression", "reconstruction") else "loss"
    sel = frame[(frame["round"] == at_round) & (frame["model"] == "center") & (frame["metric"] == metric)]
    K = int(sel["model_index"].max()) + 1
    cost = np.zeros((K, len(distributions)))
    for _, r in sel.iterrows():
        cost[int(r["model_index"]), distributions.index(r["eval_set"])] = r["value"]
    return cost
