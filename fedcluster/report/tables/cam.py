"""Fed-CAM (Ma et al.; ../shared/papers/cam-fedcam.txt): Tables 1-2 (test accuracy and macro-F1 on
client-wise test sets), its reported numbers and protocol."""
import re
from typing import Dict, List, Optional, Sequence

import pandas as pd

from ..cells import DASH, Reported, Stat
from ..defaults import non_default_settings, setting_name
from ..runs import ABSENT, Cell, ReportError, Run, show, sort_key
from .common import Identity, Protocol, Spec, Table, local_metric, runs_of, unique, paper_label, protocol_gaps
from .paper_numbers import number, reported, cell_key


# Fed-CAM (Ma et al., ../shared/papers/cam-fedcam.txt), Tables 1-2: test accuracy and macro-F1 (%)
# on client-wise test sets, mean ± std over seeds as printed. Key: (K, method); FedAvg/FedProx are
# single models (K = 1). The ensembles (FedAvg+, FedProx+) are printed without a std.
def _cam_tables() -> dict:
    """{(table, dataset, partition): {(K, method): (accuracy, macro-F1)}}, each a Reported with the
    paper's std where it prints one (two decimals, as printed), from paper_numbers.csv (Fed-CAM Tables 1 and 2; K = 1 for the
    single-model methods FedAvg and FedProx)."""
    out = {}
    for table in ("cam_table1", "cam_table2"):
        rows = reported(table)
        for dataset, partition in dict.fromkeys(zip(rows["dataset"], rows["setting"])):
            block = rows[(rows["dataset"] == dataset) & (rows["setting"] == partition)]
            cells = {(int(r["k"]), r["method"], r["metric"]): Reported(float(r["mean"]), number(r["std"]), 2, cell_key(r))
                     for _, r in block.iterrows()}
            out[(table, dataset, partition)] = {(k, m): (cells[(k, m, "accuracy")], cells[(k, m, "macro_f1")])
                                                for k, m, metric in cells if metric == "accuracy"}
    return out


FEDCAM_TABLES = _cam_tables()

# Fed-CAM §5: "Each dataset is split among 200 clients"; "100 global communication rounds,
# including 30 warm-up rounds if applicable" (the whole training set, no per-client size).
FEDCAM_PROTOCOL = Protocol(rounds=100, num_clients=200, training_pool="full")

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
    return ["(" + ", ".join(f"{setting_name(k)}={show(c.value(k))}" for k in differing if c.value(k) is not ABSENT) + ")"
            for c in cells]


def _config_labels(cells: Sequence[Cell]) -> Dict[int, str]:
    """id(cell) -> the '(setting=value, ...)' that names its algorithm configuration: the settings on
    which it differs from the other configurations of the same method and K, and those away from the
    algorithm's defaults (conf/algorithm/), so a lone sensitivity row (lambda = 0.1) is never read as
    the method's own; taken over all data settings, so one configuration is one row in every setting.
    A setting that only changes what is reported (report/defaults.py) names a row only where two
    configurations differ in it alone."""
    def config_of(c: Cell) -> tuple:
        return tuple((k, v) for k, v in c.key if k.startswith("algorithm.") and k not in K_KEYS)
    by_method: Dict[tuple, Dict[tuple, Cell]] = {}
    for c in cells:
        by_method.setdefault((_cluster_count(c), c.value("algorithm.name")), {}).setdefault(config_of(c), c)
    label_of: Dict[tuple, str] = {}
    for (k_count, method), configs in by_method.items():
        keys = [k for k, _ in next(iter(configs))]
        differing = {k for k in keys if len({c.value(k) for c in configs.values()}) > 1}
        for config, cell in configs.items():
            named = {k: v for k, v in config if k in differing and v is not ABSENT}
            named.update(non_default_settings(cell, method))
            label_of[(k_count, method, config)] = (
                "(" + ", ".join(f"{setting_name(k)}={show(named[k])}" for k in sorted(named)) + ")" if named else "")
    return {id(c): label_of[(_cluster_count(c), c.value("algorithm.name"), config_of(c))] for c in cells}

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
            CAM_METHODS.index(method) if method in CAM_METHODS else 99, str(method), _natural(str(label)),
            str(label))   # the label itself breaks a natural tie ('0.001' and '0.01' read alike): one order always

LABEL_PICK = "picked by test loss (reads test labels)"


def _cluster_update(summary: dict):
    """IFCA's cluster update rule ('mean' or 'eq6') of an IFCA or IFCA-CAM run, else None."""
    algorithm = (summary.get("config") or {}).get("algorithm") or {}
    for node in (algorithm, algorithm.get("base") or {}):
        if node.get("name") == "ifca":
            return node.get("update", "mean")
    return None


def _label_pick(summary: dict):
    """Mean-over-clients test accuracy of the labelled `local:label_pick` predictor, if reported."""
    return ((summary.get("local_alternatives") or {}).get("label_pick") or {}).get("local_test_accuracy")


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
        settings[setting] = entries
    labels = _config_labels([c for c in cells if c.value("algorithm.name") not in K_FREE])
    for c in cells:
        if c.value("algorithm.name") in K_FREE:
            continue
        setting = (c.value("dataset.name"), c.value("partition.name"))
        key = (f"{_cluster_count(c)} {labels[id(c)]}".strip(), c.value("algorithm.name"))
        if key in settings[setting]:
            raise ReportError(f"internal: two configurations share the Fed-CAM row {key} ({c.runs[0].path}); "
                              "please report this")
        settings[setting][key] = c.runs
        diag_cells.append((setting, key, c))
    order = sorted(settings, key=lambda s: tuple(sort_key(v) for v in s))
    row_keys = sorted({k for e in settings.values() for k in e}, key=_cam_row_order)
    protocol = ctx.protocol
    rows = []
    for label, method in row_keys:
        row = {"K": label, "method": method}
        all_runs = [r for d, p in order for r in settings[(d, p)].get((label, method), [])]
        update = unique(str(u) for u in (_cluster_update(r.summary) for r in all_runs) if u)
        if update:
            row["cluster update"] = "/".join(update)
        for d, p in order:
            rs = settings[(d, p)].get((label, method), [])
            gaps = protocol_gaps(protocol, [r for e in settings[(d, p)].values() for r in e])
            k_int = 1 if method in K_FREE else _k_number(label)
            ref = FEDCAM_TABLES.get((ctx.table, d, p), {}).get((k_int, method))
            tag = f"{d}/{p}"
            row[f"{tag} acc"] = Stat.pct(local_metric(r.summary, "local_test_accuracy") for r in rs)
            row[f"{tag} micro acc"] = Stat.pct((r.summary.get("local_micro") or {}).get("local_test_accuracy")
                                               for r in rs)
            row[paper_label(f"{tag} acc paper", gaps)] = ref[0] if ref else DASH
            row[f"{tag} F1"] = Stat.pct(local_metric(r.summary, "local_test_macro_f1") for r in rs)
            row[paper_label(f"{tag} F1 paper", gaps)] = ref[1] if ref else DASH
            picks = [_label_pick(r.summary) for r in rs]
            if any(v is not None for v in picks):
                row[f"{tag} acc, {LABEL_PICK}"] = Stat.pct(picks)
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
    runs = runs_of(cells)
    clients = "/".join(unique(str(r.summary.get("num_clients")) for r in runs))
    rounds = "/".join(unique(str(r.summary.get("rounds")) for r in runs))
    notes = [f"{len(runs)} runs; {clients} clients, {rounds} rounds. Accuracy and macro-F1 (%) of each client's "
             "predictor on its own held-out test split: 'acc' and 'F1' are means over clients; 'micro acc' is the "
             "accuracy over all clients' test samples pooled (Fed-CAM §5's 'micro accuracy', so the paper's acc "
             "column compares with it; empty for runs that predate it). 'paper': Fed-CAM's reported mean ± std "
             "over its seeds (no std for the ensembles, as printed; 200 clients, 100 rounds, the whole training set)."]
    if any("cluster update" in r for r in rows):
        notes.append("cluster update: how IFCA and IFCA-CAM move a cluster model, 'mean' (the n_i-weighted mean of its "
                     "clients' models, IFCA's rule, the default of both) or 'eq6' (Fed-CAM's eq. 6: by the clients' share "
                     "of all data, a sensitivity option of both).")
    if any(LABEL_PICK in c for r in rows for c in r):
        notes.append(f"'acc, {LABEL_PICK}': IFCA's code's scoring (get_inference_stats), each client scored with the "
                     "cluster model of lowest loss on its test data, which reads the test labels; reported apart, never "
                     "as the method's score ('acc' scores the model the client trained).")
    if dropped or any(m in K_FREE for _, m in row_keys):
        note = ("FedAvg and FedProx (K = 1) do not use num_clusters; a K sweep runs them once per K, so runs of "
                "theirs that differ only in num_clusters are one row, one run kept per seed (the first by path")
        notes.append(note + (f"; {dropped} identical-apart-from-K runs left out)." if dropped else ")."))
    if apart:
        notes.append(f"FedAvg/FedProx runs that also differ in {', '.join(apart)} (the data itself depends on "
                     "num_clusters) are kept as separate K = 1 rows, labelled with it.")
    extra = [("Clustering (final round)", pd.DataFrame(diag))] if diag else []
    frame = pd.DataFrame(rows)
    if "cluster update" in frame.columns:   # beside the method it qualifies, not after the data columns
        frame.insert(2, "cluster update", frame.pop("cluster update"))
    return Table(frame.fillna(""), notes, extra)

# Every algorithm setting is laid out: a method's sensitivity rows (IFCA's init, the eq. 6 update, FeSEM's
# start-up, lambda) are rows beside its own, labelled by the settings that tell them apart, not sub-tables
# that would separate IFCA-CAM from IFCA.
_CAM_KEYS = ("dataset.name", "partition.name", "algorithm.*", "num_clusters", "partition.num_clusters")

def _cam_runs(table: str) -> Identity:
    """A Fed-CAM table's runs (common.Identity): its eight methods on the data sets and partitions
    its paper numbers are for, with the FedAvg paper's CNN the presets use (the paper's "CNN [32]") or the
    LeNet-style CNN of earlier results."""
    return Identity.of(algorithm=CAM_METHODS, dataset=[d for t, d, _ in FEDCAM_TABLES if t == table],
                       model=("fedavg_cnn", "lenet"), partition=[p for t, _, p in FEDCAM_TABLES if t == table])


TABLES: Dict[str, Spec] = {
    "cam_table1": Spec("Fed-CAM Table 1 (cluster-wise non-IID)", table_cam, _CAM_KEYS, FEDCAM_PROTOCOL,
                       _cam_runs("cam_table1")),
    "cam_table2": Spec("Fed-CAM Table 2 (client-wise non-IID)", table_cam, _CAM_KEYS, FEDCAM_PROTOCOL,
                       _cam_runs("cam_table2")),
}
