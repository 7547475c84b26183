"""Per-FedAvg (Fallah et al., NeurIPS 2020): FedAvg of a model-agnostic meta-learning objective;
each client personalises the global model with one gradient step on its own data."""
from typing import Annotated

import torch
from torch.func import functional_call, grad

from ..local_training.losses import per_sample_loss
from ..local_training.terms import META_PARTS, MetaStep
from ..errors import ConfigError
from ..rules import AtLeast, ClientDropout, ClientFraction, OneOf, Positive
from .base import Algorithm
from .model_tables import copies
from .fold import Then
from .fedavg import FedAvg
from .work import RoundWork

VARIANTS = ("fo", "hf")


class PerFedAvg(FedAvg):
    """Per-FedAvg. Clients train the global model by meta steps (`MetaStep`: each optimizer step's
    batch of train.batch_size split into halves for `fo`, thirds for `hf`, of its real samples: a
    client's short last batch, or a client smaller than a batch, is shared out too); the server averages
    them (FedAvg, n-weighted). A client's local model, the one evaluated, is the global model after
    one gradient step of size `alpha` on `eval_batch` of its training samples (drawn afresh each
    evaluation, seeded), as the paper personalises and PFLlib evaluates (clientperavg.py,
    train_one_step; PFLlib takes that batch from test data, we from training data).

    alpha: the inner step (PFLlib: alpha = beta = the learning rate; the yaml sets train.lr);
    delta: the finite-difference step of the Hessian-free variant (PFLlib has no HF variant; 1e-3
    as flgo's implementation)."""
    name = "perfedavg"

    def __init__(self, alpha: Annotated[float, Positive] = 0.001, variant: Annotated[str, OneOf(VARIANTS)] = "fo",
                 delta: Annotated[float, Positive] = 1e-3, eval_batch: Annotated[int, AtLeast(1)] = 10,
                 client_fraction: ClientFraction = 1.0, client_dropout: ClientDropout = 0.0):
        super().__init__(client_fraction, client_dropout)
        self.alpha, self.variant, self.delta, self.eval_batch = alpha, variant, delta, eval_batch
        self._personal, self._round = None, 0

    @property
    def parts(self) -> int:
        return META_PARTS[self.variant]

    def setup(self, fed):
        """The meta step cuts each of the run's mini-batches (train.batch_size, read from `fed`:
        one setting, not a copy of it) into `parts`."""
        if fed.batch_size is None or fed.batch_size < self.parts:
            raise ConfigError(f"algorithm=perfedavg (variant {self.variant}) cuts each batch into {self.parts}: "
                              f"train.batch_size={fed.batch_size} must be >= {self.parts}")
        super().setup(fed)

    def plan(self, t, fed):
        plan = super().plan(t, fed)
        like = next(iter(self.global_model.values()))
        plan.terms.append(MetaStep(self.alpha, fed.batch_size // self.parts, self.variant, self.delta,
                                   len(plan.clients), like))
        return plan

    def round_work(self, t, num_clients):
        """Each sampled client's solver, each step's batch cut into parts: `fo` takes a gradient on each of its two
        halves (one batch's work), `hf` on its first two thirds and two more on the third (4/3 of a batch)."""
        return RoundWork(self.training_rows(num_clients), 1.0 if self.variant == "fo" else 4 / 3)

    def evaluation_training(self, t, num_clients):
        """Each client's one step on `eval_batch` of its training samples before it is scored (`personalise`)."""
        return float(num_clients * self.eval_batch)

    def aggregation(self, t, plan, fed):
        """FedAvg's mean; then the personal models of the last evaluation are stale."""
        def stale():
            self._personal, self._round = None, t + 1
        return Then(super().aggregation(t, plan, fed), stale)

    def local_models(self, fed):
        """Each client's one-step personalisation of the current global model (one batch drawn
        per client and round; every split of an evaluation scores the same models)."""
        if self._personal is None:
            self._personal = self.personalise(fed)
        return self._personal

    def newcomer_models(self, fed, newcomers):
        """Per-FedAvg's point (Fallah et al. 2020, §1): a client that joins adapts the global model with one
        gradient step on its own training data, as every trained client does at evaluation."""
        return self.personalise(newcomers)

    def personalise(self, fed):
        tr, task = fed.data.train, fed.data.task
        glob = {k: v[0] for k, v in self.global_model.items()}
        out = copies(self.global_model, fed.num_clients, fed.device)

        def loss(p, x, y):
            return per_sample_loss(task, functional_call(fed.model, p, (x,)), y).mean()
        for k in range(fed.num_clients):
            n = int(tr.n[k])
            if n == 0:
                continue
            pick = torch.randperm(n, generator=fed.generator("perfedavg-eval", self._round, k))[:self.eval_batch]
            pick = pick.to(tr.x.device)
            g = grad(loss)(glob, tr.x[k, pick], tr.y[k, pick])
            for name in out:
                out[name][k] = glob[name] - self.alpha * g[name]
        return out

    def predictors(self, fed, split, partner=None):
        """Each client's personalised model on its samples (the base rule; FedAvg's shortcut
        through the one global model does not apply)."""
        return Algorithm.predictors(self, fed, split, partner)
