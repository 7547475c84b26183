"""summary.json's `timings`: where a run's time went (setup before its first round, the rounds, writing the
tables, drawing the figures), each measured by the run itself."""
import json

from fedcluster.runner import run


def test_a_runs_time_is_split_into_setup_rounds_tables_and_figures(small_cfg, tmp_path):
    summary = run(small_cfg("rounds=2", "plots=true"), tmp_path / "drawn")
    timings = summary["timings"]
    assert set(timings) == {"setup_s", "rounds_s", "results_s", "figures_s"} and all(v >= 0 for v in timings.values())
    assert timings["setup_s"] + timings["rounds_s"] <= summary["wall_time_s"] + 1e-3
    assert json.loads((tmp_path / "drawn" / "summary.json").read_text())["timings"] == timings
    assert sorted((tmp_path / "drawn").glob("*.png")), "plots=true draws the run's figures"
    plain = run(small_cfg("rounds=2", "plots=false"), tmp_path / "plain")["timings"]
    assert not sorted((tmp_path / "plain").glob("*.png")) and plain["figures_s"] < timings["figures_s"]
