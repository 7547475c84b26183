"""Seen vs unseen clients and partial participation on one setting, from finished runs (issue 59).

Each method's local test accuracy (mean over clients, %, mean ± the half-width of the 95 % t-interval over
seeds) under full participation, then with a share of the clients held out of training
(partition.holdout_clients: the trained clients' score and the held-out clients', each with the model its
method's rule picks for a newcomer), then with client_fraction and client_dropout. Every run is found by its
summary.json under the folders given, and its own config.yaml says which of the three it is, so one sweep of
conf/preset/clove/ls3_participation.yaml, archives and the leaderboard's runs can be read together.

  fedcluster-report participation FOLDER [FOLDER ...] [--out PAGE.md]
(a later folder's run of the same method, seed and condition replaces an earlier one's)
"""
import math
import sys
from pathlib import Path

from ..run_records.yaml_safe import safe_load

from ..run_records.io import write_text
from .arguments import OneLineParser, refuse
from .compare import difference, mean_interval
from .runs import discover

PROG = "fedcluster-report participation"


CONDITIONS = ("full", "holdout", "partial")


def runs(folder: Path, partition: str, dataset: str) -> dict:
    """{condition: {method: {seed: summary}}} of the finished runs under `folder` on (dataset, partition)."""
    out = {c: {} for c in CONDITIONS}
    for run in discover(Path(folder)).runs:   # finished runs whose seals hold, in folders or packs
        s = dict(run.summary)
        if s.get("partition") == partition and s.get("dataset") == dataset:
            s["run_config"] = safe_load(run.files.read_text("config.yaml"))   # the run's whole config
            out[condition(s["run_config"], run.path)].setdefault(s["algorithm"], {})[int(s["seed"])] = s
    return out


def pooled(folders, partition: str, dataset: str) -> dict:
    """{condition: {method: {seed: summary}}} of the runs under every folder given (a later folder's run wins)."""
    out = {c: {} for c in CONDITIONS}
    for folder in folders:
        for c, methods in runs(folder, partition, dataset).items():
            for m, seeds in methods.items():
                out[c].setdefault(m, {}).update(seeds)
    return out


def condition(config: dict, where: Path) -> str:
    """full, holdout (partition.holdout_clients > 0) or partial (client_fraction < 1 or client_dropout > 0)."""
    held = (config.get("partition") or {}).get("holdout_clients") or 0
    fraction, dropout = sampling(config, "client_fraction"), sampling(config, "client_dropout")
    partial = (fraction is not None and fraction < 1) or bool(dropout)
    if held and partial:
        refuse(PROG, f"{where} both holds clients out and samples them; "
                         "this table compares one change at a time")
    return "holdout" if held else "partial" if partial else "full"


def sampling(config: dict, key: str):
    """A run's client_fraction or client_dropout: the method's own, its base method's under CAM (algorithm.base),
    or, for client_dropout, the top-level key it was for a day (2026-11-28)."""
    alg = config.get("algorithm") or {}
    for node in (alg, alg.get("base") or {}):
        if key in node:
            return node[key]
    return config.get(key)


def accuracy(summary: dict, key: str):
    value = (summary.get("local") or {}).get(key)
    return None if value is None else 100.0 * value


def cell(seeds: dict, key: str, most: int) -> str:
    """mean ± half-width over the seeds that ran; a cell with fewer seeds than the table's fullest says how many."""
    values = [v for v in (accuracy(s, key) for s in seeds.values()) if v is not None]
    if not values:
        return "–"
    mean, half = mean_interval(values)
    text = f"{mean:.1f} ± {half:.1f}" if not math.isnan(half) else f"{mean:.1f}"
    return text + (f" ({len(values)} of {most} seeds)" if len(values) < most else "")


def gap(a: dict, key_a: str, b: dict, key_b: str, most: int) -> str:
    """a - b in points with its 95 % interval (paired by seed where both ran the same seeds); starred where the
    interval leaves out 0 and both sides ran the table's full count of seeds (a sweep in progress stars nothing)."""
    xa = {k: accuracy(s, key_a) for k, s in a.items() if accuracy(s, key_a) is not None}
    xb = {k: accuracy(s, key_b) for k, s in b.items() if accuracy(s, key_b) is not None}
    if len(xa) < 2 or len(xb) < 2:
        return "–"
    d = difference(xa, xb)
    star = " *" if (d.low > 0 or d.high < 0) and min(len(xa), len(xb)) >= most else ""
    return f"{d.diff:+.1f} [{d.low:+.1f}, {d.high:+.1f}] ({d.test}){star}"


def parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("folders", type=Path, nargs="+",
                   help="folders searched for finished runs; each run's config says its condition")
    p.add_argument("--dataset", default="fashion_mnist")
    p.add_argument("--partition", default="label_skew3")
    p.add_argument("--out", type=Path)
    return p


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    found = pooled(a.folders, a.partition, a.dataset)
    full, held, partial = (found[c] for c in CONDITIONS)
    methods = sorted(set(held) | set(partial), key=lambda m: (m != "fedavg", m))   # the methods studied here
    share = {s["run_config"]["partition"].get("holdout_clients") for seeds in held.values() for s in seeds.values()}
    fraction = {sampling(s["run_config"], "client_fraction") for seeds in partial.values() for s in seeds.values()}
    dropout = {sampling(s["run_config"], "client_dropout") for seeds in partial.values() for s in seeds.values()}
    if len(share) != 1 or len(fraction) != 1 or len(dropout) != 1:
        refuse(PROG, f"one setting per condition; holdout_clients {share}, "
                         f"client_fraction {fraction}, client_dropout {dropout}")
    (share,), (fraction,), (dropout,) = share, fraction, dropout
    lines = [f"| method | full participation | seen clients (holdout {share}) | unseen clients (holdout {share}) "
             f"| unseen - seen (pts) | client_fraction {fraction}, client_dropout {dropout} "
             "| partial - full (pts) |", "|---|---|---|---|---|---|---|"]
    key, unseen = "local_test_accuracy", "unseen_test_accuracy"
    most = max(len(seeds) for c in (full, held, partial) for m, seeds in c.items() if m in methods)
    for m in methods:
        f, h, q = full.get(m, {}), held.get(m, {}), partial.get(m, {})
        lines.append(f"| {m} | {cell(f, key, most)} | {cell(h, key, most)} | {cell(h, unseen, most)} "
                     f"| {gap(h, unseen, h, key, most)} | {cell(q, key, most) if q else 'not run'} "
                     f"| {gap(q, key, f, key, most) if q else '–'} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out is not None:   # the page's table (from the marker to the first blank line) replaced, the rest kept
        page = a.out.read_text() if a.out.exists() else ""
        if "<!-- table -->\n" in page:
            head, rest = page.split("<!-- table -->\n", 1)
            tail = rest.split("\n\n", 1)[1] if "\n\n" in rest else ""
            page = head + "<!-- table -->\n" + text + ("\n" + tail if tail else "")
        else:
            page = text
        write_text(a.out, page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
