"""Which samples each job row (a client training one model) uses at each optimizer step.

Every gradient formulation reads the same schedule, so they visit the same mini-batches in
the same order."""
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class Schedule:
    index: torch.Tensor    # [M, steps, B] sample positions within the row's client data
    valid: torch.Tensor    # [M, steps, B] bool; a step with no valid entry leaves the row untouched
    augment: Optional[dict] = None   # per-sample augmentation parameters, each [M, steps, B, ...]

    def active_counts(self) -> torch.Tensor:
        """[M, steps] real samples per row and step (host data: reading it needs no device sync)."""
        return self.valid.sum(2)

    def augment_on(self, device) -> None:
        """Move the augmentation draws to the device once per job, not once per step."""
        if self.augment is not None:
            self.augment = {k: v.to(device) for k, v in self.augment.items()}


def epoch_orders(n: torch.Tensor, epochs: int, width: int, g: torch.Generator) -> torch.Tensor:
    """A fresh random permutation of each client's samples for every epoch: [M, epochs, width]."""
    keys = torch.rand(len(n), epochs, width, generator=g)
    keys[torch.arange(width)[None, None, :].expand_as(keys) >= n.cpu()[:, None, None]] = 2.0
    return torch.argsort(keys, dim=-1)


def epoch_schedule(n: torch.Tensor, epochs: int, batch_size: int, width: int, g: torch.Generator) -> Schedule:
    """`epochs` passes over each client's data in batches of `batch_size` (the last one
    smaller); clients with fewer batches sit out the remaining steps of each epoch."""
    n = n.cpu()
    orders = epoch_orders(n, epochs, width, g)                     # [M, E, W]
    per_epoch = -(-max(int(n.max()), 1) // batch_size)
    pad = per_epoch * batch_size - width
    if pad > 0:
        orders = torch.cat([orders, torch.zeros(*orders.shape[:2], pad, dtype=orders.dtype)], dim=2)
    orders = orders[:, :, : per_epoch * batch_size]
    pos = torch.arange(per_epoch * batch_size)
    valid = (pos[None, :] < n[:, None])[:, None, :].expand(-1, epochs, -1)
    shape = (len(n), epochs * per_epoch, batch_size)
    return Schedule(orders.reshape(shape), valid.reshape(shape))


def step_schedule(n: torch.Tensor, steps: int, batch_size: int, g: torch.Generator) -> Schedule:
    """Exactly `steps` optimizer steps per client, each on min(batch_size, n) samples drawn
    without replacement from a stream of fresh permutations of the client's data (Fed-CAM §5:
    '10 local steps' of batch 32 per round, whatever the client's data size)."""
    n = n.cpu()
    M = len(n)
    index = torch.zeros(M, steps, batch_size, dtype=torch.long)
    valid = torch.zeros(M, steps, batch_size, dtype=torch.bool)
    for m in range(M):
        n_m = int(n[m])
        if n_m == 0:
            continue
        b = min(batch_size, n_m)
        need = steps * b
        stream = torch.cat([torch.randperm(n_m, generator=g) for _ in range(-(-need // n_m))])[:need]
        index[m, :, :b] = stream.view(steps, b)
        valid[m, :, :b] = True
    return Schedule(index, valid)


def full_batch_schedule(n: torch.Tensor, width: int) -> Schedule:
    """One step whose batch is all of each client's samples (in order): what a client needs to
    report the gradient of its mean training loss (CLoVE's Option II)."""
    n = n.cpu()
    pos = torch.arange(width)
    return Schedule(pos.expand(len(n), 1, width).clone(), (pos[None, :] < n[:, None]).unsqueeze(1))
