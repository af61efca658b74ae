"""Every package the library imports is declared in ``pyproject.toml``: the core's at module
level, the optional extras' only inside the functions that need them (never at import time)."""
import ast
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: import names of distributions whose name differs
IMPORT_NAMES = {"scikit-learn": "sklearn", "PyMaxflow": "maxflow", "scikit-image": "skimage"}


def declared():
    """``(core, extras)``: the import names of the core dependencies and of the extras."""
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("no pyproject.toml beside the tests (an installed copy)")
    project = tomllib.loads(pyproject.read_text())["project"]

    def names(requirements):
        out = set()
        for requirement in requirements:
            name = requirement.split(";")[0].strip()
            for sep in "<>=!~[ ":
                name = name.split(sep)[0]
            out.add(IMPORT_NAMES.get(name, name.replace("-", "_")))
        return out
    extras = set().union(*map(names, project.get("optional-dependencies", {}).values()))
    return names(project["dependencies"]), extras


def imports(path):
    """``(module level, inside functions)``: the top-level names of the absolute imports."""
    top, local = set(), set()

    def visit(node, inside):
        for child in ast.iter_child_nodes(node):
            nested = inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda))
            if isinstance(child, ast.Import):
                found = {alias.name.split(".")[0] for alias in child.names}
            elif isinstance(child, ast.ImportFrom) and child.level == 0:
                found = {child.module.split(".")[0]}
            else:
                found = set()
            (local if nested else top).update(found)
            visit(child, nested)
    visit(ast.parse(path.read_text()), False)
    return top, local


def test_every_import_is_declared():
    core, extras = declared()
    known = core | set(sys.stdlib_module_names) | {"sklearn_ssvm"}
    for path in sorted((ROOT / "sklearn_ssvm").rglob("*.py")):
        top, local = imports(path)
        where = path.relative_to(ROOT)
        assert top <= known, f"{where} imports {sorted(top - known)} at module level: declare " \
                             f"them as dependencies"
        assert local <= known | extras, f"{where} imports undeclared {sorted(local - known)}"
