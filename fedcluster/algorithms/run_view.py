"""What algorithms may use of a run: the clients' data, the model, and the run's random streams."""
from dataclasses import dataclass, replace
from typing import Callable, Optional, Tuple

import torch

from ..data import FederatedData
from ..local_training.forward import losses_on_clients
from ..models.stacked import Stack, init_stack
from ..rng import derived_seed, generator
from .fold import WeightedMeans


@dataclass
class RunView:
    """What algorithms may use: the clients' data, the model, and the run's random streams."""
    data: FederatedData
    model: torch.nn.Module
    build_model: Callable[[], torch.nn.Module]
    seed: int
    device: torch.device
    dtype: torch.dtype
    train_offsets: Optional[torch.Tensor] = None   # [N, Nmax, C] added to every model's outputs (Fed-CAM)
    # how each client's model runs on its own data in evaluation: vmap over the clients (the batched
    # engine's formulation) or a loop (what the looped and sequential engines measured faster)
    batched_forward: bool = False
    batch_size: Optional[int] = None   # the run's train.batch_size: the local solver's mini-batches
    # the clients kept out of training (partition.holdout_clients, data/holdout.py), scored as newcomers
    newcomers: Optional[FederatedData] = None
    newcomer_ids: Tuple[int, ...] = ()   # their ids in the partition (the trained clients are renumbered 0..N-1)
    # the run's local training of a plan's rows on these clients' data (given to the newcomer view only: `train`)
    local_training: Optional[Callable] = None
    # the run's privacy mechanism (conf/privacy/, fedcluster/privacy): None or inactive, every method aggregates as
    # its paper states; ClientDP: a mean of the clients' results is DP-FedAvg's private mean (`mean_fold`)
    privacy: Optional[object] = None

    def with_offsets(self, offsets: Optional[torch.Tensor]) -> "RunView":
        """A view in which every loss on training data is of offsets + model (CAM's eq. 2)."""
        return replace(self, train_offsets=offsets)

    def with_seed(self, seed: int) -> "RunView":
        """A view with its own random streams (an ensemble member)."""
        return replace(self, seed=seed)

    def newcomer_view(self, local_training: Optional[Callable] = None) -> "RunView":
        """The run seen from its held-out clients: their data in place of the trained clients' (same model,
        streams and device), for a method's rule that picks a newcomer's model (Algorithm.newcomer_models).
        `local_training(plan, view) -> Stack`: the run's local training (evaluation.py), for a rule that reads a
        newcomer's locally trained model (`train`)."""
        return replace(self, data=self.newcomers, newcomers=None, newcomer_ids=(), train_offsets=None,
                       local_training=local_training)

    def train(self, plan) -> Stack:
        """The plan's rows (these clients, from the plan's start) trained as a round trains them, on the clients'
        own training data, the view's offsets (CAM's h) frozen in their objective: the trained parameters. For a
        newcomer rule that reads a locally trained model or update (FeSEM, CFL, FlexCFL); only the newcomer view
        of an evaluation has it."""
        if self.local_training is None:
            raise RuntimeError("RunView.train: local training is given only to the newcomer view of an evaluation")
        if self.train_offsets is not None:   # a plan in phases carries its terms in each phase
            from ..local_training.terms import FrozenOffset
            offset = FrozenOffset(self.train_offsets[plan.clients])
            if plan.phases:
                plan = replace(plan, phases=[replace(p, terms=list(p.terms) + [offset]) for p in plan.phases])
            else:
                plan = replace(plan, terms=list(plan.terms) + [offset])
        return self.local_training(plan, self)

    @property
    def num_clients(self) -> int:
        return self.data.num_clients

    @property
    def sizes(self) -> torch.Tensor:
        """n_k, the number of training samples of each client."""
        return self.data.train.n.to(self.device)

    def init_models(self, count: int, purpose: str) -> Stack:
        return init_stack(self.build_model, count, derived_seed(self.seed, purpose), self.device, self.dtype)

    def mean_fold(self, t: int, plan, groups: torch.Tensor, weights: torch.Tensor, models: Stack, done, release):
        """The round's mean of its clients' results, one per group (`groups` [M] indexes the K rows of `models`,
        the models the rows trained from): the `weights`-weighted means (fold.WeightedMeans) or, under
        privacy=client_dp, DP-FedAvg's private means of the updates (private_means.py, `release` the
        method's declaration, Algorithm.client_dp_release), noised from the round's own stream."""
        if not self.private:
            return WeightedMeans(groups, weights, done)
        from .private_means import PrivateMeans
        return PrivateMeans(plan, groups, models, self.privacy, release, self.generator("client-dp", t), done)

    def generator(self, purpose: str, *keys: int) -> torch.Generator:
        return generator(self.seed, purpose, *keys)

    def train_losses(self, models: Stack) -> torch.Tensor:
        """Per-sample loss of each model on each client's training data: [K, N, Nmax] (padding = +inf)."""
        tr = self.data.train
        return losses_on_clients(self.model, self.data.task, models, tr.x, tr.y, tr.mask, self.train_offsets)

    def mean_train_losses(self, models: Stack) -> torch.Tensor:
        """Mean loss of each model on each client's training data: [N, K]."""
        losses = self.train_losses(models).masked_fill(~self.data.train.mask.unsqueeze(0), 0.0)
        return (losses.sum(2) / self.sizes.clamp_min(1).to(losses.dtype)).T

    @property
    def private(self) -> bool:
        return bool(getattr(self.privacy, "active", False))

    def sample_clients(self, fraction: float, t: int, dropout: float = 0.0) -> torch.Tensor:
        """The clients that report in round t: a random subset of round(fraction * N) clients (all when
        fraction = 1), less those that drop out. Each sampled client drops out with chance `dropout` (the
        method's client_dropout), from its own seeded stream, so the sample is the same with and without
        dropouts; at least one client reports (the one whose draw is highest). Under privacy=client_dp the
        sample is Poisson, as DP-FedAvg's accounting assumes: each client takes part with probability
        `fraction`, independently (a round may then have none), and no client is kept back from dropping out."""
        N = self.num_clients
        m = max(1, round(fraction * N))
        if self.private and fraction < 1:
            chosen = torch.nonzero(torch.rand(N, generator=self.generator("participation", t)) < fraction).squeeze(1)
        elif m >= N:
            chosen = torch.arange(N)
        else:
            chosen = torch.sort(torch.randperm(N, generator=self.generator("participation", t))[:m]).values
        if dropout > 0:
            draws = torch.rand(len(chosen), generator=self.generator("dropout", t))
            stays = draws >= dropout
            if not self.private and len(chosen):
                stays[int(draws.argmax())] = True
            chosen = chosen[stays]
        return chosen.to(self.device)
