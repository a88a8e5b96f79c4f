"""The package's layering: import-linter's contract (.importlinter: cli above commands above ... above layers) is
kept, and no import, at module level or inside a function, closes a circle between two modules."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (each a circle of imports), sorted; Tarjan's
    algorithm, iterative (no recursion limit on a long chain)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def test_cycles_finds_every_circle_and_only_circles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert cycles(edges) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []  # a chain is no circle
    assert cycles({"x": {"y"}, "y": {"x"}}) == [["x", "y"]]


# The imports of this checkout's package (run apart, so that another installed minibert is not the one read):
# {importer: {imported: [line numbers]}}, every import, including those inside functions.
IMPORTS = """
import json, grimp
graph = grimp.build_graph("minibert")
print(json.dumps({m: {i: sorted(d["line_number"] for d in graph.get_import_details(importer=m, imported=i))
                      for i in graph.find_modules_directly_imported_by(m)} for m in graph.modules}))
"""


def test_no_import_circles():
    pytest.importorskip("grimp")
    result = subprocess.run([sys.executable, "-c", IMPORTS], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    imports = json.loads(result.stdout)
    found = cycles({m: set(imported) for m, imported in imports.items()})
    lines = [f"  {importer} imports {imported} (line {', '.join(map(str, imports[importer][imported]))})"
             for group in found for importer in group for imported in sorted(set(imports[importer]) & set(group))]
    assert not found, ("imports that go round in a circle; move what both need down into a module both may "
                       "import:\n" + "\n".join(lines))


def test_layers_contract_is_kept():
    if shutil.which("lint-imports") is None:
        pytest.skip("import-linter is not installed (pip install import-linter)")
    # (this checkout's package, whichever minibert is installed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(["lint-imports", "--no-cache"], cwd=ROOT,  # (it reads ROOT/.importlinter)
                            capture_output=True, text=True, env=env)
    report = result.stdout[result.stdout.find("Contracts"):] + result.stderr  # names each broken contract
    assert result.returncode == 0, f"lint-imports found imports that break the layering:\n{report}"
