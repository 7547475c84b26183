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
    assert "engine" in edges["algorithms"] and "results" in edges["tables"]


def test_no_import_cycle_between_subpackages():
    assert cycles(import_graph()) == []


def test_a_refused_run_loads_no_table_or_analysis_library(tmp_path):
    """The CLI's start-up stays small: a run refused for a bad value (the commonest CLI call in a
    sweep of typos) stops before pandas, scipy, sklearn or matplotlib are imported (each a
    fraction of a second of every such call)."""
    import subprocess
    import sys
    probe = ("import sys, runpy\n"
             "sys.argv = ['fedcluster', 'rounds=0', 'hydra.run.dir=' + sys.argv[1]]\n"
             "try:\n    runpy.run_module('fedcluster.command.cli', run_name='__main__')\n"
             "except SystemExit as e:\n    code = e.code\n"
             "heavy = [m for m in ('pandas', 'scipy', 'sklearn', 'matplotlib') if m in sys.modules]\n"
             "print('exit', code, 'loaded', heavy)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "r")], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert "rounds=0 is out of range" in out.stderr, out.stderr
    assert out.stdout.strip() == "exit 2 loaded []", out.stdout   # 2: bad input
    assert not (tmp_path / "r").exists()


def test_the_meta_copy_that_sizes_a_model_draws_no_weights():
    """assemble.count_parameters builds a copy on the meta device: shapes only. Drawing its Xavier
    weights there went through torch's reference ops and loaded torch._dynamo (1-2 s of each run's
    start-up on the looped engine, which never needs it); the real model still gets its draws."""
    import subprocess
    import sys
    probe = ("import sys, torch\n"
             "from fedcluster.assemble import count_parameters\n"
             "from fedcluster.models.mlp import MLP\n"
             "n = count_parameters(lambda: MLP(in_shape=(8,), num_outputs=3, hidden=[4], init='xavier'))\n"
             "print(n, 'torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == [str(8 * 4 + 4 + 4 * 3 + 3), "False"], out.stdout + out.stderr
