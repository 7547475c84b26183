"""Helpers shared by the label partitions (labels.py) and CLoVE's cluster skews (skews.py): the
split they return, seeded NumPy draws, Dirichlet rows, and integer class counts per client."""
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch

from ..errors import ConfigError


@dataclass
class LabelSplit:
    train: List[torch.Tensor]       # per client: indices into the training pool
    test: List[torch.Tensor]        # per client: indices into the test pool
    truth: Optional[torch.Tensor]   # [m] ground-truth cluster, None for client-wise skews
    quarter_turns: Optional[torch.Tensor] = None   # [m] counter-clockwise 90-degree turns of each client's images
    label_map: Optional[torch.Tensor] = None       # [m, C] each client's relabelling y -> label_map[i, y]


def numpy_rng(g: torch.Generator) -> np.random.Generator:
    return np.random.default_rng(int(torch.randint(0, 2 ** 62, (1,), generator=g)))


def dirichlet(rng: np.random.Generator, alpha: float, size: int, draws: int) -> np.ndarray:
    """[draws, size] Dirichlet(alpha * 1) rows via normalised Gamma draws. For tiny alpha all
    Gammas of a row can underflow to 0; such a row becomes one-hot at a uniformly random
    entry (the alpha -> 0 limit of the Dirichlet)."""
    gam = rng.gamma(alpha, size=(draws, size))
    total = gam.sum(1, keepdims=True)
    empty = total[:, 0] == 0
    if empty.any():
        gam[empty] = 0.0
        gam[empty, rng.integers(0, size, int(empty.sum()))] = 1.0
        total = gam.sum(1, keepdims=True)
    return gam / total


def largest_remainder(shares: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Integer counts [C, m]: row c splits totals[c] by shares[c] (rows of zeros get nothing)."""
    raw = shares * totals[:, None]
    counts = np.floor(raw).astype(np.int64)
    short = np.where(shares.sum(1) > 0, totals - counts.sum(1), 0)
    order = np.argsort(-(raw - counts), axis=1, kind="stable")
    for c in range(len(totals)):
        counts[c, order[c, : short[c]]] += 1
    return counts


def ensure_minimum(counts: np.ndarray, minimum: int, prefer: Optional[np.ndarray] = None,
                   pool: str = "pool", advice: str = "lower partition.num_clients or partition.min_samples") -> np.ndarray:
    """Move samples from the clients with the most samples to those with fewer than
    `minimum`, taking the class `prefer[i]` when the donor has it (else the donor's largest
    class). Deterministic, O(moves)."""
    counts = counts.copy()
    totals = counts.sum(0)
    for i in np.nonzero(totals < minimum)[0]:
        while totals[i] < minimum:
            donor = int(np.argmax(totals))
            spare = totals[donor] - minimum
            if donor == i or spare <= 0:
                raise ConfigError(f"partition cannot give every client {minimum} samples: the {pool} has "
                                  f"{int(counts.sum())} for {counts.shape[1]} clients; {advice}")
            c = int(prefer[i]) if prefer is not None and counts[int(prefer[i]), donor] > 0 else int(np.argmax(counts[:, donor]))
            move = int(min(minimum - totals[i], counts[c, donor], spare))
            counts[c, donor] -= move
            counts[c, i] += move
            totals[donor] -= move
            totals[i] += move
    return counts


def take_indices(labels: torch.Tensor, counts: np.ndarray, g: torch.Generator) -> List[torch.Tensor]:
    """Disjoint index sets: client i gets counts[c, i] random samples of each class c."""
    C, m = counts.shape
    pieces: List[List[torch.Tensor]] = [[] for _ in range(m)]
    for c in range(C):
        members = torch.nonzero(labels == c).squeeze(1)
        members = members[torch.randperm(len(members), generator=g)]
        for i, part in enumerate(torch.split(members[: int(counts[c].sum())], counts[c].tolist())):
            pieces[i].append(part)
    return [torch.sort(torch.cat(p)).values if p else torch.zeros(0, dtype=torch.long) for p in pieces]
