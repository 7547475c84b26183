"""A round's aggregation taken chunk by chunk: the trained rows are folded in as each chunk of
clients finishes (engine/clients.py) and freed, so a round needs memory for one chunk of trained
rows and the server's models, not for every client's (Build: bounded memory).

An algorithm whose aggregation is a sum over its clients' rows says so with `fold(t, plan, fed)`
(algorithms/base.py), returning one of these; `finish()` then does what its `aggregate` did
with the sums. One whose aggregation needs every update at once (CFL's pairwise similarities,
FlexCFL's grouping, FedPAC's head weights) returns None, and the runner gathers the
trained rows, one copy per row, and calls `aggregate`. PACFL's grouping is made in its plan, so its
aggregation (the clustered means) folds.

With one chunk each fold computes exactly what `aggregate` computes (same operations, same
order), so the bytes of a run do not change; with several, the sum of a group's rows is the sum
of the chunks' sums: the same value up to float rounding."""
from typing import Callable, Dict, List, Tuple

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
