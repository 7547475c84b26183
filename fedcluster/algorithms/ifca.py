"""IFCA (Ghosh et al., NeurIPS 2020), model-averaging variant."""
import torch

from ..engine.evaluate import losses_on_clients, outputs_paired
from ..errors import ConfigError
from ..models.stacked import Stack, repeat
from .base import Algorithm, RoundPlan, random_assignment, weighted_mean_rows

UPDATES = ("mean", "eq6")
EVAL_ASSIGNMENTS = ("evaluated_data", "training")


def global_share_update(centers: Stack, trained: Stack, groups: torch.Tensor, sizes: torch.Tensor,
                        total: float) -> Stack:
    """Fed-CAM eq. (6): Theta_k <- (1 - sum_{i in C_k} n_i/n) Theta_k + sum_{i in C_k} n_i/n theta_i,
    with n the data size of all clients: a cluster model moves by its share of all data."""
    K = next(iter(centers.values())).shape[0]
    w = torch.zeros(len(groups), K, dtype=torch.float64, device=groups.device)
    w[torch.arange(len(groups), device=groups.device), groups] = sizes.double() / total     # [M, K]
    keep = 1 - w.sum(0)                                                                      # [K]
    out = {}
    for k, c in centers.items():
        mixed = torch.einsum("mk,m...->k...", w.to(c.dtype), trained[k])
        out[k] = keep.to(c.dtype).view(-1, *([1] * (c.dim() - 1))) * c + mixed
    return out


class IFCA(Algorithm):
    """Each round every client takes the cluster model with the smallest mean loss on its
    training data (hard assignment); participating clients train from that model. Cluster
    update `mean`: each cluster model becomes the n_k-weighted mean of its clients' results
    (unchanged if it got none), as in IFCA; `eq6`: Fed-CAM's eq. (6), used by IFCA-CAM.
    A client's local model is its assigned cluster model.

    `eval_assignment`: which cluster model scores a client on the data being evaluated.
    `evaluated_data` (default, as IFCA's code: jichan3751/ifca, get_inference_stats in
    mnist/train_cluster_mnist.py and its siblings, which take on each machine's test data, and
    again on its training data, the model with the smallest loss on that data): the client's
    lowest-mean-loss model on that split, with the current models; `training`: the model it
    was assigned from its training losses at the start of the round (the one it trained).
    Under CAM the pick is by the loss of the additive model h + f (`local_outputs_beside`)."""
    name = "ifca"

    def __init__(self, num_clusters: int = 2, client_fraction: float = 1.0, update: str = "mean",
                 init: str = "independent", first_round: str = "evaluation", eval_assignment: str = "evaluated_data"):
        if update not in UPDATES:
            raise ConfigError(f"algorithm.update={update!r} is unknown; allowed: {list(UPDATES)}")
        if eval_assignment not in EVAL_ASSIGNMENTS:
            raise ConfigError(f"algorithm.eval_assignment={eval_assignment!r} is unknown; "
                              f"allowed: {list(EVAL_ASSIGNMENTS)}")
        if init not in ("independent", "identical") or first_round not in ("evaluation", "random"):
            raise ConfigError(f"algorithm.init={init!r} / first_round={first_round!r}: allowed init in "
                              "['independent', 'identical'], first_round in ['evaluation', 'random']")
        self.num_clusters, self.client_fraction, self.update = num_clusters, client_fraction, update
        self.init, self.first_round, self.eval_assignment = init, first_round, eval_assignment

    def setup(self, fed):
        """init (CLoVE §5.2): K independently initialised models, or K copies of one."""
        self.centers = fed.init_models(self.num_clusters, "centers")
        if self.init == "identical":
            self.centers = repeat(self.centers, torch.zeros(self.num_clusters, dtype=torch.long, device=fed.device))
        self.assignment = torch.zeros(fed.num_clients, dtype=torch.long, device=fed.device)

    def plan(self, t, fed):
        self.loss_vectors = fed.mean_train_losses(self.centers)      # [N, K], kept for the loss heatmap
        self.assignment = self.loss_vectors.argmin(1)
        if t == 0 and self.first_round == "random":   # CLoVE §5.2 'first:r': every model gets a client
            g = fed.generator("ifca-first-round")
            self.assignment = random_assignment(fed.num_clients, self.num_clusters, g).to(fed.device)
        clients = fed.sample_clients(self.client_fraction, t)
        return RoundPlan(clients, repeat(self.centers, self.assignment[clients]))

    def aggregate(self, t, plan, trained, fed):
        groups = self.assignment[plan.clients]
        sizes = fed.sizes[plan.clients].double()
        if self.update == "eq6":
            self.centers = global_share_update(self.centers, trained, groups, sizes, float(fed.sizes.sum()))
            return
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

    def models_on(self, fed, split, partner=None) -> torch.Tensor:
        """[N] each client's cluster model with the smallest mean loss on its samples of `split`
        (of partner + model where `partner` logits are given); 0 for a client without samples."""
        losses = losses_on_clients(fed.model, fed.data.task, self.centers, split.x, split.y, split.mask, partner)
        mean = losses.masked_fill(~split.mask.unsqueeze(0), 0.0).sum(2) / split.n.clamp_min(1).to(losses.dtype)
        return mean.argmin(0)

    def local_outputs_beside(self, fed, split, batched, partner):
        if self.eval_assignment == "training":
            return super().local_outputs(fed, split, batched)
        picked = repeat(self.centers, self.models_on(fed, split, partner))
        return outputs_paired(fed.model, picked, split.x, split.n, batched)

    def local_outputs(self, fed, split, batched):
        return self.local_outputs_beside(fed, split, batched, None)

    def assignment_weights(self):
        return torch.nn.functional.one_hot(self.assignment, self.num_clusters).double()
