"""CLoVE (../shared/papers/clove.txt): Tables 1, 2, 4, 5, 7-9, 12, the init study (§5.2) and the
linear-regression study (App. C.1.1), its reported numbers and protocols."""
from typing import Dict

import pandas as pd

from ..cells import DASH, Reported, Stat
from ..runs import show, sort_key
from .common import (Identity, Protocol, Spec, Table, local_metric, runs_of, unique, ari_at_rounds, ari_curve,
                     first_round_stat, index_cells, paper_label, pct_of_final_by, protocol_gaps)
from .paper_numbers import by_setting, mean_std, reported


# -- CLoVE (Tables 1, 2, 4, 5, 7-9), mean ± std over 3 seeds, columns MNIST, CIFAR-10, FMNIST.
# Every method of the paper, in its row order.
CLOVE_DATASETS = ("mnist", "cifar10", "fashion_mnist")

CLOVE_METHODS = ("fedavg", "local", "perfedavg", "fedproto", "fedala", "fedpac", "cfl", "fesem", "flexcfl", "pacfl", "ifca", "clove")

# The rows of CLoVE's tables that its code scored on the clients' TRAINING data. Its notebook
# (plot_utils/exp_evaluations_supervised.ipynb at b602090f, get_rounds_data_for_CLoVE) reads every in-repository
# row from the one line learning_utils.py:260 logs on each test() call, and files the lines of a round before its
# first 'Server: Aggregating model' line under `accuracies_2`, which it averages for vanillaFL. For vanillaFL those
# lines come from generate_loss_vectors(..., dataloaders=trainloaders) (algorithm_utils.py:264-269): the global
# model on each client's own training samples as the last round begins (after 99 aggregations), unweighted mean
# over clients. Local-only logs no aggregation line, so its `accuracies_2` are its test-data lines after training
# (algorithm_utils.py:132, 144): a test score like ours. Our runs record the FedAvg score as
# `round_start_train_accuracy` (eval_round_start_train=true); the paper's cell of these rows is compared with it, in
# its own column, and the held-out test accuracy stays beside it.
CLOVE_TRAIN_SCORED = ("fedavg",)

# What the baselines' repositories leave open (conf/method_solver/clove_mnist_fmnist_cnn/ names each source):
CLOVE_SOURCE_CAVEATS = (
    "Ambiguous sources: CLoVE's notebook parses a CFL log line found in no public repository (felisat's notebook, "
    "whose solver we use, prints no such line; PACFL's CFL port prints percentages); PACFL's 'End round avg. "
    "accuracy' line is not in MMorafah/PACFL either; FlexCFL's 'fmnist' is FedProx's nist data renamed. No "
    "repository records the command lines CLoVE gave the baselines: their solvers are each repository's defaults.")
TRAIN_SCORED_KEY = "round_start_train_accuracy"

def _by_mixing(rows) -> dict:
    """{mixing: {(method, dataset): (mean, std)}} of rows of one metric (paper_numbers.csv)."""
    return {mixing: mean_std(block) for mixing, block in by_setting(rows).items()}


_IMAGES = pd.concat([reported("clove_images"), reported("clove_label_skews")])
# Tables 1 and 7 (label skews 3-4): test accuracy (%), each client's assigned model on its own test
# data; Table 3 (text): Amazon (one cluster per product category: partition `clustered`) and AG News
# (label skew 2 with U=2, V=1), test accuracy (%); Tables 2 and 8: final ARI.
CLOVE_ACCURACY = _by_mixing(_IMAGES[_IMAGES["metric"] == "accuracy"])
CLOVE_TEXT_ACCURACY = _by_mixing(reported("clove_text", metric="accuracy"))
for _mixing, _cells in CLOVE_TEXT_ACCURACY.items():
    CLOVE_ACCURACY.setdefault(_mixing, {}).update(_cells)
CLOVE_ARI = _by_mixing(_IMAGES[_IMAGES["metric"] == "ari"])

# Tables 4 and 9, FMNIST column: {mixing: {method: (% of final ARI reached in 10 rounds, first round with
# ARI >= 0.9)}}, each a PaperValue (mean None: a dash in the paper, never reached). Where the extracted text drops
# dashes, paper_numbers.csv resolved the column from Table 2/8 (a final ARI below 0.9 cannot reach 0.9).
_PCT, _FIRST = (_IMAGES[(_IMAGES["metric"] == m) & (_IMAGES["dataset"] == "fashion_mnist")]
                for m in ("pct_final_ari_at_round_10", "first_round_ari_0.9"))
CLOVE_CONVERGENCE_FMNIST = {mixing: {method: (pct[(method, "fashion_mnist")], first.get((method, "fashion_mnist")))
                                     for method, _ in pct}
                            for mixing, pct, first in ((m, mean_std(b), mean_std(_FIRST[_FIRST["setting"] == m]))
                                                       for m, b in by_setting(_PCT).items())}
# Table 5: test reconstruction loss (MSE).
CLOVE_UNSUPERVISED = mean_std(reported("clove_unsupervised"))

# CLoVE §5 Training Settings: T = 100 rounds. Results: "the number of clients between 20 and
# 100 ... In most cases, the training data size per client is set to 500" (clients per table
# not given). App. C.1.2 (Tables 7-9, label skews 3 and 4): 5 clusters of 5 clients, 500
# samples each. Table 5 (unsupervised) gives neither clients nor sizes.
CLOVE_IMAGES_PROTOCOL = Protocol(rounds=100, samples_per_client=500)

CLOVE_LABEL_SKEWS_PROTOCOL = Protocol(rounds=100, num_clients=25, samples_per_client=500)

# Label skew 4: the paper gives 5 clients per cluster and a dominant class unique to each cluster;
# the authors' code (exp501 in utils/dataset_modifier.py, runs 1510/1520 of
# experiment_driver/experiment_list.csv) makes one cluster per class: 10 clusters, 50 clients.
CLOVE_LABEL_SKEW4_PROTOCOL = Protocol(rounds=100, num_clients=50, samples_per_client=500)

CLOVE_UNSUPERVISED_PROTOCOL = Protocol(rounds=100)

# Table 3: "for the Amazon Reviews and AG News datasets, we use 1000 and 100 samples" per client.
CLOVE_TEXT_PROTOCOL = Protocol(rounds=100)

# The CLoVE accuracy/ARI table shows every mixing; label skews 3 and 4 come from App. C.1.2.
CLOVE_PROTOCOL_BY_MIXING = {"label_skew3": CLOVE_LABEL_SKEWS_PROTOCOL, "label_skew4": CLOVE_LABEL_SKEW4_PROTOCOL}

CLOVE_MIXINGS = ["label_skew1", "concept_shift", "label_skew2", "feature_skew", "label_skew3", "label_skew4"]

def _paper_cell(ref, digits=1):
    """A PaperValue as the Reported cell beside ours (a printed dash stays a Reported with no mean, so
    the account still knows the cell); DASH where the paper prints nothing for it."""
    if ref is None:
        return DASH
    return Reported(float("nan") if ref.mean is None else ref.mean, ref.std, digits, ref.cell)

def table_clove(cells, ctx) -> Table:
    """CLoVE Tables 1, 2 and 4 (7-9 for label skews 3-4): rows (mixing, method); per data set
    our test accuracy, final ARI, % of final ARI by round 10 and the first round with
    ARI >= 0.9, each beside the paper's."""
    index = index_cells(cells, lambda c: (c.value("partition.name"), c.value("algorithm.name"), c.value("dataset.name")))
    datasets = sorted({d for _, _, d in index}, key=sort_key)
    present = {m for m, _, _ in index}
    mixings = [m for m in CLOVE_MIXINGS if m in present] + sorted(present - set(CLOVE_MIXINGS), key=sort_key)
    algs = {a for _, a, _ in index}
    methods = [m for m in CLOVE_METHODS if m in algs] + sorted(algs - set(CLOVE_METHODS), key=sort_key)
    default = ctx.protocol
    gaps = {}
    for d in datasets:
        found = []
        for mixing in mixings:
            protocol = CLOVE_PROTOCOL_BY_MIXING.get(mixing, default)
            found += protocol_gaps(protocol, runs_of([c for (m, _, dd), c in index.items() if m == mixing and dd == d]))
        gaps[d] = unique(found)
    rows, compare = [], {}
    scored_on_train = any(local_metric(s, TRAIN_SCORED_KEY) is not None for c in cells for s in c.summaries)
    for mixing in mixings:
        for method in methods:
            if not any((mixing, method, d) in index for d in datasets):
                continue
            row = {"mixing": mixing, "method": method}
            for d in datasets:
                cell = index.get((mixing, method, d))
                rs = cell.summaries if cell else []
                conv = CLOVE_CONVERGENCE_FMNIST.get(mixing, {}).get(method) if d == "fashion_mnist" else None
                g = gaps[d]
                paper = _paper_cell(CLOVE_ACCURACY.get(mixing, {}).get((method, d)))
                on_train = scored_on_train and method in CLOVE_TRAIN_SCORED
                row[f"{d} acc %"] = Stat.pct(local_metric(s, "local_test_accuracy") for s in rs)
                row[paper_label(f"{d} acc paper", g)] = DASH if on_train else paper
                if scored_on_train:
                    ours, theirs = f"{d} train acc % (round start)", paper_label(f"{d} train acc paper", g)
                    row[ours] = (Stat.pct(local_metric(s, TRAIN_SCORED_KEY) for s in rs) if method in CLOVE_TRAIN_SCORED
                                 else Stat(()))
                    row[theirs] = paper if on_train else DASH
                    compare[theirs] = ours
                row[f"{d} ARI"] = Stat.of(s.get("ari") for s in rs)
                row[paper_label(f"{d} ARI paper", g)] = _paper_cell(CLOVE_ARI.get(mixing, {}).get((method, d)), digits=2)
                row[f"{d} % final ARI by r10"] = Stat.of((pct_of_final_by(s) for s in rs), style="pct")
                row[paper_label(f"{d} paper r10", g)] = DASH if conv is None else _paper_cell(conv[0])
                row[f"{d} first round ARI>=0.9"] = first_round_stat(rs) if rs and any(ari_curve(s) for s in rs) else Stat(())
                row[paper_label(f"{d} paper first", g)] = DASH if conv is None else _paper_cell(conv[1])
                row[f"{d} seeds"] = len(cell.seeds) if cell else 0
            rows.append(row)
    runs = runs_of(cells)
    rounds = "/".join(unique(str(r.summary.get("rounds")) for r in runs))
    notes = [f"{len(runs)} runs; {rounds} rounds. Accuracy: each client's assigned model on its own held-out test data, "
             "mean over clients; ARI: clients' clustering vs the true clusters, final round. Rounds are 1-based. "
             "'paper': CLoVE's reported numbers (100 rounds, 3 seeds; FMNIST only for the convergence columns; its ± is "
             "np.std over the seeds, ddof=0, in its notebook, so a 2-std band is narrower than a sample std's)."]
    solvers = {}
    for c in cells:
        for sm in c.summaries:
            t = (sm.get("config") or {}).get("train") or {}
            if t:
                key = (f"{t.get('optimizer')} lr {t.get('lr'):g}" + (f" momentum {t['momentum']:g}" if t.get("momentum") else "")
                       + f", batch {t.get('batch_size')}, " + (f"{t['steps']} steps" if t.get("steps") else
                                                              f"{t.get('epochs')} epoch{'s' if t.get('epochs') != 1 else ''}"))
                solvers.setdefault(key, set()).add(sm.get("algorithm"))
    if len(solvers) > 1:
        notes.append("Local solver per method (each as its numbers were made: CLoVE's code for its own rows, each "
                     "baseline's repository for the rest; conf/method_solver/): " + "; ".join(
                         f"{', '.join(sorted(m for m in ms if m))}: {k}" for k, ms in sorted(solvers.items())) + ". "
                     + CLOVE_SOURCE_CAVEATS)
    if scored_on_train:
        notes.append("Train acc (round start): each client's model on its own TRAINING data as the last round begins, "
                     "mean over clients; shown for " + ", ".join(CLOVE_TRAIN_SCORED) + ", the rows CLoVE's code scored so "
                     "(its notebook averages those rows' training-data accuracy lines, accuracies_2). Their paper cells "
                     "stand beside that column and are compared with it; their held-out test accuracy is in the acc % "
                     "column, with no paper cell. Every other row is test accuracy in the paper and here.")
    return Table(pd.DataFrame(rows).fillna(""), notes, compare=compare or None)

def table_clove_linreg(cells, ctx) -> Table:
    """CLoVE App. C.1.1 (Figure 3a as a table): ARI at selected rounds per method and delta."""
    index = index_cells(cells, lambda c: (c.value("algorithm.name"), c.value("dataset.delta")))
    keys = sorted(index, key=lambda k: (sort_key(k[0]), sort_key(k[1])))
    rows = [{"method": m, "delta": d, "seeds": len(index[(m, d)].seeds)} for m, d in keys]
    ordered = [index[k] for k in keys]
    ari_at_rounds(ordered, rows)
    for cell, row in zip(ordered, rows):
        row["first round ARI>=0.9"] = first_round_stat(cell.summaries)
        row["final MSE (local test)"] = Stat.of(local_metric(s, "local_test_mse") for s in cell.summaries)
    notes = ["ARI of the clients' clustering vs the 5 true clusters after each round (1-based; '–' where no "
             "run had a clustering yet). The paper shows this as Figure 3a (CLoVE recovers the clusters for every "
             "delta, slower for small delta)."]
    return Table(pd.DataFrame(rows).fillna(""), notes)

def table_clove_unsupervised(cells, ctx) -> Table:
    """CLoVE Table 5: reconstruction MSE of each client's assigned model on its own test data."""
    index = index_cells(cells, lambda c: (c.value("algorithm.name"), c.value("dataset.name")))
    gaps = protocol_gaps(ctx.protocol, runs_of(cells))
    col = paper_label("test MSE paper", gaps)

    def order(k):
        return (CLOVE_METHODS.index(k[0]) if k[0] in CLOVE_METHODS else 99, sort_key(k[0]), sort_key(k[1]))

    rows = []
    for method, d in sorted(index, key=order):
        rs = index[(method, d)].summaries
        ref = CLOVE_UNSUPERVISED.get((method, d))
        rows.append({"method": method, "dataset": d, "seeds": len(index[(method, d)].seeds),
                     "test MSE": Stat.of(local_metric(s, "local_test_mse") for s in rs),
                     col: _paper_cell(ref, 3),
                     "ARI": Stat.of(s.get("ari") for s in rs)})
    runs = runs_of(cells)
    notes = [f"{len(runs)} runs, {'/'.join(unique(str(r.summary.get('num_clients')) for r in runs))} clients, "
             f"{'/'.join(unique(str(r.summary.get('rounds')) for r in runs))} rounds. 'paper': CLoVE's reported "
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
        row[f"local test {key}"] = Stat.of(local_metric(s, f"local_test_{key}") for s in cell.summaries)
    notes = ["ARI of the clients' clustering after each round (1-based); init identical = 'init:s', "
             "independent = 'init:d'; first round random = 'first:r', evaluation = 'first:e'."]
    return Table(pd.DataFrame(rows).fillna(""), notes)

def table_clove_ablation(cells, ctx) -> Table:
    """CLoVE §5.3 / Table 12: test accuracy (or MSE) and ARI for each variant."""
    rows = []
    for (method, matching, clustering, embedding), cell in _by_algorithm_options(cells, ["matching", "clustering", "embedding"]):
        rs = cell.summaries
        key = rs[0].get("key_metric", "accuracy")
        values = [local_metric(s, f"local_test_{key}") for s in rs]
        rows.append({"method": method, "matching": show(matching), "clustering": show(clustering),
                     "embedding": show(embedding), "seeds": len(cell.seeds),
                     f"test {key} %" if key == "accuracy" else f"test {key}":
                         Stat.pct(values) if key == "accuracy" else Stat.of(values),
                     "ARI": Stat.of(s.get("ari") for s in rs)})
    notes = ["Table 12 reports 'no matching' about 4.3 points lower on CIFAR-10; agglomerative and square-root "
             "loss not significantly different."]
    return Table(pd.DataFrame(rows).fillna(""), notes)

_CLOVE_KEYS = ("partition.name", "algorithm.name", "dataset.name")

# Which runs each table is for (common.Identity): the methods its preset sweeps, the data sets
# and mixings the paper's table has (Fashion-MNIST here; MNIST and CIFAR-10 where present), the model of the
# preset: GenConvNet, the authors' (model.py at b602090f); lenet for the runs made before the presets used it. cfl_calibrated is
# CFL with thresholds fitted to this setting, which clove/images documents adding to its sweep
# (no paper numbers of its own). The studies without paper numbers keep to their preset's setting.
_CLOVE_IMAGE_RUNS = Identity.of(algorithm=CLOVE_METHODS + ("cfl_calibrated",), dataset=CLOVE_DATASETS,
                                model=("genconv", "lenet"), partition=CLOVE_MIXINGS)
_CLOVE_TEXT_RUNS = Identity.of(algorithm=CLOVE_METHODS, dataset=[d for cells in CLOVE_TEXT_ACCURACY.values() for _, d in cells],
                               model=("textcnn", "mlp"), partition=tuple(CLOVE_TEXT_ACCURACY))
_CLOVE_UNSUPERVISED_RUNS = Identity.of(algorithm=[m for m, _ in CLOVE_UNSUPERVISED], dataset=[d for _, d in CLOVE_UNSUPERVISED],
                                       model=("fc_autoencoder",), partition=("label_skew1",))
_CLOVE_INIT_RUNS = Identity.of(algorithm=("clove", "ifca"), dataset=("fashion_mnist", "mnist"),
                               model=("fc_autoencoder",), partition=("label_skew1",))
_CLOVE_ABLATION_RUNS = Identity.of(algorithm=("clove",), dataset=("cifar10", "fashion_mnist"), model=("lenet",),
                                   partition=("label_skew3",))
_CLOVE_LINREG_RUNS = Identity.of(algorithm=("clove", "ifca"), dataset=("separated_regression",), model=("linear",),
                                 partition=("clustered",))

_CLOVE_TITLE = ("CLoVE Tables 1, 2, 4 (7-9 for label skews 3-4): test accuracy, final ARI and convergence "
                "per mixing and method")


TABLES: Dict[str, Spec] = {
    "clove_init_study": Spec("CLoVE §5.2 (Figure 2): ARI of the clients' clustering by round, per initialisation",
                             table_clove_init_study, ("algorithm.name", "algorithm.init", "algorithm.first_round"),
                             identity=_CLOVE_INIT_RUNS),
    "clove_ablation": Spec("CLoVE §5.3 ablations (Table 12)", table_clove_ablation,
                           ("algorithm.name", "algorithm.matching", "algorithm.clustering", "algorithm.embedding"),
                           identity=_CLOVE_ABLATION_RUNS),
    "clove_unsupervised": Spec("CLoVE Table 5 (unsupervised): reconstruction MSE on each client's own test data",
                               table_clove_unsupervised, ("algorithm.name", "dataset.name"), CLOVE_UNSUPERVISED_PROTOCOL,
                               _CLOVE_UNSUPERVISED_RUNS),
    "clove_images": Spec(_CLOVE_TITLE, table_clove, _CLOVE_KEYS, CLOVE_IMAGES_PROTOCOL, _CLOVE_IMAGE_RUNS),
    "clove_text": Spec("CLoVE Table 3 (text; ARI and convergence: Tables 10, 11): test accuracy per data set and method",
                       table_clove, _CLOVE_KEYS, CLOVE_TEXT_PROTOCOL, _CLOVE_TEXT_RUNS),
    "clove_label_skews": Spec(_CLOVE_TITLE, table_clove, _CLOVE_KEYS, CLOVE_LABEL_SKEWS_PROTOCOL, _CLOVE_IMAGE_RUNS),
    "clove_linreg": Spec("CLoVE App. C.1.1 (Figure 3a as a table): ARI by round per method and delta",
                         table_clove_linreg, ("algorithm.name", "dataset.delta"), identity=_CLOVE_LINREG_RUNS),
}
