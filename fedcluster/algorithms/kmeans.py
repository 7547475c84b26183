"""Weighted K-means over flattened model parameters (FeSEM; Fed-CAM eqs. 10-11)."""
from typing import Iterable, Optional, Tuple

import torch

from ..models.stacked import Stack


def flatten(stack: Stack, keys: Optional[Iterable[str]] = None) -> torch.Tensor:
    """[M, D] rows of the chosen parameters (all when keys is None), in a fixed key order."""
    names = sorted(stack) if keys is None else sorted(keys)
    return torch.cat([stack[k].flatten(1) for k in names], dim=1)


def kmeans_plus_plus(points: torch.Tensor, k: int, g: torch.Generator) -> torch.Tensor:
    """k initial centers by k-means++ seeding (Arthur & Vassilvitskii 2007): [k, D]."""
    first = int(torch.randint(len(points), (1,), generator=g))
    chosen = [first]
    dist = ((points - points[first]) ** 2).sum(1)
    for _ in range(1, k):
        total = dist.sum()
        if total <= 0:   # fewer distinct points than k: repeat one
            nxt = int(torch.randint(len(points), (1,), generator=g))
        else:
            nxt = int(torch.multinomial((dist / total).cpu().double(), 1, generator=g))
        chosen.append(nxt)
        dist = torch.minimum(dist, ((points - points[nxt]) ** 2).sum(1))
    return points[chosen].clone()


def weighted_kmeans(points: torch.Tensor, weights: torch.Tensor, centers: torch.Tensor,
                    iters: int = 10) -> Tuple[torch.Tensor, torch.Tensor]:
    """Lloyd iterations from `centers`: assignment c(i) = argmin_k ||x_i - mu_k||^2 and
    mu_k = sum_{i in C_k} w_i x_i / sum_{i in C_k} w_i (eq. 11). A cluster that loses all its
    points keeps its previous center. Returns (assignment [M], centers [K, D])."""
    centers = centers.clone()
    assignment = None
    for _ in range(max(iters, 1)):
        new = torch.cdist(points.double(), centers.double()).argmin(1)
        if assignment is not None and torch.equal(new, assignment):
            break
        assignment = new
        centers = cluster_means(points, weights, assignment, centers)
    return assignment, centers


def cluster_means(points: torch.Tensor, weights: torch.Tensor, assignment: torch.Tensor,
                  previous: torch.Tensor) -> torch.Tensor:
    """Weighted mean of each cluster's points; empty clusters keep `previous`."""
    K = previous.shape[0]
    onehot = torch.nn.functional.one_hot(assignment, K).to(torch.float64) * weights.double()[:, None]   # [M, K]
    mass = onehot.sum(0)
    means = (onehot.T @ points.double()) / mass.clamp_min(1e-300)[:, None]
    return torch.where((mass > 0)[:, None], means, previous.double()).to(previous.dtype)
