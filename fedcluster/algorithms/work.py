"""What one round of a method computes, as it declares it (Algorithm.round_work): the units `fedcluster estimate`
(fedcluster/cost/) turns into FLOPs with the model's per-sample counts and the run's protocol (clients, samples,
solver, rounds). tests/runs/test_round_work.py holds every method's declaration to the FLOPs torch's counter sees
a run of it do."""
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class RoundWork:
    """`trained`: client trainings (rows), each its client's local solver (train.epochs or train.steps at
    train.batch_size) from one model; `solver_scale`: a row's solver work relative to the run's (FedPAC's head epoch
    before the run's epochs: 2 at one epoch each); `scored`: models scored on every client's training data (IFCA's
    assignment: K); `row_passes`: forward passes over each trained row's training data besides its training
    (FedProto's prototypes: 1); `epochs`: a row's solver is this many passes over its client's data instead of the
    run's (FeSEM's start-up epochs)."""
    trained: float
    solver_scale: float = 1.0
    scored: float = 0.0
    row_passes: float = 0.0
    epochs: Optional[int] = None
