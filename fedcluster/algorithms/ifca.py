"""IFCA (Ghosh et al., NeurIPS 2020), model-averaging variant."""
from typing import Annotated

import torch

from ..local_training.forward import losses_on_clients, outputs_paired
from ..models.rows import rows_of
from ..models.stacked import Stack
from ..rules import AtLeast, ClientDropout, ClientFraction, OneOf
from .base import RoundPlan, random_assignment
from .clustered import FIRST_ROUNDS, INITS, ClusteredAlgorithm
from .fold import MixedSums
from .wire import cluster_choice_messages, exchange
from .work import RoundWork

UPDATES = ("mean", "eq6")


def global_share_weights(centers: Stack, groups: torch.Tensor, sizes: torch.Tensor, total: float) -> torch.Tensor:
    """[M, K] n_i / n in row i's cluster column (Fed-CAM eq. 6's shares)."""
    K = next(iter(centers.values())).shape[0]
    w = torch.zeros(len(groups), K, dtype=torch.float64, device=groups.device)
    w[torch.arange(len(groups), device=groups.device), groups] = sizes.double() / total
    return w


class IFCA(ClusteredAlgorithm):
    """Each round every client takes the cluster model with the smallest mean loss on its
    training data (hard assignment); participating clients train from that model. Cluster
    update `mean`: each cluster model becomes the n_k-weighted mean of its clients' results
    (unchanged if it got none), as in IFCA; `eq6`: Fed-CAM's eq. (6), a sensitivity option for
    IFCA and IFCA-CAM alike (conf/algorithm/ifca_cam.yaml).

    Scoring: a client is scored with the model it was assigned from its training losses at the
    start of the round (the one it trained), on every split: no label of the data being scored
    chooses the model. IFCA's code (jichan3751/ifca, get_inference_stats in
    mnist/train_cluster_mnist.py and its siblings) instead re-picks, on each machine's test data,
    the model with the smallest loss on that data, which reads the test labels. That rule is
    `report_label_pick: true`: it is scored as well, but only as the separate predictor
    `local:label_pick` (its own labelled column in the reports), never as the method's score.
    Under CAM its pick is by the loss of the additive model h + f (`predictors`' partner)."""
    state = ("centers", "assignment", "loss_vectors")
    name = "ifca"

    def __init__(self, num_clusters: Annotated[int, AtLeast(1)] = 2,
                 client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0,
                 update: Annotated[str, OneOf(UPDATES)] = "mean", init: Annotated[str, OneOf(INITS)] = "independent",
                 first_round: Annotated[str, OneOf(FIRST_ROUNDS)] = "evaluation",
                 report_label_pick: bool = False):
        self.num_clusters, self.client_fraction, self.update = num_clusters, client_fraction, update
        self.client_dropout = client_dropout
        self.init, self.first_round, self.report_label_pick = init, first_round, report_label_pick

    def round_work(self, t, num_clients):
        """Every round each client's loss under each of the K models on its training data (eq. 3), then its
        solver from its model."""
        return RoundWork(self.training_rows(num_clients), scored=self.num_clusters)

    def evaluated_models(self, t, num_clients):
        """A client's own model; with report_label_pick also each of the K models (the pick by their losses)."""
        return 1.0 + (self.num_clusters if self.report_label_pick else 0)

    def plan(self, t, fed):
        self.loss_vectors = fed.mean_train_losses(self.centers)      # [N, K], kept for the loss heatmap
        self.assignment = self.loss_vectors.argmin(1)
        if t == 0 and self.first_round == "random":   # CLoVE §5.2 'first:r': every model gets a client
            g = fed.generator("ifca-first-round")
            self.assignment = random_assignment(fed.num_clients, self.num_clusters, g).to(fed.device)
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        return RoundPlan(clients, rows_of(self.centers, self.assignment[clients]))

    def messages(self, t, plan, fed):
        """IFCA's Algorithm 1 (model averaging): the server broadcasts the K cluster models to each participating
        client, which estimates its cluster (the smallest loss, eq. 3), trains from that model and sends back the
        trained model and its cluster's index. A random first round (first_round=random) sends each client only
        the model it drew."""
        if t == 0 and self.first_round == "random":
            return exchange(plan)
        return cluster_choice_messages(plan, self.num_clusters, estimates="cluster id")

    def aggregation(self, t, plan, fed):
        """`mean`: the clustered means (ClusteredAlgorithm); `eq6`: Fed-CAM eq. (6), Theta_k <- (1 - sum_{i in C_k}
        n_i/n) Theta_k + sum_{i in C_k} n_i/n theta_i, with n the data size of all clients (a cluster model moves by
        its share of all data), the sums folded chunk by chunk."""
        if self.update != "eq6":
            return super().aggregation(t, plan, fed)
        w = global_share_weights(self.centers, self.assignment[plan.clients], fed.sizes[plan.clients].double(),
                                 float(fed.sizes.sum()))
        centers = self.centers

        def done(mixed):
            keep = 1 - w.sum(0)
            self.centers = {k: keep.to(c.dtype).view(-1, *([1] * (c.dim() - 1))) * c + mixed[k]
                            for k, c in centers.items()}
        return MixedSums(w, done)

    def client_dp_refusal(self):
        if self.update == "eq6":
            return ("update=eq6 moves each cluster model by its share of all the data, not by a mean of its clients' "
                    "updates; allowed with privacy=client_dp: update=mean")
        return None

    def newcomer_models(self, fed, newcomers):
        """IFCA's assignment rule (its eq. 3, the one every client follows each round): the cluster model
        with the smallest mean loss on the newcomer's training data."""
        return rows_of(self.centers, newcomers.mean_train_losses(self.centers).argmin(1))

    def models_on(self, fed, split, partner=None) -> torch.Tensor:
        """[N] each client's cluster model with the smallest mean loss on its samples of `split`
        (of partner + model where `partner` logits are given); 0 for a client without samples.
        Reads split.y: used only for the labelled `label_pick` predictor."""
        losses = losses_on_clients(fed.model, fed.data.task, self.centers, split.x, split.y, split.mask, partner)
        mean = losses.masked_fill(~split.mask.unsqueeze(0), 0.0).sum(2) / split.n.clamp_min(1).to(losses.dtype)
        return mean.argmin(0)

    def predictors(self, fed, split, partner=None):
        """Each client's assigned cluster model as "local"; with `report_label_pick`, also the model its paper
        code re-picks by the loss on the data scored (of partner + model), as "local:label_pick"."""
        out = super().predictors(fed, split, partner)
        if self.report_label_pick:
            picked = rows_of(self.centers, self.models_on(fed, split, partner))
            out["local:label_pick"] = outputs_paired(fed.model, picked, split.x, split.n, fed.batched_forward)
        return out
