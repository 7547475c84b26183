"""Every `fedcluster` command the README and the docs pages (docs/*.md) show composes as the CLI
composes it: a one-run command as written, a sweep (`-m key=a,b`) in every combination, a preset's
name exists (test_every_option runs each preset's jobs). Commands on bundled data (synthetic,
scikit-learn digits) are also built, data and partition included, so an example that would be
refused (too few images for its clients) fails here first. Only commands that need an optional
plugin or are shown failing on purpose are left out, each with why."""
import itertools
import re
import shlex

import pytest

from conftest import CONF, ROOT, make_cfg
from fedcluster.assemble import build

# The pages whose bash blocks this test reads: the README and every docs page (the manual moved there)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# README and docs commands this test leaves out, by one of their arguments (a whole argument), with why
LEFT_OUT = {
    "hydra/sweeper=optuna": "needs the optional Optuna sweeper (tests/cli/test_launchers.py)",
    "hydra/launcher=slurm": "needs the optional submitit launcher and a cluster (tests/cli/test_launchers.py)",
    "algorithm=fedtrim": "the plugin walk-through's own algorithm (tests/cli/test_plugins.py installs and runs it)",
    "--help": "no config (tests/cli/test_cli.py)",
}
BUNDLED = ("synthetic", "digits")


def readme_commands(program: str = "fedcluster", pages=PAGES):
    """Each `<program> ...` line of the pages' bash blocks, continuation lines joined and the trailing
    comment dropped."""
    out = []
    for page in pages:
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.split(r"\s#\s", line)[0].strip()
                if line == program or line.startswith(program + " "):
                    out.append(line)
    return out


def left_out(command: str) -> bool:
    args = shlex.split(command)[1:]
    return args[:1] == ["show"] or any(a in LEFT_OUT for a in args)   # `fedcluster show`: tests/unit/test_show.py


def jobs(command: str):
    """The override lists of a command's jobs: every combination of a sweep's comma lists."""
    args = shlex.split(command)[1:]
    if args[:1] == ["estimate"]:   # `fedcluster estimate <a run's arguments>`: those arguments' jobs compose
        args = [a for a in args[1:] if a not in ("--json", "--recalibrate")]   # (tests/cli/test_estimate.py runs it)
    sweep = "-m" in args or "--multirun" in args
    args = [a for a in args if a not in ("-m", "--multirun")]
    choices = []
    for a in args:
        key, _, value = a.partition("=")
        if sweep and "," in value and not value.startswith(("[", "{", "'", '"')):
            choices.append([f"{key}={v}" for v in value.split(",")])
        else:
            choices.append([a])
    return [list(c) for c in itertools.product(*choices)]


COMMANDS = readme_commands()
TESTED = [c for c in COMMANDS if not left_out(c)]


def test_the_readme_has_the_commands_this_test_reads():
    assert len(COMMANDS) >= 15 and "fedcluster" in COMMANDS
    assert any(c.startswith("fedcluster -m algorithm=fedavg,ifca,clove") for c in TESTED)
    quickstart = [c for c in readme_commands(pages=[ROOT / "README.md"]) if not left_out(c)]
    assert any(c.startswith("fedcluster -m algorithm=fedavg,ifca,clove") for c in quickstart), "the README's own sweep"
    assert any("dataset=tensors" in c for c in TESTED), "docs/own_data.md's commands"
    assert any(c.startswith("fedcluster +preset=") for c in TESTED), "docs/running.md's presets"


def test_the_readme_lists_every_algorithm_option_with_its_source():
    """The README's methods table: one row per conf/algorithm/*.yaml, each naming a method and a source."""
    text = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", text, re.M))
    options = sorted(p.stem for p in (CONF / "algorithm").glob("*.yaml"))
    assert sorted(o for o in rows if o in options) == options
    for option in options:
        method, source = rows[option].rsplit(" | ", 1)
        assert method.strip() and source.strip(), option


@pytest.mark.parametrize("command", TESTED)
def test_a_readme_command_composes_and_on_bundled_data_builds(command):
    for overrides in jobs(command):
        preset = next((o.split("=", 1)[1] for o in overrides if o.startswith("+preset=")), None)
        if preset is not None:   # its grid runs in test_every_option; here: the name the README gives exists
            assert (CONF / "preset" / f"{preset}.yaml").exists(), f"README names +preset={preset}"
            overrides = [o for o in overrides if not o.startswith("hydra.")]
        cfg = make_cfg(overrides)
        if preset is None and cfg.dataset.name in BUNDLED and cfg.hardware.device == "cpu":
            build(cfg)


@pytest.mark.parametrize("command", readme_commands("fedcluster-report"))
def test_a_readme_report_command_parses(command):
    """fedcluster-report's options as the README writes them (a placeholder such as <time> stands for
    a folder)."""
    from fedcluster.report import SUBCOMMANDS, parser
    argv = shlex.split(re.sub(r"<[^>]+>", "x", command))[1:]
    if argv and argv[0] in SUBCOMMANDS:   # fedcluster-report leaderboard ... / runs-csv ...: its module's own parser
        from importlib import import_module
        args = import_module(f"fedcluster.report.{SUBCOMMANDS[argv[0]]}").parser().parse_args(argv[1:])   # exits 2
        assert vars(args) and (any(vars(args).values()) or argv[0] == "reproductions")
        return
    args = parser().parse_args(argv)
    assert args.directory


def test_every_subcommand_has_its_parser_and_is_in_the_help():
    """Each subcommand of `fedcluster-report` (report/command.py's table) is a module with parser() and main(), and
    `fedcluster-report --help` names it."""
    from importlib import import_module
    from fedcluster.report import SUBCOMMANDS, parser
    text = parser().format_help()
    for name, module in SUBCOMMANDS.items():
        mod = import_module(f"fedcluster.report.{module}")
        assert callable(mod.main) and mod.parser().prog == f"fedcluster-report {name}", name
        assert f"fedcluster-report {name}" in " ".join(text.split()), name
