"""Export one fedcluster run's federated data (each client's training split and held-out local test
split) in PFLlib's dataset layout, for a peer run of PFLlib on exactly our clients' data.

PFLlib (TsingZ0/PFLlib, system/utils/data_utils.py) reads <out>/train/<id>.npz and <out>/test/<id>.npz,
each written by np.savez_compressed(f, data={'x': float32 [n, C, H, W], 'y': int64 [n]}).

The data are built as fedcluster.assemble.build builds them: source = make(cfg.dataset, seed=cfg.seed),
partition = make(cfg.partition), build_data(source, partition, cfg.seed) (federate, then carve_validation),
with the model inputs our engine reads (x[k, :n_k]: uint8 pixels / 255, then (x - mean) / std when
dataset.normalize is on).

The config comes from either
  --config FILE         a run's config.yaml (e.g. an archived run's), optionally --seed to replace its seed, or
  --overrides K=V ...   fedcluster overrides composed with fedcluster.config.store.compose_config.
Run with PYTHONPATH pointing at the fedcluster checkout whose data code should build the split (the same
script runs at the archived runs' revision, whose code has fedcluster/config.py instead of config/store.py).

Writes <out>/config.json (PFLlib's dataset config) and <out>/export.json: per-client counts, label counts,
sha256 of every client's arrays, and the fedcluster revision that built them.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import torch
from omegaconf import OmegaConf, open_dict


def compose(overrides):
    try:
        from fedcluster.config.store import compose_config
    except ImportError:   # older revisions
        from fedcluster.config import compose_config
    return compose_config(overrides)


def refuse(message: str) -> None:
    """Bad input: one line naming the value and what is allowed, exit 2, before anything is written."""
    print(f"export_clients_npz.py: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", help="a run's config.yaml")
    ap.add_argument("--seed", type=int, help="replace the config's seed")
    ap.add_argument("--overrides", nargs="*", default=None, help="fedcluster overrides (instead of --config)")
    ap.add_argument("--data-root", default=None, help="replace dataset.root (where Fashion-MNIST is looked for)")
    ap.add_argument("--out", required=True, help="PFLlib dataset folder to write (train/, test/, config.json)")
    args = ap.parse_args()
    if args.config and not os.path.isfile(args.config):
        refuse(f"--config {args.config} is not a file; allowed: a run's config.yaml")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        refuse(f"--out {args.out} is a file; allowed: a folder (created where missing)")
    torch.set_num_threads(1)

    from fedcluster.assemble import build_data, make

    if args.config:
        cfg = OmegaConf.load(args.config)
    else:
        cfg = compose(args.overrides or [])
    with open_dict(cfg):
        if args.seed is not None:
            cfg.seed = args.seed
        if args.data_root is not None:
            cfg.dataset.root = args.data_root
    source = make(cfg.dataset, seed=cfg.seed)
    partition = make(cfg.partition)
    data = build_data(source, partition, cfg.seed)

    os.makedirs(os.path.join(args.out, "train"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "test"), exist_ok=True)
    C = int(data.num_classes) if hasattr(data, "num_classes") else int(source.num_classes)
    info = {"seed": int(cfg.seed), "num_clients": int(data.num_clients), "num_classes": C,
            "in_shape": list(source.in_shape), "dataset": OmegaConf.to_container(cfg.dataset, resolve=True),
            "partition": OmegaConf.to_container(cfg.partition, resolve=True), "clients": []}
    stats = []
    for k in range(data.num_clients):
        row = {"client": k}
        for split_name, split in (("train", data.train), ("test", data.local_test)):
            n = int(split.n[k])
            x = split.x[k, :n]
            x = x.detach().to("cpu", torch.float32).numpy().astype(np.float32, copy=False)
            y = split.y[k, :n].detach().cpu().numpy().astype(np.int64)
            assert x.shape == (n, *source.in_shape), (x.shape, n)
            with open(os.path.join(args.out, split_name, f"{k}.npz"), "wb") as f:
                np.savez_compressed(f, data={"x": x, "y": y})
            row[f"{split_name}_n"] = n
            row[f"{split_name}_labels"] = np.bincount(y, minlength=C).tolist()
            row[f"{split_name}_sha256"] = hashlib.sha256(x.tobytes() + y.tobytes()).hexdigest()
            row[f"{split_name}_x_min_max"] = [float(x.min()), float(x.max())] if n else None
        info["clients"].append(row)
        stats.append([row["train_n"], row["train_labels"], row["test_n"], row["test_labels"]])
    if data.validation is not None and int(data.validation.n.sum()):
        raise SystemExit(f"the run carves a validation split ({int(data.validation.n.sum())} samples); not exported")
    try:
        here = os.path.dirname(sys.modules["fedcluster"].__file__)
        info["fedcluster_revision"] = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                                                     text=True).stdout.strip()
        info["fedcluster_path"] = here
    except Exception:   # noqa: BLE001
        pass
    info["total_train"] = sum(r["train_n"] for r in info["clients"])
    info["total_test"] = sum(r["test_n"] for r in info["clients"])
    with open(os.path.join(args.out, "export.json"), "w") as f:
        json.dump(info, f, indent=1)
    with open(os.path.join(args.out, "config.json"), "w") as f:   # PFLlib's dataset config
        json.dump({"num_clients": info["num_clients"], "num_classes": C, "non_iid": True, "balance": False,
                   "partition": "dir", "Size of samples for labels in clients":
                   [[[c, int(v)] for c, v in enumerate(r["train_labels"]) if v] for r in info["clients"]],
                   "alpha": info["partition"].get("alpha"), "batch_size": None}, f)
    print(json.dumps({"seed": info["seed"], "num_clients": info["num_clients"], "total_train": info["total_train"],
                      "total_test": info["total_test"],
                      "train_n": [r["train_n"] for r in info["clients"]],
                      "test_n": [r["test_n"] for r in info["clients"]],
                      "revision": info.get("fedcluster_revision")}))


if __name__ == "__main__":
    main()
