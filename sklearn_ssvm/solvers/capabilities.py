"""What each solver supports, declared once.

A fit asks :func:`check` before it starts: a cell that is not supported is refused with the
message written here, whoever hits it (the estimators, or a solver called directly). The user
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
from dataclasses import dataclass

from .._kernels import labelings
from ..penalties import ElasticNet

__all__ = ["KINDS", "OPTIONS", "PENALTIES", "SOLVERS", "Capabilities", "check",
           "check_penalty", "refusal", "structure_kind", "support_table"]

KINDS = {"compiled": "the compiled structures", "graph": "GraphCRF",
         "binary_graph": "BinaryGraphCRF"}

#: options a fit may ask for, with how the user asks
OPTIONS = {"elastic_net": "l1_ratio > 0", "away": "step='away'", "averaging": "averaging=True",
           "bounds": "coef_bounds", "box": "coef_bounds=(lower, upper)",
           "sample_weight": "sample_weight"}

#: the penalties a solver takes: any :class:`~sklearn_ssvm.penalties.Penalty` (it asks only
#: the protocol's maps), the elastic net (its compiled steps are the soft-threshold's), or the
#: L2 penalty alone
PENALTIES = {"any": "any Penalty", "elastic_net": "the elastic net (ElasticNet)",
             "l2": "the L2 penalty (ElasticNet with l1_ratio=0)"}

_SOFT_AND_CONE = ("the soft-threshold does not compose with the projection onto the "
                  "submodular cone")
_PYTHON_ORACLES = ("it runs the compiled structures' oracles in its numba loops; the graphs' "
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
    penalties : str
        The :data:`PENALTIES` it takes.
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
    """

    name: str
    options: tuple
    penalties: str
    refused: dict
    certificate: str
    warm_start: bool
    path: str
    structures: tuple = None


SOLVERS = {
    "bcfw": Capabilities(
        name="BCFWStructuredSVM", options=("elastic_net", "away", "averaging", "bounds", "box",
                                           "sample_weight"),
        penalties="elastic_net",
        refused={("binary_graph", "elastic_net"): _SOFT_AND_CONE,
                 ("binary_graph", "box"): "a box replaces the projection onto the submodular "
                                          "cone that its graph cuts need (coef_bounds="
                                          "'positive_pairwise' is a box inside the cone)",
                 (None, ("bounds", "elastic_net")): "the box's dual (spec 002 §7) is the L2 "
                                                    "penalty's"},
        certificate="exact duality gap (eq. (5)), certified where the oracle is exact or "
                    "bounds its maxima (TRW-S)",
        warm_start=True, path="certified eps-path under L2 without bounds (BinaryGraphCRF: grid)"),
    "bcfw-cluster": Capabilities(
        name="BCFWStructuredSVM(cluster=True)",
        options=("elastic_net", "away", "averaging", "bounds", "box", "sample_weight"),
        penalties="l2",
        refused={("graph", None): _PYTHON_ORACLES, ("binary_graph", None): _PYTHON_ORACLES,
                 (None, "elastic_net"): "CoCoA+'s safe aggregation scales the curvature of "
                                        "the squared norm; the soft-threshold's dual has "
                                        "other pieces",
                 (None, "averaging"): "the partitions' steps form no one sequence to "
                                      "number",
                 (None, "bounds"): "a round's local weights move K times the true change, "
                                   "and a box's projection does not commute with that scaling",
                 (None, "sample_weight"): "its partitions give every block the share 1 / n"},
        certificate="exact duality gap (eq. (5)), summed over the partitions on the cluster",
        warm_start=False, path="grid (cold)"),
    "bmrm": Capabilities(
        name="BMRMStructuredSVM", options=("sample_weight",), penalties="l2",
        refused={("binary_graph", None): "its cutting-plane model keeps no constraint on coef, "
                                         "and the graph cuts need the pairwise table "
                                         "submodular; GraphCRF has no such constraint"},
        certificate="primal minus the bundle's lower bound", warm_start=True,
        path="grid (warm: cutting planes)"),
    "bmrm-cluster": Capabilities(
        name="BMRMStructuredSVM(cluster=True)", options=("sample_weight",), penalties="l2",
        refused={("graph", None): _PYTHON_ORACLES, ("binary_graph", None): _PYTHON_ORACLES},
        certificate="primal minus the bundle's lower bound, the sums over the examples on the "
                    "cluster (the same iterates to the bit as on one process)",
        warm_start=True, path="grid (warm: cutting planes)"),
    "stochastic": Capabilities(
        name="SmoothSSVMClassifier(solver='casimir-svrg', 'svrg' or 'sgd')",
        options=("elastic_net", "sample_weight"), penalties="elastic_net",
        refused={("graph", "elastic_net"): "the dense-oracle path of the stochastic solvers "
                                           "takes the L2 penalty",
                 ("binary_graph", "elastic_net"): _SOFT_AND_CONE},
        certificate="the SSVM objective's gap, from the smoothed duals (stalls above tol)",
        warm_start=True, path="grid (warm: coefficients, learning rate)"),
    "agm": Capabilities(
        name="SmoothSSVMClassifier(solver='agm' or 'agm-ef1')",
        options=("elastic_net", "sample_weight"),
        penalties="any",
        refused={("graph", None): _PYTHON_ORACLES, ("binary_graph", None): _PYTHON_ORACLES,
                 ("compiled", "sample_weight"): "its batched entropy oracle weighs every "
                                                "example alike"},
        certificate="the SSVM objective's gap, from AGM's excessive-gap dual (spec 001)",
        warm_start=False, path="grid (cold)"),
    "agm-cluster": Capabilities(
        name="SmoothSSVMClassifier(solver='agm' or 'agm-ef1', cluster=True)",
        options=("elastic_net", "sample_weight"), penalties="any",
        refused={("graph", None): _PYTHON_ORACLES, ("binary_graph", None): _PYTHON_ORACLES,
                 ("compiled", "sample_weight"): "its batched entropy oracle weighs every "
                                                "example alike"},
        certificate="the SSVM objective's gap, from AGM's excessive-gap dual (spec 001), the "
                    "sums over the examples on the cluster (the same iterates to the bit as on "
                    "one process)",
        warm_start=False, path="grid (cold)"),
    "pragam-structured": Capabilities(
        name="PragamStructuredSVM", options=("sample_weight",), penalties="l2",
        refused={("graph", None): _PYTHON_ORACLES, ("binary_graph", None): _PYTHON_ORACLES},
        certificate="exact duality gap of the best primal and dual iterates (spec 003 eq. (26))",
        warm_start=False, path="grid (cold)",
        structures=(("MulticlassSVM", "CandidateSet"),
                    "its dual blocks are simplices over each example's outputs; a marginal "
                    "polytope (chains, label trees) needs App. E.3's factorised projection")),
    "quasi-newton": Capabilities(
        name="CRFClassifier", options=("elastic_net", "sample_weight"),
        penalties="elastic_net",
        refused={("binary_graph", None): "the log-likelihood needs the log-partition "
                                         "function; use GraphCRF, whose entropy smoothing is "
                                         "TRW's bound on it"},
        certificate="exact duality gap of the log-likelihood objective (the penalty's "
                    "Fenchel-Young gap at the mean gradient); on loopy graphs of TRW's bound "
                    "on it, uncertified",
        warm_start=True, path="grid (warm: coefficients)",
        structures=(("ChainCRF", "CandidateSet"),
                    "the likelihood drops the task loss, which the other compiled structures "
                    "keep in their kernels")),
    "prox-linear": Capabilities(
        name="SmoothSSVMClassifier(feature_map=...) on CandidateSet",
        options=("elastic_net", "sample_weight"), penalties="l2",
        refused={("compiled", "elastic_net"): "the prox-linear method takes the L2 penalty",
                 ("compiled", "sample_weight"): "the prox-linear method weighs every example "
                                                "alike",
                 ("graph", None): _PYTHON_ORACLES, ("binary_graph", None): _PYTHON_ORACLES},
        certificate="none (non-convex in the weights)", warm_start=True,
        path="grid (warm: coefficients)"),
}


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


def check_penalty(solver, penalty):
    """Raise a ``ValueError`` when ``solver`` (a :data:`SOLVERS` name or a solver's own
    :class:`Capabilities`) does not take ``penalty`` (a
    :class:`~sklearn_ssvm.penalties.Penalty`), before any work."""
    caps = _declared(solver)
    taken = caps.penalties == "any" or isinstance(penalty, ElasticNet) and (
        caps.penalties == "elastic_net" or penalty.l1 == 0 and penalty.p is None)
    if not taken:
        raise ValueError(f"{caps.name} takes {PENALTIES[caps.penalties]}, not {penalty!r}.")


def support_table():
    """The user guide's support table (markdown), generated from :data:`SOLVERS`."""
    head = ["solver", *(f"{KINDS[k]}" for k in KINDS), "penalty", "gap", "alpha path"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for caps in SOLVERS.values():
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
                    + f" | {PENALTIES[caps.penalties]} | {caps.certificate} | {caps.path} |")
    return "\n".join(rows)
