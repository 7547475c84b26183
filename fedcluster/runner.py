"""The round loop shared by every algorithm: `run(cfg, output_dir)`.

build -> for each round: plan, train the plan's clients, aggregate, evaluate, checkpoint ->
write the results. What an algorithm decides lives in fedcluster/algorithms; assembling the run
in assemble.py; the files a run leaves in finished_run.py."""
import copy
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import yaml
from omegaconf import DictConfig

from .finished_run import write_results
from .assemble import build, choose_engine, settle
from .run_records.provenance import source_revision
from .run_records.divergence import DivergenceWatch
from .data.budget import rows_per_chunk
from .local_training.allocator import keep_freed_memory
from .local_training.clients import client_chunks, concat_results, run_clients
from .local_training.local_results import LocalResult
from .models.stacked import all_finite
from .rng import derived_seed
from .errors import NonFiniteLossError, RunFault, RunInterrupted, WriteFailed
from .run_records.identity import accepted_fingerprints, config_fingerprint, requested_config
from .run_records.integrity import seal_summary
from .config.composition import check_declared
from .privacy.ledger import privacy_rows
from .evaluation import ari_rows, assignment_rows, cluster_size_rows, evaluate, round_start_rows
from .run_records.io import write_csv, write_json, write_text
from .loggers import make_loggers
from .metrics import key_metric
from .run_records.record import METRICS_FILE, RunRecord, metrics_table, run_ids
from . import signals
from .run_records.rundir import claim, drop_set_aside, remove_stale_temp_files, restore_set_aside, set_aside_results
from .signals import deferred
from .run_records.runlog import close_run_log, open_run_log
from .run_records.summary import diverged_summary
from .settled import Reporting, SettledRun
from .config.validate import validate


def run(cfg: DictConfig, output_dir, progress: Optional[bool] = None, on_claimed=None, train_with=None) -> dict:
    """Run one experiment in output_dir; write config.yaml, metrics.csv, assignments.csv,
    summary.json (and figures). Checks come before anything is written: the config's values
    (validate.py), the directory's ownership and lock (rundir.py), the model against the data
    and the memory the run needs (assemble.build). A directory with this config's unfinished
    run resumes from its checkpoint; a finished one is returned as is (`already_complete`),
    unless `overwrite=true`. `on_claimed(path)` runs once the directory is ours (the CLI writes
    Hydra's .hydra/ files there). `train_with(trainer)`: the trainer the rounds train with instead
    (packed.py hands the local training of several runs to one job)."""
    started = time.time()
    validate(cfg)
    check_declared(cfg)
    loggers = make_loggers(cfg.get("logger"))   # a missing tracker package is an error before anything is written
    cfg = copy.deepcopy(cfg)   # settled below; the caller's config stays as given
    inputs = settle(cfg)       # what the config leaves to the data (K), settled before config.yaml records it
    requested = requested_config(cfg)
    with claim(output_dir, requested, overwrite=bool(cfg.get("overwrite", False))) as owned:
        if owned.state == "complete":   # nothing redone; a temp file of a process killed mid-write still goes
            remove_stale_temp_files(owned.path)
            return {**owned.summary, "already_complete": True}
        return _run_owned(cfg, owned.path, inputs, requested, Reporting(progress, on_claimed, loggers, started),
                          replace=owned.state == "replace", train_with=train_with)


def _run_owned(cfg: DictConfig, out: Path, inputs, requested: dict, reporting: Reporting, replace: bool,
               train_with=None) -> dict:
    """`requested`: the settled config as config.yaml records it (the one the directory was claimed with).
    `replace` (overwrite=true): the old run's files are set aside only once every check has passed, and
    removed only once the new run has finished (they come back if it fails)."""
    source_revision()   # the code this process runs is the code it loaded: read the checkout's revision now, not
    #                     when the summary is written, maybe hours later, after the checkout has moved on
    keep_freed_memory()
    hw, fed, alg, trainer = build(cfg, inputs)
    if train_with is not None:
        trainer = train_with(trainer)
    engine = choose_engine(cfg.engine, fed.model, hw.torch_device, cfg.train.batch_size)
    fed.batched_forward = engine == "batched"
    chunk = rows_per_chunk(hw.chunk, alg.training_rows(fed.num_clients), sum(p.numel() for p in fed.model.parameters()),
                           cfg.train.optimizer, hw.torch_device, torch.empty(0, dtype=hw.torch_dtype).element_size())
    if hw.torch_device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(hw.torch_device)
    alg.setup(fed)   # its checks (e.g. selection_size vs clients) also come before anything is written
    fingerprint = config_fingerprint(requested)
    watch = DivergenceWatch(cfg.get("divergence_factor"), cfg.train.lr)
    record = RunRecord() if replace else RunRecord.resume(out, fingerprint, alg, watch, hw.torch_device,
                                                          accepted_fingerprints(requested))   # verified first
    signals.check()   # the last safe point before anything is written or removed
    remove_stale_temp_files(out)   # left by a process killed mid-write; every check has passed
    args = (SettledRun(cfg, out, requested, hw, fed, alg, trainer, engine, chunk, fingerprint, watch, record),
            reporting)
    if not replace:
        summary = _write_run(*args)
        drop_set_aside(out)   # a replacement killed earlier and now resumed to its end: the old run goes
        return summary
    set_aside_results(out)   # all or nothing: the old run comes back whole if the new one fails
    try:
        summary = _write_run(*args)
    except BaseException:
        restore_set_aside(out)
        raise
    drop_set_aside(out)
    return summary


def _write_run(run: SettledRun, reporting: Reporting) -> dict:
    """Train the rounds left and write the results (the directory is ours and every check has passed)."""
    cfg, out, requested, record, fed, alg, hw = run.cfg, run.out, run.requested, run.record, run.fed, run.alg, run.hw
    engine, chunk, fingerprint, watch = run.engine, run.chunk, run.fingerprint, run.watch
    progress, on_claimed, loggers, started = reporting.progress, reporting.on_claimed, reporting.loggers, reporting.started
    if not (out / "config.yaml").exists():
        write_text(out / "config.yaml", yaml.safe_dump(requested, sort_keys=False))
    if on_claimed is not None:
        on_claimed(out)
    ids = run_ids(cfg, fingerprint)
    show = cfg.progress if progress is None else progress
    bar = progress_bar(cfg, record.next_round) if show and sys.stderr.isatty() else None
    key, done, checkpointed = key_metric(fed.data.task), record.next_round, record.next_round
    log = open_run_log(out, to_stderr=show and bar is None)
    log.info("%s: %s, rounds %d-%d of %d (engine %s, chunks of up to %d rows, %s)", out, cfg.algorithm.name,
             record.next_round + 1, cfg.rounds, cfg.rounds, engine, chunk, hw.describe())
    summary, logged = None, len(record.metrics)   # rows handed to the loggers so far
    newcomers_train = newcomer_training(run.trainer, engine, cfg.seed, chunk)   # for a newcomer rule that trains
    try:
        for lg in loggers:
            lg.open(out, requested, ids, record.metrics, record.next_round)
        first_round_at = time.time()
        for t in range(record.next_round, cfg.rounds):
            signals.check()   # a stop noted since the last safe point (signals.py)
            last = t == cfg.rounds - 1
            evaluated = last or (t + 1) % cfg.eval_every == 0
            if evaluated and cfg.eval_round_start_train:
                record.metrics += round_start_rows(t, alg, fed)
            plan = alg.plan(t, fed)
            record.note_participation(t, plan, alg)
            tick = time.perf_counter()
            try:
                train_round(t, plan, run)
            except NonFiniteLossError as e:
                write_diverged(out, cfg, fed, record, str(e), t, ids)
                raise
            record.train_seconds.append(time.perf_counter() - tick)
            record.note_messages(t, alg.messages(t, plan, fed))   # after the round: what it sent is known
            record.metrics += privacy_rows(t, alg, fed)   # epsilon so far, under privacy=client_dp
            record.sizes += cluster_size_rows(t, alg)
            record.metrics += ari_rows(t, alg, fed.data)
            if evaluated:
                rows = evaluate(t, alg, fed, on_train=cfg.eval_local_train, local_training=newcomers_train)
                record.metrics += rows
                record.assignments += assignment_rows(t, alg)
                local = np.mean([r["value"] for r in rows if r["model"] == "local" and r["eval_set"] == "local_test"
                                 and r["metric"] == key] or [np.nan])
                log.info("round %d/%d: local_test_%s %.4g (local training %.2f s)", t + 1, cfg.rounds, key, local,
                         record.train_seconds[-1])
                for lg in loggers:
                    lg.log_round(t, record.metrics[logged:], record.train_seconds[-1])
                logged = len(record.metrics)
                if bar is not None:
                    bar.set_postfix({f"local_test_{key}": f"{local:.4g}"})
            if bar is not None:
                bar.update(1)
            done = t + 1
            if cfg.checkpoint_every and (t + 1) % cfg.checkpoint_every == 0 and not last:
                with deferred():   # a stop during the checkpoint finishes it and then resumes from it
                    record.save(out, fingerprint, alg, watch, t + 1, record.elapsed + time.time() - started)
                    checkpointed = t + 1
                    record.write_metrics(out, ids)
        if bar is not None:
            bar.close()
            bar = None
        peak = (round(torch.cuda.max_memory_allocated(hw.torch_device) / 2 ** 20, 1)
                if hw.torch_device.type == "cuda" else None)
        timings = {"setup_s": first_round_at - started, "rounds_s": time.time() - first_round_at}
        summary = write_results(run, record.elapsed + time.time() - started, ids, peak, timings)
        return summary
    except KeyboardInterrupt as e:
        raise RunInterrupted(out, done, cfg.rounds, checkpointed, getattr(e, "signum", 2)) from None
    except OSError as e:   # disk full, read-only, no permission (WriteFailed names the file)
        if not isinstance(e, WriteFailed):
            e = WriteFailed(e.filename or out, e.strerror or str(e))
        raise RunFault(f"{e}; the files written before are intact; once the cause is fixed the same command with "
                       f"hydra.run.dir={out} {resume_hint(checkpointed)}") from None
    except Exception as e:   # noqa: BLE001 -- out of memory is a fault of the machine; anything else propagates
        if not out_of_memory(e):
            raise
        text = " ".join(str(e).split())                     # the message on one line
        what = ". ".join(text.split(". ")[:2])[:160]        # its first two sentences: "CUDA out of memory. Tried to ..."
        raise RunFault(f"out of memory on {fed.device.type} in round {done + 1} ({what}); the files written before "
                       f"are intact; with fewer jobs on the device, or a smaller run (e.g. lower "
                       f"partition.num_clients), the same command with hydra.run.dir={out} "
                       f"{resume_hint(checkpointed)}") from None
    finally:
        for lg in loggers:
            try:
                lg.close(summary)
            except OSError:
                if summary is not None:   # a fault after the results were written is still a fault
                    raise
        close_run_log(log)
        if bar is not None:
            bar.close()


def newcomer_training(trainer, engine: str, seed: int, chunk: Optional[int]):
    """The run's local training, for a newcomer rule that reads a locally trained model (RunView.train on the
    newcomer view, evaluation.newcomer_rows): a plan's rows on the newcomers' data, from fresh optimizer state, their
    batches from a stream of their own (purpose 'newcomers', the round), so scoring newcomers draws nothing from the
    trained clients' streams."""
    def train(t, plan, view):
        return run_clients(t, plan, trainer, view.data.train, engine, derived_seed(seed, "newcomers"), None, chunk).params
    return train


def train_round(t: int, plan, run: SettledRun) -> None:
    """The plan's rows trained chunk by chunk (local_training/clients.py), each chunk handed to the round's
    aggregation (`alg.aggregation`, algorithms/fold.py) as it finishes; the divergence check sees every
    row before the aggregation is applied (`finish`). A chunk's trained rows and optimizer states are
    dropped before the next trains, unless the aggregation gathers every row."""
    alg, fed, record = run.alg, run.fed, run.record
    aggregation = alg.aggregation(t, plan, fed)
    if len(plan.clients) == 0:   # a Poisson sample (privacy=client_dp) may draw no client: the release is noise alone
        aggregation.finish()
        return
    losses = []
    for rows, result in client_chunks(t, plan, run.trainer, fed.data.train, run.engine, run.seed, run.chunk,
                                      record.state_of(plan, alg, run.trainer, fed)):
        losses.append(LocalResult({}, {}, result.last_loss, result.finite & all_finite(result.params),
                                  result.first_loss))
        record.keep_client_rows(plan, result, rows)
        aggregation.add(rows, result.params)
        del result
    if fed.device.type == "cuda":
        torch.cuda.synchronize(fed.device)
    run.watch.check(t, plan.clients, losses[0] if len(losses) == 1 else concat_results(losses))
    aggregation.finish()


def resume_hint(checkpointed: int) -> str:
    """What the same command does after a fault: resume from the last checkpoint, or start over."""
    return (f"resumes from the checkpoint after round {checkpointed}" if checkpointed
            else "starts it over (no checkpoint was written)")


def out_of_memory(e: BaseException) -> bool:
    """An allocation the device could not serve: CUDA's OutOfMemoryError (other processes on a shared card:
    15 per-client jobs on one H100 crashed so, docs/results/paper_protocol/cam_fmnist_table1.md), the CPU
    allocator's "can't allocate memory", or Python's MemoryError. Not an OSError (handled apart)."""
    oom = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    return isinstance(e, (oom, MemoryError)) or (isinstance(e, RuntimeError) and "can't allocate memory" in str(e))


def progress_bar(cfg, first_round: int):
    from tqdm import tqdm
    return tqdm(range(first_round, cfg.rounds), desc=f"{cfg.algorithm.name}", unit="round", file=sys.stderr,
                dynamic_ncols=True, initial=first_round, total=cfg.rounds)


def write_diverged(out: Path, cfg, fed, record: RunRecord, error: str, t: int, ids: dict) -> None:
    """A diverged run's rows so far and its `status: diverged` summary; no checkpoint."""
    if record.metrics:
        write_csv(out / METRICS_FILE, metrics_table(record.metrics, ids))
    write_json(out / "summary.json", seal_summary(diverged_summary(cfg, fed, error, t), out, ids["run_id"], [METRICS_FILE]))
    RunRecord.drop_checkpoint(out)

