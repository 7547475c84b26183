"""benchmarks/benchmark.py cannot rot: every workload runs in its --smoke form (tiny sizes, the same
presets, engines, reference loop and neighbour machinery), and a workload that breaks fails here."""
import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakedata import write_learnable_mnist_like

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "benchmark.py"
sys.path.insert(0, str(ROOT / "benchmarks"))
import benchmark  # noqa: E402


@pytest.fixture(scope="module")
def fake_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench_data")
    write_learnable_mnist_like(root / "FashionMNIST" / "raw")
    return root


def bench(*args, root):
    return subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--json", "--data-root", str(root), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)


def test_every_workload_runs_in_its_smoke_form_beside_the_reference(fake_root):
    out = bench(root=fake_root)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["workload"] for r in rows] == list(benchmark.WORKLOADS)
    for r in rows:   # at smoke sizes fedcluster's figure (a difference of two walls) may be <= 0: no ratio then
        assert r["reference_seconds_per_round"] > 0
        if r["seconds_per_round"] > 0:
            assert r["speedup_vs_reference"] == pytest.approx(
                r["reference_seconds_per_round"] / r["seconds_per_round"], rel=0.15)
        else:
            assert r["speedup_vs_reference"] is None
        # engine=auto on CPU: batched without convolutions, grouped for a CNN at batch <= 10, looped above
        assert r["engine"] == {"a": "batched", "d": "grouped", "d_cnn": "grouped"}.get(r["workload"], "looped")
        assert r["omp_wait_policy"] == "PASSIVE"            # fedcluster's process default (threads.py)
        assert r["samples_per_round"] > 0
    titles = {r["workload"]: r["title"] for r in rows}
    assert "preset clove/images" in titles["b"] and "label_skew2" in titles["b"]   # built from the presets
    assert "preset cam/table1" in titles["c"] and "K=10" in titles["c"]


@pytest.mark.slow   # 17 s, a second smoke run of the benchmark with one workload broken: out of CI's 15 minutes
def test_a_broken_workload_fails_and_names_itself_and_the_others_get_loaded_figures_beside_the_quiet_ones(fake_root):
    """label_skew2 has 5 clusters of 5 clients: K=4 cannot divide them (the way (b) once broke).
    One invocation checks both paths (a fresh process per measurement costs seconds): (b) fails by
    name, and (d) goes on, measured quiet and beside one busy neighbour."""
    out = bench("--only", "b,d", "--load", "1", "--no-reference", "--override", "num_clusters=4", root=fake_root)
    assert out.returncode == 1
    assert "benchmark.py: workload (b) failed:" in out.stderr and "num_clusters=4" in out.stderr
    assert [json.loads(line)["workload"] for line in out.stdout.splitlines()] == ["d"]   # the others go on
    (row,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert row["load_neighbours"] == 1 and isinstance(row["loaded_seconds_per_round"], float)
    if row["loaded_seconds_per_round"] > 0 and row["seconds_per_round"] > 0:
        assert row["slowdown_under_load"] == pytest.approx(row["loaded_seconds_per_round"] / row["seconds_per_round"],
                                                           rel=0.15)
    else:
        assert row["slowdown_under_load"] is None
    assert row["fair_share_slowdown"] == benchmark.fair_share_slowdown(row["threads"], 1, row["cores"])


def test_a_workload_whose_own_measurement_failed_is_measured_no_further(monkeypatch):
    """workload_rows asks each role and condition only for the workloads still standing: a failed (b) costs
    no reference or loaded measurement, and its row is its own failure."""
    asked = []

    def fake_measure(role, keys, args, timeout=None):
        asked.append((role, list(keys)))
        return {k: benchmark.Failed("boom") if k == "b" else {"seconds_per_round": 1.0} for k in keys}
    monkeypatch.setattr(benchmark, "measure", fake_measure)
    monkeypatch.setattr(benchmark, "workload_row", lambda k, args, ours, *rest: {"ours": benchmark.measured(ours), "got": rest})
    args = argparse.Namespace(no_reference=False, load=1, reference_cap=None)
    monkeypatch.setattr(benchmark, "neighbours", lambda n: contextlib.nullcontext())
    rows = dict(benchmark.workload_rows(["a", "b"], args))
    assert asked == [("fedcluster", ["a", "b"]), ("reference", ["a"]), ("fedcluster", ["a"]), ("reference", ["a"])]
    assert isinstance(rows["b"], benchmark.Failed) and str(rows["b"]) == "boom"
    assert rows["a"]["got"] == ({"seconds_per_round": 1.0},) * 3      # its reference, loaded and loaded reference


def test_ratio_and_fair_share_slowdown():
    assert benchmark.ratio(3.0, 2.0) == 1.5 and benchmark.ratio(1.0, 0.0) is None and benchmark.ratio(-0.1, 1) is None
    assert benchmark.fair_share_slowdown(2, 2, 2) == 2.0     # 4 runnable threads on 2 cores: half of each
    assert benchmark.fair_share_slowdown(1, 1, 2) == 1.0     # a free core for each
    assert benchmark.fair_share_slowdown(2, 1, 2) == 1.5
    assert benchmark.fair_share_slowdown(1, 3, 2) == 2.0


@pytest.mark.parametrize("results", ["benchmark.jsonl", "gpu/benchmark_cuda.jsonl"])
def test_the_performance_page_tables_are_the_committed_benchmark_json(results):
    """docs/performance.md's tables (its first section, once README's Performance section) are
    `benchmark.py --markdown` of the committed results, so they cannot drift from them."""
    tables = benchmark.markdown(ROOT / "docs" / "results" / "perf" / results)
    assert tables in (ROOT / "docs" / "performance.md").read_text()


def test_the_contention_script_runs_in_its_smoke_form(fake_root):
    # no busy neighbour here (--load 0): it would take a core from the suite's other worker; the benchmark's
    # own test above runs one. What rots here is contention.py itself: its cases, policies and rows.
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "contention.py"), "--smoke", "--load", "0",
                          "--threads", "1", "--only", "b:looped"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600,
                         env={**os.environ, "FEDCLUSTER_DATA_ROOT": str(fake_root)})
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["engine"], r["policy"]) for r in rows] == [
        ("looped", "PASSIVE"), ("looped", "libgomp default (torch loaded before fedcluster)")]
    assert all(r["slowdown_under_load"] is None or r["slowdown_under_load"] > 0 for r in rows)
    assert all(isinstance(r["quiet_seconds_per_round"], float) for r in rows)
    assert all(r["loaded_seconds_per_round"] is None for r in rows)   # no neighbours: no loaded condition


def test_the_scaling_script_runs_at_a_tiny_size():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scaling.py"), "--clients", "20", "--rounds", "1",
                          "--json"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    (row,) = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert row["clients"] == 20 and row["peak_rss_mb"] > 0 and row["engine"] == "batched"
    assert isinstance(row["seconds_per_round"], float)   # a difference of two walls: tiny here, may round to 0


def test_the_microbenchmarks_run_in_their_smoke_form():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "microbench.py"), "--smoke"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "same parameters: True" in out.stdout


def test_the_memory_benchmark_runs_in_its_smoke_form_beside_the_reference(fake_root):
    """benchmarks/memory_benchmark.py (issue 56), its smoke form: the plain per-client loop, FedAvg and IFCA-CAM at
    one size (each (method, N) is a process of its own); `--methods` picks any of them (the refusal below)."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "memory_benchmark.py"), "--smoke", "--json",
                          "--data-root", str(fake_root)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["method"], r["clients"]) for r in rows] == [
        (m, 4) for m in ["reference", "fedavg", "ifca_cam"]]
    for r in rows:
        assert r["peak_rss_mb"] > 100 and r["chunk"] >= 1
        assert r["vs_reference"] == pytest.approx(r["peak_rss_mb"] / next(
            q["peak_rss_mb"] for q in rows if q["method"] == "reference" and q["clients"] == r["clients"]), abs=0.01)
    cam = [r for r in rows if r["method"] == "ifca_cam"]
    assert [r["chunk"] for r in cam] == [8]   # a client's cluster model and h: two rows per client, one chunk


def test_the_memory_benchmark_refuses_an_unknown_method_in_one_line():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "memory_benchmark.py"), "--methods", "fedavg,nope"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode != 0 and out.stderr.strip().splitlines() == [
        "memory_benchmark.py: --methods nope is unknown; allowed: fedavg,ifca,ifca_cam,fedsoft,local,reference"]


def test_the_packed_benchmark_runs_in_its_smoke_form_with_identical_metrics(fake_root):
    """benchmarks/packed_benchmark.py (issue 57), its smoke form: 3 methods on one seed packed, one process each
    and the plain loop; every packed run's metrics byte-identical to the same run alone (the script exits 1
    otherwise)."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "packed_benchmark.py"), "--smoke", "--json",
                          "--data-root", str(fake_root)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert row["runs"] == 3 and row["identical_metrics"] == "3/3"
    assert row["packed_s"] > 0 and row["one_process_each_s"] > 0 and row["plain_loop_s"] > 0


def test_the_accountants_benchmark_runs_in_its_smoke_form():
    """benchmarks/accountants.py (issue 78): dp-accounting's RDP (fedcluster's epsilon) beside its PLD (tighter, an
    upper bound still), and Opacus' columns marked where it is not installed."""
    pytest.importorskip("dp_accounting")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "accountants.py"), "--smoke", "--json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (row,) = [json.loads(line) for line in out.stdout.splitlines()]
    from fedcluster.privacy.accounting import epsilon
    assert row["dp_accounting_rdp"] == epsilon(row["rate"], row["noise_multiplier"], row["delta"], row["rounds"])
    assert 0 < row["dp_accounting_pld"] < row["dp_accounting_rdp"]
    for name in ("opacus_rdp", "opacus_prv"):
        assert isinstance(row[name], float) or row[name] == "not installed"


def test_the_estimate_benchmark_runs_in_its_smoke_form(fake_root):
    """benchmarks/estimate_accuracy.py --smoke: an estimate and a run of a workload of each model (GenConvNet at
    batch 10, the FedAvg CNN) compose and run at tiny sizes; `--only` runs the others the same way."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "estimate_accuracy.py"), "--smoke", "--json",
                          "--data-root", str(fake_root)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["workload"] for r in rows] == ["b", "c"]
    assert all(r["predicted_seconds_per_round"] > 0 and r["measured_seconds_per_round"] > 0 for r in rows)


def test_grouped_step_benchmark_smoke_form():
    """benchmarks/grouped_step.py (the measurement behind engine=auto's grouped choice) runs in its --smoke form:
    both formulations on the same copies give the same gradients; a bad count is refused with exit 2."""
    script = SCRIPT.parent / "grouped_step.py"
    out = subprocess.run([sys.executable, str(script), "--smoke"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["model"], r["batch"], r["rows"]) for r in rows] == [("lenet", 4, 2), ("genconv", 3, 3)]
    for r in rows:
        assert r["max_grad_difference"] < 1e-4 and r["looped_ms"] > 0 and r["grouped_ms"] > 0
    bad = subprocess.run([sys.executable, str(script), "--repeats", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--repeats 0" in bad.stderr and "allowed >= 1" in bad.stderr
