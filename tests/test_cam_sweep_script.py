"""scripts/cam_fmnist_tables.sh (Fed-CAM Tables 1 and 2 at the per-client scale): every job it launches
composes as the CLI would compose it (a job's own algorithm.* settings included), and each has
its own run directory, so a resumed sweep skips exactly the finished ones."""
import pytest

from conftest import ROOT, make_cfg
from fedcluster.identity import NAME_EXCLUDED_KEYS
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
