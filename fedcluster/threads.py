"""Process defaults for CPU threads, applied when `fedcluster` is imported, before torch loads.

torch's CPU ops run on an OpenMP team (GNU libgomp in the PyPI wheels). Between ops, libgomp's
threads spin for a while before they sleep (its default; `OMP_WAIT_POLICY` unset). On a quiet
machine that saves a wake-up per op; on a shared one a spinning thread burns the core share of a
teammate that was preempted, and every small op waits for a time slice. Measured on this
project's 2-core CPU beside two busy neighbour processes (`python benchmarks/contention.py`,
docs/performance.md "Under load"): the FedSoft synthetic workload (batched engine, many tiny
ops, 2 threads) ran 2.4x, 5.1x and 9.0x slower than quiet with the default and 1.7x, 1.9x and
2.3x with PASSIVE (a fair share: 2x); quiet, PASSIVE may cost it up to ~20 %. The worst case on
a shared machine decided: fedcluster asks libgomp to sleep at once (`OMP_WAIT_POLICY=PASSIVE`).

libgomp reads the variable once, when torch loads it: the default takes effect where
`fedcluster` is imported before torch (the `fedcluster` command, its launcher workers, and
`import fedcluster` first in a script); it is inherited by child processes. A value the user
set (e.g. `OMP_WAIT_POLICY=ACTIVE`) is kept. `wait_policy()` says what the process runs with."""
import os
import sys

DEFAULT_WAIT_POLICY = "PASSIVE"
_state = {}


def apply_process_defaults() -> None:
    """Set OMP_WAIT_POLICY=PASSIVE unless the user set it; note whether torch had loaded already."""
    if not _state:
        _state["user_value"] = os.environ.get("OMP_WAIT_POLICY")
        _state["torch_first"] = "torch" in sys.modules
        os.environ.setdefault("OMP_WAIT_POLICY", DEFAULT_WAIT_POLICY)


def wait_policy() -> str:
    """The OpenMP wait policy this process's torch runs with (recorded in summary.json)."""
    apply_process_defaults()
    if _state["user_value"] is not None:
        return _state["user_value"]
    if _state["torch_first"]:
        return "libgomp default (torch loaded before fedcluster)"
    return DEFAULT_WAIT_POLICY
