"""The paper-shaped tables. Each takes the cells of one (sub-)table (runs that differ only in
seed, see runs.py) and lays them out by the config keys it `consumes`; every other key that
varies has already split the runs into separate sub-tables, so no row ever averages runs of
different configurations.

Centers are relabelled per run with the Hungarian matching on test loss (`matched_center`),
so column c(theta_j) is the center that serves distribution j; raw indices stay in summary.json."""
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .. import paper_numbers as paper
from ..metrics import hungarian_match
from .cells import DASH, Stat
from .runs import ABSENT, Cell, ReportError, Run, show, sort_key


@dataclass
class Context:
    """What a table function needs besides its cells: the table's name (for the paper's
    numbers and protocol) and the config keys that vary between its runs."""
    table: str
    varying: List[str]


@dataclass
class Table:
    """One (sub-)table: the frame, notes that belong under its title, and extra frames
    (heading, frame) printed after it (e.g. CAM's clustering diagnostics)."""
    frame: pd.DataFrame
    notes: List[str] = field(default_factory=list)
    extra: List[Tuple[str, pd.DataFrame]] = field(default_factory=list)
    cells: List[Cell] = field(default_factory=list)      # set by the caller: what the table shows
    laid_out: List[str] = field(default_factory=list)    # the varying keys it lays out
    split: List[Tuple[str, object]] = field(default_factory=list)   # (key, value) this sub-table is for


# -- helpers -------------------------------------------------------------------------------

def index_cells(cells: Sequence[Cell], keyfunc: Callable[[Cell], tuple]) -> Dict[tuple, Cell]:
    """{layout key: cell}. Two cells on one layout key would be averaged together, which the
    table must never do: the table's `consumes` list and its layout disagree (a bug)."""
    out = {}
    for c in cells:
        k = keyfunc(c)
        if k in out:
            raise ReportError(f"internal: two configurations share the table position {k} "
                              f"({out[k].runs[0].path} and {c.runs[0].path}); please report this")
        out[k] = c
    return out


def _local(summary: dict, key: str):
    return (summary.get("local") or {}).get(key)


def matched_matrix(summary: dict, metric: str) -> np.ndarray:
    """[distribution, distribution]: row d = test distribution, column j = the center matched
    to distribution j (NaN where no center was matched)."""
    names = summary["distributions"]
    raw = np.array([summary["centers"][metric][d] for d in names], dtype=float)   # [D, K]
    out = np.full((len(names), len(names)), np.nan)
    for j, d in enumerate(names):
        c = summary.get("matched_center", {}).get(d, -1)
        if c is not None and 0 <= c < raw.shape[1]:
            out[:, j] = raw[:, c]
    return out


def paper_matched(matrix) -> np.ndarray:
    """The paper's center matrix with its centers relabelled the way ours are."""
    m = np.asarray(matrix, dtype=float)
    return m[:, hungarian_match(m.T)]


def ari_curve(summary: dict) -> List[Optional[float]]:
    """ARI after each round, index t-1 = round t (1-based), None where the method had no
    clustering yet. Older summaries listed only the rounds that had one, ending at the last
    round: those are padded at the front to the run's length."""
    curve = list(summary.get("ari_by_round") or [])
    rounds = summary.get("rounds")
    if isinstance(rounds, int) and 0 < len(curve) < rounds:
        curve = [None] * (rounds - len(curve)) + curve
    return [None if v is None else float(v) for v in curve]


def first_round_reached(summary: dict, threshold: float = 0.9) -> Optional[int]:
    """The first 1-based round whose ARI is >= threshold (None: never), from the aligned curve
    (the summary's own field where it has no curve)."""
    curve = ari_curve(summary)
    if not curve:
        return summary.get(f"first_round_ari_ge_{threshold}")
    return next((t for t, v in enumerate(curve, 1) if v is not None and v >= threshold), None)


def pct_of_final_by(summary: dict, by_round: int = 10) -> Optional[float]:
    """CLoVE Table 4: ARI at round `by_round` as a percentage of the final ARI (None when
    either is missing or the final ARI is not positive)."""
    curve = ari_curve(summary)
    if not curve:
        return summary.get(f"ari_pct_of_final_by_round{by_round}")
    if len(curve) < by_round or curve[by_round - 1] is None or not curve[-1] or curve[-1] <= 0:
        return None
    return 100.0 * curve[by_round - 1] / curve[-1]


def first_round_stat(summaries: Sequence[dict]) -> Stat:
    """Mean first round with ARI >= 0.9 over the seeds that reached it; the note says how many
    never did ("never" when none did)."""
    hits = [first_round_reached(s) for s in summaries]
    reached = [h for h in hits if h is not None]
    missing = len(hits) - len(reached)
    note = "" if missing == 0 else ("never" if not reached else f"{missing} never")
    return Stat.of(reached, note=note)


def ari_at_rounds(cells: Sequence[Cell], rows: List[dict], picks=(1, 2, 3, 5, 10, 20, 30)) -> None:
    """Add `ARI r<t>` (true 1-based round t) to each cell's row, for the rounds some run has."""
    longest = max((len(ari_curve(s)) for c in cells for s in c.summaries), default=0)
    for cell, row in zip(cells, rows):
        curves = [ari_curve(s) for s in cell.summaries]
        for t in picks:
            if t <= longest:
                row[f"ARI r{t}"] = Stat.of(c[t - 1] for c in curves if len(c) >= t)


# -- paper protocol ------------------------------------------------------------------------

def our_protocol(run: Run) -> dict:
    """The protocol keys of one of our runs, in paper_numbers.Protocol's terms."""
    s = run.summary
    rounds = run.value("rounds")
    clients = s.get("num_clients", run.value("partition.num_clients"))
    per_client = run.value("partition.samples_per_client")
    if per_client is ABSENT:
        low, high = run.value("partition.min_samples"), run.value("partition.max_samples")
        per_client = (low, high) if high is not ABSENT else None
    pool = run.value("dataset.train_size")
    return {"rounds": s.get("rounds") if rounds is ABSENT else rounds, "num_clients": clients,
            "samples_per_client": per_client, "training_pool": "full" if pool in (None, ABSENT) else pool,
            "dataset": show(run.value("dataset.name"))}


def _size(v) -> str:
    if v is None:
        return "split of the training set"
    if isinstance(v, tuple):
        return f"{v[0]}" if v[0] == v[1] else f"{v[0]}-{v[1]}"
    return str(v)


def protocol_gaps(protocol: Optional[paper.Protocol], runs: Sequence[Run]) -> List[str]:
    """'rounds 100 vs ours 20'-style differences between a paper table's protocol and our runs
    (empty when they match, or when the paper gives no protocol)."""
    if protocol is None or not runs:
        return []
    ours = [our_protocol(r) for r in runs]
    gaps = []
    checks = [("dataset", "data set", str), ("rounds", "rounds", str), ("num_clients", "clients", str),
              ("samples_per_client", "samples/client", _size), ("training_pool", "training set", str)]
    for attr, label, fmt in checks:
        want = getattr(protocol, attr)
        if want is None:
            continue
        if attr == "samples_per_client" and isinstance(want, int):
            want = (want, want)
        have = sorted({o[attr] if not (attr == "samples_per_client" and isinstance(o[attr], int))
                       else (o[attr], o[attr]) for o in ours}, key=str)
        if have != [want]:
            gaps.append(f"{label} {fmt(want)} vs ours {'/'.join(fmt(h) for h in have)}")
    return gaps


def paper_label(base: str, gaps: Sequence[str]) -> str:
    """A paper column's header: as is where the protocol matches, else labelled with how it
    differs, so a reader never takes the two numbers for a like-for-like comparison."""
    return f"{base} (different protocol: {'; '.join(gaps)})" if gaps else base


def _unique(items) -> list:
    return list(dict.fromkeys(items))


def _runs(cells: Sequence[Cell]) -> List[Run]:
    return [r for c in cells for r in c.runs]


# -- FedSoft -------------------------------------------------------------------------------

def _mixture_table(cells, ctx, metric, paper_table, label, keyfunc, order=None) -> Table:
    """FedSoft Tables 1 and 6: per group (partition or sigma0) each center's test metric on each
    distribution, local models on held-out and training data, ARI and importance error."""
    groups = index_cells(cells, keyfunc)
    gaps = protocol_gaps(paper.PROTOCOLS.get(ctx.table), _runs(cells))
    keys = [k for k in (order or []) if k in groups] + sorted(set(groups) - set(order or []), key=sort_key)
    rows = []
    for group in keys:
        cell = groups[group]
        rs = cell.summaries
        names = rs[0]["distributions"]
        ref = paper_table.get(group) if paper_table else None
        ref_m = paper_matched(ref["centers"] if isinstance(ref, dict) else ref) if ref is not None else None
        def base(test):
            return {label: group, "test": test, "seeds": len(cell.seeds)}
        first = f"ours c({names[0]})"
        if all("centers" in s for s in rs):
            mats = np.stack([matched_matrix(s, metric) for s in rs])
            for d, name in enumerate(names):
                row = base(name)
                for j, cname in enumerate(names):
                    row[f"ours c({cname})"] = Stat.of(mats[:, d, j])
                for j, cname in enumerate(names):
                    row[paper_label(f"paper c({cname})", gaps)] = f"{ref_m[d, j]:.3g}" if ref_m is not None else DASH
                rows.append(row)
        rows.append(dict(base("local (held-out test)"), **{first: Stat.of(_local(s, f"local_test_{metric}") for s in rs)}))
        rows.append(dict(base("local (training data, as the paper scored)"),
                         **{first: Stat.of(_local(s, f"local_train_{metric}") for s in rs),
                            paper_label(f"paper c({names[0]})", gaps):
                                f"{ref['local_train']:.3g}" if isinstance(ref, dict) else DASH}))
        rows.append(dict(base("ARI (dominant distribution)"), **{first: Stat.of(s.get("ari") for s in rs)}))
        errs = [max((g["max_abs_error"] for g in (s.get("importance_error") or {}).values()), default=None) for s in rs]
        if any(e is not None for e in errs):
            rows.append(dict(base("max abs(mean u - true ratio)"), **{first: Stat.of(errs)}))
    return Table(pd.DataFrame(rows).fillna(""), [FEDSOFT_WBAR_NOTE])


# Read in the authors' validators.py (ValidatorRegression.validate): a client's loss is summed over
# its *training* loader (batch size 10, App. C) and divided by len(loader) * test_ds_batch_size (50).
FEDSOFT_WBAR_NOTE = (
    "The paper's synthetic w-bar is scored on training data and, in the authors' code (validators.py), its "
    "summed squared error is divided by the test batch size 50 while the client's loader holds batches of 10, "
    "so the paper's w-bar is likely about 5x too small (at sigma0 = 1 it is 0.6, below the noise variance 1). "
    "Compare our 'training data' row with 5x the paper's.")


def table_fedsoft_table1(cells, ctx) -> Table:
    """FedSoft Table 1 (synthetic): one block per partition."""
    return _mixture_table(cells, ctx, "mse", paper.FEDSOFT_TABLE1_SYNTHETIC_MSE, "partition",
                          lambda c: c.value("partition.name"), ["mix_10_90", "mix_30_70", "linear", "random"])


def table_fedsoft_table6(cells, ctx) -> Table:
    """FedSoft Table 6: one block per sigma0, the paper's name for theta's variance in its code
    (dataset.theta_var)."""
    return _mixture_table(cells, ctx, "mse", paper.FEDSOFT_TABLE6_SIGMA0, "theta_var (paper: sigma0)",
                          lambda c: float(c.value("dataset.theta_var")))


def table_fedsoft_table3(cells, ctx) -> Table:
    """FedSoft Table 3 (8 distributions, one configuration per sub-table): the matched center
    against the best other center per distribution, beside the paper's best and worst."""
    ref = np.asarray(paper.FEDSOFT_TABLE3_SYNTHETIC_MSE)
    gaps = protocol_gaps(paper.PROTOCOLS.get(ctx.table), _runs(cells))
    best, worst = paper_label("paper best center", gaps), paper_label("paper worst center", gaps)
    rows = []
    for cell in cells:
        rs, n = cell.summaries, len(cell.seeds)
        if not all("centers" in s for s in rs):
            continue
        names = rs[0]["distributions"]
        mats = np.stack([matched_matrix(s, "mse") for s in rs])
        for d, name in enumerate(names):
            others = [np.nanmin(np.delete(m[d], d)) if len(m[d]) > 1 else np.nan for m in mats]
            rows.append({"test": name, "seeds": n, "ours matched center": Stat.of(mats[:, d, d]),
                         "ours best other center": Stat.of(others),
                         "ours matched is best": f"{int(sum(m[d, d] <= np.nanmin(m[d]) for m in mats))}/{len(mats)}",
                         best: f"{ref[d].min():.3g}" if d < len(ref) else DASH,
                         worst: f"{ref[d].max():.3g}" if d < len(ref) else DASH})
        rows.append({"test": "local (held-out test)", "seeds": n,
                     "ours matched center": Stat.of(_local(s, "local_test_mse") for s in rs)})
        rows.append({"test": "ARI (dominant distribution)", "seeds": n,
                     "ours matched center": Stat.of(s.get("ari") for s in rs)})
    return Table(pd.DataFrame(rows).fillna(""))


def _best_center(summary: dict, d: str) -> Tuple[float, int]:
    """(accuracy of the center best on distribution d, its index): FedSoft Table 2's c*_d."""
    acc = summary["centers"]["accuracy"][d]
    i = int(np.argmax(acc))
    return acc[i], i


def _fedem_other_predictor(cells: Sequence[Cell], index) -> List[Tuple[tuple, Cell]]:
    """A FedEM run scores both predictors (mixture and top component, `local_alternatives`):
    present the one it was not configured for as its own method, unless the runs include it."""
    derived = []
    for (part, alg), cell in index.items():
        if alg not in ("fedem", "fedem_top"):
            continue
        other, predictor = ("fedem_top", "top_component") if alg == "fedem" else ("fedem", "mixture")
        if (part, other) in index:
            continue
        runs = []
        for r in cell.runs:
            local = (r.summary.get("local_alternatives") or {}).get(predictor)
            if local:
                runs.append(Run(r.path, {**r.summary, "algorithm": other, "local": local}, r.flat, r.seed))
        if runs:
            derived.append(((part, other), Cell(cell.key, runs)))
    return derived


def table_fedsoft_table2(cells, ctx) -> Table:
    """FedSoft Table 2 protocol: c*_d (accuracy of the center best on d, its index per seed
    after it), w-bar on held-out local test data and on training data, beside the paper's
    letters numbers."""
    ref = paper.FEDSOFT_TABLE2_LETTERS
    gaps = protocol_gaps(paper.PROTOCOLS.get(ctx.table), _runs(cells))
    order = ["fedsoft", "ifca", "fedem", "fedem_top"]
    index = index_cells(cells, lambda c: (c.value("partition.name"), c.value("algorithm.name")))
    entries = list(index.items()) + _fedem_other_predictor(cells, index)

    def method(alg: str) -> str:
        return "fedsoft" if str(alg).startswith("fedsoft") else alg

    entries.sort(key=lambda kv: (sort_key(kv[0][0]), order.index(method(kv[0][1])) if method(kv[0][1]) in order else 99,
                                 str(kv[0][1])))
    rows = []
    for (part, alg), cell in entries:
        rs = cell.summaries
        row = {"dataset": rs[0].get("dataset"), "partition": part, "method": method(alg), "seeds": len(cell.seeds)}
        if all("accuracy" in (s.get("centers") or {}) for s in rs):
            for d in rs[0]["distributions"]:
                best = [_best_center(s, d) for s in rs]
                row[f"c*({d}) % (center)"] = Stat.pct([a for a, _ in best], note="/".join(str(i) for _, i in best))
        row["w-bar % held-out local test"] = Stat.pct(_local(s, "local_test_accuracy") for s in rs)
        row["w-bar % training data (as the paper)"] = Stat.pct(_local(s, "local_train_accuracy") for s in rs)
        p = ref.get(part, {}).get("fedem" if method(alg) == "fedem_top" else method(alg))
        if p:
            row[paper_label("paper letters c*_lo (center)", gaps)] = f"{p[0][0]} ({p[0][1]})"
            row[paper_label("paper letters c*_up (center)", gaps)] = f"{p[1][0]} ({p[1][1]})"
            row[paper_label("paper letters w-bar (training data)", gaps)] = p[2]
        rows.append(row)
    return Table(pd.DataFrame(rows).fillna(""))


def table_fedsoft_table5(cells, ctx) -> Table:
    """FedSoft Table 5, the lambda study: per lambda each center's accuracy on each
    distribution and w-bar, beside the paper's letters numbers (lambda = 0 worst, 0.1 best)."""
    ref = paper.FEDSOFT_TABLE5_LAMBDA
    gaps = protocol_gaps(paper.PROTOCOLS.get(ctx.table), _runs(cells))
    col = paper_label("paper letters c_0 / c_1 %", gaps)
    index = index_cells(cells, lambda c: c.value("algorithm.lam"))
    rows = []
    for lam in sorted(index, key=sort_key):
        cell = index[lam]
        rs, n = cell.summaries, len(cell.seeds)
        lam_value = float(lam) if isinstance(lam, (int, float)) else lam
        p = ref.get(lam_value) if isinstance(lam_value, float) else None
        names = rs[0]["distributions"]
        has_centers = all("accuracy" in (s.get("centers") or {}) for s in rs)
        for d, name in enumerate(names if has_centers else []):
            row = {"lambda": lam_value, "test": name, "seeds": n}
            for j in range(len(rs[0]["centers"]["accuracy"][name])):
                row[f"ours c_{j} %"] = Stat.pct(s["centers"]["accuracy"][name][j] for s in rs)
            row["ours best center %"] = Stat.pct(max(s["centers"]["accuracy"][name]) for s in rs)
            if p and d < len(p["centers"]):
                row[col] = " / ".join(f"{v}" for v in p["centers"][d])
            rows.append(row)
        rows.append({"lambda": lam_value, "test": "w-bar, held-out local test", "seeds": n,
                     "ours best center %": Stat.pct(_local(s, "local_test_accuracy") for s in rs)})
        rows.append({"lambda": lam_value, "test": "w-bar, training data (as the paper)", "seeds": n,
                     "ours best center %": Stat.pct(_local(s, "local_train_accuracy") for s in rs),
                     col: f"{p['local_train']}" if p else ""})
    return Table(pd.DataFrame(rows).fillna(""))


# -- Fed-CAM -------------------------------------------------------------------------------

CAM_METHODS = ["fedavg", "fedprox", "fedavg_plus", "fedprox_plus", "ifca", "ifca_cam", "fesem", "fesem_cam"]
K_FREE = ("fedavg", "fedprox")   # single-model methods: K (num_clusters) is not theirs
K_KEYS = ("num_clusters", "algorithm.num_clusters", "algorithm.base.num_clusters")


def _cluster_count(cell: Cell):
    """The number of clusters a clustered run used: its algorithm's own num_clusters where set,
    else the run's num_clusters (the summary records resolved values; config.yaml may say null)."""
    resolved = cell.runs[0].summary.get("config") or {}
    algorithm = resolved.get("algorithm") or {}
    for k in (algorithm.get("num_clusters"), (algorithm.get("base") or {}).get("num_clusters"),
              cell.value("algorithm.num_clusters"), cell.value("algorithm.base.num_clusters"),
              resolved.get("num_clusters"), cell.value("num_clusters")):
        if k not in (None, ABSENT):
            return k
    return "?"


def _labels_apart(cells: Sequence[Cell], keys: Sequence[str]) -> List[str]:
    """For cells that would share one table row: '(key=value, ...)' naming the `keys` of their
    identity on which they differ (empty for a single cell), so each gets its own row."""
    if len(cells) < 2:
        return [""] * len(cells)
    differing = [k for k in keys if len({c.value(k) for c in cells}) > 1]
    return ["(" + ", ".join(f"{k}={show(c.value(k))}" for k in differing) + ")" for c in cells]


def _merge_k_free(cells: Sequence[Cell]):
    """FedAvg/FedProx rows: a K sweep runs them once per K although they ignore K. Cells of one
    such method that differ only in num_clusters become one row with one run per seed (the
    first by path). Where something else differs too (a cluster-wise partition splits the data
    into num_clusters clusters: partition.num_clusters) they stay apart, labelled by it.
    Returns ({(label, method): runs}, number of runs left out, keys that kept them apart)."""
    by_method: Dict[str, Dict[tuple, List[Cell]]] = {}
    for c in cells:
        reduced = tuple((k, v) for k, v in c.key if k not in K_KEYS)
        by_method.setdefault(c.value("algorithm.name"), {}).setdefault(reduced, []).append(c)
    out, dropped, apart = {}, 0, set()
    for method, groups in by_method.items():
        reps = [members[0] for members in groups.values()]
        keys = [k for k, _ in next(iter(groups))]
        labels = _labels_apart(reps, keys)
        if len(reps) > 1:
            apart.update(k for k in keys if len({c.value(k) for c in reps}) > 1)
        for members, suffix in zip(groups.values(), labels):
            kept = {}
            for r in sorted((r for c in members for r in c.runs), key=lambda r: str(r.path)):
                if r.seed in kept:
                    dropped += 1
                else:
                    kept[r.seed] = r
            out[(f"1 {suffix}".strip(), method)] = sorted(kept.values(), key=lambda r: str(r.seed))
    return out, dropped, sorted(apart)


def _k_number(label) -> Optional[int]:
    """The K of a row label such as '5' or '5 (partition.num_clusters=3)' (None if unknown)."""
    try:
        return int(float(str(label).split(" ")[0]))
    except ValueError:
        return None


def _natural(text: str) -> tuple:
    """Sort key that orders '(x=5)' before '(x=10)'."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p)


def _cam_row_order(key):
    """Rows as in the paper: K = 1 methods, then each K's block in the paper's method order."""
    label, method = key
    k = _k_number(label)
    return (0 if method in K_FREE else 1, k if k is not None else float("inf"),
            CAM_METHODS.index(method) if method in CAM_METHODS else 99, str(method), _natural(str(label)))


def table_cam(cells, ctx) -> Table:
    """Fed-CAM Tables 1-2: rows (K, method); per (dataset, partition) our accuracy (mean over
    clients, and micro: pooled over all clients' test samples, as the paper scores it) and
    macro-F1 (%) beside the paper's; then the clustering diagnostics of the clustered methods."""
    settings: Dict[tuple, Dict[tuple, List[Run]]] = {}
    diag_cells = []
    dropped, apart = 0, set()
    by_setting: Dict[tuple, List[Cell]] = {}
    for c in cells:
        by_setting.setdefault((c.value("dataset.name"), c.value("partition.name")), []).append(c)
    for setting, members in by_setting.items():
        free = [c for c in members if c.value("algorithm.name") in K_FREE]
        merged, n_dropped, keys_apart = _merge_k_free(free)
        dropped += n_dropped
        apart.update(keys_apart)
        entries = dict(merged)
        by_k: Dict[tuple, List[Cell]] = {}
        for c in members:
            if c.value("algorithm.name") not in K_FREE:
                by_k.setdefault((str(_cluster_count(c)), c.value("algorithm.name")), []).append(c)
        for (k, method), group in by_k.items():
            for c, suffix in zip(group, _labels_apart(group, [key for key, _ in group[0].key])):
                label = f"{k} {suffix}".strip()
                entries[(label, method)] = c.runs
                diag_cells.append((setting, (label, method), c))
        settings[setting] = entries
    order = sorted(settings, key=lambda s: tuple(sort_key(v) for v in s))
    row_keys = sorted({k for e in settings.values() for k in e}, key=_cam_row_order)
    protocol = paper.PROTOCOLS.get(ctx.table)
    rows = []
    for label, method in row_keys:
        row = {"K": label, "method": method}
        for d, p in order:
            rs = settings[(d, p)].get((label, method), [])
            gaps = protocol_gaps(protocol, [r for e in settings[(d, p)].values() for r in e])
            k_int = 1 if method in K_FREE else _k_number(label)
            ref = paper.FEDCAM_TABLES.get((ctx.table, d, p), {}).get((k_int, method))
            tag = f"{d}/{p}"
            row[f"{tag} acc"] = Stat.pct(_local(r.summary, "local_test_accuracy") for r in rs)
            row[f"{tag} micro acc"] = Stat.pct((r.summary.get("local_micro") or {}).get("local_test_accuracy")
                                               for r in rs)
            row[paper_label(f"{tag} acc paper", gaps)] = ref[0] if ref else DASH
            row[f"{tag} F1"] = Stat.pct(_local(r.summary, "local_test_macro_f1") for r in rs)
            row[paper_label(f"{tag} F1 paper", gaps)] = ref[1] if ref else DASH
            row[f"{tag} seeds"] = len({r.seed for r in rs})
        rows.append(row)
    diag = []
    for (d, p), (label, method), c in sorted(diag_cells, key=lambda x: (tuple(sort_key(v) for v in x[0]), _cam_row_order(x[1]))):
        rs = c.summaries
        if "cluster_sizes" not in rs[0]:
            continue
        diag.append({"setting": f"{d}/{p}", "K": label, "method": method, "seeds": len(c.seeds),
                     "ARI vs truth": Stat.of(s.get("ari") for s in rs),
                     "largest cluster share": Stat.of(s.get("largest_cluster_share") for s in rs),
                     "non-empty clusters": Stat.of(s.get("nonempty_clusters") for s in rs),
                     "final sizes (first seed)": " ".join(map(str, sorted(rs[0]["cluster_sizes"], reverse=True)))})
    runs = _runs(cells)
    clients = "/".join(_unique(str(r.summary.get("num_clients")) for r in runs))
    rounds = "/".join(_unique(str(r.summary.get("rounds")) for r in runs))
    notes = [f"{len(runs)} runs; {clients} clients, {rounds} rounds. Accuracy and macro-F1 (%) of each client's "
             "predictor on its own held-out test split: 'acc' and 'F1' are means over clients; 'micro acc' is the "
             "accuracy over all clients' test samples pooled (Fed-CAM §5's 'micro accuracy', so the paper's acc "
             "column compares with it; empty for runs that predate it). 'paper': Fed-CAM's reported mean "
             "(200 clients, 100 rounds, the whole training set)."]
    if dropped or any(m in K_FREE for _, m in row_keys):
        note = ("FedAvg and FedProx (K = 1) do not use num_clusters; a K sweep runs them once per K, so runs of "
                "theirs that differ only in num_clusters are one row, one run kept per seed (the first by path")
        notes.append(note + (f"; {dropped} identical-apart-from-K runs left out)." if dropped else ")."))
    if apart:
        notes.append(f"FedAvg/FedProx runs that also differ in {', '.join(apart)} (the data itself depends on "
                     "num_clusters) are kept as separate K = 1 rows, labelled with it.")
    extra = [("Clustering (final round)", pd.DataFrame(diag))] if diag else []
    return Table(pd.DataFrame(rows).fillna(""), notes, extra)


# -- CLoVE ---------------------------------------------------------------------------------

CLOVE_MIXINGS = ["label_skew1", "concept_shift", "label_skew2", "feature_skew", "label_skew3", "label_skew4"]


def _paper_cell(ref, digits=1) -> str:
    return DASH if ref is None else f"{ref[0]:.{digits}f}±{ref[1]:.{digits}f}"


def table_clove(cells, ctx) -> Table:
    """CLoVE Tables 1, 2 and 4 (7-9 for label skews 3-4): rows (mixing, method); per data set
    our test accuracy, final ARI, % of final ARI by round 10 and the first round with
    ARI >= 0.9, each beside the paper's."""
    index = index_cells(cells, lambda c: (c.value("partition.name"), c.value("algorithm.name"), c.value("dataset.name")))
    datasets = sorted({d for _, _, d in index}, key=sort_key)
    present = {m for m, _, _ in index}
    mixings = [m for m in CLOVE_MIXINGS if m in present] + sorted(present - set(CLOVE_MIXINGS), key=sort_key)
    algs = {a for _, a, _ in index}
    methods = [m for m in paper.CLOVE_METHODS if m in algs] + sorted(algs - set(paper.CLOVE_METHODS), key=sort_key)
    default = paper.PROTOCOLS.get(ctx.table)
    gaps = {}
    for d in datasets:
        found = []
        for mixing in mixings:
            protocol = paper.CLOVE_PROTOCOL_BY_MIXING.get(mixing, default)
            found += protocol_gaps(protocol, _runs([c for (m, _, dd), c in index.items() if m == mixing and dd == d]))
        gaps[d] = _unique(found)
    rows = []
    for mixing in mixings:
        for method in methods:
            if not any((mixing, method, d) in index for d in datasets):
                continue
            row = {"mixing": mixing, "method": method}
            for d in datasets:
                cell = index.get((mixing, method, d))
                rs = cell.summaries if cell else []
                conv = paper.CLOVE_CONVERGENCE_FMNIST.get(mixing, {}).get(method) if d == "fashion_mnist" else None
                g = gaps[d]
                row[f"{d} acc %"] = Stat.pct(_local(s, "local_test_accuracy") for s in rs)
                row[paper_label(f"{d} acc paper", g)] = _paper_cell(paper.CLOVE_ACCURACY.get(mixing, {}).get((method, d)))
                row[f"{d} ARI"] = Stat.of(s.get("ari") for s in rs)
                row[paper_label(f"{d} ARI paper", g)] = _paper_cell(paper.CLOVE_ARI.get(mixing, {}).get((method, d)), digits=2)
                row[f"{d} % final ARI by r10"] = Stat.of(pct_of_final_by(s) for s in rs)
                row[paper_label(f"{d} paper r10", g)] = DASH if conv is None else f"{conv[0]:.1f}"
                row[f"{d} first round ARI>=0.9"] = first_round_stat(rs) if rs and any(ari_curve(s) for s in rs) else Stat(())
                row[paper_label(f"{d} paper first", g)] = DASH if conv is None or conv[1] is None else f"{conv[1]:.1f}"
                row[f"{d} seeds"] = len(cell.seeds) if cell else 0
            rows.append(row)
    runs = _runs(cells)
    rounds = "/".join(_unique(str(r.summary.get("rounds")) for r in runs))
    notes = [f"{len(runs)} runs; {rounds} rounds. Accuracy: each client's assigned model on its own held-out test data, "
             "mean over clients; ARI: clients' clustering vs the true clusters, final round. Rounds are 1-based. "
             "'paper': CLoVE's reported numbers (100 rounds, 3 seeds; FMNIST only for the convergence columns)."]
    return Table(pd.DataFrame(rows).fillna(""), notes)


def table_clove_linreg(cells, ctx) -> Table:
    """CLoVE App. C.1.1 (Figure 3a as a table): ARI at selected rounds per method and delta."""
    index = index_cells(cells, lambda c: (c.value("algorithm.name"), c.value("dataset.delta")))
    keys = sorted(index, key=lambda k: (sort_key(k[0]), sort_key(k[1])))
    rows = [{"method": m, "delta": d, "seeds": len(index[(m, d)].seeds)} for m, d in keys]
    ordered = [index[k] for k in keys]
    ari_at_rounds(ordered, rows)
    for cell, row in zip(ordered, rows):
        row["first round ARI>=0.9"] = first_round_stat(cell.summaries)
        row["final MSE (local test)"] = Stat.of(_local(s, "local_test_mse") for s in cell.summaries)
    notes = ["ARI of the clients' clustering vs the 5 true clusters after each round (1-based; '–' where no "
             "run had a clustering yet). The paper shows this as Figure 3a (CLoVE recovers the clusters for every "
             "delta, slower for small delta)."]
    return Table(pd.DataFrame(rows).fillna(""), notes)


def table_clove_unsupervised(cells, ctx) -> Table:
    """CLoVE Table 5: reconstruction MSE of each client's assigned model on its own test data."""
    index = index_cells(cells, lambda c: (c.value("algorithm.name"), c.value("dataset.name")))
    gaps = protocol_gaps(paper.PROTOCOLS.get(ctx.table), _runs(cells))
    col = paper_label("test MSE paper", gaps)

    def order(k):
        return (paper.CLOVE_METHODS.index(k[0]) if k[0] in paper.CLOVE_METHODS else 99, sort_key(k[0]), sort_key(k[1]))

    rows = []
    for method, d in sorted(index, key=order):
        rs = index[(method, d)].summaries
        ref = paper.CLOVE_UNSUPERVISED.get((method, d))
        rows.append({"method": method, "dataset": d, "seeds": len(index[(method, d)].seeds),
                     "test MSE": Stat.of(_local(s, "local_test_mse") for s in rs),
                     col: DASH if ref is None else f"{ref:.3f}",
                     "ARI": Stat.of(s.get("ari") for s in rs)})
    runs = _runs(cells)
    notes = [f"{len(runs)} runs, {'/'.join(_unique(str(r.summary.get('num_clients')) for r in runs))} clients, "
             f"{'/'.join(_unique(str(r.summary.get('rounds')) for r in runs))} rounds. 'paper': CLoVE's reported "
             "loss (its autoencoder's sizes are not given)."]
    return Table(pd.DataFrame(rows), notes)


def _by_algorithm_options(cells, options):
    """Cells ordered by (method, option values), with those values."""
    keys = ("algorithm.name",) + tuple(f"algorithm.{o}" for o in options)
    index = index_cells(cells, lambda c: tuple(c.value(k) for k in keys))
    return [(k, index[k]) for k in sorted(index, key=lambda k: tuple(sort_key(v) for v in k))]


def table_clove_init_study(cells, ctx) -> Table:
    """CLoVE §5.2 / Figure 2 as a table: ARI by round for each initialisation choice."""
    entries = _by_algorithm_options(cells, ["init", "first_round"])
    rows = [{"method": m, "init": show(i), "first round": show(f), "seeds": len(c.seeds)} for (m, i, f), c in entries]
    ari_at_rounds([c for _, c in entries], rows)
    for (_, cell), row in zip(entries, rows):
        key = cell.summaries[0].get("key_metric", "mse")
        row["first round ARI>=0.9"] = first_round_stat(cell.summaries)
        row[f"local test {key}"] = Stat.of(_local(s, f"local_test_{key}") for s in cell.summaries)
    notes = ["ARI of the clients' clustering after each round (1-based); init identical = 'init:s', "
             "independent = 'init:d'; first round random = 'first:r', evaluation = 'first:e'."]
    return Table(pd.DataFrame(rows).fillna(""), notes)


def table_clove_ablation(cells, ctx) -> Table:
    """CLoVE §5.3 / Table 12: test accuracy (or MSE) and ARI for each variant."""
    rows = []
    for (method, matching, clustering, embedding), cell in _by_algorithm_options(cells, ["matching", "clustering", "embedding"]):
        rs = cell.summaries
        key = rs[0].get("key_metric", "accuracy")
        values = [_local(s, f"local_test_{key}") for s in rs]
        rows.append({"method": method, "matching": show(matching), "clustering": show(clustering),
                     "embedding": show(embedding), "seeds": len(cell.seeds),
                     f"test {key} %" if key == "accuracy" else f"test {key}":
                         Stat.pct(values) if key == "accuracy" else Stat.of(values),
                     "ARI": Stat.of(s.get("ari") for s in rs)})
    notes = ["Table 12 reports 'no matching' about 4.3 points lower on CIFAR-10; agglomerative and square-root "
             "loss not significantly different."]
    return Table(pd.DataFrame(rows).fillna(""), notes)


# -- any other runs ------------------------------------------------------------------------

CONTEXT_KEYS = ("algorithm.name", "dataset.name", "partition.name", "model.name", "rounds")


def table_generic(cells, ctx) -> Table:
    """Runs without a paper table: one row per configuration, the varying config keys as
    columns, then the final metrics (centers matched to distributions where there are any)."""
    rows = []
    for cell in cells:
        rs = cell.summaries
        metric = rs[0].get("key_metric", "mse")
        row = {k: show(cell.value(k)) for k in ctx.varying}
        row["seeds"] = len(cell.seeds)
        if all("centers" in s and metric in s["centers"] for s in rs):
            names = rs[0]["distributions"]
            for j, name in enumerate(names):
                row[f"c({name}) on {name}"] = Stat.of(matched_matrix(s, metric)[j, j] for s in rs)
        row[f"local test {metric}"] = Stat.of(_local(s, f"local_test_{metric}") for s in rs)
        row[f"local train {metric}"] = Stat.of(_local(s, f"local_train_{metric}") for s in rs)
        row["ARI"] = Stat.of(s.get("ari") for s in rs)
        rows.append(row)
    same = [f"{k}={show(cells[0].value(k))}" for k in CONTEXT_KEYS if k not in ctx.varying and cells]
    notes = [f"Same in every row: {', '.join(same)}."] if same else []
    return Table(pd.DataFrame(rows).fillna(""), notes)


@dataclass(frozen=True)
class Spec:
    """A table: its title, its function, and the config keys it lays out (shell patterns).
    Any other key that varies splits the runs into one sub-table per combination."""
    title: str
    build: Callable
    consumes: Tuple[str, ...]


_CAM_KEYS = ("dataset.name", "partition.name", "algorithm.name", "num_clusters", "partition.num_clusters",
             "algorithm.num_clusters", "algorithm.base.num_clusters")
_CLOVE_KEYS = ("partition.name", "algorithm.name", "dataset.name")
_CLOVE_TITLE = ("CLoVE Tables 1, 2, 4 (7-9 for label skews 3-4): test accuracy, final ARI and convergence "
                "per mixing and method")

TABLES: Dict[str, Spec] = {
    "clove_init_study": Spec("CLoVE §5.2 (Figure 2): ARI of the clients' clustering by round, per initialisation",
                             table_clove_init_study, ("algorithm.name", "algorithm.init", "algorithm.first_round")),
    "clove_ablation": Spec("CLoVE §5.3 ablations (Table 12)", table_clove_ablation,
                           ("algorithm.name", "algorithm.matching", "algorithm.clustering", "algorithm.embedding")),
    "clove_unsupervised": Spec("CLoVE Table 5 (unsupervised): reconstruction MSE on each client's own test data",
                               table_clove_unsupervised, ("algorithm.name", "dataset.name")),
    "clove_images": Spec(_CLOVE_TITLE, table_clove, _CLOVE_KEYS),
    "clove_label_skews": Spec(_CLOVE_TITLE, table_clove, _CLOVE_KEYS),
    "clove_linreg": Spec("CLoVE App. C.1.1 (Figure 3a as a table): ARI by round per method and delta",
                         table_clove_linreg, ("algorithm.name", "dataset.delta")),
    "cam_table1": Spec("Fed-CAM Table 1 (cluster-wise non-IID)", table_cam, _CAM_KEYS),
    "cam_table2": Spec("Fed-CAM Table 2 (client-wise non-IID)", table_cam, _CAM_KEYS),
    "fedsoft_table1_synthetic": Spec(
        "FedSoft Table 1 (synthetic): test MSE of each center on each distribution's held-out test set. "
        "c(theta_j) = the center matched to theta_j (Hungarian on test MSE); paper's centers relabelled the same way",
        table_fedsoft_table1, ("partition.name",)),
    "fedsoft_table3_synthetic": Spec(
        "FedSoft Table 3 (8 synthetic distributions, random partition): test MSE of the center matched to each "
        "distribution vs the best other center. Paper: best and worst center per row", table_fedsoft_table3, ()),
    "fedsoft_table6_sigma0": Spec(
        "FedSoft Table 6 (sigma0 study, random partition): test MSE of matched centers, and local models on "
        "held-out local test data and on training data (the paper's w-bar is on training data)",
        table_fedsoft_table6, ("dataset.theta_var",)),
    "fedsoft_table2": Spec(
        "FedSoft Table 2 protocol: c*(d) = accuracy of the center best on distribution d (its index per seed in "
        "parentheses); w-bar = mean accuracy of each client's local predictor on its held-out local test data, and "
        "on its training data (what the paper's code scored). fedem predicts with its mixture, fedem_top with its "
        "largest-weight component (as FedSoft scored FedEM). Paper columns: EMNIST letters (lower/upper case), "
        "not necessarily the data set of our rows", table_fedsoft_table2, ("partition.name", "algorithm.name")),
    "fedsoft_table5": Spec(
        "FedSoft Table 5 (lambda study, linear partition): accuracy of each center on each distribution and w-bar; "
        "paper columns are EMNIST letters (rows: lower, upper case)", table_fedsoft_table5, ("algorithm.lam",)),
}
GENERIC = Spec("Runs: final metrics per configuration (no paper table)", table_generic, ("*",))
