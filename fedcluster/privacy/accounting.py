"""The privacy loss of a run's rounds: Google's dp-accounting (the `privacy` extra), its RDP accountant over the
rounds' Poisson-subsampled Gaussian mechanisms (Mironov, Talwar & Zhang 2019), converted to epsilon at the run's
delta. Chosen over Opacus' accountants and dp-accounting's PLD by what they support and by measurement
(docs/privacy.md): RDP composes any number of identical rounds at the cost of one and supports every rate here.

A round with participation rate q < 1 is PoissonSampledDpEvent(q, GaussianDpEvent(z)); with q = 1 (every client,
every round, or a method whose choice of clients is not a uniform sample) it is GaussianDpEvent(z): no credit for
sampling. The value after round t is the composition of t + 1 such rounds, computed from nothing but t, so a
resumed run reports what the uninterrupted one does."""
import functools
import logging
import math

from ..errors import ConfigError

_REASON = "privacy=client_dp needs Google's dp-accounting package: pip install 'fedcluster[privacy]'"


def require_accountant() -> None:
    try:
        import dp_accounting  # noqa: F401 -- whether it is installed
    except ImportError:
        raise ConfigError(_REASON) from None
    unbind_absl_stream()


def unbind_absl_stream() -> None:
    """dp-accounting imports absl, whose logging handler (never attached to a logger unless absl's app runs) keeps
    the sys.stderr of the moment absl was imported. Any later logging.config.dictConfig (Hydra configures its logging
    so at every command) closes every handler, and absl's closes its stream unless it is the sys.stderr of that
    moment: a process that imported absl under a redirected stderr (an API user's capture, a test's) lost that
    stream at its next command. The interpreter's own stderr is never closed by it."""
    import sys
    try:
        from absl import logging as absl_logging
    except ImportError:
        return
    absl_logging.get_absl_handler().python_handler.stream = sys.__stderr__


def round_event(rate: float, noise_multiplier: float):
    """One round's DpEvent."""
    import dp_accounting
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    return gaussian if rate >= 1 else dp_accounting.PoissonSampledDpEvent(rate, gaussian)


@functools.lru_cache(maxsize=8)
def _one_round(rate: float, noise_multiplier: float):
    """(orders, RDP of one round at each order): composed once, so t rounds are t times it (RDP composes by sums)."""
    from dp_accounting.rdp import RdpAccountant
    unbind_absl_stream()
    absl = logging.getLogger("absl")   # its notes on fractional orders that did not converge (left out) are not ours
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        accountant = RdpAccountant()
        accountant.compose(round_event(rate, noise_multiplier), 1)
        return accountant.orders, accountant.rdp
    finally:
        absl.setLevel(level)


def epsilon(rate: float, noise_multiplier: float, delta: float, rounds: int) -> float:
    """epsilon after `rounds` rounds of one release (inf without noise; 0 before any round): dp-accounting's
    RdpAccountant over `rounds` identical events, computed from one round's RDP."""
    if rounds <= 0:
        return 0.0
    if noise_multiplier <= 0:
        return math.inf
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
    orders, rdp = _one_round(float(rate), float(noise_multiplier))
    return float(compute_epsilon(orders, rounds * rdp, delta)[0])


def epsilon_pld(rate: float, noise_multiplier: float, delta: float, rounds: int) -> float:
    """The same rounds' epsilon from dp-accounting's privacy loss distribution accountant (pessimistic
    discretisation: still an upper bound, and tighter than RDP's: 7.13 against 8.00 at q = 0.1, z = 0.994, 100
    rounds; docs/privacy.md). Seconds a call, so summary.json gives it once, beside the per-round RDP value."""
    if rounds <= 0:
        return 0.0
    if noise_multiplier <= 0:
        return math.inf
    from dp_accounting.pld import PLDAccountant
    unbind_absl_stream()
    accountant = PLDAccountant()
    accountant.compose(round_event(rate, noise_multiplier), rounds)
    return float(accountant.get_epsilon(delta))
