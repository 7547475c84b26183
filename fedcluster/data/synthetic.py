"""Synthetic mixed linear regression (FedSoft §5, after Ghosh et al. 2020):
y = <x, theta_s> + eps, theta_s ~ N(0, theta_var I_d), x ~ N(0, I_d), eps ~ N(0, noise_std^2).

The scale is a *variance*, as in the FedSoft authors' code (datawrappers/lr.py passes
`weight_var = 10` to a normal draw as its variance): the paper's text says "sigma0 = 10", but
its numbers (Tables 1, 3) were made with variance 10 (std sqrt(10)), and Table 6's
"sigma0 = 1, 10, 50, 100" are variances too (at "100" its centers score 432-812; with a std of
100 the MSE would be ~1e4). `theta_var` is therefore the paper's sigma0 as its code used it."""
import math
from typing import Annotated

import torch

from ..errors import ConfigError
from ..rng import generator
from ..rules import AtLeast, Between, CheckedSettings, Positive


class SyntheticRegression(CheckedSettings, group="dataset"):   # declared rules checked when built (rules.py)
    task = "regression"
    num_classes = 0
    size_setting = "dim"   # what a sample's size follows (data/budget.py names it in a refusal)

    def __init__(self, dim: Annotated[int, AtLeast(1)] = 10, num_distributions: Annotated[int, AtLeast(1)] = 2,
                 theta_var: Annotated[float, Positive] = 10.0, noise_std: Annotated[float, AtLeast(0)] = 1.0,
                 test_size: Annotated[int, AtLeast(1)] = 2000, seed: Annotated[int, AtLeast(0)] = 0):
        self.in_shape = (dim,)
        self.noise_std = noise_std
        self.test_size = test_size
        self.distribution_names = [f"theta_{s}" for s in range(num_distributions)]
        self.theta_var, self.seed = theta_var, seed
        self._theta = None   # drawn on first use, after the memory check (assemble.build), from its own stream

    @property
    def theta(self) -> torch.Tensor:
        """[S, dim] the distributions' parameters (the same values whenever they are drawn)."""
        if self._theta is None:
            self._theta = self.draw_theta()
        return self._theta

    @theta.setter
    def theta(self, value: torch.Tensor) -> None:
        self._theta = value

    def draw_theta(self) -> torch.Tensor:
        S, dim = len(self.distribution_names), self.in_shape[0]
        return math.sqrt(self.theta_var) * torch.randn(S, dim, generator=generator(self.seed, "theta"))

    def held_bytes(self) -> dict:
        """Memory this source holds besides the clients' data, by the key that drives it: the
        S test sets of test_size samples (inputs and targets, float32) and theta (float64 while
        the separated variant places it)."""
        S, dim = len(self.distribution_names), self.in_shape[0]
        return {f"dataset.test_size={self.test_size}": S * self.test_size * (dim + 1) * 4,
                f"dataset.dim={dim}": S * dim * 8}

    def sample(self, split, distribution, n, g):
        n = self.test_size if n is None else n
        x = torch.randn(n, self.in_shape[0], generator=g)
        y = x @ self.theta[distribution] + self.noise_std * torch.randn(n, generator=g)
        return x, y


def separated_unit_vectors(K: int, dim: int, delta: float, g: torch.Generator, attempts: int = 10000) -> torch.Tensor:
    """K unit vectors whose pairwise distances all lie in [delta, 5 delta] (CLoVE App. C.1.1).

    Points are drawn on the unit sphere near a random pole (perturbations of scale
    ~2 delta, or uniformly when delta is large) until every pair falls in the range."""
    if not 0 < delta <= 2:
        raise ConfigError(f"dataset.delta={delta} must be in (0, 2]: unit vectors are at most 2 apart")
    pole = torch.nn.functional.normalize(torch.randn(dim, generator=g), dim=0)
    spread = 2 * delta / (2 * dim) ** 0.5
    iu = torch.triu_indices(K, K, 1)
    for _ in range(attempts):
        if delta >= 0.5:
            theta = torch.nn.functional.normalize(torch.randn(K, dim, generator=g, dtype=torch.float64), dim=1)
        else:
            step = torch.randn(K, dim, generator=g, dtype=torch.float64) * spread
            theta = torch.nn.functional.normalize(pole.double() + step, dim=1)
        d = torch.cdist(theta, theta)[iu[0], iu[1]]
        if K == 1 or (d.min() >= delta and d.max() <= 5 * delta):
            return theta.float()
    raise ConfigError(f"could not place {K} unit vectors in {dim} dimensions with pairwise distances in "
                      f"[{delta}, {5 * delta}]; change dataset.delta or dataset.dim")


class SeparatedRegression(SyntheticRegression):
    """CLoVE App. C.1.1 mixed linear regression: y = <x, theta*_k> + eps with unit-norm
    theta*_k, pairwise distances in [delta, 5 delta], x ~ N(0, I_d), eps ~ N(0, sigma^2),
    sigma << 1 (CLoVE §4). The appendix gives neither d nor sigma; defaults d = 10 (as the
    IFCA/FedSoft synthetic data) and sigma = 0.01."""

    def __init__(self, dim: Annotated[int, AtLeast(1)] = 10, num_distributions: Annotated[int, AtLeast(1)] = 5,
                 delta: Annotated[float, Between(0, 2, lo_open=True)] = 1.0,   # unit vectors are at most 2 apart
                 noise_std: Annotated[float, AtLeast(0)] = 0.01,
                 test_size: Annotated[int, AtLeast(1)] = 2000, seed: Annotated[int, AtLeast(0)] = 0):
        super().__init__(dim, num_distributions, 1.0, noise_std, test_size, seed)
        self.delta = delta

    def draw_theta(self) -> torch.Tensor:
        return separated_unit_vectors(len(self.distribution_names), self.in_shape[0], self.delta,
                                      generator(self.seed, "theta"))
