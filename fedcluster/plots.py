"""FedSoft Figure 1 style figures, written as PNG into the run directory:
centers.png (each center's test metric on each distribution over rounds) and
importance.png (mean importance-weight estimate per mixture group over rounds), and
cluster_sizes.png (Fed-CAM Figures 1 and 3: stacked cluster sizes over rounds),
loss_heatmap.png (CLoVE Figure 4: each client's loss on each model) and, for a sweep,
ari_over_rounds.png (CLoVE Figure 2: ARI vs round per algorithm)."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from .io import save_figure  # noqa: E402


def plot_cluster_sizes(ax, sizes: pd.DataFrame, title: str) -> None:
    """Stacked clients-per-cluster over rounds; legend 'cluster id (final size)', largest first."""
    table = sizes.pivot(index="round", columns="cluster", values="size").fillna(0)
    final = table.iloc[-1]
    ax.stackplot(table.index, table.T.values, labels=[f"{c} ({int(final[c])})" for c in table.columns],
                 colors=plt.cm.tab20(np.linspace(0, 1, max(len(table.columns), 2))))
    handles, labels = ax.get_legend_handles_labels()
    order = np.argsort(-final.values, kind="stable")
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7, title="cluster (final size)",
              title_fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_xlabel("round")
    ax.set_ylabel("clients")
    ax.set_ylim(0, table.sum(axis=1).max())
    ax.set_title(title, fontsize=9)


def write_cluster_sizes(path: Path, runs) -> None:
    """One panel per (title, sizes frame) in `runs`, side by side."""
    fig, axes = plt.subplots(1, len(runs), figsize=(5.2 * len(runs), 3.4), squeeze=False)
    first = min(int(sizes["round"].min()) for _, sizes in runs)
    last = max(int(sizes["round"].max()) for _, sizes in runs)
    for ax, (title, sizes) in zip(axes[0], runs):
        plot_cluster_sizes(ax, sizes, title)
        ax.set_xlim(first, last)   # same rounds on every panel (CAM methods cluster only after warm-up)
    fig.tight_layout()
    save_figure(path, fig, dpi=110)
    plt.close(fig)


def write_run_figures(out: Path, metrics: pd.DataFrame, assign: pd.DataFrame, data, summary: dict,
                      sizes: pd.DataFrame = None) -> None:
    if sizes is not None and len(sizes) and sizes["cluster"].nunique() > 1:
        write_cluster_sizes(out / "cluster_sizes.png",
                            [(f"{summary['algorithm']}: cluster sizes ({summary['partition']}, seed {summary['seed']})", sizes)])
    key = summary["key_metric"]
    centers = metrics[(metrics["model"] == "center") & (metrics["metric"] == key)]
    names = data.distribution_names
    if len(centers):
        fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.2), squeeze=False, sharey=True)
        for ax, d in zip(axes[0], names):
            for c, g in centers[centers["eval_set"] == d].groupby("model_index"):
                ax.plot(g["round"], g["value"], label=f"center {c}")
            ax.set_title(f"test {key} on {d}")
            ax.set_xlabel("round")
            if key == "mse":
                ax.set_yscale("log")
        axes[0][0].legend()
        fig.tight_layout()
        save_figure(out / "centers.png", fig, dpi=110)
        plt.close(fig)
    matched = summary.get("matched_center")
    if len(assign) and matched:
        mixture = np.round(data.mixture.cpu().numpy(), 6)
        groups = {}
        for k, row in enumerate(mixture):
            groups.setdefault(tuple(row), []).append(k)
        if len(groups) > 4:   # linear/random: group clients by dominant distribution instead
            groups = {}
            for k, row in enumerate(mixture):
                groups.setdefault(f"dominant {names[int(row.argmax())]}", []).append(k)
        fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.2), squeeze=False, sharey=True)
        for ax, (di, d) in zip(axes[0], enumerate(names)):
            c = matched[d]
            if c < 0:
                continue
            sel = assign[assign["cluster"] == c]
            for label, members in groups.items():
                g = sel[sel["client"].isin(members)].groupby("round")["weight"].mean()
                name = label if isinstance(label, str) else ":".join(f"{round(100 * r)}" for r in label)
                ax.plot(g.index, g.values, label=f"clients {name}")
                if not isinstance(label, str):
                    ax.axhline(label[di], ls=":", color=ax.lines[-1].get_color())
            ax.set_title(f"mean weight on center {c} (matched to {d})", fontsize=9)
            ax.set_xlabel("round")
            ax.set_ylim(-0.02, 1.02)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        save_figure(out / "importance.png", fig, dpi=110)
        plt.close(fig)


def write_loss_heatmap(path: Path, losses: np.ndarray, truth=None, title: str = "") -> None:
    """Clients (rows, ordered by true cluster when known) x models: mean training loss."""
    order = np.argsort(truth, kind="stable") if truth is not None else np.arange(len(losses))
    fig, ax = plt.subplots(figsize=(1.2 + 0.45 * losses.shape[1], 1.2 + 0.12 * len(losses)))
    im = ax.imshow(losses[order], aspect="auto", cmap="viridis", interpolation="nearest")
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("model")
    ax.set_ylabel("client (by true cluster)" if truth is not None else "client")
    if truth is not None:
        bounds = np.nonzero(np.diff(np.asarray(truth)[order]))[0]
        for b in bounds:
            ax.axhline(b + 0.5, color="white", lw=0.8)
    fig.colorbar(im, ax=ax, label="mean training loss")
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    save_figure(path, fig, dpi=110)
    plt.close(fig)


def write_ari_over_rounds(path: Path, panels) -> None:
    """CLoVE Figure 2 style: panels = [(title, {label: [ARI per round] or [[...] per seed]})].
    Index t-1 of a curve is round t (1-based); None marks a round without a clustering (e.g.
    warm-up), which is left out rather than drawn as 0. One line per label: the mean over the
    seeds that have a value in that round. Up to four panels per row."""
    cols = min(len(panels), 4)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False, sharey=True)
    from matplotlib.ticker import MaxNLocator
    for ax, (title, curves) in zip(axes.flat, panels):
        longest = 1
        for label, seeds in sorted(curves.items()):
            if seeds and not isinstance(seeds[0], (list, tuple)):
                seeds = [seeds]
            length = max(len(c) for c in seeds)
            grid = np.full((len(seeds), length), np.nan)
            for i, c in enumerate(seeds):
                grid[i, :len(c)] = [np.nan if v is None else float(v) for v in c]
            have = ~np.isnan(grid)
            mean = np.where(have.any(axis=0), np.nansum(grid, axis=0) / np.maximum(have.sum(axis=0), 1), np.nan)
            longest = max(longest, length)
            ax.plot(np.arange(1, length + 1), mean, label=label, marker="." if length <= 30 else None)
        ax.set_xlim(0.5, longest + 0.5)   # from round 1, so rounds without a clustering show as a gap
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("round (1-based)")
        ax.set_ylabel("ARI vs true clusters")
        ax.set_ylim(-0.05, 1.05)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout()
    save_figure(path, fig, dpi=110)
    plt.close(fig)


def final_first_cluster_weights(run_dir: Path) -> pd.Series:
    """FedSoft Figure 2's y values: each client's final weight on the center matched to the first
    distribution ("the first cluster"), indexed by client. Weights are FedSoft's u, FedEM's pi,
    IFCA's one-hot assignment (assignments.csv)."""
    import json
    run_dir = Path(run_dir)
    s = json.loads((run_dir / "summary.json").read_text())
    first = s["matched_center"][s["distributions"][0]]
    a = pd.read_csv(run_dir / "assignments.csv")
    last = a[a["round"] == a["round"].max()]
    return last[last["cluster"] == first].set_index("client")["weight"].sort_index()


def write_first_cluster_weights(path: Path, runs) -> None:
    """FedSoft Figure 2: clients' final importance weight on the first cluster vs client index,
    one marker series per (label, weights) in `runs`."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for (label, w), marker in zip(runs, "o^sxdv"):
        ax.scatter(w.index, w.values, s=12, marker=marker, label=label, alpha=0.8)
    ax.axhline(0.5, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("client index")
    ax.set_ylabel("weight on the first cluster")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(path, fig, dpi=120)
    plt.close(fig)
