"""The evaluation package's layout: its modules import downwards only (no circle), none imports
another's private name, the rest of the project imports only what the package face names, and the
old top-level modules are gone."""
import ast
import importlib
from pathlib import Path

import pytest

import ektelo_pgm.evaluation as evaluation

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ektelo_pgm" / "evaluation"
#: Each module may import only those before it.
LEVELS = ["discretisation", "fidelity", "holdout", "figures", "report", "__init__"]


def relative_imports(path: Path, package: tuple):
    """``(module, names)`` of every ``from .x import ...`` in ``path`` (in functions too), the
    module as a dotted name resolved against ``package``; ``from . import x`` gives ``x``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if node.module and node.module.startswith("ektelo_pgm"):
                yield node.module, [a.name for a in node.names]
            continue
        base = package[:len(package) - node.level + 1]
        if node.module:
            yield ".".join(base + (node.module,)), [a.name for a in node.names]
        else:
            for alias in node.names:
                yield ".".join(base + (alias.name,)), []


def test_the_modules_import_downwards_and_no_private_name():
    for path in sorted(PACKAGE.glob("*.py")):
        level = LEVELS.index(path.stem)
        for module, names in relative_imports(path, ("ektelo_pgm", "evaluation")):
            assert not [n for n in names if n.startswith("_")], f"{path.name} imports private {names} from {module}"
            if module.startswith("ektelo_pgm.evaluation."):
                lower = module.split(".")[2]
                assert LEVELS.index(lower) < level, f"{path.name} imports {module}, which is not below it"


def test_the_rest_of_the_project_imports_only_the_package_face():
    for path in sorted((ROOT / "ektelo_pgm").rglob("*.py")):
        if PACKAGE in path.parents:
            continue
        package = ("ektelo_pgm",) + path.relative_to(ROOT / "ektelo_pgm").parent.parts
        for module, names in relative_imports(path, package):
            if module.startswith("ektelo_pgm.evaluation"):
                assert module == "ektelo_pgm.evaluation" and set(names) <= set(evaluation.__all__), (
                    f"{path.relative_to(ROOT)} imports {names} from {module}; import from ektelo_pgm.evaluation "
                    "what its __all__ names")


def test_the_face_names_what_its_modules_define_and_the_old_modules_are_gone():
    for name in evaluation.__all__:
        value = getattr(evaluation, name)
        if callable(value):  # a function or class defined in one of the package's modules
            assert value.__module__.startswith("ektelo_pgm.evaluation."), f"{name} comes from {value.__module__}"
    for old in ("report", "fidelity", "holdout"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"ektelo_pgm.{old}")
