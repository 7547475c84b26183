"""The report's text: each section's title, notes and tables in markdown or LaTeX, and the list
of runs found and skipped."""
from pathlib import Path
from typing import List, Optional, Tuple

from .cells import join_notes, latex_escape, to_latex, to_markdown
from .runs import Found
from .sections import Section



def listing(found: Found) -> Tuple[List[str], List[str]]:
    """(skipped runs as 'path: reason' lines, notes on what else was found or assumed)."""
    skipped = [f"{s.path}: {s.reason}" for s in found.skipped]
    notes = list(found.notes)
    if found.foreign:
        notes.append(f"ignored {len(found.foreign)} summary.json file(s) that fedcluster did not write "
                     f"(no versions.fedcluster), e.g. {found.foreign[0]}")
    return skipped, notes

def _bullets(heading: str, items: List[str], fmt: str) -> str:
    """A headed list in `fmt`."""
    if fmt == "latex":
        body = "\n".join(f"\\item {latex_escape(i)}" for i in items)
        return f"\\subsection*{{{latex_escape(heading)}}}\n\\begin{{itemize}}\n{body}\n\\end{{itemize}}\n"
    return f"## {heading}\n\n" + "\n".join(f"- {i}" for i in items) + "\n"

def render(sections: List[Section], listing: Tuple[List[str], List[str]], figure: Optional[Path], fmt: str) -> str:
    """The report text in `fmt`: per table its title, notes, sub-tables and extra frames; then
    the figure's path, the skipped runs and notes on the runs."""
    out = []
    for section in sections:
        if fmt == "latex":
            out.append(f"\\subsection*{{{latex_escape(section.title)}}}\n{latex_escape(join_notes(section.notes))}\n")
        else:
            out.append(f"## {section.title}\n\n{join_notes(section.notes)}\n")
        for subtitle, table in section.parts:
            if subtitle:
                out.append(f"\\paragraph{{{latex_escape(subtitle)}}}\n" if fmt == "latex" else f"### {subtitle}\n")
            if table.notes:
                out.append((latex_escape(join_notes(table.notes)) if fmt == "latex" else join_notes(table.notes)) + "\n")
            out.append((to_latex(table.frame) if fmt == "latex" else to_markdown(table.frame)) + "\n")
            for heading, frame in table.extra + ([table.baseline] if table.baseline else []):
                if len(frame):
                    out.append(f"\\paragraph{{{latex_escape(heading)}}}\n{to_latex(frame)}\n" if fmt == "latex"
                               else f"#### {heading}\n\n{to_markdown(frame)}\n")
    if figure is not None:
        line = f"ARI over rounds (1-based; mean over seeds): {figure}"
        out.append((latex_escape(line) if fmt == "latex" else line) + "\n")
    skipped, notes = listing
    if skipped:
        out.append(_bullets("Skipped runs (in no table)", skipped, fmt))
    if notes:
        out.append(_bullets("Notes on the runs found", notes, fmt))
    return "\n".join(out)
