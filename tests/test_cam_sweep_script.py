"""scripts/cam_fmnist_table1.sh (Fed-CAM Table 1 at the per-client scale): every job it launches
composes as the CLI would compose it (a job's own algorithm.* settings included), and each has
its own run directory, so a resumed sweep skips exactly the finished ones."""
import os
import stat
import subprocess

from conftest import ROOT, make_cfg
from fedcluster.identity import NAME_EXCLUDED_KEYS


def test_every_job_composes_and_has_its_own_directory(tmp_path):
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "bin" / "fedcluster"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > "{tmp_path}/call"\ncat "{tmp_path}/call" >> "{calls}"\n'
                    f'echo "---" >> "{calls}"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    subprocess.run(["bash", str(ROOT / "scripts" / "cam_fmnist_table1.sh"), str(tmp_path / "sweep")], env=env,
                   check=True, capture_output=True, text=True)
    jobs = [block.strip().splitlines() for block in calls.read_text().split("---") if block.strip()]
    assert len(jobs) == 4 * (3 * 5 + 6)          # 4 cells x (3 seeds x 5 core rows + 6 sensitivity rows)
    names = set()
    for args in jobs:
        overrides = []
        for a in args:
            key, _, value = a.partition("=")
            if key.startswith("hydra.sweeper.params."):
                overrides.append(f"{key[len('hydra.sweeper.params.'):]}={value}")
            elif not key.startswith("hydra."):
                overrides.append(a)
        make_cfg([a for a in args if not a.startswith("hydra.")])   # what the CLI composes when it launches
        cfg = make_cfg(overrides)                # the job; raises on a key the composed algorithm does not have
        assert cfg.model.name == "fedavg_cnn" and cfg.partition.num_clients == 20
        names.add(",".join(sorted(o for o in overrides if o.partition("=")[0].lstrip("+") not in NAME_EXCLUDED_KEYS)))
    assert len(names) == len(jobs)
