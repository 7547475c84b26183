"""FeSEM (Xie, Long et al., 'Multi-center federated learning', 2021)."""
from typing import Annotated, Optional

import torch

from ..models.rows import rows_of, take_rows
from ..local_training.terms import Proximal
from ..rules import AtLeast, ClientDropout, ClientFraction, Count, OneOf
from .base import Phase, RoundPlan, weighted_mean_rows
from .clustered import ClusteredAlgorithm
from .model_tables import keep_trained, personal_models
from .fold import gathered
from .kmeans import cluster_means, flatten, kmeans_plus_plus, weighted_kmeans
from .work import RoundWork

DISTANCES = ("all", "fc")


def fc_parameter_names(model: torch.nn.Module):
    """Names of the parameters of the fully connected (nn.Linear) layers."""
    return [f"{mod_name}.{p}" if mod_name else p
            for mod_name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)
            for p, _ in mod.named_parameters(recurse=False)]


class FeSEM(ClusteredAlgorithm):
    """K-means over client models. Each round a client starts from its cluster's model
    Theta_c(i) (Fed-CAM Alg. 1 line 4) and trains loss + lam/2 ||theta - Theta_c(i)||^2
    (eq. 13, the K-means regulariser of eq. 12); the server then runs weighted K-means on the
    trained models, starting from the current centers: c(i) = nearest center, Theta_k = the
    n_i-weighted centroid of its clients (eq. 11), iterated to convergence (<= kmeans_iters).

    Start-up: for `local_rounds` rounds every client trains its own model (from one common
    initialisation, no regulariser); after the last of them the first K centers come from
    k-means++ seeding on those models. Each start-up round is the run's local budget
    (train.steps / train.epochs), or `startup_epochs` passes over the client's data where set.
    Plain FeSEM: 1 round of the run's budget. FeSEM-CAM (conf/algorithm/fesem_cam.yaml): Fed-CAM
    Alg. 1 warm-up (2), "beta epochs of local training only", and §3.3, "run a few local
    training epochs and extract warm Theta_1:K by clustering the lightly-trained local models":
    one round of `startup_epochs` epochs. Its matched control is plain FeSEM with the same
    start-up (`algorithm=fesem algorithm.startup_epochs=E`).

    `distance_on`: 'all' parameters, or 'fc' = the fully connected layers only (Fed-CAM §5
    for FeSEM-CAM). eq. 13 also scales the data gradient by n_i/n; we leave it out, as it
    would make the step size depend on the number of clients (plain SGD on the objective).

    `client_fraction` < 1: after the start-up (every client trains, to seed the clusters), each round
    samples that share of the clients; the K-means step runs over the sampled clients' trained models
    only, from the current centers, and a cluster's center is the weighted centroid of its sampled
    members. An absent client keeps its cluster, and a cluster without a sampled member keeps its center,
    as in the FeSEM of FlexCFL's repository (morningD/FlexCFL at 968b5fa, flearn/trainer/fesem.py and
    groupbase.py: clients_per_round sampled, only they are reassigned and averaged) and FL-bench's
    clustered methods; FlexCFL's FeSEM reassigns a sampled client before it trains, by its last local
    model, where ours, as with full participation, assigns after training (eq. 11 on the trained models)."""
    state = ("centers", "assignment", "local")
    name = "fesem"

    def __init__(self, num_clusters: Annotated[int, AtLeast(1)] = 2, lam: Annotated[float, AtLeast(0)] = 0.01,
                 distance_on: Annotated[str, OneOf(DISTANCES)] = "all", kmeans_iters: Annotated[int, AtLeast(1)] = 10,
                 local_rounds: Annotated[int, Count] = 1,
                 startup_epochs: Annotated[Optional[int], AtLeast(1)] = None, client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0):
        self.num_clusters, self.lam, self.distance_on = num_clusters, lam, distance_on
        self.kmeans_iters, self.local_rounds, self.startup_epochs = kmeans_iters, local_rounds, startup_epochs
        self.client_fraction = client_fraction
        self.client_dropout = client_dropout

    def setup(self, fed):
        self.local = personal_models(fed)
        self.assignment = torch.zeros(fed.num_clients, dtype=torch.long, device=fed.device)
        self.centers = None
        self._keys = fc_parameter_names(fed.model) if self.distance_on == "fc" else None

    def round_work(self, t, num_clients):
        """Before the first clustering (the first local_rounds rounds) every client trains its own model, for
        startup_epochs passes where set; then the sampled clients train from their centers (the E-step's
        distances are between parameters: no pass over data)."""
        if t < self.local_rounds:
            return RoundWork(num_clients, epochs=self.startup_epochs)
        return RoundWork(self.training_rows(num_clients))

    @property
    def clustered(self) -> bool:
        return self.centers is not None

    def plan(self, t, fed):
        clients = torch.arange(fed.num_clients, device=fed.device)
        if not self.clustered:
            if self.startup_epochs is None:
                return RoundPlan(clients, rows_of(self.local, clients))
            return RoundPlan(clients, rows_of(self.local, clients),
                             phases=[Phase(tuple(self.local), epochs=self.startup_epochs)])
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        assigned = self.assignment[clients]
        coeffs = self.lam * torch.nn.functional.one_hot(assigned, self.num_clusters).to(fed.dtype)
        return RoundPlan(clients, rows_of(self.centers, assigned), [Proximal(self.centers, coeffs)])

    @gathered
    def aggregation(self, t, plan, trained, fed):
        keep_trained(self.local, plan.clients, trained)
        if not self.clustered and t + 1 < self.local_rounds:
            return
        part = plan.clients if self.clustered else torch.arange(fed.num_clients, device=fed.device)
        local = self.local if len(part) == fed.num_clients else take_rows(self.local, part)   # this round's clients
        points = flatten(local, self._keys)
        weights = fed.sizes[part].double()
        if self.clustered:
            init = flatten(self.centers, self._keys)
        else:
            init = kmeans_plus_plus(points, self.num_clusters, fed.generator("kmeans++"))
        assigned, _ = weighted_kmeans(points, weights, init, self.kmeans_iters)
        self.assignment = self.assignment.index_put((part,), assigned)   # absent clients keep their cluster
        previous = self.centers if self.clustered else {k: v[:1].expand(self.num_clusters, *v.shape[1:])
                                                         for k, v in self.local.items()}
        self.centers = {k: cluster_means(v.flatten(1), weights, assigned, previous[k].flatten(1))
                        .view(self.num_clusters, *v.shape[1:]) for k, v in local.items()}

    def newcomer_models(self, fed, newcomers):
        """FeSEM's papers give no rule for a client that joins after training. Ours is its E-step (eq. 11: the
        nearest center, by the distance over `distance_on` parameters) on the newcomer's own model, trained locally
        as a start-up client's is (the run's local budget, or `startup_epochs` passes) from the one start that favours
        no cluster: the centers' mean weighted by their clients' samples. Before the first clustering a newcomer is
        served as the trained clients are, by its own model, trained so from the common initialisation."""
        N = newcomers.num_clients
        clients = torch.arange(N, device=newcomers.device)
        if self.clustered:
            mean = weighted_mean_rows(self.centers, self.assignment, fed.sizes.double())   # sum_i n_i c_k(i) / n
            start = {k: v.expand(N, *v.shape[1:]).clone() for k, v in mean.items()}
        else:
            start = personal_models(newcomers)
        phases = [] if self.startup_epochs is None else [Phase(tuple(start), epochs=self.startup_epochs)]
        own = newcomers.train(RoundPlan(clients, start, phases=phases))
        if not self.clustered:
            return own
        nearest = torch.cdist(flatten(own, self._keys).double(), flatten(self.centers, self._keys).double()).argmin(1)
        return rows_of(self.centers, nearest)

    def local_models(self, fed):
        return super().local_models(fed) if self.clustered else self.local

    def assignment_weights(self):
        return super().assignment_weights() if self.clustered else None

