"""Synthetic mixed linear regression (FedSoft §5, after Ghosh et al. 2020):
y = <x, theta_s> + eps, theta_s ~ N(0, sigma0^2 I_d), x ~ N(0, I_d), eps ~ N(0, noise_std^2)."""
import torch

from ..errors import ConfigError
from ..rng import generator


class SyntheticRegression:
    task = "regression"
    num_classes = 0

    def __init__(self, dim: int = 10, num_distributions: int = 2, sigma0: float = 10.0,
                 noise_std: float = 1.0, test_size: int = 2000, seed: int = 0):
        if dim < 1 or num_distributions < 1 or test_size < 1:
            raise ConfigError(f"synthetic dataset needs dim, num_distributions, test_size >= 1; "
                              f"got dim={dim}, num_distributions={num_distributions}, test_size={test_size}")
        if sigma0 <= 0 or noise_std < 0:
            raise ConfigError(f"synthetic dataset needs sigma0 > 0 and noise_std >= 0; got sigma0={sigma0}, noise_std={noise_std}")
        self.in_shape = (dim,)
        self.noise_std = noise_std
        self.test_size = test_size
        self.distribution_names = [f"theta_{s}" for s in range(num_distributions)]
        self.theta = sigma0 * torch.randn(num_distributions, dim, generator=generator(seed, "theta"))

    def sample(self, split, distribution, n, g):
        n = self.test_size if n is None else n
        x = torch.randn(n, self.in_shape[0], generator=g)
        y = x @ self.theta[distribution] + self.noise_std * torch.randn(n, generator=g)
        return x, y
