"""The solver protocol: every algorithm behind one call.

A solver is configured once with its settings (tolerance, budget, step rules) and then solves
a packed problem under a penalty::

    result = solver.solve(problem, penalty, warm=previous_result)

``problem`` is a packed :class:`~sklearn_ssvm.structures.Problem` (``structure.prepare(X,
Y)``), ``penalty`` a :class:`~sklearn_ssvm.penalties.Penalty` (L2 is the elastic net with
``l1_ratio=0``), and ``warm`` a previous result of the same solver on the same examples (or
None): the state it continues from (BCFW's dual point and active sets, BMRM's cutting planes,
the stochastic solvers' coefficients). Every solver returns a
:class:`~sklearn_ssvm.solvers.result.SolverResult` and declares what it supports in one
:class:`~sklearn_ssvm.solvers.capabilities.Capabilities`: the estimators, the paths and the
contract test read the declaration, never the solver's code.
"""
from abc import ABC, abstractmethod

from ..penalties import as_penalty
from . import capabilities as _capabilities

__all__ = ["Solver"]


class Solver(ABC):
    """A training algorithm for the regularised structured hinge ``r(w) + mean_i H~_i(w)``.

    Parameters
    ----------
    **settings
        The algorithm's settings (tolerance, budget, step rules), kept in ``settings``.

    Subclasses set ``capabilities`` (a :class:`~sklearn_ssvm.solvers.capabilities.Capabilities`)
    and implement ``_solve(problem, penalty, warm)``. The contract, tested over every
    implementation (``tests/test_worked_examples.py``, ``tests/test_support.py``): ``solve``
    refuses a penalty or a structure kind it does not support with the declared message before
    any work (cells that depend on options: :meth:`check`, which the estimators call),
    returns finite ``coef`` of ``problem.n_params`` entries with the common result fields, and
    labels a gap that is not a certificate (``gap_certified=False`` and the reason).
    """

    capabilities = None

    def __init__(self, **settings):
        self.settings = settings

    def replace(self, **changes):
        """A copy of this solver with some settings changed."""
        return type(self)(**{**self.settings, **changes})

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.settings.items())})"

    def solve(self, problem, penalty, *, warm=None):
        """Minimise ``penalty(w) + mean_i w_i H~_i(w)`` over the examples of ``problem``.

        Parameters
        ----------
        problem : Problem
            Packed training data.
        penalty : Penalty or float
            The regulariser (a float ``alpha``: the L2 penalty ``alpha/2 ||w||^2``); one the
            solver does not take (``capabilities.penalties``) is refused before any work, as
            is a structure kind it refuses whatever the options.
        warm : SolverResult or None
            A previous result of this solver on the same examples, to continue from.
        """
        penalty = as_penalty(penalty)
        _capabilities.check_penalty(self.capabilities, penalty)
        _capabilities.check(self.capabilities, problem)  # the structure kinds it refuses
        return self._solve(problem, penalty, warm)

    def rescaled(self, problem, warm, ratio, deltas=None, stale=False):
        """A warm start at ``ratio`` times the strength of the penalty ``warm`` was fitted at.

        The estimators' warm starts, the grid path and the certified path move a previous
        result to a new ``alpha`` through this one hook. By default ``warm`` itself: the
        coefficients, cutting planes or learning rate a solver continues from are a start at
        any penalty.

        Parameters
        ----------
        problem : Problem
            The packed examples ``warm`` was fitted on.
        warm : SolverResult
            The previous result.
        ratio : float
            ``alpha_new / alpha_old``.
        deltas : ndarray of shape (n_samples,) or None, default=None
            Per-block quantities a solver's rescaling may need (BCFW's ``delta_i`` of
            Prop. 1, to move its gap estimates).
        stale : bool, default=False
            Whether ``warm``'s per-block gap estimates are stale bounds rather than gaps.
        """
        return warm

    @abstractmethod
    def _solve(self, problem, penalty, warm):
        """:meth:`solve` on a penalty the solver takes."""

    def check(self, problem, options=()):
        """Raise the declared ``ValueError`` when ``problem`` with ``options`` (names of
        :data:`~sklearn_ssvm.solvers.capabilities.OPTIONS`) is not supported."""
        _capabilities.check(self.capabilities, problem, options)
