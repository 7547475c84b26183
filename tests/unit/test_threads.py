"""fedcluster's process defaults for CPU threads (fedcluster/threads.py): OpenMP threads sleep
between ops unless the user chose otherwise, and a run says what it ran with."""
import os
import subprocess
import sys

import pytest

PROBE = "import {first}; import {second}, os; from fedcluster.threads import wait_policy; " \
        "print(os.environ.get('OMP_WAIT_POLICY'), '|', wait_policy())"


def probe(first="fedcluster", second="torch", **env):
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", PROBE.format(first=first, second=second)],
                         env={**base, **env}, capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.parametrize("first, second, env, expected", [
    ("fedcluster", "torch", {}, "PASSIVE | PASSIVE"),                        # the command's order
    ("fedcluster", "torch", {"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE | ACTIVE"),   # the user's value is kept
    ("torch", "fedcluster", {}, "PASSIVE | libgomp default (torch loaded before fedcluster)"),
])
def test_the_wait_policy_default_and_what_a_process_reports(first, second, env, expected):
    assert probe(first, second, **env) == expected


def test_a_run_records_its_wait_policy_and_threads(small_cfg, tmp_path):
    from fedcluster.runner import run
    from fedcluster.threads import wait_policy
    import torch
    summary = run(small_cfg(), tmp_path / "run")
    assert summary["omp_wait_policy"] == wait_policy() and summary["threads"] == torch.get_num_threads()
