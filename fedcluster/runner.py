"""The round loop shared by every algorithm: `run(cfg, output_dir)`."""
import hashlib
import json
import platform
import sys
import time
from pathlib import Path
from typing import Optional

import hydra
import numpy as np
import pandas as pd
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from . import __version__
from .algorithms.base import Federation
from .data import build_federated_data, build_label_federated_data
from .data.federated import as_reconstruction
from .engine.allocator import keep_freed_memory
from .engine.local import LocalJob, LocalTrainer
from .engine.optim import build_optimizer, put_state, take_state
from .errors import ConfigError, NonFiniteLossError
from .evaluation import ari_rows, assignment_rows, cluster_size_rows, convergence, evaluate, matching_costs
from .io import save_torch, write_csv, write_json, write_text
from .metrics import hungarian_match, key_metric
from .models.stacked import all_finite
from .rng import derived_seed, generator

CHECKPOINT = "checkpoint.pt"
ENGINES = ("auto", "batched", "looped", "sequential")


def choose_engine(requested: str, model: torch.nn.Module, device: torch.device) -> str:
    """`auto`: batched (vmap) everywhere except convolutional models on CPU, where vmap over
    convolutions measured slower than a per-client loop (scripts/benchmark.py)."""
    if requested not in ENGINES:
        raise ConfigError(f"engine={requested!r} is unknown; allowed: {list(ENGINES)}")
    stateful = [type(m).__name__ for m in model.modules()
                if isinstance(m, (torch.nn.modules.batchnorm._BatchNorm, torch.nn.Dropout))]
    if stateful:   # batch statistics would include padded samples; vmap has no per-row dropout masks here
        if requested == "batched":
            print(f"fedcluster: the model has {sorted(set(stateful))}; training with the sequential engine "
                  "(per-client batch-norm statistics and dropout masks)", file=sys.stderr)
        return "sequential"
    if requested != "auto":
        return requested
    has_conv = any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules())
    return "looped" if (device.type == "cpu" and has_conv) else "batched"


def config_fingerprint(cfg: DictConfig) -> str:
    plain = OmegaConf.to_container(cfg, resolve=True)
    for volatile in ("progress", "checkpoint_every", "hydra"):
        plain.pop(volatile, None)
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _drop_names(plain):
    """Remove the descriptive `name` key of every node that will be instantiated (nested
    ones too, e.g. CAM's base), except the image source, whose reader is chosen by name."""
    if isinstance(plain, dict):
        if "_target_" in plain and not str(plain["_target_"]).endswith("ImageSource"):
            plain.pop("name", None)
        for v in plain.values():
            _drop_names(v)
    return plain


def make(node: DictConfig, **kwargs):
    """hydra.utils.instantiate without the groups' descriptive `name` keys."""
    return hydra.utils.instantiate(_drop_names(OmegaConf.to_container(node, resolve=True)), **kwargs)


def _nodes_with(node, key: str):
    """The config node and its nested nodes (e.g. CAM's `base`) that have `key`."""
    if isinstance(node, DictConfig):
        if key in node:
            yield node
        for k in node:
            if isinstance(node.get(k), DictConfig):
                yield from _nodes_with(node[k], key)


def build_data(source, partition, seed: int):
    """Mixture partitions draw from the source's S distributions; label partitions split
    one labelled pool by class."""
    if hasattr(partition, "split"):
        data = build_label_federated_data(source, partition, seed)
    else:
        plan = partition.plan(len(source.distribution_names), generator(seed, "partition"))
        data = build_federated_data(source, plan, seed)
    return as_reconstruction(data) if source.task == "reconstruction" else data


def build(cfg: DictConfig):
    """Instantiate hardware, data, model and algorithm from the composed config."""
    hw = make(cfg.hardware)
    source = make(cfg.dataset, seed=cfg.seed)
    partition = make(cfg.partition)
    data = build_data(source, partition, cfg.seed).to(hw.torch_device, hw.torch_dtype)
    num_outputs = 1 if data.task == "regression" else data.num_classes

    def build_model():
        return make(cfg.model, in_shape=data.in_shape, num_outputs=num_outputs)

    model = build_model().to(hw.torch_device, hw.torch_dtype)
    with open_dict(cfg):
        if cfg.get("num_clusters") is None:   # default K: the data's own number of clusters
            cfg.num_clusters = data.num_true_clusters or data.num_distributions
    alg_cfg = cfg.algorithm
    for node in _nodes_with(alg_cfg, "num_clusters"):
        if node.num_clusters is None:
            with open_dict(node):
                node.num_clusters = cfg.num_clusters
        if not 1 <= node.num_clusters <= data.num_clients:
            raise ConfigError(f"num_clusters={node.num_clusters} must be between 1 and the number "
                              f"of clients ({data.num_clients})")
    algorithm = make(alg_cfg)
    fed = Federation(data, model, lambda: build_model(), cfg.seed, hw.torch_device, hw.torch_dtype)
    t = cfg.train
    if t.epochs < 1 or t.batch_size < 1:
        raise ConfigError(f"train.epochs={t.epochs} and train.batch_size={t.batch_size} must be >= 1")
    if t.steps is not None and t.steps < 1:
        raise ConfigError(f"train.steps={t.steps} must be >= 1, or null to train for train.epochs epochs")
    optimizer = build_optimizer(t.optimizer, lr=t.lr, momentum=t.momentum, weight_decay=t.weight_decay)
    trainer = LocalTrainer(model, data.task, optimizer, t.epochs, t.batch_size, t.steps,
                           augment=getattr(source, "augment", None))
    return hw, fed, algorithm, trainer


def run(cfg: DictConfig, output_dir, progress: Optional[bool] = None) -> dict:
    """Run one experiment; write config.yaml, metrics.csv, assignments.csv, summary.json
    (and figures) into output_dir. Resumes from output_dir/checkpoint.pt when present."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.rounds < 1:
        raise ConfigError(f"rounds={cfg.rounds} must be >= 1")
    started = time.time()
    keep_freed_memory()
    hw, fed, alg, trainer = build(cfg)
    engine = choose_engine(cfg.engine, fed.model, hw.torch_device)
    if hw.torch_device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(hw.torch_device)
    write_text(out / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))

    alg.setup(fed)
    N = fed.num_clients
    client_state = None   # persistent optimizer state of all clients, when the algorithm keeps it
    metrics, assignments, sizes, first_round, elapsed_before = [], [], [], 0, 0.0
    train_seconds = []   # per-round time spent in local training (the part the engines differ in)
    fingerprint = config_fingerprint(cfg)
    ckpt_path = out / CHECKPOINT
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location=hw.torch_device, weights_only=False)
        if ckpt["fingerprint"] != fingerprint:
            raise ConfigError(f"{ckpt_path} belongs to a different configuration; use a new hydra.run.dir "
                              "or delete the checkpoint to start over")
        alg.load_state_dict(ckpt["algorithm"])
        client_state, metrics, assignments = ckpt["client_state"], ckpt["metrics"], ckpt["assignments"]
        sizes = ckpt["cluster_sizes"]
        first_round, elapsed_before = ckpt["next_round"], ckpt["elapsed"]

    show = cfg.progress if progress is None else progress
    key = key_metric(fed.data.task)
    rounds = range(first_round, cfg.rounds)
    bar = None
    if show:
        from tqdm import tqdm
        bar = tqdm(rounds, desc=f"{cfg.algorithm.name}", unit="round", file=sys.stderr, dynamic_ncols=True,
                   initial=first_round, total=cfg.rounds)
    for t in rounds:
        plan = alg.plan(t, fed)
        M = len(plan.clients)
        clients = plan.clients.to(fed.device)
        if alg.keep_client_state:
            if client_state is None:
                client_state = trainer.init_state(alg.local_models(fed))
            opt_state = take_state(client_state, clients)
        else:
            opt_state = trainer.init_state(plan.start)
        tr = fed.data.train
        schedule = trainer.schedule(tr.n[clients], tr.x.shape[1], generator(cfg.seed, "batches", t))
        job = LocalJob(tr.x, tr.y, clients, plan.start, opt_state, schedule, plan.refs, plan.coeffs, plan.offsets,
                       sample_weights=plan.sample_weights, seed=derived_seed(cfg.seed, "dropout", t) % 2 ** 62)
        tick = time.perf_counter()
        result = trainer.train(job, engine)
        if fed.device.type == "cuda":
            torch.cuda.synchronize(fed.device)
        train_seconds.append(time.perf_counter() - tick)
        bad = ~(result.finite & all_finite(result.params))
        if bool(bad.any()):
            k = int(plan.clients[torch.nonzero(bad)[0, 0]])
            raise NonFiniteLossError(f"round {t}: training loss became NaN/inf at client {k} "
                                     f"({int(bad.sum())} of {M} clients); lower train.lr or check the data")
        if alg.keep_client_state:
            put_state(client_state, clients, result.opt_state)
        alg.aggregate(t, plan, result.params, fed)
        sizes += cluster_size_rows(t, alg)
        metrics += ari_rows(t, alg, fed.data)

        last = t == cfg.rounds - 1
        if last or (t + 1) % cfg.eval_every == 0:
            rows = evaluate(t, alg, fed, batched=engine == "batched", on_train=cfg.eval_local_train)
            metrics += rows
            assignments += assignment_rows(t, alg)
            if bar is not None:
                local = [r["value"] for r in rows if r["model"] == "local" and r["eval_set"] == "local_test" and r["metric"] == key]
                bar.set_postfix({f"local_test_{key}": f"{np.mean(local):.4g}"})
        if bar is not None:
            bar.update(1)
        if cfg.checkpoint_every and ((t + 1) % cfg.checkpoint_every == 0) and not last:
            save_torch(ckpt_path, {"fingerprint": fingerprint, "next_round": t + 1, "algorithm": alg.state_dict(),
                                   "client_state": client_state, "metrics": metrics, "assignments": assignments,
                                   "cluster_sizes": sizes,
                                   "elapsed": elapsed_before + time.time() - started})
            write_csv(out / "metrics.csv", pd.DataFrame(metrics))
    if bar is not None:
        bar.close()

    frame = pd.DataFrame(metrics)
    write_csv(out / "metrics.csv", frame)
    if assignments:
        write_csv(out / "assignments.csv", pd.DataFrame(assignments))
    if sizes:
        write_csv(out / "cluster_sizes.csv", pd.DataFrame(sizes))
    summary = summarize(cfg, fed, alg, frame, pd.DataFrame(assignments), engine, hw,
                        elapsed_before + time.time() - started)
    summary["train_seconds_per_round"] = float(np.median(train_seconds)) if train_seconds else None   # median: robust to warm-up
    if hw.torch_device.type == "cuda":
        summary["peak_gpu_memory_mb"] = round(torch.cuda.max_memory_allocated(hw.torch_device) / 2 ** 20, 1)
    if sizes:
        final_sizes = [r["size"] for r in sizes if r["round"] == cfg.rounds - 1]
        summary["cluster_sizes"] = final_sizes
        summary["nonempty_clusters"] = int(sum(s > 0 for s in final_sizes))
        summary["largest_cluster_share"] = max(final_sizes) / max(sum(final_sizes), 1)
    write_json(out / "summary.json", summary)
    split_log = getattr(alg, "split_log", None)   # CFL: update norms per cluster and round, to calibrate eps1/eps2
    if split_log:
        write_csv(out / "cfl_splits.csv", pd.DataFrame(split_log))
    losses = getattr(alg, "loss_vectors", None)   # the last round's client x model losses (CLoVE, IFCA)
    if losses is not None:
        L = losses.detach().cpu().numpy()
        write_csv(out / "loss_vectors.csv", pd.DataFrame(L, columns=[f"model_{j}" for j in range(L.shape[1])]))
    if cfg.plots:
        from .plots import write_loss_heatmap, write_run_figures
        write_run_figures(out, frame, pd.DataFrame(assignments), fed.data, summary, pd.DataFrame(sizes))
        if losses is not None and len(L) == fed.num_clients:
            truth = fed.data.cluster_truth
            write_loss_heatmap(out / "loss_heatmap.png", L, None if truth is None else truth.cpu().numpy(),
                               f"{summary['algorithm']}: client x model loss, last round ({summary['partition']})")
    if ckpt_path.exists():
        ckpt_path.unlink()
    return summary


def mean_over_clients(rows: pd.DataFrame) -> dict:
    """{"<eval_set>_<metric>": mean over clients} of one predictor's metric rows."""
    return {f"{s}_{m}": float(g["value"].mean()) for (s, m), g in rows.groupby(["eval_set", "metric"])}


def summarize(cfg, fed, alg, frame, assign, engine, hw, wall) -> dict:
    data, final = fed.data, cfg.rounds - 1
    at = frame[frame["round"] == final]
    key = key_metric(data.task)
    summary = {
        "algorithm": cfg.algorithm.name, "dataset": cfg.dataset.name, "partition": cfg.partition.name,
        "model": cfg.model.name, "seed": int(cfg.seed), "rounds": int(cfg.rounds), "task": data.task,
        "table": cfg.get("table"), "key_metric": key, "distributions": data.distribution_names,
        "num_clients": data.num_clients, "engine": engine, "device": hw.describe(), "dtype": hw.dtype,
        "wall_time_s": round(wall, 3),
        "config": {**{g: OmegaConf.to_container(cfg[g], resolve=True)
                      for g in ("dataset", "partition", "model", "algorithm", "train")},
                   "num_clusters": cfg.get("num_clusters"), "warmup_rounds": cfg.get("warmup_rounds")},
        "versions": {"fedcluster": __version__, "torch": torch.__version__, "python": platform.python_version(),
                     "numpy": np.__version__},
    }
    summary["local"] = mean_over_clients(at[at["model"] == "local"])
    alternatives = at[at["model"].str.startswith("local:")]
    if len(alternatives):   # the same method's other predictors (FedEM: mixture / top component)
        summary["local_alternatives"] = {name.split(":", 1)[1]: mean_over_clients(a)
                                         for name, a in alternatives.groupby("model")}
    centers = at[at["model"] == "center"]
    if len(centers):
        summary["centers"] = {
            f"{m}": {d: [float(v) for v in g[g["eval_set"] == d].sort_values("model_index")["value"]]
                     for d in data.distribution_names}
            for m, g in centers.groupby("metric")}
        cost = matching_costs(frame, final, data.task, data.distribution_names)
        match = hungarian_match(cost)
        summary["matched_center"] = {d: int(match[i]) for i, d in enumerate(data.distribution_names)}
    ari_frame = frame[frame["metric"] == "ari"].sort_values("round") if len(frame) else frame
    if len(ari_frame):
        summary["ari"] = float(ari_frame["value"].iloc[-1])
        summary["ari_by_round"] = [round(float(v), 6) for v in ari_frame["value"]]
        summary.update(convergence(ari_frame["value"].tolist()))
    if len(assign) and len(centers):
        summary["importance_error"] = importance_error(assign, final, data, summary["matched_center"])
    return summary


def importance_error(assign: pd.DataFrame, final: int, data, matched: dict) -> dict:
    """Per group of clients with the same true mixture (at most 4 groups): mean estimated
    weight on the center matched to each distribution vs the true share."""
    mixture = data.mixture.cpu().numpy()
    groups = {}
    for k, row in enumerate(np.round(mixture, 6)):
        groups.setdefault(tuple(row), []).append(k)
    if len(groups) > 4:
        return {}
    w = assign[assign["round"] == final].pivot(index="client", columns="cluster", values="weight").to_numpy()
    result = {}
    for ratios, members in groups.items():
        name = ":".join(f"{round(100 * r)}" for r in ratios)
        est = [float(w[members, matched[d]].mean()) if matched[d] >= 0 else float("nan")
               for d in data.distribution_names]
        result[name] = {"true": list(ratios), "estimated": est,
                        "max_abs_error": float(np.max(np.abs(np.array(est) - np.array(ratios))))}
    return result
