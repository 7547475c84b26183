"""Paper-shaped tables: one module per paper with its table builders and reported numbers.
This is the registry (table name -> Spec) that fedcluster-report reads; adding a paper is one
module plus one line here."""
from . import cam, clove, fedsoft
from .common import (GENERIC, METRIC_RANGE, PERCENT_METRICS, Context, Spec, Table, ari_curve, first_round_reached,
                     with_verdicts)

TABLES = {**clove.TABLES, **cam.TABLES, **fedsoft.TABLES}

__all__ = ["TABLES", "GENERIC", "Context", "Spec", "Table", "ari_curve", "first_round_reached", "with_verdicts",
           "PERCENT_METRICS", "METRIC_RANGE"]
