"""Independent pieces of CPU work (chunks of a scoring pass, groups of clients in a training
step) spread over Python threads, each running single-threaded torch ops.

On this project's 2-core CPU, LeNet scoring ran 1.5x faster as two threads of one-thread
ops than as one thread of two-thread ops (small convolutions parallelise poorly inside one
op; torch releases the GIL inside ops, so two threads keep both cores busy). A piece's result
does not depend on which thread ran it, so a run is deterministic for a given thread count
(another count changes float rounding only, ~1e-8, as before). On a GPU the pieces run in order in the
calling thread (one stream; the GPU parallelises inside each op)."""
import copy
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, List, Sequence, TypeVar

import torch

T = TypeVar("T")
_pools = {}
_inside = {"flag": False}


class Workers:
    """`map(fn, items)` over `count` threads (1: in the calling thread)."""

    def __init__(self, count: int):
        self.count = count

    def map(self, fn: Callable[[T], object], items: Sequence[T]) -> List[object]:
        if self.count <= 1 or len(items) <= 1:
            return [fn(item) for item in items]
        if self.count not in _pools:
            # OpenMP's thread count is per thread: each worker sets its own to 1 once
            _pools[self.count] = ThreadPoolExecutor(self.count, thread_name_prefix="fedcluster",
                                                    initializer=torch.set_num_threads, initargs=(1,))
        return list(_pools[self.count].map(fn, items))


@contextmanager
def cpu_workers(device: torch.device):
    """Workers for independent pieces of work, one per configured CPU thread. While inside, the
    calling thread also runs single-threaded ops: an OpenMP team of its own would spin-wait
    between its ops and starve the workers (measured: PFLlib's workload, batch 10, took 94 s per
    round instead of 11 s)."""
    count = 1 if device.type != "cpu" or _inside["flag"] else torch.get_num_threads()
    if count <= 1:
        yield Workers(1)
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    _inside["flag"] = True
    try:
        yield Workers(count)
    finally:
        _inside["flag"] = False
        torch.set_num_threads(before)


def parallel_map(fn: Callable[[T], object], items: Sequence[T], device: torch.device) -> List[object]:
    """[fn(item) for item in items], the items spread over the CPU's threads."""
    with cpu_workers(device) as workers:
        return workers.map(fn, items)


def split_evenly(items: Sequence[T], parts: int) -> List[Sequence[T]]:
    """`items` in `parts` contiguous runs of near-equal length (no empty runs)."""
    parts = max(1, min(parts, len(items)))
    bounds = [round(i * len(items) / parts) for i in range(parts + 1)]
    return [items[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def balanced_parts(counts: torch.Tensor, parts: int) -> List[List[int]]:
    """Rows in at most `parts` groups of near-equal work (counts [M, steps]: each row's samples at
    each step): longest first, each to the lightest group (LPT); each group in row order."""
    work = counts.sum(1).tolist()
    n = max(1, min(parts, len(work)))
    groups, loads = [[] for _ in range(n)], [0] * n
    for m in sorted(range(len(work)), key=lambda m: (-work[m], m)):
        j = loads.index(min(loads))
        groups[j].append(m)
        loads[j] += work[m]
    return [sorted(g) for g in groups if g]


def only_rows(counts: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
    """`counts` with every row outside `rows` set to zero (it then never steps)."""
    keep = torch.zeros(counts.shape[0], dtype=torch.bool)
    keep[list(rows)] = True
    return torch.where(keep.to(counts.device)[:, None], counts, torch.zeros_like(counts))


_local = threading.local()


def own_module(model: torch.nn.Module) -> torch.nn.Module:
    """This thread's copy of `model`, in the same train/eval mode. `functional_call` swaps a
    module's parameters while it runs, so two threads must never call it on one module."""
    if threading.current_thread() is threading.main_thread():
        return model
    copies = getattr(_local, "copies", None)
    if copies is None:
        copies = _local.copies = {}
    mine = copies.get(id(model))
    if mine is None or mine[0] is not model:
        mine = copies[id(model)] = (model, copy.deepcopy(model))
    if mine[1].training != model.training:
        mine[1].train(model.training)
    return mine[1]
