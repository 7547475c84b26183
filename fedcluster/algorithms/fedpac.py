"""FedPAC (Xu, Tong, Huang, ICLR 2023): a shared feature extractor aligned to global class
centroids, and per-client classifier heads combined with weights from a quadratic program."""
from typing import Annotated, List, Optional, Tuple

import numpy as np
import torch

from ..models.rows import rows_of
from ..local_training.terms import PrototypePull
from ..errors import ConfigError
from ..rules import AtLeast, ClientDropout, ClientFraction, OneOf, Probability
from .base import Algorithm, Phase, RoundPlan, weighted_mean_rows
from .model_tables import personal_models
from .fold import gathered
from .wire import Message, row_bytes, value_bytes
from .fedproto import WEIGHTINGS, aggregate_prototypes, class_means, round_features
from .work import RoundWork


def head_names(model: torch.nn.Module) -> List[str]:
    """The parameters of the model's last layer (the classifier head g that reads the features
    `forward(x, with_features=True)` returns): those of the last module, in registration
    order, that holds parameters of its own."""
    last = None
    for name, module in model.named_modules():
        own = [n for n, _ in module.named_parameters(recurse=False)]
        if own:
            last = [f"{name}.{n}" if name else n for n in own]
    if last is None:
        raise ConfigError(f"{type(model).__name__} has no parameters to split into a feature extractor and a head")
    return last


def feature_statistics(feats: torch.Tensor, y: torch.Tensor, num_classes: int) -> Tuple[float, torch.Tensor]:
    """A client's statistics for FedPAC's classifier collaboration, computed as the
    authors' code does (JianXu95/FedPAC methods/fedpac.py statistics_extraction; PFLlib's
    clientpac.py has the same): with p_k the client's share of class k, mu_k the mean feature of
    its class-k samples and E_k the mean squared feature norm of those samples,
        V = sum_k (p_k E_k - p_k^2 ||mu_k||^2) / n       (the variance term)
        H[k] = p_k mu_k                                  (the bias term's per-class means).
    Returns (V, H [C, D])."""
    feats = feats.double()
    n = len(y)
    mu, counts = class_means(feats, y, num_classes)
    p = counts / max(n, 1)
    sq = torch.zeros(num_classes, dtype=feats.dtype, device=feats.device).index_add_(0, y.long(), (feats ** 2).sum(1))
    mean_sq = sq / counts.clamp_min(1)
    v = (p * mean_sq - p ** 2 * (mu ** 2).sum(1)).sum() / max(n, 1)
    return float(v), p[:, None] * mu


def collaboration_matrix(V: torch.Tensor, H: torch.Tensor, i: int) -> np.ndarray:
    """The QP's matrix for client i: diag(V) + [sum_k (H_i[k] - H_j[k]) . (H_i[k] - H_l[k])]_{jl}
    (the authors' tools.py get_head_agg_weight: the variance of each head's estimate on the
    diagonal, the bias of mixing heads of clients whose feature statistics differ from i's)."""
    A = (H[i:i + 1] - H).flatten(1).double().cpu()    # [M, C*D]; the M x M QP is solved on the CPU
    return (torch.diag(V.double().cpu()) + A @ A.T).numpy()


def solve_simplex_qp(P: np.ndarray) -> np.ndarray:
    """argmin_a a^T P a over the probability simplex (a >= 0, sum a = 1), P symmetric positive
    semi-definite. Solved with scipy's SLSQP (scipy.optimize.minimize): scipy is already
    installed with scikit-learn, while cvxpy (the authors' choice) would add a modelling layer and
    several compiled solvers for a problem of one variable per client; the problem is convex, so
    SLSQP's local optimum is the global one (checked against a grid search in the tests). P is
    scaled to unit mean diagonal first (same minimiser, better conditioned)."""
    M = len(P)
    if M == 1:
        return np.ones(1)
    scale = float(np.mean(np.abs(np.diag(P)))) or float(np.abs(P).max()) or 1.0
    Q = (P + P.T) / (2 * scale)
    from scipy.optimize import minimize   # imported when used (start-up time of every command)
    res = minimize(lambda a: a @ Q @ a, np.full(M, 1.0 / M), jac=lambda a: 2 * Q @ a, method="SLSQP",
                   bounds=[(0.0, 1.0)] * M, constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1.0,
                                                           "jac": lambda a: np.ones_like(a)}],
                   options={"ftol": 1e-12, "maxiter": 500})
    a = np.clip(res.x, 0.0, None)
    return a / a.sum()


def head_weights(V: torch.Tensor, H: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """[M, M] row i: client i's weights on the round's heads, the simplex QP's solution with
    weights below `eps` set to 0 and the rest renormalised (the authors' eps = 1e-3 and
    agg_classifier_weighted_p's division by the weights' sum)."""
    rows = []
    for i in range(len(V)):
        a = solve_simplex_qp(collaboration_matrix(V, H, i))
        a = np.where(a > eps, a, 0.0)
        rows.append(a / a.sum() if a.sum() > 0 else np.eye(len(V))[i])
    return torch.tensor(np.stack(rows))


class FedPAC(Algorithm):
    """FedPAC. The model is split into a feature extractor (every parameter but the last layer's)
    and a head (the last layer, `head_names`). Each round, every participating client
      1. trains its head for `head_epochs` passes over its data (0: no head phase; null: the
         run's own train.epochs or train.steps) with the extractor frozen, on the cross-entropy
         only; then
      2. trains the extractor for the run's epochs with the head frozen, on cross-entropy +
         `lam` * MSE(features, global centroid of the label) (`PrototypePull`; no pull in the
         first round, before centroids exist, and none for a class without a centroid, as PFLlib's
         clientpac.py; the authors' code falls back on the client's own centroid there).
    Each phase starts with fresh optimizer state (both codes build a new optimizer per phase);
    both use the run's optimizer and learning rate, as PFLlib (CLoVE's FedPAC; the authors' code
    trains the head with SGD lr 0.1).
    The server then
      - averages the extractors, weighted by training samples, and every client takes it;
      - computes class centroids from the clients' trained features, per class the mean over
        the clients that have it (`weighting: clients`, PFLlib's proto_aggregation) or weighted by
        their samples of the class (`samples`, the paper's and authors' code);
      - gives each participant i the head sum_j a_ij g_j / sum_j a_ij over the round's trained
        heads, a_i from the QP on the statistics (V_j, H_j) the clients computed with the model
        they started the round from (`feature_statistics`, `head_weights`).
    A client's model (evaluated, and where it starts the next round) is the global extractor
    with its own combined head: the model the authors score before local training and PFLlib
    scores at each round's start. Defaults: lam 1.0 (both codes), head_epochs 1 (both codes),
    weighting 'clients' (PFLlib, which CLoVE ran). Both phases train in the batched engine; the
    statistics and the QP (one per participant) are small per-client loops at aggregation."""
    state = ("local", "centroids", "have")
    name = "fedpac"
    reads_features = True   # its centroids are mean features per class
    num_clusters = 0

    def __init__(self, lam: Annotated[float, AtLeast(0)] = 1.0, head_epochs: Annotated[Optional[int], AtLeast(0)] = 1,
                 weighting: Annotated[str, OneOf(WEIGHTINGS)] = "clients", eps: Annotated[float, Probability] = 1e-3,
                 client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0):
        self.lam, self.head_epochs, self.weighting = lam, head_epochs, weighting
        self.eps, self.client_fraction = eps, client_fraction
        self.client_dropout = client_dropout

    def setup(self, fed):
        if fed.data.task != "classification":
            raise ConfigError("algorithm=fedpac needs a classification data set (its centroids are per class)")
        self._head = head_names(fed.model)
        self._body = [n for n, _ in fed.model.named_parameters() if n not in self._head]
        if not self._body:
            raise ConfigError(f"algorithm=fedpac needs a model with layers below its head; "
                              f"{type(fed.model).__name__} has only {self._head}")
        self.local = personal_models(fed)
        self.centroids, self.have = None, None

    def round_work(self, t, num_clients):
        """Each sampled client's head epochs (a forward per sample: the frozen extractor needs no gradient, the
        head's is small beside it), its extractor's solver, and two feature passes over its data (the statistics
        at the start model, the centroids at the trained one). A head phase of the run's own length (null)
        counts as a second solver."""
        head = self.head_epochs
        return RoundWork(self.training_rows(num_clients), 1.0 + (head is None),
                         row_passes=2.0 + (head if head is not None else 0))

    def plan(self, t, fed):
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        pull = []
        if self.centroids is not None and self.lam > 0:
            lam = torch.full((len(clients), 1), self.lam, dtype=fed.dtype, device=fed.device)
            pull = [PrototypePull(self.centroids, self.have, lam)]
        phases = ([Phase(tuple(self._head), self.head_epochs)] if self.head_epochs != 0 else []) + \
            [Phase(tuple(self._body), None, pull)]
        return RoundPlan(clients, rows_of(self.local, clients), phases=phases)

    @gathered
    def aggregation(self, t, plan, trained, fed):
        C = fed.data.num_classes
        V, H = [], []
        for _, feats, y in round_features(fed, plan.start, plan.clients):
            v, h = feature_statistics(feats, y, C)
            V.append(v)
            H.append(h)
        protos, counts = [], []
        for _, feats, y in round_features(fed, trained, plan.clients):
            p, c = class_means(feats, y, C)
            protos.append(p)
            counts.append(c)
        self.centroids, self.have = aggregate_prototypes(torch.stack(protos), torch.stack(counts), self.weighting)
        rows = torch.arange(len(plan.clients), device=fed.device)
        body = weighted_mean_rows({k: trained[k] for k in self._body}, rows, fed.sizes[plan.clients].double())
        A = head_weights(torch.tensor(V), torch.stack(H), self.eps).to(fed.device, fed.dtype)   # [M, M]
        for k in self._head:
            self.local[k][plan.clients] = torch.einsum("ij,j...->i...", A, trained[k])
        for k in self._body:
            self.local[k][:] = body[k]

    def messages(self, t, plan, fed):
        """Xu et al. (ICLR 2023), Algorithm 1, as the authors' code exchanges it: each reporting client receives the
        global feature extractor with its combined head (its whole model) and, from the second round on, the global
        class centroids; it sends back its trained model (extractor and head), its class centroids with their sample
        counts, and its statistics for the classifier QP (V, one number, and H, a centroid-sized table per class)."""
        reporting, size, number = len(plan.clients), row_bytes(self.local), value_bytes(self.local)
        C, width = self.centroids.shape
        table = C * width * number
        down = [Message("model", "down", reporting, size)]
        if t > 0:
            down.append(Message("global centroids", "down", reporting, table))
        return down + [Message("model", "up", reporting, size),
                       Message("class centroids and counts", "up", reporting, table + C * number),
                       Message("feature statistics", "up", reporting, table + number)]

    def local_models(self, fed):
        return self.local
