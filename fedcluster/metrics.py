"""Metrics: MSE, accuracy, macro-F1 (per model, over masked samples), ARI, Hungarian matching."""
from typing import Dict

import numpy as np
import torch


def regression_metrics(pred: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> Dict[str, torch.Tensor]:
    """pred, y, mask: [M, N]. Returns {'mse': [M]}."""
    m = mask.to(pred.dtype)
    return {"mse": (((pred - y) ** 2) * m).sum(1) / m.sum(1).clamp_min(1)}


def classification_metrics(logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor,
                           num_classes: int) -> Dict[str, torch.Tensor]:
    """logits [M, N, C], y and mask [M, N]. Accuracy and macro-F1 per model.

    Macro-F1 averages F1 = 2TP / (2TP + FP + FN) over the labels present in y or in the
    predictions of that model, as sklearn.metrics.f1_score(average='macro') does."""
    pred = logits.argmax(-1)
    M = pred.shape[0]
    m = mask.to(torch.float64)
    acc = ((pred == y).double() * m).sum(1) / m.sum(1).clamp_min(1)
    row = torch.arange(M, device=pred.device)[:, None].expand_as(pred)
    def count(labels, extra=None):
        sel = mask if extra is None else mask & extra
        return torch.bincount((row * num_classes + labels)[sel], minlength=M * num_classes).view(M, num_classes).double()
    tp = count(y, pred == y)
    true_n, pred_n = count(y), count(pred)
    present = (true_n + pred_n) > 0
    f1 = torch.where(present, 2 * tp / (true_n + pred_n).clamp_min(1), torch.zeros_like(tp))
    macro = f1.sum(1) / present.sum(1).clamp_min(1)
    return {"accuracy": acc, "macro_f1": macro}


def reconstruction_metrics(out: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> Dict[str, torch.Tensor]:
    """out, x: [M, N, *shape], mask [M, N]. Mean per-sample reconstruction MSE per model."""
    per_sample = ((out - x) ** 2).flatten(2).mean(2)
    m = mask.to(per_sample.dtype)
    return {"mse": (per_sample * m).sum(1) / m.sum(1).clamp_min(1)}


def model_metrics(task: str, out: torch.Tensor, y: torch.Tensor, mask: torch.Tensor, num_classes: int):
    if task == "regression":
        return regression_metrics(out, y, mask)
    if task == "reconstruction":
        return reconstruction_metrics(out, y, mask)
    return classification_metrics(out, y, mask, num_classes)


def key_metric(task: str) -> str:
    return "mse" if task in ("regression", "reconstruction") else "accuracy"


def lower_is_better(metric: str) -> bool:
    return metric in ("mse", "loss")


def hungarian_match(cost: np.ndarray) -> np.ndarray:
    """cost [models, distributions] -> matched model index per distribution (-1 if unmatched,
    when there are fewer models than distributions)."""
    from scipy.optimize import linear_sum_assignment   # imported when used (start-up time)
    rows, cols = linear_sum_assignment(cost)
    match = np.full(cost.shape[1], -1, dtype=int)
    match[cols] = rows
    return match


def ari(truth, assigned) -> float:
    """Adjusted Rand index of two labelings (Hubert & Arabie 1985), from the pair counts of their
    contingency table: of the n^2 - n ordered pairs of distinct samples, `both` are together in each,
    `only_truth` / `only_assigned` together in one alone, `neither` apart in both; ARI =
    2 (both * neither - only_truth * only_assigned) / ((both + only_truth)(only_truth + neither) +
    (both + only_assigned)(only_assigned + neither)), and 1 where no pair disagrees. Exact integers
    until one division, so it equals sklearn.metrics.adjusted_rand_score to the last bit
    (tests/unit/test_metrics.py) without importing scikit-learn's metrics, a second of every run's start."""
    truth, assigned = np.asarray(truth).ravel(), np.asarray(assigned).ravel()
    if truth.shape != assigned.shape:
        raise ValueError(f"ari: labelings of {truth.size} and {assigned.size} samples")
    _, t = np.unique(truth, return_inverse=True)
    _, a = np.unique(assigned, return_inverse=True)
    table = np.zeros((int(t.max(initial=-1)) + 1, int(a.max(initial=-1)) + 1), dtype=np.int64)
    np.add.at(table, (t, a), 1)
    n = int(truth.size)
    squares = int((table ** 2).sum())
    in_truth = int((table.sum(1) ** 2).sum())          # sum over pairs together in the truth, ordered, self-pairs too
    in_assigned = int((table.sum(0) ** 2).sum())
    both = squares - n
    only_truth = in_truth - squares
    only_assigned = in_assigned - squares
    neither = n * n - only_truth - only_assigned - squares
    if only_truth == 0 and only_assigned == 0:
        return 1.0
    return 2.0 * (both * neither - only_truth * only_assigned) / (
        (both + only_truth) * (only_truth + neither) + (both + only_assigned) * (only_assigned + neither))
