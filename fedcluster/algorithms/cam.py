"""Clustered additive modeling (Ma, Zhou, Long et al., 'Structured federated learning through
clustered additive modeling', Fed-CAM Algorithm 1): a wrapper that turns a clustered
algorithm (IFCA, FeSEM) into its CAM version."""
from typing import Annotated

import torch

from ..local_training.forward import outputs_on_clients, outputs_paired
from ..local_training.terms import FrozenOffset
from ..rules import MAX_COUNT, Between, OneOf
from .base import Algorithm, RoundPlan, concat_plans
from .model_tables import for_clients, global_mean_fold
from .fold import Parts
from .wire import Message, exchange, row_bytes
from .work import RoundWork
from ..models.rows import count_rows

WARMUPS = ("fedavg", "base")


class CAM(Algorithm):
    """Client i predicts h(x; Theta_g) + f(x; Theta_c(i)) (eq. 1). Each round, after warm-up:

    - the base algorithm assigns clusters and plans its cluster-model training, seeing every
      loss as that of the additive model (min-loss assignment, eq. 2);
    - two local trainings per client run together in one batched computation: theta_i from the
      base's start model on loss(h(x; Theta_g) + f(x; theta_i)) (eq. 5 / eq. 13), and
      theta_i^0 from Theta_g on loss(h(x; theta_i^0) + f(x; Theta_c(i))) (eq. 8 / eq. 15), each
      with the other model frozen at its value from the start of the round;
    - the base aggregates the theta_i (eq. 6 / eq. 11); Theta_g = sum_i n_i/n theta_i^0 (eq. 9).

    Warm-up (Alg. 1): `fedavg` trains Theta_g alone by FedAvg for `warmup_rounds` rounds
    (IFCA-CAM); `base` runs the base algorithm's own start-up alone (FeSEM-CAM: local
    training, then the first clustering). During warm-up a client predicts with the model
    being warmed up: which predictor serves is the phase of the last round planned (`serving`),
    state like the models themselves, so evaluation reads no round counter."""
    name = "cam"

    state = ("global_model", "serving")   # and the base method's own (state_dict)

    def training_rows(self, num_clients: int) -> int:
        """A client's cluster model and the global model h, trained together (eq. 5 and 8)."""
        return 2 * self.base.training_rows(num_clients)

    def round_work(self, t, num_clients):
        """FedAvg warm-up: every client trains h alone. After it: the base method's round seen through h + f (its
        scoring adds h's outputs, computed once over every client's training data), each of its rows trained with a
        row of h beside it, and each row's start model run over its client's data (f's outputs, h's frozen
        partner: eq. 8)."""
        phase = self.phase(t)
        if phase == "fedavg":
            return RoundWork(num_clients)
        base = self.base.round_work(t, num_clients)
        if phase == "base":
            return base
        return RoundWork(2 * base.trained, base.solver_scale, base.scored + 1, (base.row_passes + 1) / 2)

    def evaluated_models(self, t, num_clients):
        """h + f: both models over each sample, once the warm-up is over (the warm-up serves the model it warms)."""
        return self.base.evaluated_models(t, num_clients) + (self.phase(t) == "cam")

    def __init__(self, base: Algorithm, warmup_rounds: Annotated[int, Between(0, MAX_COUNT)] = 30,
                 warmup: Annotated[str, OneOf(WARMUPS)] = "fedavg"):
        self.base, self.warmup_rounds, self.warmup = base, warmup_rounds, warmup
        self.name = f"{base.name}_cam"
        self.serving = self.phase(0)   # before any round: the phase round 0 trains

    @property
    def client_fraction(self) -> float:
        """The base method's: it draws the clients each CAM round trains (record.py's participation.csv reads it)."""
        return getattr(self.base, "client_fraction", 1.0)

    @property
    def client_dropout(self) -> float:
        return getattr(self.base, "client_dropout", 0.0)

    def setup(self, fed):
        self.base.setup(fed)
        self.global_model = fed.init_models(1, "global")

    def phase(self, t: int) -> str:
        return self.warmup if t < self.warmup_rounds else "cam"

    def global_logits(self, fed, split) -> torch.Tensor:
        """h(x; Theta_g) on every client's samples of `split`: [N, Nmax, C]."""
        return outputs_on_clients(fed.model, self.global_model, split.x, split.mask)[0]

    def plan(self, t, fed):
        phase = self.serving = self.phase(t)
        if phase == "fedavg":
            clients = torch.arange(fed.num_clients, device=fed.device)
            return RoundPlan(clients, for_clients(self.global_model, clients))
        if phase == "base":
            return self.base.plan(t, fed)
        tr = fed.data.train
        h = self.global_logits(fed, tr)
        cluster_plan = self.base.plan(t, fed.with_offsets(h))
        clients = cluster_plan.clients
        cluster_plan.terms.append(FrozenOffset(h[clients]))
        partner = outputs_paired(fed.model, cluster_plan.start, tr.x, tr.n, batched=False, rows=clients)
        global_plan = RoundPlan(clients, for_clients(self.global_model, clients), [FrozenOffset(partner)])
        return concat_plans([cluster_plan, global_plan])

    def aggregation(self, t, plan, fed):
        """The base method's aggregation of the theta_i (eq. 6 / eq. 11), and Theta_g = sum_i n_i/n theta_i^0
        (eq. 9), each part of the round's rows folded into its own; during a FedAvg warm-up, Theta_g alone."""
        phase = self.phase(t)
        set_global = lambda mean: setattr(self, "global_model", mean)   # noqa: E731
        if phase == "fedavg":
            return global_mean_fold(plan.clients, fed, set_global)
        if phase == "base":
            return self.base.aggregation(t, plan, fed)
        cluster_plan, global_plan = plan.parts
        return Parts([(len(cluster_plan.clients), self.base.aggregation(t, cluster_plan, fed)),
                      (len(global_plan.clients), global_mean_fold(global_plan.clients, fed, set_global))])   # eq. (9)

    def messages(self, t, plan, fed):
        """Fed-CAM Algorithm 1's traffic: in a FedAvg warm-up, Theta_g down and each trained copy up; in the base's
        warm-up, the base's own exchange; afterwards the base method's messages for the cluster models (IFCA-CAM: the
        K cluster models down, each client's cluster id and theta_i up) and the global model, Theta_g down and
        theta_i^0 up (eqs. 8-9), to and from the same clients."""
        phase = self.phase(t)
        if phase == "fedavg":
            return exchange(plan)
        if phase == "base":
            return self.base.messages(t, plan, fed)
        cluster_plan, global_plan = plan.parts
        rows, size = count_rows(global_plan.start), row_bytes(global_plan.start)
        return self.base.messages(t, cluster_plan, fed) + [Message("global model", "down", rows, size),
                                                           Message("global model", "up", rows, size)]

    def predictors(self, fed, split, partner=None):
        """eq. (1), h + f, for every predictor of the base method (its "local", and its labelled picks such as
        IFCA's label_pick, made by the loss of h + f), with h(x; Theta_g) computed once. During a warm-up: the
        model being warmed up, with the base's own picks (FeSEM-CAM)."""
        phase = self.serving
        if phase == "fedavg":
            return {"local": self.global_logits(fed, split)}
        if phase == "base":
            return self.base.predictors(fed, split)
        h = self.global_logits(fed, split)
        return {name: h + out for name, out in self.base.predictors(fed, split, h).items()}

    def newcomer_predictors(self, fed, newcomers, split):
        """A client that joins after training, under Fed-CAM: the base method's own newcomer rule on the additive
        model, every loss it reads and any local training it runs being of h + f with h(x; Theta_g) frozen (IFCA-CAM:
        the cluster model of least loss of h + f on the newcomer's training data, eq. 2), scored as h + f (eq. 1).
        During a warm-up, as the trained clients are served: the model being warmed up."""
        if self.serving == "fedavg":
            return {"local": self.global_logits(newcomers, split)}
        if self.serving == "base":
            return self.base.newcomer_predictors(fed, newcomers, split)
        additive = newcomers.with_offsets(self.global_logits(newcomers, newcomers.data.train))
        h = self.global_logits(newcomers, split)
        return {name: h + out for name, out in self.base.newcomer_predictors(fed, additive, split).items()}

    def local_models(self, fed):
        return self.base.local_models(fed)

    def assignment_weights(self):
        return None if self.serving == "fedavg" else self.base.assignment_weights()

    def state_dict(self):
        """Its own state and its base method's (under `base`)."""
        return {**super().state_dict(), "base": self.base.state_dict()}

    def load_state_dict(self, state):
        if "round" in state:   # a checkpoint written before `serving` (2026-11-28) kept the last round planned
            state = {**state, "serving": self.phase(int(state["round"]))}
        super().load_state_dict(state)
        self.base.load_state_dict(state["base"])
