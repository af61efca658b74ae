"""The defaults a docstring states are the code's: every public class and function whose
numpydoc "Parameters" entry says ``default=...`` has that default in its signature (the
defaults are the measured recipe, and a user reads them in the docstring first)."""
import ast
import importlib
import inspect

import numpy as np
import pytest

docscrape = pytest.importorskip("numpydoc.docscrape")

MODULES = ["sklearn_ssvm", "sklearn_ssvm.structures", "sklearn_ssvm.datasets",
           "sklearn_ssvm.feature_extraction", "sklearn_ssvm.metrics", "sklearn_ssvm.inspection",
           "sklearn_ssvm.penalties", "sklearn_ssvm.smoothing", "sklearn_ssvm.marginals",
           "sklearn_ssvm.model_selection"]


def documented_callables():
    seen = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", [n for n in vars(module) if n[0] != "_"]):
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and \
                    obj.__module__.startswith("sklearn_ssvm"):
                seen.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return sorted(seen.items())


def stated_defaults(obj):
    """``{parameter: default text}`` of the docstring's "Parameters" entries that state one."""
    doc = docscrape.ClassDoc(obj) if inspect.isclass(obj) else docscrape.FunctionDoc(obj)
    stated = {}
    for parameter in doc["Parameters"]:
        kind = parameter.type
        if "default=" in kind:  # the last item of the type line
            text = kind.split("default=", 1)[1].strip()
            for name in parameter.name.split(","):
                stated[name.strip()] = text
    return stated


def constant(text):
    """The value of a default's text: literals, arithmetic on them (``2**20``) and numpy
    (``np.float64``, ``2.0 ** np.arange(15, -16, -1)``); NotImplemented for anything else."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return NotImplemented
    allowed = (ast.Expression, ast.Constant, ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp,
               ast.operator, ast.unaryop, ast.Load, ast.Attribute, ast.Call, ast.Name)
    if not all(isinstance(node, allowed) and (not isinstance(node, ast.Name) or node.id == "np")
               for node in ast.walk(tree)):
        return NotImplemented
    return eval(compile(tree, "<default>", "eval"), {"__builtins__": {}, "np": np})


def same(stated, actual):
    if isinstance(stated, np.ndarray) or isinstance(actual, np.ndarray):
        return np.array_equal(stated, actual)
    return stated == actual and isinstance(stated, bool) == isinstance(actual, bool)


@pytest.mark.parametrize("name, obj", documented_callables())
def test_docstring_defaults_are_the_signatures(name, obj):
    signature = inspect.signature(obj)
    for parameter, text in stated_defaults(obj).items():
        assert parameter in signature.parameters, f"{name}: {parameter} is not a parameter"
        actual = signature.parameters[parameter].default
        assert actual is not inspect.Parameter.empty, f"{name}: {parameter} has no default"
        if repr(actual) == "<factory>":  # a dataclass field's factory: nothing to compare
            continue
        stated = constant(text)
        if stated is NotImplemented:  # a name such as an object's repr: compare the texts
            stated, actual = text, repr(actual)
        assert same(stated, actual), \
            f"{name}: the docstring says {parameter} defaults to {text}, the code to {actual!r}"


def test_the_measured_defaults():
    """The recipe of doc/user_guide.md ("What the defaults are, and the evidence")."""
    from sklearn_ssvm import (BCFWStructuredSVM, BCFWStructuredSVMCV, ChainCRF, GraphCRF,
                              SmoothSSVMClassifier)

    assert ChainCRF().normalize_loss is False and GraphCRF().normalize_loss is False
    bcfw = BCFWStructuredSVM(ChainCRF())
    assert (bcfw.step, bcfw.alpha, bcfw.tol) == ("pairwise", None, 3e-3)
    assert SmoothSSVMClassifier(ChainCRF()).early_stopping is False
    cv = BCFWStructuredSVMCV(ChainCRF())
    assert (cv.cv, cv.alphas, cv.n_alphas_no_change) == (3, 7, 1)
