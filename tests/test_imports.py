"""The package's shape, drawn from its own source with ``ast``: no import circle (imports inside
functions included), no module importing another module's private name, no module outside
``kernels/`` over 600 lines."""
from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ektelo_pgm"
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def resolve(importer: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` reads from."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package(path) else base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name: str, path: Path, known: dict[str, Path]):
    """``(target module, imported name or None, line)`` for every import of the module, at any
    depth (inside functions too); a ``from P import m`` naming a submodule targets ``P.m``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            source = resolve(name, path, node)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in known:
                    yield submodule, None, node.lineno
                else:
                    yield source, alias.name, node.lineno


def graph() -> dict[str, set[str]]:
    """The package's import graph: module -> the package's modules it imports."""
    known = modules()
    return {name: {target for target, _, _ in imports(name, path, known) if target in known and target != name}
            for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One circle (a path back to its start) for every strongly connected group of modules."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return [shortest_circle(edges, group, min(group)) for group in groups]


def shortest_circle(edges: dict[str, set[str]], group: set[str], start: str) -> list[str]:
    """The shortest path from ``start`` back to itself inside a strongly connected ``group``."""
    paths, queue = {start: [start]}, deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(edges[v] & group):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    raise ValueError(f"{start} is on no circle")


def private_imports() -> list[str]:
    """``module:line imports _name from other`` for every private name read across modules of the
    package: imported by name, or reached as an attribute of an imported module."""
    known = modules()
    found = []
    for name, path in known.items():
        aliases = {}
        for target, imported, line in imports(name, path, known):
            if target.startswith("ektelo_pgm") and target != name and imported and is_private(imported):
                found.append(f"{name}:{line} imports {imported} from {target}")
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = resolve(name, path, node)
                for alias in node.names:
                    if f"{source}.{alias.name}" in known:
                        aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in known:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and aliases[node.value.id] != name and is_private(node.attr)):
                found.append(f"{name}:{node.lineno} reads {node.attr} of {aliases[node.value.id]}")
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_the_package_has_no_import_circle():
    found = circles(graph())
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


def test_the_circle_finder_names_a_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert circles(edges) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_relative_imports_resolve_from_modules_and_packages():
    node = ast.parse("from ..estimation import Objective").body[0]
    assert resolve("ektelo_pgm.pgm.appgm.objective", PACKAGE / "pgm/appgm/objective.py", node) \
        == "ektelo_pgm.pgm.estimation"
    node = ast.parse("from . import optimizers").body[0]
    assert resolve("ektelo_pgm.pgm", PACKAGE / "pgm/__init__.py", node) == "ektelo_pgm.pgm"
    edges = graph()
    assert "ektelo_pgm.pgm.optimizers" in edges["ektelo_pgm.pgm"]  # 'from .optimizers import ...'
    assert "ektelo_pgm.errors" in edges["ektelo_pgm.pgm.estimation"]


def test_no_module_imports_another_modules_private_name():
    found = private_imports()
    assert not found, "private names imported across modules: " + "; ".join(found)


def sizes() -> dict[str, int]:
    return {name: len(path.read_text().splitlines()) for name, path in modules().items()
            if not name.startswith("ektelo_pgm.kernels")}


def test_no_module_outside_the_kernels_is_over_600_lines():
    over = {name: n for name, n in sizes().items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: " + ", ".join(f"{k} ({v})" for k, v in sorted(over.items()))
