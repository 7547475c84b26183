"""Fed-CAM Tables 1-2, cell by cell, from per-run CSVs (`fedcluster-report runs-csv`'s rows): each core row's mean ±
std over its seeds beside the paper's mean ± std, and CAM against its base method with a 95 % interval.

Why a CSV and not the run folders: some runs of these tables survive only as rows of a committed CSV (their
folders were lost with a working machine, docs/results/paper_protocol/cam_fmnist_table1.md), and the rest are
archived folders; this reads both the same way, so a cell can hold seeds from each. Runs are keyed by their
folder name (`run_dir`, the config); a config given twice is an error, never averaged twice.

Core rows: FedAvg, IFCA, IFCA-CAM, the matched FeSEM control (3-epoch start-up, distance on the last layer;
compared with the paper's plain FeSEM row) and FeSEM-CAM, each at its defaults; every other configuration is a
sensitivity row. "within"/"outside": our mean against the paper's mean ± 2 of the paper's std (Fed-CAM reports
one std per cell). Differences (IFCA-CAM − IFCA, FeSEM-CAM − the control) use fedcluster.report.compare: paired
by seed where both rows have the same seeds (the same data draws), Welch otherwise.

Devices: a cell may hold seeds run on an H100 and seeds of the same configuration run on this CPU (their
arithmetic differs, their config and data draw do not); a CPU seed is marked "(CPU)" in the seeds column. A
configuration and seed run on both is counted once, with its GPU run (the page's main device), and both runs are
listed under the cell as a device cross-check, so the choice is shown, never silent.

  fedcluster-report cam-cells OUT.md CSV [CSV ...]
"""
import csv
from pathlib import Path

from ..hardware import device_kind
from ..run_records.io import write_text
from .arguments import OneLineParser, refuse, writable_file
from .cells import Reported, Stat, Verdict
from .compare import difference
from .tables.paper_numbers import number, reported

PROG = "fedcluster-report cam-cells"
CONTROL = "distance_on=fc startup_epochs=3"
# (method, options) -> (label, the paper's row it is compared with)
CORE = {("fedavg", ""): ("FedAvg", "fedavg"), ("ifca", ""): ("IFCA", "ifca"),
        ("ifca_cam", ""): ("IFCA-CAM", "ifca_cam"),
        ("fesem", CONTROL): ("FeSEM control (3-epoch start-up, fc distance)", "fesem"),
        ("fesem_cam", ""): ("FeSEM-CAM", "fesem_cam")}
PAIRS = [("ifca_cam", "", "ifca", ""), ("fesem_cam", "", "fesem", CONTROL)]
CELL_NAMES = {"cam_table1": "Table 1", "cam_table2": "Table 2"}


COLUMNS = ("table", "partition", "K", "method", "options", "seed", "micro_acc", "device", "run_dir")   # read by name


def load(paths):
    """Rows of every CSV, one per run folder; a CSV without the columns read, or a folder in two CSVs, stops with a
    one-line error (exit 2)."""
    seen, rows = {}, []
    for path in paths:
        try:
            with open(path, newline="", encoding="utf-8") as f:
                table = list(csv.DictReader(f))
                columns = set(table[0]) if table else set()
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            refuse(PROG, f"{path} cannot be read as a CSV ({type(e).__name__}); allowed: runs-csv's per-run CSVs")
        missing = [c for c in COLUMNS if c not in columns]
        if missing:
            refuse(PROG, f"{path} has no column {missing[0]!r}{' (no rows)' if not table else ''}; allowed: "
                         f"runs-csv's per-run CSVs (columns {', '.join(COLUMNS)})")
        for r in table:
            key = (r["table"], r["run_dir"])
            if key in seen:
                refuse(PROG, f"run {r['run_dir']!r} is in both {seen[key]} and {path}; allowed: each run in one CSV")
            seen[key] = path
            r["options"] = r["options"] or ""
            rows.append(r)
    return rows


def row_device(row) -> str:
    """'cpu' or 'cuda' (fedcluster.hardware.device_kind of the run's recorded device); anything else stops."""
    kind = device_kind(row.get("device"))
    if kind not in ("cpu", "cuda"):
        refuse(PROG, f"run {row['run_dir']!r} has device {row.get('device')!r}; allowed: cpu, cuda")
    return kind


def seed_label(row) -> str:
    return f"{row['seed']} (CPU)" if row_device(row) == "cpu" else str(row["seed"])


def values(rows, column):
    """{seed: value} of a column (percent or ARI), leaving out empty cells."""
    return {int(r["seed"]): float(r[column]) for r in rows if r[column] not in ("", None)}


def stat(vals, style="pct") -> Stat:
    """Mean ± sample std over the seeds (fedcluster.report.cells.Stat, as fedcluster-report shows them)."""
    return Stat.of(vals.values(), style=style)


def paper_cell(table, partition, k, method, metric):
    """The paper's mean ± std for this cell and method (Reported), or None."""
    rows = reported(table, setting=partition, method=method, dataset="fashion_mnist", metric=metric)
    rows = rows[rows["k"].astype(float) == float(k if method not in ("fedavg", "fedprox") else 1)]
    if rows.empty:
        return None
    return Reported(number(rows.iloc[0]["mean"]), number(rows.iloc[0]["std"]), digits=2)


def verdict(ours: Stat, paper) -> str:
    """fedcluster.report.cells.Verdict (our mean against the paper's ± 2 std), in this page's words."""
    v = Verdict.of(ours, paper) if paper is not None else None
    if v is None:
        return ""
    sign = f"{'+' if v.diff >= 0 else '−'}{abs(v.diff):.1f}"
    return f"{sign} (no std)" if v.within is None else f"{sign}, {'within' if v.within else 'outside'}"


def show_paper(paper) -> str:
    return "–" if paper is None else paper.text()


def cell_table(table, partition, k, rows):
    groups, cross = {}, []
    for r in rows:
        group = groups.setdefault((r["method"], r["options"]), [])
        twin = next((o for o in group if o["seed"] == r["seed"]), None)
        if twin is not None and row_device(twin) == row_device(r):
            # two folders of one configuration and seed on one device: never one of them silently
            refuse(PROG, f"{r['method']} ({r['options'] or 'defaults'}) seed {r['seed']} has two "
                             f"runs, {twin['run_dir']!r} and {r['run_dir']!r}; allowed: one run per "
                             f"configuration, seed and device")
        if twin is not None:   # one on each device: the GPU run counts, both are listed below the cell
            gpu, cpu = (twin, r) if row_device(r) == "cpu" else (r, twin)
            cross.append(gpu | {"cpu_micro": cpu["micro_acc"]})
            group[group.index(twin)] = gpu
            continue
        group.append(r)
    order = [g for g in CORE if g in groups] + sorted(g for g in groups if g not in CORE)
    out = [f"### {CELL_NAMES.get(table, table)}, {partition}, K = {k}", "",
           "| method | seeds | micro acc % | paper acc (micro) | − paper | acc % (mean over clients) | F1 % | paper F1 "
           "| ARI |", "|---|---|---|---|---|---|---|---|---|"]
    for method, options in order:
        g = groups[(method, options)]
        label, paper_method = CORE.get((method, options), (f"{method} ({options or 'defaults'}; sensitivity)",
                                                           method))   # a sensitivity row: its method's paper row
        micro = values(g, "micro_acc")
        p_acc = paper_cell(table, partition, k, paper_method, "accuracy")
        p_f1 = paper_cell(table, partition, k, paper_method, "macro_f1")
        seeds = " ".join(seed_label(r) for r in sorted(g, key=lambda r: int(r["seed"]))
                         if r["micro_acc"] not in ("", None))   # the seeds the means are over
        out.append(f"| {label} | {seeds} | {stat(micro)} | {show_paper(p_acc)} | {verdict(stat(micro), p_acc)} | "
                   f"{stat(values(g, 'acc'))} | {stat(values(g, 'macro_f1'))} | {show_paper(p_f1)} | "
                   f"{stat(values(g, 'ari'), 'g')} |")
    out.append("")
    for cam, cam_opt, base, base_opt in PAIRS:
        if (cam, cam_opt) in groups and (base, base_opt) in groups:
            parts = []
            for column, name in (("micro_acc", "micro"), ("acc", "acc"), ("macro_f1", "F1")):
                d = difference(values(groups[(cam, cam_opt)], column), values(groups[(base, base_opt)], column))
                if d is not None:
                    parts.append(f"{name} {d.text()} ({d.test}, {d.n})")
            out.append(f"- {CORE[(cam, cam_opt)][0]} − {CORE[(base, base_opt)][0]}: " + "; ".join(parts))
    for r in sorted(cross, key=lambda r: (r["method"], r["options"], int(r["seed"]))):
        out.append(f"- Device cross-check, {r['method']} ({r['options'] or 'defaults'}) seed {r['seed']}: micro "
                   f"{float(r['micro_acc']):.1f} on the GPU (counted above), {float(r['cpu_micro']):.1f} on this CPU")
    out.append("")
    return out


def parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("csvs", nargs="+")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    missing = [c for c in args.csvs if not Path(c).is_file()]
    if missing:
        refuse(PROG, f"{missing[0]} is not a file; allowed: the per-run CSVs `fedcluster-report runs-csv` writes "
                     "(docs/results/paper_protocol/cam_*per_run*.csv)")
    out = writable_file(PROG, args.out, "a .md file path")
    rows = load(args.csvs)
    cells = {}
    for r in rows:
        cells.setdefault((r["table"], r["partition"], int(r["K"])), []).append(r)
    lines = ["# Fed-CAM Tables 1-2, cell by cell (generated; do not edit)", "",
             f"`fedcluster-report cam-cells {args.out} {' '.join(args.csvs)}`", "",
             "Mean ± sample std over the seeds listed (one seed: its value). Paper: Fed-CAM's mean ± std "
             "(200 clients; ours 20 clients at the paper's per-client scale). '− paper': our micro accuracy minus "
             "the paper's, within or outside its mean ± 2 std. Differences: 95 % interval, paired by seed where "
             "both rows have the same seeds, Welch otherwise; '*' where it excludes 0. Seeds marked (CPU) ran on this "
             "machine's CPU, the others on an H100 (same configuration; a run on both counts once, its GPU run, "
             "and both are listed as a device cross-check).", ""]
    for key in sorted(cells, key=lambda c: (c[0], c[1], c[2])):
        lines += cell_table(*key, cells[key])
    text = "\n".join(lines).rstrip() + "\n"
    write_text(out, text)
    print(f"{PROG}: {len(rows)} runs in {len(cells)} cells -> {out}")
    return 0


if __name__ == "__main__":
    main()
