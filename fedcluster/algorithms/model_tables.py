"""The model tables that methods are built from, as small functions over stacked parameters
(models/stacked.py), so each idea is written once:

- a global model ([1] rows): trained from by every participant, the sample-weighted mean of
  their results after the round (FedAvg, McMahan et al. 2017, eq. 1; Fed-CAM's Theta_g, eq. 9);
- personal models ([N] rows, one per client): each client's own, overwritten by its trained
  rows (FedSoft's w_k, FedProto, FedPAC, FeSEM's local models, FedALA, local-only training);
- cluster models ([K] rows) live in ClusteredAlgorithm (clustered.py)."""
import torch

from ..models.rows import Rows, rows_of
from ..models.stacked import HOST, Stack, on_device, put_rows, repeat
from .base import weighted_mean_rows
from .fold import WeightedMeans


def copies(model: Stack, count: int, device=None) -> Stack:
    """`count` rows, each a copy of the single-row `model` (a global model handed to clients)."""
    return repeat(model, torch.zeros(count, dtype=torch.long, device=device))


def for_clients(model: Stack, clients: torch.Tensor) -> Rows:
    """The single-row `model` as the starting row of each client in `clients` (read when trained)."""
    return rows_of(model, torch.zeros_like(clients))


def personal_models(fed, start: Stack = None, on_host: bool = False) -> Stack:
    """[N] personal models, every client starting from the same model: `start` (one row), else a
    fresh initialisation from the run's "clients" stream. `on_host`: kept in host memory (an
    algorithm that reads them only through the round's chunks and scoring, which bring each
    chunk's rows to the compute device: issue 56, per-client state off the GPU); on a CPU run the
    host is the compute device, so nothing changes there."""
    one = fed.init_models(1, "clients") if start is None else start
    device = HOST if on_host else (None if start is None else fed.device)
    if on_host:
        one = on_device(one, HOST)
    return copies(one, fed.num_clients, device)


def keep_trained(models: Stack, clients: torch.Tensor, trained: Stack) -> None:
    """Personal models: the trained rows replace those of `clients`, in place (wherever the models are kept)."""
    put_rows(models, clients, trained)


def sample_weighted_mean(trained: Stack, clients: torch.Tensor, fed) -> Stack:
    """The global model after a round: the mean of the trained rows weighted by their clients'
    training samples n_k (FedAvg; Fed-CAM eq. 9)."""
    return weighted_mean_rows(trained, torch.arange(len(clients), device=fed.device), fed.sizes[clients].double())


def global_mean_fold(clients: torch.Tensor, fed, done) -> WeightedMeans:
    """`sample_weighted_mean` as a fold over chunks of the round's rows; `done(the single-row mean)`."""
    return WeightedMeans(torch.zeros_like(clients), fed.sizes[clients].double(), lambda means: done(means[0]))
