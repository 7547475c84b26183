"""FedAvg+ / FedProx+ (Fed-CAM §5 baselines): K independently trained single-model
federations, combined by soft voting."""
import copy
from typing import Annotated

import torch

from ..rng import derived_seed
from ..rules import AtLeast
from .base import Algorithm, concat_plans
from .fold import Parts
from .work import RoundWork


class Ensemble(Algorithm):
    """`num_clusters` copies of `base` (FedAvg or FedProx), each with its own initialisation
    and random streams, trained side by side on all clients (one batched computation per
    round). A client predicts with the mean of the members' softmax outputs (soft voting);
    the returned scores are the log of that mean, so argmax and cross-entropy apply."""
    name = "ensemble"

    def training_rows(self, num_clients: int) -> int:
        return sum(m.training_rows(num_clients) for m in self.members)

    def round_work(self, t, num_clients):
        """The members' rounds side by side (identical copies: K times one member's)."""
        one, K = self.members[0].round_work(t, num_clients), len(self.members)
        return RoundWork(K * one.trained, one.solver_scale, K * one.scored, one.row_passes)

    def evaluated_models(self, t, num_clients):
        """Every member's predictor, soft-voted."""
        return sum(m.evaluated_models(t, num_clients) for m in self.members)

    def __init__(self, base: Algorithm, num_clusters: Annotated[int, AtLeast(1)] = 5):
        self.base_name = base.name
        self.name = f"{base.name}_ensemble"
        self.members = [copy.deepcopy(base) for _ in range(num_clusters)]

    def _view(self, fed, j: int):
        return fed.with_seed(derived_seed(fed.seed, "ensemble-member", j))

    def setup(self, fed):
        for j, member in enumerate(self.members):
            member.setup(self._view(fed, j))

    def plan(self, t, fed):
        return concat_plans([m.plan(t, self._view(fed, j)) for j, m in enumerate(self.members)])

    def aggregation(self, t, plan, fed):
        """Each member's own aggregation of its part of the round's rows."""
        return Parts([(len(p.clients), member.aggregation(t, p, self._view(fed, j)))
                      for j, (member, p) in enumerate(zip(self.members, plan.parts))])

    def predictors(self, fed, split, partner=None):
        """The members' local predictors, soft-voted (their labelled alternatives are not the ensemble's)."""
        return {"local": soft_vote([m.predictors(self._view(fed, j), split)["local"] for j, m in enumerate(self.members)])}

    def newcomer_predictors(self, fed, newcomers, split):
        """A newcomer gets the members' vote, each member serving it by its own rule (FedAvg+: the K global models)."""
        return {"local": soft_vote([m.newcomer_predictors(self._view(fed, j), self._view(newcomers, j), split)["local"]
                                    for j, m in enumerate(self.members)])}

    def local_models(self, fed):
        return self.members[0].local_models(fed)

    def state_dict(self):
        return {"members": [m.state_dict() for m in self.members]}

    def load_state_dict(self, state):
        for m, s in zip(self.members, state["members"]):
            m.load_state_dict(s)


def soft_vote(logits) -> torch.Tensor:
    """log of the mean of softmax(logits_j) over members j."""
    probs = torch.stack([torch.softmax(z, dim=-1) for z in logits]).mean(0)
    return probs.clamp_min(1e-30).log()
