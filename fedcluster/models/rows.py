"""Rows of a stack named by index, read only when used: a round's starting models without the copy.

A round plan starts each of its M rows from one of a few models (the global model, a cluster's
model, a client's own). Copying them into an [M, P] stack cost one parameter vector per trained
client before training began; `Rows` holds the source stack and the index instead, and a chunk
of the round (local_training/chunks.py) reads its rows when it trains them. Reading a whole key
(`rows[k]`) still gives the [M, ...] tensor, for the methods that compare all starts at once
(CFL's updates), so a `Rows` is a drop-in read-only Stack.

The index is copied when the rows are made: an algorithm that reassigns clients after planning
(CFL's splits) does not change which model a planned row started from. The source tensors are
not copied; a method must not write into them between its plan and the end of its round's
training (none does: aggregation comes after the last chunk)."""
from collections.abc import Mapping
from typing import Iterator

import torch

from .stacked import Stack


class Rows(Mapping):
    """Row m is row `index[m]` of `source` (a Stack)."""

    def __init__(self, source: Stack, index: torch.Tensor):
        self.source = source
        self.index = index.detach().clone()

    def __getitem__(self, key: str) -> torch.Tensor:
        return self.source[key][self.index.to(self.source[key].device)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.source)

    def __len__(self) -> int:
        return len(self.source)

    @property
    def count(self) -> int:
        """M, the number of rows."""
        return len(self.index)

    def take(self, rows) -> Stack:
        """Rows `rows` (a slice or index tensor) as a new Stack of their own."""
        return {k: v[self.index[rows].to(v.device)] for k, v in self.source.items()}

    def row(self, m: int) -> Stack:
        """Row m as views of its source row (no copy)."""
        j = int(self.index[m])
        return {k: v[j] for k, v in self.source.items()}


def rows_of(source: Stack, index: torch.Tensor) -> Rows:
    """Rows `index` of `source`, read when used."""
    return Rows(source, index)


def count_rows(stack) -> int:
    """M of a Stack or Rows."""
    return stack.count if isinstance(stack, Rows) else next(iter(stack.values())).shape[0]


def take_rows(stack, rows) -> Stack:
    """Rows `rows` (a slice or an index tensor) of a Stack or Rows, as a Stack (a slice of a Stack is a view)."""
    if isinstance(stack, Rows):
        return stack.take(rows)
    return {k: v[rows] for k, v in stack.items()}


def row_of(stack, m: int) -> Stack:
    """Row m of a Stack or Rows (views)."""
    if isinstance(stack, Rows):
        return stack.row(m)
    return {k: v[m] for k, v in stack.items()}


def cat_rows(parts) -> "Rows | Stack":
    """The rows of `parts` one after the other: a Rows over their sources side by side when every part
    is one (a few source rows, no copy of the M rows), else a Stack."""
    parts = list(parts)
    if all(isinstance(p, Rows) for p in parts):
        offsets, index, total = [], [], 0
        for p in parts:
            offsets.append(total)
            total += next(iter(p.source.values())).shape[0]
        source = {k: torch.cat([p.source[k] for p in parts]) for k in parts[0].source}
        for p, off in zip(parts, offsets):
            index.append(p.index + off)
        return Rows(source, torch.cat(index))
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
