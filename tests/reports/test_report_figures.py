"""A report's figures: one colour per configuration in every panel and figure, ± std bands
clipped to the metric's range, legends inside the panels."""
import matplotlib

matplotlib.use("Agg")
from matplotlib.axes import Axes  # noqa: E402

from fedcluster.report import figures as plots  # noqa: E402


def test_a_label_keeps_its_colour_and_bands_stay_in_range(tmp_path, monkeypatch):
    drawn, bands, legends = {}, [], []
    plot, fill, legend = Axes.plot, Axes.fill_between, Axes.legend

    def record_plot(self, *args, **kwargs):
        lines = plot(self, *args, **kwargs)
        drawn.setdefault(kwargs["label"].split(" (")[0], set()).add(matplotlib.colors.to_hex(lines[0].get_color()))
        return lines

    def record_fill(self, x, low, high, **kwargs):
        bands.append((min(low), max(high)))
        return fill(self, x, low, high, **kwargs)

    def record_legend(self, *args, **kwargs):
        legends.append(kwargs.get("loc"))
        return legend(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", record_plot)
    monkeypatch.setattr(Axes, "fill_between", record_fill)
    monkeypatch.setattr(Axes, "legend", record_legend)
    ari = [("a", {"ifca": [[0.5, 0.9], [0.9, 1.0]], "clove": [[1.0, 1.0], [1.0, 1.0]]}),
           ("b", {"clove": [[0.2, 0.99], [0.9, 1.0]]})]           # clove alone: it would take the first colour
    colors = plots.line_colors(["ifca", "clove", "fedavg"])
    plots.write_ari_over_rounds(tmp_path / "ari.png", ari, colors)
    plots.write_curves(tmp_path / "acc.png", [("a", {"fedavg": [[60.0], [99.0]], "ifca": [[98.0], [99.5]]})],
                       "accuracy %", colors=colors, bounds=(0.0, 100.0))
    assert all(len(c) == 1 for c in drawn.values()) and len({next(iter(c)) for c in drawn.values()}) == 3
    assert all(low >= -1.0 and high <= 1.0 for low, high in bands[:3])       # ARI: [-1, 1]
    assert all(low >= 0.0 and high <= 100.0 for low, high in bands[3:])      # accuracy %: [0, 100]
    assert max(high for _, high in bands[:3]) == 1.0                          # a band that reached past 1 is cut there
    assert legends and all(loc == "best" for loc in legends)                  # inside each panel


def test_many_or_long_line_labels_put_the_legend_under_the_panel(tmp_path):
    """Eight configurations with long labels (a method's sensitivity rows) would cover the curves:
    the legend goes under the panel, which makes the figure taller than one with two short labels."""
    import matplotlib.pyplot as plt
    from fedcluster.report.figures import write_curves
    short = [("p", {"a": [0.1, 0.2], "b": [0.3, 0.4]})]
    long = [("p", {f"ifca, init=independent, update=mean, num_clusters=5, partition.num_clusters={i}": [0.1, 0.2]
                   for i in range(8)})]
    write_curves(tmp_path / "short.png", short, "ARI")
    write_curves(tmp_path / "long.png", long, "ARI")
    assert plt.imread(tmp_path / "long.png").shape[0] > 1.3 * plt.imread(tmp_path / "short.png").shape[0]
    assert (tmp_path / "long.pdf").exists()


def test_long_panel_titles_wrap_inside_their_panel_and_never_overlap(tmp_path, monkeypatch):
    """A setting with its varying keys makes a long title: each is wrapped to its panel's width, so no two
    neighbours' titles run into each other (they did in the CLoVE label-skew report's three panels)."""
    figures = []
    monkeypatch.setattr(plots, "save", lambda fig, path, **kw: figures.append(fig))
    title = "clove_label_skews fashion_mnist/label_skew3 [train.batch_size=100, train.lr=0.01, train.momentum=0, " \
            "train.optimizer=adam]"
    plots.write_ari_over_rounds(tmp_path / "ari.png", [(title, {"clove": [[1.0, 1.0]]}),
                                                       (title.replace("3", "4"), {"ifca": [[0.5, 0.6]]}),
                                                       ("short", {"ifca": [[0.5, 0.6]]})])
    (fig,) = figures
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible()]
    spans = [ax.title.get_window_extent(renderer) for ax in axes]
    for ax, span in zip(axes, spans):
        assert span.width <= ax.get_window_extent(renderer).width * 1.1
    assert all(a.x1 < b.x0 for a, b in zip(spans, spans[1:]))          # left to right, apart
    assert "\n" in axes[0].get_title() and axes[2].get_title() == "short"
