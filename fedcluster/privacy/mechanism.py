"""DP-FedAvg's mechanism (McMahan et al., ICLR 2018, Algorithm 1 with the fixed-denominator estimator f~_f): each
round every client takes part independently with probability q (Poisson sampling); a client's update Delta_k (its
trained model less the model it started from, or its gradient) is clipped to L2 norm S,
    Delta_k <- Delta_k * min(1, S / ||Delta_k||),
and each released model adds
    (sum_{k in C} Delta_k + N(0, (z S)^2 I)) / D
to the model its clients trained from: z the noise multiplier, D fixed in advance (the expected number of clients
the mean covers, q N for FedAvg), never the count of the round's clients, which is itself private. Uniform weights:
every client's clipped update counts once, whatever its data size (the paper's w_k = 1).

For K models (a clustered method), each model's sum gets noise of its own and its own D (q N / K: the clients of
the round spread over the K models; a model that draws more of them takes a longer step). A client's update enters
one model's sum (hard clustering), so the K sums together move by at most S when one client is added or removed:
noise z S on each is the Gaussian mechanism of multiplier z on all of them. A method whose client enters c sums
(FedSoft: each of its S centers) declares c; each sum's noise is then z S sqrt(c)."""
import math
from dataclasses import dataclass
from typing import Annotated, ClassVar, Dict, Optional

import torch

from ..errors import ConfigError
from ..rules import AtLeast, Between, CheckedSettings, Help


@dataclass(frozen=True)
class Release:
    """What a method's private release is, as it declares it (Algorithm.client_dp_release): each round, every
    client takes part with probability `rate` (1: every client, every round; the accountant credits sampling only
    where the method samples clients so), each released mean divides by `denominator`, and one client's update
    enters at most `contributions` of the sums."""
    rate: float
    denominator: float
    contributions: int = 1


class NoPrivacy(CheckedSettings, group="privacy"):
    """No mechanism: every method aggregates as its paper states (the default)."""
    active: ClassVar[bool] = False

    def __init__(self):
        pass


class ClientDP(CheckedSettings, group="privacy"):
    """Client-level DP of the model updates (DP-FedAvg): clipping, Gaussian noise on each released sum, a fixed
    denominator, Poisson participation, and the privacy loss accounted over the rounds (accounting.py)."""
    active: ClassVar[bool] = True
    mechanism: ClassVar[str] = ("DP-FedAvg (McMahan et al., ICLR 2018): Poisson participation, each update clipped to "
                                "clip_norm, Gaussian noise of std noise_multiplier x clip_norm on each released sum, "
                                "a fixed denominator, uniform client weights")

    def __init__(self, clip_norm: Annotated[Optional[float], Between(0, lo_open=True),
                                            Help("S: each client's update is scaled to L2 norm at most S (null: no "
                                                 "clipping, only with noise_multiplier=0)")] = 1.0,
                 noise_multiplier: Annotated[float, AtLeast(0),
                                             Help("z: each released sum gets Gaussian noise of std z x S (0: no noise, "
                                                  "epsilon infinite)")] = 1.0,
                 delta: Annotated[float, Between(0, 1, lo_open=True, hi_open=True),
                                  Help("the delta of the (epsilon, delta) guarantee the run reports")] = 1e-5):
        if noise_multiplier > 0 and clip_norm is None:
            raise ConfigError(f"privacy.clip_norm=null with privacy.noise_multiplier={noise_multiplier}: noise needs a "
                              "bounded update; allowed: a clip_norm > 0, or noise_multiplier=0")
        from .accounting import require_accountant
        require_accountant()
        self.clip_norm = None if clip_norm is None else float(clip_norm)
        self.noise_multiplier, self.delta = float(noise_multiplier), float(delta)

    def clip(self, updates: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """[M, ...] updates, each row scaled to L2 norm at most S over all of its parameters."""
        if self.clip_norm is None:
            return updates
        squares = sum(v.reshape(len(v), -1).double().pow(2).sum(1) for v in updates.values())
        scale = torch.clamp(self.clip_norm / squares.sqrt().clamp_min(1e-30), max=1.0)
        return {k: v * scale.to(v.dtype).view(-1, *([1] * (v.dim() - 1))) for k, v in updates.items()}

    def noised_means(self, sums: Dict[str, torch.Tensor], release: Release, g: torch.Generator):
        """[K, ...] sums of clipped updates -> (sum + N(0, (z S sqrt(c))^2 I)) / D, each row its own noise, drawn on
        the CPU from `g` (the run's stream for this round: a resumed run draws the same)."""
        std = 0.0 if self.noise_multiplier == 0 else self.noise_multiplier * self.clip_norm * math.sqrt(release.contributions)
        out = {}
        for k, v in sums.items():
            noise = torch.randn(v.shape, generator=g, dtype=torch.float64) * std if std > 0 else 0.0
            out[k] = ((v.double() + (noise.to(v.device) if std > 0 else 0.0)) / release.denominator).to(v.dtype)
        return out

    def describe(self, release: Optional[Release], epsilon: float) -> dict:
        """summary.json's `privacy`, less what the method's messages say is covered (finished_run.py)."""
        return {"mechanism": self.mechanism, "epsilon": epsilon, "delta": self.delta,
                "noise_multiplier": self.noise_multiplier, "clip_norm": self.clip_norm,
                "adjacency": "add or remove one client",
                "accountant": "dp-accounting RDP (epsilon, and per round in metrics.csv); PLD (epsilon_pld)",
                "participation_rate": release.rate, "denominator": release.denominator,
                "contributions_per_client": release.contributions}
