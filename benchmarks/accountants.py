"""Which privacy accountant fedcluster uses, by measurement (issue 78): the epsilon each accountant gives for the
rounds of a private run (Poisson-subsampled Gaussian, composed over the rounds, delta 1e-5) and its seconds, side
by side in one run: Google's dp-accounting (RDP: fedcluster's `epsilon` and metrics.csv's per round; PLD:
summary.json's `epsilon_pld`) and Opacus' RDP and PRV accountants where Opacus is importable.

  python benchmarks/accountants.py [--json] [--smoke]
(Opacus is not a dependency: `pip install --no-deps --target /tmp/opacus_pkg opacus opt_einsum` and
PYTHONPATH=/tmp/opacus_pkg adds its columns)"""
import argparse
import json
import logging
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fedcluster.privacy.accounting import epsilon, epsilon_pld  # noqa: E402

DELTA = 1e-5
# the study's levels (scripts/sweeps/dp_study.sh: q = 0.1 and q = 1 over 100 rounds, epsilon 8, 4, 1 by RDP)
SETTINGS = [(0.1, 0.994, 100), (0.1, 1.482, 100), (0.1, 4.278, 100), (1.0, 6.377, 100), (1.0, 40.454, 100)]


def timed(fn):
    start = time.perf_counter()
    try:
        value = float(fn())
    except Exception as e:   # noqa: BLE001 -- an accountant that cannot do a setting says so in its cell
        value = f"{type(e).__name__}"
    return value, time.perf_counter() - start


def opacus_epsilon(cls_name, q, z, rounds):
    import opacus.accountants as accountants
    accountant = getattr(accountants, cls_name)()
    accountant.history = [(z, q, rounds)]
    return accountant.get_epsilon(delta=DELTA)


def rows(settings):
    try:
        import opacus  # noqa: F401 -- its columns only where it is importable
        have_opacus = True
    except ImportError:
        have_opacus = False
    for q, z, rounds in settings:
        row = {"rate": q, "noise_multiplier": z, "rounds": rounds, "delta": DELTA}
        for name, fn in (("dp_accounting_rdp", lambda: epsilon(q, z, DELTA, rounds)),
                         ("dp_accounting_pld", lambda: epsilon_pld(q, z, DELTA, rounds)),
                         ("opacus_rdp", (lambda: opacus_epsilon("RDPAccountant", q, z, rounds)) if have_opacus else None),
                         ("opacus_prv", (lambda: opacus_epsilon("PRVAccountant", q, z, rounds)) if have_opacus else None)):
            row[name], row[f"{name}_seconds"] = timed(fn) if fn else ("not installed", None)
        yield row


def markdown(results: Path) -> str:
    """docs/privacy.md's table of committed results (`--json` lines): epsilon and seconds per accountant."""
    lines = ["| rate q | noise z | rounds | dp-accounting RDP (fedcluster's epsilon) | dp-accounting PLD (epsilon_pld) "
             "| Opacus RDP | Opacus PRV |", "|---|---|---|---|---|---|---|"]
    for line in results.read_text().splitlines():
        r = json.loads(line)
        cells = [f"{r[k]:.3f} ({r[k + '_seconds']:.3f} s)" if isinstance(r[k], float) else str(r[k])
                 for k in ("dp_accounting_rdp", "dp_accounting_pld", "opacus_rdp", "opacus_prv")]
        lines.append(f"| {r['rate']:g} | {r['noise_multiplier']:g} | {r['rounds']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="one JSON object a setting")
    p.add_argument("--smoke", action="store_true", help="one setting of 3 rounds (CI)")
    p.add_argument("--markdown", type=Path, metavar="RESULTS", help="print the table of a committed --json file")
    a = p.parse_args(argv)
    if a.markdown is not None:
        print(markdown(a.markdown), end="")
        return 0
    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    for row in rows([(0.1, 1.0, 3)] if a.smoke else SETTINGS):
        if a.json:
            print(json.dumps(row))
        else:
            cells = [f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()]
            print(" ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
