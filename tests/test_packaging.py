"""setup.py declares what the package imports: a plain ``pip install -e .`` can run every path
the README advertises (the raw-CSV path needs pandas), and optional packages are extras."""
import ast
import re
import sys
from pathlib import Path

import setuptools

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTION = {"sksparse": "scikit-sparse", "sklearn": "scikit-learn"}  # import name -> distribution name, where they differ


def setup_arguments(monkeypatch) -> dict:
    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: captured.update(kwargs))
    monkeypatch.chdir(ROOT)
    exec(compile((ROOT / "setup.py").read_text(), "setup.py", "exec"), {"__name__": "__main__"})
    return captured


def names(requirements) -> set:
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}


def third_party_imports() -> dict:
    """Top-level module of every absolute import in the package -> whether it is optional (inside
    a ``try`` that catches ImportError)."""
    found = {}
    for path in (ROOT / "ektelo_pgm").rglob("*.py"):
        tree = ast.parse(path.read_text())
        guarded = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                    isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                    for h in node.handlers):
                guarded.update(id(n) for stmt in node.body for n in ast.walk(stmt))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("ektelo_pgm", "__future__"):
                    found[top] = found.get(top, True) and id(node) in guarded
    return found


def test_every_import_is_declared_and_only_guarded_ones_are_optional(monkeypatch):
    arguments = setup_arguments(monkeypatch)
    required = names(arguments["install_requires"])
    extras = set().union(*(names(r) for r in arguments["extras_require"].values()))
    imports = third_party_imports()
    assert {"numpy", "scipy", "numba", "networkx", "pandas", "sksparse"} <= set(imports)
    for module, optional in imports.items():
        distribution = DISTRIBUTION.get(module, module).lower()
        where = extras | required if optional else required
        assert distribution in where, f"{module} is imported but {distribution} is not declared in setup.py"
    assert "pandas" in required  # TableEncoder (raw CSVs) is part of the advertised package
