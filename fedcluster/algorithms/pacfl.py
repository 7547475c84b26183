"""PACFL (Vahidian et al., AAAI 2023): one-shot clustering of clients before training, from the
principal angles between their data subspaces, then FedAvg within each cluster."""
from collections import Counter
from typing import Annotated, Optional

import numpy as np
import torch

from ..models.rows import rows_of
from ..rules import AtLeast, ClientDropout, ClientFraction, OneOf
from .base import RoundPlan
from .wire import Message, exchange
from .clustered import ClusteredAlgorithm, check_choice

ANGLES = ("principal", "code")
LINKAGES = {"average": "weighted", "complete": "complete", "single": "single"}   # -> scipy's method names


def client_basis(x: torch.Tensor, y: Optional[torch.Tensor], n_basis: int, per_class: bool) -> torch.Tensor:
    """[d, p] the client's data signature: the top `n_basis` left singular vectors of its data
    matrix (features x samples, samples flattened, no centring, as the authors' main_pacfl.py),
    computed per class and placed side by side (`per_class`, the authors' label-skew code), or of
    all its samples at once (their feature-shift code, mix4/main_pacfl_mix4.py)."""
    x = x.reshape(len(x), -1).double()
    groups = [x] if y is None or not per_class else [x[y == c] for c in torch.unique(y)]
    blocks = []
    for g in groups:
        u = torch.linalg.svd(g.T, full_matrices=False).U
        blocks.append(u[:, :n_basis])
    return torch.cat(blocks, dim=1)


def angle_matrix(bases, angle: Annotated[str, OneOf(ANGLES)] = "principal") -> np.ndarray:
    """[N, N] proximity of clients, in degrees. `principal`: the smallest principal angle between
    the subspaces the two signatures span (arccos of the largest singular value of Q_i^T Q_j with
    Q orthonormal bases; the paper's definition, independent of the singular vectors' signs).
    `code`: the authors' hierarchical_clustering.py, the smallest angle between any column of U_i
    and any column of U_j, arccos(max_ab u_a^T u_b), signs as the SVD returned them."""
    check_choice("angle", angle, ANGLES)
    if angle == "principal":
        bases = [torch.linalg.qr(u).Q for u in bases]
    N = len(bases)
    A = np.zeros((N, N))
    for i in range(N):
        for j in range(i + 1, N):
            A[i, j] = A[j, i] = _degrees(bases[i], bases[j], angle)
    return A


def cross_angles(rows, cols, angle: Annotated[str, OneOf(ANGLES)] = "principal") -> np.ndarray:
    """[len(rows), len(cols)] the angle of each signature of `rows` to each of `cols` (as `angle_matrix`)."""
    check_choice("angle", angle, ANGLES)
    if angle == "principal":
        rows, cols = [torch.linalg.qr(u).Q for u in rows], [torch.linalg.qr(u).Q for u in cols]
    return np.array([[_degrees(u, v, angle) for v in cols] for u in rows]).reshape(len(rows), len(cols))


def _degrees(u: torch.Tensor, v: torch.Tensor, angle: str) -> float:
    m = u.T @ v
    top = torch.linalg.svdvals(m)[0] if angle == "principal" else m.max()
    return float(np.degrees(np.arccos(np.clip(float(top), -1.0, 1.0))))


def hierarchical_clusters(A: np.ndarray, threshold: Optional[float], num_clusters: Optional[int],
                          linkage: Annotated[str, OneOf(tuple(LINKAGES))] = "average") -> np.ndarray:
    """[N] cluster ids 0..K-1 by agglomerative clustering of the angle matrix: merging stops when
    the closest two clusters are more than `threshold` degrees apart (PACFL's beta), or, with
    threshold None, at `num_clusters` clusters. `average` is the authors' update
    (A[:, i] + A[:, j]) / 2 of a merged row, i.e. WPGMA (scipy's 'weighted')."""
    from scipy.cluster.hierarchy import fcluster, linkage as build
    from scipy.spatial.distance import squareform
    if len(A) == 1:
        return np.zeros(1, dtype=int)
    tree = build(squareform(A, checks=False), method=LINKAGES[linkage])
    if threshold is not None:
        labels = fcluster(tree, t=threshold, criterion="distance")
    else:
        labels = fcluster(tree, t=num_clusters, criterion="maxclust")
    _, ids = np.unique(labels, return_inverse=True)   # 0..K-1 in order of first label
    return ids


class PACFL(ClusteredAlgorithm):
    """PACFL. Before training, each client sends the server its data signature (`client_basis`:
    `n_basis` left singular vectors of its training data, per class); the server computes the
    clients' angle matrix (`angle_matrix`) and clusters it once by hierarchical clustering
    (`hierarchical_clusters`). The number of clusters is what the clustering gives: merging stops
    at `threshold` degrees (the paper's beta), or, when `threshold` is null (default), at
    `num_clusters` (the K every clustered method of a run gets; neither CLoVE nor the authors'
    repository gives beta for FMNIST: their scripts use 3.5-9.88 degrees on raw uint8 pixels,
    while our images are normalised). Then each cluster trains by FedAvg from one common
    initialisation (main_pacfl.py), `client_fraction` of the clients per round; a client's model
    is its cluster's.

    Decisions: `angle: principal` (default) is the paper's smallest principal angle; `code` the
    authors' signed column-pair minimum (read in MMorafah/PACFL, src/clustering/
    hierarchical_clustering.py). `n_basis` 3 as their scripts/pacfl.sh (the option default is 5).
    Feature-shift data (rotations) have the same classes everywhere: `per_class: false` takes one
    basis of all of a client's samples, as their mix4 code does."""
    name = "pacfl"
    init = "identical"

    def __init__(self, num_clusters: Annotated[Optional[int], AtLeast(1)] = None, threshold: Annotated[Optional[float], AtLeast(0)] = None,
                 n_basis: Annotated[int, AtLeast(1)] = 3, angle: Annotated[str, OneOf(ANGLES)] = "principal",
                 linkage: Annotated[str, OneOf(tuple(LINKAGES))] = "average", per_class: bool = True,
                 client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0):
        self.num_clusters, self.threshold, self.n_basis = num_clusters, threshold, n_basis
        self.angle, self.linkage, self.per_class, self.client_fraction = angle, linkage, per_class, client_fraction
        self.client_dropout = client_dropout

    def setup(self, fed):
        self._signatures = self.signatures(fed)   # from the data alone: computed once, read again for newcomers
        self.angles = angle_matrix(self._signatures, self.angle)
        K = self.num_clusters or fed.data.num_true_clusters or 1
        ids = hierarchical_clusters(self.angles, self.threshold, K, self.linkage)
        self.num_clusters = int(ids.max()) + 1
        super().setup(fed)
        self.assignment = torch.as_tensor(ids, dtype=torch.long, device=fed.device)

    def signatures(self, fed) -> list:
        """Every client's data signature (`client_basis`) from its training data."""
        tr, classify = fed.data.train, fed.data.task == "classification"
        return [client_basis(tr.x[k, :int(tr.n[k])], tr.y[k, :int(tr.n[k])] if classify else None,
                             self.n_basis, self.per_class and classify) for k in range(fed.num_clients)]

    def newcomer_models(self, fed, newcomers):
        """PACFL's newcomer (Vahidian et al. 2023: a client that arrives later sends its data signature, and the
        server places it by its principal angles to the clients already clustered, with no training): its angle to
        each trained client, taken per cluster as the clustering's linkage merges (average: the mean; complete: the
        largest; single: the smallest), and the cluster of the smallest; its model is that cluster's."""
        angles = cross_angles(self.signatures(newcomers), self._signatures, self.angle)   # [N', N]
        ids = self.assignment.cpu().numpy()
        reduce = {"average": np.mean, "complete": np.max, "single": np.min}[self.linkage]
        per_cluster = np.stack([reduce(angles[:, ids == c], axis=1) if (ids == c).any() else np.full(len(angles), np.inf)
                                for c in range(self.num_clusters)], axis=1)
        return rows_of(self.centers, torch.as_tensor(per_cluster.argmin(1), device=self.assignment.device))

    def plan(self, t, fed):
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        return RoundPlan(clients, rows_of(self.centers, self.assignment[clients]))

    def messages(self, t, plan, fed):
        """Vahidian et al. (AAAI 2023), Algorithm 1: before training every client sends the server its data
        signature once (the `n_basis` singular vectors of each class it holds, as `client_basis` computes them),
        counted in the first round; then each round FedAvg's exchange with the client's cluster model."""
        messages = []
        if t == 0:
            sizes = Counter(int(u.numel() * u.element_size()) for u in self._signatures)
            messages += [Message("data signature", "up", count, size) for size, count in sorted(sizes.items())]
        return messages + exchange(plan)

    def artifacts(self):
        """pacfl_angles.csv: the clients' angle matrix in degrees (to choose `threshold` from)."""
        import pandas as pd
        return {**super().artifacts(), "pacfl_angles": pd.DataFrame(self.angles.round(4))}
