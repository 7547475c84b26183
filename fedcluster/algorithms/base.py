"""What an algorithm decides; the round loop (fedcluster.runner) does everything else.

Each round the loop asks `plan(t)` which clients train, from which parameters and on
which terms of the local objective (local_training/terms.py); it trains them (batched or sequential engine), or only takes each
one's full-batch gradient when the plan says `local="gradient"`, and folds the results into
`aggregation(t, plan, fed)`, the method's one statement of how they reduce (algorithms/fold.py). Between rounds it evaluates `cluster_models()`
on every distribution's test set and `predictors()` (each client's own predictor) on
every client's data, and `newcomer_models()` on the clients held out of training."""
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import torch

from ..local_training.forward import outputs_paired
from ..local_training.terms import Term, concat_terms
from ..models.rows import Rows, cat_rows
from ..models.stacked import HOST, Stack, on_device
from ..rules import CheckedSettings
from .run_view import RunView
from .fold import Fold
from .wire import Message, exchange
from .work import RoundWork


@dataclass
class Phase:
    """One stage of a round's local training that updates only some parameters: FedPAC's head
    epoch with the feature extractor frozen, then the extractor's epochs with the head frozen
    (Xu et al., ICLR 2023; the authors' methods/fedpac.py local_training). Each phase starts from the previous phase's parameters with
    fresh optimizer state (the authors' and PFLlib's FedPAC build a new optimizer per phase;
    with the plan's `keep_client_state` the state carries over), and runs its own terms."""
    trainable: Tuple[str, ...]             # parameter names this phase updates; the others stay as they are
    epochs: Optional[int] = None           # passes over each client's data; None: the run's train.epochs/steps
    terms: List[Term] = field(default_factory=list)


@dataclass
class RoundPlan:
    clients: torch.Tensor                  # [M] indices of the clients that train this round (may repeat)
    start: "Stack | Rows"                  # [M] their starting parameters (Rows: read when trained)
    terms: List[Term] = field(default_factory=list)   # of the local objective (local_training/terms.py)
    # What the clients compute: "train" (local training by the engines; the aggregation gets the
    # trained parameters) or "gradient" (no step: each row's gradient of its client's mean loss
    # over all its training samples at `start`; the aggregation gets those gradients, CLoVE Option II)
    local: str = "train"
    parts: List["RoundPlan"] = field(default_factory=list)   # the plans this one joins (concat_plans)
    # Local training in stages, each updating some parameters (Phase); empty: one stage that
    # updates every parameter on `terms` for the run's epochs. A plan with phases has no `terms`.
    phases: List[Phase] = field(default_factory=list)
    # True: each row's optimizer state (Adam's moments, momentum) is its client's own, carried over from the
    # client's last round (created at its first), as the local solvers of FedSoft's, Local-only's and
    # FedProto's code keep theirs; False: every row starts from fresh state (record.py keeps the state)
    keep_client_state: bool = False

    def __post_init__(self):
        if self.keep_client_state and self.local == "gradient":
            raise ValueError("RoundPlan: a gradient-only plan takes no step, so it has no optimizer state to keep")

    def term(self, kind):
        """This plan's term of type `kind`, or None."""
        return next((t for t in self.terms if isinstance(t, kind)), None)

    def split(self, trained: Stack) -> List[Stack]:
        """The trained rows of each part, in order (inverse of concat_plans)."""
        return split_rows(trained, [len(p.clients) for p in self.parts])


def concat_plans(plans: List[RoundPlan]) -> RoundPlan:
    """One plan that trains the rows of all `plans` together, each with its own terms (see
    terms.concat_terms); `parts` keeps the plans, so the aggregation gets each one's rows back (fold.Parts, or
    `plan.split(trained)` over all of them). Used to train several models per client in one batched computation
    (Fed-CAM's two threads, ensemble members, FedEM's components)."""
    if any(p.local != "train" for p in plans):
        raise ValueError("concat_plans: only training plans can be trained together")
    if any(p.phases for p in plans):
        raise ValueError("concat_plans: plans trained in phases are not trained together")
    if len({p.keep_client_state for p in plans}) > 1:
        raise ValueError("concat_plans: plans that keep client state are not trained with plans that do not")
    clients = torch.cat([p.clients for p in plans])
    start = cat_rows([p.start for p in plans])
    terms = concat_terms([p.terms for p in plans], [len(p.clients) for p in plans])
    return RoundPlan(clients, start, terms, parts=list(plans), keep_client_state=plans[0].keep_client_state)


def split_rows(stack: Stack, sizes: List[int]) -> List[Stack]:
    """Inverse of concatenating plans: the trained rows of each plan, in order."""
    parts = {k: torch.split(v, sizes) for k, v in stack.items()}
    return [{k: parts[k][i] for k in stack} for i in range(len(sizes))]


class Algorithm(CheckedSettings, group="algorithm"):   # declared rules checked when built (rules.py)
    name = "algorithm"
    reads_features = False      # True: training or prediction calls model(x, with_features=True) (assemble.py checks the model)
    # The attributes that change from round to round and that a checkpoint saves (record.py): a
    # resumed run restores them after `setup`, so everything else must follow from the config
    # and the data. Declared by each class; tests/runs/test_algorithm_state.py finds undeclared ones.
    state: Tuple[str, ...] = ()
    host_state: Tuple[str, ...] = ()   # of `state`: per-client Stacks kept in host memory (components.personal_models)

    def training_rows(self, num_clients: int) -> int:
        """How many models one round trains at once (the rows of its batched training job), for
        the memory check before anything is built (data/budget.py): one per sampled client
        unless a subclass trains more. Never more than a round can train, so the check stays a
        lower bound."""
        fraction = getattr(self, "client_fraction", 1.0)
        return max(1, round(fraction * num_clients))

    def round_work(self, t: int, num_clients: int) -> RoundWork:
        """What round t computes (algorithms/work.py), for `fedcluster estimate`: by default every row of
        `training_rows` trains its client's solver once and nothing is scored. A method that scores models on
        the clients' data, trains more than the run's solver or passes over the data besides says so."""
        return RoundWork(self.training_rows(num_clients))

    def evaluated_models(self, t: int, num_clients: int) -> float:
        """Models run over each client's sample when the method's predictors are scored (`predictors`): one, a
        client's own, unless a predictor combines several (FedEM's mixture: M) or more are reported."""
        return 1.0

    def evaluation_training(self, t: int, num_clients: int) -> float:
        """Samples an evaluation trains on (forward and backward) before it scores: none, unless a method's
        predictor is adapted first (Per-FedAvg's one step per client)."""
        return 0.0

    def setup(self, fed: RunView) -> None:
        raise NotImplementedError

    def plan(self, t: int, fed: RunView) -> RoundPlan:
        raise NotImplementedError

    def aggregation(self, t: int, plan: RoundPlan, fed: RunView) -> Fold:
        """How this round's trained rows reduce into the method's models, stated once, as a fold over the chunks of
        rows the round trains (algorithms/fold.py): a sum over clients folds chunk by chunk; an aggregation that
        needs every update at once is written over all of them and marked `@gathered`."""
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        old = [name for name in ("aggregate", "fold", "round_fold") if name in cls.__dict__]
        if old:
            raise TypeError(f"{cls.__qualname__} defines {old[0]}(): an algorithm states its aggregation once, as "
                            "aggregation(t, plan, fed) -> Fold (algorithms/fold.py); one written over every trained "
                            "row at once is `@gathered def aggregation(self, t, plan, trained, fed)`")
        if "aggregation" in cls.__dict__ and "client_dp_refusal" not in cls.__dict__:
            # a new aggregation is not the private mean its base's may be: client_dp is refused until the class says
            cls.client_dp_refusal = Algorithm.client_dp_refusal

    def client_dp_refusal(self) -> Optional[str]:
        """Why privacy=client_dp is refused for this method (None: its aggregation is DP-FedAvg's private mean, by
        RunView.mean_fold). A class that states its own `aggregation` is refused unless it says otherwise here."""
        return "its aggregation is not a mean of its clients' updates, so DP-FedAvg's mechanism does not apply to it"

    def client_dp_release(self, fed: RunView):
        """The method's private release (privacy.Release): each client takes part with probability
        `client_fraction` (Poisson, RunView.sample_clients), each of the K models' means divides by the expected
        number of its clients, q N / K, and a client's update enters one model's sum."""
        from ..privacy import Release
        rate = float(getattr(self, "client_fraction", 1.0))
        return Release(rate, rate * fed.num_clients / max(1, int(getattr(self, "num_clusters", 1) or 1)))

    def messages(self, t: int, plan: RoundPlan, fed: RunView) -> List[Message]:
        """What crossed the wire in round t for this plan (algorithms/wire.py), per kind and direction, for the
        clients that report; asked once the round has trained and aggregated. Default: FedAvg's exchange, each planned row's starting model down and its result
        up (`wire.exchange`); a method that sends more, less or other things than one model each way says so."""
        return exchange(plan)

    def cluster_models(self) -> Optional[Stack]:
        """[K] models meant to serve whole distributions (None if the method has none)."""
        return None

    def local_models(self, fed: RunView) -> Stack:
        """[N] each client's own (personalized) model."""
        raise NotImplementedError

    def predictors(self, fed: RunView, split, partner: Optional[torch.Tensor] = None) -> dict:
        """The one scoring hook evaluation calls: every predictor scored for each client on its samples of `split`
        (a ClientSplit), as outputs [N, Nmax, ...]. {"local": outputs}, which no label of `split` may influence
        (tests/runs/test_label_free_scoring.py; default: each client's `local_models` row), plus, for a method that
        can predict more than one way from the same training, {"local:<name>": outputs} (FedEM: mixture and top
        component; IFCA's `label_pick`, its paper code's re-pick of each client's model by the loss on the data
        scored, reported in a column of its own and never scoring the method), so one run reports them all.
        `partner`: logits [N, Nmax, ...] the outputs will be added to (Fed-CAM's h): a predictor that picks by a
        loss picks by the sum's. The outputs are returned without it."""
        return {"local": outputs_paired(fed.model, self.local_models(fed), split.x, split.n, fed.batched_forward)}

    def newcomer_models(self, fed: RunView, newcomers: RunView) -> Optional[Stack]:
        """[N'] the model this method gives each client that joins after training (partition.holdout_clients,
        data/holdout.py), chosen by the method's own rule from the newcomers' training data alone
        (`newcomers.data.train`; their test data is what the model is then scored on; `newcomers.train(plan)`
        trains a plan's rows on it, for a rule that reads a locally trained model). `fed`: the trained clients'
        run. None (default): the method has no such rule, and a run that holds clients out is refused
        (`serves_newcomers`)."""
        return None

    def newcomer_predictors(self, fed: RunView, newcomers: RunView, split) -> dict:
        """The newcomers' predictors on their `split`, as `predictors` gives the trained clients': by default
        each newcomer's `newcomer_models` row; a method whose predictor is not one model (FedEM's mixture,
        CAM's h + f) overrides it."""
        models = self.newcomer_models(fed, newcomers)
        return {"local": outputs_paired(newcomers.model, models, split.x, split.n, newcomers.batched_forward)}

    def assignment_weights(self) -> Optional[torch.Tensor]:
        """[N, K] each client's weight on each cluster model (importance weights, or one-hot)."""
        return None

    def cluster_sizes(self) -> Optional[torch.Tensor]:
        """[K] clients per cluster by largest weight, for the clustering-collapse plots. A client
        whose largest weight is shared by several clusters (soft weights of a client with few
        samples, FedSoft) counts 1/ties in each, instead of wholly in the first (argmax's pick,
        which inflated cluster 0); one-hot assignments give whole counts as before."""
        w = self.assignment_weights()
        if w is None:
            return None
        top = (w == w.max(1, keepdim=True).values).to(torch.float64)
        return (top / top.sum(1, keepdim=True)).sum(0)

    def artifacts(self) -> dict:
        """{name: DataFrame} extra tables the run writes as <name>.csv when it ends (CFL's split
        log, the last round's loss vectors of IFCA and CLoVE)."""
        return {}

    def state_dict(self) -> dict:
        """The declared `state` attributes that are set (None: not yet, e.g. before round 1)."""
        return {k: getattr(self, k) for k in self.state if getattr(self, k, None) is not None}

    def load_state_dict(self, state: dict) -> None:
        for k in self.state:
            if k in state:   # a checkpoint is read onto the compute device; host-kept state goes back
                setattr(self, k, on_device(state[k], HOST) if k in self.host_state else state[k])


def weighted_mean_rows(stack: Stack, index: torch.Tensor, weights: torch.Tensor) -> Stack:
    """sum_i weights[i] * stack[index[i]] / sum(weights), as a single-row stack."""
    w = (weights / weights.sum()).to(next(iter(stack.values())).dtype)
    return {k: torch.einsum("m,m...->...", w, v[index]).unsqueeze(0) for k, v in stack.items()}


def random_assignment(n: int, k: int, g: torch.Generator) -> torch.Tensor:
    """[n] a random model in 0..k-1 for each of n clients, every model getting at least one
    client (at most one each when n < k: then n distinct models).

    Random first round of CLoVE §5.2 ('first:r'). The authors' code (utils/algorithm_utils.py,
    clustered_federated_training_function) draws each client's model uniformly and then gives
    every model that drew no client a randomly chosen client. Its fix-up may take the only client
    of another model; here the client moved to an empty model is drawn among those whose model
    keeps at least one other client, so no model is left empty."""
    if n < k:
        return torch.randperm(k, generator=g)[:n]
    labels = torch.randint(0, k, (n,), generator=g)
    for j in range(k):
        if (labels == j).any():
            continue
        counts = torch.bincount(labels, minlength=k)
        movable = torch.nonzero(counts[labels] > 1).squeeze(1)
        labels[movable[torch.randint(len(movable), (1,), generator=g)]] = j
    return labels


def serves_newcomers(cls) -> bool:
    """Whether algorithm class `cls` serves a client it never trained (overrides `newcomer_models` or
    `newcomer_predictors`)."""
    return isinstance(cls, type) and issubclass(cls, Algorithm) and (
        cls.newcomer_models is not Algorithm.newcomer_models
        or cls.newcomer_predictors is not Algorithm.newcomer_predictors)
