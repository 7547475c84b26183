"""Local-only training: every client trains its own model, nothing is shared."""
import torch

from ..models.rows import rows_of
from .base import Algorithm, RoundPlan
from .model_tables import personal_models
from .fold import KeepRows


class LocalOnly(Algorithm):
    """Each client keeps its own model and trains it every round on its own data. All clients
    start from the same initial model. No cluster models."""
    state = ("local",)
    host_state = ("local",)
    name = "local"
    num_clusters = 0

    def __init__(self, keep_client_state: bool = True):
        """keep_client_state: each client's optimizer state (Adam's moments, momentum) persists
        across rounds with its model, as a client that owns one optimizer for the whole run;
        false: a fresh optimizer every round, as code that builds its optimizer inside each
        round's train() call (CLoVE's learning_utils.py; conf/method_algorithm/)."""
        self.keep_client_state = keep_client_state

    def setup(self, fed):
        self.local = personal_models(fed, on_host=True)   # in host memory, a chunk at a time on the device

    def plan(self, t, fed):
        clients = torch.arange(fed.num_clients, device=fed.device)
        return RoundPlan(clients, rows_of(self.local, clients), keep_client_state=self.keep_client_state)

    def aggregation(self, t, plan, fed):
        return KeepRows(self.local, plan.clients)

    def messages(self, t, plan, fed):
        """Nothing: every model stays on its client."""
        return []

    def client_dp_refusal(self):
        return "its updates never leave the client, so there is nothing for client-level DP to protect"

    def local_models(self, fed):
        return self.local
