"""`fedcluster-report label-pairs RUN_DIR [RUN_DIR ...] [--seed S]`: per-client accuracy split by which two classes a
client holds (n-class partitions).

Why: under Fed-CAM's n-class (3, 2) partition the run seed draws each client's two classes, and at the literal budget
a seed whose clients often hold two classes of one kind (Fashion-MNIST's upper-body garments 0, 2, 3, 4, 6 or shoes
5, 7, 9) scores far lower with every method (docs/results/paper_protocol/cam_fmnist_table1.md, n-class K = 5). This
rebuilds a finished run's partition from its sealed config.yaml and compares the final held-out local test accuracy
of those clients with the others' (`--seed S`: the partition of seed S instead, counts only, since the run's metrics
belong to its own seed)."""
import collections
import io
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from .arguments import OneLineParser, finished_runs, refuse

PROG = "fedcluster-report label-pairs"
SAME_KIND = [{0, 2, 3, 4, 6}, {5, 7, 9}]   # Fashion-MNIST: upper-body garments, shoes


def client_label_sets(cfg):
    """Each client's set of training labels, from the partition the run's config builds."""
    from ..assemble import build_data, make
    data = build_data(make(cfg.dataset, seed=cfg.seed), make(cfg.partition), cfg.seed)
    y, n = data.train.y, data.train.n
    return [set(y[i][: int(n[i])].tolist()) for i in range(y.shape[0])]


def run_config(run):
    """The run's config.yaml as it was sealed (report/runs.py checked it), as an OmegaConf node."""
    return OmegaConf.create(run.files.read_text("config.yaml"))


def same_kind_split(run, seed=None):
    """Counts of clients holding only same-kind classes, their most common label sets, and (for the run's own seed)
    the final mean local test accuracy of those clients and of the rest. `run`: a finished run (report/runs.py's
    Run) or its directory."""
    if not hasattr(run, "files"):
        run = finished_runs(PROG, [run])[0]
    cfg = run_config(run)
    if seed is not None:
        cfg.seed = seed
    sets = client_label_sets(cfg)
    same = pd.Series([len(s) > 1 and any(s <= g for g in SAME_KIND) for s in sets])
    out = {"seed": cfg.seed, "algorithm": cfg.algorithm.name, "clients": len(sets), "same_kind": int(same.sum()),
           "pairs": collections.Counter(tuple(sorted(s)) for s in sets).most_common(6)}
    if seed is None:
        m = pd.read_csv(io.StringIO(run.files.read_text("metrics.csv")))
        last = m[(m.model == "local") & (m.metric == "accuracy") & (m.eval_set == "local_test")
                 & (m["round"] == m["round"].max())].set_index("model_index").value.sort_index()
        out["acc_same_kind"] = float(last[same.values].mean())
        out["acc_others"] = float(last[~same.values].mean())
    return out


def parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("runs", type=Path, nargs="+", help="finished Fashion-MNIST n-class run directories")
    p.add_argument("--seed", type=int, default=None, help="count the partition of this seed instead (no accuracies)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    runs = finished_runs(PROG, args.runs)
    for run in runs:   # SAME_KIND names Fashion-MNIST's classes: every run is checked before anything is printed
        name = run.value("dataset.name")
        if name != "fashion_mnist":
            refuse(PROG, f"{run.path}: dataset.name={name!r}; the same-kind classes are defined for 'fashion_mnist' only")
    for run in runs:
        r = same_kind_split(run, args.seed)
        line = f"{run.path}\n  seed {r['seed']}: {r['same_kind']} of {r['clients']} clients hold two same-kind classes"
        if "acc_same_kind" in r:
            line += (f"; {r['algorithm']} final accuracy {100 * r['acc_same_kind']:.1f} % for them vs "
                     f"{100 * r['acc_others']:.1f} % for the others")
        print(line + f"\n  most common label sets: {r['pairs']}")
    return 0
