"""FedAvg (McMahan et al. 2017) and FedProx (Li et al. 2020): one global model."""
from typing import Annotated

import torch

from ..local_training.forward import outputs_on_clients
from ..local_training.terms import Proximal
from ..rules import AtLeast, ClientDropout, ClientFraction
from .base import Algorithm, RoundPlan
from .model_tables import copies, for_clients


class FedAvg(Algorithm):
    """Participating clients train from the global model; the global model becomes their
    n_k-weighted average. Every client's local model is the global model."""
    state = ("global_model",)
    name = "fedavg"
    num_clusters = 1

    def __init__(self, client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0):
        self.client_fraction = client_fraction
        self.client_dropout = client_dropout

    def setup(self, fed):
        self.global_model = fed.init_models(1, "centers")

    def plan(self, t, fed):
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        return RoundPlan(clients, for_clients(self.global_model, clients))

    def aggregation(self, t, plan, fed):
        """The n_k-weighted mean of the round's models (McMahan et al. 2017, eq. 1); under privacy=client_dp,
        DP-FedAvg's private mean of their updates (RunView.mean_fold)."""
        return fed.mean_fold(t, plan, torch.zeros_like(plan.clients), fed.sizes[plan.clients].double(),
                             self.global_model, lambda means: setattr(self, "global_model", means[0]),
                             self.client_dp_release(fed))

    def client_dp_refusal(self):
        return None

    def cluster_models(self):
        return self.global_model

    def local_models(self, fed):
        return copies(self.global_model, fed.num_clients, fed.device)

    def predictors(self, fed, split, partner=None):
        """Every client predicts with the one global model: one pass of it over all clients' samples."""
        return {"local": outputs_on_clients(fed.model, self.global_model, split.x, split.mask)[0]}

    def newcomer_models(self, fed, newcomers):
        """A client that never trained gets the global model, as every client does."""
        return copies(self.global_model, newcomers.num_clients, fed.device)


class FedProx(FedAvg):
    """FedAvg with the proximal term mu/2 ||w - w_global||^2 in every local objective."""
    name = "fedprox"

    def __init__(self, mu: Annotated[float, AtLeast(0)] = 0.01,
                 client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0):
        super().__init__(client_fraction, client_dropout)
        self.mu = mu

    def plan(self, t, fed):
        plan = super().plan(t, fed)
        plan.terms.append(Proximal(self.global_model, torch.full((len(plan.clients), 1), self.mu, dtype=fed.dtype,
                                                                 device=fed.device)))
        return plan
