"""CFL (Sattler, Müller, Samek, IEEE TNNLS 2021): clustered FL by recursive bi-partitioning.

All clients start in one cluster. Each round every client trains from its cluster's model
and sends its update dW_i. A cluster is split in two when its clients have reached a
stationary point of the joint objective but not of their own ones: the norm of the
weighted mean update is below eps1 while the largest client update norm is above eps2
(and the cluster has more than 2 clients, from round `split_after_round` on (0-based)). The split is the
2-cluster complete-linkage clustering of the clients' pairwise cosine similarities; both
halves start from the parent's model. Then each cluster's model moves by the n_i-weighted
mean update of its clients. Split rule, linkage and warm-up (20 rounds) follow the authors'
code (github.com/felisat/clustered-federated-learning, which CLoVE used); eps1 = 0.4 and
eps2 = 1.6 are its MNIST values, to be tuned per model and data.

`client_fraction` < 1: each round samples that share of the clients. The authors' code trains every client
every round (its select_clients is called with frac = 1.0, felisat/clustered-federated-learning at 23a1c38), so
absent clients follow FL-bench's CFL (src/server/cfl.py): a cluster's split criterion, its similarities and its
step use this round's clients alone, a cluster needs more than 2 of them to split, an absent client stays in the
cluster it was in (the half that keeps the parent's index), and a cluster without one keeps its model."""
from typing import Annotated, List

import numpy as np
import torch

from ..models.rows import rows_of
from ..models.stacked import Stack
from ..rules import AtLeast, ClientDropout, ClientFraction
from .base import RoundPlan
from .clustered import ClusteredAlgorithm
from .fold import gathered


def flat_updates(trained: Stack, start: Stack) -> torch.Tensor:
    """[M, P] each client's update dW_i = trained_i - start_i, flattened."""
    return torch.cat([(trained[k] - start[k]).flatten(1) for k in trained], dim=1)


def split_criterion(updates: torch.Tensor, sizes: torch.Tensor, eps1: float, eps2: float):
    """(split?, mean_norm, max_norm) for one cluster's updates [M, P]: split when
    ||sum_i n_i dW_i / sum_i n_i|| < eps1 and max_i ||dW_i|| > eps2 (CFL §III, eqs. 28-29)."""
    w = (sizes / sizes.sum()).to(updates.dtype)
    mean_norm = float(torch.linalg.vector_norm(w @ updates))
    max_norm = float(torch.linalg.vector_norm(updates, dim=1).max())
    return (mean_norm < eps1 and max_norm > eps2), mean_norm, max_norm


def bipartition(updates: torch.Tensor) -> np.ndarray:
    """Labels 0/1 from complete-linkage clustering of cosine distances between updates."""
    unit = torch.nn.functional.normalize(updates.double(), dim=1)
    distance = (1 - unit @ unit.T).clamp_min(0).cpu().numpy()
    from sklearn.cluster import AgglomerativeClustering   # imported when used: sklearn takes ~1 s to import
    return AgglomerativeClustering(n_clusters=2, metric="precomputed", linkage="complete").fit_predict(distance)


def split_node(cluster: int, new: int, centers: Stack, updates: torch.Tensor, halves: np.ndarray) -> dict:
    """One node of the parameter tree: the cluster that split, its new half's index, the model it had when it split
    and the mean unit update of each half's clients ([2, P]: the half that keeps `cluster`, then the new one)."""
    unit = torch.nn.functional.normalize(updates.double(), dim=1)
    moved = torch.as_tensor(halves == 1, device=unit.device)
    directions = torch.stack([unit[~moved].mean(0), unit[moved].mean(0)]).to(updates.dtype)
    return {"cluster": cluster, "new": new, "model": {k: v[cluster].clone() for k, v in centers.items()},
            "directions": directions}


class CFL(ClusteredAlgorithm):
    name = "cfl"
    state = ("centers", "assignment", "split_log", "tree")

    def __init__(self, eps1: Annotated[float, AtLeast(0)] = 0.4, eps2: Annotated[float, AtLeast(0)] = 1.6,
                 split_after_round: Annotated[int, AtLeast(0)] = 20, max_clusters: Annotated[int, AtLeast(0)] = 0,
                 client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0):
        self.eps1, self.eps2, self.split_after_round, self.max_clusters = eps1, eps2, split_after_round, max_clusters
        self.client_fraction = client_fraction
        self.client_dropout = client_dropout

    def setup(self, fed):
        self.centers = fed.init_models(1, "centers")
        self.assignment = torch.zeros(fed.num_clients, dtype=torch.long, device=fed.device)
        self.split_log: List[dict] = []
        # the parameter tree, one node per split in the order they happened: the cluster that split, the index of
        # its new half, the model it had then, and each half's mean unit update then (for newcomers)
        self.tree: List[dict] = []

    @property
    def num_clusters(self) -> int:   # grows with every split
        return next(iter(self.centers.values())).shape[0]

    def plan(self, t, fed):
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)   # the authors' CFL: every client, every round
        return RoundPlan(clients, rows_of(self.centers, self.assignment[clients]))

    @gathered
    def aggregation(self, t, plan, trained, fed):
        """Row r of `trained` and `plan.start` is client plan.clients[r]; `members` below are rows."""
        updates = flat_updates(trained, plan.start)
        sizes = fed.sizes[plan.clients].double()
        assigned = self.assignment[plan.clients]   # this round's clients' clusters (a copy)
        for c in range(self.num_clusters):
            members = torch.nonzero(assigned == c).squeeze(1)
            if len(members) <= 2:
                continue
            criterion, mean_norm, max_norm = split_criterion(updates[members], sizes[members], self.eps1, self.eps2)
            split = (criterion and t >= self.split_after_round
                     and not (self.max_clusters and self.num_clusters >= self.max_clusters))
            self.split_log.append({"round": t, "cluster": c, "clients": len(members), "mean_norm": mean_norm,
                                   "max_norm": max_norm, "split": split})
            if split:
                halves = bipartition(updates[members])
                new = self.num_clusters
                self.tree.append(split_node(c, new, self.centers, updates[members], halves))
                self.centers = {k: torch.cat([v, v[c:c + 1]]) for k, v in self.centers.items()}
                assigned[members[torch.as_tensor(halves == 1, device=fed.device)]] = new
        self.assignment = self.assignment.index_put((plan.clients,), assigned)   # absent clients keep theirs
        step = {k: v.clone() for k, v in self.centers.items()}
        for c in range(self.num_clusters):
            members = torch.nonzero(assigned == c).squeeze(1)
            if len(members):
                w = (sizes[members] / sizes[members].sum()).to(fed.dtype)
                for k in self.centers:
                    delta = trained[k][members] - plan.start[k][members]
                    step[k][c] = self.centers[k][c] + torch.einsum("m,m...->...", w, delta)
        self.centers = step

    def newcomer_models(self, fed, newcomers):
        """CFL's rule for a client that joins later (Sattler et al. 2021: it traverses the parameter tree from the
        root, each time moving to the branch whose clients' updates are more like its own): at each split of the
        cluster it is in, in the order the splits happened, the newcomer trains from the model that cluster had
        then, and takes the half whose clients' mean unit update (kept at the split) has the larger cosine
        similarity with its update; a tie keeps it in the half that kept the parent's index. Its model is its
        leaf cluster's."""
        N = newcomers.num_clients
        cluster = torch.zeros(N, dtype=torch.long, device=newcomers.device)
        for node in self.tree:
            at = torch.nonzero(cluster == node["cluster"]).squeeze(1)
            if not len(at):
                continue
            start = {k: v.to(newcomers.device).unsqueeze(0).expand(len(at), *v.shape).clone()
                     for k, v in node["model"].items()}
            update = flat_updates(newcomers.train(RoundPlan(at, start)), start)
            similarity = torch.nn.functional.normalize(update.double(), dim=1) @ node["directions"].double().to(update.device).T
            cluster[at[similarity[:, 1] > similarity[:, 0]]] = node["new"]
        return rows_of(self.centers, cluster.to(self.assignment.device))

    def artifacts(self):
        """cfl_splits.csv: update norms per cluster and round, to calibrate eps1/eps2."""
        import pandas as pd   # imported when used: the CLI's start-up (and its refusals) skip pandas
        return {"cfl_splits": pd.DataFrame(self.split_log)} if self.split_log else {}

