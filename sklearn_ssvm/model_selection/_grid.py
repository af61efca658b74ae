"""Grid paths: the structured SVM solved on a grid of ``alpha`` (the paper's baseline, spec
002 §8.5), by BCFW with Prop. 1's warm starts or by any estimator through its own warm start."""
import time
import warnings
from numbers import Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_params
from ..solvers.bcfw import BCFWResult, DualState
from ..solvers.bcfw_path import block_deltas, check_zero_loss
from ..solvers._common import generator
from ._path import _certified_path_refusal, _PathResult, _seed_sequences, _uses_atoms

__all__ = ["GridSearchPath", "grid_search_path"]


class GridSearchPath(_PathResult):
    """Solutions of a structured estimator on a grid of ``alpha`` (the paper's baseline,
    spec 002 §8.5).

    Built by :func:`grid_search_path`, which passes the parameters.

    Parameters
    ----------
    estimator : StructuredEstimator
        The (unfitted) estimator the grid was solved with.
    structure : Structure
        The structure fitted on the training data.
    n_samples : int
        Number of training examples.
    warm_start : {'keep_primal', 'keep_dual'} or None
        How each solve was started (see :func:`grid_search_path`).
    tol : float
        Exact duality gap each solve was to reach.
    points : list of dict
        One per grid point, in grid order, with keys ``alpha``, ``coef``, ``gap``, ``calls``
        (oracle calls of the solve) and ``time`` (its seconds).
    wall_time : float
        Wall-clock seconds of the whole search.

    Attributes
    ----------
    alphas_ : ndarray
        The grid, descending.
    coefs_ : ndarray of shape (n_alphas, n_params)
    gaps_ : ndarray
        Exact duality gap of each solution.
    converged_ : ndarray of bool
        ``gaps_ <= tol``.
    n_oracle_calls_ : ndarray of int
        Cumulative oracle calls, in grid order (for cold, parallel solves the sum of the
        solves so far).
    times_ : ndarray
        Cumulative seconds spent in the solves, in grid order (for parallel cold solves, the
        sum of the individual solve times: compute, not wall clock).
    estimator, structure_, n_samples_, warm_start, tol, wall_time_
        The parameters.
    """

    def __init__(self, *, estimator, structure, n_samples, warm_start, tol, points, wall_time):
        self.estimator = estimator
        self.structure_ = structure
        self.n_samples_ = n_samples
        self.warm_start = warm_start
        self.tol = tol
        self.alphas_ = np.array([p["alpha"] for p in points], dtype=float)
        self.coefs_ = np.array([p["coef"] for p in points], dtype=float)
        self.gaps_ = np.array([p["gap"] for p in points], dtype=float)
        self.converged_ = self.gaps_ <= tol
        self.n_oracle_calls_ = np.cumsum([p["calls"] for p in points]).astype(np.int64)
        self.times_ = np.cumsum([p["time"] for p in points])
        self.wall_time_ = wall_time

    def __repr__(self):
        return (f"GridSearchPath(n_alphas={len(self.alphas_)}, warm_start={self.warm_start!r}, "
                f"tol={self.tol})")

    def _candidates(self, alphas):
        if alphas is None:
            idx = range(len(self.alphas_))
        else:
            idx = []
            for a in np.sort(np.asarray(alphas, dtype=float).ravel())[::-1]:
                hit = np.flatnonzero(np.isclose(self.alphas_, a, rtol=1e-12, atol=0))
                if not hit.size:
                    raise ValueError(f"alpha={a!r} is not a grid point of this search.")
                idx.append(int(hit[0]))
        return [(self.alphas_[j], j, self.coefs_[j], self.gaps_[j]) for j in idx]


# ----------------------------------------------------------------------------------------------
# grid search baseline (§8.5)
# ----------------------------------------------------------------------------------------------

def _timed_solve(solver, problem, alpha):
    t = time.perf_counter()
    res = solver.solve(problem, alpha)
    return res, time.perf_counter() - t


def grid_search_path(estimator, X, Y, alphas=2.0 ** np.arange(15, -16, -1), tol=0.1,
                     warm_start="keep_primal", n_jobs=None):
    """Solve the structured SVM on a grid of ``alpha`` (the paper's baseline, spec 002 §8.5).

    The grid is processed in decreasing order. Estimators other than BCFW under the L2 penalty
    (BMRM, Smooth, BCFW with ``l1_ratio > 0``, box constraints or ``BinaryGraphCRF``) solve each
    point with their own solver, warm-started from the previous point as ``warm_start=True``
    continues a fit (BMRM's cutting planes bound the risk at every ``alpha``; Smooth keeps its
    coefficients and learning rate), or cold with ``warm_start=None`` (sequentially).
    BCFW under the L2 penalty starts each point as follows (App. K):

    - ``'keep_primal'``: from the previous solution rescaled by Prop. 1 (``w`` kept, the dual
      moved towards the true labelings; the block gaps are updated by eq. (12), so gap
      sampling starts from exact gaps);
    - ``'keep_dual'``: from the previous dual point as it is (``w`` rescaled by
      ``alpha_old / alpha_new``);
    - ``None``: independent cold starts, run in parallel with joblib (threads; the BCFW
      kernels release the GIL), each with its own seed drawn from the estimator's
      ``random_state``, so the result does not depend on ``n_jobs``.

    Parameters
    ----------
    estimator : BCFWStructuredSVM, BMRMStructuredSVM or SmoothSSVMClassifier
        Supplies ``structure`` and the solver settings (BCFW: ``max_iter``, ``gap_check``,
        ``sampling``, ``random_state``, ``step``, ``cache``, ``cache_size``, ``max_active``;
        the others: all their parameters but ``alpha``, ``tol`` and ``warm_start``).
    X : list of arrays or sparse matrices, or 2-D array
        Training inputs, as for ``estimator.fit``.
    Y : list of label arrays, 1-D array or 2-D indicator matrix
        Training labelings, as for ``estimator.fit``.
    alphas : array-like, default=2.0 ** np.arange(15, -16, -1)
        The grid (31 values, as in the paper).
    tol : float, default=0.1
        Duality gap each solve must reach (absolute: the estimators' own ``tol`` is this over
        the data's ``loss_scale``); a smoothed solver's gap is of the SSVM objective and may
        stall above it (a ``ConvergenceWarning`` then says so).
    warm_start : {'keep_primal', 'keep_dual'} or None, default='keep_primal'
        How each solve starts (see above); for the estimators other than BCFW under the L2
        penalty both warm starts continue the previous fit.
    n_jobs : int or None, default=None
        Cold starts: joblib workers over the grid. Warm starts: threads of the exact gap
        passes (default: the estimator's ``n_jobs``).

    Returns
    -------
    GridSearchPath
        The solutions at the grid points, their gaps, oracle calls and times.
    """
    if warm_start not in ("keep_primal", "keep_dual", None):
        raise ValueError(f"warm_start must be 'keep_primal', 'keep_dual' or None, got "
                         f"{warm_start!r}.")
    alphas = np.sort(np.asarray(alphas, dtype=float).ravel())[::-1]
    if alphas.size == 0 or not np.all(np.isfinite(alphas)) or alphas[-1] <= 0:
        raise ValueError("alphas must be a non-empty array of finite values > 0.")
    if not isinstance(tol, Real) or tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol!r}.")
    from ..estimators.base import StructuredEstimator

    if not isinstance(estimator, StructuredEstimator):
        raise ValueError(f"grid_search_path takes a structured estimator (BCFWStructuredSVM, "
                         f"BMRMStructuredSVM, SmoothSSVMClassifier), not "
                         f"{type(estimator).__name__}; use GridSearchCV.")
    check_params(estimator)
    structure = clone(estimator.structure)
    problem = structure.prepare(X, Y)
    wall = time.perf_counter()
    solver = estimator._solver(problem, 1.0)  # its own: tol, seed and threads the path's
    if _certified_path_refusal(estimator, solver) is not None:
        points = _grid_by_estimator(estimator, structure, problem, X, Y, alphas, tol, warm_start)
        return GridSearchPath(estimator=clone(estimator), structure=structure,
                              n_samples=problem.n_samples, warm_start=warm_start, tol=tol,
                              points=points, wall_time=time.perf_counter() - wall)
    solver = solver.replace(tol=tol, averaging=False, verbose=0)
    settings = solver.settings
    random_state = getattr(estimator, "random_state", None)
    points = []
    if warm_start is None:
        seeds = _seed_sequences(random_state, alphas.size)
        jobs = (delayed(_timed_solve)(solver.replace(n_jobs=1,
                                                     random_state=np.random.default_rng(s)),
                                      problem, a)
                for a, s in zip(alphas, seeds))
        for a, (res, secs) in zip(alphas, Parallel(n_jobs=n_jobs, prefer="threads")(jobs)):
            points.append(dict(alpha=a, coef=res.coef, gap=res.certificate.gap,
                               calls=res.n_oracle_calls, time=secs))
    else:
        check_zero_loss(problem)
        if n_jobs is None:
            n_jobs = getattr(estimator, "n_jobs", None)
        solver = solver.replace(n_jobs=n_jobs, random_state=generator(random_state))
        vertex = DualState.at_labels(problem)
        prev = None
        for a in alphas:
            t = time.perf_counter()
            warm = None
            if prev is not None:
                res_prev, a_prev = prev
                # the previous dual point, its atoms, and (keep_primal) its exact block gaps
                warm = BCFWResult(coef=res_prev.coef, state=res_prev.state,
                                  active_sets=(res_prev.active_sets if _uses_atoms(settings)
                                               else None))
                if warm_start == "keep_primal":
                    warm.gap_estimates = res_prev.certificate.block_gaps
                    warm = solver.rescaled(problem, warm, a / a_prev, deltas=block_deltas(
                        problem, res_prev.state, res_prev.coef, vertex))
            res = solver.solve(problem, a, warm=warm)
            points.append(dict(alpha=a, coef=res.coef, gap=res.certificate.gap,
                               calls=res.n_oracle_calls, time=time.perf_counter() - t))
            prev = (res, a)
    for p in points:
        if p["gap"] > tol:
            warnings.warn(f"BCFW reached max_iter={settings['max_iter']} at alpha={p['alpha']:.6g} "
                          f"with duality gap {p['gap']:.4g} > tol={tol}.", ConvergenceWarning)
    return GridSearchPath(estimator=clone(estimator), structure=structure,
                          n_samples=problem.n_samples, warm_start=warm_start, tol=tol,
                          points=points, wall_time=time.perf_counter() - wall)


def _grid_by_estimator(estimator, structure, problem, X, Y, alphas, tol, warm_start):
    """The grid solved through the estimator's own solver, each fit warm-started from the
    previous one as ``warm_start=True`` continues a fit (BMRM keeps its cutting planes, which
    bound the risk at every alpha; Smooth its coefficients and learning rate; BCFW its dual
    point), or cold with ``warm_start=None`` or a solver that declares no warm start. ``tol`` is
    absolute, the estimators' relative to ``loss_scale_``."""
    points = []
    previous = None
    scale = problem.loss_scale()
    template = clone(estimator).set_params(tol=tol / scale)
    solver = template._solver(problem, scale)  # what it declares: whether it warm-starts
    if solver.capabilities.warm_start and "warm_start" in template.get_params():
        template.set_params(warm_start=True)
    for a in alphas:
        fit = clone(template).set_params(alpha=a)
        t = time.perf_counter()
        with warnings.catch_warnings():  # one warning per unconverged point, below
            warnings.simplefilter("ignore", ConvergenceWarning)
            fit._fit_prepared(structure, problem, X, Y, previous=previous)
        calls = getattr(fit, "n_oracle_calls_", fit.n_iter_ * problem.n_samples)
        points.append(dict(alpha=a, coef=fit.coef_, gap=fit.duality_gap_, calls=calls,
                           time=time.perf_counter() - t))
        if warm_start is not None and solver.capabilities.warm_start:
            previous = fit
    for p in points:
        if not p["gap"] <= tol:
            warnings.warn(f"{type(estimator).__name__} reached max_iter={estimator.max_iter} at "
                          f"alpha={p['alpha']:.6g} with duality gap {p['gap']:.4g} > tol={tol}.",
                          ConvergenceWarning)
    return points
