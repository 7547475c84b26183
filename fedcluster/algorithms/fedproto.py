"""FedProto (Tan et al., AAAI 2022): clients share class prototypes (mean feature vectors), not
model parameters; local training pulls features to the global prototypes; prediction is by the
nearest global prototype."""
from typing import Annotated, Tuple

import torch

from ..models.rows import rows_of
from ..local_training.forward import outputs_paired
from ..local_training.terms import PrototypePull
from ..errors import ConfigError
from ..rules import AtLeast, ClientDropout, ClientFraction, OneOf
from .base import Algorithm, RoundPlan
from .model_tables import keep_trained, personal_models
from .fold import gathered
from .wire import Message, value_bytes
from .work import RoundWork

WEIGHTINGS = ("clients", "samples")


def round_features(fed, params: dict, clients: torch.Tensor):
    """(client, [n, D] features, [n] labels) of each round client's training samples, row j of
    `params` being client clients[j]'s model: what the server hears from the round's clients
    (FedProto's prototypes, FedPAC's statistics and centroids). All clients' features come from
    one paired forward pass (local_training/forward.py: threads on CPU, vmap on GPU), models in eval mode."""
    tr = fed.data.train
    feats = outputs_paired(fed.model, params, tr.x, tr.n, fed.batched_forward, rows=clients, features=True)
    sizes = tr.n[clients].tolist()
    for j, (k, n) in enumerate(zip(clients.tolist(), sizes)):
        yield k, feats[j, :n], tr.y[k, :n]


def class_means(feats: torch.Tensor, y: torch.Tensor, C: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """([C, D] mean feature per class, [C] sample counts); zero rows for absent classes."""
    counts = torch.bincount(y.long(), minlength=C)[:C].to(feats.dtype)
    sums = torch.zeros(C, feats.shape[1], dtype=feats.dtype, device=feats.device).index_add_(0, y.long(), feats)
    return sums / counts.clamp_min(1)[:, None], counts


def aggregate_prototypes(local: torch.Tensor, counts: torch.Tensor, weighting: Annotated[str, OneOf(WEIGHTINGS)] = "clients"):
    """Global prototypes from the clients' [M, C, D] and their class counts [M, C]: per class the
    mean over the clients that have it, unweighted (`clients`, PFLlib's serverproto.py
    proto_aggregation) or weighted by their samples of that class (`samples`, the paper's eq. 3).
    Returns ([C, D], have [C] bool)."""
    present = (counts > 0).to(local.dtype)
    w = present if weighting == "clients" else counts.to(local.dtype)
    mass = w.sum(0)                                                        # [C]
    protos = torch.einsum("mc,mcd->cd", w, local) / mass.clamp_min(1e-12)[:, None]
    return protos, mass > 0


def nearest_prototype_logits(feats: torch.Tensor, protos: torch.Tensor, have: torch.Tensor) -> torch.Tensor:
    """[..., C] minus the squared distance of each feature vector to each class prototype (so the
    argmax is the nearest prototype, PFLlib's clientproto.py test_metrics); classes without a
    prototype get a very low score (never predicted)."""
    d = ((feats.unsqueeze(-2) - protos) ** 2).sum(-1)
    return torch.where(have, -d, torch.full_like(d, -1e9))


class FedProto(Algorithm):
    """FedProto. Each client keeps its own model (one common initialisation; no parameters are
    exchanged) and trains it on CE + `lam` * MSE(features, global prototype of the label)
    (`PrototypePull`; CE only while no global prototypes exist). After training, each trained
    client sends its class prototypes: the mean features of its training samples per class, with
    its trained model (the paper's definition; PFLlib collects them during training, from the
    changing model); the server averages them per class (`aggregate_prototypes`, `weighting`).
    A client predicts by the nearest global prototype to its features
    (`nearest_prototype_logits`); the local model's own head is trained but not used to predict,
    as in the paper and PFLlib. Needs a model with features (LeNet, the CNNs, MLP, TextCNN).
    Defaults: lam 1.0 (PFLlib's lamda), weighting 'clients' (PFLlib)."""
    state = ("local", "prototypes", "have")
    name = "fedproto"
    reads_features = True   # its prototypes are mean features per class
    num_clusters = 0

    def __init__(self, lam: Annotated[float, AtLeast(0)] = 1.0,
                 weighting: Annotated[str, OneOf(WEIGHTINGS)] = "clients",
                 client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0):
        self.lam, self.weighting, self.client_fraction = lam, weighting, client_fraction
        self.client_dropout = client_dropout

    def setup(self, fed):
        if fed.data.task != "classification":
            raise ConfigError("algorithm=fedproto needs a classification data set (its prototypes are per class)")
        self.local = personal_models(fed)
        self.prototypes, self.have = None, None

    def round_work(self, t, num_clients):
        """Each sampled client's solver, then its features over its training data for its prototypes (eq. 1)."""
        return RoundWork(self.training_rows(num_clients), row_passes=1.0)

    def plan(self, t, fed):
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        plan = RoundPlan(clients, rows_of(self.local, clients), keep_client_state=True)
        if self.prototypes is not None:
            lam = torch.full((len(clients), 1), self.lam, dtype=fed.dtype, device=fed.device)
            plan.terms.append(PrototypePull(self.prototypes, self.have, lam))
        return plan

    @gathered
    def aggregation(self, t, plan, trained, fed):
        keep_trained(self.local, plan.clients, trained)
        C = fed.data.num_classes
        protos, counts = [], []
        for _, feats, y in round_features(fed, trained, plan.clients):   # this round's clients only
            p, c = class_means(feats, y, C)
            protos.append(p)
            counts.append(c)
        self.prototypes, self.have = aggregate_prototypes(torch.stack(protos), torch.stack(counts), self.weighting)

    def messages(self, t, plan, fed):
        """No parameters are exchanged (FedProto, Tan et al. AAAI 2022, Algorithm 1): each reporting client
        downloads the global prototypes (from round 2 on) and uploads its own, as the dense tables this code
        keeps, C prototypes of the feature size (a class it lacks is a zero row) and C sample counts."""
        reporting, number = len(plan.clients), value_bytes(self.local)
        C, width = self.prototypes.shape
        table = C * width * number
        down = [Message("global prototypes", "down", reporting, table)] if t > 0 else []
        return down + [Message("prototypes and counts", "up", reporting, table + C * number)]

    def local_models(self, fed):
        return self.local

    def predictors(self, fed, split, partner=None):
        """Each sample's class: its nearest global prototype in the local model's feature space."""
        C = fed.data.num_classes
        out = torch.zeros(fed.num_clients, split.x.shape[1], C, dtype=fed.dtype, device=fed.device)
        if self.prototypes is None:
            return {"local": out}
        feats = outputs_paired(fed.model, self.local, split.x, split.n, fed.batched_forward, features=True)
        for k, n in enumerate(split.n.tolist()):
            if n:
                out[k, :n] = nearest_prototype_logits(feats[k, :n], self.prototypes, self.have).to(out.dtype)
        return {"local": out}
