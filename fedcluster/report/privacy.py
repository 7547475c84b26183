"""What client-level DP costs each method, from finished runs (issue 78): `fedcluster-report privacy FOLDER... --out
DIR` writes DIR/privacy_table.md and three figures, and prints the table.

- The table: each method's final local test accuracy (mean over clients, %, mean ± the half-width of the 95 %
  t-interval over seeds) at each privacy level, the epsilon each level spent (summary.json `privacy.epsilon`; a run
  without a mechanism is epsilon = inf), the noise multiplier, and the megabytes a client sent and received.
- privacy_records.json: what the table and figures read of each run (`--records` renders them again from it,
  without the runs).
- accuracy_vs_epsilon.png: that accuracy against epsilon, one line per method.
- accuracy_vs_megabytes.png: accuracy at each evaluated round against the megabytes per client so far (both
  directions, communication.csv), one line per method and privacy level.
- cluster_size_vs_accuracy.png: for each method with more than one model, every model of the last round as a point:
  how many clients chose it (assignments.csv, the largest weight) against their mean accuracy, coloured by epsilon.
  Under DP-FedAvg's fixed denominator a model's signal grows with its clients and its noise does not.

Runs are grouped by method, mechanism and the noise multiplier they ran with; a level's epsilon is its runs' (one
value: the same rate, noise and rounds spend the same). A client_dp run without noise (clipping and Poisson
participation alone, epsilon inf) is a row of its own, left out of the figures."""
import json
import math
import sys
from io import StringIO
from pathlib import Path

from .arguments import OneLineParser, refuse
from .compare import mean_interval
from .runs import discover
from ..run_records.io import save_figure, write_text
from .sections import traffic_curve

PROG = "fedcluster-report privacy"

KEY = "local_test_accuracy"


def level_of(summary: dict):
    """(noise multiplier, epsilon, mechanism) of a run: (0, inf, "none") without a mechanism; the mechanism is
    "client_dp, clip S" (with noise 0, clipping alone: what clipping and Poisson participation cost without noise)."""
    privacy = summary.get("privacy")
    if privacy is None:
        return 0.0, math.inf, "none"
    clip = privacy["clip_norm"]
    return privacy["noise_multiplier"], privacy["epsilon"], f"client_dp, clip {'none' if clip is None else f'{clip:g}'}"


def record_of(run) -> dict:
    """What the table and figures read of one finished run: small enough that a campaign's records are one file
    (privacy_records.json) from which the page regenerates without the runs' metrics."""
    if KEY not in run.summary.get("local", {}):
        refuse(PROG, f"{run.path} has no {KEY}; allowed: runs of a classification task")
    z, eps, mechanism = level_of(run.summary)
    comm = run.summary["communication"]
    return {"run_id": run.summary["run_id"], "method": run.summary["algorithm"], "mechanism": mechanism,
            "noise_multiplier": z, "epsilon": None if math.isinf(eps) else eps, "seed": run.summary["seed"],
            "accuracy": 100 * run.summary["local"][KEY],
            "megabytes": (comm["bytes_down"] + comm["bytes_up"]) / comm["clients"] / 2 ** 20,
            "curve": [list(p) for p in traffic_curve(run) if p is not None], "clusters": cluster_points(run)}


def collect(folders) -> dict:
    """{(method, mechanism, noise multiplier): [record, ...]} of every finished run under `folders` (record_of)."""
    return group([record_of(run) for folder in folders for run in discover(Path(folder)).runs])


def group(records) -> dict:
    out = {}
    for r in sorted(records, key=lambda r: (r["method"], r["mechanism"], r["noise_multiplier"], str(r["seed"]))):
        out.setdefault((r["method"], r["mechanism"], r["noise_multiplier"]), []).append(r)
    return out


def eps_of(record) -> float:
    return math.inf if record["epsilon"] is None else record["epsilon"]


def epsilon_text(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:.2f}"


def table(groups: dict) -> str:
    lines = ["| method | mechanism | epsilon (delta 1e-5) | noise multiplier | local test accuracy (%) | seeds "
             "| MB per client (down + up) |", "|---|---|---|---|---|---|---|"]
    for (method, mechanism, z), runs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "none", kv[0][2])):
        eps = sorted({round(eps_of(r), 2) for r in runs})
        mean, half = mean_interval(r["accuracy"] for r in runs)
        mb = sum(r["megabytes"] for r in runs) / len(runs)
        cell = f"{mean:.1f} ± {half:.1f}" if not math.isnan(half) else f"{mean:.1f} (no interval: < 3 seeds)"
        lines.append(f"| {method} | {mechanism} | {' / '.join(epsilon_text(e) for e in eps)} | {z:g} | {cell} "
                     f"| {len(runs)} | {mb:.1f} |")
    return "\n".join(lines) + "\n"


def _read_csv(run, name):
    import pandas as pd
    return pd.read_csv(StringIO(run.files.read_text(name)))


def cluster_points(run):
    """[[clients that chose model j, their mean local test accuracy %]] for each chosen model of the last round."""
    if "assignments.csv" not in run.files.names():
        return []
    a = _read_csv(run, "assignments.csv")
    last = a[a["round"] == a["round"].max()]
    chosen = last.loc[last.groupby("client")["weight"].idxmax(), ["client", "cluster"]]
    m = _read_csv(run, "metrics.csv")
    m = m[(m["model"] == "local") & (m["eval_set"] == "local_test") & (m["metric"] == "accuracy")
          & (m["round"] == m["round"].max())].set_index("model_index")["value"]
    chosen = chosen.assign(accuracy=100 * m.reindex(chosen["client"]).to_numpy())
    return [[int(len(g)), float(g["accuracy"].mean())] for _, g in chosen.groupby("cluster")]


def figures(groups: dict, out: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    methods = sorted({m for m, _, _ in groups})
    written = []
    # each level at its epsilon to one decimal (the calibrated levels spend their target to within 0.01)
    finite = sorted({round(eps_of(r), 1) for runs in groups.values() for r in runs if math.isfinite(eps_of(r))})
    inf_at = (max(finite) * 2) if finite else 1.0   # epsilon = inf drawn to the right of the largest finite one
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for method in methods:
        points = []
        for (m, mechanism, z), runs in groups.items():
            if m == method and (mechanism == "none" or z > 0):
                eps = eps_of(runs[0])
                mean, half = mean_interval(r["accuracy"] for r in runs)
                points.append((inf_at if math.isinf(eps) else round(eps, 1), mean, 0 if math.isnan(half) else half))
        points.sort()
        ax.errorbar([p[0] for p in points], [p[1] for p in points], yerr=[p[2] for p in points], marker="o",
                    capsize=3, label=method)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(finite + [inf_at], [f"{e:g}" for e in finite] + ["inf"])
    ax.set_xlabel("epsilon (delta = 1e-5); inf: no mechanism")
    ax.set_ylabel("local test accuracy (%), mean ± 95 % CI over seeds")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(out / "accuracy_vs_epsilon.png", fig, dpi=120)
    plt.close(fig)
    written.append("accuracy_vs_epsilon.png")

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    colours = dict(zip(methods, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for (method, mechanism, z), runs in sorted(groups.items()):
        if mechanism != "none" and z == 0:
            continue   # clipping alone: in the table
        run = runs[0]   # the first seed's curve
        eps = eps_of(run)
        style = "-" if math.isinf(eps) else (0, (1 + 3 * finite.index(round(eps, 1)) if round(eps, 1) in finite else 1, 2))
        ax.plot([p[0] for p in run["curve"]], [p[1] for p in run["curve"]], linestyle=style, color=colours[method], marker=".",
                label=f"{method}, epsilon {'inf' if math.isinf(eps) else f'{eps:.1f}'}")
    ax.set_xscale("log")
    ax.set_xlabel("megabytes per client so far (down + up)")
    ax.set_ylabel("local test accuracy (%), first seed")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(out / "accuracy_vs_megabytes.png", fig, dpi=120)
    plt.close(fig)
    written.append("accuracy_vs_megabytes.png")

    clustered = [m for m in methods if any(len(r["clusters"]) > 1
                                           for (mm, _, _), runs in groups.items() if mm == m for r in runs)]
    if clustered:
        fig, axes = plt.subplots(1, len(clustered), figsize=(4.2 * len(clustered), 3.8), squeeze=False)
        cmap = plt.get_cmap("viridis")
        levels = sorted({round(eps_of(r), 1) for runs in groups.values() for r in runs}, key=lambda e: -e)
        for ax, method in zip(axes[0], clustered):
            for (m, mechanism, z), runs in sorted(groups.items(), key=lambda kv: -eps_of(kv[1][0])):
                if m != method or (mechanism != "none" and z == 0):
                    continue
                eps = round(eps_of(runs[0]), 1)
                pts = [p for r in runs for p in r["clusters"]]
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, alpha=0.8,
                           color=cmap(levels.index(eps) / max(1, len(levels) - 1)),
                           label=f"epsilon {'inf' if math.isinf(eps) else f'{eps:.1f}'}")
            ax.set_title(method)
            ax.set_xlabel("clients that chose the model (last round)")
            ax.set_ylabel("their local test accuracy (%)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        save_figure(out / "cluster_size_vs_accuracy.png", fig, dpi=120)
        plt.close(fig)
        written.append("cluster_size_vs_accuracy.png")
    return written


def parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("folders", type=Path, nargs="*", help="folders searched for finished runs")
    p.add_argument("--records", type=Path, help="a privacy_records.json written before, read in place of runs")
    p.add_argument("--out", type=Path, help="a folder for privacy_table.md, privacy_records.json and the figures")
    return p


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    if a.records is not None:
        try:
            records = json.loads(a.records.read_text())
        except (OSError, ValueError) as e:
            print(f"fedcluster-report privacy: --records {a.records} cannot be read ({e}); allowed: a "
                  "privacy_records.json this command wrote", file=sys.stderr)
            return 2
        groups = group(records)
    else:
        groups = collect(a.folders)
    if not groups:
        print(f"fedcluster-report privacy: no finished run under {', '.join(map(str, a.folders))}", file=sys.stderr)
        return 2
    text = table(groups)
    print(text, end="")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        write_text(a.out / "privacy_table.md", text)
        records = [r for runs in groups.values() for r in runs]
        write_text(a.out / "privacy_records.json", json.dumps(records, indent=0, sort_keys=True) + "\n")
        for name in figures(groups, a.out):
            print(f"wrote {a.out / name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
