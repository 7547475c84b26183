"""After a run: finished runs to tables, cells, paper comparisons and figures. Everything that reads finished
runs lives here, one idea per module:

- finished runs as data: `runs.py` (discovering run directories, their configs and cells), `packs.py`
  (archived campaigns packed as a few files), `cells.py` (a table's statistics cells), `compare.py`
  (intervals and differences), `defaults.py` (which settings a run moved from their defaults);
- the papers' tables: `tables/` (one module per paper, and the papers' printed numbers as data);
- figures: `figures.py` (also what a run draws of itself at its end);
- the `fedcluster-report` command: `command.py` (the generic report of a directory, and the subcommands:
  `leaderboard.py`, `reproductions.py`, `ablation.py`, `cam_cells.py`, `participation.py`, `privacy.py`, ...).

The command's names are loaded when first used, so a run that draws its figures at its end (figures.py) does
not import the report's statistics (scipy) with it."""
from importlib import import_module

_COMMAND = ("build_report", "make_report", "main", "parser", "ReportError", "Stat", "discover", "SUBCOMMANDS")

__all__ = list(_COMMAND)


def __getattr__(name):
    if name in _COMMAND:
        return getattr(import_module(".command", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
