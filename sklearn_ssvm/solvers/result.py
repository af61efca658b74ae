"""The one shape every solver returns.

Every solver (BCFW, BMRM, SGD, SVRG, Casimir-SVRG, AGM, PRAGAM, prox-linear) returns a
:class:`SolverResult`, or a subclass adding what only it has (BCFW's dual state, BMRM's cutting
planes, AGM's Lipschitz estimate). The estimators read the common fields the same way, and every
``history`` record carries :data:`HISTORY_COLUMNS` (NaN where a solver did not evaluate one at
that iteration) beside the solver's own columns.
"""
from dataclasses import dataclass, field

import numpy as np

__all__ = ["HISTORY_COLUMNS", "SolverResult", "history_record"]

#: the columns of every history record: the iteration (a pass, an epoch, a cut), the objective
#: the solver minimises at its certified point, the lower bound and gap of its certificate, the
#: oracle calls so far, and wall and CPU seconds since the start
HISTORY_COLUMNS = ("iter", "objective", "dual_objective", "gap", "oracle_calls", "time",
                   "cpu_time")


def history_record(**values):
    """A history record: :data:`HISTORY_COLUMNS` first (NaN where not given), then the solver's
    own columns."""
    record = {name: values.pop(name, np.nan) for name in HISTORY_COLUMNS}
    record.update(values)
    return record


@dataclass(kw_only=True)
class SolverResult:
    """What a solver returns.

    Attributes
    ----------
    coef : ndarray
        The solution: the point the gap certifies.
    objective : float
        The objective the solver minimises at ``coef`` (NaN when not evaluated).
    dual_objective : float
        A lower bound on its minimum (NaN when the solver keeps none).
    duality_gap : float
        ``objective - dual_objective``, or the solver's own certificate of the same quantity
        (NaN when none).
    gap_certified : bool
        Whether ``duality_gap`` bounds ``objective - min`` (False: the reason says why).
    gap_reason : str
        Why the gap is not a certificate ("" when it is).
    converged : bool
        Whether the solver met its stopping test.
    n_iter : int
        Iterations run (passes, epochs, cuts).
    n_oracle_calls : int
        Oracle calls made (one per example and pass for the batched passes).
    history : list of dict
        One record per iteration, with :data:`HISTORY_COLUMNS` and the solver's own columns.
    intercept : float
        The bias (0 without one).
    """

    coef: np.ndarray
    objective: float = np.nan
    dual_objective: float = np.nan
    duality_gap: float = np.nan
    gap_certified: bool = True
    gap_reason: str = ""
    converged: bool = False
    n_iter: int = 0
    n_oracle_calls: int = 0
    history: list = field(default_factory=list)
    intercept: float = 0.0
