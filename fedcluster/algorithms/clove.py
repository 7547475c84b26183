"""CLoVE (Clustering of Loss Vector Embeddings), CLoVE Algorithm 1.

Each round the participating clients report their loss vector (mean training loss of each
of the K models, lines 5-7); the server clusters the vectors into K groups (line 9) and maps
groups to models by a minimum-cost bipartite matching whose cost is the groups' summed
loss on each model (line 10, Hungarian method; with the square-root embedding the cost sums
square roots, as in the authors' code). Each client then trains its group's model
and each model becomes the n_i-weighted average of its clients' results (Option I, lines
11-15).

Option II (gradient averaging, lines 12 and 15), `averaging=gradient`, as the authors' code
does it (utils/algorithm_utils.py, averaging_mode='gradient_averaging'; utils/learning_utils.py,
compute_gradient): each client sends the gradient of its mean training loss over all its
samples at its assigned model (one full batch, model in eval mode, no local step); the server
takes the n_i-weighted mean gradient of each model's clients and applies one step of a fresh
optimizer of the clients' kind and learning rate (their get_custom_optimizer: Adam or SGD,
lr = local_learning_rate, new each round, so Adam's first, bias-corrected step is about
lr * sign(g)). `server_optimizer` / `server_lr` default to train.optimizer / train.lr
(conf/algorithm/clove.yaml). With server_optimizer=sgd this is line 15 exactly. (Option I
with one plain SGD step, train.optimizer=sgd train.steps=1, gives the same update on the
mini-batch: tests/unit/test_clove.py checks that identity.)

Options from §5.2-5.3: models initialised independently or identical; first-round
assignment by evaluation (as every round) or at random (every model at least one client, as
the authors' code ensures); k-means or agglomerative
clustering; loss or square-root loss embeddings; no matching (group k, ordered by its
smallest client id, gets model k)."""
from dataclasses import dataclass
from typing import Annotated, Optional

import numpy as np
import torch

from ..models.rows import rows_of
from ..local_training.optim import OPTIMIZERS, build_optimizer
from ..rng import derived_seed
from ..rules import AtLeast, ClientDropout, ClientFraction, Help, OneOf, Positive
from .base import RoundPlan, random_assignment
from .clustered import ClusteredAlgorithm
from .wire import cluster_choice_messages, exchange
from .work import RoundWork

CHOICES = {"clustering": ("kmeans", "agglomerative"), "embedding": ("loss", "sqrt_loss"),
           "matching": ("hungarian", "none"), "init": ("independent", "identical"),
           "first_round": ("evaluation", "random"), "averaging": ("model", "gradient")}


def cluster_vectors(vectors: np.ndarray, k: int, method: str, seed: int) -> np.ndarray:
    """Group the rows of `vectors` [M, K] into min(k, M) clusters; labels [M]."""
    k = min(k, len(vectors))
    if k <= 1:
        return np.zeros(len(vectors), dtype=np.int64)
    if method == "kmeans":
        from sklearn.cluster import KMeans   # imported when used: sklearn takes ~1 s to import
        return KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(vectors).astype(np.int64)
    from sklearn.cluster import AgglomerativeClustering
    return AgglomerativeClustering(n_clusters=k).fit_predict(vectors).astype(np.int64)


def match_groups_to_models(groups: np.ndarray, losses: np.ndarray, matching: Annotated[str, OneOf(CHOICES["matching"])] = "hungarian") -> np.ndarray:
    """Model index of each group label. `hungarian`: the minimum-cost bipartite matching of
    groups to models, cost[g, j] = sum of the embedded losses (the rows that were clustered:
    losses, or their square roots) of group g's clients on model j.
    `none`: groups ordered by their smallest client index get models 0, 1, ... (§5.3)."""
    labels = np.unique(groups)
    if matching == "none":
        order = sorted(labels, key=lambda g: int(np.nonzero(groups == g)[0].min()))
        mapping = {int(g): j for j, g in enumerate(order)}
    else:
        cost = np.stack([losses[groups == g].sum(0) for g in labels])   # [G, K]
        from scipy.optimize import linear_sum_assignment
        rows, cols = linear_sum_assignment(cost)
        mapping = {int(labels[r]): int(c) for r, c in zip(rows, cols)}
    out = np.zeros(int(groups.max()) + 1, dtype=np.int64)
    for g, j in mapping.items():
        out[g] = j
    return out


class CLoVE(ClusteredAlgorithm):
    name = "clove"
    state = ("centers", "assignment", "loss_vectors")

    @dataclass(frozen=True)
    class Settings:
        num_clusters: Annotated[int, AtLeast(1), Help("K, the number of cluster models")] = 2
        client_fraction: ClientFraction = 1.0
        client_dropout: ClientDropout = 0.0
        clustering: Annotated[str, OneOf(CHOICES["clustering"]), Help("how the loss vectors are grouped (line 9)")] = "kmeans"
        embedding: Annotated[str, OneOf(CHOICES["embedding"]), Help("a client's loss vector, or its square roots")] = "loss"
        matching: Annotated[str, OneOf(CHOICES["matching"]), Help("how groups get models (line 10)")] = "hungarian"
        init: Annotated[str, OneOf(CHOICES["init"]), Help("the K models start independent or identical")] = "independent"
        first_round: Annotated[str, OneOf(CHOICES["first_round"]),
                               Help("round 1's assignment: by evaluation, as every round, or at random")] = "evaluation"
        averaging: Annotated[str, OneOf(CHOICES["averaging"]),
                             Help("Option I (models) or Option II (gradients, lines 12 and 15)")] = "model"
        server_optimizer: Annotated[str, OneOf(sorted(OPTIMIZERS)), Help("Option II's server step")] = "adam"
        server_lr: Annotated[float, Positive, Help("Option II's server learning rate")] = 1e-3

    def __init__(self, *args, **given):
        s = self.Settings(*args, **given)
        self.num_clusters, self.client_fraction, self.client_dropout = s.num_clusters, s.client_fraction, s.client_dropout
        self.clustering, self.embedding, self.matching = s.clustering, s.embedding, s.matching
        self.init, self.first_round, self.averaging = s.init, s.first_round, s.averaging
        # Option II's server step: a plain optimizer (no momentum, no weight decay), as the authors'
        # get_custom_optimizer builds it; `_` keeps it out of the checkpointed state.
        self._server_optimizer = build_optimizer(s.server_optimizer, lr=s.server_lr, momentum=0.0, weight_decay=0.0)

    def setup(self, fed):
        super().setup(fed)
        self.loss_vectors: Optional[torch.Tensor] = None

    def round_work(self, t, num_clients):
        """Every round the K models' losses on every client's training data (its loss vector, lines 5-7; the
        run scores all clients, the sampled ones' vectors are used), then each sampled client's solver (Option I)
        or full-batch gradient (Option II: one forward and backward per sample, as one epoch)."""
        return RoundWork(self.training_rows(num_clients), scored=self.num_clusters)

    def assign(self, t, fed, clients) -> torch.Tensor:
        """Lines 5-10: loss vectors -> groups -> models."""
        losses = fed.mean_train_losses(self.centers)[clients]                 # [M, K]
        self.loss_vectors = losses
        if t == 0 and self.first_round == "random":   # every model gets a client (random_assignment)
            g = fed.generator("clove-first-round")
            return random_assignment(len(clients), self.num_clusters, g).to(fed.device)
        L = losses.double().cpu().numpy()
        vectors = np.sqrt(np.maximum(L, 0)) if self.embedding == "sqrt_loss" else L
        seed = derived_seed(fed.seed, "clove-kmeans", t) % 2 ** 32
        groups = cluster_vectors(vectors, self.num_clusters, self.clustering, seed)
        # The matching cost is summed over the same vectors that were clustered (square roots
        # under sqrt_loss), as the authors' code does: its match_clusters_to_models receives the
        # transformed loss vectors (utils/algorithm_utils.py, clustered_federated_training_function).
        model_of_group = match_groups_to_models(groups, vectors, self.matching)
        return torch.as_tensor(model_of_group[groups], device=fed.device)

    def messages(self, t, plan, fed):
        """Algorithm 1: the server sends the K models to each participating client (line 5), which sends back its
        loss vector, K losses (lines 6-7); the server tells it the model its group was matched to (line 10), and
        the client sends back the model it trained from it (Option I, line 13) or its gradient there (Option II,
        line 12). A random first round sends each client only the model it drew."""
        if t == 0 and self.first_round == "random":
            return exchange(plan)
        return cluster_choice_messages(plan, self.num_clusters, estimates="loss vector")

    def embed(self, losses: torch.Tensor) -> torch.Tensor:
        """A client's embedding (§4): its loss vector, or the vector's square roots."""
        return losses.clamp_min(0).sqrt() if self.embedding == "sqrt_loss" else losses

    def newcomer_models(self, fed, newcomers):
        """CLoVE's rule from a newcomer's embedding: its loss vector over the K models (lines 5-7) joins the
        group whose trained clients' embeddings, under the same models, are nearest on average (the group's
        centroid, as k-means of line 9 would place it), and takes that group's model (line 10's matching, kept
        in `assignment`). A model with no trained client in the final clustering is no group."""
        seen = self.embed(fed.mean_train_losses(self.centers)).double()       # [N, K]
        new = self.embed(newcomers.mean_train_losses(self.centers)).double()  # [N', K]
        models = torch.unique(self.assignment)
        centroids = torch.stack([seen[self.assignment == j].mean(0) for j in models])   # [G, K]
        nearest = torch.cdist(new, centroids).argmin(1)
        return rows_of(self.centers, models[nearest])

    def plan(self, t, fed):
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        self.assignment[clients] = self.assign(t, fed, clients)
        local = "gradient" if self.averaging == "gradient" else "train"
        return RoundPlan(clients, rows_of(self.centers, self.assignment[clients]), local=local)

    def merge(self, j, mean, fed):
        """Line 15. Option I: the n_i-weighted mean of the trained models. Option II: `mean` is
        the clients' n_i-weighted mean gradient; one server-optimizer step on it, from fresh state."""
        if self.averaging != "gradient":
            return mean
        opt = self._server_optimizer
        theta = {k: self.centers[k][j: j + 1] for k in mean}
        ones = torch.ones(1, dtype=torch.bool, device=fed.device)
        return opt.update(theta, mean, opt.init(theta), ones)[0]
