"""FedALA (Zhang et al., AAAI 2023): adaptive local aggregation of the global model into each
client's local model, with element-wise weights learned on the client's data."""
import dataclasses
from dataclasses import dataclass
from typing import Annotated, Dict, List

import numpy as np
import torch
from torch.func import functional_call

from ..models.rows import rows_of
from ..local_training.losses import per_sample_loss
from ..rules import AtLeast, Between, ClientDropout, ClientFraction, Help, MAX_BATCH, Positive
from .base import Algorithm, RoundPlan
from .model_tables import keep_trained, personal_models, sample_weighted_mean
from .fold import gathered
from .work import RoundWork


@dataclass
class ALASteps:
    """How ALA learns a client's weights: step size `eta`; `converge` (a client's first ALA): passes until the last
    `num_pre_loss` passes' losses have std < `threshold`, at most `max_passes`; else one pass."""
    eta: float
    converge: bool
    threshold: float = 0.1
    num_pre_loss: int = 10
    max_passes: int = 200


def ala_weights(model, task: str, local: Dict[str, torch.Tensor], glob: Dict[str, torch.Tensor],
                weights: Dict[str, torch.Tensor], top: List[str], batches, steps: ALASteps) -> List[float]:
    """Learn one client's element-wise weights W (in place, `weights`, the top layers' keys) so
    that theta = theta_l + (theta_g - theta_l) * W on the top layers, theta_g below, has a small
    loss on `batches` [(x, y)]: per batch, W <- clip(W - eta * grad_theta L * (theta_g - theta_l), 0, 1)
    (FedALA eq. 6-7; dL/dW = grad_theta L * (theta_g - theta_l) by the chain rule). `converge`
    (a client's first ALA): passes over the batches until the last `num_pre_loss` passes' final
    losses have std < threshold (the authors' ALA.py has no cap; we stop at `max_passes`); else
    one pass (`steps`). Returns the loss of each pass's last batch."""
    eta, converge, threshold, num_pre_loss, max_passes = steps.eta, steps.converge, steps.threshold, \
        steps.num_pre_loss, steps.max_passes
    diff = {k: glob[k] - local[k] for k in top}
    fixed = {k: v for k, v in glob.items() if k not in top}
    losses: List[float] = []
    for _ in range(max_passes if converge else 1):
        for x, y in batches:
            mixed = {k: (local[k] + diff[k] * weights[k]).detach().requires_grad_(True) for k in top}
            out = functional_call(model, {**fixed, **mixed}, (x,))
            loss = per_sample_loss(task, out, y).mean()
            grads = torch.autograd.grad(loss, [mixed[k] for k in top])
            for k, g in zip(top, grads):
                weights[k] = torch.clamp(weights[k] - eta * g * diff[k], 0, 1)
        losses.append(float(loss.detach()))
        if not converge or (len(losses) > num_pre_loss and np.std(losses[-num_pre_loss:]) < threshold):
            break
    return losses


class FedALA(Algorithm):
    """FedALA. The server averages the participants' models (FedAvg, n-weighted). Before a
    client trains (the authors' send_models does it for every client at the start of a round;
    here at the end of the previous one, so the evaluated local model is the one the client
    starts from, as the authors evaluate), its local model takes the global model's lower layers
    and, on its top `layer_idx` parameter tensors (counted from the end of model.parameters(),
    as the authors' ALA.py; all of them when the model has fewer), theta_l + (theta_g - theta_l) * W, with W learned by `ala_weights` on
    a random contiguous `rand_percent` % of its training data in batches of `batch_size` (the yaml:
train.batch_size, as the authors use the training batch size). W
    starts at ones and persists across rounds. The weight learning is skipped while local and
    global models are equal (round 1). Defaults from PFLlib (TsingZ0/PFLlib, utils/ALA.py):
    rand_percent 80, layer_idx 2 (the last layer's weight and bias), eta 1.0, threshold 0.1,
    num_pre_loss 10. Local training itself is plain (batched engine); the weight learning is a
    small per-client loop (each client's W has its own data and stopping rule)."""
    state = ("global_model", "local", "started", "weights")
    name = "fedala"
    num_clusters = 1

    @dataclass(frozen=True)
    class Settings:
        rand_percent: Annotated[int, Between(0, 100, lo_open=True),
                                Help("W learns on a random contiguous rand_percent % of a client's training data")] = 80
        layer_idx: Annotated[int, AtLeast(1), Help("how many parameter tensors, from the top, W mixes")] = 2
        eta: Annotated[float, Positive, Help("W's learning rate")] = 1.0
        threshold: Annotated[float, AtLeast(0), Help("W stops learning when its last losses' std is below this")] = 0.1
        num_pre_loss: Annotated[int, AtLeast(1), Help("how many last losses that std is taken over")] = 10
        max_passes: Annotated[int, AtLeast(1), Help("at most this many passes of a client's first weight learning (the authors' has no cap)")] = 200
        batch_size: Annotated[int, Between(1, MAX_BATCH), Help("W's mini-batch size")] = 10
        client_fraction: ClientFraction = 1.0
        client_dropout: ClientDropout = 0.0

    def __init__(self, *args, **given):
        vars(self).update(dataclasses.asdict(self.Settings(*args, **given)))

    def round_work(self, t, num_clients):
        """The sampled clients' solvers; after aggregation every client's ALA over rand_percent % of its training
        data: one pass a round (a forward per sample, the gradient reaching only the top layers), its first one
        (the end of round 1) until its losses settle, at least num_pre_loss + 1 passes (at most max_passes)."""
        trained = self.training_rows(num_clients)
        passes = min(self.num_pre_loss + 1, self.max_passes) if t == 0 else 1
        return RoundWork(trained, row_passes=passes * num_clients / trained * self.rand_percent / 100)

    def setup(self, fed):
        self.global_model = fed.init_models(1, "centers")
        self.local = personal_models(fed, self.global_model)
        names = [n for n, _ in fed.model.named_parameters()]
        self._top, self._first = names[-self.layer_idx:], names[0]
        self.weights = {k: torch.ones_like(self.local[k]) for k in self._top}
        self.started = torch.zeros(fed.num_clients, dtype=torch.bool)

    def plan(self, t, fed):
        clients = fed.sample_clients(self.client_fraction, t, self.client_dropout)
        return RoundPlan(clients, rows_of(self.local, clients))

    @gathered
    def aggregation(self, t, plan, trained, fed):
        keep_trained(self.local, plan.clients, trained)
        self.global_model = sample_weighted_mean(trained, plan.clients, fed)
        for client in range(fed.num_clients):
            self.adapt(t, client, fed)

    def adapt(self, t, k, fed):
        """Client k's local model after adaptive local aggregation of the current global model."""
        glob = {name: v[0] for name, v in self.global_model.items()}
        local = {name: v[k] for name, v in self.local.items()}
        if float((glob[self._first] - local[self._first]).sum()) == 0:   # the authors' test for 'nothing to aggregate yet'
            return
        weights = {name: self.weights[name][k] for name in self._top}
        ala_weights(fed.model, fed.data.task, local, glob, weights, self._top, self.batches(t, k, fed),
                    ALASteps(self.eta, converge=not bool(self.started[k]), threshold=self.threshold,
                             num_pre_loss=self.num_pre_loss, max_passes=self.max_passes))
        self.started[k] = True
        for name, v in self.local.items():
            if name in self._top:
                self.weights[name][k] = weights[name]
                v[k] = local[name] + (glob[name] - local[name]) * weights[name]
            else:
                v[k] = glob[name]

    def batches(self, t, k, fed):
        """A random contiguous rand_percent % of client k's training samples, in batches."""
        tr = fed.data.train
        n = int(tr.n[k])
        size = max(1, int(n * self.rand_percent / 100))
        g = fed.generator("fedala-sample", t, k)
        start = int(torch.randint(0, n - size + 1, (1,), generator=g))
        B = self.batch_size
        x, y = tr.x[k, start:start + size], tr.y[k, start:start + size]
        return [(x[i:i + B], y[i:i + B]) for i in range(0, size, B)]

    def cluster_models(self):
        return self.global_model

    def local_models(self, fed):
        return self.local
