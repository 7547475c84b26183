"""Per-client accuracy split by which two classes a client holds (n-class partitions).

Why: under Fed-CAM's n-class (3, 2) partition the run seed draws each client's two classes,
and at the literal budget a seed whose clients often hold two classes of one kind
(Fashion-MNIST's upper-body garments 0, 2, 3, 4, 6 or shoes 5, 7, 9) scores far lower
with every method (docs/results/paper_protocol/cam_fmnist_table1.md, n-class K = 5). This
rebuilds a finished run's partition from its config.yaml and compares the final held-out
local test accuracy of those clients with the others' (`--seed S`: the partition of seed S
instead, counts only, since the run's metrics belong to its own seed).

    python scripts/label_pair_accuracy.py RUN_DIR [RUN_DIR ...] [--seed S]
"""
import argparse
import collections
import sys
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from fedcluster.assemble import build_data, make

SAME_KIND = [{0, 2, 3, 4, 6}, {5, 7, 9}]   # Fashion-MNIST: upper-body garments, shoes


def client_label_sets(cfg):
    """Each client's set of training labels, from the partition the run's config builds."""
    data = build_data(make(cfg.dataset, seed=cfg.seed), make(cfg.partition), cfg.seed)
    y, n = data.train.y, data.train.n
    return [set(y[i][: int(n[i])].tolist()) for i in range(y.shape[0])]


def same_kind_split(run_dir, seed=None):
    """Counts of clients holding only same-kind classes, their most common label sets, and
    (for the run's own seed) the final mean local test accuracy of those clients and of the rest."""
    cfg = OmegaConf.load(f"{run_dir}/config.yaml")
    if seed is not None:
        cfg.seed = seed
    sets = client_label_sets(cfg)
    same = pd.Series([len(s) > 1 and any(s <= g for g in SAME_KIND) for s in sets])
    out = {"seed": cfg.seed, "algorithm": cfg.algorithm.name, "clients": len(sets), "same_kind": int(same.sum()),
           "pairs": collections.Counter(tuple(sorted(s)) for s in sets).most_common(6)}
    if seed is None:
        m = pd.read_csv(f"{run_dir}/metrics.csv")
        last = m[(m.model == "local") & (m.metric == "accuracy") & (m.eval_set == "local_test")
                 & (m["round"] == m["round"].max())].set_index("model_index").value.sort_index()
        out["acc_same_kind"] = float(last[same.values].mean())
        out["acc_others"] = float(last[~same.values].mean())
    return out


def refuse(message):
    print(f"label_pair_accuracy: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def check_run(run_dir):
    """Refuse, in one line, a directory that is not a Fashion-MNIST run directory (SAME_KIND names
    Fashion-MNIST's classes), before anything is printed for it."""
    config = Path(run_dir) / "config.yaml"
    if not config.is_file():
        refuse(f"{run_dir}: no config.yaml there; pass a run directory (one with config.yaml and metrics.csv)")
    name = OmegaConf.load(config).dataset.name
    if name != "fashion_mnist":
        refuse(f"{run_dir}: dataset.name={name!r}; the same-kind classes are defined for 'fashion_mnist' only")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args(argv)
    for run in args.run_dirs:
        check_run(run)
    for run in args.run_dirs:
        r = same_kind_split(run, args.seed)
        line = f"{run}\n  seed {r['seed']}: {r['same_kind']} of {r['clients']} clients hold two same-kind classes"
        if "acc_same_kind" in r:
            line += (f"; {r['algorithm']} final accuracy {100 * r['acc_same_kind']:.1f} % for them vs "
                     f"{100 * r['acc_others']:.1f} % for the others")
        print(line + f"\n  most common label sets: {r['pairs']}")


if __name__ == "__main__":
    main()
