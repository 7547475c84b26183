"""Unseen clients (`partition.holdout_clients`): a seeded share of the partition's clients never trains.

Why: clustered FL papers score every method on the clients that trained, yet a deployed clustering
must also serve a client that joins later and has to find its cluster. The held-out clients keep their
whole partition (training and test samples, true mixture and cluster); at evaluation each method picks
each one's model by its own rule from the newcomer's training data alone (`Algorithm.newcomer_models`),
and that model is scored on the newcomer's held-out test split, in rows of their own (eval_set
`unseen_test`). The clients that train are renumbered 0..N-m-1 in their partition order."""
from dataclasses import dataclass, replace
from typing import List, Optional

import torch

from ..rng import generator
from .federated import ClientSplit, FederatedData, _stack


@dataclass
class HeldOut:
    """The clients that train (`seen`), those kept out (`unseen`), and the latter's partition ids."""
    seen: FederatedData
    unseen: Optional[FederatedData]
    unseen_ids: List[int]


def holdout_count(share: float, num_clients: int) -> int:
    """round(share * N) clients held out: at least one when share > 0, and at least one client left to train."""
    if share <= 0:
        return 0
    return min(max(1, round(share * num_clients)), num_clients - 1)


def clients_of(split: Optional[ClientSplit], ids: List[int]) -> Optional[ClientSplit]:
    """The rows of `ids` (in that order) of a per-client split, stored as compactly as the split was."""
    if split is None:
        return None
    rows = [(split.x.stored(k), split.y[k, : int(split.n[k])], split.source[k, : int(split.n[k])]) for k in ids]
    return _stack(rows, split.x.decode)


def subset(data: FederatedData, ids: List[int]) -> FederatedData:
    index = torch.tensor(ids, dtype=torch.long)
    return replace(data, train=clients_of(data.train, ids), local_test=clients_of(data.local_test, ids),
                   validation=clients_of(data.validation, ids),
                   mixture=data.mixture[index.to(data.mixture.device)],
                   truth=None if data.truth is None else data.truth[index.to(data.truth.device)])


def hold_out_clients(data: FederatedData, share: float, seed: int) -> HeldOut:
    """Keep holdout_count(share, N) clients, drawn from the run's seeded stream "holdout", out of training."""
    N = data.num_clients
    m = holdout_count(share, N)
    if m == 0:
        return HeldOut(data, None, [])
    unseen = sorted(torch.randperm(N, generator=generator(seed, "holdout"))[:m].tolist())
    held = set(unseen)
    seen = [k for k in range(N) if k not in held]
    return HeldOut(subset(data, seen), subset(data, unseen), unseen)
