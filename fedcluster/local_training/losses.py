"""Per-sample losses by task: squared error for regression, cross-entropy for classification,
mean squared reconstruction error for reconstruction (unsupervised; targets are the inputs)."""
import torch
import torch.nn.functional as F


def per_sample_loss(task: str, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if task == "regression":
        return (out - y) ** 2
    if task == "reconstruction":
        return ((out - y) ** 2).flatten(1).mean(1)
    return F.cross_entropy(out, y, reduction="none")
