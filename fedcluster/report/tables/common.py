"""What every paper's tables share: the table and context types, the Spec that registers a
table, protocol comparison, ARI curves, matched centers, and the generic table for runs of no
paper. Each paper's tables and reported numbers live in its own module (fedsoft.py, cam.py,
clove.py); report/tables/__init__.py is the registry.

Each table function takes the cells of one (sub-)table (runs that differ only in seed, see
report/runs.py) and lays them out by the config keys it `consumes`; every other key that varies
has already split the runs into separate sub-tables, so no row ever averages runs of different
configurations. Centers are relabelled per run so that column c(theta_j) is the center paired with
distribution j: by the clients' final weights and true mixtures (`matched_center_by_assignment`,
no test data), or, for a run that did not record that pairing, by test loss (`matched_center`,
which reads test labels; the table then says so in a note). Raw indices stay in summary.json."""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from ...metrics import hungarian_match
from ...run_records.pairing import center_pairing
from ..cells import Reported, Stat, Verdict
from ..runs import ABSENT, Cell, ReportError, Run, show


# -- Protocols: the setting each paper table was measured in. The report puts a paper column
# beside ours as "paper" only where our runs match every key given here; otherwise the header
# says "paper (different protocol: rounds 100 vs ours 20)". None: the paper does not say.
@dataclass(frozen=True)
class Protocol:
    """A paper table's protocol keys. samples_per_client: training samples per client (an int,
    or (low, high) for sizes drawn uniformly from that range); training_pool "full": the whole
    training set is split among the clients (no fixed size per client); dataset: our
    dataset.name for the paper's data (only where the table's paper column is one data set)."""
    rounds: Optional[int] = None
    num_clients: Optional[int] = None
    samples_per_client: Optional[Union[int, Tuple[int, int]]] = None
    training_pool: Optional[str] = None
    dataset: Optional[str] = None

# -- Identities: which runs a paper table is for. A run whose algorithm, data or model is not the
# table's is never placed beside the paper's numbers (report/sections.py moves it to the generic
# table with a note); the Protocol above only labels differences in scale (rounds, clients, sizes).
@dataclass(frozen=True)
class Identity:
    """The config values a paper table's runs must have: per dotted key, the values the table's
    setting allows (its methods, data sets, model, and the partitions it lays out). `of` builds
    one; tests/reports/test_report_labels.py composes every preset and checks that its runs are accepted
    by its table and that every allowed value comes from a preset or the paper's own table."""
    allowed: Tuple[Tuple[str, Tuple[object, ...]], ...]

    @classmethod
    def of(cls, algorithm: Sequence[str], dataset: Sequence[str], model: Sequence[str],
           partition: Optional[Sequence[str]] = None, extra: Optional[Dict[str, Sequence]] = None) -> "Identity":
        """algorithm.name, dataset.name, model.name (and partition.name, further keys) allowed."""
        keys = {"algorithm.name": algorithm, "dataset.name": dataset, "model.name": model}
        if partition is not None:
            keys["partition.name"] = partition
        keys.update(extra or {})
        return cls(tuple((k, tuple(unique(v))) for k, v in keys.items()))

    def values(self, key: str) -> Optional[Tuple[object, ...]]:
        """The allowed values of `key` (None: the table does not restrict it)."""
        return dict(self.allowed).get(key)

    def mismatches(self, run: Run) -> List[str]:
        """'algorithm.name ifca (the table's: fedsoft)' for each key whose value the run has
        and the table does not allow (a key missing from the run's config mismatches too: the
        report cannot tell that the run is the table's)."""
        out = []
        for key, values in self.allowed:
            have = run.value(key)
            if not any(have == v and isinstance(have, bool) == isinstance(v, bool) for v in values):
                out.append(f"{key} {show(have)} (the table's: {', '.join(show(v) for v in values)})")
        return out

@dataclass
class Context:
    """What a table function needs besides its cells: the table's name (for the paper's
    numbers and protocol) and the config keys that vary between its runs."""
    table: str
    varying: List[str]
    protocol: Optional["Protocol"] = None   # the setting the paper's numbers were measured in

@dataclass
class Table:
    """One (sub-)table: the frame, notes that belong under its title, and extra frames
    (heading, frame) printed after it (e.g. CAM's clustering diagnostics)."""
    frame: pd.DataFrame
    notes: List[str] = field(default_factory=list)
    extra: List[Tuple[str, pd.DataFrame]] = field(default_factory=list)
    cells: List[Cell] = field(default_factory=list)      # set by the caller: what the table shows
    laid_out: List[str] = field(default_factory=list)    # the varying keys it lays out
    split: List[Tuple[str, object]] = field(default_factory=list)   # (key, value) this sub-table is for
    compare: Optional[Dict[str, str]] = None   # {paper column: our column}; None: the nearest Stat column to its left
    baseline: Optional[Tuple[str, pd.DataFrame]] = None   # (heading, differences to --baseline), report/baseline.py

VERDICT_NOTE = ("'− paper' columns: our mean minus the paper's, and whether ours lies within the paper's mean ± 2 std "
                "(its std; '(ours)': our std over seeds, where the paper gives none; 'no std': neither exists, so the "
                "difference alone). Where a paper column's header names a protocol gap, the two compare unlike settings.")


def paired_columns(table: Table) -> List[Tuple[str, str]]:
    """(paper column, our column) for every column of a paper's numbers (Reported cells): our column
    is the one `table.compare` names, else the nearest column to its left holding our statistics."""
    frame = table.frame
    cols = list(frame.columns)
    pairs = []
    for i, col in enumerate(cols):
        if not any(isinstance(v, Reported) for v in frame[col]):
            continue
        ours = (table.compare or {}).get(col) or next(
            (c for c in reversed(cols[:i]) if any(isinstance(v, Stat) for v in frame[c])), None)
        if ours is not None and ours in frame:
            pairs.append((col, ours))
    return pairs


def with_verdicts(table: Table) -> Table:
    """After every column of a paper's numbers (Reported cells), a `<our column> − paper` column of
    Verdicts: the difference and whether ours is inside the paper's ± 2 std (paired_columns)."""
    frame = table.frame
    pairs = dict(paired_columns(table))
    if not pairs:
        return table
    out = {}
    for col in frame.columns:
        out[col] = list(frame[col])
        ours = pairs.get(col)
        if ours is None:
            continue
        verdicts = [Verdict.of(o, p) if isinstance(o, Stat) and isinstance(p, Reported) else None
                    for o, p in zip(frame[ours], frame[col])]
        out[f"{ours} − paper"] = [v if v is not None else "" for v in verdicts]
    table.frame = pd.DataFrame(out)
    table.notes = list(table.notes) + [VERDICT_NOTE]
    return table


def index_cells(cells: Sequence[Cell], keyfunc: Callable[[Cell], tuple]) -> Dict[tuple, Cell]:
    """{layout key: cell}. Two cells on one layout key would be averaged together, which the
    table must never do: the table's `consumes` list and its layout disagree (a bug)."""
    out = {}
    for c in cells:
        k = keyfunc(c)
        if k in out:
            raise ReportError(f"internal: two configurations share the table position {k} "
                              f"({out[k].runs[0].path} and {c.runs[0].path}); please report this")
        out[k] = c
    return out

def local_metric(summary: dict, key: str):
    return (summary.get("local") or {}).get(key)

def pairing_notes(summaries: Sequence[dict]) -> List[str]:
    """A table note for runs whose centers were paired with distributions by test loss."""
    by_loss = sum(1 for s in summaries if "centers" in s and not center_pairing(s)[1])
    if not by_loss:
        return []
    return [f"Centers of {by_loss} of {len(summaries)} runs are paired with distributions by test loss, which "
            "reads test labels: those runs recorded no label-free pairing (matched_center_by_assignment: runs "
            "before 2026-11-26, or a method whose clients carry no weights). The other runs are paired by the "
            "clients' final weights and true mixtures."]

def matched_matrix(summary: dict, metric: str, pairing: Optional[Dict[str, int]] = None) -> np.ndarray:
    """[distribution, distribution]: row d = test distribution, column j = the center paired
    with distribution j (by `pairing`, default center_pairing; NaN where no center was paired)."""
    names = summary["distributions"]
    raw = np.array([summary["centers"][metric][d] for d in names], dtype=float)   # [D, K]
    out = np.full((len(names), len(names)), np.nan)
    pairing = center_pairing(summary)[0] if pairing is None else pairing
    for j, d in enumerate(names):
        c = pairing.get(d, -1)
        if c is not None and 0 <= c < raw.shape[1]:
            out[:, j] = raw[:, c]
    return out

def paper_matched(matrix, keys=None) -> Tuple[np.ndarray, Optional[list]]:
    """The paper's center matrix with its centers relabelled the way ours are (Hungarian on its own
    numbers), and its cells' keys (paper_numbers.key_matrix) put in the same places."""
    m = np.asarray(matrix, dtype=float)
    order = hungarian_match(m.T)
    moved = [[row[c] for c in order] for row in keys] if keys is not None else None
    return m[:, order], moved

def ari_curve(summary: dict) -> List[Optional[float]]:
    """ARI after each round, index t-1 = round t (1-based), None where the method had no
    clustering yet. Older summaries listed only the rounds that had one, ending at the last
    round: those are padded at the front to the run's length."""
    curve = list(summary.get("ari_by_round") or [])
    rounds = summary.get("rounds")
    if isinstance(rounds, int) and 0 < len(curve) < rounds:
        curve = [None] * (rounds - len(curve)) + curve
    return [None if v is None else float(v) for v in curve]

def first_round_reached(summary: dict, threshold: float = 0.9) -> Optional[int]:
    """The first 1-based round whose ARI is >= threshold (None: never), from the aligned curve
    (the summary's own field where it has no curve)."""
    curve = ari_curve(summary)
    if not curve:
        return summary.get(f"first_round_ari_ge_{threshold}")
    return next((t for t, v in enumerate(curve, 1) if v is not None and v >= threshold), None)

def pct_of_final_by(summary: dict, by_round: int = 10) -> Optional[float]:
    """CLoVE Table 4: ARI at round `by_round` as a percentage of the final ARI (None when
    either is missing or the final ARI is not positive)."""
    curve = ari_curve(summary)
    if not curve:
        return summary.get(f"ari_pct_of_final_by_round{by_round}")
    if len(curve) < by_round or curve[by_round - 1] is None or not curve[-1] or curve[-1] <= 0:
        return None
    return 100.0 * curve[by_round - 1] / curve[-1]

def first_round_stat(summaries: Sequence[dict]) -> Stat:
    """Mean first round with ARI >= 0.9 over the seeds that reached it; the note says how many
    never did ("never" when none did)."""
    hits = [first_round_reached(s) for s in summaries]
    reached = [h for h in hits if h is not None]
    missing = len(hits) - len(reached)
    note = "" if missing == 0 else ("never" if not reached else f"{missing} never")
    return Stat.of(reached, style="round", note=note)

def ari_at_rounds(cells: Sequence[Cell], rows: List[dict], picks=(1, 2, 3, 5, 10, 20, 30)) -> None:
    """Add `ARI r<t>` (true 1-based round t) to each cell's row, for the rounds some run has."""
    longest = max((len(ari_curve(s)) for s in summaries_of(cells)), default=0)
    for cell, row in zip(cells, rows):
        curves = [ari_curve(s) for s in cell.summaries]
        for t in picks:
            if t <= longest:
                row[f"ARI r{t}"] = Stat.of(c[t - 1] for c in curves if len(c) >= t)

def our_protocol(run: Run) -> dict:
    """The protocol keys of one of our runs, in Protocol's terms."""
    s = run.summary
    rounds = run.value("rounds")
    clients = s.get("num_clients", run.value("partition.num_clients"))
    per_client = run.value("partition.samples_per_client")
    if per_client is ABSENT:
        low, high = run.value("partition.min_samples"), run.value("partition.max_samples")
        per_client = (low, high) if high is not ABSENT else None
    pool = run.value("dataset.train_size")
    return {"rounds": s.get("rounds") if rounds is ABSENT else rounds, "num_clients": clients,
            "samples_per_client": per_client, "training_pool": "full" if pool in (None, ABSENT) else pool,
            "dataset": show(run.value("dataset.name"))}

def _size(v) -> str:
    if v is None:
        return "split of the training set"
    if isinstance(v, tuple):
        return f"{v[0]}" if v[0] == v[1] else f"{v[0]}-{v[1]}"
    return str(v)

def protocol_gaps(protocol: Optional[Protocol], runs: Sequence[Run]) -> List[str]:
    """'rounds 100 vs ours 20'-style differences between a paper table's protocol and our runs
    (empty when they match, or when the paper gives no protocol)."""
    if protocol is None or not runs:
        return []
    ours = [our_protocol(r) for r in runs]
    gaps = []
    checks = [("dataset", "data set", str), ("rounds", "rounds", str), ("num_clients", "clients", str),
              ("samples_per_client", "samples/client", _size), ("training_pool", "training set", str)]
    for attr, label, fmt in checks:
        want = getattr(protocol, attr)
        if want is None:
            continue
        if attr == "samples_per_client" and isinstance(want, int):
            want = (want, want)
        have = sorted({o[attr] if not (attr == "samples_per_client" and isinstance(o[attr], int))
                       else (o[attr], o[attr]) for o in ours}, key=str)
        if have != [want]:
            gaps.append(f"{label} {fmt(want)} vs ours {'/'.join(fmt(h) for h in have)}")
    return gaps

def paper_label(base: str, gaps: Sequence[str]) -> str:
    """A paper column's header: as is where the protocol matches, else labelled with how it
    differs, so a reader never takes the two numbers for a like-for-like comparison."""
    return f"{base} (different protocol: {'; '.join(gaps)})" if gaps else base

def unique(items) -> list:
    return list(dict.fromkeys(items))

def runs_of(cells: Sequence[Cell]) -> List[Run]:
    return [r for c in cells for r in c.runs]

def summaries_of(cells: Sequence[Cell]) -> List[dict]:
    return [s for c in cells for s in c.summaries]

@dataclass(frozen=True)
class Spec:
    """A table: its title, its function, and the config keys it lays out (shell patterns).
    Any other key that varies splits the runs into one sub-table per combination. `identity`:
    which runs are the table's (every paper table has one; a run it does not accept is shown
    in the generic table instead, see report/sections.py); None accepts every run."""
    title: str
    build: Callable
    consumes: Tuple[str, ...]
    protocol: Optional["Protocol"] = None
    identity: Optional[Identity] = None

    @property
    def heading(self) -> str:
        """The title up to its first ': ' outside parentheses (e.g. 'FedSoft Table 1 (synthetic)'),
        for notes that name the table."""
        depth = 0
        for i, ch in enumerate(self.title):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and self.title.startswith(": ", i):
                return self.title[:i]
        return self.title

    def mismatches(self, run: Run) -> List[str]:
        """Why `run` is not this table's (empty: it is)."""
        return self.identity.mismatches(run) if self.identity is not None else []


PERCENT_METRICS = ("accuracy", "macro_f1")   # shown in % in tables and figures; ARI and MSE as they are
# Each metric's range as shown (accuracy in %): a figure's ± std band is clipped to it.
METRIC_RANGE = {"accuracy": (0.0, 100.0), "macro_f1": (0.0, 100.0), "mse": (0.0, float("inf")),
                "ari": (-1.0, 1.0)}
CONTEXT_KEYS = ("algorithm.name", "dataset.name", "partition.name", "model.name", "rounds")
# Which clients trained, named where every row has the same value and it is not the ordinary one (all clients,
# every round): a table of held-out or partial-participation runs says so (CAM samples as its base does).
PARTICIPATION_KEYS = {"partition.holdout_clients": 0.0, "algorithm.client_fraction": 1.0,
                      "algorithm.client_dropout": 0.0, "algorithm.base.client_fraction": 1.0,
                      "algorithm.base.client_dropout": 0.0}


def table_generic(cells, ctx) -> Table:
    """Runs without a paper table: one row per configuration, the varying config keys as
    columns, then the final metrics (centers matched to distributions where there are any)."""
    rows = []
    for cell in cells:
        rs = cell.summaries
        metric = rs[0].get("key_metric", "mse")
        row = {k: show(cell.value(k)) for k in ctx.varying}
        row["seeds"] = len(cell.seeds)
        if all("centers" in s and metric in s["centers"] for s in rs):
            names = rs[0]["distributions"]
            for j, name in enumerate(names):
                row[f"c({name}) on {name}"] = Stat.of(matched_matrix(s, metric)[j, j] for s in rs)
        for split in ("test", "train"):
            values = [local_metric(s, f"local_{split}_{metric}") for s in rs]
            if metric in PERCENT_METRICS:   # accuracy in % in every table, as the papers print it
                row[f"local {split} {metric} %"] = Stat.pct(values)
            else:
                row[f"local {split} {metric}"] = Stat.of(values)
        unseen = [local_metric(s, f"unseen_test_{metric}") for s in rs]
        if any(v is not None for v in unseen):   # clients held out of training (partition.holdout_clients)
            row[f"unseen clients test {metric}{' %' if metric in PERCENT_METRICS else ''}"] = \
                Stat.pct(unseen) if metric in PERCENT_METRICS else Stat.of(unseen)
        row["ARI"] = Stat.of(s.get("ari") for s in rs)
        rows.append(row)
    same = [f"{k}={show(cells[0].value(k))}" for k in CONTEXT_KEYS if k not in ctx.varying and cells]
    same += [f"{k}={show(cells[0].value(k))}" for k, ordinary in PARTICIPATION_KEYS.items()
             if cells and k not in ctx.varying and cells[0].value(k) not in (ABSENT, None, ordinary)]
    notes = [f"Same in every row: {', '.join(same)}."] if same else []
    notes += pairing_notes(summaries_of(cells))
    return Table(pd.DataFrame(rows).fillna(""), notes)


GENERIC = Spec("Runs: final metrics per configuration (no paper table)", table_generic, ("*",))
