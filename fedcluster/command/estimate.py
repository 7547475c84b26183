"""`fedcluster estimate <the arguments of a run or sweep>`: what the run or each job of the sweep will compute
and how long it will take here, before anything runs or is written (no run directory).

For each job: the FLOPs its rounds do, counted from its model's layers and its protocol (cost/count.py: training,
scoring, evaluation), on the run as built (its data read and partitioned, its model made, nothing trained), and
its time at this machine's measured rates (cost/rates.py: a short calibration per model, kept per machine). Jobs
that differ only in their seed are counted once (a seed moves sizes by a few samples). Printed per method and in
total, in hours one job at a time and in CPU-hours (hours x the threads a job uses); `--json`: one object per
method and one for the total. `--recalibrate`: measure the rates again."""
import json
import sys
from collections import OrderedDict
from pathlib import Path
from typing import List

USAGE = "usage: fedcluster estimate [--json] [--recalibrate] [-m] [key=value ...]   e.g. fedcluster estimate +preset=clove/label_skews_3_4"


def job_cost(cfg, kept: dict, recalibrate: bool) -> dict:
    """FLOPs and seconds of one job (`kept`: the rates known, updated with any measured)."""
    import torch
    from ..assemble import build, choose_engine
    from ..data.budget import rows_per_chunk
    from ..cost.count import run_work
    from ..cost.flops import sample_flops
    from ..cost.rates import machine_key, measure, measure_method, method_key, model_key, rates_path
    hw, fed, alg, trainer = build(cfg)
    engine = choose_engine(cfg.engine, fed.model, hw.torch_device, cfg.train.batch_size)
    fed.batched_forward = engine == "batched"
    chunk = rows_per_chunk(hw.chunk, alg.training_rows(fed.num_clients), sum(p.numel() for p in fed.model.parameters()),
                           cfg.train.optimizer, hw.torch_device, torch.empty(0, dtype=hw.torch_dtype).element_size())
    alg.setup(fed)
    flops = sample_flops(fed.build_model, tuple(fed.data.in_shape))
    work = run_work(cfg, fed, alg, trainer, flops)
    machine, model = machine_key(hw.torch_device), model_key(cfg, fed, engine)
    known = kept.setdefault(machine, {})
    rates = None if recalibrate else known.get(model)
    if rates is None:
        print(f"fedcluster estimate: measuring {model} on {machine} (once: kept in {rates_path()})", file=sys.stderr,
              flush=True)
        rates = known[model] = measure(cfg, fed, trainer, engine, chunk, flops)
    method = f"{model}; {method_key(cfg)}"
    rounds = None if recalibrate else known.get(method)
    if rounds is None:   # the method's own rounds: their FLOP/s
        print(f"fedcluster estimate: measuring {cfg.algorithm.name}'s rounds", file=sys.stderr, flush=True)
        rounds = known[method] = measure_method(cfg, fed, trainer, engine, chunk, flops, rates, work)
    seconds = (work.train + work.score) / rounds.train + work.evaluate / rates.forward
    threads = 1 if hw.torch_device.type == "cuda" else torch.get_num_threads()
    return {"method": str(cfg.algorithm.name), "flops": work.total, "train_flops": work.train,
            "score_flops": work.score, "evaluate_flops": work.evaluate, "seconds": seconds, "threads": threads,
            "device": hw.torch_device.type, "machine": machine, "model": model}


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}" if seconds >= 36 else f"{seconds / 3600:.4f}"


def table(rows: List[dict]) -> str:
    by = OrderedDict()
    for r in rows:
        by.setdefault(r["method"], []).append(r)
    lines = [f"{'method':<16} {'jobs':>5} {'TFLOP':>10} {'hours':>8} {'CPU-hours':>10}"]
    for method, rs in by.items():
        cpu = sum(r["seconds"] * r["threads"] for r in rs if r["device"] == "cpu")
        lines.append(f"{method:<16} {len(rs):>5} {sum(r['flops'] for r in rs) / 1e12:>10.2f} "
                     f"{_hours(sum(r['seconds'] for r in rs)):>8} {_hours(cpu):>10}")
    total = sum(r["seconds"] for r in rows)
    cpu = sum(r["seconds"] * r["threads"] for r in rows if r["device"] == "cpu")
    lines.append(f"{'total':<16} {len(rows):>5} {sum(r['flops'] for r in rows) / 1e12:>10.2f} {_hours(total):>8} "
                 f"{_hours(cpu):>10}")
    machines = sorted({r["machine"] for r in rows})
    lines.append(f"at the rates measured on {', '.join(machines)}, one job at a time"
                 + ("" if any(r["device"] == "cuda" for r in rows) else "; no GPU rate is recorded here"))
    return "\n".join(lines)


def estimate(arguments: List[str], conf: Path, recalibrate: bool = False) -> tuple:
    """(whether it is a sweep, one cost per job)."""
    from .show import checked_config
    from .sweep_jobs import job_overrides
    from ..cost.rates import load, save
    sweep, jobs = job_overrides(arguments, conf)
    kept, costs, seen = load(), [], {}
    for job in jobs:
        key = tuple(sorted(o for o in job if not o.startswith("seed=")))
        if key not in seen:
            seen[key] = job_cost(checked_config(job, conf), kept, recalibrate)
            recalibrate = False   # once per estimate: every later job of the same model reads what was measured
        costs.append(seen[key])
    save(kept)
    return sweep, costs


def main(args: List[str], conf: Path) -> int:
    from ..config.composition import refusal
    as_json, recalibrate = "--json" in args, "--recalibrate" in args
    arguments = [a for a in args if a not in ("--json", "--recalibrate")]
    bad = next((a for a in arguments if a.startswith("-") and a not in ("-m", "--multirun")), None)
    if bad is not None:
        print(f"fedcluster: error: {bad} is not an option of estimate ({USAGE})", file=sys.stderr)
        return 2
    try:
        _, costs = estimate(arguments, conf, recalibrate)
    except Exception as e:   # noqa: BLE001 -- what the run would refuse, in its one line (composition.refusal)
        line = refusal(e, conf)
        if line is None:
            raise
        print(f"fedcluster: error: {line}", file=sys.stderr)
        return 2
    if as_json:
        for c in costs:
            print(json.dumps(c))
    else:
        print(table(costs))
    return 0
