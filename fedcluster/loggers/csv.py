"""metrics.csv as a live file: the rows of each evaluated round are appended as the round ends,
so `tail -f` and live plots work. At a start or a resume the file is rewritten (atomically) to
the rows the run holds, dropping rows of rounds a checkpoint did not keep; at the end the run
rewrites it whole (artifacts.write_results), so a finished run's file is the same whatever
happened on the way."""
import csv
import os
from pathlib import Path

from ..errors import WriteFailed
from ..lifecycle.io import write_csv
from ..lifecycle.rundir import check_still_owned
from ..signals import deferred
from ..lifecycle.record import METRICS_FILE, metrics_table
from .base import Logger


class CSVLogger(Logger):
    def __init__(self, flush: bool = True):
        self.flush = flush      # fsync after each round's rows (a crash loses at most the round being written)
        self.path = None

    def open(self, out, config, ids, rows, first_round):
        self.path = Path(out) / METRICS_FILE
        self.ids = ids
        if rows:
            write_csv(self.path, metrics_table(rows, ids))
        elif self.path.exists():   # rows of a killed attempt that never checkpointed
            self.path.unlink()

    def log_round(self, t, rows, train_seconds):
        if not rows:
            return
        frame = metrics_table(rows, self.ids)
        if not self.path.exists():   # the first rows: the file with its header
            write_csv(self.path, frame)
            return
        check_still_owned(self.path.parent)
        size = None
        try:
            size = self.path.stat().st_size
            with deferred(), open(self.path, "a", newline="") as f:
                frame.to_csv(f, header=False, index=False, quoting=csv.QUOTE_MINIMAL)
                if self.flush:
                    f.flush()
        except OSError as e:   # a full disk or a read-only file system: no half-written row stays behind
            check_still_owned(self.path.parent)   # or the run directory went away meanwhile
            if size is not None:
                try:
                    os.truncate(self.path, size)
                except OSError:
                    pass
            raise WriteFailed(self.path, e.strerror or str(e)) from e
