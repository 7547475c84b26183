"""Finished runs as data: discovering run directories and their configs (`runs.py`) and the
statistics cells of a table (`cells.py`). Both the paper tables (fedcluster/tables) and the
report (fedcluster/report) read them; neither imports the other's internals through here."""
