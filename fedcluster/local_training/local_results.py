"""What local training hands back: each row's parameters, optimizer state and loss records."""
from dataclasses import dataclass
from typing import Optional

import torch

from ..models.stacked import Stack


@dataclass
class LocalResult:
    params: Stack
    opt_state: dict
    last_loss: torch.Tensor         # [M] data loss of the last batch each row trained on
    finite: torch.Tensor            # [M] False if any step of that row saw a NaN/inf loss
    first_loss: Optional[torch.Tensor] = None   # [M] data loss of each row's first batch (its starting model)


class RowLosses:
    """Each row's first and last batch loss (float32, whatever the data's dtype) and whether all
    its losses were finite, kept on the device (read once per round). The first loss is the
    starting model's: the runner's divergence check compares later losses with it."""

    def __init__(self, M: int, device):
        self.first = torch.zeros(M, device=device)
        self.last = torch.zeros(M, device=device)
        self.seen = torch.zeros(M, dtype=torch.bool, device=device)
        self.finite = torch.ones(M, dtype=torch.bool, device=device)

    def record(self, rows: torch.Tensor, loss: torch.Tensor, active: Optional[torch.Tensor] = None) -> None:
        """Rows `rows` (indices) computed a step with data losses `loss`; with `active` (bool,
        one per row of `rows`) only those rows had samples and count."""
        loss = loss.detach().to(self.last.dtype)
        if active is None:
            self.first[rows] = torch.where(self.seen[rows], self.first[rows], loss)
            self.seen[rows] = True
            self.last[rows] = loss
            self.finite[rows] &= torch.isfinite(loss)
            return
        if len(rows) != len(self.last):
            raise ValueError("RowLosses.record: an `active` mask is given for all rows at once")
        self.first = torch.where(active & ~self.seen, loss, self.first)
        self.seen |= active
        self.last = torch.where(active, loss, self.last)
        self.finite &= torch.isfinite(loss) | ~active

    def result(self, params: Stack, state: dict) -> LocalResult:
        return LocalResult(params, state, self.last, self.finite, self.first)
