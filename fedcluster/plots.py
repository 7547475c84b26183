"""FedSoft Figure 1 style figures, written as PNG into the run directory:
centers.png (each center's test metric on each distribution over rounds) and
importance.png (mean importance-weight estimate per mixture group over rounds)."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def write_run_figures(out: Path, metrics: pd.DataFrame, assign: pd.DataFrame, data, summary: dict) -> None:
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
        fig.savefig(out / "centers.png", dpi=110)
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
        fig.savefig(out / "importance.png", dpi=110)
        plt.close(fig)
