"""The jobs a rows-sweeper preset makes (fedcluster/command/rows_sweeper.py), and each job's directory name, as a
sweep of the composed preset makes them; shared by the tests of the grid presets."""
from hydra._internal.config_loader_impl import get_overrides_dirname
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from conftest import CONF
from fedcluster.command.rows_sweeper import row_jobs
from fedcluster.config.store import compose_config, sweep_job_dirname
from fedcluster.run_records.identity import NAME_EXCLUDED_KEYS

PARSER = OverridesParser.create()


def grid(preset, command_line=()):
    """Each job's overrides, as the rows sweeper makes them from the composed preset and the command line."""
    sweeper = compose_config([f"+preset={preset}"], CONF, with_hydra=True).hydra.sweeper
    assert sweeper._target_ == "fedcluster.command.rows_sweeper.RowsSweeper"
    params = [f"{k}={v}" for k, v in OmegaConf.to_container(sweeper.params).items()] + list(command_line)
    rows = [PARSER.parse_overrides(list(r)) for r in sweeper.rows]
    keys = [o.get_key_element() for o in PARSER.parse_overrides(list(command_line))]
    return row_jobs(PARSER.parse_overrides(params), rows, keys)


def name(job):
    return sweep_job_dirname(get_overrides_dirname(PARSER.parse_overrides(job), list(NAME_EXCLUDED_KEYS), ",", "="))
