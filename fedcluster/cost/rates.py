"""This machine's speed for a model, measured: FLOP/s of local training (the run's engine and solver on its own
clients' data) and of scoring (the losses of one model over clients' training data, no autograd), from a short
calibration on the run as built, kept per machine and model in a JSON file (FEDCLUSTER_RATES, default
~/.cache/fedcluster/rates.json) so that a later estimate of the same model on this machine measures nothing.

Training is timed on a FedAvg-like plan of c of the run's clients from one model: one client first, untimed
(first-call costs), then c clients chosen so the timed call takes about TARGET_SECONDS; its FLOPs are the samples
its schedule puts through the model times the model's FLOPs per sample (flops.py). Scoring is timed the same way
over the first clients' training data. A rate is a property of the model, its batch, the engine and the machine's
threads, not of the method: every method's work is counted in these two kinds (cost/count.py)."""
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import torch

TARGET_SECONDS = 2.0
RATES_ENV = "FEDCLUSTER_RATES"


@dataclass(frozen=True)
class Rates:
    train: float      # FLOP/s of local training (forward and backward, optimizer steps)
    forward: float    # FLOP/s of scoring
    measured: str = ""   # when (UTC)


def rates_path() -> Path:
    return Path(os.environ.get(RATES_ENV) or Path.home() / ".cache" / "fedcluster" / "rates.json")


def machine_key(device: torch.device) -> str:
    """The processor (or GPU) and the threads a run gets, which the rates belong to."""
    from ..hardware import machine
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (cuda)"
    return f"{machine()['cpu']}, {torch.get_num_threads()} threads"


def model_key(cfg, fed, engine: str) -> str:
    """What a rate depends on besides the machine: the model and its size, its inputs, the solver's batch and
    optimizer, the gradient formulation and the dtype."""
    params = sum(p.numel() for p in fed.model.parameters())
    return (f"{type(fed.model).__name__} ({params} parameters) on {tuple(fed.data.in_shape)}, batch "
            f"{cfg.train.batch_size}, {cfg.train.optimizer}, engine {engine}, {str(fed.dtype).replace('torch.', '')}")


def load(path: Optional[Path] = None) -> dict:
    """The kept rates ({machine: {model: Rates}}); a file that cannot be read is no rates (it is measured again)."""
    path = path or rates_path()
    try:
        raw = json.loads(path.read_text())
        return {m: {k: Rates(**v) for k, v in models.items()} for m, models in raw.items()}
    except (OSError, ValueError, TypeError):
        return {}


def save(rates: dict, path: Optional[Path] = None) -> None:
    """Written whole or not at all, never through a link (run_records.fsops.atomic_write)."""
    from ..run_records.fsops import atomic_write
    path = path or rates_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({m: {k: asdict(r) for k, r in models.items()} for m, models in rates.items()},
                      indent=1, sort_keys=True) + "\n"
    atomic_write(path, lambda f: f.write(text), binary=False)


def _timed(fn) -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def measure(cfg, fed, trainer, engine: str, chunk, flops) -> Rates:
    """Time the run's local training and scoring on its own clients (module docstring)."""
    from ..algorithms.base import RoundPlan
    from ..algorithms.model_tables import for_clients
    from ..local_training.clients import run_clients
    from ..local_training.forward import losses_on_clients
    from .count import solver_samples
    tr, N = fed.data.train, fed.num_clients
    start = fed.init_models(1, "calibration")

    def train(c):
        clients = torch.arange(c, device=fed.device)
        run_clients(0, RoundPlan(clients, for_clients(start, clients)), trainer, tr, engine, cfg.seed, None, chunk)

    def score(c):
        with torch.inference_mode():
            losses_on_clients(fed.model, fed.data.task, start, tr.x[:c], tr.y[:c], tr.mask[:c])

    def timed(fn, flops_of):
        _timed(lambda: fn(1))   # first-call costs: not counted
        one = _timed(lambda: fn(1))
        c = int(min(N, max(1, TARGET_SECONDS / max(one, 1e-4))))
        took = one if c == 1 else _timed(lambda: fn(c))
        return flops_of(c) / max(took, 1e-9)

    width = int(tr.x.shape[1])
    trained = lambda c: c * solver_samples(trainer, tr.n[:c], width, cfg.seed) * flops.train   # noqa: E731
    return Rates(train=timed(train, trained), forward=timed(score, lambda c: c * width * flops.forward),
                 measured=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))


CALIBRATION_ROUNDS = 2


def method_key(cfg) -> str:
    """A method's own rounds run at their own speed per FLOP (Per-FedAvg's two gradients a step, FedALA's per-client
    weight learning, k-means): the method and its settings, beside the model's key. Its number of clusters is left
    out: K changes the FLOPs a round does (counted), not the speed they run at, so a sweep over K calibrates once."""
    import hashlib
    from omegaconf import OmegaConf

    def without_k(node):
        return {k: without_k(v) for k, v in node.items() if k != "num_clusters"} if isinstance(node, dict) else node
    node = without_k(OmegaConf.to_container(cfg.algorithm, resolve=True))
    return f"{cfg.algorithm.name} {hashlib.sha256(json.dumps(node, sort_keys=True, default=str).encode()).hexdigest()[:8]}"


def measure_method(cfg, fed, trainer, engine: str, chunk, flops, plain: Rates, work) -> Rates:
    """FLOP/s of the method's own rounds: its first CALIBRATION_ROUNDS rounds (plan, local training, aggregation:
    what a round of the run does besides evaluating), after one untimed round of a fresh copy, on its first c
    clients: c as many as about TARGET_SECONDS at the plain rates allow, at least its clusters, more where the
    method needs more (FedSoft's selections). Their FLOPs are counted as the estimate counts a job's (count.py), so
    what a method does per round besides FLOPs (k-means over the clients' vectors, FedPAC's QP, Python per client)
    is in its rate, in proportion to c clients' FLOPs. (A line through two client counts, its intercept that
    fixed cost, was tried: it came out 0 for CLoVE's k-means on 20 clients and doubled the calibration's time.)"""
    from dataclasses import replace
    from ..assemble import make
    from ..data.holdout import subset
    from ..errors import ConfigError
    from ..local_training.clients import client_chunks
    from .count import run_work
    N = fed.num_clients
    # `work`: the job's own count (count.run_work); its first rounds per client size the calibration
    per_client = sum(work.computed.get(t, 0.0) for t in range(CALIBRATION_ROUNDS)) / max(N, 1)
    K = int(cfg.get("num_clusters") or 1)
    least = min(N, max(K, 2))

    def view_of(c):
        """A view of the first c clients and a method set up on it (more clients where it needs more)."""
        while True:
            view = replace(fed, data=subset(fed.data, list(range(c))), newcomers=None, newcomer_ids=())
            alg = make(cfg.algorithm)
            try:
                alg.setup(view)
                return c, view, alg
            except (ConfigError, ValueError):   # a setting the method needs more clients for
                if c >= N:
                    raise
                c = min(N, 2 * c)

    def rounds(alg, view, count):
        for t in range(count):
            plan = alg.plan(t, view)
            aggregation = alg.aggregation(t, plan, view)
            if len(plan.clients):
                for rows, result in client_chunks(t, plan, trainer, view.data.train, engine, cfg.seed, chunk):
                    aggregation.add(rows, result.params)
            aggregation.finish()

    def point(c):
        c, view, alg = view_of(c)
        warm = make(cfg.algorithm)   # first-call costs (a library's import, kernels' first use): not counted
        warm.setup(view)
        rounds(warm, view, 1)
        counted = sum(run_work(cfg, view, alg, trainer, flops, rounds=CALIBRATION_ROUNDS).computed.values())
        return c, counted, _timed(lambda: rounds(alg, view, CALIBRATION_ROUNDS))

    c, done, took = point(int(min(N, max(least, TARGET_SECONDS * plain.train / max(per_client, 1.0)))))
    return Rates(done / max(took, 1e-9), plain.forward, plain.measured)
