"""What each solver supports, declared once, beside its class.

Each solver module declares its :class:`Capabilities` with :func:`register` (a solver written
outside the package does the same), and this module keeps the registry, :data:`SOLVERS`. A fit
asks :func:`check` before it starts: a cell that is not supported is refused with the declared
message, whoever hits it (the estimators, or a solver called directly). The user
guide's support table is :func:`support_table`, and ``tests/test_support.py`` fits every
estimator x structure x option cell against these declarations: a supported cell must fit with
a finite gap (labelled uncertified where an oracle is approximate), an unsupported one must be
refused with its message.

Structures come in three kinds, by how their oracles run: ``"compiled"`` (``ChainCRF``,
``BinarySVM``, ``MulticlassSVM``, ``MultiLabel``, ``CandidateSet``: numba oracles the solvers
call in their compiled loops), ``"graph"`` (``GraphCRF``: per-example oracles called from
Python) and ``"binary_graph"`` (``BinaryGraphCRF``: the same, with the coefficients projected
on the cone where graph cuts are exact).
"""
import sys
from dataclasses import dataclass

from .._kernels import labelings

__all__ = ["KINDS", "OPTIONS", "PENALTIES", "SOLVERS", "Capabilities", "check",
           "check_penalty", "penalty_text", "refusal", "register", "structure_kind",
           "support_table"]

KINDS = {"compiled": "the compiled structures", "graph": "GraphCRF",
         "binary_graph": "BinaryGraphCRF"}

#: options a fit may ask for, with how the user asks
OPTIONS = {"elastic_net": "an l1 part (l1_ratio > 0)", "away": "step='away'",
           "averaging": "averaging=True",
           "bounds": "coef_bounds", "box": "coef_bounds=(lower, upper)",
           "sample_weight": "sample_weight"}

#: the compiled penalties, by the ``code`` of a :class:`~sklearn_ssvm.penalties.Penalty`
#: that the compiled solvers' kernels run (``Capabilities.penalty_codes``)
PENALTIES = {"l2": "the L2 penalty (ElasticNet with l1_ratio=0)",
             "elastic_net": "the elastic net (ElasticNet)"}

#: refusal reasons several solvers share
SOFT_AND_CONE = ("the soft-threshold does not compose with the projection onto the "
                 "submodular cone")
PYTHON_ORACLES = ("it runs the compiled structures' oracles in its numba loops; the graphs' "
                  "oracles run from Python per example")


@dataclass(frozen=True)
class Capabilities:
    """What one solver supports.

    Attributes
    ----------
    name : str
        How messages and the support table name it (the estimator and its settings).
    options : tuple of str
        The :data:`OPTIONS` its estimator has a parameter for (the others do not apply).
    penalty_codes : tuple of str
        The compiled penalties (:data:`PENALTIES`) its kernels run: it takes a penalty whose
        ``code`` is one of them.
    refused : dict
        ``(kind, option) -> reason`` for each cell it does not support: ``kind`` None for
        every kind, ``option`` None for the kind whatever the options, a tuple for options
        refused together.
    certificate : str
        What its ``duality_gap_`` is.
    warm_start : bool
        Whether a fit continues from a previous one (``warm_start=True``, the grid paths).
    path : str
        How :mod:`sklearn_ssvm.model_selection` walks ``alpha`` with it.
    structures : tuple of str or None
        The compiled structures it trains, by class name (None: every one), and why not the
        others, as ``(names, reason)``.
    penalty_methods : tuple of str
        The :class:`~sklearn_ssvm.penalties.Penalty` methods it calls: it also takes any
        penalty that implements them all (empty: none but its ``penalty_codes``).
    certified_path : bool
        Whether :func:`~sklearn_ssvm.model_selection.regularization_path` walks it (the
        certified eps-path of spec 002 §8, on its dual blocks).
    """

    name: str
    options: tuple
    penalty_codes: tuple
    refused: dict
    certificate: str
    warm_start: bool
    path: str
    structures: tuple = None
    penalty_methods: tuple = ()
    certified_path: bool = False


#: every declared solver, ``{name: Capabilities}``: each solver module registers its own
#: (:func:`register`), beside its class
SOLVERS = {}
#: the module that declared each name
DECLARED_IN = {}


def register(name, capabilities):
    """Declare a solver's :class:`Capabilities` under ``name`` and return them.

    Call it beside the solver's class (``capabilities = register("name", Capabilities(...))``):
    the support table, the contract tests and :func:`refusal` read every declared name, the
    package's and those registered outside it.

    Parameters
    ----------
    name : str
        The name refusals and the tests know it by; declaring a name again replaces it.
    capabilities : Capabilities
        What the solver supports.

    Returns
    -------
    Capabilities
        ``capabilities``.
    """
    SOLVERS[name] = capabilities
    DECLARED_IN[name] = sys._getframe(1).f_globals.get("__name__", "")
    return capabilities



#: the compiled structures' class names by the kernels' structure kind codes
_COMPILED = {labelings.CHAIN: "ChainCRF", labelings.MULTICLASS: "MulticlassSVM",
             labelings.BINARY: "BinarySVM", labelings.MULTILABEL_INDEPENDENT: "MultiLabel",
             labelings.MULTILABEL_TREE: "MultiLabel", labelings.MULTILABEL_FULL: "MultiLabel",
             labelings.CANDIDATES: "CandidateSet"}


def structure_kind(problem):
    """The kind (:data:`KINDS`) of a packed problem."""
    if not getattr(problem, "dense_oracles", False):
        return "compiled"
    return "binary_graph" if problem.constrained else "graph"


def _declared(solver):
    """``solver``'s :class:`Capabilities`: its own, or the declaration of a :data:`SOLVERS`
    name (an undeclared name is refused by a ``ValueError`` listing the declared ones)."""
    if isinstance(solver, Capabilities):
        return solver
    if solver not in SOLVERS:
        raise ValueError(f"No solver is declared as {solver!r}: a solver declares its own "
                         f"Capabilities, or is one of {', '.join(SOLVERS)}.")
    return SOLVERS[solver]


def refusal(solver, kind, options=(), structure=None):
    """The declared message refusing ``solver`` (a :data:`SOLVERS` name or a solver's own
    :class:`Capabilities`) on structures of ``kind`` (a compiled one named ``structure``, its
    class name, where known) with ``options``, or None when the cell is supported."""
    caps = _declared(solver)
    if kind == "compiled" and caps.structures is not None and structure is not None:
        names, reason = caps.structures
        if structure not in names:
            return (f"{caps.name} does not train {structure}, only {' and '.join(names)}: "
                    f"{reason}.")
    for (where, option), reason in caps.refused.items():
        together = () if option is None else (option,) if isinstance(option, str) else option
        if where in (None, kind) and set(together) <= set(options):
            asked = " and ".join(OPTIONS[o] for o in together)
            return (f"{caps.name} does not train {KINDS[kind]}"
                    f"{' with ' + asked if asked else ''}: {reason}.")
    return None


def check(solver, problem, options=()):
    """Raise the declared ``ValueError`` when the cell is not supported (before any fit)."""
    kind = structure_kind(problem)
    structure = _COMPILED.get(problem.kind) if kind == "compiled" else None
    message = refusal(solver, kind, options, structure)
    if message is not None:
        raise ValueError(message)


def penalty_text(caps):
    """What ``caps`` takes, in words: its compiled penalties, or any penalty with its methods."""
    codes = " or ".join(PENALTIES[code] for code in caps.penalty_codes  # L2 is an elastic net
                        if not (code == "l2" and "elastic_net" in caps.penalty_codes))
    methods = caps.penalty_methods and (f"any Penalty with {', '.join(caps.penalty_methods)}")
    return " or ".join(text for text in (codes, methods) if text)


def check_penalty(solver, penalty):
    """Raise a ``ValueError`` when ``solver`` (a :data:`SOLVERS` name or a solver's own
    :class:`Capabilities`) does not take ``penalty`` (a
    :class:`~sklearn_ssvm.penalties.Penalty`), before any work: it takes a penalty whose
    ``code`` its kernels run, or one that implements every method it calls."""
    caps = _declared(solver)
    if penalty.code in caps.penalty_codes:
        return
    missing = [name for name in caps.penalty_methods if name not in penalty.methods()]
    if caps.penalty_methods and not missing:
        return
    lacks = f": {type(penalty).__name__} has no {', '.join(missing)}" if missing else ""
    raise ValueError(f"{caps.name} takes {penalty_text(caps)}, not {penalty!r}{lacks}.")


def support_table(names=None):
    """The user guide's support table (markdown), generated from :data:`SOLVERS` (``names``:
    those only, in that order; None: every declared one)."""
    head = ["solver", *(f"{KINDS[k]}" for k in KINDS), "penalty", "gap", "alpha path"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for caps in (SOLVERS[name] for name in (SOLVERS if names is None else names)):
        cells = []
        for kind in KINDS:
            if (kind, None) in caps.refused:
                cells.append("no")
                continue
            missing = [" and ".join(OPTIONS[o] for o in ((opt,) if isinstance(opt, str) else opt))
                       for where, opt in caps.refused if where in (None, kind) and opt]
            which = ("yes" if kind != "compiled" or caps.structures is None
                     else f"{', '.join(caps.structures[0])} only")
            cells.append(which + (f", not {', '.join(missing)}" if missing else ""))
        rows.append(f"| `{caps.name}` | " + " | ".join(cells)
                    + f" | {penalty_text(caps)} | {caps.certificate} | {caps.path} |")
    return "\n".join(rows)
