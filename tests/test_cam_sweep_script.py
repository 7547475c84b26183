"""scripts/cam_fmnist_tables.sh (Fed-CAM Tables 1 and 2 at the per-client scale): every job it launches
composes as the CLI would compose it (a job's own algorithm.* settings included), and each has
its own run directory, so a resumed sweep skips exactly the finished ones."""
import subprocess

import pytest

from conftest import ROOT, make_cfg
from fedcluster.lifecycle.identity import NAME_EXCLUDED_KEYS
from sweepjobs import job_overrides, recorded_jobs


@pytest.mark.parametrize("table,count", [("table1", 4 * (3 * 5 + 6)), ("table2", 4 * (3 * 5 + 6) - 2 * 3)])
def test_every_job_composes_and_has_its_own_directory(tmp_path, table, count):
    """4 cells x (3 seeds x 5 core rows + 6 sensitivity rows); Table 2 runs FedAvg once per partition
    and seed (its client-wise data do not depend on K)."""
    jobs = recorded_jobs(ROOT / "scripts" / "cam_fmnist_tables.sh", [str(tmp_path / "sweep"), table], tmp_path)
    assert len(jobs) == count
    names, composed = set(), set()
    for args in jobs:
        overrides = job_overrides(args)
        names.add(",".join(sorted(o for o in overrides if o.partition("=")[0].lstrip("+") not in NAME_EXCLUDED_KEYS)))
        shape = tuple(o for o in overrides if o.partition("=")[0] not in ("seed", "num_clusters"))
        if shape in composed:                    # seeds and K compose alike: each other job shape once (CI time)
            continue
        composed.add(shape)
        make_cfg([a for a in args if not a.startswith("hydra.")])   # what the CLI composes when it launches
        cfg = make_cfg(overrides)                # the job; raises on a key the composed algorithm does not have
        assert cfg.model.name == "fedavg_cnn" and cfg.partition.num_clients == 20 and cfg.table == f"cam_{table}"
    assert len(names) == len(jobs)


def test_list_prints_the_jobs_it_would_run_with_the_extra_overrides_and_runs_none(tmp_path):
    """--list: one line per job, the same arguments the script passes to `fedcluster`, so
    `--list | xargs -P N -L 1 fedcluster` runs the same sweep side by side."""
    script = ROOT / "scripts" / "cam_fmnist_tables.sh"
    sweep = str(tmp_path / "sweep")
    ran = recorded_jobs(script, [sweep, "table1", "core", "hardware=cuda"], tmp_path)
    (tmp_path / "listing").mkdir()
    listed = recorded_jobs(script, [sweep, "table1", "core", "--list", "hardware=cuda"], tmp_path / "listing")
    assert listed == []                                  # --list calls fedcluster for nothing
    out = subprocess.run(["bash", str(script), sweep, "table1", "core", "--list", "hardware=cuda"],
                         check=True, capture_output=True, text=True).stdout
    assert [line.split() for line in out.splitlines()] == ran and len(ran) == 4 * 3 * 5
    assert all("hardware=cuda" in job for job in ran)


def test_paper_scale_jobs_compose_with_the_presets_200_clients(tmp_path):
    jobs = recorded_jobs(ROOT / "scripts" / "cam_fmnist_tables.sh",
                         [str(tmp_path / "sweep"), "table2", "core", "--scale=paper"], tmp_path)
    assert len(jobs) == 4 * 3 * 5 - 2 * 3
    cfg = make_cfg(job_overrides(jobs[0]))
    assert cfg.partition.num_clients == 200 and cfg.dataset.train_size is None and cfg.table == "cam_table2"


@pytest.mark.parametrize("arg, needle", [("--bogus", "option --bogus is unknown"),
                                         ("--scale=big", "--scale=big is unknown; allowed: per_client, paper"),
                                         ("lr", "argument 'lr' is not an override")])
def test_a_bad_argument_is_one_line_and_runs_nothing(tmp_path, arg, needle):
    jobs_dir = tmp_path / "sweep"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "cam_fmnist_tables.sh"), str(jobs_dir), "table1", "all", arg],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not jobs_dir.exists()
