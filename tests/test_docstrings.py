"""numpydoc validation of every public object, as the documentation build runs it
(``doc/conf.py``'s ``numpydoc_validation_checks``): parameters, returns and summaries."""
import importlib
import inspect
import re

import pytest

validate = pytest.importorskip("numpydoc.validate").validate

#: the public modules, as the API reference lists them
MODULES = ["sklearn_ssvm", "sklearn_ssvm.structures", "sklearn_ssvm.datasets",
           "sklearn_ssvm.feature_extraction", "sklearn_ssvm.metrics", "sklearn_ssvm.inspection",
           "sklearn_ssvm.penalties", "sklearn_ssvm.smoothing", "sklearn_ssvm.marginals"]
#: not required: extended summary, "See Also", "Examples" (the user guide and gallery have
#: them), and the summary's layout rules GL01, GL02, SS06
IGNORED = {"ES01", "SA01", "EX01", "GL01", "GL02", "SS06"}


def public_objects():
    names = set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", [n for n in vars(module)
                                                  if not n.startswith("_")]):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not obj.__module__.startswith("sklearn_ssvm"):
                continue
            names.add(f"{module_name}.{name}")
            if inspect.isclass(obj):
                for attr, value in inspect.getmembers(obj):
                    owner = next((c for c in obj.__mro__ if attr in vars(c)), None)
                    if (attr.startswith("_") or owner is None
                            or re.fullmatch(r"set_\w+_request", attr)  # scikit-learn's
                            or not owner.__module__.startswith("sklearn_ssvm")
                            or not (inspect.isfunction(value) or isinstance(
                                inspect.getattr_static(obj, attr), property))):
                        continue
                    names.add(f"{module_name}.{name}.{attr}")
    return sorted(names)


@pytest.mark.parametrize("name", public_objects())
def test_docstring(name):
    problems = [f"{code}: {message}" for code, message in validate(name)["errors"]
                if code not in IGNORED]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", [n for n in public_objects()
                                  if n.count(".") == 1 or n.split(".")[1] in (
                                      "structures", "datasets", "feature_extraction", "metrics",
                                      "inspection", "penalties", "smoothing", "marginals")
                                  and n.count(".") == 2])
def test_public_classes_and_functions_cite_their_source(name):
    """Every public class and function names the paper (or the specification or tool) it
    implements: an author and year, or a spec section."""
    module, attr = name.rsplit(".", 1)
    doc = inspect.getdoc(getattr(importlib.import_module(module), attr)) or ""
    assert re.search(r"\b(19|20)\d\d\b|spec 00\d|et al\.", doc), name
