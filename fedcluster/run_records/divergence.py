"""Stop a run whose local training diverged, naming the round, the client and `train.lr`.

A row diverged when any of its losses or parameters is NaN/inf, or when the loss of its last
batch exceeds `divergence_factor` (default 1e4) times the reference: the mean, over the
clients of the first trained round, of the loss of each one's first batch, i.e. the starting
models' loss. Healthy training lowers the loss; a growth by four orders of magnitude over the
starting loss is an exploding optimizer (e.g. `train.lr=1e6`), not learning. The mean, not the
median: a starting model can fit some clients' first batches almost exactly (a saturated softmax
on clients of one class, on unscaled features), and a median of those near-zero losses (1.3e-05 on
a user's wine table) made a healthy loss of 52 read as a 4e6-fold growth, at any learning rate."""
from typing import Optional

import torch

from ..errors import NonFiniteLossError
from ..models.stacked import all_finite


class DivergenceWatch:
    def __init__(self, factor: Optional[float], lr: float, reference: Optional[float] = None):
        self.factor, self.lr, self.reference = factor, lr, reference

    def state_dict(self) -> dict:
        return {"reference": self.reference}

    def load_state_dict(self, state: dict) -> None:
        self.reference = state.get("reference")

    def check(self, t: int, clients: torch.Tensor, result) -> None:
        """Raise NonFiniteLossError if round t's training diverged (one host read per round). The
        message counts rounds from 1, as the progress lines do (t is the 0-based round index)."""
        bad = ~(result.finite & all_finite(result.params)) if result.params else ~result.finite
        M = len(clients)
        if bool(bad.any()):
            k = int(clients[torch.nonzero(bad)[0, 0]])
            raise NonFiniteLossError(f"round {t + 1}: training loss became NaN/inf at client {k} "
                                     f"({int(bad.sum())} of {M} clients) with train.lr={self.lr}; "
                                     "lower train.lr or check the data")
        if self.factor is None or result.first_loss is None:
            return
        if self.reference is None:
            start = result.first_loss[torch.isfinite(result.first_loss)]
            self.reference = float(start.mean()) if len(start) else None
            if self.reference is None:
                return
        floor = max(self.reference, 1e-8)
        ratio = result.last_loss / floor
        worst = int(torch.argmax(ratio))
        if float(ratio[worst]) > self.factor:
            raise NonFiniteLossError(
                f"round {t + 1}: training diverged at client {int(clients[worst])}: loss "
                f"{float(result.last_loss[worst]):.3g}, {float(ratio[worst]):.2g}x the starting loss "
                f"{self.reference:.3g} (divergence_factor={self.factor:g}) with train.lr={self.lr}; lower train.lr")
