"""How skewed are the clients' labels under a composed config? Per client, the total-variation distance
between its training labels' distribution and the pooled training labels' one (0: the pool's mix, 1: no
class in common), and how many classes it holds; for the pooled test splits, each class's share.

Why: a method's accuracy under label skew falls with how far each client's data is from the pool (client
drift), while the pooled test mix sets which classes the micro accuracy weighs. Telling the two apart says
why a partition scores lower than another at the same budget (docs/results/paper_protocol/
cam_fmnist_table1.md, FedAvg's n-class cells). Nothing is trained; the data is built as the CLI builds it.

  python scripts/label_skew.py [--seeds 0,1,2] [--json FILE] -- OVERRIDE [OVERRIDE ...]
e.g.
  python scripts/label_skew.py --seeds 0,1,2 -- +preset=cam/table1 dataset=fashion_mnist \\
      partition=cluster_nclass num_clusters=5 partition.num_clients=20 dataset.train_size=6000 dataset.test_size=1000
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fedcluster.assemble import build_data, make   # noqa: E402
from fedcluster.config.store import compose_config       # noqa: E402
from fedcluster.run_records.io import write_text                # noqa: E402


def skew(overrides, seed: int) -> dict:
    cfg = compose_config(list(overrides) + [f"seed={seed}"])
    data = build_data(make(cfg.dataset, seed=cfg.seed), make(cfg.partition), cfg.seed)
    if data.task != "classification":
        raise SystemExit(f"label_skew.py: dataset={cfg.dataset.name} is a {data.task} task; allowed: a "
                         f"classification dataset")
    train = data.train.class_counts(data.num_classes).double()
    own = train / train.sum(1, keepdim=True)
    pool = train.sum(0) / train.sum()
    tv = 0.5 * (own - pool).abs().sum(1)
    test = data.local_test.class_counts(data.num_classes).sum(0)
    return {"overrides": list(overrides), "seed": seed, "clients": data.num_clients,
            "mean_tv_to_pool": round(float(tv.mean()), 4), "min_tv": round(float(tv.min()), 4),
            "max_tv": round(float(tv.max()), 4),
            "mean_classes_per_client": round(float((train > 0).sum(1).double().mean()), 2),
            "pooled_test_share_min": round(float(test.min() / test.sum()), 4),
            "pooled_test_share_max": round(float(test.max() / test.sum()), 4)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0")
    p.add_argument("--json", type=Path)
    p.add_argument("overrides", nargs="+")
    a = p.parse_args(argv)
    rows = [skew(a.overrides, int(s)) for s in a.seeds.split(",")]
    for r in rows:
        print(json.dumps(r), flush=True)
    if a.json:   # appended to what the file holds, written whole through a temporary file
        before = a.json.read_text() if a.json.exists() else ""
        write_text(a.json, before + "".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
