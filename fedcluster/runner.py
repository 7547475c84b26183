"""The round loop shared by every algorithm: `run(cfg, output_dir)`."""
import copy
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
import yaml
from omegaconf import DictConfig, OmegaConf, open_dict

from . import __version__
from .algorithms.base import Federation
from .data import build_federated_data, build_label_federated_data
from .data.budget import check_fits
from .data.federated import as_reconstruction
from .engine.allocator import keep_freed_memory
from .engine.local import LocalJob, LocalTrainer, full_batch_schedule
from .engine.optim import build_optimizer, put_state, take_state
from .divergence import DivergenceWatch
from .errors import ConfigError, NonFiniteLossError, RunInterrupted
from .evaluation import (ari_by_true_round, ari_rows, assignment_rows, cluster_size_rows, convergence, evaluate,
                         matching_costs)
from .io import save_torch, write_csv, write_json, write_text
from .metrics import hungarian_match, key_metric
from .rng import derived_seed, generator
from .rundir import claim, comparable
from .validate import validate

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


def config_fingerprint(requested: dict) -> str:
    """Hash of the config without the keys that do not change results (rundir.VOLATILE_KEYS)."""
    return hashlib.sha256(json.dumps(comparable(requested), sort_keys=True, default=str).encode()).hexdigest()[:16]


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


def build_data(source, partition, seed: int, fits=None):
    """Mixture partitions draw from the source's S distributions; label partitions split
    one labelled pool by class. `fits(num_clients, train_width, test_width)` checks the
    memory the padded client data will take, before it is built."""
    if hasattr(partition, "split"):
        data = build_label_federated_data(source, partition, seed, fits)
    else:
        if fits is not None:
            width = partition.max_samples
            fits(partition.num_clients, width, max(1, round(width * partition.local_test_fraction)))
        plan = partition.plan(len(source.distribution_names), generator(seed, "partition"))
        data = build_federated_data(source, plan, seed)
    return as_reconstruction(data) if source.task == "reconstruction" else data


def check_model_fits(model: torch.nn.Module, data, cfg: DictConfig) -> None:
    """One forward pass on one training sample: a model that cannot read the data's inputs is
    a one-line error naming both, not a traceback from inside a convolution."""
    x = data.train.x[:1, :1].reshape(1, *data.in_shape)
    try:
        with torch.no_grad():
            model(x)
    except (RuntimeError, ValueError, IndexError) as e:
        reason = str(e).strip().splitlines()[0][:200]
        raise ConfigError(f"model={cfg.model.name} does not fit dataset={cfg.dataset.name}'s inputs "
                          f"(shape {tuple(data.in_shape)}): {reason}") from None


def build(cfg: DictConfig):
    """Instantiate hardware, data, model and algorithm from the composed config."""
    hw = make(cfg.hardware)
    source = make(cfg.dataset, seed=cfg.seed)
    partition = make(cfg.partition)
    in_shape = tuple(source.in_shape)
    num_outputs = 1 if source.task == "regression" else source.num_classes

    def build_model():
        try:
            return make(cfg.model, in_shape=in_shape, num_outputs=num_outputs)
        except Exception as e:   # noqa: BLE001 -- a model that cannot be built for these inputs
            cause = e.__cause__ or e
            if isinstance(cause, ConfigError):
                raise cause
            reason = str(cause).strip().splitlines()[0][:200] if str(cause).strip() else type(cause).__name__
            raise ConfigError(f"model={cfg.model.name} does not fit dataset={cfg.dataset.name}'s inputs "
                              f"(shape {in_shape}): {reason}") from None

    model = build_model()
    num_params = sum(p.numel() for p in model.parameters())

    def fits(num_clients, train_width, test_width):
        check_fits(num_clients, train_width, test_width, int(np.prod(in_shape)), num_params,
                   hw.torch_device, f"partition.num_clients={num_clients}")

    data = build_data(source, partition, cfg.seed, fits).to(hw.torch_device, hw.torch_dtype)
    model = model.to(hw.torch_device, hw.torch_dtype)
    check_model_fits(model, data, cfg)
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
    optimizer = build_optimizer(t.optimizer, lr=t.lr, momentum=t.momentum, weight_decay=t.weight_decay)
    trainer = LocalTrainer(model, data.task, optimizer, t.epochs, t.batch_size, t.steps,
                           augment=getattr(source, "augment", None))
    return hw, fed, algorithm, trainer


def requested_config(cfg: DictConfig) -> dict:
    """The run's config as plain data, exactly as config.yaml stores it (a YAML round trip, so
    an existing directory's config.yaml compares equal to the same request)."""
    return yaml.safe_load(OmegaConf.to_yaml(cfg, resolve=True)) or {}


def run(cfg: DictConfig, output_dir, progress: Optional[bool] = None, on_claimed=None) -> dict:
    """Run one experiment in output_dir; write config.yaml, metrics.csv, assignments.csv,
    summary.json (and figures). Checks come before anything is written: the config's values
    (validate.py), the directory's ownership and lock (rundir.py), the model against the data
    and the memory the run needs (build). A directory with this config's unfinished run
    resumes from its checkpoint; a finished one is returned as is (`already_complete`), unless
    `overwrite=true`. `on_claimed(path)` runs once the directory is ours (the CLI writes
    Hydra's .hydra/ files there)."""
    validate(cfg)   # every range, rounds/epochs/batch_size/steps included
    requested = requested_config(cfg)
    with claim(output_dir, requested, overwrite=bool(cfg.get("overwrite", False))) as owned:
        if owned.state == "complete":
            return {**owned.summary, "already_complete": True}
        return _run_owned(copy.deepcopy(cfg), owned.path, requested, progress, on_claimed)


def _run_owned(cfg: DictConfig, out: Path, requested: dict, progress, on_claimed) -> dict:
    started = time.time()
    keep_freed_memory()
    hw, fed, alg, trainer = build(cfg)
    engine = choose_engine(cfg.engine, fed.model, hw.torch_device)
    if hw.torch_device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(hw.torch_device)
    alg.setup(fed)   # its checks (e.g. selection_size vs clients) also come before anything is written
    if not (out / "config.yaml").exists():
        write_text(out / "config.yaml", yaml.safe_dump(requested, sort_keys=False))
    if on_claimed is not None:
        on_claimed(out)
    client_state = None   # persistent optimizer state of all clients, when the algorithm keeps it
    metrics, assignments, sizes, first_round, elapsed_before = [], [], [], 0, 0.0
    train_seconds = []   # per-round time spent in local training (the part the engines differ in)
    fingerprint = config_fingerprint(requested)
    watch = DivergenceWatch(cfg.get("divergence_factor"), cfg.train.lr)
    ckpt_path = out / CHECKPOINT
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location=hw.torch_device, weights_only=False)
        if ckpt["fingerprint"] != fingerprint:
            raise ConfigError(f"{ckpt_path} belongs to a different configuration; use a new hydra.run.dir "
                              "or overwrite=true to start over")
        alg.load_state_dict(ckpt["algorithm"])
        client_state, metrics, assignments = ckpt["client_state"], ckpt["metrics"], ckpt["assignments"]
        sizes = ckpt["cluster_sizes"]
        first_round, elapsed_before = ckpt["next_round"], ckpt["elapsed"]
        watch.load_state_dict(ckpt.get("divergence", {}))

    show = cfg.progress if progress is None else progress
    key = key_metric(fed.data.task)
    rounds = range(first_round, cfg.rounds)
    checkpointed, done = first_round, first_round
    bar = None
    if show:
        from tqdm import tqdm
        bar = tqdm(rounds, desc=f"{cfg.algorithm.name}", unit="round", file=sys.stderr, dynamic_ncols=True,
                   initial=first_round, total=cfg.rounds)
    try:
        for t in rounds:
            plan = alg.plan(t, fed)
            clients = plan.clients.to(fed.device)
            if plan.local not in ("train", "gradient"):
                raise ValueError(f"RoundPlan.local={plan.local!r}: expected 'train' or 'gradient'")
            gradient_only = plan.local == "gradient"   # CLoVE Option II: gradients, no local step
            if gradient_only:
                opt_state = {}
            elif alg.keep_client_state:
                if client_state is None:
                    client_state = trainer.init_state(alg.local_models(fed))
                opt_state = take_state(client_state, clients)
            else:
                opt_state = trainer.init_state(plan.start)
            tr = fed.data.train
            if gradient_only:
                schedule = full_batch_schedule(tr.n[clients], tr.x.shape[1])
            else:
                schedule = trainer.schedule(tr.n[clients], tr.x.shape[1], generator(cfg.seed, "batches", t))
            job = LocalJob(tr.x, tr.y, clients, plan.start, opt_state, schedule, plan.refs, plan.coeffs, plan.offsets,
                           sample_weights=plan.sample_weights, seed=derived_seed(cfg.seed, "dropout", t) % 2 ** 62)
            tick = time.perf_counter()
            result = trainer.gradients(job) if gradient_only else trainer.train(job, engine)
            if fed.device.type == "cuda":
                torch.cuda.synchronize(fed.device)
            train_seconds.append(time.perf_counter() - tick)
            try:
                watch.check(t, plan.clients, result)
            except NonFiniteLossError as e:
                write_partial(out, cfg, fed, metrics, str(e), t)
                raise
            if alg.keep_client_state and not gradient_only:
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
            done = t + 1
            if cfg.checkpoint_every and ((t + 1) % cfg.checkpoint_every == 0) and not last:
                save_torch(ckpt_path, {"fingerprint": fingerprint, "next_round": t + 1, "algorithm": alg.state_dict(),
                                       "client_state": client_state, "metrics": metrics, "assignments": assignments,
                                       "cluster_sizes": sizes, "divergence": watch.state_dict(),
                                       "elapsed": elapsed_before + time.time() - started})
                write_csv(out / "metrics.csv", pd.DataFrame(metrics))
                checkpointed = t + 1
    except KeyboardInterrupt:
        raise RunInterrupted(out, done, cfg.rounds, checkpointed) from None
    finally:
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
    write_json(out / "summary.json", summary)   # last: its presence marks the run finished
    if ckpt_path.exists():
        ckpt_path.unlink()
    return summary


def write_partial(out: Path, cfg, fed, metrics, error: str, t: int) -> None:
    """A diverged run's rows so far, and a summary marked `status: diverged` (never a finished
    result: fedcluster-report lists it as skipped)."""
    if metrics:
        write_csv(out / "metrics.csv", pd.DataFrame(metrics))
    write_json(out / "summary.json", {
        "status": "diverged", "error": error, "diverged_in_round": t,
        "algorithm": cfg.algorithm.name, "dataset": cfg.dataset.name, "partition": cfg.partition.name,
        "model": cfg.model.name, "seed": int(cfg.seed), "rounds": int(cfg.rounds), "num_clients": fed.num_clients,
        "versions": {"fedcluster": __version__, "torch": torch.__version__}})
    ckpt = out / CHECKPOINT
    if ckpt.exists():
        ckpt.unlink()


def mean_over_clients(rows: pd.DataFrame) -> dict:
    """{"<eval_set>_<metric>": mean over clients} of one predictor's metric rows."""
    return {f"{s}_{m}": float(g["value"].mean()) for (s, m), g in rows.groupby(["eval_set", "metric"])}


SAMPLE_MEAN_METRICS = ("accuracy", "mse")   # metrics that are means over a client's samples (macro-F1 is not)


def pooled_over_clients(rows: pd.DataFrame, sizes: dict) -> dict:
    """{"<eval_set>_<metric>": the metric over all clients' samples of that split pooled}, i.e.
    the mean over clients weighted by each one's sample count in the split (`sizes`: eval_set ->
    [N] counts), for the metrics that are per-sample means. Fed-CAM §5 scores 'micro accuracy'
    this way; `mean_over_clients` gives every client the same weight."""
    out = {}
    for (s, m), g in rows.groupby(["eval_set", "metric"]):
        if m not in SAMPLE_MEAN_METRICS or s not in sizes:
            continue
        n = sizes[s][g["model_index"].to_numpy()].astype(np.float64)
        if n.sum() > 0:
            out[f"{s}_{m}"] = float((g["value"].to_numpy() * n).sum() / n.sum())
    return out


def summarize(cfg, fed, alg, frame, assign, engine, hw, wall) -> dict:
    data, final = fed.data, cfg.rounds - 1
    at = frame[frame["round"] == final]
    key = key_metric(data.task)
    summary = {
        "algorithm": cfg.algorithm.name, "dataset": cfg.dataset.name, "partition": cfg.partition.name,
        "model": cfg.model.name, "seed": int(cfg.seed), "rounds": int(cfg.rounds), "task": data.task,
        "table": cfg.get("table"), "key_metric": key, "distributions": data.distribution_names,
        "num_clients": data.num_clients, "engine": engine, "device": hw.describe(), "dtype": hw.dtype,
        "status": "complete", "wall_time_s": round(wall, 3),
        "config": {**{g: OmegaConf.to_container(cfg[g], resolve=True)
                      for g in ("dataset", "partition", "model", "algorithm", "train")},
                   "num_clusters": cfg.get("num_clusters"), "warmup_rounds": cfg.get("warmup_rounds")},
        "versions": {"fedcluster": __version__, "torch": torch.__version__, "python": platform.python_version(),
                     "numpy": np.__version__},
    }
    summary["local"] = mean_over_clients(at[at["model"] == "local"])
    split_sizes = {"local_test": data.local_test.n.cpu().numpy(), "local_train": data.train.n.cpu().numpy()}
    summary["local_micro"] = pooled_over_clients(at[at["model"] == "local"], split_sizes)
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
        # matched_center: a one-to-one pairing (Hungarian on test loss); best_center: each
        # distribution's lowest-loss center (two distributions may share one).
        summary["matched_center"] = {d: int(match[i]) for i, d in enumerate(data.distribution_names)}
        summary["best_center"] = {d: int(np.argmin(cost[:, i])) for i, d in enumerate(data.distribution_names)}
    ari_frame = frame[frame["metric"] == "ari"].sort_values("round") if len(frame) else frame
    if len(ari_frame):
        summary["ari"] = float(ari_frame["value"].iloc[-1])
        summary["ari_by_round"] = ari_by_true_round(ari_frame, int(cfg.rounds))
        summary.update(convergence(summary["ari_by_round"]))
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
