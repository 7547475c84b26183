"""FedSoft (Ruan & Joe-Wong, AAAI 2022), Algorithm 1."""
from typing import Annotated

import torch

from ..errors import ConfigError
from ..models.rows import rows_of
from ..models.stacked import on_device
from ..local_training.terms import Proximal
from ..rules import AtLeast, Between
from .base import Algorithm, RunView, RoundPlan
from .model_tables import personal_models
from .fold import KeepRows
from .wire import Message, row_bytes, value_bytes
from .work import RoundWork


def importance_weights(per_sample_losses: torch.Tensor, sizes: torch.Tensor, smoother: float) -> torch.Tensor:
    """Alg. 1 lines 5-11: each sample counts for the center with the smallest loss on it;
    u_ks = max(n_ks / n_k, sigma). per_sample_losses: [S, N, Nmax] with padding = +inf."""
    S = per_sample_losses.shape[0]
    best = per_sample_losses.argmin(0)                               # [N, Nmax]
    valid = torch.isfinite(per_sample_losses[0])
    counts = torch.stack([((best == s) & valid).sum(1) for s in range(S)], dim=1)   # [N, S]
    return torch.clamp(counts.to(torch.float64) / sizes[:, None].double(), min=smoother)


def selection_probabilities(u: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Eq. (6): v_sk = u_ks n_k / sum_k' u_k's n_k'. Returned as [N, S]; column s sums to 1.

    The denominator runs over all clients, as in the authors' code (servers.py), since
    Sel_s is what is being drawn with these probabilities."""
    mass = u * sizes[:, None].double()
    return mass / mass.sum(0, keepdim=True)


class FedSoft(Algorithm):
    """Soft clustering with proximal local updates.

    Personalized local models w_k persist per client across rounds and are never reset to a
    center. Two choices where the paper and the authors' code differ:
    - `keep_client_state` (default true): each client's optimizer state (Adam moments) also
      persists, as the authors' clients.py keeps one optimizer per client for the whole run;
      false: a fresh optimizer every round, as most FL code does.
    - `replacement` (default false): Sel_s = `selection_size` distinct clients drawn with
      probabilities v_s (eq. 6), as the authors' servers.py (numpy choice, replace=False);
      true: `selection_size` independent draws, as the appendix's sampling reads, so a client
      with a large v_sk can count several times in c_s and few wrong-group clients get in."""
    state = ("centers", "local", "u", "selection")
    host_state = ("local",)
    name = "fedsoft"

    def training_rows(self, num_clients: int) -> int:
        """The union of the S selections of `selection_size` clients (each trains its own model)."""
        return max(1, min(num_clients, self.num_clusters * self.selection_size))

    def round_work(self, t, num_clients):
        """Every tau rounds the S centers' losses on every client's training data (the importance weights, eq. 4),
        then the union of the S selections trains: N (1 - (1 - s/N)^S) clients expected were each selection s
        distinct clients drawn alike (with replacement, s draws each); the draws follow v_s (eq. 6), so the union
        a run trains varies around it."""
        s, N = min(self.selection_size, num_clients), max(1, num_clients)
        miss = (1 - 1 / N) ** s if self.replacement else 1 - s / N
        return RoundWork(N * (1 - miss ** self.num_clusters), scored=self.num_clusters if t % self.tau == 0 else 0)

    def __init__(self, num_clusters: Annotated[int, AtLeast(1)] = 2, lam: Annotated[float, AtLeast(0)] = 1.0,
                 tau: Annotated[int, AtLeast(1)] = 2, selection_size: Annotated[int, AtLeast(1)] = 60,
                 smoother: Annotated[float, Between(0, 1, lo_open=True, hi_open=True)] = 1e-4,
                 replacement: bool = False, keep_client_state: bool = True):
        self.num_clusters, self.lam, self.tau = num_clusters, lam, tau
        self.selection_size, self.smoother = selection_size, smoother
        self.replacement, self.keep_client_state = replacement, keep_client_state

    def setup(self, fed: RunView) -> None:
        if self.selection_size < 1 or (self.selection_size > fed.num_clients and not self.replacement):
            raise ConfigError(f"algorithm.selection_size={self.selection_size} must be between 1 and the "
                              f"number of clients ({fed.num_clients})")
        self.centers = fed.init_models(self.num_clusters, "centers")
        # The authors build one initial client model and copy it to every client.
        self.local = personal_models(fed, on_host=True)   # w_k: in host memory, a chunk at a time on the device
        self.u = torch.full((fed.num_clients, self.num_clusters), 1.0 / self.num_clusters,
                            dtype=torch.float64, device=fed.device)
        self.selection = torch.zeros(self.num_clusters, self.selection_size, dtype=torch.long)

    def plan(self, t, fed):
        if t % self.tau == 0:
            self.u = importance_weights(fed.train_losses(self.centers), fed.sizes, self.smoother)
        v = selection_probabilities(self.u, fed.sizes)
        self.selection = torch.stack([
            torch.multinomial(v[:, s].cpu(), self.selection_size, replacement=self.replacement,
                              generator=fed.generator("select", t, s))
            for s in range(self.num_clusters)])
        union = torch.unique(self.selection).to(fed.device)
        coeffs = (self.lam * self.u[union]).to(fed.dtype)
        return RoundPlan(union, rows_of(self.local, union), [Proximal(self.centers, coeffs)],
                         keep_client_state=self.keep_client_state)

    def aggregation(self, t, plan, fed):
        if fed.private:
            return KeepRows(self.local, plan.clients, lambda: self.private_centers(t, fed))
        return KeepRows(self.local, plan.clients, self.average_selections)

    def client_dp_refusal(self):
        if self.replacement:
            return ("replacement=true lets one client count many times in a center's selection, so one client's "
                    "share of a center is not bounded; allowed with privacy=client_dp: replacement=false")
        return None

    def client_dp_release(self, fed):
        """Each center s averages its `selection_size` selected clients (line 18), a denominator fixed in advance;
        a client can be in all S selections, so it enters S sums. The selections are drawn from the importance
        weights (eq. 6), not as a uniform sample: no credit for sampling (rate 1)."""
        from ..privacy import Release
        return Release(1.0, float(self.selection_size), contributions=self.num_clusters)

    def private_centers(self, t, fed) -> None:
        """Alg. 1 line 18 under privacy=client_dp: c_s <- c_s + (sum_{k in Sel_s} clip(w_k - c_s) + noise) /
        selection_size, each center's sum noised from the round's stream (privacy/mechanism.py)."""
        release, mechanism = self.client_dp_release(fed), fed.privacy
        sums = {k: torch.zeros_like(c) for k, c in self.centers.items()}
        for s in range(self.num_clusters):
            chosen = self.selection[s]
            deviations = {k: v[chosen.to(v.device)].to(self.centers[k].device) - self.centers[k][s]
                          for k, v in self.local.items()}
            for k, v in mechanism.clip(deviations).items():
                sums[k][s] = v.sum(0)
        noised = mechanism.noised_means(sums, release, fed.generator("client-dp", t))
        self.centers = {k: c + noised[k] for k, c in self.centers.items()}

    def messages(self, t, plan, fed):
        """Algorithm 1: every tau rounds the server sends the S centers to all clients (line 3), and each sends
        back its S importance weights u_ks (line 10); every round the selected clients download the centers (line
        17; those that just received them in line 3 hold them already) and report their trained w_k (line 17).
        A client in several selections Sel_s trains and sends once (the union)."""
        S, size, number = self.num_clusters, row_bytes(self.centers), value_bytes(self.centers)
        selected = len(plan.clients)
        messages = []
        if t % self.tau == 0:
            messages += [Message(f"{S} centers", "down", fed.num_clients, S * size),
                         Message("importance weights", "up", fed.num_clients, S * number)]
        else:
            messages.append(Message(f"{S} centers", "down", selected, S * size))
        return messages + [Message("model", "up", selected, size)]

    def average_selections(self) -> None:
        """Alg. 1 line 18: c_s = (1/K) sum_{k in Sel_s} w_k."""
        centers = {k: v[self.selection.to(v.device)].mean(1) for k, v in self.local.items()}
        before = getattr(self, "centers", None)   # on the compute device (setup), where w_k may be on the host
        self.centers = centers if before is None else on_device(centers, next(iter(before.values())).device)

    def cluster_models(self):
        return self.centers

    def newcomer_models(self, fed, newcomers):
        """A newcomer's importance weights u_s (eq. 3: the share of its training samples on which center s has the
        smallest loss) and, having trained nothing, the point its proximal term pulls toward: sum_s u_s c_s (the
        minimiser of the personalised objective's term lam/2 sum_s u_s ||w - c_s||^2, eq. 5)."""
        u = importance_weights(newcomers.train_losses(self.centers), newcomers.sizes, self.smoother)   # [N', S]
        return {k: torch.einsum("ns,s...->n...", u.to(c.dtype), c) for k, c in self.centers.items()}

    def local_models(self, fed):
        return self.local

    def assignment_weights(self):
        return self.u
