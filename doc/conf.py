"""Sphinx configuration of the sklearn_ssvm documentation.

Build (from the repository root, with the ``doc`` extra installed)::

    python -m sphinx -b html doc doc/_build/html

``SKLEARN_SSVM_DOC_EXAMPLES`` picks the gallery examples that run: ``light`` (the default: the
ones that train on the bundled OCR letters or generated data in seconds to a minute), ``all``
(also those that need the CoNLL files under ``SKLEARN_SSVM_DATA``), or ``none``.
"""
import os
import re
import tempfile
from pathlib import Path

import sklearn_ssvm

project = "sklearn_ssvm"
author = "the sklearn_ssvm developers"
copyright = "2026, the sklearn_ssvm developers"
release = sklearn_ssvm.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5",
                    "**.codeobj.json"]
templates_path = ["_templates"]

autosummary_generate = True
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# every public object is checked; the extended summary, "See Also" and "Examples" sections
# are not required (the user guide and the gallery carry them)
numpydoc_validation_checks = {"all", "ES01", "SA01", "EX01", "GL01", "GL02", "SS06"}
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_ssvm {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}

#: examples that need the CoNLL or scene files (not bundled), many minutes or the
#: ``examples`` extra
HEAVY = ("plot_casimir_conll.py", "plot_ner_conll2003.py", "plot_bcfw_variants.py",
         "plot_graph_crf_denoising.py", "plot_multilabel_scene.py")
_which = os.environ.get("SKLEARN_SSVM_DOC_EXAMPLES", "light")
if _which == "all":
    _pattern = r"/plot_"
elif _which == "light":
    _pattern = r"/plot_(?!" + "|".join(re.escape(h[5:-3]) for h in HEAVY) + r")"
else:
    _pattern = r"^$"
_figures = Path(tempfile.mkdtemp(prefix="sklearn_ssvm_gallery_"))


#: arguments the gallery adds to an example's command line, to keep the build short
_GALLERY_ARGS = {"plot_trw_marginals": ["--n-instances", "8"]}


def _example_argv(gallery_conf, script_vars):
    """The examples save their figure to the file named first on their command line: a
    temporary one here (the gallery scrapes the open figures)."""
    stem = Path(script_vars["src_file"]).stem
    return [str(_figures / (stem + ".png")), *_GALLERY_ARGS.get(stem, [])]


sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": _pattern,
    "plot_gallery": _which != "none",
    "reset_argv": _example_argv,
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
}

suppress_warnings = ["config.cache"]  # the gallery's argv callable cannot be pickled


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Leave out of a class's page what scikit-learn documents (its generated
    ``set_*_request`` methods, ``get_metadata_routing``, ``set_output``) and plain class
    constants and tuple fields (their docstring is their type's)."""
    module = getattr(getattr(obj, "fget", obj), "__module__", None) or ""
    if re.fullmatch(r"set_\w+_request", name) or (module.startswith("sklearn.")
                                                   and not module.startswith("sklearn_ssvm")):
        return True
    if what == "class" and not (callable(obj) or isinstance(obj, property)):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
