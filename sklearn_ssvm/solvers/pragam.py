"""PRAGAM: Nesterov's excessive-gap method for the binary linear SVM (spec 003 §2.4, Alg. 1).

Problem (spec 003 eq. (20)), with ``lambda = alpha`` and labels ``y_i = +-1``::

    J(w) = lambda/2 ||w||^2 + min_b (1/n) sum_i [1 - y_i (<x_i, w> + b)]_+      (with bias)
    D(a) = sum_i a_i - 1/(2 lambda) ||X^T (y * a)||^2,   a in Q2                 (eq. (21))

with ``Q2 = [0, 1/n]^n`` without bias and ``Q2 = {a in [0, 1/n]^n : <y, a> = 0}`` with bias
(eq. (22)). ``J(w) - D(a) >= 0`` for every pair (weak duality), and Algorithm 1 drives it to 0
at the rate ``4 L D2 / ((k+1)(k+2))`` of eq. (26) (``L = sigma_max(X)^2 / lambda``,
``D2 = 1/(2n)``): the excessive gap ``J_{mu_k}(w_k) <= D(a_k)`` bounds the gap by ``mu_k D2``.

By default the steps follow an adaptive estimate of ``L`` along the iterates (spec 001's rule
carried to Algorithm 1; :func:`~sklearn_ssvm._kernels.pragam.pragam_chunk`): each step takes
the largest ``tau_k`` that keeps the excessive gap at the estimate, which the step's own
descent inequality verifies, so ``mu_k`` falls as fast as the curvature met allows. On a9a at
``lambda = 2^-17`` (no bias) the gap after 20,000 iterations was 3e-7 instead of 2e-4
(relative suboptimality 1e-7 instead of 3e-5), 1.6 times the CPU per iteration.

A pure function of arrays (dense or scipy CSR): no scikit-learn estimator here. Products with
``X`` go through numpy / scipy.sparse (BLAS for dense, compiled CSR kernels for sparse); the
projection onto ``Q2`` is the ``O(n)`` kernel of ``_kernels/projection.py``.
"""
from dataclasses import dataclass

import numpy as np

from .._kernels.pragam import (DUAL, GAP, MU, N_HIST, PRIMAL, hinge_objective,
                               min_bias_interval, pragam_chunk, pragam_start, project_q2_into)
from ._common import Clock, ProgressBar, stop_requested
from .result import SolverResult

#: factor on the power-iteration estimate of sigma_max(X)^2: the Rayleigh quotient approaches
#: it from below, and an underestimated L voids the bound of eq. (26) (spec 003 §2.4)
LIPSCHITZ_SAFETY = 1.01
#: the least Lipschitz constant the solvers step with: all-zero (or underflowing) features give
#: 0, whose 1/L steps would divide by zero; a larger L only shortens a step, and 1/L stays finite
LIPSCHITZ_FLOOR = 1e-150

#: most iterations per call of the compiled loop (the verbose report and time-stamp interval)
MAX_CHUNK = 256


def sigma_max_sq(X, *, tol=1e-9, max_iter=300, seed=0):
    """Largest eigenvalue of ``X^T X`` (``sigma_max(X)^2``) by power iteration.

    Returns the last Rayleigh quotient ``||X v||^2`` (``||v|| = 1``), a lower bound that is
    accurate once its relative change per step falls below ``tol``.
    """
    v = np.random.default_rng(seed).standard_normal(X.shape[1])
    v /= np.linalg.norm(v)
    rho = 0.0
    for _ in range(max_iter):
        xv = X @ v
        new = float(xv @ xv)
        v = X.T @ xv
        norm = np.linalg.norm(v)
        if norm == 0.0:
            return new
        v /= norm
        if abs(new - rho) <= tol * new:
            return new
        rho = new
    return rho


def frobenius_sq(X):
    """``||X||_F^2``, an upper bound on ``sigma_max(X)^2``."""
    data = X.data if hasattr(X, "tocsr") else X
    return float(np.vdot(data, data))


def lipschitz_constant(X, alpha):
    """``L >= sigma_max(X)^2 / lambda``, the Lipschitz constant of ``grad D`` (spec 003 §2.4)."""
    return max(min(LIPSCHITZ_SAFETY * sigma_max_sq(X), frobenius_sq(X)) / alpha,
               LIPSCHITZ_FLOOR)


def min_bias(margins, y):
    """Exact ``argmin_b (1/n) sum_i [1 - y_i (margins_i + b)]_+`` (spec 003 §2.6).

    The midpoint of the flat segment of minimisers (:func:`min_bias_interval`); ``y`` in
    ``{-1, +1}`` with both signs.
    """
    margins = np.ascontiguousarray(margins, dtype=np.float64)
    low, high = min_bias_interval(margins, np.ascontiguousarray(y, dtype=np.float64),
                                  np.empty_like(margins))
    return 0.5 * (low + high)


def primal_objective(X, y, coef, alpha, fit_intercept):
    """``J(w)`` of spec 003 eq. (20) and its optimal bias (0 without intercept)."""
    margins = np.ascontiguousarray(X @ coef, dtype=np.float64)
    return hinge_objective(margins, np.ascontiguousarray(y, dtype=np.float64),
                           float(coef @ coef), alpha, fit_intercept, np.empty_like(margins))


@dataclass(kw_only=True)
class PragamResult(SolverResult):
    """What :func:`pragam` returns: a :class:`~sklearn_ssvm.solvers.result.SolverResult` with
    the dual point ``dual_coef`` (``a_k``) and the Lipschitz constant ``lipschitz``.

    ``history`` is columnar, as the compiled loop records every iteration: a dict mapping the
    :data:`~sklearn_ssvm.solvers.result.HISTORY_COLUMNS` to arrays with one entry per
    iteration ``k = 0, 1, ..., n_iter`` (``objective`` ``J(w_k)``, ``dual_objective``
    ``D(a_k)`` and ``gap``, NaN on iterations where the dual was not evaluated;
    ``oracle_calls`` ``(k + 1) n``; ``time``/``cpu_time`` seconds since the start, interpolated
    within each call of the compiled loop), and ``bound``, ``mu_k D2``, which the gap never
    exceeds (eq. (26): ``4 L D2/((k+1)(k+2))`` without ``adaptive``).
    """

    dual_coef: np.ndarray
    lipschitz: float
    history: dict


def pragam(X, y, alpha, *, fit_intercept=False, tol=1e-6, max_iter=1000, verbose=0, init=None,
           lipschitz=None, gap_every=1, adaptive=True):
    """Train a binary linear SVM by PRAGAM (spec 003 Algorithm 1).

    Minimises ``alpha/2 ||w||^2 + min_b (1/n) sum_i hinge`` (eq. (20); no ``b`` unless
    ``fit_intercept``) through the excessive-gap pair ``(w_k, a_k)``, stopping when the exact
    duality gap ``J(w_k) - D(a_k)`` is at most ``tol`` (absolute) or after ``max_iter``
    iterations of Algorithm 1's loop.

    ``X`` (n_samples, n_features) float64, ndarray or scipy.sparse CSR; ``y`` (n_samples,) in
    ``{-1, +1}``, both occurring when ``fit_intercept`` (an unregularised bias: Pragam-b, ``Q2``
    with ``<y, a> = 0``); ``alpha``: regularisation ``lambda > 0``. ``verbose > 0`` prints the
    objective and gap after each call of the compiled loop (every ``MAX_CHUNK`` iterations once
    warmed up). ``init`` ((n_samples,) or None): dual warm start, projected onto ``Q2``; it becomes
    both ``a_{-1}`` and the prox-center of ``d2(a) = 1/2 ||a - init||^2``, so the excessive-gap
    invariant and the bound of eq. (26) still hold (``max_{Q2} d2 <= 1/(2n)`` for any center in
    the box); None is the prox-center 0 (spec 003 §2.4, erratum 5). ``lipschitz``: ``L``; None
    uses power iteration (:func:`lipschitz_constant`); with ``adaptive`` the cap of the estimate
    and the start's step. ``gap_every``: evaluate the dual (one extra product with ``X^T``) every
    ``gap_every`` iterations; the primal ``J(w_k)`` is evaluated every iteration at ``O(n)`` cost;
    an adaptive step computes the product anyway, so the dual costs nothing more there.
    ``adaptive`` (default True): step with an adaptive estimate ``L_k <= L`` (each step verified,
    raised twofold where it fails, lowered by 1.2 after each accepted step) and the largest
    ``tau_k`` with ``L_k tau_k^2 <= (1 - tau_k) mu_k``; False runs Algorithm 1 as printed, ``tau_k
    = 2/(k+3)`` at ``L``."""
    n, d = X.shape
    y = np.ascontiguousarray(y, dtype=np.float64)
    clock = Clock()
    L = lipschitz_constant(X, alpha) if lipschitz is None else float(lipschitz)
    arrays = _kernel_arrays(X)
    if init is None:
        center = np.zeros(n)
    else:  # project the warm start onto Q2
        center = np.empty(n)
        project_q2_into(np.ascontiguousarray(init, dtype=np.float64), y, 1.0 / n, fit_intercept,
                        center, np.empty(n), np.empty(n), np.empty(n))
    w, u, a = np.empty(d), np.empty(n), np.empty(n)
    pragam_start(*arrays, y, alpha, L, center, fit_intercept, w, u, a)
    state = np.array([L, 2.0 * L])  # the adaptive L_k and mu_k (mu_0 = 2 L)
    rows, walls, cpus = [], [], []
    k, chunk, status = 0, 1, 0
    bar = ProgressBar(max_iter, verbose, "PRAGAM")
    while status == 0:
        # chunks grow geometrically: fine time stamps early, little Python overhead later
        k1 = min(k + chunk - 1, max_iter)
        hist = np.empty((k1 - k + 1, N_HIST))
        wall0, cpu0 = clock.wall(), clock.cpu()
        last, status, intercept = pragam_chunk(*arrays, y, alpha, L, center, fit_intercept, tol,
                                               k, k1, max_iter, gap_every, bool(adaptive),
                                               state, w, u, a, hist)
        span = last - k + 1
        frac = np.arange(1, span + 1) / span  # time stamps interpolated within the chunk
        walls.append(wall0 + frac * (clock.wall() - wall0))
        cpus.append(cpu0 + frac * (clock.cpu() - cpu0))
        rows.append(hist[:span])
        bar.update(span)
        bar.set_postfix(gap=f"{hist[span - 1, GAP]:.2e}")
        bar.log(f"iteration {last}", primal=hist[span - 1, PRIMAL], dual=hist[span - 1, DUAL],
                gap=hist[span - 1, GAP])
        k, chunk = last + 1, min(2 * chunk, MAX_CHUNK)
        if stop_requested():  # Ctrl-C between chunks (at most MAX_CHUNK iterations each)
            break
    bar.close()
    table = np.vstack(rows)
    iters = np.arange(last + 1)
    # mu_k D2 with D2 = max_{Q2} d2 = 1/(2n) and sigma2 = 1 (eq. (26))
    history = dict(iter=iters, objective=table[:, PRIMAL], dual_objective=table[:, DUAL],
                   gap=table[:, GAP], oracle_calls=(iters + 1) * n,
                   time=np.concatenate(walls), cpu_time=np.concatenate(cpus),
                   bound=table[:, MU] / (2.0 * n))
    return PragamResult(coef=w, intercept=intercept, dual_coef=a, objective=table[-1, PRIMAL],
                        dual_objective=table[-1, DUAL], duality_gap=table[-1, GAP],
                        n_iter=last, n_oracle_calls=(last + 1) * n, converged=status == 1,
                        lipschitz=L, history=history)


def _kernel_arrays(X):
    """``(dense, indptr, indices, data)`` as the kernels of ``_kernels/pragam.py`` take them."""
    if hasattr(X, "tocsr"):
        X = X.tocsr()
        return (np.zeros((0, 0)), X.indptr, X.indices, np.asarray(X.data, dtype=np.float64))
    empty = np.zeros(0, dtype=np.int32)
    return np.ascontiguousarray(X, dtype=np.float64), empty, empty, np.zeros(0)
