"""A method against a baseline over seeds: the difference of means with a 95 % confidence
interval, paired by seed where both were run on the same seeds (so on the same data draw:
fedcluster draws a run's data from its seed and its data/partition config, which a comparison
holds equal), Welch's unequal-variance interval otherwise.

Paired: d_s = x_s - b_s over the shared seeds, mean(d) ± t(0.975, n-1) sd(d)/sqrt(n).
Welch: mean(x) - mean(b) ± t(0.975, df) sqrt(s_x²/n_x + s_b²/n_b), df by Welch-Satterthwaite.
Below MIN_SEEDS seeds on a side (Welch) or shared (paired) there is no interval: a t-interval from two
seeds has t(0.975, 1) = 12.7 and says nothing (two seeds gave "+7.1 [-260.2, +274.3]")."""
import math
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
from scipy import stats

LEVEL = 0.95
MIN_SEEDS = 3   # the fewest seeds an interval is computed from (developers' guide: no interval from fewer than 3)


@dataclass(frozen=True)
class Difference:
    """mean(method) - mean(baseline) with its interval [low, high]; `test`: "paired" or
    "Welch"; n: shared seeds (paired) or (n_method, n_baseline) as "3 vs 2" (Welch).
    `best`: set where this cell's method is significantly the best of its column (report)."""
    diff: float
    low: float
    high: float
    test: str
    n: str
    scale: float = 1.0     # shown multiplied by this (100: percent points)
    best: bool = False
    own_mean: Optional[float] = None   # set on the baseline's own row: its mean (diff 0, no interval)
    full: bool = True   # both sides have the table's full count of seeds: only then is a '*' shown

    @classmethod
    def of_baseline(cls, mean: float, n: int, scale: float, best: bool) -> "Difference":
        nan = float("nan")
        return cls(0.0, nan, nan, "baseline", str(n), scale, best, mean)

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def excludes_zero(self) -> bool:
        """The interval lies wholly above or below 0 (False where there is none)."""
        return self.has_interval and (self.low > 0 or self.high < 0)

    def text(self) -> str:
        def num(v):
            """Signed: 3 significant digits on the metric's own scale, one decimal in points; a value that
            rounds to 0.0 but is not 0 keeps 2 significant digits (a bound of +0.03 is not 'the 0' an
            interval is said to exclude), and an exact 0 has no sign."""
            v *= self.scale
            if abs(v) < 1e-9:   # floating-point noise of equal means (4.6e-18), not a difference
                v = 0.0
            digits = f"{abs(v):.3g}" if self.scale == 1 else f"{abs(v):.1f}"
            if float(digits) == 0 and v != 0:
                digits = f"{abs(v):.2g}"
            return ("+" if v > 0 else "−" if v < 0 else "") + digits
        if self.own_mean is not None:
            mean = self.own_mean * self.scale
            return (f"{mean:.3g}" if self.scale == 1 else f"{mean:.1f}") + " (its mean)" + (" ▲best" if self.best else "")
        out = num(self.diff)
        out += f" [{num(self.low)}, {num(self.high)}]" if self.has_interval else \
            f" (n={self.n}: too few seeds for an interval)"
        if self.excludes_zero and self.full:
            out += " *"
        if self.best:
            out += " ▲best"
        return out

    def __str__(self) -> str:
        return self.text()


def _t(df: float) -> float:
    return float(stats.t.ppf(0.5 + LEVEL / 2, df))


def paired_difference(x: Dict[object, float], b: Dict[object, float]) -> Difference:
    """Over the seeds both have (x, b: {seed: value})."""
    seeds = [s for s in x if s in b]
    d = np.array([x[s] - b[s] for s in seeds], dtype=float)
    n = len(d)
    mean = float(d.mean()) if n else float("nan")
    if n < MIN_SEEDS:
        return Difference(mean, float("nan"), float("nan"), "paired", str(n))
    half = _t(n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
    return Difference(mean, mean - half, mean + half, "paired", str(n))


def welch_difference(x, b) -> Difference:
    """Between the values x and b (independent samples)."""
    x, b = np.asarray(list(x), dtype=float), np.asarray(list(b), dtype=float)
    nx, nb = len(x), len(b)
    mean = float(x.mean() - b.mean()) if nx and nb else float("nan")
    label = f"{nx} vs {nb}"
    if nx < MIN_SEEDS or nb < MIN_SEEDS:
        return Difference(mean, float("nan"), float("nan"), "Welch", label)
    vx, vb = x.var(ddof=1) / nx, b.var(ddof=1) / nb
    se = math.sqrt(vx + vb)
    if se == 0:
        return Difference(mean, mean, mean, "Welch", label)
    df = (vx + vb) ** 2 / (vx ** 2 / (nx - 1) + vb ** 2 / (nb - 1))
    half = _t(df) * se
    return Difference(mean, mean - half, mean + half, "Welch", label)


def difference(x: Dict[object, float], b: Dict[object, float]) -> Optional[Difference]:
    """Paired where both sides have exactly the same seeds, Welch otherwise; None where a side
    has no value. (Fewer than MIN_SEEDS shared seeds: paired, with no interval.)"""
    if not x or not b:
        return None
    if set(x) == set(b):   # the same seeds (fewer than MIN_SEEDS: paired, with no interval)
        return paired_difference(x, b)
    return welch_difference(x.values(), b.values())


def mean_interval(values) -> tuple:
    """(mean, half-width of its 95 % t-interval) of a sample; NaN half-width below MIN_SEEDS values."""
    x = np.asarray(list(values), dtype=float)
    if len(x) < MIN_SEEDS:
        return float(x.mean()), float("nan")
    return float(x.mean()), _t(len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))


def significantly_best(samples: Dict[object, Dict[object, float]], higher: bool = True):
    """The key of `samples` ({key: {seed: value}}) whose mean is best and whose difference to
    every other key's (`difference`: paired or Welch) has a 95 % interval excluding 0 on the
    better side; None where no key is (or fewer than two have values)."""
    samples = {k: v for k, v in samples.items() if v}
    if len(samples) < 2:
        return None
    sign = 1 if higher else -1
    top = max(samples, key=lambda k: sign * sum(samples[k].values()) / len(samples[k]))
    for k, v in samples.items():
        if k == top:
            continue
        d = difference(samples[top], v)
        if d is None or not d.excludes_zero or sign * d.diff <= 0:
            return None
    return top

