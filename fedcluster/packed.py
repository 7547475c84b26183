"""Packed runs: several runs of a sweep in one process, their local training as one job (issue 57).

Each run is the ordinary round loop (`runner.run`) in its own thread, with its own directory,
config, checkpoints, resume and results. Only its local training is shared: the run's trainer is
wrapped so that `train(job)` hands the job to a `Packer` and waits. The Packer, in the calling
thread, waits until every unfinished run waits on it, trains all their jobs, packed where they
can be (local_training/packing.py), and hands each run its rows back. The runs take turns (one baton):
while one plans, aggregates, scores or writes, the others wait, so a run computes exactly as it
would alone, and only its training goes wider.

A stop (Ctrl-C, SIGTERM) reaches the Packer in the main thread at its next step; every waiting run
then stops as a run stops alone (`RunInterrupted`, from its last checkpoint), and the same command
resumes each. A run that fails (a bad value, a diverging loss) leaves the others going."""
import threading
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from . import signals
from .data.budget import rows_per_chunk
from .local_training.packing import SideBySide, pack, pack_key, unpack


def _stopped(cause: BaseException) -> KeyboardInterrupt:
    """A stop for one run's thread, with the signal that caused it (signals.by_signal reads it)."""
    e = KeyboardInterrupt()
    if hasattr(cause, "signum"):
        e.signum = cause.signum
    return e


class PackedTrainer:
    """A run's LocalTrainer whose `train` goes through the Packer (everything else is the trainer's)."""

    def __init__(self, trainer, packer: "Packer", member: int):
        self._trainer, self._packer, self._member = trainer, packer, member

    def __getattr__(self, name):
        return getattr(self._trainer, name)

    def train(self, job, engine):
        return self._packer.train(self._member, self._trainer, job, engine)


@dataclass
class _Request:
    member: int
    trainer: object
    job: object
    engine: str
    result: object = None
    error: Optional[BaseException] = None
    done: bool = False


@dataclass
class Packer:
    """Trains the jobs its member runs hand it, packed; `members`: the runs still going.
    `chunk`: the rows one packed job may hold ("auto": sized from free memory, as a run's own
    chunk is; a number sets it)."""
    members: int
    chunk: object = "auto"
    packed_jobs: int = 0          # what it trained: jobs as handed in, and packed jobs
    jobs_in: int = 0
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _baton: threading.Lock = field(default_factory=threading.Lock)
    _pending: Dict[int, _Request] = field(default_factory=dict)
    _stop: Optional[BaseException] = None
    _data: Dict[tuple, SideBySide] = field(default_factory=dict)   # by the members packed: their data side by side

    # -- in a run's thread -------------------------------------------------------------------
    def enter(self) -> None:
        """A run's thread starts: it computes only while it holds the baton."""
        self._baton.acquire()

    def leave(self, member: int) -> None:
        """A run's thread ends (finished, failed or stopped); its data leaves the packer's copies."""
        with self._cond:
            self.members -= 1
            self._data = {k: v for k, v in self._data.items() if member not in k}
            self._cond.notify_all()
        self._baton.release()

    def train(self, member: int, trainer, job, engine):
        request = _Request(member, trainer, job, engine)
        with self._cond:
            if self._stop is not None:
                raise _stopped(self._stop)
            self._pending[member] = request
            self._cond.notify_all()
        self._baton.release()   # the others may run while this one waits for its rows
        try:
            with self._cond:
                while not request.done:
                    self._cond.wait()
        finally:
            self._baton.acquire()
        if request.error is not None:
            raise request.error
        return request.result

    # -- in the calling (main) thread ----------------------------------------------------------
    def serve(self) -> None:
        """Train what the runs hand in until none is left going."""
        while True:
            with self._cond:
                while self.members > 0 and len(self._pending) < self.members:
                    self._cond.wait(timeout=0.2)
                    self._check_stop()
                if self.members == 0:
                    return
                batch = [self._pending.pop(m) for m in sorted(self._pending)]
            # every member waits now, holding no baton: this thread computes alone
            try:
                signals.check()
                self._train(batch)
            except KeyboardInterrupt as e:
                self._stop = e
            except BaseException as e:   # noqa: BLE001 -- a fault of the packed job: each of its runs reports it
                for r in batch:
                    if not r.done:
                        r.error = e
            with self._cond:
                for r in batch:
                    if self._stop is not None:   # a stop during the batch stops each of its runs
                        r.error = _stopped(self._stop)
                    r.done = True
                self._cond.notify_all()

    def _check_stop(self) -> None:
        try:
            signals.check()
        except KeyboardInterrupt as e:
            self._stop = e
            for r in self._pending.values():
                r.error, r.done = _stopped(e), True
            self._pending.clear()
            self._cond.notify_all()

    def _train(self, batch: List[_Request]) -> None:
        groups: Dict[object, List[_Request]] = {}
        for r in batch:
            key = pack_key(r.trainer, r.job, r.engine)
            groups.setdefault(("alone", r.member) if key is None else key, []).append(r)
        for key, requests in groups.items():
            for part in self._within_memory(requests):
                self.jobs_in += len(part)
                self.packed_jobs += 1
                if len(part) == 1:
                    r = part[0]
                    r.result = r.trainer.train(r.job, r.engine)
                    continue
                data = self._side_by_side(part)
                job, spans = pack([r.job for r in part], data)
                for r, result in zip(part, unpack(part[0].trainer.train(job, part[0].engine), spans)):
                    r.result = result

    def _within_memory(self, requests: List[_Request]) -> List[List[_Request]]:
        """The requests in consecutive parts whose rows fit one packed job."""
        first = requests[0]
        params = sum(v[0].numel() for v in first.job.start.values())
        total = sum(len(r.job.rows) for r in requests)
        cap = rows_per_chunk(self.chunk, total, params, type(first.trainer.optimizer).__name__.lower(),
                             first.job.x.device, next(iter(first.job.start.values())).element_size())
        cap = max(cap, max(len(r.job.rows) for r in requests))   # a run's own chunk always fits
        parts, rows = [[]], 0
        for r in requests:
            if parts[-1] and rows + len(r.job.rows) > cap:
                parts.append([])
                rows = 0
            parts[-1].append(r)
            rows += len(r.job.rows)
        return parts

    def _side_by_side(self, requests: List[_Request]) -> SideBySide:
        """These members' client data side by side, built once and kept until one of them leaves."""
        key = tuple(r.member for r in requests)
        xs, ys = [r.job.x for r in requests], [r.job.y for r in requests]
        data = self._data.get(key)
        if data is None or not data.names(xs, ys):
            data = self._data[key] = SideBySide(xs, ys)
        return data


def run_packed(jobs: List[Callable[[Callable], object]], chunk="auto") -> Tuple[List[object], Packer]:
    """Run each job (a callable taking `train_with`, the trainer wrapper, and returning the run's
    outcome) in its own thread, their training packed; their outcomes (a raised exception in its
    job's place), in order, and the Packer (what it packed)."""
    packer = Packer(len(jobs), chunk)
    outcomes: List[object] = [None] * len(jobs)

    def body(i, job):
        packer.enter()
        try:
            outcomes[i] = job(lambda trainer: PackedTrainer(trainer, packer, i))
        except BaseException as e:   # noqa: BLE001 -- handed to the caller with the run's place
            outcomes[i] = e
        finally:
            packer.leave(i)

    threads = [threading.Thread(target=body, args=(i, job), name=f"packed-run-{i}", daemon=True)
               for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    packer.serve()
    for t in threads:
        t.join()
    return outcomes, packer
