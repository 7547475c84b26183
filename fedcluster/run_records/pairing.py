"""Which center serves which distribution, as a run's summary.json records it (summary.py writes
both pairings; the tables, the importance error and the importance figures read them here)."""
from typing import Dict, Tuple


def center_pairing(summary: dict) -> Tuple[Dict[str, int], bool]:
    """({distribution: center}, label_free). The pairing that reads no test data (Hungarian on the
    clients' final weights times their true mixtures, evaluation.assignment_costs) where the run
    recorded it; else the test-loss pairing, which lets test labels decide which center a column
    shows (runs before 2026-11-26, or a method whose clients carry no weights)."""
    if summary.get("matched_center_by_assignment"):
        return summary["matched_center_by_assignment"], True
    return summary.get("matched_center") or {}, False
