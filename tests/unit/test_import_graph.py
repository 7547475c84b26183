"""The package's import graph: no two subpackages (or top-level modules) import each other, even
through others. A cycle makes import order matter and ties two ideas into one; found statically
from every `from ... import` (function-level imports included; `if TYPE_CHECKING:` blocks
excluded), so a cycle is caught before anyone imports in the wrong order."""
import ast
from pathlib import Path

import fedcluster

ROOT = Path(fedcluster.__file__).parent


def _unit(path: Path) -> str:
    """The subpackage a file belongs to, or the module's own name at the top level."""
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else parts[0][:-3]


def _type_checking_lines(tree) -> set:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                lines.update(range(sub.lineno, sub.end_lineno + 1))
    return lines


def import_graph() -> dict:
    edges = {}
    for path in ROOT.rglob("*.py"):
        package = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if path.name != "__init__.py":
            package = package[:-1]
        else:
            package = package[:-1]
        tree = ast.parse(path.read_text())
        skip = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.lineno in skip:
                continue
            base = package[: len(package) - (node.level - 1)] if node.level else []
            target = base + (node.module.split(".") if node.module else [])
            if not target or target[0] != "fedcluster":
                continue
            names = [target] if node.module and len(target) > 1 else [target + [a.name] for a in node.names]
            for t in names:
                if len(t) > 1 and t[1] != _unit(path):
                    edges.setdefault(_unit(path), set()).add(t[1])
    return edges


def cycles(edges: dict) -> list:
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def test_the_finder_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_is_read_from_relative_and_absolute_imports():
    edges = import_graph()
    # report/tables/common.py reaches fedcluster/metrics.py three levels up (`from ...metrics import`)
    assert "local_training" in edges["algorithms"] and "metrics" in edges["report"]


def test_no_import_cycle_between_subpackages():
    assert cycles(import_graph()) == []

