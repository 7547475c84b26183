"""FedEM (Marfoq et al., NeurIPS 2021, Alg. 1): each client's data is a mixture of M shared
components; FedSoft's baseline (FedSoft §5)."""
from typing import Annotated

import torch

from ..models.rows import rows_of
from ..local_training.forward import outputs_on_clients
from ..local_training.terms import SampleWeights
from ..rules import AtLeast, ClientDropout, ClientFraction, OneOf
from .base import Algorithm, RoundPlan, concat_plans, weighted_mean_rows
from .fold import gathered
from .work import RoundWork

LOCAL_PREDICTORS = ("mixture", "top_component")
NEWCOMER_EM_STEPS = 100   # EM on a newcomer's mixture weights alone converges in a few tens of steps


def e_step(per_sample_losses: torch.Tensor, log_pi: torch.Tensor, mask: torch.Tensor):
    """Responsibilities and mixture weights (FedEM eqs. 9-10).

    per_sample_losses: [M, N, Nmax] loss of component m on each sample (padding: anything);
    log_pi: [N, M]; mask: [N, Nmax] real samples.
    q[m, i, s] = softmax_m(log pi_im - loss_m(s)), zero at padding: [M, N, Nmax];
    pi_im = mean over client i's samples of q[m, i, s]: [N, M]."""
    losses = per_sample_losses.masked_fill(~mask.unsqueeze(0), 0.0)
    q = torch.softmax(log_pi.T.unsqueeze(2) - losses, dim=0) * mask.unsqueeze(0)
    n = mask.sum(1).clamp_min(1).to(q.dtype)
    pi = (q.sum(2) / n).T
    return q, pi


def mixture_prediction(outputs: torch.Tensor, pi: torch.Tensor, task: str) -> torch.Tensor:
    """A client's FedEM predictor: sum_m pi_im p_m(y|x). outputs: [M, N, Nmax, ...], pi: [N, M].
    Classification: the log of the mixed class probabilities (argmax and cross-entropy apply);
    otherwise the pi-weighted mean of the outputs."""
    w = pi.T.to(outputs.dtype).view(*pi.T.shape, *([1] * (outputs.dim() - 2)))
    if task == "classification":
        return (torch.softmax(outputs, dim=-1) * w).sum(0).clamp_min(1e-30).log()
    return (outputs * w).sum(0)


class FedEM(Algorithm):
    """M components shared by all clients, each client with its own mixture weights pi_i.

    Each round, before local training, a client computes the responsibilities q of every
    component for every training sample from the current components (E-step) and sets
    pi_i to their mean; it then trains every component m on its q_m-weighted loss (M-step,
    one local solver run per component) and the server averages each component over clients
    weighted by n_i. A client predicts with its pi-weighted mixture (`local_predictor:
    mixture`) or, as FedSoft did for its Table 2, with its largest-pi component
    (`top_component`)."""
    state = ("components", "pi")
    name = "fedem"

    def training_rows(self, num_clients: int) -> int:
        """Every sampled client trains all M components."""
        return self.num_clusters * super().training_rows(num_clients)

    def round_work(self, t, num_clients):
        """The E-step scores the M components on every client's training data; each sampled client then trains
        all M (the M-step)."""
        return RoundWork(self.training_rows(num_clients), scored=self.num_clusters)

    def evaluated_models(self, t, num_clients):
        """Both predictors come from one pass of every component over the clients' samples."""
        return float(self.num_clusters)

    def __init__(self, num_clusters: Annotated[int, AtLeast(1)] = 3,
                 client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0,
                 local_predictor: Annotated[str, OneOf(LOCAL_PREDICTORS)] = "mixture"):
        self.num_clusters, self.client_fraction, self.local_predictor = num_clusters, client_fraction, local_predictor
        self.client_dropout = client_dropout

    def setup(self, fed):
        self.components = fed.init_models(self.num_clusters, "components")
        self.pi = torch.full((fed.num_clients, self.num_clusters), 1.0 / self.num_clusters,
                             dtype=torch.float64, device=fed.device)

    def plan(self, t, fed):
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        losses = fed.train_losses(self.components).double()
        q, pi = e_step(losses, self.pi.clamp_min(1e-300).log(), fed.data.train.mask.to(fed.device))
        self.pi[clients] = pi[clients]
        return concat_plans([RoundPlan(clients, rows_of(self.components, torch.full_like(clients, m)),
                                       [SampleWeights(q[m, clients].to(fed.dtype))])
                             for m in range(self.num_clusters)])

    @gathered
    def aggregation(self, t, plan, trained, fed):
        """Each component = the n_i-weighted mean of the clients' trained copies."""
        clients = plan.parts[0].clients
        n = fed.sizes[clients].double()
        rows = torch.arange(len(clients), device=n.device)
        parts = [weighted_mean_rows(part, rows, n) for part in plan.split(trained)]
        self.components = {k: torch.cat([p[k] for p in parts]) for k in self.components}

    def cluster_models(self):
        return self.components

    def local_models(self, fed):
        """Each client's largest-pi component."""
        return rows_of(self.components, self.pi.argmax(1))

    def _predictions(self, fed, split, pi) -> dict:
        """The configured predictor as "local", the other as "local:<name>", of clients with mixture weights `pi`
        [N, M], from one pass of every component over every client's samples."""
        outs = outputs_on_clients(fed.model, self.components, split.x, split.mask)   # [M, N, Nmax, ...]
        top = outs[pi.argmax(1), torch.arange(outs.shape[1], device=outs.device)]
        predictions = {"mixture": mixture_prediction(outs, pi, fed.data.task), "top_component": top}
        main = predictions.pop(self.local_predictor)
        return {"local": main} | {f"local:{name}": out for name, out in predictions.items()}

    def predictors(self, fed, split, partner=None):
        return self._predictions(fed, split, self.pi)

    def newcomer_predictors(self, fed, newcomers, split):
        """A client that took no part in training learns its mixture weights alone, the components fixed (as
        FedEM's paper serves clients unseen at training time): EM on its training data from uniform weights, the
        E-step of eqs. 9-10 repeated until the weights move less than 1e-8 (at most NEWCOMER_EM_STEPS times); it
        then predicts as a trained client does."""
        losses = newcomers.train_losses(self.components).double()          # [M, N', Nmax]
        M, mask = losses.shape[0], newcomers.data.train.mask
        pi = torch.full((newcomers.num_clients, M), 1.0 / M, dtype=torch.float64, device=losses.device)
        for _ in range(NEWCOMER_EM_STEPS):
            _, new = e_step(losses, pi.clamp_min(1e-300).log(), mask)
            done = bool((new - pi).abs().max() < 1e-8)
            pi = new
            if done:
                break
        return self._predictions(newcomers, split, pi.to(self.pi.dtype))

    def assignment_weights(self):
        return self.pi
