"""A round's private aggregation: the fold (algorithms/fold.py) that a method whose aggregation is a mean of its
clients' results takes in place of WeightedMeans (fold.py) under privacy=client_dp (RunView.mean_fold).

Each trained row's update is its result less the model it started from (a gradient plan's result is its update);
the update is clipped as its chunk finishes and added to its group's sum, so the round still holds one chunk of
rows. `finish` gives every one of the K models its noised mean (privacy/mechanism.py, ClientDP.noised_means): a model that no
client of the round chose moves by noise alone, since whether a model had clients is itself what the noise hides.
`done` receives {j: the new single-row model} for every j in 0..K-1, as WeightedMeans' `done` does for the
groups it saw."""
from typing import Callable, Dict

import torch

from .fold import Fold
from ..models.rows import take_rows
from ..models.stacked import Stack
from ..privacy.mechanism import ClientDP, Release


class PrivateMeans(Fold):
    """For each model j of `models` [K]: models_j + (sum_{m in j} clip(update_m) + noise) / D."""

    def __init__(self, plan, groups: torch.Tensor, models: Stack, mechanism: ClientDP, release: Release,
                 g: torch.Generator, done: Callable[[Dict[int, Stack]], None]):
        self.plan, self.groups, self.models, self.mechanism = plan, groups, models, mechanism
        self.release, self.g, self.done = release, g, done
        self.sums = {k: torch.zeros_like(v) for k, v in models.items()}   # [K, ...]

    def add(self, rows, trained):
        updates = trained
        if self.plan.local != "gradient":
            start = take_rows(self.plan.start, rows)
            updates = {k: v - start[k].to(v.device) for k, v in trained.items()}
        clipped = self.mechanism.clip(updates)
        groups = self.groups[rows].to(next(iter(self.sums.values())).device)
        for k, v in clipped.items():
            self.sums[k].index_add_(0, groups, v.to(self.sums[k].dtype))

    def finish(self):
        means = self.mechanism.noised_means(self.sums, self.release, self.g)
        K = next(iter(self.models.values())).shape[0]
        base = {k: torch.zeros_like(v) for k, v in self.models.items()} if self.plan.local == "gradient" else self.models
        self.done({j: {k: (base[k][j] + means[k][j]).unsqueeze(0) for k in self.models} for j in range(K)})
