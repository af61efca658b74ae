"""The house: the package's import graph, drawn from the code (every ``import`` statement,
those inside functions included), has no circle, and no module imports from a layer above its
own (``doc/architecture.md``, "Layers")."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sklearn_ssvm"

#: the layers, lowest first: a module may import its own layer and the layers below
LAYERS = [
    ("kernels", ["_kernels", "_validation"]),
    ("axes", ["penalties", "smoothing", "metrics", "feature_extraction", "feature_maps"]),
    ("inference", ["marginals"]),
    ("structures", ["structures", "inspection"]),
    ("solvers", ["solvers"]),
    ("estimators", ["estimators"]),
    ("model selection", ["model_selection"]),
    ("applications", ["datasets", "__main__", "_compile", ""]),  # "": the package's __init__
]


def layer_of(module):
    """The rank of ``sklearn_ssvm.<module>`` (its first component names the layer)."""
    head = module.split(".")[1] if "." in module else ""
    for rank, (_, heads) in enumerate(LAYERS):
        if head in heads:
            return rank
    raise AssertionError(f"{module} is in no layer: add it to LAYERS (and the architecture)")


def modules():
    """``{module name: path}`` of every module of the package."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph():
    """``{module: {imported package modules}}``; ``from package import name`` counts as an
    import of ``package.name`` when that is a module."""
    known = modules()
    graph = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.add(sub if sub in known else source)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = {t for t in targets if t in known and t != name}
    return graph


def circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


GRAPH = import_graph()


def test_the_graph_is_read_from_the_code():
    """A check on the reader itself: known edges are seen, relative and inside functions."""
    assert "sklearn_ssvm.solvers.bcfw" in GRAPH["sklearn_ssvm.estimators.bcfw"]
    assert "sklearn_ssvm.marginals._graphcut" in GRAPH["sklearn_ssvm.structures.graph"]
    assert "sklearn_ssvm.estimators.base" in GRAPH["sklearn_ssvm.model_selection._path"]  # local
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle():
    assert circles(GRAPH) == []


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_import_from_a_higher_layer(module):
    rank = layer_of(module)
    upward = sorted(t for t in GRAPH[module] if layer_of(t) > rank)
    assert not upward, (f"{module} ({LAYERS[rank][0]}) imports from higher layers: "
                        + ", ".join(f"{t} ({LAYERS[layer_of(t)][0]})" for t in upward))
