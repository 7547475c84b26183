"""The base of the hard-clustering methods (IFCA, CLoVE, CFL, FeSEM): one model per cluster,
one cluster per client. A subclass keeps only its assignment rule (and, where it differs, how a
cluster's model is updated)."""
import torch

from ..errors import ConfigError
from ..models.rows import rows_of
from ..models.stacked import Stack, repeat
from .base import Algorithm

INITS = ("independent", "identical")
FIRST_ROUNDS = ("evaluation", "random")


def check_choice(key: str, value, allowed) -> None:
    """A one-line error naming `algorithm.<key>` and the allowed values."""
    if value not in allowed:
        raise ConfigError(f"algorithm.{key}={value!r} is unknown; allowed: {list(allowed)}")


class ClusteredAlgorithm(Algorithm):
    """`centers` [K] cluster models; `assignment` [N] each client's cluster. A client's local
    model is its cluster's model; assignment weights are one-hot.

    `init` (CLoVE §5.2): the K models initialised independently, or K copies of one.
    Aggregation (default): each cluster model becomes the n_i-weighted mean of the results of
    its clients of the round (`merge` may turn that mean into the new model differently, e.g.
    CLoVE's Option II); a cluster without clients keeps its model."""
    state = ("centers", "assignment")
    abstract = True
    init = "independent"
    loss_vectors = None   # [M, K] the last round's client x model mean training losses, where the method has them

    def setup(self, fed):
        self.centers = fed.init_models(self.num_clusters, "centers")
        if self.init == "identical":
            self.centers = repeat(self.centers, torch.zeros(self.num_clusters, dtype=torch.long, device=fed.device))
        self.assignment = torch.zeros(fed.num_clients, dtype=torch.long, device=fed.device)

    def aggregation(self, t, plan, fed):
        """Each cluster's n_i-weighted mean of its clients' results, taken by `merge`; under privacy=client_dp,
        DP-FedAvg's private mean of their updates, one for each of the K models (RunView.mean_fold)."""
        return fed.mean_fold(t, plan, self.assignment[plan.clients], fed.sizes[plan.clients].double(), self.centers,
                             lambda means: self.merged(means, fed), self.client_dp_release(fed))

    def client_dp_refusal(self):
        return None

    def merged(self, means, fed) -> None:
        """Each cluster with clients this round takes `merge` of its clients' mean ({j: mean})."""
        for j, mean in means.items():
            row = self.merge(j, mean, fed)
            for k in row:
                self.centers[k][j] = row[k][0]

    def merge(self, j: int, mean: Stack, fed) -> Stack:
        """Cluster j's new model from the weighted mean of its clients' results (default: that mean)."""
        return mean

    def cluster_models(self):
        return self.centers

    def local_models(self, fed):
        return rows_of(self.centers, self.assignment)

    def assignment_weights(self):
        return torch.nn.functional.one_hot(self.assignment, self.num_clusters).double()

    def artifacts(self):
        if self.loss_vectors is None:
            return {}
        L = self.loss_vectors.detach().cpu().numpy()
        import pandas as pd   # imported when used: the CLI's start-up (and its refusals) skip pandas
        return {"loss_vectors": pd.DataFrame(L, columns=[f"model_{j}" for j in range(L.shape[1])])}
