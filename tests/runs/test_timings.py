"""summary.json's `timings`: where a run's time went (setup before its first round, the rounds, writing the
tables and summary), and the figures drawn after summary.json, which no other file waits for."""
import json

from fedcluster.runner import run


def test_a_runs_time_is_split_and_its_figures_come_after_its_summary(small_cfg, tmp_path):
    out = tmp_path / "run"
    summary = run(small_cfg("rounds=2", "plots=true"), out)
    timings = summary["timings"]
    assert set(timings) == {"setup_s", "rounds_s", "results_s"} and all(v >= 0 for v in timings.values())
    assert timings["setup_s"] + timings["rounds_s"] <= summary["wall_time_s"] + 1e-3
    assert json.loads((out / "summary.json").read_text())["timings"] == timings
    figures = sorted(out.glob("*.png"))
    assert figures, "plots=true draws the run's figures"
    assert all(f.stat().st_mtime_ns >= (out / "summary.json").stat().st_mtime_ns for f in figures)
