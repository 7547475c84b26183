"""A round's aggregation, the one way a method states how its clients' updates reduce: the trained
rows are folded in as each chunk of clients finishes (local_training/clients.py) and freed, so a round needs
memory for one chunk of trained rows and the server's models, not for every client's (Build: bounded
memory).

Each algorithm's `aggregation(t, plan, fed)` (algorithms/base.py) returns one of these; the round
(runner.train_round) hands it every chunk's rows (`add`) and then calls `finish()`. An aggregation
that is a sum over its clients' rows folds chunk by chunk (WeightedMeans, MixedSums, KeepRows). One
that needs every update at once (CFL's pairwise similarities, FlexCFL's grouping, FedPAC's head
weights, FedProto's prototypes) says so with `@gathered`: its rows are collected (`Gathered`, one
copy per row; none when one chunk holds them all) and handed over together. PACFL's grouping is made
in its plan, so its aggregation (the clustered means) folds.

With one chunk each fold computes exactly what the same aggregation over all rows at once computes
(same operations, same order), so the bytes of a run do not change; with several, the sum of a
group's rows is the sum of the chunks' sums: the same value up to float rounding."""
import functools
from typing import Callable, Dict, List, Optional, Tuple

import torch

from ..models.stacked import Stack, put_rows


class Fold:
    """Takes the trained rows of consecutive chunks (`add`), then applies the round's result (`finish`)."""

    def add(self, rows: slice, trained: Stack) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        raise NotImplementedError


class WeightedMeans(Fold):
    """For each group j, sum_{m in j} w_m theta_m / sum_{m in j} w_m over the round's rows
    (FedAvg's global model, McMahan et al. 2017 eq. 1, with w = n_k; a cluster model as the
    n_i-weighted mean of its clients, IFCA Alg. 1 / CLoVE Alg. 1). `done({j: single-row Stack})`
    gets the means of the groups that had rows, in increasing j."""

    def __init__(self, groups: torch.Tensor, weights: torch.Tensor, done: Callable[[Dict[int, Stack]], None]):
        self.groups, self.weights, self.done = groups, weights, done
        # each group's total weight, summed over its rows in order, as weighted_mean_rows sums them
        self.totals = {int(j): weights[torch.nonzero(groups == j).squeeze(1)].sum()
                       for j in torch.unique(groups).tolist()}
        self.sums: Dict[int, Stack] = {}

    def add(self, rows, trained):
        groups, weights = self.groups[rows], self.weights[rows]
        for j in torch.unique(groups).tolist():
            members = torch.nonzero(groups == j).squeeze(1)
            dtype = next(iter(trained.values())).dtype
            w = (weights[members] / self.totals[j]).to(dtype)
            part = {k: torch.einsum("m,m...->...", w, v[members]) for k, v in trained.items()}
            if j in self.sums:
                for k in part:
                    self.sums[j][k].add_(part[k])
            else:
                self.sums[j] = part

    def finish(self):
        self.done({j: {k: v.unsqueeze(0) for k, v in self.sums[j].items()} for j in sorted(self.sums)})


class MixedSums(Fold):
    """sum_m W[m, k] theta_m for every model k ([K] rows), W [M, K] given; `done(sums)`."""

    def __init__(self, weights: torch.Tensor, done: Callable[[Stack], None]):
        self.weights, self.done, self.sums = weights, done, None

    def add(self, rows, trained):
        part = {k: torch.einsum("mk,m...->k...", self.weights[rows].to(v.dtype), v) for k, v in trained.items()}
        if self.sums is None:
            self.sums = part
        else:
            for k in part:
                self.sums[k].add_(part[k])

    def finish(self):
        self.done(self.sums)


class KeepRows(Fold):
    """Personal models: each client's trained row replaces its own (FedSoft's w_k, local-only
    training), written as its chunk finishes; `done()` then runs what depends on all of them.
    The plan's clients must be distinct, so no later chunk starts from a row written earlier."""

    def __init__(self, models: Stack, clients: torch.Tensor, done: Callable[[], None] = lambda: None):
        if len(torch.unique(clients)) != len(clients):
            raise ValueError("KeepRows: a client appears twice in the round's plan")
        self.models, self.clients, self.done = models, clients, done

    def add(self, rows, trained):
        put_rows(self.models, self.clients[rows], trained)   # the models may be kept in host memory

    def finish(self):
        self.done()


class Parts(Fold):
    """Plans trained together (base.concat_plans): each part's rows go to that part's fold."""

    def __init__(self, parts: List[Tuple[int, Fold]]):
        self.parts = []          # (first row, end row, fold)
        start = 0
        for size, fold in parts:
            self.parts.append((start, start + size, fold))
            start += size

    def add(self, rows, trained):
        for lo, hi, fold in self.parts:
            a, b = max(rows.start, lo), min(rows.stop, hi)
            if a < b:
                fold.add(slice(a - lo, b - lo), {k: v[a - rows.start: b - rows.start] for k, v in trained.items()})

    def finish(self):
        for _, _, fold in self.parts:
            fold.finish()


class Gathered(Fold):
    """An aggregation that needs every trained row of the round at once: the chunks' rows are collected into one
    stack of `rows` rows (a chunk that holds all of them is taken as it is, without a copy) and `done(trained)`
    gets them all when the round finishes."""

    def __init__(self, rows: int, done: Callable[[Optional[Stack]], None]):
        self.rows, self.done, self.trained = rows, done, None

    def add(self, rows, trained):
        if self.trained is None and rows.start == 0 and rows.stop == self.rows:   # one chunk: its rows are the round's
            self.trained = trained
            return
        if self.trained is None:
            self.trained = {k: v.new_empty(self.rows, *v.shape[1:]) for k, v in trained.items()}
        for k, v in trained.items():
            self.trained[k][rows] = v

    def finish(self):
        self.done(self.trained)


def gathered(method):
    """Declares an aggregation that needs every update at once: `method(self, t, plan, trained, fed)`, written
    over all of the round's trained rows, becomes the class's `aggregation(t, plan, fed)`, a `Gathered` fold
    that calls it with them."""
    @functools.wraps(method)
    def aggregation(self, t, plan, fed):
        return Gathered(len(plan.clients), lambda trained: method(self, t, plan, trained, fed))
    aggregation.gathers = True
    return aggregation


class Then(Fold):
    """`fold`, then `after()` once it has finished (Per-FedAvg: FedAvg's mean, then its personal models are
    stale)."""

    def __init__(self, fold: Fold, after: Callable[[], None]):
        self.fold, self.after = fold, after

    def add(self, rows, trained):
        self.fold.add(rows, trained)

    def finish(self):
        self.fold.finish()
        self.after()


def aggregate_at_once(fold: Fold, trained: Stack) -> None:
    """`fold` given all of a round's trained rows as one chunk, then finished: what the round does when one chunk
    holds every row (a method that aggregates a subset of its rows with another's rule; tests)."""
    rows = len(next(iter(trained.values()))) if trained else 0
    fold.add(slice(0, rows), trained)
    fold.finish()
