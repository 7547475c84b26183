"""What a private run records of its privacy: epsilon after every round (metrics.csv rows, model `privacy`, metric
`epsilon`), and summary.json's `privacy` (the mechanism, its parameters, the final epsilon at the run's delta, and
honestly what it covers: the models the server releases, and not the other messages the method sends)."""
from typing import List

from .accounting import epsilon, epsilon_pld

UPDATES = ("model", "gradient")   # the messages the mechanism's clipping and noise act on (algorithms/wire.py)
COVERS = ("the models the server releases every round (to the clients, and at the end of the run), each computed "
          "from the clients' clipped updates with Gaussian noise: central DP, the server trusted with the unnoised "
          "updates it receives")


def epsilon_after(t: int, alg, fed) -> float:
    """epsilon after rounds 0..t of the run (accounting.py)."""
    release = alg.client_dp_release(fed)
    return epsilon(release.rate, fed.privacy.noise_multiplier, fed.privacy.delta, t + 1)


def privacy_rows(t: int, alg, fed) -> List[dict]:
    """metrics.csv's row of round t: epsilon so far (none where the run has no privacy mechanism)."""
    if not fed.private:
        return []
    return [{"round": t, "model": "privacy", "model_index": -1, "eval_set": "released_models", "metric": "epsilon",
             "value": epsilon_after(t, alg, fed)}]


def privacy_summary(alg, fed, rounds: int, communication: List[dict]) -> dict:
    """summary.json's `privacy`; `communication` is the run's messages (communication.csv's rows): every kind a
    client sends other than its update is listed as not covered."""
    other = sorted({m["what"] for m in communication if m["direction"] == "up" and m["what"] not in UPDATES})
    not_covered = [f"{what} (sent by each client, unnoised)" for what in other]
    if other:
        not_covered.append("the server's choices made from them (which clients each model averages)")
    release = alg.client_dp_release(fed)
    described = fed.privacy.describe(release, epsilon_after(rounds - 1, alg, fed))
    tighter = epsilon_pld(release.rate, fed.privacy.noise_multiplier, fed.privacy.delta, rounds)
    return {**described, "epsilon_pld": tighter, "covers": COVERS, "not_covered": not_covered}
