"""A run's figures, each as PNG (200 dpi) and PDF (vector, for papers) in the run directory:
centers (FedSoft Figure 1: each center's test metric on each distribution over rounds),
importance (mean importance-weight estimate per mixture group, with the true shares),
cluster_sizes (Fed-CAM Figures 1 and 3: stacked cluster sizes, drawn as the steps they are),
partition (each client's training data by class, or its mixture of distributions),
loss_heatmap (CLoVE Figure 4) and, for a sweep, ari_over_rounds (CLoVE Figure 2) and learning
curves, with a band of one standard deviation over seeds. Rounds are counted from 1 on every
axis (metrics.csv's round r is round r + 1), with integer ticks."""
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from ..run_records.io import save_figure  # noqa: E402
from ..run_records.pairing import center_pairing  # noqa: E402

DPI = 200


def save(fig, path: Path, **kwargs) -> None:
    """`path` (.png) and the same figure as .pdf beside it, atomically; closes the figure.
    `kwargs` go to savefig (bbox_inches="tight" keeps legends drawn outside the axes)."""
    path = Path(path)
    fig.tight_layout()
    save_figure(path, fig, dpi=DPI, **kwargs)
    save_figure(path.with_suffix(".pdf"), fig, **kwargs)
    plt.close(fig)


def round_axis(ax, label: str = "round") -> None:
    ax.set_xlabel(label)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def plot_cluster_sizes(ax, sizes: pd.DataFrame, title: str) -> None:
    """Stacked clients-per-cluster over rounds; legend 'cluster id (final size)', largest first."""
    table = sizes.pivot(index="round", columns="cluster", values="size").fillna(0)
    final = table.iloc[-1]
    colors = plt.cm.tab20(np.linspace(0, 1, max(len(table.columns), 2)))
    # a size holds for a whole round: one block per round centred on its (1-based) number, not a ramp
    rounds = table.index.to_numpy() + 1
    x = np.concatenate([[rounds[0] - 0.5], rounds, [rounds[-1] + 0.5]])
    below = np.zeros(len(x))
    for c, color in zip(table.columns, colors):
        v = table[c].to_numpy()
        top = below + np.concatenate([[v[0]], v, [v[-1]]])
        ax.fill_between(x, below, top, step="mid", color=color, lw=0, label=f"{c} ({final[c]:g})")
        below = top
    handles, labels = ax.get_legend_handles_labels()
    order = np.argsort(-final.values, kind="stable")
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7, title="cluster (final size)",
              title_fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    round_axis(ax)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
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
        ax.set_xlim(first + 0.5, last + 1.5)   # same rounds on every panel (CAM methods cluster only after warm-up)
    save(fig, path)


def write_run_figures(out: Path, metrics: pd.DataFrame, assign: pd.DataFrame, data, summary: dict,
                      sizes: pd.DataFrame = None) -> None:
    write_partition(out / "partition.png", data, f"{summary['dataset']} / {summary['partition']}: "
                    f"{data.num_clients} clients (seed {summary['seed']})")
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
                ax.plot(g["round"] + 1, g["value"], label=f"center {c}")
            ax.set_title(f"held-out test data of {d}", fontsize=9)
            round_axis(ax)
            if key == "mse":
                ax.set_yscale("log")
        axes[0][0].set_ylabel(f"test {key}" + (" (log scale)" if key == "mse" else ""))
        axes[0][0].legend(fontsize=8)
        save(fig, out / "centers.png")
    matched = center_pairing(summary)[0]
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
                ax.plot(g.index + 1, g.values, label=f"clients {name}")
                if not isinstance(label, str):
                    ax.axhline(label[di], ls=":", color=ax.lines[-1].get_color(), label=f"true share, clients {name}")
            ax.set_title(f"center {c} (paired with {d})", fontsize=9)
            round_axis(ax)
            ax.set_ylim(-0.02, 1.02)
        axes[0][0].set_ylabel("mean importance weight")
        axes[0][0].legend(fontsize=7)
        save(fig, out / "importance.png")


def write_loss_heatmap(path: Path, losses: np.ndarray, truth=None, title: str = "") -> None:
    """Clients (rows, ordered by true cluster when known) x models: mean training loss."""
    order = np.argsort(truth, kind="stable") if truth is not None else np.arange(len(losses))
    fig, ax = plt.subplots(figsize=(1.2 + 0.45 * losses.shape[1], 1.2 + 0.12 * len(losses)))
    im = ax.imshow(losses[order], aspect="auto", cmap="viridis", interpolation="nearest")
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
    save(fig, path)


def seed_band(seeds):
    """(mean, std) per position over the seeds that have a value there (None/NaN: no value);
    std is the sample standard deviation (ddof=1), NaN where fewer than two seeds have a value."""
    if seeds and not isinstance(seeds[0], (list, tuple, np.ndarray)):
        seeds = [seeds]
    length = max(len(c) for c in seeds)
    grid = np.full((len(seeds), length), np.nan)
    for i, c in enumerate(seeds):
        grid[i, :len(c)] = [np.nan if v is None else float(v) for v in c]
    have = (~np.isnan(grid)).sum(axis=0)
    mean = np.where(have > 0, np.nansum(grid, axis=0) / np.maximum(have, 1), np.nan)
    dev = np.where(have > 1, np.sqrt(np.nansum((grid - mean) ** 2, axis=0) / np.maximum(have - 1, 1)), np.nan)
    return mean, dev


def line_colors(labels) -> dict:
    """One colour per line label, the same in every figure of a report (labels in sorted order
    over tab10, then tab20 when there are more than ten)."""
    labels = sorted(set(labels))
    palette = plt.cm.tab10.colors if len(labels) <= 10 else plt.cm.tab20(np.linspace(0, 1, 20))
    return {label: palette[i % len(palette)] for i, label in enumerate(labels)}


LEGEND_INSIDE_LINES = 4    # a panel with more lines, or a label longer than LEGEND_INSIDE_CHARS, has its legend under it
LEGEND_INSIDE_CHARS = 40
TITLE_CHARS_PER_INCH = 13  # characters of a 9-point title that fit an inch of panel


def write_curves(path: Path, panels, ylabel: str, ylim=None, colors=None, bounds=(-np.inf, np.inf)) -> None:
    """panels = [(title, {label: [value per round] or [[...] per seed]})]; index t-1 of a curve
    is round t. One line per label through the rounds that have a value: the mean over the seeds
    that have one, and a band of +-1 std where two or more do, clipped to the metric's range
    `bounds`; None marks a round without a value (not evaluated, or the CAM methods' warm-up without
    a clustering), left out rather than drawn as 0. `colors` {label: colour} keeps a label's colour
    across panels and figures (default: line_colors of these panels). Legends sit inside each
    panel, or under it where they would cover the curves (more than LEGEND_INSIDE_LINES lines, or a
    label longer than LEGEND_INSIDE_CHARS characters). Up to four panels per row; a title wider than its
    panel is wrapped onto more lines (a setting with its varying keys runs long), so neighbours' titles
    never overlap."""
    colors = colors or line_colors(label for _, curves in panels for label in curves)
    cols = min(len(panels), 4)
    rows = -(-len(panels) // cols)
    labels = [label for _, curves in panels for label in curves]
    most = max((len(curves) for _, curves in panels), default=0)
    below = most > LEGEND_INSIDE_LINES or max((len(label) for label in labels), default=0) > LEGEND_INSIDE_CHARS
    height = 3.2 + (0.16 * most + 0.3 if below else 0.0)   # room for the legend under each panel
    width = max(4.2, 0.055 * max((len(label) for label in labels), default=0) + 1.0) if below else 4.2
    fit = int(width * TITLE_CHARS_PER_INCH)
    titles = [textwrap.fill(title, fit) if len(title) > fit else title for title, _ in panels]
    extra = max(t.count("\n") for t in titles) if titles else 0
    height += 0.17 * extra                             # the wrapped lines' room above each panel
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, sharey=True)
    for ax, title, (_, curves) in zip(axes.flat, titles, panels):
        longest = 1
        for label, seeds in sorted(curves.items()):
            mean, dev = seed_band(seeds)
            longest = max(longest, len(mean))
            # only the rounds that have a value (evaluated every eval_every rounds), joined by lines
            keep = np.isfinite(mean)
            x = np.arange(1, len(mean) + 1)[keep]
            mean, dev = mean[keep], dev[keep]
            line, = ax.plot(x, mean, label=label + (f" (n={len(seeds)} seeds)" if np.isfinite(dev).any() else ""),
                            marker="." if len(x) <= 30 else None, color=colors.get(label))
            if np.isfinite(dev).any():
                ax.fill_between(x, np.clip(mean - dev, *bounds), np.clip(mean + dev, *bounds), where=np.isfinite(dev),
                                color=line.get_color(), alpha=0.2, lw=0)
        ax.set_xlim(0.5, longest + 0.5)   # from round 1, so rounds without a value show as a gap
        round_axis(ax)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(ylabel)
        if ylim is not None:
            ax.set_ylim(*ylim)
        if below:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), framealpha=0.8)
        else:
            ax.legend(fontsize=7, loc="best", framealpha=0.8)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    save(fig, path, **({"bbox_inches": "tight"} if below or extra else {}))


def write_traffic_curves(path: Path, panels, ylabel: str, colors=None) -> None:
    """Issue 78: a metric against the megabytes per client sent and received so far, one line per configuration:
    panels = [(title, {label: [[(megabytes, value) or None per round] per seed]})]; at each round the seeds that
    have a point give its mean megabytes and mean value. Megabytes on a log axis (methods differ by factors)."""
    colors = colors or line_colors(label for _, curves in panels for label in curves)
    cols = min(len(panels), 4)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False, sharey=True)
    for ax, (title, curves) in zip(axes.flat, panels):
        for label, seeds in sorted(curves.items()):
            length = max(len(c) for c in seeds)
            points = []
            for t in range(length):
                have = [c[t] for c in seeds if t < len(c) and c[t] is not None]
                if have:
                    points.append((float(np.mean([p[0] for p in have])), float(np.mean([p[1] for p in have]))))
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=label, color=colors.get(label))
        ax.set_xscale("log")
        ax.set_title(textwrap.fill(title, 60), fontsize=9)
        ax.set_xlabel("MiB per client so far (down + up)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, loc="best", framealpha=0.8)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    save(fig, path)


def write_ari_over_rounds(path: Path, panels, colors=None, bounds=(-1.0, 1.0)) -> None:
    """CLoVE Figure 2 style: ARI of the clients' clustering against the true clusters per round
    (bands clipped to the ARI's range)."""
    write_curves(path, panels, "ARI vs true clusters", (-0.05, 1.05), colors, bounds=bounds)


def final_first_cluster_weights(summary: dict, assignments: pd.DataFrame) -> pd.Series:
    """FedSoft Figure 2's y values: each client's final weight on the center paired with the first
    distribution ("the first cluster"; pairing.center_pairing), indexed by client, from a run's summary and its
    assignments.csv. Weights are FedSoft's u, FedEM's pi, IFCA's one-hot assignment."""
    first = center_pairing(summary)[0][summary["distributions"][0]]
    last = assignments[assignments["round"] == assignments["round"].max()]
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
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8)
    save(fig, path)


def partition_shares(data):
    """[clients, parts] each client's training samples per class (classification), its mixture
    weights over distributions (mixture partitions), or its sample count (reconstruction on a
    label partition), with the parts' names and what they measure."""
    if data.task == "classification":
        counts = data.train.class_counts(data.num_classes).cpu().numpy().astype(float)
        return counts, [f"class {c}" for c in range(data.num_classes)], "training samples"
    if data.mixture.shape[1] > 0:
        return data.mixture.cpu().numpy(), list(data.distribution_names), "mixture weight"
    # reconstruction on a label partition: no labels to show, each client's sample count
    return data.train.n.cpu().numpy().astype(float)[:, None], ["samples"], "training samples"


def write_partition(path: Path, data, title: str) -> None:
    """The partition itself: one stacked bar per client (its training samples by class, or its
    mixture of distributions), clients ordered by true cluster with a line between clusters."""
    shares, names, what = partition_shares(data)
    truth = data.cluster_truth
    order = np.argsort(truth.cpu().numpy(), kind="stable") if truth is not None else np.arange(len(shares))
    shares = shares[order]
    fig, ax = plt.subplots(figsize=(min(3 + 0.06 * len(shares), 14), 3.4))
    colors = plt.cm.tab20(np.linspace(0, 1, max(len(names), 2))) if len(names) > 10 else plt.cm.tab10.colors
    below = np.zeros(len(shares))
    x = np.arange(1, len(shares) + 1)
    for j, name in enumerate(names):
        ax.bar(x, shares[:, j], bottom=below, width=1.0, color=colors[j % len(colors)], lw=0, label=name)
        below += shares[:, j]
    if truth is not None:
        t = truth.cpu().numpy()[order]
        for b in np.nonzero(np.diff(t))[0]:
            ax.axvline(b + 1.5, color="black", lw=0.8)
    ax.set_xlim(0.5, len(shares) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("client (ordered by true cluster; lines between clusters)" if truth is not None else "client")
    ax.set_ylabel(what)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), ncol=1 if len(names) <= 12 else 2)
    save(fig, path)
