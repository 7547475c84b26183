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
    from sklearn.metrics import adjusted_rand_score
    return float(adjusted_rand_score(np.asarray(truth), np.asarray(assigned)))
