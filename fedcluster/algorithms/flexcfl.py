"""FlexCFL (Duan et al., TPDS 2022): groups from the decomposed cosine similarity of pre-training
updates, cold start of new clients, migration of clients whose data shift, optional inter-group
aggregation."""
from typing import Annotated

import numpy as np
import torch

from ..models.rows import rows_of
from ..models.stacked import Stack, repeat
from ..rules import AtLeast, ClientDropout, ClientFraction
from .base import RoundPlan
from .clustered import ClusteredAlgorithm
from .fold import aggregate_at_once, gathered
from .kmeans import flatten, kmeans_plus_plus, weighted_kmeans


def decomposed_cosine(updates: torch.Tensor, K: int) -> torch.Tensor:
    """[n, K] EDC features: the cosine of each client's update (rows of `updates`, [n, P]) with
    each of the K leading singular directions of the update matrix (truncated SVD, uncentred; the
    authors' fedgroup.py with sklearn's TruncatedSVD on the transposed matrix gives the same
    directions up to sign, and a sign flip of a direction reflects every client alike)."""
    u = updates.double()
    directions = torch.linalg.svd(u, full_matrices=False).Vh[:K]                  # [K, P]
    return torch.nn.functional.normalize(u, dim=1) @ torch.nn.functional.normalize(directions, dim=1).T


def cosine_dissimilarity(update: torch.Tensor, group_updates: torch.Tensor) -> torch.Tensor:
    """[K] (1 - cos(update, g)) / 2 for each group's mean pre-training update (cold start)."""
    cos = torch.nn.functional.cosine_similarity(update.double()[None], group_updates.double(), dim=1)
    return (1 - cos) / 2


def shifted(old_counts: np.ndarray, new_counts: np.ndarray, n: int, num_classes: int) -> bool:
    """Migration test of the authors' code (fedgroup.py, client.py): the Wasserstein distance
    between the recorded and the current label-count vectors, read as samples of values (scipy's
    wasserstein_distance on the two count vectors, as the code does), exceeds 0.2 n / C."""
    from scipy.stats import wasserstein_distance
    return bool(wasserstein_distance(old_counts, new_counts) > 0.2 * n / num_classes)


def inter_group(centers: Stack, eta: float) -> Stack:
    """Inter-group aggregation (the authors' groupbase.py): each group model becomes
    (theta_i + sum_{j != i} eta / ||theta_j|| theta_j) / (1 + sum_{j != i} eta / ||theta_j||)."""
    flat = flatten(centers).double()
    coef = eta / flat.norm(dim=1).clamp_min(1e-12)                                  # [K]
    W = coef[None, :].repeat(len(coef), 1)
    W.fill_diagonal_(1.0)
    W = W / W.sum(1, keepdim=True)
    return {k: torch.einsum("ij,j...->i...", W.to(v.dtype), v) for k, v in centers.items()}


class FlexCFL(ClusteredAlgorithm):
    """FlexCFL.

    Round 1 is the pre-training: every client trains from the common initial model w0 (the
    authors' clients run 50 mini-batch steps of batch 10 = 500 samples, one epoch of a CLoVE
    client; here the run's local training, `train.*`). Of a random `pretrain_scale` * K of them
    (all when N is smaller), the updates dw = w - w0 are embedded by `decomposed_cosine` and
    grouped by k-means (Euclidean on those features: EDC); a group's model is the plain mean of its
    members' pre-trained models and its `opt_update` their mean update. The other clients join by
    cold start: the group of smallest `cosine_dissimilarity` of their update to opt_update.
    Later rounds: each group trains by FedAvg (n-weighted), `client_fraction` of the clients per
    round; with `group_agg_lr` (eta) > 0 the groups are then pulled together (`inter_group`).

    Migration: every round each client's current label counts are compared with those recorded
    when it joined (`shifted`); a shifted client leaves its group and cold-starts again: it trains
    from w0 that round and joins the group its update is closest to (its result does not enter a
    group model that round). fedcluster's partitions do not change during a run, so migration only
    fires when client data change (the test changes them).

    Defaults from the authors' trainer_utils.py (morningD/FlexCFL): pretrain_scale 20, eta 0
    (their default; the README suggests 0.1), k-means 20 iterations. CLoVE gives no FlexCFL
    settings beyond the shared ones (Adam 1e-3, batch 100, 1 epoch, 100 rounds)."""
    state = ("centers", "assignment", "initial", "label_counts", "opt_updates")
    name = "flexcfl"
    init = "identical"

    def __init__(self, num_clusters: Annotated[int, AtLeast(1)] = 2, pretrain_scale: Annotated[int, AtLeast(1)] = 20,
                 group_agg_lr: Annotated[float, AtLeast(0)] = 0.0, client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0,
                 kmeans_iters: Annotated[int, AtLeast(1)] = 20, migration: bool = True):
        self.num_clusters, self.pretrain_scale, self.group_agg_lr = num_clusters, pretrain_scale, group_agg_lr
        self.client_fraction, self.kmeans_iters, self.migration = client_fraction, kmeans_iters, migration
        self.client_dropout = client_dropout

    def setup(self, fed):
        super().setup(fed)   # identical: K copies of w0
        self.initial = {k: v[:1].clone() for k, v in self.centers.items()}
        self.assignment = torch.full((fed.num_clients,), -1, dtype=torch.long, device=fed.device)
        self.label_counts = self.current_counts(fed)
        self.opt_updates = None

    @property
    def grouped(self) -> bool:
        return self.opt_updates is not None

    def current_counts(self, fed) -> torch.Tensor:
        """[N, C] each client's training label counts (zeros for regression tasks)."""
        tr, C = fed.data.train, max(fed.data.num_classes, 1)
        counts = torch.zeros(fed.num_clients, C, dtype=torch.long)
        if fed.data.task == "classification":
            for k in range(fed.num_clients):
                counts[k] = torch.bincount(tr.y[k, :int(tr.n[k])].long().cpu(), minlength=C)[:C]
        return counts

    def plan(self, t, fed):
        if self.grouped and self.migration:
            now = self.current_counts(fed)
            for k in range(fed.num_clients):
                if self.assignment[k] >= 0 and shifted(self.label_counts[k].numpy(), now[k].numpy(),
                                                       int(now[k].sum()), now.shape[1]):
                    self.assignment[k] = -1
            self.label_counts = now
        if not self.grouped:
            clients = torch.arange(fed.num_clients, device=fed.device)
        else:   # the sampled clients, and every client without a group (it cold-starts now)
            waiting = torch.nonzero(self.assignment < 0).squeeze(1)
            clients = torch.unique(torch.cat([fed.sample_clients(self.client_fraction, t, self.client_dropout), waiting]))
        groups = self.assignment[clients]
        start = repeat(self.centers, groups.clamp_min(0))
        cold = groups < 0     # pre-training or cold start: from w0
        for k in start:
            start[k][cold] = self.initial[k][0]
        return RoundPlan(clients, start)

    @gathered
    def aggregation(self, t, plan, trained, fed):
        rows = self.assignment[plan.clients]
        cold, warm = torch.nonzero(rows < 0).squeeze(1), torch.nonzero(rows >= 0).squeeze(1)
        if len(warm):   # FedAvg within each group, of the clients that trained from their group's model
            sub = RoundPlan(plan.clients[warm], {k: v[warm] for k, v in plan.start.items()})
            aggregate_at_once(super().aggregation(t, sub, fed), {k: v[warm] for k, v in trained.items()})
            if self.group_agg_lr > 0:
                self.centers = inter_group(self.centers, self.group_agg_lr)
        if len(cold):   # pre-training (round 1) or cold start: join by the update from w0
            updates = flatten(trained)[cold] - flatten(self.initial)
            if not self.grouped:
                self.form_groups(plan.clients[cold], updates, {k: v[cold] for k, v in trained.items()}, fed)
            else:
                for p, client in enumerate(plan.clients[cold].tolist()):
                    self.assignment[client] = int(cosine_dissimilarity(updates[p], self.opt_updates).argmin())

    def form_groups(self, clients, updates, models, fed):
        """Pre-training: EDC + k-means on a random pretrain_scale * K of the clients; the rest by cold start."""
        K, n = self.num_clusters, len(clients)
        g = fed.generator("flexcfl-pretrain")
        chosen = torch.randperm(n, generator=g)[:min(self.pretrain_scale * K, n)].to(clients.device)
        features = decomposed_cosine(updates[chosen], K)
        ones = torch.ones(len(chosen), dtype=torch.float64, device=features.device)
        seeds = kmeans_plus_plus(features, min(K, len(chosen)), fed.generator("flexcfl-kmeans"))
        labels, _ = weighted_kmeans(features, ones, seeds, self.kmeans_iters)
        self.opt_updates = torch.zeros(K, updates.shape[1], dtype=torch.float64, device=updates.device)
        for j in range(K):
            members = chosen[labels == j]
            if not len(members):
                continue
            self.opt_updates[j] = updates[members].double().mean(0)
            for k in self.centers:
                self.centers[k][j] = models[k][members].mean(0)
        self.assignment[clients[chosen]] = labels.to(self.assignment.device)
        rest = torch.ones(n, dtype=torch.bool, device=clients.device)
        rest[chosen] = False
        for i in torch.nonzero(rest).squeeze(1).tolist():
            self.assignment[clients[i]] = int(cosine_dissimilarity(updates[i], self.opt_updates).argmin())
        self.label_counts = self.current_counts(fed)

    def newcomer_models(self, fed, newcomers):
        """FlexCFL's cold start (Duan et al., §'client cold start', as its aggregation runs it for a client without a
        group): the newcomer trains from the initial model w0 and joins the group whose mean pre-training update its
        own update w - w0 is least dissimilar to ((1 - cos) / 2); its model is that group's. Before the groups form,
        every client holds w0's copy, and so does a newcomer."""
        N = newcomers.num_clients
        start = repeat(self.initial, torch.zeros(N, dtype=torch.long, device=newcomers.device))
        if not self.grouped:
            return start
        trained = newcomers.train(RoundPlan(torch.arange(N, device=newcomers.device), start))
        updates = flatten(trained) - flatten(self.initial)
        groups = torch.stack([cosine_dissimilarity(u, self.opt_updates).argmin() for u in updates])
        return rows_of(self.centers, groups.to(self.assignment.device))

    def assignment_weights(self):
        if not self.grouped:
            return None
        return super().assignment_weights()
