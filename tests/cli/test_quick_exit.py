"""The commands end their process right after the exit hooks (command/quick_exit.py): the exit
code is the work's, every hook registered while it ran still runs, and what it wrote to a pipe
arrives whole; an uncaught exception tears down as usual."""
import subprocess
import sys

import pytest

WORK = """
import atexit, sys, pathlib
from fedcluster.command import entry
marker = pathlib.Path(sys.argv[1])
def work():
    atexit.register(lambda: marker.write_text("hook ran"))   # e.g. logging's, multiprocessing's, a tracker's
    print("x" * 200_000)                                      # more than a pipe's buffer: flushed at the end
    {ending}
entry._ended(work)
"""


def script(tmp_path, ending):
    return subprocess.run([sys.executable, "-c", WORK.format(ending=ending), str(tmp_path / "marker")],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("ending, code", [("pass", 0), ("sys.exit(3)", 3), ("sys.exit(None)", 0),
                                          ("sys.exit('fedcluster: error: a message')", 1)])
def test_the_works_exit_code_its_hooks_and_its_output(tmp_path, ending, code):
    out = script(tmp_path, ending)
    assert out.returncode == code, out.stderr
    assert out.stdout == "x" * 200_000 + "\n"
    assert (tmp_path / "marker").read_text() == "hook ran"
    if code == 1:
        assert out.stderr.strip() == "fedcluster: error: a message"


def test_an_uncaught_exception_still_prints_its_traceback_and_exits_1(tmp_path):
    out = script(tmp_path, "raise RuntimeError('boom')")
    assert out.returncode == 1 and "RuntimeError: boom" in out.stderr
    assert (tmp_path / "marker").read_text() == "hook ran"


def test_the_ending_is_armed_before_any_other_exit_hook():
    """entry.py arms before importing the command: a hook registered earlier would run after the
    ending, i.e. never. Importing entry (and what it imports) registers none."""
    probe = "import atexit; import fedcluster.command.entry; print(atexit._ncallbacks())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "0", out.stdout + out.stderr


def test_the_console_scripts_go_through_the_entry_functions():
    from importlib.metadata import entry_points
    scripts = {e.name: e.value for e in entry_points(group="console_scripts") if e.name.startswith("fedcluster")}
    assert scripts == {"fedcluster": "fedcluster.command.entry:main", "fedcluster-report": "fedcluster.command.entry:report"}
