"""What client-level DP costs each method, from finished runs (issue 78): `fedcluster-report privacy FOLDER... --out
DIR` writes DIR/privacy_table.md and three figures, and prints the table.

- The table: each method's final local test accuracy (mean over clients, %, mean ± the half-width of the 95 %
  t-interval over seeds) at each privacy level, the epsilon each level spent (summary.json `privacy.epsilon`; a run
  without a mechanism is epsilon = inf), the noise multiplier, and the megabytes a client sent and received.
- accuracy_vs_epsilon.png: that accuracy against epsilon, one line per method.
- accuracy_vs_megabytes.png: accuracy at each evaluated round against the megabytes per client so far (both
  directions, communication.csv), one line per method and privacy level.
- cluster_size_vs_accuracy.png: for each method with more than one model, every model of the last round as a point:
  how many clients chose it (assignments.csv, the largest weight) against their mean accuracy, coloured by epsilon.
  Under DP-FedAvg's fixed denominator a model's signal grows with its clients and its noise does not.

Runs are grouped by method and by the noise multiplier they ran with; a level's epsilon is its runs' (one value:
the same rate, noise and rounds spend the same)."""
import argparse
import math
import sys
from io import StringIO
from pathlib import Path

from ..results.compare import mean_interval
from ..results.runs import discover
from ..run_records.io import write_text

KEY = "local_test_accuracy"


def level_of(summary: dict):
    """(noise multiplier, epsilon) of a run: (0, inf) without a mechanism."""
    privacy = summary.get("privacy")
    return (0.0, math.inf) if privacy is None else (privacy["noise_multiplier"], privacy["epsilon"])


def collect(folders) -> dict:
    """{(method, noise multiplier): [run, ...]} of every finished run under `folders`."""
    out = {}
    for folder in folders:
        for run in discover(Path(folder)).runs:
            if KEY not in run.summary.get("local", {}):
                raise SystemExit(f"fedcluster-report privacy: {run.path} has no {KEY}; allowed: runs of a "
                                 "classification task")
            out.setdefault((run.summary["algorithm"], level_of(run.summary)[0]), []).append(run)
    return out


def epsilon_text(eps: float) -> str:
    return "inf (no mechanism)" if math.isinf(eps) else f"{eps:.2f}"


def table(groups: dict) -> str:
    lines = ["| method | epsilon (delta 1e-5) | noise multiplier | local test accuracy (%) | seeds | MB per client "
             "(down + up) |", "|---|---|---|---|---|---|"]
    for (method, z), runs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        eps = {level_of(r.summary)[1] for r in runs}
        mean, half = mean_interval(100 * r.summary["local"][KEY] for r in runs)
        comm = [r.summary["communication"] for r in runs]
        mb = sum((c["bytes_down"] + c["bytes_up"]) / c["clients"] for c in comm) / len(comm) / 2 ** 20
        cell = f"{mean:.1f} ± {half:.1f}" if not math.isnan(half) else f"{mean:.1f} (no interval: < 3 seeds)"
        lines.append(f"| {method} | {' / '.join(epsilon_text(e) for e in sorted(eps))} | {z:g} | {cell} "
                     f"| {len(runs)} | {mb:.1f} |")
    return "\n".join(lines) + "\n"


def _read_csv(run, name):
    import pandas as pd
    return pd.read_csv(StringIO(run.files.read_text(name)))


def accuracy_by_round(run):
    """[(round, mean local test accuracy %)] at each evaluated round."""
    m = _read_csv(run, "metrics.csv")
    m = m[(m["model"] == "local") & (m["eval_set"] == "local_test") & (m["metric"] == "accuracy")]
    return [(int(t), 100 * float(v)) for t, v in m.groupby("round")["value"].mean().items()]


def megabytes_by_round(run) -> dict:
    """{round: megabytes per client so far, both directions}."""
    c = _read_csv(run, "communication.csv")
    per_round = c.groupby("round")["bytes"].sum().cumsum() / 2 ** 20 / run.summary["communication"]["clients"]
    return {int(t): float(v) for t, v in per_round.items()}


def cluster_points(run):
    """[(clients that chose model j, their mean local test accuracy %)] for each chosen model of the last round."""
    if "assignments.csv" not in run.files.names():
        return []
    a = _read_csv(run, "assignments.csv")
    last = a[a["round"] == a["round"].max()]
    chosen = last.loc[last.groupby("client")["weight"].idxmax(), ["client", "cluster"]]
    m = _read_csv(run, "metrics.csv")
    m = m[(m["model"] == "local") & (m["eval_set"] == "local_test") & (m["metric"] == "accuracy")
          & (m["round"] == m["round"].max())].set_index("model_index")["value"]
    chosen = chosen.assign(accuracy=100 * m.reindex(chosen["client"]).to_numpy())
    return [(int(len(g)), float(g["accuracy"].mean())) for _, g in chosen.groupby("cluster")]


def figures(groups: dict, out: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    methods = sorted({m for m, _ in groups})
    written = []
    finite = sorted({e for runs in groups.values() for r in runs for e in [level_of(r.summary)[1]] if math.isfinite(e)})
    inf_at = (max(finite) * 2) if finite else 1.0   # epsilon = inf drawn to the right of the largest finite one
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for method in methods:
        points = []
        for (m, z), runs in groups.items():
            if m == method:
                eps = level_of(runs[0].summary)[1]
                mean, half = mean_interval(100 * r.summary["local"][KEY] for r in runs)
                points.append((inf_at if math.isinf(eps) else eps, mean, 0 if math.isnan(half) else half))
        points.sort()
        ax.errorbar([p[0] for p in points], [p[1] for p in points], yerr=[p[2] for p in points], marker="o",
                    capsize=3, label=method)
    ax.set_xscale("log")
    ticks = finite + [inf_at]
    ax.set_xticks(ticks, [f"{e:g}" for e in finite] + ["inf"])
    ax.set_xlabel("epsilon (delta = 1e-5); inf: no mechanism")
    ax.set_ylabel("local test accuracy (%), mean ± 95 % CI over seeds")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "accuracy_vs_epsilon.png", dpi=120)
    plt.close(fig)
    written.append("accuracy_vs_epsilon.png")

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    colours = dict(zip(methods, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for (method, z), runs in sorted(groups.items()):
        run = sorted(runs, key=lambda r: str(r.seed))[0]   # the first seed's curve
        mb, acc = megabytes_by_round(run), accuracy_by_round(run)
        eps = level_of(run.summary)[1]
        style = "-" if math.isinf(eps) else (0, (1 + 3 * finite.index(eps) if eps in finite else 1, 2))
        ax.plot([mb[t] for t, _ in acc], [a for _, a in acc], linestyle=style, color=colours[method], marker=".",
                label=f"{method}, epsilon {'inf' if math.isinf(eps) else f'{eps:.1f}'}")
    ax.set_xscale("log")
    ax.set_xlabel("megabytes per client so far (down + up)")
    ax.set_ylabel("local test accuracy (%), first seed")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "accuracy_vs_megabytes.png", dpi=120)
    plt.close(fig)
    written.append("accuracy_vs_megabytes.png")

    clustered = [m for m in methods if any(cluster_points(r) and len(cluster_points(r)) > 1
                                           for (mm, _), runs in groups.items() if mm == m for r in runs[:1])]
    if clustered:
        fig, axes = plt.subplots(1, len(clustered), figsize=(4.2 * len(clustered), 3.8), squeeze=False)
        cmap = plt.get_cmap("viridis")
        levels = sorted({level_of(r.summary)[1] for runs in groups.values() for r in runs}, key=lambda e: -e)
        for ax, method in zip(axes[0], clustered):
            for (m, z), runs in sorted(groups.items(), key=lambda kv: -level_of(kv[1][0].summary)[1]):
                if m != method:
                    continue
                eps = level_of(runs[0].summary)[1]
                pts = [p for r in runs for p in cluster_points(r)]
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, alpha=0.8,
                           color=cmap(levels.index(eps) / max(1, len(levels) - 1)),
                           label=f"epsilon {'inf' if math.isinf(eps) else f'{eps:.1f}'}")
            ax.set_title(method)
            ax.set_xlabel("clients that chose the model (last round)")
            ax.set_ylabel("their local test accuracy (%)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "cluster_size_vs_accuracy.png", dpi=120)
        plt.close(fig)
        written.append("cluster_size_vs_accuracy.png")
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fedcluster-report privacy", description=__doc__.splitlines()[0])
    p.add_argument("folders", type=Path, nargs="+", help="folders searched for finished runs")
    p.add_argument("--out", type=Path, help="a folder for privacy_table.md and the figures")
    a = p.parse_args(argv)
    groups = collect(a.folders)
    if not groups:
        print(f"fedcluster-report privacy: no finished run under {', '.join(map(str, a.folders))}", file=sys.stderr)
        return 2
    text = table(groups)
    print(text, end="")
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
        write_text(a.out / "privacy_table.md", text)
        for name in figures(groups, a.out):
            print(f"wrote {a.out / name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
