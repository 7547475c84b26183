"""`fedcluster-report leaderboard SWEEP_DIR`: the clustered-FL leaderboard page (and its figure and CSV) from
the runs of the leaderboard's presets (conf/preset/leaderboard/).

One row per method, one column per setting (data set / partition / K): the local test accuracy
(mean over clients, %) as mean ± the half-width of its 95 % t-interval over seeds, and the ARI of
the final clustering for the methods that cluster. '▲' marks the method that is significantly the
best of its column: its interval against every other method there (paired by seed where both ran
the same seeds, Welch otherwise; fedcluster/report/compare.py) excludes 0. Every cell of the grid
the presets plan (their sweeper parameters; `fedcluster-report leaderboard --plan SWEEP_DIR` writes it as
SWEEP_DIR/leaderboard_plan.tsv, which the page reads where it exists) with fewer than 3 finished seeds is
listed as missing, settings not started included; the time section sums the finished runs' wall times and
estimates the rest from them.

The runs it is made from are committed (docs/results/leaderboard_runs, by scripts/archive_runs.py: result
files only), because the grid takes many working sessions. A session goes on from them like this (each
preset is one part of the grid; Hydra's launchers run its jobs, here two at a time, on SLURM as an array):

  python scripts/archive_runs.py --unpack docs/results/leaderboard_runs /work/runs/leaderboard   # what is committed
  fedcluster -m +preset=leaderboard/fmnist_label_skews_3_4 hydra/launcher=parallel \
      hydra.sweep.dir=/work/runs/leaderboard                              # finished jobs are skipped
  python scripts/archive_runs.py /work/runs/leaderboard docs/results/leaderboard_runs
  fedcluster-report leaderboard docs/results/leaderboard_runs --out docs/leaderboard.md \
      --figure docs/figures/leaderboard.png                               # this page, from the commit

The page, figure and CSV go into SWEEP_DIR (leaderboard.md, .png, .csv) unless --out / --figure / --csv say
where. The CSV holds the tables' cells unrounded, one row per setting, method and metric (tidy, for a reader's
own analysis or a paper's table): the seeds, the mean, the 95 % half-width and whether the cell is marked '▲'.
"""
import argparse
import csv
import math
import os
import statistics
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
from ..run_records.yaml_safe import safe_load

from ..hardware import device_kind
from ..run_records.io import write_csv, write_text
from .compare import MIN_SEEDS, mean_interval, significantly_best
from .runs import ABSENT, discover, show, varying_keys
from .grid import PRESETS, planned_jobs

COMMAND = "fedcluster-report leaderboard"

SEEDS = 3
PLAN = "leaderboard_plan.tsv"
METRIC_NAMES = {"acc": "local_test_accuracy", "ari": "ari", "mb": "mib_per_client"}   # the CSV's `metric` column
# Config keys a cell may hold several values of: the device (a cell may take seeds from this CPU and from a
# GPU: the same configuration, only the arithmetic differs) and where the data files are read from.
POOLED_KEYS = ("hardware.", "dataset.root", "dataset.download")
METRICS = {"acc": ("local test accuracy, mean over clients (%)", lambda s: (s.get("local") or {}).get("local_test_accuracy"), 100.0),
           "ari": ("ARI of the final clustering vs the true clusters", lambda s: s.get("ari"), 1.0),
           # issue 78: what the run sent and received (summary.json's communication; absent in runs from before it)
           "mb": ("MiB per client sent and received over the run (down + up; no best: less is cheaper, not better)",
                  lambda s: traffic_mib(s), 1.0)}
UNRANKED = ("mb",)   # metrics no method is marked best in


def traffic_mib(summary: dict):
    """MiB per client, both directions, over the run (None where the run did not record its traffic)."""
    c = summary.get("communication")
    return None if not c else (c["bytes_down"] + c["bytes_up"]) / c["clients"] / 2 ** 20


def setting_of(run) -> str:
    """A column: data set / partition, with K where the run set it."""
    k = run.summary.get("config", {}).get("num_clusters")
    name = f"{run.summary.get('dataset')}/{run.summary.get('partition')}"
    return name + (f" K={k}" if k not in (None, "?") else "")


def collect(root: Path):
    """{setting: {method: {seed: summary}}} from every finished run under root. A cell averages seeds of
    one configuration only: runs of one method and setting whose configs differ in anything but the seed
    and the device (e.g. `rounds`) stop it with a one-line error naming the key, its values and their
    seeds, as do two runs of one cell and seed (one would otherwise replace the other in the mean unseen)."""
    found = discover(root)
    table, where, runs = {}, {}, {}
    for r in found.runs:
        runs.setdefault((setting_of(r), str(r.summary.get("algorithm"))), []).append(r)
    for (setting, method), members in runs.items():
        for r in members:
            key = (setting, method, r.seed)
            if key in where:
                raise SystemExit(f"{COMMAND}: {method} seed {r.seed} in {setting} has two runs, {where[key]} "
                                 f"and {r.path}; allowed: one run per method, setting and seed (move one out of {root})")
            where[key] = r.path
            table.setdefault(setting, {}).setdefault(method, {})[r.seed] = r.summary
        differ = [k for k in varying_keys(members) if not k.startswith(POOLED_KEYS)]
        if differ:
            raise SystemExit(f"{COMMAND}: {method} in {setting} has runs of different configurations "
                             f"({_values_by_seed(members, differ[0])}); allowed: one configuration per method "
                             f"and setting, seeds apart (move the others out of {root})")
    return table, found


def _values_by_seed(runs, key: str) -> str:
    """'rounds: 3 (seed 2) vs 4 (seeds 0, 1)': a config key's values and the seeds that ran each."""
    seeds = {}
    for r in runs:
        seeds.setdefault(show(r.value(key)), []).append(r.seed)
    parts = [f"{v} (seed{'s' if len(s) > 1 else ''} {', '.join(str(x) for x in sorted(s, key=str))})"
             for v, s in sorted(seeds.items())]
    return f"{key}: {' vs '.join(parts)}"


def read_plan(root: Path) -> dict:
    """{(dataset, partition): {method: planned seeds}} from SWEEP_DIR/leaderboard_plan.tsv; {} without one."""
    path = root / PLAN
    if not path.exists():
        return {}
    plan = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            plan.setdefault((row["dataset"], row["partition"]), {}).setdefault(row["method"], set()).add(int(row["seed"]))
    return plan


def each_run(table: dict):
    """(setting, summary) for every run of the table."""
    for setting, col in table.items():
        for seeds in col.values():
            for summary in seeds.values():
                yield setting, summary


def setting_by_pair(table: dict) -> dict:
    """{(dataset, partition): the table's setting name} for the settings that have runs (the plan
    names a setting by its data set and partition; the table adds K)."""
    return {(x.get("dataset"), x.get("partition")): s for s, x in each_run(table)}


def missing_cells(table: dict, plan: dict) -> list:
    """'setting: n of 3 seeds: methods' for every planned (or started) cell short of its seeds, one
    line per setting and seed count."""
    by_pair = setting_by_pair(table)
    cells = {(by_pair.get(pair, "/".join(pair)), m) for pair, methods in plan.items() for m in methods}
    cells |= {(s, m) for s, col in table.items() for m in col}
    short = {}
    for s, m in sorted(cells):
        n = len(table.get(s, {}).get(m, {}))
        if n < SEEDS:
            short.setdefault((s, n), []).append(m)
    every = {}
    for s, m in cells:
        every.setdefault(s, set()).add(m)
    return [f"{s}: not started ({len(ms)} methods x {SEEDS} seeds)" if n == 0 and set(ms) == every[s]
            else f"{s}: {n} of {SEEDS} seeds: {', '.join(ms)}" for (s, n), ms in sorted(short.items())]


def time_section(table: dict, plan: dict) -> list:
    """The finished runs' wall time, and the rest estimated from the median run time of their setting, or of
    their data set's runs for a setting not started (the median, because a run paused for other work, or sharing the cores with more jobs, keeps
    that time in its wall time)."""
    walls = {s: [x.get("wall_time_s") for seeds in col.values() for x in seeds.values()
                 if x.get("wall_time_s") and device_kind(x.get("device")) == "cpu"]   # a GPU's times would skew this machine's
             for s, col in table.items()}
    timed = sum(len(w) for w in walls.values())
    done = len(list(each_run(table)))
    if not timed:
        return []
    total = sum(sum(w) for w in walls.values())
    out = ["## Time on this machine", "", "| setting | finished runs | minutes per run (median) | run-hours |",
           "|---|---|---|---|"]
    for s in sorted(walls):
        if walls[s]:
            out.append(f"| {s} | {len(walls[s])} | {statistics.median(walls[s]) / 60:.1f} | {sum(walls[s]) / 3600:.2f} |")
    out += ["", f"{timed} finished runs on this CPU took {total / 3600:.1f} run-hours (each run's `wall_time_s`; "
            "runs shared the machine's cores with other jobs, and a run paused meanwhile keeps that time, so these "
            "are not quiet-machine times)."
            + (f" {done - timed} runs on other devices are left out of the times." if done > timed else "")]
    planned = sum(len(seeds) for methods in plan.values() for seeds in methods.values())
    if planned > done:
        overall = statistics.median([w for ws in walls.values() for w in ws])
        by_pair = setting_by_pair(table)
        rest = 0.0
        for pair, methods in plan.items():
            s = by_pair.get(pair)
            same_data = [w for t, ws in walls.items() if t.split("/")[0] == pair[0] for w in ws]
            typical = (statistics.median(walls[s]) if s and walls.get(s)
                       else statistics.median(same_data) if same_data else overall)
            finished = sum(len(table.get(s, {}).get(m, {})) for m in methods) if s else 0
            rest += typical * max(sum(len(v) for v in methods.values()) - finished, 0)
        out.append(f"The {planned - done} planned runs not finished would take about {rest / 3600:.0f} run-hours more "
                   "(an estimate: each setting's median run time so far; for a setting not started, the median of its "
                   "data set's runs, else of all runs).")
    return out + [""]


def revision_section(table: dict) -> list:
    """Which code made the runs (summary.json's versions.revision): a sweep that spans many sessions
    gathers runs of several commits, and a reader should see that, and how many runs each made."""
    count = {}
    for _, x in each_run(table):
        rev = (x.get("versions") or {}).get("revision") or "not recorded"
        count[rev] = count.get(rev, 0) + 1
    listed = ", ".join(f"{rev} ({n} runs)" for rev, n in sorted(count.items()))
    return [f"Code the runs were made with (git revision of fedcluster's checkout; 'not recorded' for runs "
            f"before revisions were recorded, 2026-11-26): {listed}.", ""]


def device_section(table: dict) -> list:
    """Which devices ran the runs: a later session lent a GPU may finish cells this CPU started."""
    devices = Counter(device_kind(x.get("device")) for _, x in each_run(table))
    on = ", ".join(f"{d} ({n} runs)" for d, n in sorted(devices.items()))
    return [f"Devices the runs ran on: {on}." + (" A cell may hold seeds from each (the same configuration; the "
                                                  "device changes only the arithmetic)." if len(devices) > 1 else ""),
            ""]


def own_settings_section(found) -> list:
    """Each method's settings other than its defaults (its runs' `algorithm.*` overrides, and `warmup_rounds`,
    IFCA-CAM's warm-up in runs from before it was the algorithm's own setting), read from the runs themselves, so
    the page says what the grid gave a method beyond its defaults."""
    own, runs = {}, {}
    for r in found.runs:
        method = str(r.summary.get("algorithm"))
        runs[method] = runs.get(method, 0) + 1
        name = ".hydra/overrides.yaml"   # the run's command-line overrides (its folder's, or its pack's copy)
        given = [str(x) for x in safe_load(r.files.read_text(name)) or []] if r.files.is_file(name) else []
        keys = ", ".join(sorted(x for x in given if x.startswith(("algorithm.", "warmup_rounds="))))
        if keys:
            own.setdefault(method, {})[keys] = own.get(method, {}).get(keys, 0) + 1
    if not own:
        return []

    def share(method, keys, n):
        return keys if n == runs[method] else f"{keys} ({n} of its {runs[method]} runs)"
    listed = "; ".join(f"{m}: {' / '.join(share(m, k, n) for k, n in sorted(v.items()))}" for m, v in sorted(own.items()))
    return [f"Settings other than a method's defaults (from its runs' overrides): {listed}. Every other method "
            "runs its defaults.", ""]


def local_training(run) -> str:
    """A run's local solver as the Settings table words it: optimizer, lr (and momentum where it has one),
    batch and the step budget."""
    v = run.value
    steps, momentum = v("train.steps"), v("train.momentum")
    budget = (f"{show(steps)} steps" if steps not in (ABSENT, None)
              else f"{show(v('train.epochs'))} epoch{'s' if v('train.epochs') != 1 else ''}")
    moves = f" momentum {show(momentum)}" if momentum not in (ABSENT, None, 0, 0.0) else ""
    return f"{show(v('train.optimizer'))} lr {show(v('train.lr'))}{moves}, batch {show(v('train.batch_size'))}, {budget}"


def settings_section(table: dict, found) -> list:
    """Each column's protocol, read from its runs' configs (the first run of the column; a column's runs
    share it): clients, rounds, model, each client's training data; and its local training, which a
    method may have of its own (a solver profile gives each baseline its repository's): one solver where
    every run of the column has it, else each with the methods that trained so."""
    first, solvers = {}, {}
    for r in found.runs:
        column = setting_of(r)
        first.setdefault(column, r)
        solvers.setdefault(column, {}).setdefault(local_training(r), set()).add(str(r.summary.get("algorithm")))
    out = ["## Settings", "", "| setting | clients | rounds | model | training samples per client | "
           "test samples per client | local training |", "|---|---|---|---|---|---|---|"]
    for s in sorted(table):
        r = first[s]
        v = r.value
        clients = v("partition.num_clients")
        if clients in (ABSENT, None):           # a partition that sets its own count (flower: null = its data's)
            clients = r.summary.get("num_clients", clients)
        per_client = v("partition.samples_per_client")
        pool, test_pool = v("dataset.train_size"), v("dataset.test_size")
        train = (show(per_client) if per_client not in (ABSENT, None)
                 else f"a pool of {show(pool)} split class by class over the {show(clients)} clients"
                 if pool not in (ABSENT, None) else "–")
        test = v("partition.test_samples_per_client")
        test = (show(test) if test not in (ABSENT, None)
                else f"a pool of {show(test_pool)} split with the same shares" if test_pool not in (ABSENT, None) else "–")
        by_solver = solvers[s]
        local = (next(iter(by_solver)) if len(by_solver) == 1 else
                 "; ".join(f"{solver} ({', '.join(sorted(methods))})"
                           for solver, methods in sorted(by_solver.items(), key=lambda kv: sorted(kv[1]))))
        out.append(f"| {s} | {show(clients)} | {show(v('rounds'))} | {show(v('model.name'))} | {train} | {test} | {local} |")
    return out + [""]


def column_protocols(found) -> dict:
    """{setting: 'model, solver'} from each column's first run: the header names the protocol a column was
    trained under, so columns of two protocols are never read as one (a method's own solver profile is in
    the Settings table; the header names the column's first run's)."""
    out = {}
    for r in found.runs:
        s = setting_of(r)
        if s not in out:
            out[s] = f"{show(r.value('model.name'))}, {local_training(r).split(', batch')[0]}"
    return out


def interval(values, scale):
    """(mean, 95 % half-width), both times `scale`."""
    mean, half = mean_interval(values)
    return mean * scale, half * scale


def best_of(column: dict, value):
    """The method significantly best in a column (higher is better), or None."""
    return significantly_best({m: {s: value(x) for s, x in seeds.items() if value(x) is not None}
                               for m, seeds in column.items()})


def shown(root: Path) -> str:
    """The runs' folder as the page names it: relative to the repository when inside it."""
    try:
        return str(Path(root).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(root)


def render(table: dict, root: Path, figure: str = None, plan: dict = None, found=None, cells_csv: str = None,
           frame: pd.DataFrame = None) -> str:
    settings = sorted(table)
    methods = sorted({m for col in table.values() for m in col})
    out = ["# Clustered-FL leaderboard", "",
           f"<!-- Generated by `{COMMAND} {shown(root)}` from the runs of conf/preset/leaderboard/. -->", "",
           "Every method under one protocol per setting (conf/preset/leaderboard/ says which; each column's header names its "
           "model and local solver, the Settings table the rest). Cells: mean ± the "
           "half-width of the 95 % t-interval over seeds; below 3 seeds the mean alone and (n=seeds), no interval. '▲': significantly the best "
           "of its column (its 95 % interval against every other method there excludes 0; paired by seed, "
           "Welch where the seeds differ). Blank: not run."
           + (f" The cells unrounded, one row per setting, method and metric: [{cells_csv}]({cells_csv})." if cells_csv else ""),
           ""]
    out += settings_section(table, found) if found is not None else []
    out += own_settings_section(found) if found is not None else []
    frame = cells(table) if frame is None else frame   # the CSV's cells, rounded: the two cannot disagree
    protocols = column_protocols(found) if found is not None else {}
    for key, (title, _, scale) in METRICS.items():
        mine = frame[frame["metric"] == METRIC_NAMES[key]]
        cols = [s for s in settings if (mine["setting"] == s).any()]
        if not cols:
            continue
        heads = [f"{c} ({protocols[c]})" if c in protocols else c for c in cols]
        out += [f"## {title}", "", "| method | " + " | ".join(heads) + " |", "|---|" + "---|" * len(cols)]
        shown_cells = {(r.setting, r.method): cell_text(r, scale) for r in mine.itertuples(index=False)}
        for m in methods:
            if any((s, m) in shown_cells for s in cols):
                out.append(f"| {m} | " + " | ".join(shown_cells.get((s, m), "") for s in cols) + " |")
        out.append("")
    out += revision_section(table) + device_section(table)
    missing = missing_cells(table, plan or {})
    if figure:
        out += [f"![accuracy by setting]({figure})", ""]
    out += time_section(table, plan or {})
    out += ["## Missing cells", ""] + ([f"- {x}" for x in missing] if missing else ["None: every cell has 3 seeds."]) + [""]
    if found is not None and found.skipped:   # never dropped silently: each with why
        out += ["## Runs not counted", ""] + [f"- {shown(x.path)}: {x.reason}" for x in found.skipped] + [""]
    return "\n".join(out)


CSV_COLUMNS = ["dataset", "partition", "num_clusters", "setting", "method", "metric", "unit", "seeds", "n",
               "mean", "ci95_half_width", "significantly_best"]


def cell_text(row, scale: float) -> str:
    """One cell of the page: the mean, '± half-width' from 3 seeds on (no interval from fewer), '(n=…)' below 3
    seeds, '▲'."""
    digits = 1 if scale == 100 else 2
    text = f"{row.mean:.{digits}f}"
    if row.n >= MIN_SEEDS and row.ci95_half_width is not None and not pd.isna(row.ci95_half_width):
        text += f" ± {row.ci95_half_width:.{digits}f}"
    if row.n < SEEDS:
        text += f" (n={row.n})"
    return text + (" ▲" if row.significantly_best else "")


def cells(table: dict) -> pd.DataFrame:
    """The tables' cells, unrounded and tidy: one row per setting, method and metric with a value. `seeds`
    lists the seeds averaged ('0;1;2'); `ci95_half_width` is empty where one seed ran; `unit` is percent
    for accuracy and ARI's own scale for the ARI, as on the page."""
    rows = []
    for key, (_, value, scale) in METRICS.items():
        for s in sorted(table):
            best = None if key in UNRANKED else best_of(table[s], value)
            for m in sorted(table[s]):
                got = {seed: value(x) for seed, x in table[s][m].items() if value(x) is not None}
                if not got:
                    continue
                mean, half = interval(got.values(), scale)
                some = next(iter(table[s][m].values()))
                k = some.get("config", {}).get("num_clusters")
                rows.append({"dataset": some.get("dataset"), "partition": some.get("partition"),
                             "num_clusters": k if k not in (None, "?") else None, "setting": s, "method": m,
                             "metric": METRIC_NAMES[key],
                             "unit": {"acc": "percent", "ari": "ari", "mb": "MiB"}[key], "seeds": ";".join(str(x) for x in sorted(got)),
                             "n": len(got), "mean": mean, "ci95_half_width": None if math.isnan(half) else half,
                             "significantly_best": best == m})
    frame = pd.DataFrame(rows, columns=CSV_COLUMNS)
    frame["num_clusters"] = frame["num_clusters"].astype("Int64")   # 5, not 5.0, beside settings without K
    return frame


def draw(table: dict, path: Path, frame: pd.DataFrame = None) -> None:
    """Accuracy per setting, one marker per method with its 95 % interval: the page's cells (`frame`,
    from cells(); made here when not given)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    settings = sorted(table)
    methods = sorted({m for col in table.values() for m in col})
    frame = cells(table) if frame is None else frame
    acc = frame[frame["metric"] == METRIC_NAMES["acc"]]
    shown = {(r.setting, r.method): (r.mean, r.ci95_half_width) for r in acc.itertuples(index=False)}
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(settings)), 5))
    width = 0.8 / max(len(methods), 1)
    cmap = plt.get_cmap("tab20")
    for i, m in enumerate(methods):
        xs, ys, es = [], [], []
        for j, s in enumerate(settings):
            if (s, m) in shown:
                mean, half = shown[(s, m)]
                xs.append(j - 0.4 + (i + 0.5) * width)
                ys.append(mean)
                es.append(0 if half is None or math.isnan(half) else half)
        ax.errorbar(xs, ys, yerr=es, fmt="osD^v"[i % 5], ms=4, capsize=2, color=cmap(i % 20), label=m)
    ax.set_xlim(-0.5, len(settings) - 0.5)
    ax.set_xticks(range(len(settings)))
    ax.set_xticklabels(settings, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("local test accuracy (%), mean ± 95 % CI over seeds")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")   # rotated setting names stay inside the image
    plt.close(fig)


def link_from(page: Path, target: Path) -> str:
    """`target` as the page links it: relative to the page's folder, wherever each lies."""
    return Path(os.path.relpath(target.resolve(), page.resolve().parent)).as_posix()


def write_plan(root: Path) -> Path:
    """SWEEP_DIR/leaderboard_plan.tsv: every job of the presets' grid (dataset, partition, method, seed)."""
    rows = [{"dataset": j["dataset"], "partition": j["partition"], "method": j["algorithm"], "seed": j["seed"]}
            for j in planned_jobs()]
    path = root / PLAN
    write_text(path, pd.DataFrame(rows, columns=["dataset", "partition", "method", "seed"]).to_csv(sep="\t", index=False))
    return path


def parser() -> argparse.ArgumentParser:
    """This subcommand's command line (also what tests read the README's commands with)."""
    p = argparse.ArgumentParser(prog=COMMAND, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep", type=Path)
    p.add_argument("--out", type=Path, default=None, help="default: SWEEP/leaderboard.md")
    p.add_argument("--figure", type=Path, default=None, help="default: SWEEP/leaderboard.png")
    p.add_argument("--csv", type=Path, default=None, help="default: the page's path with .csv")
    p.add_argument("--plan", action="store_true",
                   help=f"only write SWEEP/{PLAN}, the whole grid of the presets {', '.join(PRESETS)}")
    return p


def parse(argv=None) -> argparse.Namespace:
    return parser().parse_args(argv)


def main(argv=None) -> int:
    a = parse(argv)
    if a.plan:
        a.sweep.mkdir(parents=True, exist_ok=True)
        path = write_plan(a.sweep)
        print(f"{COMMAND}: {sum(1 for _ in planned_jobs())} jobs planned -> {path}")
        return 0
    a.out = a.out or a.sweep / "leaderboard.md"
    a.figure = a.figure or a.sweep / "leaderboard.png"
    a.csv = a.csv or a.out.with_suffix(".csv")
    table, found = collect(a.sweep)
    if not table:
        print(f"{COMMAND}: no finished fedcluster run under {a.sweep}", file=sys.stderr)
        return 2
    frame = cells(table)
    write_csv(a.csv, frame)   # the page last: it never links a file not yet written
    draw(table, a.figure, frame)
    write_text(a.out, render(table, a.sweep, link_from(a.out, a.figure), read_plan(a.sweep), found, link_from(a.out, a.csv),
                              frame))
    runs = sum(len(seeds) for col in table.values() for seeds in col.values())
    print(f"{COMMAND}: {runs} runs in {len(table)} settings -> {a.out}, {a.figure}, {a.csv}"
          + (f" ({len(found.skipped)} not counted, listed on the page)" if found.skipped else ""))
    return 0
