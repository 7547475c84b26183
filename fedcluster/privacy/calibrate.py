"""The noise multiplier that spends a target epsilon: `python -m fedcluster.privacy.calibrate --epsilon 8 4 1 --rate
0.1 --rounds 100 [--delta 1e-5]` prints one z per epsilon (the smallest, to 3 decimals rounded up, whose
accounted epsilon after `rounds` rounds at participation `rate` is at most the target: accounting.py's own
accountant, found by bisection). A run is then given privacy.noise_multiplier=<z>: what config.yaml records is the
noise that ran, and summary.json's epsilon is what that noise spent."""
import argparse
import math
import sys

from .accounting import epsilon


def noise_multiplier_for(target: float, rate: float, rounds: int, delta: float = 1e-5) -> float:
    """The smallest z on a 1e-3 grid with epsilon(rate, z, delta, rounds) <= target."""
    if not target > 0 or not 0 < rate <= 1 or rounds < 1 or not 0 < delta < 1:
        raise ValueError(f"epsilon={target}, rate={rate}, rounds={rounds}, delta={delta}; allowed: epsilon > 0, "
                         "0 < rate <= 1, rounds >= 1, 0 < delta < 1")
    lo, hi = 0.0, 1.0
    while epsilon(rate, hi, delta, rounds) > target:
        lo, hi = hi, hi * 2
        if hi > 1e6:
            raise ValueError(f"epsilon={target} is out of reach at rate={rate} over {rounds} rounds")
    while hi - lo > 1e-4:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if epsilon(rate, mid, delta, rounds) > target else (lo, mid)
    return math.ceil(hi * 1000) / 1000


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fedcluster.privacy.calibrate", description=__doc__.split("\n")[0])
    parser.add_argument("--epsilon", type=float, nargs="+", required=True)
    parser.add_argument("--rate", type=float, required=True, help="participation rate q (1: every client, every round)")
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args(argv)
    try:
        print(" ".join(f"{noise_multiplier_for(e, args.rate, args.rounds, args.delta):.3f}" for e in args.epsilon))
    except ValueError as e:
        print(f"calibrate: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
