"""IFCA (Ghosh et al., NeurIPS 2020), model-averaging variant."""
import torch

from ..models.stacked import repeat
from .base import Algorithm, RoundPlan, weighted_mean_rows


class IFCA(Algorithm):
    """Each round every client takes the cluster model with the smallest mean loss on its
    training data (hard assignment); participating clients train from that model, and each
    cluster model becomes the n_k-weighted mean of its clients' results (unchanged if it got
    none). A client's local model is its assigned cluster model."""
    name = "ifca"

    def __init__(self, num_clusters: int = 2, client_fraction: float = 1.0):
        self.num_clusters, self.client_fraction = num_clusters, client_fraction

    def setup(self, fed):
        self.centers = fed.init_models(self.num_clusters, "centers")
        self.assignment = torch.zeros(fed.num_clients, dtype=torch.long, device=fed.device)

    def plan(self, t, fed):
        self.assignment = fed.mean_train_losses(self.centers).argmin(1)
        clients = fed.sample_clients(self.client_fraction, t)
        return RoundPlan(clients, repeat(self.centers, self.assignment[clients]))

    def aggregate(self, t, plan, trained, fed):
        groups = self.assignment[plan.clients]
        sizes = fed.sizes[plan.clients].double()
        for j in range(self.num_clusters):
            members = torch.nonzero(groups == j).squeeze(1)
            if len(members):
                row = weighted_mean_rows(trained, members, sizes[members])
                for k in self.centers:
                    self.centers[k][j] = row[k][0]

    def cluster_models(self):
        return self.centers

    def local_models(self, fed):
        return repeat(self.centers, self.assignment)

    def assignment_weights(self):
        return torch.nn.functional.one_hot(self.assignment, self.num_clusters).double()
