"""FedTrim (Yin et al., ICML 2018, "Byzantine-robust distributed learning", the coordinate-wise
trimmed mean): FedAvg's round, with the global model replaced by the mean of the clients' trained
values after dropping, per coordinate, the `trim` share of the largest and of the smallest."""
import math
from typing import Annotated

import torch

from fedcluster.algorithms import FedAvg, gathered
from fedcluster.rules import Between, ClientFraction


def trimmed_mean(stacked: torch.Tensor, trim: float) -> torch.Tensor:
    """Per coordinate over dim 0: the mean of the values left after dropping floor(trim * n) from
    each end (trim 0: the plain mean; nothing is dropped when that would leave no value)."""
    n = stacked.shape[0]
    cut = math.floor(trim * n)
    if n - 2 * cut < 1:
        cut = (n - 1) // 2
    ordered = stacked.sort(dim=0).values
    return ordered[cut:n - cut].mean(dim=0, keepdim=True)


class FedTrim(FedAvg):
    name = "fedtrim"

    def __init__(self, trim: Annotated[float, Between(0, 0.5, hi_open=True)] = 0.1,
                 client_fraction: ClientFraction = 1.0):   # the setting every sampling method shares
        super().__init__(client_fraction)
        self.trim = trim

    @gathered   # a per-coordinate sort needs every client's model at once
    def aggregation(self, t, plan, trained, fed):
        self.global_model = {k: trimmed_mean(v, self.trim) for k, v in trained.items()}
