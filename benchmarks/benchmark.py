"""Seconds per round of fedcluster (its chosen engine) beside a plain reference loop written the
way peer libraries write one, for the papers' workloads, on a quiet machine and beside busy
neighbour processes.

Workloads (built from the presets where one exists, so a preset change carries over):
  (a) FedSoft Table 1 synthetic (+preset=fedsoft/table1_synthetic, mix 10:90): 100 clients,
      linear model, App. C settings (Adam 5e-3, 10 local epochs, batch 10, K=60 selections,
      tau=2: importance scoring every 2 rounds).
  (b) CLoVE images (+preset=clove/images, label skew 2, CLoVE): 25 clients x 500 Fashion-MNIST
      images, LeNet, Adam 1e-3, batch 100, 1 epoch, K=5; every round each client's loss on each
      of the 5 models (scoring).
  (c) Fed-CAM Table 1 (+preset=cam/table1 model=lenet, cluster-wise Dirichlet, K=10, IFCA): 200 clients over
      all 60k Fashion-MNIST training images, SGD 1e-3 momentum 0.9, batch 32, 10 local steps;
      every round the 10 models score all 60k images (assignment).
  (d) PFLlib's FedAvg workload (no preset): Fashion-MNIST, 20 clients (Dirichlet 0.1 label skew
      over all 60k training images), batch 10, 1 local epoch, SGD 0.005, LeNet; `d_cnn` the same
      with the letters CNN (conv 32/64 @5x5, FC 512), the closest of our models to PFLlib's FedAvgCNN.

A round is timed whole: local training, scoring, aggregation, and one evaluation per `--rounds`
rounds: seconds per round = (wall(1 + R rounds) - wall(1 round)) / R, after an untimed 1-round
warm-up run (start-up and first-call costs left out). The reference loop does the same work
(same clients, samples, steps, scoring passes) with one nn.Module per client, torch.optim and a
tensor batch loop. Each measurement runs in a fresh process: fedcluster's as the `fedcluster`
command runs (fedcluster imported before torch, so its process defaults apply: fedcluster/threads.py),
the reference's as a peer library runs (torch first, none of fedcluster's settings).

`--load N` measures every workload twice, side by side: quiet, then beside N busy neighbour
processes (each one pure-Python busy loop, the way other users' jobs share a workstation or a
cluster node), and prints the loaded/quiet slowdown of each and the slowdown a fair share of the
cores would give: with T threads, N neighbours and C cores, min(T, C) / min(T, C*T/(T+N))
(2.0 for 2 threads, 2 neighbours, 2 cores). The reference under load is stopped after
`--reference-cap` seconds (its spin-waiting threads can make it 30x slower) and reported as such.

`--smoke` runs every workload at tiny sizes (1 timed round, a few clients) with the reference and
the load machinery: a CI test runs it, so a workload that stops composing or running fails there.
A full run measures each workload in a fresh process of its own; --smoke measures all of them in one
process per role and condition (its timings mean nothing, and CI would pay a start-up for each).

Usage:
  python benchmarks/benchmark.py [--json] [--only b,c] [--rounds 4] [--device cpu|cuda] [--load 2]
  python benchmarks/benchmark.py --smoke --data-root DIR     # what CI runs, on fake data (and --load 1 on b,d)
  python benchmarks/benchmark.py --only b,c --src ../old-checkout      # another checkout's fedcluster
  python benchmarks/benchmark.py --markdown docs/results/perf/benchmark.jsonl   # docs/performance.md's tables from JSON
Each workload prints (with --json, one JSON object per line) seconds per round of fedcluster and
of the reference, their ratio `speedup_vs_reference`, training samples per second, the engine
fedcluster chose, the device, threads and OpenMP wait policy; with --load, the loaded figures.
A workload that fails is one line on stderr naming it; the others go on; the exit status is 1."""
import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONF = Path.cwd() / "conf" if os.environ.get("FEDCLUSTER_BENCH_SRC") else ROOT / "conf"   # --src: that checkout's

FMNIST = ["dataset=fashion_mnist", "dataset.distributions=[{rotation:0}]", "model=lenet"]
PFLLIB = FMNIST + ["algorithm=fedavg", "partition=dirichlet", "partition.num_clients=20", "partition.alpha=0.1",
                   "train.optimizer=sgd", "train.lr=0.005", "train.batch_size=10", "train.epochs=1",
                   "eval_local_train=false"]
# key: (reference kind, preset or None, overrides that pick one job of it, extra overrides of --smoke)
WORKLOADS = {
    "a": ("fedsoft", "fedsoft/table1_synthetic", ["partition=mix_10_90"],
          ["partition.num_clients=10", "train.epochs=1", "algorithm.selection_size=6"]),
    "b": ("clove", "clove/images", ["partition=label_skew2", "algorithm=clove"],
          ["partition.samples_per_client=20", "partition.test_samples_per_client=10"]),
    "c": ("ifca", "cam/table1", ["dataset=fashion_mnist", "partition=cluster_dirichlet", "num_clusters=10",
                                 "algorithm=ifca", "model=lenet"],   # LeNet: the workload measured since issue 36
          ["partition.num_clients=20", "train.steps=2"]),
    "d": ("fedavg", None, PFLLIB, ["partition.num_clients=4", "train.steps=3"]),
    "d_cnn": ("fedavg", None, PFLLIB + ["model=letters_cnn"], ["partition.num_clients=4", "train.steps=3"]),
    # Fed-CAM's FedAvg at the per-client scale, the FedAvg paper's CNN (1.66M parameters), batch 32
    "e": ("fedavg", "cam/fmnist/table1", ["dataset=fashion_mnist", "partition=cluster_dirichlet", "num_clusters=10",
                                          "partition.num_clients=20", "dataset.train_size=6000",
                                          "dataset.test_size=1000", "algorithm=fedavg"],
          ["partition.num_clients=4", "num_clusters=2", "train.steps=2"]),
}
COMMON = ["progress=false", "plots=false", "checkpoint_every=0"]
SPIN = "while True: pass"


def overrides(key: str, smoke: bool = False, extra=()) -> list:
    """The workload's overrides: its preset and job, the device's data root, --smoke sizes, extras."""
    _, preset, job, tiny = WORKLOADS[key]
    out = ([f"+preset={preset}", "hydra.mode=RUN"] if preset else []) + list(job)
    if os.environ.get("FEDCLUSTER_DATA_ROOT") and WORKLOADS[key][0] != "fedsoft":   # Fashion-MNIST there (GPU machine, CI)
        out.append(f"dataset.root={os.environ['FEDCLUSTER_DATA_ROOT']}")
    return out + (list(tiny) if smoke else []) + list(extra)


def compose(overrides):
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from fedcluster.config.store import register_schemas
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides))


def seconds_per_round(overrides, rounds: int, eval_every: int) -> dict:
    """(wall(1 + R rounds) - wall(1 round)) / R of fedcluster's own loop for a config, after an
    untimed 1-round warm-up run (first-call costs)."""
    import copy
    from fedcluster.runner import run
    walls, summary = {}, None
    composed = compose(list(overrides) + COMMON + [f"eval_every={eval_every}"])   # once: 0.4 s a compose
    for r in (0, 1, 1 + rounds):          # r=0: the warm-up run
        cfg = copy.deepcopy(composed)
        cfg.rounds = max(r, 1)
        with tempfile.TemporaryDirectory() as out:
            tick = time.perf_counter()
            summary = run(cfg, out)
            walls[r] = time.perf_counter() - tick
    return {"seconds_per_round": (walls[1 + rounds] - walls[1]) / rounds, "engine": summary["engine"],
            "threads": summary["threads"], "omp_wait_policy": summary.get("omp_wait_policy")}


def describe(key: str, smoke: bool, extra) -> dict:
    """The workload's title from its composed and built config (so it follows the presets), and
    the training samples one round visits (every client trains every round in these workloads)."""
    import torch
    from fedcluster.assemble import build
    cfg = compose(overrides(key, smoke, extra) + COMMON)
    _, fed, _, _ = build(cfg)
    data, t = fed.data, cfg.train
    K = cfg.num_clusters or data.num_true_clusters or data.num_distributions
    preset = WORKLOADS[key][1]
    title = (f"{cfg.algorithm.name}, {cfg.dataset.name} {cfg.partition.name}, {data.num_clients} clients, "
             f"{cfg.model.name}" + (f", K={K}" if WORKLOADS[key][0] != "fedavg" else "")
             + (f" (preset {preset})" if preset else ""))
    n = data.train.n
    samples = int(torch.clamp(n, max=t.batch_size).sum()) * t.steps if t.steps else int(n.sum()) * t.epochs
    return {"title": title, "samples_per_round": samples}


# -- the reference: one nn.Module per client, torch.optim, a tensor batch loop ----------------------
def _optimizer(t, params):
    import torch
    if t.optimizer == "adam":
        return torch.optim.Adam(params, lr=t.lr, weight_decay=t.weight_decay)
    return torch.optim.SGD(params, lr=t.lr, momentum=t.momentum, weight_decay=t.weight_decay)


def _loss(task, out, y):
    import torch.nn.functional as F
    return F.mse_loss(out, y) if task == "regression" else F.cross_entropy(out, y)


def _local_train(model, x, y, t, task, prox=None, opt=None, g=None):
    """`t.epochs` epochs (or `t.steps` steps) of mini-batches of x, y; prox = [(coeff, center params)]."""
    import torch
    opt = opt or _optimizer(t, model.parameters())
    n = len(x)
    if t.steps:
        order = torch.cat([torch.randperm(n, generator=g) for _ in range(-(-t.steps * t.batch_size // n))])
        batches = [order[i * t.batch_size:(i + 1) * t.batch_size] for i in range(t.steps)]
    else:
        batches = [b for _ in range(t.epochs) for b in torch.randperm(n, generator=g).split(t.batch_size)]
    for idx in batches:
        opt.zero_grad()
        loss = _loss(task, model(x[idx]), y[idx])
        if prox:
            for coeff, center in prox:
                loss = loss + 0.5 * coeff * sum(((p - c) ** 2).sum() for p, c in zip(model.parameters(), center))
        loss.backward()
        opt.step()
    return n


def _average(models, weights):
    import torch
    w = torch.tensor(weights, dtype=torch.float32)
    w = w / w.sum()
    states = [m.state_dict() for m in models]
    return {k: sum(wi * s[k] for wi, s in zip(w, states)) for k in states[0]}


def _client_loss(model, x, y, task, batch):
    import torch
    with torch.no_grad():
        return sum(float(_loss(task, model(x[i:i + batch]), y[i:i + batch])) * len(x[i:i + batch])
                   for i in range(0, len(x), batch)) / max(len(x), 1)


def reference_seconds_per_round(key: str, rounds: int, device: str, smoke: bool = False, extra=()) -> dict:
    """The same rounds as fedcluster's, written as a peer library writes them."""
    import copy
    import torch
    from fedcluster.assemble import build
    cfg = compose(overrides(key, smoke, extra) + COMMON + [f"hardware={device}"])
    hw, fed, _, _ = build(cfg)
    data, t, task = fed.data, cfg.train, fed.data.task
    tr, te = data.train, data.local_test
    clients = [(tr.x[k, :int(tr.n[k])], tr.y[k, :int(tr.n[k])]) for k in range(data.num_clients)]
    tests = [(te.x[k, :int(te.n[k])], te.y[k, :int(te.n[k])]) for k in range(data.num_clients)]
    kind = WORKLOADS[key][0]
    K = cfg.num_clusters or data.num_true_clusters or data.num_distributions
    g = torch.Generator().manual_seed(0)
    new = lambda: fed.build_model().to(hw.torch_device)
    centers = [new() for _ in range(K if kind != "fedavg" else 1)]
    local = [copy.deepcopy(centers[0]) for _ in clients] if kind == "fedsoft" else None
    local_opts = [_optimizer(t, m.parameters()) for m in local] if local else None
    u = torch.full((len(clients), K), 1.0 / K)
    trained = 0

    def one_round(r, evaluate):
        nonlocal trained
        if kind in ("ifca", "clove"):                      # every client scores every model (assignment)
            losses = torch.tensor([[_client_loss(m, x, y, task, t.batch_size) for m in centers] for x, y in clients])
            assign = losses.argmin(1).tolist()
        elif kind == "fedsoft" and r % cfg.algorithm.tau == 0:   # importance weights: per-sample losses
            with torch.no_grad():
                for k, (x, y) in enumerate(clients):
                    per = torch.stack([(centers[s](x) - y) ** 2 for s in range(K)])
                    u[k] = torch.bincount(per.argmin(0), minlength=K).float() / len(x)
        results = []
        for k, (x, y) in enumerate(clients):
            if kind == "fedsoft":
                prox = [(cfg.algorithm.lam * float(u[k, s]), [p.detach() for p in centers[s].parameters()])
                        for s in range(K)]
                trained += _local_train(local[k], x, y, t, task, prox, local_opts[k], g)
                continue
            model = copy.deepcopy(centers[assign[k]] if kind in ("ifca", "clove") else centers[0])
            trained += _local_train(model, x, y, t, task, g=g)
            results.append(model)
        if kind == "fedsoft":
            for s in range(K):
                centers[s].load_state_dict(_average(local, (u[:, s] + 1e-12).tolist()))
        elif kind in ("ifca", "clove"):
            for j in range(K):
                members = [i for i, a in enumerate(assign) if a == j]
                if members:
                    centers[j].load_state_dict(_average([results[i] for i in members],
                                                        [len(clients[i][0]) for i in members]))
        else:
            centers[0].load_state_dict(_average(results, [len(x) for x, _ in clients]))
        if evaluate:                                       # each client's model on its held-out test data
            for k, (x, y) in enumerate(tests):
                model = local[k] if kind == "fedsoft" else centers[assign[k] if kind in ("ifca", "clove") else 0]
                _client_loss(model, x, y, task, 1000)

    one_round(0, evaluate=True)                            # warm-up round, not timed (as the 1-round run)
    trained = 0
    tick = time.perf_counter()
    for r in range(1, 1 + rounds):
        one_round(r, evaluate=r == rounds)
    if hw.torch_device.type == "cuda":
        torch.cuda.synchronize()
    return {"seconds_per_round": (time.perf_counter() - tick) / rounds, "samples_per_round": trained / rounds,
            "threads": torch.get_num_threads()}


# -- the parent: fresh processes, neighbours, rows ----------------------------------------------------
class Failed(Exception):
    """A measurement's process failed: its last stderr line."""


def measure(role: str, keys, args, timeout=None) -> dict:
    """One fresh process (role fedcluster | reference) measuring `keys` in turn: {key: the JSON it printed,
    or the Failed naming why}. A full run measures one workload a process; --smoke puts all of them in one
    (its sizes time nothing worth isolating, and CI would pay a process start-up per measurement)."""
    cmd = [sys.executable, __file__, "--child", role, "--only", ",".join(keys), "--rounds", str(args.rounds),
           "--device", args.device, "--engine", args.engine] + (["--smoke"] if args.smoke else []) \
        + (["--libgomp-default"] if getattr(args, "libgomp_default", False) else [])
    for o in args.override:
        cmd += ["--override", o]
    env, cwd = dict(os.environ), None
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    if args.src:
        env.update(PYTHONPATH=str(Path(args.src).resolve()), FEDCLUSTER_BENCH_SRC="1")
        cwd = args.src
    try:
        out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {k: {"stopped_after_s": timeout} for k in keys}
    got = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            got[row.pop("workload")] = Failed(row["failed"]) if "failed" in row else row
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    crashed = Failed(lines[-1] if lines else f"exit status {out.returncode}")
    return {k: got.get(k, crashed) for k in keys}   # a key the process never reached: how it ended


def measured(result):
    """A measurement's JSON, or its Failed raised."""
    if isinstance(result, Failed):
        raise result
    return result


@contextlib.contextmanager
def neighbours(n: int):
    """n busy processes beside the measurement (each a pure-Python busy loop), stopped after it."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(n)]
    try:
        time.sleep(0.5 if n else 0)
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def ratio(a: float, b: float):
    """a / b to 2 decimals; None where either is not positive (at --smoke sizes a difference of two
    wall times can come out at or below zero: there is no speed to compare)."""
    return round(a / b, 2) if a > 0 and b > 0 else None


def fair_share_slowdown(threads: int, neighbours: int, cores: int) -> float:
    """Loaded/quiet time if the OS gave each runnable thread an equal share of the cores."""
    quiet = min(threads, cores)
    loaded = min(threads, cores * threads / (threads + neighbours)) if threads + neighbours > cores else quiet
    return round(quiet / loaded, 2)


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def workload_rows(keys, args):
    """(key, its row or the Failed that stopped it) for each of `keys`, measured by role and condition
    (quiet, then beside --load neighbours), each condition's keys in one process per role (measure). A
    workload whose own measurement failed is measured no further: its row is that failure."""
    ours = measure("fedcluster", keys, args)
    ran = [k for k in keys if not isinstance(ours[k], Failed)]
    refs = {} if args.no_reference or not ran else measure("reference", ran, args)
    loaded, loaded_refs = {}, {}
    if args.load and ran:
        with neighbours(args.load):
            loaded = measure("fedcluster", ran, args)
            ran = [k for k in ran if not isinstance(loaded[k], Failed)]
            if not args.no_reference and ran:
                loaded_refs = measure("reference", ran, args, timeout=args.reference_cap)
    for k in keys:
        try:
            yield k, workload_row(k, args, ours[k], refs.get(k), loaded.get(k), loaded_refs.get(k))
        except Failed as e:
            yield k, e


def workload_row(key: str, args, ours, ref, loaded, loaded_ref) -> dict:
    ours = measured(ours)
    row = {"workload": key, "title": ours["title"], "device": args.device, "cpu": cpu_name(),
           "cores": os.cpu_count(), "threads": ours["threads"], "omp_wait_policy": ours["omp_wait_policy"],
           "torch": ours["torch"], **({"gpu": ours["gpu"]} if "gpu" in ours else {}),
           "rounds_timed": args.rounds, "engine": ours["engine"],
           "seconds_per_round": round(ours["seconds_per_round"], 4)}
    if args.src:
        row["source"] = str(args.src)
    n = ours["samples_per_round"]
    row["samples_per_round"] = n
    row["samples_per_second"] = round(n / ours["seconds_per_round"], 1) if ours["seconds_per_round"] > 0 else None
    if not args.no_reference:
        ref = measured(ref)
        row["reference_seconds_per_round"] = round(ref["seconds_per_round"], 4)
        row["speedup_vs_reference"] = ratio(ref["seconds_per_round"], ours["seconds_per_round"])
    if args.load:
        loaded = measured(loaded)
        ref = None if args.no_reference else measured(loaded_ref)
        row["load_neighbours"] = args.load
        row["fair_share_slowdown"] = fair_share_slowdown(ours["threads"], args.load, os.cpu_count())
        row["loaded_seconds_per_round"] = round(loaded["seconds_per_round"], 4)
        row["slowdown_under_load"] = ratio(loaded["seconds_per_round"], ours["seconds_per_round"])
        if ref and "stopped_after_s" in ref:
            row["reference_loaded_stopped_after_s"] = ref["stopped_after_s"]
        elif ref:
            row["reference_loaded_seconds_per_round"] = round(ref["seconds_per_round"], 4)
            row["reference_slowdown_under_load"] = ratio(ref["seconds_per_round"], row["reference_seconds_per_round"])
            row["speedup_vs_reference_loaded"] = ratio(ref["seconds_per_round"], loaded["seconds_per_round"])
    return row


def child(args) -> None:
    """The measurements of this fresh process, one workload after another (--only); one JSON line each, with
    `failed` (the error's last line) for a workload that raised: the others go on."""
    import traceback
    if args.child == "fedcluster":
        if args.libgomp_default:
            import torch  # noqa: F401  first: libgomp keeps its own wait policy (benchmarks/contention.py)
        import fedcluster  # noqa: F401  first: its process defaults (fedcluster/threads.py) apply before torch loads
    import torch         # the reference: first, as a peer library's process, without fedcluster's defaults
    if args.threads:
        torch.set_num_threads(args.threads)
    for key in [k for k in args.only.split(",") if k]:
        try:
            print(json.dumps({"workload": key, **one_measurement(key, args)}), flush=True)
        except Exception:   # noqa: BLE001 -- named in one line by the parent; the next workload goes on
            lines = [ln for ln in traceback.format_exc().strip().splitlines() if ln.strip()]
            print(lines[-1], file=sys.stderr, flush=True)
            print(json.dumps({"workload": key, "failed": lines[-1]}), flush=True)


def one_measurement(key: str, args) -> dict:
    import torch
    extra = args.override
    if args.child == "fedcluster":
        info = describe(key, args.smoke, extra)
        ov = overrides(key, args.smoke, extra) + [f"hardware={args.device}", f"engine={args.engine}"]
        got = seconds_per_round(ov, args.rounds, args.rounds)
        gpu = torch.cuda.get_device_name() if args.device.startswith("cuda") else None
        return {**info, **got, "torch": torch.__version__, **({"gpu": gpu} if gpu else {})}
    return reference_seconds_per_round(key, args.rounds, args.device, args.smoke, extra)


def markdown(path: Path) -> str:
    """docs/performance.md's tables (its first section) from the benchmark's JSON lines (quiet, and loaded where measured)."""
    rows = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    first, path = rows[0], path.resolve()
    shown = path.relative_to(ROOT) if ROOT in path.parents else path
    flags = (f" --device {first['device']}" if first["device"] != "cpu" else "") \
        + (f" --load {first['load_neighbours']}" if "load_neighbours" in first else "") + f" --rounds {first['rounds_timed']}"
    where = (f"{first.get('gpu', 'a CUDA GPU')} beside {first['cpu']}" if first["device"] != "cpu"
             else f"{first['cpu']}, {first['cores']} cores, {first['threads']} threads, OpenMP wait policy "
                  f"{first['omp_wait_policy']}")
    out = [f"`python benchmarks/benchmark.py --json{flags}` (`{shown}`): {where}, torch {first['torch']}.", "",
           "| workload | engine | fedcluster s/round | reference loop s/round | fedcluster vs reference |",
           "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| ({r['workload']}) {r['title']} | {r['engine']} | {r['seconds_per_round']:.3f} | "
                   f"{r['reference_seconds_per_round']:.3f} | {r['speedup_vs_reference']:.2f}x |")
    if "load_neighbours" in first:
        out += ["", f"The same, measured beside {first['load_neighbours']} busy neighbour processes (a fair share of "
                f"the cores: {first['fair_share_slowdown']:.1f}x slower than quiet):", "",
                "| workload | fedcluster loaded s/round | fedcluster slowdown | reference loaded s/round | "
                "reference slowdown | fedcluster vs reference, loaded |", "|---|---|---|---|---|---|"]
        for r in rows:
            if "reference_loaded_seconds_per_round" in r:
                ref = (f"{r['reference_loaded_seconds_per_round']:.3f} | {r['reference_slowdown_under_load']:.2f}x | "
                       f"{r['speedup_vs_reference_loaded']:.2f}x")
            else:
                ref = f"stopped after {r['reference_loaded_stopped_after_s']:.0f} s | - | -"
            out.append(f"| ({r['workload']}) | {r['loaded_seconds_per_round']:.3f} | "
                       f"{r['slowdown_under_load']:.2f}x | {ref} |")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="a,b,c,d,e", help="comma-separated workloads from " + ",".join(WORKLOADS))
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true")
    p.add_argument("--engine", default="auto")
    p.add_argument("--threads", type=int, help="CPU threads of each measured process (default: torch's)")
    p.add_argument("--load", type=int, default=0, help="also measure beside this many busy neighbour processes")
    p.add_argument("--reference-cap", type=float, default=600.0, help="seconds after which the loaded reference stops")
    p.add_argument("--smoke", action="store_true", help="every workload at tiny sizes, 1 timed round (CI)")
    p.add_argument("--data-root", help="where Fashion-MNIST is (sets FEDCLUSTER_DATA_ROOT)")
    p.add_argument("--override", action="append", default=[], help="an extra override for every workload")
    p.add_argument("--no-reference", action="store_true", help="time fedcluster only")
    p.add_argument("--src", help="time the fedcluster of this checkout instead (no reference)")
    p.add_argument("--markdown", type=Path, help="print docs/performance.md's tables from this JSON-lines file and stop")
    p.add_argument("--child", choices=["fedcluster", "reference"], help=argparse.SUPPRESS)
    p.add_argument("--libgomp-default", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.markdown:
        print(markdown(args.markdown), end="")
        return
    if args.data_root:
        os.environ["FEDCLUSTER_DATA_ROOT"] = str(Path(args.data_root).resolve())
    if args.smoke:
        args.rounds = 1
        args.only = ",".join(WORKLOADS) if args.only == p.get_default("only") else args.only
    if args.child:
        return child(args)
    keys = [k for k in args.only.split(",") if k]
    bad = [k for k in keys if k not in WORKLOADS]
    if bad:
        sys.exit(f"benchmark.py: unknown workload(s) {bad}; allowed: {list(WORKLOADS)}")
    if args.load < 0 or args.rounds < 1:
        sys.exit(f"benchmark.py: --load {args.load} / --rounds {args.rounds}: allowed --load >= 0, --rounds >= 1")
    args.no_reference = args.no_reference or bool(args.src)
    failed = []
    batches = [keys] if args.smoke else [[k] for k in keys]   # measure(): one process for all, or one each
    for k, row in (pair for batch in batches for pair in workload_rows(batch, args)):
        if isinstance(row, Failed):
            print(f"benchmark.py: workload ({k}) failed: {row}", file=sys.stderr, flush=True)
            failed.append(k)
            continue
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"({k}) {row['title']}: " + ", ".join(f"{a}={b}" for a, b in row.items()
                                                        if a not in ("workload", "title")), flush=True)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
