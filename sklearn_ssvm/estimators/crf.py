"""The conditional random field: CRFsuite's objective, trained by L-BFGS / OWL-QN."""
from numbers import Integral, Real

import numpy as np

from .._validation import Interval
from ..solvers import capabilities
from ..solvers.quasi_newton import QuasiNewton, QuasiNewtonResult
from ..solvers._common import dense_oracles
from ..solvers.smooth import Smoothing
from ..structures.base import smoothing_code
from .base import StructuredEstimator, check_sample_weight, n_examples


class CRFClassifier(StructuredEstimator):
    """Conditional random field (chains, candidate sets, graphs): the penalised conditional
    log-likelihood.

    Minimises

        F(w) = (1/n) sum_i w_i [log Z_i(w) - <w, phi(x_i, y_i)>] + r(w),

    the mean negative log-likelihood of ``P(y | x) = exp(<w, phi(x, y)>) / Z(w)`` under an
    elastic net ``r``: the structured hinge smoothed by the entropy at ``mu = 1`` with no task
    loss (spec 000 §1.4), whose value and gradient are forward-backward's. By default ``r``
    is CRFsuite's: its L-BFGS minimises ``sum_i NLL_i + c2 ||w||^2 + c1 ||w||_1`` (OWL-QN when
    ``c1 > 0``; ``train_lbfgs.c``), which is ``n F(w)`` with ``alpha = (c1 + 2 c2) / n`` and
    ``l1_ratio = c1 / (c1 + 2 c2)`` in the elastic net of the other estimators
    (``(alpha/2)(1 - l1_ratio) ||w||^2 + alpha l1_ratio ||w||_1``): the same minimiser, and
    ``n`` times the objective value CRFsuite logs.

    The solver is L-BFGS, OWL-QN with an l1 part
    (:class:`~sklearn_ssvm.solvers.quasi_newton.QuasiNewton`), and its gap is certified: the
    model's own distributions ``P(. | x_i; w)`` are a dual point, and the gap ``F(w) - D`` is
    the penalty's Fenchel-Young gap at the mean gradient, an upper bound on ``F(w) - min F``.

    Parameters
    ----------
    structure : ChainCRF, CandidateSet or GraphCRF
        The chain, e.g. ``ChainCRF()`` (its loss options play no part: the likelihood has
        no task loss), a ``CandidateSet``, whose likelihood is the conditional logit of
        each example's zero-loss candidate among its candidates, or a ``GraphCRF``: exact on
        forests; on graphs with cycles the log-partition function is #P-hard and TRW's convex
        upper bound on it stands in (its entropy smoothing), so the objective is an upper
        bound on the negative log-likelihood, ``predict_marginals`` gives TRW's
        pseudo-marginals and the gap is not a certificate (``gap_certified_`` False).
    c1 : float, default=0.0
        CRFsuite's l1 coefficient (its default), used when ``alpha`` is None.
    c2 : float, default=1.0
        CRFsuite's l2 coefficient (its default), ``c2 > 0``, used when ``alpha`` is None.
    alpha : float or None, default=None
        The elastic net's strength instead of ``c1, c2`` (then ``l1_ratio`` sets its mix).
    l1_ratio : float, default=0.0
        The l1 share of the elastic net of ``alpha``, in ``[0, 1)``.
    max_iter : int, default=100
        Quasi-Newton iterations (CRFsuite's benchmarks use 100).
    tol : float, default=1e-6
        Stop when the certified gap is at most ``tol`` times ``loss_scale_``.
    memory : int, default=10
        Pairs of steps the L-BFGS model keeps.
    verbose : int, default=0
        1: a progress bar; 2: also a line per iteration.
    warm_start : bool, default=False
        Start from the previous fit's coefficients.
    n_jobs : int or None, default=None
        Threads of forward-backward over the examples (numba, without the GIL).
    penalty : Penalty or None, default=None
        As in :class:`BCFWStructuredSVM`; None: the elastic net of ``c1, c2`` (or ``alpha``,
        ``l1_ratio``).

    Attributes
    ----------
    coef_ : ndarray of shape (n_params,)
        ``w``.
    structure_, classes_, n_features_in_
        As in the other estimators.
    alpha_ : float
        The elastic net's strength of the fit (``(c1 + 2 c2) / n`` by default).
    l1_ratio_ : float
        Its l1 share.
    objective_ : float
        ``F(coef_)``; ``n_samples * objective_`` is CRFsuite's loss at these weights.
    dual_objective_ : float
        The dual value of the model's distributions at ``coef_``, ``<= min F``.
    duality_gap_ : float
        ``objective_ - dual_objective_ >= F(coef_) - min F``.
    converged_ : bool
        Whether ``duality_gap_ <= tol * loss_scale_``.
    gap_certified_ : bool
        Whether the gap is a certificate: False on graphs with cycles (TRW's bound).
    n_iter_ : int
        Iterations made.
    n_evaluations_ : int
        Objective-and-gradient evaluations (forward-backward passes), line searches included.
    loss_scale_ : float
        The zero model's objective ``F(0) = mean_i log |Y_i|`` (the uniform distribution's).
    history_ : list of dict
        Per iteration: ``objective``, ``dual_objective``, ``gap``, ``time``, ``cpu_time``,
        ``step`` and the common columns.

    Examples
    --------
    >>> from sklearn_ssvm import ChainCRF, CRFClassifier
    >>> from sklearn_ssvm.datasets import make_chain_data
    >>> X, Y = make_chain_data(n_samples=30, n_features=4, n_labels=3, random_state=0)
    >>> crf = CRFClassifier(ChainCRF(), c1=0.1, c2=0.1).fit(X, Y)
    >>> crf.predict_marginals(X[:1])[0].sum(axis=1).round(6).tolist() == [1.0] * len(X[0])
    True
    """

    solver_params = {"quasi-newton": {}}

    _parameter_constraints = {
        **StructuredEstimator._parameter_constraints,
        "c1": [Interval(Real, 0, None, closed="left")],
        "c2": [Interval(Real, 0, None, closed="neither")],
        "l1_ratio": [Interval(Real, 0, 1, closed="left")],
        "memory": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, structure, c1=0.0, c2=1.0, alpha=None, l1_ratio=0.0, max_iter=100,
                 tol=1e-6, memory=10, verbose=0, warm_start=False, n_jobs=None, penalty=None):
        self.structure = structure
        self.c1 = c1
        self.c2 = c2
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.memory = memory
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.penalty = penalty

    def _fit_prepared(self, structure, problem, X, Y, previous=None, **fit_params):
        # the declared refusals before the loss scale's forward-backward pass
        capabilities.check(QuasiNewton.capabilities, problem, self._options(problem))
        return super()._fit_prepared(structure, _likelihood(problem), X, Y, previous,
                                     **fit_params)

    def _loss_scale(self, problem):
        return problem.weighted_mean(_nll(problem, np.zeros(problem.n_params)))

    def primal_objective(self, X, Y, alpha=None, sample_weight=None):
        """Compute the objective ``r(coef_) + mean_i w_i NLL_i(coef_)`` on ``(X, Y)``.

        Parameters
        ----------
        X : list of (n_tokens, n_features) arrays or sparse matrices
            Sequences.
        Y : list of label arrays
            Their labels.
        alpha : float or None, default=None
            Strength of the penalty; None means ``alpha_``, the one of the fit.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights of the examples' log-likelihoods (a weighted mean).

        Returns
        -------
        float
            ``F(coef_)``; with ``c1, c2`` (``alpha=None``), ``len(X) * F`` is CRFsuite's loss
            at these weights on these sequences.
        """
        weights = check_sample_weight(sample_weight, n_examples(X))
        problem = _likelihood(self._packed(X, Y))
        coef = self._dense_coef()
        penalty = self._penalty(self.alpha_ if alpha is None else alpha, problem)
        return penalty.value(coef) + float(np.average(_nll(problem, coef), weights=weights))

    def _default_alpha(self, problem):
        return (self.c1 + 2.0 * self.c2) / problem.n_samples

    def _l1_ratio(self):
        if self.alpha is None:
            return self.c1 / (self.c1 + 2.0 * self.c2)
        return self.l1_ratio

    def _solver(self, problem, loss_scale):
        return QuasiNewton(mu=1.0, memory=int(self.memory), tol=self.tol * loss_scale,
                           max_iter=self.max_iter, verbose=self.verbose)

    def _solve(self, solver, problem, alpha, previous, loss_scale):
        # any coefficients start a fit: a warm start needs no more than the previous coef_
        warm = None if previous is None else QuasiNewtonResult(coef=previous._dense_coef())
        result = solver.solve(problem, self._penalty(alpha, problem), warm=warm)
        return self._fitted(result, l1_ratio_=self._l1_ratio(),
                            objective_=result.objective, dual_objective_=result.dual_objective,
                            n_evaluations_=result.n_evaluations)


def _likelihood(problem):
    """``problem`` without its task loss: the entropy-smoothed hinge at ``mu = 1`` of the
    result is the negative log-likelihood (TRW's bound on it on loopy graphs)."""
    return problem.without_loss()


def _nll(problem, coef):
    """Each example's ``log Z_i - <coef, phi(x_i, y_i)>`` (``problem`` without losses)."""
    code, K = smoothing_code("entropy", None, problem.kind)
    if dense_oracles(problem):
        values, _, _ = problem.smoothed_all(coef, Smoothing(code, K, 1.0))
        return np.asarray(values)
    values, _, _ = problem.smoothed_losses(coef, code, 1.0, K)
    return values
