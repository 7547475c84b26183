"""Figures: PNG and PDF, labelled axes, rounds from 1 with integer ticks, cluster sizes as steps,
seed bands, the partition picture, and `fedcluster-report --figures`."""
import json

import numpy as np
import pandas as pd
import pytest

import fedcluster.report.figures as plots
from conftest import make_cfg
from fedcluster.runner import run

TINY = ["rounds=3", "partition.num_clients=10", "algorithm.selection_size=5", "dataset.test_size=100",
        "progress=false"]


@pytest.fixture
def kept(monkeypatch):
    """The figures a call draws, kept open instead of saved: {file name: figure}."""
    figures = {}
    monkeypatch.setattr(plots, "save", lambda fig, path: figures.__setitem__(path.name, fig))
    return figures


def test_a_run_writes_png_and_pdf_of_each_figure(tmp_path):
    out = tmp_path / "run"
    run(make_cfg(TINY), out)
    for name in ("centers", "importance", "cluster_sizes", "partition"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name
        assert (out / f"{name}.pdf").read_bytes()[:5] == b"%PDF-", name


def test_run_figures_label_axes_and_count_rounds_from_one(tmp_path, kept):
    from fedcluster.assemble import build
    out = tmp_path / "run"
    summary = run(make_cfg(TINY + ["plots=false"]), out)
    data = build(make_cfg(TINY))[1].data
    metrics, assign = pd.read_csv(out / "metrics.csv"), pd.read_csv(out / "assignments.csv")
    plots.write_run_figures(out, metrics, assign, data, summary, pd.read_csv(out / "cluster_sizes.csv"))
    assert {"centers.png", "importance.png", "cluster_sizes.png", "partition.png"} <= set(kept)
    for name in ("centers.png", "importance.png", "cluster_sizes.png"):
        ax = kept[name].axes[0]
        assert ax.get_xlabel() == "round" and ax.get_ylabel(), name
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), (name, ticks)
    xs = np.concatenate([line.get_xdata() for line in kept["centers.png"].axes[0].lines])
    assert xs.min() == 1 and xs.max() == 3          # rounds 1..3, not 0..2
    legend = [t.get_text() for t in kept["importance.png"].axes[0].get_legend().get_texts()]
    assert any(t.startswith("true share") for t in legend)   # the truth lines are in the legend


def test_cluster_sizes_are_drawn_as_steps(kept):
    sizes = pd.DataFrame([{"round": r, "cluster": c, "size": v}
                          for r, pair in enumerate([(3, 7), (6, 4), (6, 4), (2, 8)]) for c, v in enumerate(pair)])
    plots.write_cluster_sizes(plots.Path("sizes.png"), [("t", sizes)])
    ax = kept["sizes.png"].axes[0]
    for poly in ax.collections:
        v = poly.get_paths()[0].vertices
        for (x0, y0), (x1, y1) in zip(v[:-1], v[1:]):
            assert x0 == x1 or y0 == y1   # only horizontal and vertical edges: no ramps
    bottom = ax.collections[0].get_paths()[0].vertices
    assert {x for x, y in bottom if y == 6} == {1.5, 2.5, 3.5}   # cluster 0 holds 6 in rounds 2 and 3


def test_seed_band_is_mean_and_sample_std_over_seeds_with_values():
    mean, std = plots.seed_band([[1.0, None, 3.0], [3.0, 2.0, 5.0], [2.0, 4.0]])
    np.testing.assert_allclose(mean, [2.0, 3.0, 4.0])
    np.testing.assert_allclose(std, [1.0, np.sqrt(2.0), np.sqrt(2.0)])
    mean, std = plots.seed_band([0.5, 0.7])
    np.testing.assert_allclose(mean, [0.5, 0.7])
    assert np.isnan(std).all()   # one seed: no band


def test_partition_shares_count_each_clients_training_classes(tmp_path):
    from fedcluster.assemble import build
    images = ["dataset=fashion_mnist", "model=lenet", "partition=cluster_nclass", "num_clusters=2",
              "partition.num_clients=6", "dataset.distributions=[{rotation: 0}]"]
    pytest.importorskip("torchvision")
    try:
        data = build(make_cfg(images))[1].data
    except Exception as e:   # no Fashion-MNIST on this machine
        pytest.skip(str(e).splitlines()[0])
    shares, names, what = plots.partition_shares(data)
    assert shares.shape == (6, 10) and what == "training samples"
    np.testing.assert_array_equal(shares.sum(1), data.train.n.numpy())
    k = 2
    y = data.train.y[k, :int(data.train.n[k])].numpy()
    np.testing.assert_array_equal(shares[k], np.bincount(y, minlength=10))


def test_partition_of_a_mixture_is_its_weights(kept):
    from fedcluster.assemble import build
    data = build(make_cfg(TINY))[1].data
    shares, names, what = plots.partition_shares(data)
    np.testing.assert_allclose(shares, data.mixture.numpy())
    plots.write_partition(plots.Path("p.png"), data, "t")
    assert kept["p.png"].axes[0].get_ylabel() == "mixture weight"


def test_report_figures_draw_learning_curves_with_a_band(tmp_path):
    from fedcluster.report import main
    for seed in (0, 1):
        run(make_cfg(TINY + [f"seed={seed}", "plots=false"]), tmp_path / f"s{seed}")
    main([str(tmp_path), "--figures"])
    for suffix in ("png", "pdf"):
        assert (tmp_path / f"learning_curves_mse.{suffix}").exists()
    assert (tmp_path / "ari_over_rounds.pdf").exists()
    assert (tmp_path / "mse_vs_megabytes.png").read_bytes()[:4] == b"\x89PNG"   # issue 78: metric against traffic


def test_the_traffic_figure_places_each_round_at_its_megabytes_so_far(kept):
    """Two seeds: at each round the mean of their megabytes and of their values; a round without a point is left
    out."""
    seeds = [[(1.0, 10.0), None, (3.0, 30.0)], [(1.0, 20.0), None, (5.0, 40.0)]]
    plots.write_traffic_curves(plots.Path("t.png"), [("panel", {"fedavg": seeds})], "accuracy")
    ax = kept["t.png"].axes[0]
    assert list(ax.lines[0].get_xdata()) == [1.0, 4.0] and list(ax.lines[0].get_ydata()) == [15.0, 35.0]
    assert ax.get_xscale() == "log"


def test_the_traffic_curve_of_a_run_is_its_cumulative_megabytes_per_client(tmp_path):
    from fedcluster.report.sections import traffic_curve
    from fedcluster.report.runs import discover
    run(make_cfg(TINY + ["plots=false", "eval_every=1"]), tmp_path / "r")
    (found,) = discover(tmp_path).runs
    table = pd.read_csv(tmp_path / "r" / "communication.csv")
    per_client = table.groupby("round")["bytes"].sum().cumsum() / 2 ** 20 / found.summary["communication"]["clients"]
    curve = traffic_curve(found)
    assert [p[0] for p in curve] == pytest.approx(per_client.tolist())


def test_learning_curve_band_spans_the_seeds(kept, tmp_path):
    plots.write_curves(plots.Path("c.png"), [("panel", {"fedsoft": [[1.0, 2.0], [3.0, 4.0]]})], "y")
    ax = kept["c.png"].axes[0]
    assert list(ax.lines[0].get_ydata()) == [2.0, 3.0]
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(2.0 - np.sqrt(2)) and band.max() == pytest.approx(3.0 + np.sqrt(2))
    assert "n=2 seeds" in ax.get_legend().get_texts()[0].get_text()


def test_curves_join_the_evaluated_rounds(kept):
    """Runs evaluated every 10 rounds: the line goes through rounds 10, 20, 30, not through nothing."""
    curve = [None] * 9 + [0.5] + [None] * 9 + [0.6] + [None] * 9 + [0.7]
    plots.write_curves(plots.Path("e.png"), [("panel", {"m": [curve, [v if v is None else v + 0.1 for v in curve]]})],
                       "y")
    line = kept["e.png"].axes[0].lines[0]
    assert list(line.get_xdata()) == [10, 20, 30]
    np.testing.assert_allclose(line.get_ydata(), [0.55, 0.65, 0.75])
