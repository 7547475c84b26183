"""metrics.csv as a live file: the rows of each evaluated round are appended as the round ends,
so `tail -f` and live plots work. At a start or a resume the file is rewritten (atomically) to
the rows the run holds, dropping rows of rounds a checkpoint did not keep; at the end the run
rewrites it whole (finished_run.write_results), so a finished run's file is the same whatever
happened on the way."""
import csv
import os
from pathlib import Path

from ..errors import WriteFailed
from ..run_records import fsops
from ..run_records.io import write_failure_reason, write_csv
from ..run_records.rundir import check_still_owned
from ..signals import deferred
from ..run_records.record import METRICS_FILE, metrics_table
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
        elif os.path.lexists(self.path):   # rows of a killed attempt that never checkpointed
            fsops.unlink(self.path)

    def log_round(self, t, rows, train_seconds):
        if not rows:
            return
        frame = metrics_table(rows, self.ids)
        if not self.path.exists():   # the first rows: the file with its header
            write_csv(self.path, frame)
            return
        check_still_owned(self.path.parent)
        size, f = None, None
        try:
            with deferred():
                # opened without following a link, in the claimed directory (fsops): a metrics.csv swapped
                # for a link mid-run is ELOOP here, and the file it points to is never appended to
                f = fsops.open_append(self.path)
                size = os.fstat(f.fileno()).st_size
                frame.to_csv(f, header=False, index=False, quoting=csv.QUOTE_MINIMAL)
                f.flush()
                f.close()
        except OSError as e:   # a full disk or a read-only file system: no half-written row stays behind
            check_still_owned(self.path.parent)   # or the run directory went away meanwhile
            if f is not None:
                try:
                    if size is not None:
                        os.ftruncate(f.fileno(), size)   # the file opened, never a name resolved again
                    f.close()
                except (OSError, ValueError):
                    pass
            raise WriteFailed(self.path, write_failure_reason(e)) from e
