"""Table cells and output formats: a statistic over seeds (`Stat`) is one cell in a table
but prints as "mean ± std" in markdown and LaTeX and as three numeric columns in CSV."""
import math
from dataclasses import dataclass
from typing import Iterable, List, Optional, Tuple

import numpy as np
import pandas as pd

from .compare import Difference

DASH = "–"


def significant(x: float, digits: int) -> str:
    """x to `digits` significant digits, in plain notation for everyday magnitudes (150, not
    1.5e+02) and in exponent notation only for very small or large ones."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    rounded = float(f"{x:.{digits - 1}e}")
    magnitude = math.floor(math.log10(abs(rounded)))
    if -4 <= magnitude < 6:
        return f"{rounded:.{max(digits - 1 - magnitude, 0)}f}"
    return f"{rounded:.{digits - 1}e}"


@dataclass(frozen=True)
class Stat:
    """Values of one metric over a cell's seeds. std is the sample standard deviation
    (ddof=1): the seeds are a sample of the runs one could make, and the population formula
    understates the spread of three seeds by a fifth. `style`: "g" (3 significant digits,
    2 for the std), "pct" (one decimal, values already in percent) or "round" (a round number:
    whole where it is one, else one decimal)."""
    values: Tuple[float, ...]
    style: str = "g"
    note: str = ""   # shown after the numbers (e.g. a center index, "1 never"); CSV: `<col> note`
    offered: int = -1   # how many seeds were asked for (-1: as many as there are values)

    @classmethod
    def of(cls, values: Iterable, scale: float = 1.0, style: str = "g", note: str = "") -> "Stat":
        """Keep the finite values (a missing metric or a None round is no value), scaled."""
        kept, offered = [], 0
        for v in values:
            offered += 1
            if v is None or isinstance(v, bool):
                continue
            try:
                f = float(v)
            except (TypeError, ValueError):
                continue
            if math.isfinite(f):
                kept.append(f * scale)
        return cls(tuple(kept), style, note, offered)

    @classmethod
    def pct(cls, values: Iterable, note: str = "") -> "Stat":
        """Fractions shown in percent with one decimal."""
        return cls.of(values, 100.0, "pct", note)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else float("nan")

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if self.n > 1 else float("nan")

    def _num(self, x: float, for_std: bool = False) -> str:
        if for_std and abs(x) <= 1e-9 * max(abs(self.mean), 1e-300):
            x = 0.0   # identical values over seeds: float noise, not a spread
        if self.style == "pct":
            return f"{x:.1f}"
        if self.style == "round":
            return f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}"
        return significant(x, 2 if for_std else 3)

    def text(self) -> str:
        """'mean ± std'; a single value alone; '–' when there is none; the note after it
        in parentheses (alone when there is no value)."""
        if self.n == 0:
            return self.note or DASH
        text = self._num(self.mean) if self.n == 1 else f"{self._num(self.mean)} ± {self._num(self.std, True)}"
        if 0 <= self.offered and self.n < self.offered:   # some seeds had no value: say so, never pass it off as all
            text += f" (n={self.n} of {self.offered})"
        return f"{text} ({self.note})" if self.note else text

    def __str__(self) -> str:
        return self.text()


def _fmt(x: float, digits: Optional[int]) -> str:
    return significant(x, 3) if digits is None else f"{x:.{digits}f}"


@dataclass(frozen=True)
class Reported:
    """A number a paper reports, beside ours: its mean and, where the paper gives one, its
    std; `digits` decimals as printed (None: 3 significant digits). CSV: `<col> mean`, `<col> std`.
    `cell`: which printed number it is (tables.paper_numbers.CellKey, the row of paper_numbers.csv),
    so the per-cell account (report/account.py) can tell every printed number from the tables built
    over the runs; None for a number that is not one printed cell (a derived one)."""
    mean: float
    std: Optional[float] = None
    digits: Optional[int] = 1
    cell: Optional[tuple] = None

    def text(self) -> str:
        if not math.isfinite(self.mean):
            return DASH   # a dash the paper printed (e.g. CLoVE's "never reached")
        if self.std is None:
            return _fmt(self.mean, self.digits)
        return f"{_fmt(self.mean, self.digits)} ± {_fmt(self.std, self.digits)}"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Verdict:
    """Our mean minus the paper's, and whether our mean lies inside the paper's mean ± 2 std.
    The yardstick is the paper's std, or ours (over seeds) where the paper gives none; `basis`
    names which ("" when neither exists: no verdict, the difference alone). A printed "± 0" (all
    the paper's seeds gave one value) is met where our mean rounds to the printed value."""
    diff: float
    within: Optional[bool]
    basis: str
    digits: Optional[int] = 1

    @classmethod
    def of(cls, ours: "Stat", paper: Reported) -> Optional["Verdict"]:
        if ours.n == 0 or not math.isfinite(paper.mean):
            return None
        diff = ours.mean - paper.mean
        if paper.std == 0 and paper.digits is not None:
            # "± 0.0" printed: every seed gave the printed value, so ours agrees where it rounds to it
            return cls(diff, abs(diff) <= 0.5 * 10 ** -paper.digits + 1e-9, "paper", paper.digits)
        if paper.std is not None and paper.std > 0:
            scale, basis = paper.std, "paper"
        elif ours.n > 1 and ours.std > 0:
            scale, basis = ours.std, "ours"
        else:
            return cls(diff, None, "", paper.digits)
        return cls(diff, abs(diff) <= 2 * scale, basis, paper.digits)

    def text(self) -> str:
        sign = f"{'+' if self.diff >= 0 else '−'}{_fmt(abs(self.diff), self.digits)}"
        if self.within is None:
            return f"{sign} (no std)"
        return f"{sign} {'within' if self.within else 'OUTSIDE'} 2 std" + (" (ours)" if self.basis == "ours" else "")

    def __str__(self) -> str:
        return self.text()


def cell_text(value) -> str:
    """Any table cell as text (markdown and LaTeX)."""
    if isinstance(value, (Stat, Reported, Verdict, Difference)):
        return value.text()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def to_markdown(frame: pd.DataFrame) -> str:
    """A GitHub-style pipe table (pipes inside cells escaped)."""
    def esc(v):
        return cell_text(v).replace("|", "\\|").replace("\n", " ")
    cols = [esc(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
          "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
          "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
          "±": r"$\pm$", "–": "--", "—": "---", "≥": r"$\geq$", "≤": r"$\leq$", "§": r"\S{}",
          "×": r"$\times$", "θ": r"$\theta$", "λ": r"$\lambda$", "σ": r"$\sigma$", "°": r"$^\circ$",
          "−": r"$-$", "▲": r"$\blacktriangle$"}   # ▲ (significantly best) needs amssymb, as most papers load


def latex_escape(text) -> str:
    """Text safe inside a LaTeX document: special characters escaped one character at a time
    (so an escape is never escaped again), ± and a few symbols as math."""
    return "".join(_LATEX.get(ch, ch) for ch in str(text))


def to_latex(frame: pd.DataFrame) -> str:
    """A LaTeX tabular (no table float, so it can be \\input anywhere)."""
    cols = list(frame.columns)
    spec = "l" * max(len(cols), 1)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\hline",
             " & ".join(latex_escape(c) for c in cols) + r" \\", "\\hline"]
    for row in frame.itertuples(index=False):
        lines.append(" & ".join(latex_escape(cell_text(v)) for v in row) + r" \\")
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines)


def to_csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame for CSV: every column holding Stat cells becomes `<col> mean`, `<col> std`
    and `<col> n` numeric columns (std empty for one seed, all three empty for no value), and
    `<col> note` where a cell carries a note, so the CSV reads back as numbers; a paper's
    numbers (Reported) `<col> mean` and `<col> std`; a Verdict column its difference and
    `<col> within 2 std` (true/false, empty without a yardstick); other columns are kept as they are."""
    out = {}
    for col in frame.columns:
        values = list(frame[col])
        if any(isinstance(v, Reported) for v in values):
            out[f"{col} mean"] = [v.mean if isinstance(v, Reported) else float("nan") for v in values]
            out[f"{col} std"] = [v.std if isinstance(v, Reported) and v.std is not None else float("nan")
                                 for v in values]
        elif any(isinstance(v, Verdict) for v in values):
            out[col] = [v.diff if isinstance(v, Verdict) else float("nan") for v in values]
            out[f"{col} within 2 std"] = pd.array([v.within if isinstance(v, Verdict) else None for v in values],
                                                 dtype="boolean")
        elif any(isinstance(v, Difference) for v in values):   # in shown units (percentage points)
            def part(v, f):
                return f(v) * v.scale if isinstance(v, Difference) else float("nan")
            out[col] = [part(v, lambda d: d.diff) for v in values]
            out[f"{col} ci low"] = [part(v, lambda d: d.low) for v in values]
            out[f"{col} ci high"] = [part(v, lambda d: d.high) for v in values]
            out[f"{col} excludes 0"] = pd.array([v.excludes_zero if isinstance(v, Difference) else None
                                                 for v in values], dtype="boolean")
            out[f"{col} best"] = pd.array([v.best if isinstance(v, Difference) else None for v in values],
                                          dtype="boolean")
            # the baseline's own row: its difference is 0; its mean, what the others differ from, is here
            out[f"{col} baseline mean"] = [v.own_mean * v.scale if isinstance(v, Difference) and v.own_mean is not None
                                           else float("nan") for v in values]
        elif any(isinstance(v, Stat) for v in values):
            means, stds, ns = [], [], []
            for v in values:
                if isinstance(v, Stat):
                    means.append(v.mean)
                    stds.append(v.std)
                    ns.append(v.n if v.n else None)
                else:   # a row without this statistic (blank in the markdown), or a plain number or note
                    blank = v is None or v == "" or v == DASH or (isinstance(v, float) and math.isnan(v))
                    means.append(float("nan") if blank else v)
                    stds.append(float("nan"))
                    ns.append(None)
            out[f"{col} mean"] = means
            out[f"{col} std"] = stds
            out[f"{col} n"] = pd.array(ns, dtype="Int64")
            notes = [v.note if isinstance(v, Stat) else "" for v in values]
            if any(notes):
                out[f"{col} note"] = notes
        else:
            out[col] = values
    return pd.DataFrame(out)


def join_notes(notes: List[str]) -> str:
    """Notes as one paragraph of sentences."""
    return " ".join(n.strip() for n in notes if n and n.strip())
