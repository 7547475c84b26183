"""What every partition hands back: an `Allocation`, one type for mixture, label and skew
partitions. It says where each client's samples come from (pieces: a pool of the source and
positions in it), how each client's samples are transformed (rotations, relabellings), the
true clusters and the mixture. data/federated.py `federate` materialises it with a source; a
partition never touches the samples themselves, so it never imports `data`.

The protocol: `allocate(view, g) -> Allocation`, and `size_bound()`: (clients, largest training
and local test sizes) when the settings alone bound them, else None; the memory check reads it
before allocating. A pool is (split, distribution). `draws` says how each pool is read: a number n, n fresh
samples drawn from the distribution (mixture partitions: the source may generate them); None,
the source's whole labelled pool of that split (label partitions, in the source's order)."""
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch

Pool = Tuple[str, int]                         # (split, distribution)
Pieces = List[Tuple[Pool, torch.Tensor]]       # one client's samples: (pool, positions in it), in order


@dataclass
class Allocation:
    train: List[Pieces]                        # per client: its training samples
    local_test: List[Pieces]                   # per client: its held-out local test samples
    draws: Dict[Pool, Optional[int]]           # every pool used: n samples drawn, or None: the whole pool
    mixture: torch.Tensor                      # [N, S] ground-truth shares of the distributions ([N, 0]: none)
    truth: Optional[torch.Tensor] = None       # [N] ground-truth cluster (None: the mixture's argmax, or none)
    quarter_turns: Optional[torch.Tensor] = None   # [N] counter-clockwise 90-degree turns of each client's images
    label_map: Optional[torch.Tensor] = None       # [N, C] each client's relabelling y -> label_map[i, y]
    shuffle_clients: bool = False              # each client's pieces mixed in a random order (a mixture)
    distribution_tests: bool = False           # also each distribution's held-out test set (mixture partitions)

    @property
    def num_clients(self) -> int:
        return len(self.train)

    def widths(self) -> Tuple[int, int]:
        """(the most training samples of a client, the most local test samples): the padded width
        of the stacked client data, for the memory check before anything is read."""
        size = lambda pieces: sum(len(idx) for _, idx in pieces)
        return max(size(p) for p in self.train), max(size(p) for p in self.local_test)
