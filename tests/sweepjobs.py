"""What a sweep script launches, without running it: `fedcluster` replaced by a recorder on PATH,
each call's arguments kept, and a call turned into the overrides its job composes with."""
import os
import stat
import subprocess
from pathlib import Path
from typing import List


def recorded_jobs(script: Path, args: List[str], tmp_path: Path) -> List[List[str]]:
    """The argument lists of every `fedcluster` call `bash script args...` makes."""
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "bin" / "fedcluster"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" >> "{calls}"\necho "---" >> "{calls}"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    subprocess.run(["bash", str(script), *args], env=env, check=True, capture_output=True, text=True)
    if not calls.exists():   # the script made no call
        return []
    return [b.strip().splitlines() for b in calls.read_text().split("---") if b.strip()]


def job_overrides(args: List[str]) -> List[str]:
    """A call's job overrides: hydra.sweeper.params.KEY=V as KEY=V, other hydra.* settings left out."""
    out = []
    for a in args:
        key, _, value = a.partition("=")
        if key.startswith("hydra.sweeper.params."):
            out.append(f"{key[len('hydra.sweeper.params.'):]}={value}")
        elif not key.startswith("hydra."):
            out.append(a)
    return out
