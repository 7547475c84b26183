"""A sweep of a table's rows: each row a method with its own settings, crossed with the table's cells and seeds.

Hydra's basic sweeper crosses every swept key with every other. A paper's table is not such a product: its
rows are methods that each carry settings of their own (IFCA reporting its test-loss re-pick, FeSEM as the
control matched to FeSEM-CAM's start-up, a sensitivity row on seed 0 only), crossed with the table's cells
(partition, K) and seeds. Here `hydra.sweeper.rows` lists each row's overrides and `hydra.sweeper.params`
sweeps as the basic sweeper's do; a job is one row at one point of the params' product, the row's own value
in place of a param's where it sets the same key (conf/hydra/sweeper/rows.yaml, used by the Fed-CAM grid
presets conf/preset/cam/fmnist/). A key the command line sets that rows set too chooses among the rows
(`algorithm=ifca,fesem` keeps the rows whose algorithm is one of those); any other command-line key replaces
the param as in the basic sweeper. Every job is named by its overrides, as the basic sweeper's are, so the
skip-finished rule and every launcher work unchanged. Jobs run cell by cell: the params' product outermost
(its keys in their order, the last varying fastest), the rows within each point in their order."""
import itertools
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException


def _choices(override) -> List[str]:
    """`key=value` for each value an override takes (one, or each of a comma sweep)."""
    key = override.get_key_element()
    if not override.is_sweep_override():
        return [f"{key}={override.get_value_element_as_str()}"]
    if not override.is_discrete_sweep():
        raise HydraException(f"{key}: the rows sweeper takes a list of values (a,b,c), not a range or interval")
    return [f"{key}={value}" for value in override.sweep_string_iterator()]


def _keyed(overrides) -> "OrderedDict[str, List[str]]":
    out = OrderedDict()
    for o in overrides:      # a later override of a key replaces an earlier one (the command line wins)
        out[o.get_key_element()] = _choices(o)
    return out


def row_jobs(grid_overrides, rows: Sequence, chosen_on_command_line: Sequence[str] = ()) -> List[List[str]]:
    """Each job's overrides: every row (a list of parsed overrides) at every point of the grid's product (the
    params, then the command line's overrides, parsed), cell by cell; without rows, the basic sweeper's product.
    A key of `chosen_on_command_line` that a row sets keeps the row only where its value is one of the
    command line's. Jobs with the same overrides are run once."""
    grid = _keyed(grid_overrides)
    if not rows:
        return [list(job) for job in itertools.product(*grid.values())]
    keys = list(grid)
    jobs: Dict[tuple, tuple] = {}
    for r, row in enumerate(rows):
        own = _keyed(row)
        for key in set(own) & set(chosen_on_command_line) & set(grid):
            own[key] = [c for c in own[key] if c in grid[key]]
        if any(not choices for choices in own.values()):
            continue
        merged = OrderedDict(grid)
        merged.update(own)
        for job in itertools.product(*merged.values()):
            where = dict(zip(merged, job))
            place = tuple(grid[k].index(where[k]) if where[k] in grid[k] else len(grid[k]) for k in keys)
            jobs.setdefault(tuple(sorted(job)), (place, r, list(job)))
    return [job for _, _, job in sorted(jobs.values(), key=lambda v: (v[0], v[1]))]


ROWS_SHAPE = "a list of rows, each a list of overrides, e.g. [[algorithm=fedavg],[algorithm=ifca,seed=0]]"


def _checked_rows(rows) -> List[List[str]]:
    """`hydra.sweeper.rows` as lists of override strings; any other shape (a string, a flat list) is one line."""
    from omegaconf import ListConfig
    from ..errors import ConfigError
    if rows is None:
        return []
    if not isinstance(rows, (list, tuple, ListConfig)) or \
            any(not isinstance(row, (list, tuple, ListConfig)) or any(not isinstance(o, str) for o in row) for row in rows):
        shown = " ".join(str(rows).split())[:80]
        raise ConfigError(f"hydra.sweeper.rows={shown}: not {ROWS_SHAPE}")
    return [[str(o) for o in row] for row in rows]


def _nothing_chosen(rows, command_line) -> Exception:
    """The one-line refusal of a command line whose keys choose none of the rows: the key and the values rows allow."""
    from ..errors import ConfigError
    keys = {k for row in rows for k in _keyed(row)}
    for o in command_line:
        key = o.get_key_element()
        if key in keys:
            allowed = sorted({c.split("=", 1)[1] for row in rows for c in _keyed(row).get(key, [])})
            asked = ",".join(c.split("=", 1)[1] for c in _choices(o))
            return ConfigError(f"{key}={asked} chooses none of the sweep's rows; allowed: {key} one of "
                               f"{', '.join(allowed)} (the values its rows set)")
    return ConfigError("the command line chooses none of the sweep's rows")


class RowsSweeper(BasicSweeper):
    """The basic sweeper with `rows` (hydra/sweeper=rows): see the module's docstring."""

    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[Dict[str, str]] = None,
                 rows: Optional[List[List[str]]] = None):
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.rows = _checked_rows(rows)
        self.arguments: List[str] = []

    def sweep(self, arguments: List[str]):
        self.arguments = list(arguments)
        return super().sweep(arguments)

    def split_arguments(self, overrides, max_batch_size: Optional[int]) -> List[List[List[str]]]:
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        on_command_line = [o.get_key_element() for o in parser.parse_overrides(self.arguments)]
        rows = [parser.parse_overrides(row) for row in self.rows]
        jobs = row_jobs(overrides, rows, on_command_line)
        if rows and not jobs:   # the command line chose among the rows and none is left: say so, run nothing
            raise _nothing_chosen(rows, parser.parse_overrides(self.arguments))
        if max_batch_size is None:
            return [jobs]
        return list(self.split_overrides_to_chunks(jobs, max_batch_size))
