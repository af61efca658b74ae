"""Nesterov's accelerated gradient methods for regularised risk minimisation (spec 001).

AGM-EF-inf (spec 001 §2.2-2.5, Algorithms 1-2) and AGM-EF-1 (§2.6-2.8, Algorithms 3-4), both
with the adaptive Lipschitz estimate, minimise a composite ``F(x) = f(x) + Psi(x)``: ``f``
smooth and convex (the solvers use ``lambda_1 = 0``, as in the paper's RRM schemes), ``Psi``
``lambda_2``-strongly convex with a cheap model step (Assumption 2). Every gradient call also
returns the maximiser ``alpha(u)`` of the saddle-point form of ``f`` (Danskin); its weighted
average (eq. (22), (35)) is a feasible dual point, so each iteration is certified by an exact
duality gap ``J(w_k) - D(alpha_k) >= J(w_k) - min J`` (§5.2).

The oracles (objects with the methods used by :func:`agm_solve`) cover the binary hinge
smoothed in the primal (§3.2) and its dual (§3.3, §3.5), with or without an unregularised
bias; the F1-score structured loss (§3.6, log-space dynamic program); the entropy-smoothed
structured hinge (M3N) of any structure (§1.3, 4a); and elastic net (Example 6).

Numerical safety (§5.3): AGM-EF-inf works with ``1/A_k`` and accumulators divided by ``A_k``
(weighted averages), so nothing overflows when ``A_k`` grows geometrically; a trial step
commits nothing until its acceptance test passes.

Matrix products: ``f`` sees its argument only through a linear image (``X w`` for the primal
losses, ``X^T (y a)`` for the SVM dual), and ``u`` and ``x_{k+1}`` are affine combinations of
``x_k`` and ``z_k``, so the solver carries the images of ``x`` and ``z`` along and each trial
costs two products with ``X`` (the image of ``z_{k+1}`` and one inside the gradient) instead
of three. The carried images are recomputed every ``IMAGE_REFRESH`` iterations so that
rounding cannot accumulate in the certificates.
"""
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from .._kernels.f1 import f1_max_kernel, f1_smoothed_kernel
from .._kernels.pragam import hinge_objective, project_q2_into
from .._kernels.smoothed import ENTROPY
from ..penalties import ElasticNet, as_penalty
from . import capabilities
from ._common import Clock, ProgressBar, kernel_threads, sparsified, stop_requested
from .base import Solver
from .catalyst import SMOOTHING_FLOOR
from .pragam import LIPSCHITZ_FLOOR, sigma_max_sq
from .result import SolverResult, history_record
from .smooth import Smoothing
from .sums import open_sums

MEMORIES = ("inf", "1")

#: relative slack of the acceptance test, a comparison of two nearly equal numbers (§5.3)
ACCEPT_SLACK = 1e-12

#: most trials of the Lipschitz estimate per iteration (each multiplies it by gamma_u)
MAX_TRIALS = 60

#: iterations between exact recomputations of the carried images of ``x`` and ``z``
IMAGE_REFRESH = 50

#: continuation (:func:`agm_structured`): each run smooths ten times less than the one before,
#: started once the last one's gap stalled, judged over at least this many certificates
CONTINUATION_FACTOR = 10.0
CONTINUATION_CHECKS = 20


@dataclass(kw_only=True)
class AGMResult(SolverResult):
    """What the AGM solvers return: a :class:`~sklearn_ssvm.solvers.result.SolverResult` at the
    best certificate, ``objective`` ``J(coef)`` and ``dual_objective`` ``D(dual_coef)``, whose
    difference bounds ``J(coef) - min J``; ``coef`` is the iterate ``x_k`` in the primal, the
    averaged ``w(u)`` in the dual formulation. ``n_oracle_calls`` counts the trial steps (one
    oracle evaluation each). ``dual_coef`` (ndarray or None) is the dual point of the best
    certificate: ``alpha`` in ``[0, 1/n]^n`` for the binary hinge, the averaged residuals for
    elastic net; None for structures and F1, whose dual lives on all outputs (only its linear
    statistics are kept). ``lipschitz`` (float) is the last accepted Lipschitz estimate.
    History records add ``smoothed_objective`` (the smoothed objective AGM minimises at
    ``x_k``), ``lipschitz`` and ``trials``; ``gap`` is the best so far."""

    dual_coef: object
    lipschitz: float


@dataclass
class _Trial:
    """A candidate step: nothing of it is kept unless the acceptance test passes."""

    x: np.ndarray
    z: np.ndarray
    image_x: np.ndarray
    image_z: np.ndarray
    value: float
    info: object
    theta: float
    by: tuple
    state: tuple


def _average(avg, new, theta):
    """``(1 - theta) avg + theta new`` entry by entry (``avg`` None: ``new``)."""
    if avg is None:
        return tuple(np.array(v, dtype=float) for v in new)
    return tuple((1.0 - theta) * a + theta * np.asarray(v, dtype=float)
                 for a, v in zip(avg, new))


def _ef_inf_trial(oracle, x, z, image_x, image_z, state, L):
    """One trial of AGM-EF-inf (Algorithm 1 steps 5-10, ``lambda_1 = 0``, ``sigma = 1``) in
    normalised form (§5.3): ``state = (s, G, C)`` with ``s = 1/A_k``, ``G = sum a_i grad f(u_i)
    / A_k`` and ``C = sum a_i (f(u_i) - <grad f(u_i), u_i>) / A_k``, so that
    ``psi_k(x) / A_k = s/2 ||x - x0||^2 + Psi(x) + <G, x> + C``."""
    lam = oracle.strong
    s, G, C = state
    if s is None:  # A_0 = 0: a_1 = 1/L, u_1 = x_0 = z_0
        theta = theta_z = 1.0
        s_new = L
    else:
        # step 5 divided by A_k^2, r = a_{k+1}/A_k: L r^2 = (s + 2 lam) r + s + lam
        # the root in units of L: (s + 2 lam)^2 overflows once s ~ L ~ 1e154 (tiny alphas)
        b, c = (s + 2 * lam) / L, (s + lam) / L
        r = 0.5 * (b + np.sqrt(b * b + 4 * c))
        theta = r / (1.0 + r)  # a_{k+1} / A_{k+1}
        s_new = s / (1.0 + r)
        # weight of z_k in u_{k+1} (step 6 with tau_1 = A_k (s + lam), tau_3 = lam A_k theta)
        theta_z = theta * (s + lam) / (s + lam + lam * theta)
    u = x + theta_z * (z - x)
    fu, gu, by = oracle.gradient(u, image_x + theta_z * (image_z - image_x))
    G_new = gu if G is None else (1.0 - theta) * G + theta * gu
    C_new = (1.0 - theta) * (C or 0.0) + theta * (fu - gu @ u)
    z_new = oracle.model_min(s_new * oracle.x0 - G_new, s_new)
    image_z_new = oracle.image(z_new)
    x_new = x + theta * (z_new - x)
    image_x_new = image_x + theta * (image_z_new - image_x)
    diff = z_new - oracle.x0
    model = 0.5 * s_new * diff @ diff + oracle.psi(z_new) + G_new @ z_new + C_new
    value, info = oracle.value(x_new, image_x_new)
    return _Trial(x_new, z_new, image_x_new, image_z_new, value, info, theta, by,
                  (s_new, G_new, C_new)), model


def _ef_one_trial(oracle, x, z, image_x, image_z, state, L):
    """One trial of AGM-EF-1 (Algorithm 3, ``lambda_1 = 0``, ``sigma = 1``): ``state = (c, Q)``
    with ``c_k`` the modulus of ``q_k`` and ``Q = q_k(z_k)``; the first step (``c`` None) is
    the initialisation ``q_0`` around ``u_0 = x_0`` (Algorithm 4)."""
    lam = oracle.strong
    c, Q = state
    if c is None:  # x = z = x0
        a, u, image_u, center, c_model = 1.0, oracle.x0, image_x, oracle.x0, L
    else:
        # positive root of (L + lam) a^2 + (c - lam) a - c = 0, in (0, 1)
        a = (-(c - lam) + np.sqrt((c - lam) ** 2 + 4 * (L + lam) * c)) / (2 * (L + lam))
        tau1 = (1.0 - a) * c
        tau = tau1 + lam * a * (1.0 - a)
        u = x + (tau1 * a / tau) * (z - x)
        image_u = image_x + (tau1 * a / tau) * (image_z - image_x)
        center, c_model = z, (1.0 - a) * c / a
    fu, gu, by = oracle.gradient(u, image_u)
    z_new = oracle.model_min(c_model * center - gu, c_model)
    image_z_new = oracle.image(z_new)
    dz = z_new - center
    # psi_{k+1}(z_{k+1}) = (1 - a) q_k(z_{k+1}) + a (l_f(z_{k+1}; u) + Psi(z_{k+1}))
    model = a * (0.5 * c_model * dz @ dz + fu + gu @ (z_new - u) + oracle.psi(z_new))
    if c is not None:
        model += (1.0 - a) * Q
    if c is None:
        x_new, image_x_new = z_new, image_z_new
    else:
        x_new = x + a * (z_new - x)
        image_x_new = image_x + a * (image_z_new - image_x)
    value, info = oracle.value(x_new, image_x_new)
    return _Trial(x_new, z_new, image_x_new, image_z_new, value, info, a, by,
                  (a * (c_model + lam), model)), model


def agm_solve(oracle, *, memory="inf", tol=1e-6, max_iter=1000, gamma_u=2.0, gamma_d=2.0,
              check_every=1, stall_checks=None, stall_gap=np.inf, verbose=0, desc="AGM"):
    """AGM-EF-inf or AGM-EF-1 with adaptive Lipschitz estimation (spec 001 Algorithms 2, 4).

    ``oracle`` has attributes ``x0`` (start), ``strong`` (``lambda_2``, the modulus of ``Psi``),
    ``lipschitz0`` (an optimistic estimate of the Lipschitz constant of ``grad f``) and methods
    ``image(x)`` (the linear map through which ``f`` sees ``x``, e.g. ``X x``; the identity where
    there is none), ``gradient(u, image_u) -> (f(u), grad f(u), by)`` (``by``: a tuple of arrays
    or floats, the dual by-products averaged into the certificate), ``value(x, image_x) -> (F(x),
    info)``, ``psi(x)``, ``model_min(p, c) = argmin_x c/2 ||x||^2 - <p, x> + Psi(x)`` and
    ``certificate(x, info, by_average) -> (primal, dual, coef, intercept, dual_coef)``.
    ``memory`` ``"inf"`` is AGM-EF-inf (the model keeps every linearisation, aggregated), ``"1"``
    AGM-EF-1. Stops when the certified gap ``J - D`` is at most ``tol`` or after ``max_iter``
    (int). ``gamma_u``, ``gamma_d`` (float): factors by which the Lipschitz estimate grows on a
    rejected trial and shrinks before each iteration (the estimate may decrease, §2.4).
    ``check_every`` (int): iterations between certificates (each may cost an exact oracle pass).
    ``stall_checks`` (int or None): end the run, unconverged, once the best gap after ``k >=
    stall_checks`` certificates is more than 0.9 of the best after ``k // 2`` and at most
    ``stall_gap`` (float; a warm-started run must first beat its start, whose own dual point it
    lacks): AGM's own error falls as ``1/k^2`` (or geometrically, strongly convex), so a gap that
    doubling the iterations lowers by less than 10% is the smoothing's bias
    (:func:`agm_structured`'s continuation then smooths less); None: run on. ``verbose`` (int),
    ``desc`` (str)."""
    if memory not in MEMORIES:
        raise ValueError(f"memory must be one of {MEMORIES}, got {memory!r}.")
    if not (gamma_u > 1 and gamma_d >= 1):
        raise ValueError("gamma_u must be > 1 and gamma_d >= 1.")
    step = _ef_inf_trial if memory == "inf" else _ef_one_trial
    x = z = np.array(oracle.x0, dtype=float)
    image_x = image_z = oracle.image(x)
    state = (None, None, None) if memory == "inf" else (None, None)
    by_avg = None
    L = max(oracle.lipschitz0, LIPSCHITZ_FLOOR) * gamma_d  # the first trial: the estimate
    best = dict(primal=np.inf, dual=-np.inf, coef=None, intercept=0.0, dual_coef=None)
    clock = Clock()
    history = []
    gap = np.inf
    gaps = []  # the best gap after each certificate, for stall_checks
    calls = 0
    converged = False
    stalled = False
    # the vector operations are level-1 BLAS on n or d floats: a second BLAS thread only spins
    # (and on a busy machine waits), which doubled the CPU time on a9a
    with threadpool_limits(1, user_api="blas"), ProgressBar(max_iter, verbose, desc) as bar:
        for k in range(1, max_iter + 1):
            L /= gamma_d
            for trials in range(1, MAX_TRIALS + 1):
                trial, model = step(oracle, x, z, image_x, image_z, state, L)
                if trial.value <= model + ACCEPT_SLACK * max(1.0, abs(trial.value)):
                    break
                L *= gamma_u
            else:  # the test fails at any L: rounding dominates, nothing more to gain
                break
            x, z, state = trial.x, trial.z, trial.state
            image_x, image_z = trial.image_x, trial.image_z
            if k % IMAGE_REFRESH == 0:  # affine updates accumulate rounding: start afresh
                image_x, image_z = oracle.image(x), oracle.image(z)
            by_avg = _average(by_avg, trial.by, trial.theta)
            calls += trials
            record = history_record(iter=k, smoothed_objective=trial.value, lipschitz=L,
                                    trials=trials, oracle_calls=calls)
            if k % check_every == 0 or k == max_iter:
                primal, dual, coef, intercept, dual_coef = oracle.certificate(x, trial.info,
                                                                              by_avg)
                if primal < best["primal"]:
                    best.update(primal=primal, coef=coef, intercept=intercept)
                if dual > best["dual"]:
                    best.update(dual=dual, dual_coef=dual_coef)
                gap = best["primal"] - best["dual"]
                record.update(objective=primal, dual_objective=dual, gap=gap)
                converged = gap <= tol
                gaps.append(gap)
                stalled = (stall_checks is not None and len(gaps) >= stall_checks
                           and 0.9 * gaps[len(gaps) // 2 - 1] < gap <= stall_gap)
                bar.set_postfix(gap=f"{gap:.2e}")
                bar.log(f"iteration {k}", primal=primal, dual=dual, gap=gap)
            record.update(time=clock.wall(), cpu_time=clock.cpu())
            history.append(record)
            bar.update()
            if converged or stalled or stop_requested():  # Ctrl-C: the best point so far
                break
    if best["coef"] is not None and getattr(getattr(oracle, "penalty", None), "l1", 0.0) > 0:
        _sparsified(oracle, by_avg, best, tol if converged else np.inf)
        gap = best["primal"] - best["dual"]
    if best["coef"] is None:  # stopped before any certificate
        if by_avg is None:  # not even one accepted step: the dual point of the start
            by_avg = _average(None, oracle.gradient(x, oracle.image(x))[2], 1.0)
        primal, dual, coef, intercept, dual_coef = oracle.certificate(
            x, oracle.value(x, oracle.image(x))[1], by_avg)
        best.update(primal=primal, dual=dual, coef=coef, intercept=intercept,
                    dual_coef=dual_coef)
        gap = primal - dual
    return AGMResult(coef=best["coef"], intercept=best["intercept"],
                     dual_coef=best["dual_coef"], objective=best["primal"],
                     dual_objective=best["dual"], duality_gap=gap, n_iter=len(history),
                     n_oracle_calls=calls, converged=converged, lipschitz=L, history=history)


def _sparsified(oracle, by_avg, best, tol):
    """:func:`~sklearn_ssvm.solvers._common.sparsified` on the best point: AGM's iterates
    average model points (tiny chains: the optimum's zeros exactly, once the gap is about 1e-5
    of the objective)."""
    def primal_of(w):
        return oracle.certificate(w, oracle.value(w, oracle.image(w))[1], by_avg)[0]

    coef, primal = sparsified(best["coef"], best["primal"], best["dual"], oracle.strong, tol,
                              primal_of)
    best.update(coef=coef, primal=primal)


# -- binary hinge ---------------------------------------------------------------------------


class _Binary:
    """Shared pieces of the binary SVM oracles: data, ``Q2`` and the exact primal (§1.1)."""

    def __init__(self, X, y, alpha, fit_intercept):
        self.X, self.y, self.alpha = X, y, alpha
        self.n = y.shape[0]
        self.fit_intercept = fit_intercept
        self._proj = tuple(np.empty(self.n) for _ in range(3))
        self._work = np.empty(self.n)

    def project(self, v):
        """Euclidean projection onto ``Q2``: clipping to ``[0, 1/n]``, with the hyperplane
        ``<y, a> = 0`` when there is a bias (spec 003 eq. (22))."""
        out = np.empty(self.n)
        project_q2_into(np.ascontiguousarray(v, dtype=float), self.y, 1.0 / self.n,
                        self.fit_intercept, out, *self._proj)
        return out

    def primal(self, margins, w):
        """``J(w)`` with the bias minimised exactly, and that bias."""
        return hinge_objective(np.ascontiguousarray(margins, dtype=float), self.y,
                               float(w @ w), self.alpha, self.fit_intercept, self._work)

    def dual(self, a, v):
        """``D(a) = sum a - ||v||^2 / (2 lambda)`` with ``v = X^T (y * a)`` (eq. (41))."""
        return float(a.sum()) - v @ v / (2.0 * self.alpha)


class _L2Primal:
    """The primal oracles' linear image ``X w`` and ``Psi = lambda/2 ||w||^2`` (its model step)."""

    def image(self, w):
        return self.X @ w

    def psi(self, w):
        return 0.5 * self.alpha * w @ w

    def model_min(self, p, c):
        return p / (c + self.alpha)


class HingePrimal(_L2Primal, _Binary):
    """The smoothed hinge in the primal (spec 001 §3.2): ``f(w) = max_{a in Q2} sum_i a_i t_i
    - mu/2 ||a||^2`` with ``t_i = 1 - y_i <x_i, w>``, ``Psi = lambda/2 ||w||^2``.

    The maximiser ``a*(w) = Proj_Q2(t / mu)`` is the by-product; ``J_mu <= J <= J_mu + mu/(2n)``.
    """

    def __init__(self, X, y, alpha, fit_intercept, mu):
        super().__init__(X, y, alpha, fit_intercept)
        self.mu = mu
        self.strong = alpha
        self.x0 = np.zeros(X.shape[1])
        self.lipschitz0 = sigma_max_sq(X) / mu

    def _smoothed(self, margins):
        t = 1.0 - self.y * margins
        a = self.project(t / self.mu)
        return a @ t - 0.5 * self.mu * a @ a, a

    def gradient(self, w, margins):
        value, a = self._smoothed(margins)
        v = np.asarray(self.X.T @ (self.y * a)).ravel()
        return value, -v, (a, v)

    def value(self, w, margins):
        return self._smoothed(margins)[0] + self.psi(w), margins

    def certificate(self, w, margins, by_avg):
        a, v = by_avg
        primal, b = self.primal(margins, w)
        return primal, self.dual(a, v), w, b, a


class HingeDual(_Binary):
    """The SVM dual as an AGM problem (spec 001 §3.3, §3.5): minimise ``-D_mu(a)`` over
    ``Q2`` with ``f(a) = -sum a + ||X^T (y a)||^2 / (2 lambda)`` and ``Psi = mu/2 ||a||^2 +
    I_Q2`` (``mu = 0``: no smoothing). The by-products ``w(u) = X^T (y u) / lambda`` and
    ``X w(u)`` average to the primal point of the certificate."""

    def __init__(self, X, y, alpha, fit_intercept, mu=0.0):
        super().__init__(X, y, alpha, fit_intercept)
        self.mu = mu
        self.strong = mu
        self.x0 = np.zeros(self.n)
        self.lipschitz0 = sigma_max_sq(X) / alpha

    def image(self, a):
        """``v = X^T (y a)``, the dual's weights times ``lambda``."""
        return np.asarray(self.X.T @ (self.y * a)).ravel()

    def gradient(self, a, v):
        w = v / self.alpha
        margins = self.X @ w
        return -a.sum() + 0.5 * w @ v, self.y * margins - 1.0, (w, margins)

    def value(self, a, v):
        return -a.sum() + 0.5 * v @ v / self.alpha + self.psi(a), v

    def psi(self, a):
        return 0.5 * self.mu * a @ a

    def model_min(self, p, c):
        return self.project(p / (c + self.mu))

    def certificate(self, a, v, by_avg):
        w, margins = by_avg
        primal, b = self.primal(margins, w)
        return primal, self.dual(a, v), w, b, a


# -- F1-score loss ---------------------------------------------------------------------------


def f1_smoothed(scores, y, mu):
    """Entropy-smoothed F1 structured loss and its marginals (spec 001 §3.6).

    With ``z(y') = Delta(y', y) + (1/n) sum_i (y'_i - y_i) s_i`` over all ``2^n`` labelings
    ``y'``, returns ``mu log sum_{y'} exp(z(y') / mu)`` (within ``[max z, max z + mu n log 2]``),
    the probabilities ``P(y'_i != y_i)`` under ``softmax(z / mu)``, and the expected loss, by
    the log-space dynamic programs over the numbers of false negatives and positives
    (``O(n^2)`` time, compiled: ``_kernels/f1.py``).
    """
    flips = np.empty(y.shape[0])
    value, expected_loss = f1_smoothed_kernel(np.ascontiguousarray(scores, dtype=np.float64),
                                              np.ascontiguousarray(y, dtype=np.float64),
                                              float(mu), flips)
    return value, flips, expected_loss


def f1_max(scores, y):
    """``max_{y'} Delta(y', y) + (1/n) sum_i (y'_i - y_i) s_i``, the F1 structured hinge: for
    ``b`` false negatives the lowest-scored positives flip, for ``c`` false positives the
    highest-scored negatives (Joachims 2005; compiled: ``_kernels/f1.py``)."""
    return float(f1_max_kernel(np.ascontiguousarray(scores, dtype=np.float64),
                               np.ascontiguousarray(y, dtype=np.float64)))


class F1Primal(_L2Primal):
    """The F1-score structured loss (spec 001 §1.3 row 3) smoothed by entropy, in the primal:
    ``f(w) = mu log mean_{y'} exp(z(y') / mu)`` (``0 <= max z - f <= mu n log 2``) and
    ``Psi = lambda/2 ||w||^2``; no bias (a constant feature plays its part).

    The gradient ``E[(1/n) sum_i (y'_i - y_i) x_i] = -(2/n) sum_i y_i P(y'_i != y_i) x_i`` and
    the expected loss are the linear statistics of the smoothing distribution that the dual
    certificate ``D = E Delta - ||E psi||^2 / (2 lambda)`` needs.
    """

    def __init__(self, X, y, alpha, mu):
        self.X, self.y, self.alpha, self.mu = X, y, alpha, mu
        self.n = y.shape[0]
        self.strong = alpha
        self.x0 = np.zeros(X.shape[1])
        self.lipschitz0 = 4.0 * sigma_max_sq(X) / (self.n ** 2 * mu)

    def _smoothed(self, scores):
        value, flips, loss = f1_smoothed(scores, self.y, self.mu)
        return value - self.mu * self.n * np.log(2.0), flips, loss

    def gradient(self, w, scores):
        value, flips, loss = self._smoothed(scores)
        g = -2.0 / self.n * np.asarray(self.X.T @ (self.y * flips)).ravel()
        return value, g, (g, loss)

    def value(self, w, scores):
        return self._smoothed(scores)[0] + self.psi(w), scores

    def certificate(self, w, scores, by_avg):
        g, loss = by_avg
        primal = f1_max(scores, self.y) + self.psi(w)
        return primal, loss - g @ g / (2.0 * self.alpha), w, 0.0, None


def agm(X, y, alpha, *, formulation="primal", loss="hinge", fit_intercept=False, memory="inf",
        mu=None, tol=1e-6, max_iter=1000, gamma_d=1.2, verbose=0):
    """Binary linear classifier by AGM with a certified duality gap (spec 001).

    Minimises ``J(w) = alpha/2 ||w||^2 + R(w)`` with ``R`` the mean hinge (with an
    unregularised bias if ``fit_intercept``; spec 001 eq. (1)-(3)) or the F1-score structured
    loss (§1.3, Example 3).

    ``X`` (n_samples, n_features), ndarray or sparse; ``y`` (n_samples,) in ``{-1, +1}``;
    ``alpha`` is ``lambda`` (LinearSVC's ``C = 1 / (alpha n)`` for the hinge). ``formulation``:
    ``"primal"``, AGM on the smoothed primal ``J_mu`` (§3.2), or ``"dual"``, AGM on the SVM dual
    (§3.3 with ``mu = 0``, i.e. §3.5), hinge loss only. ``loss`` in ``{"hinge", "f1"}``.
    ``fit_intercept``: unregularised bias (hinge only; ``Q2`` gains the hyperplane ``<y, a> =
    0``). ``memory`` ``"inf"`` or ``"1"``: AGM-EF-inf or AGM-EF-1. ``mu`` (float or None):
    smoothing of the primal formulation; None picks it so that the smoothing costs at most ``tol
    / 2`` (``mu D = tol / 2``, §5.2): ``n tol`` for the hinge, ``tol / (2 n log 2)`` for F1.
    ``tol``: target certified duality gap ``J(w) - D(a)`` (absolute); ``max_iter`` (int).
    ``gamma_d``: factor by which the Lipschitz estimate shrinks before each iteration (spec 001
    Algorithm 2; the paper's 2 halves it, so most iterations pay a rejected trial, i.e. two more
    products with ``X``); 1.2 by measurement: relative suboptimality 1e-6 on a9a in 6,720 trials
    instead of 9,780 (12.2 vs 17.5 CPU s), on the synthetic 10,000 x 2,000 problem 2.7 vs 3.5 s.
    ``verbose`` (int). Returns an :class:`AGMResult`: ``coef`` of shape (n_features,),
    ``intercept``, ``gap``, ``n_iter``, ``history``."""
    X = X.tocsr() if sp.issparse(X) else np.asarray(X, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    n = y.shape[0]
    if formulation not in ("primal", "dual"):
        raise ValueError(f"formulation must be 'primal' or 'dual', got {formulation!r}.")
    if loss not in ("hinge", "f1"):
        raise ValueError(f"loss must be 'hinge' or 'f1', got {loss!r}.")
    if formulation == "primal" and mu is None and not tol > 0:
        raise ValueError("the primal formulation smooths the loss by mu = n tol (f1: "
                         "tol / (2 n log 2)): give tol > 0 or mu > 0.")
    if loss == "f1":
        if formulation == "dual" or fit_intercept:
            raise ValueError("the F1 loss is solved in the primal, without intercept (its dual "
                             "has 2^n variables; add a constant feature for a bias).")
        oracle = F1Primal(X, y, alpha, tol / (2 * n * np.log(2.0)) if mu is None else mu)
    elif formulation == "primal":
        oracle = HingePrimal(X, y, alpha, fit_intercept, n * tol if mu is None else mu)
    else:
        oracle = HingeDual(X, y, alpha, fit_intercept, 0.0 if mu is None else mu)
    return agm_solve(oracle, memory=memory, tol=tol, max_iter=max_iter, gamma_d=gamma_d,
                     verbose=verbose, desc=f"AGM-{formulation}")


# -- structured hinge (M3N) and elastic net --------------------------------------------------


class StructuredEntropy:
    """The structured hinge of any structure smoothed by entropy (M3N, spec 001 §1.3 row 4a):
    ``f(w) = mean_i mu log sum_y exp(H_i(y) / mu)`` with ``H_i`` the loss-augmented score
    margins, ``Psi`` the elastic net of ``penalty`` (spec 001 Example 6, §3.9: its model step is
    a soft-threshold, Assumption 2).

    The smoothing weights of each gradient are a feasible point of the SSVM dual; their mean
    gradient ``g`` and expected loss ``ell`` are the by-products, and the averaged pair
    certifies ``D = ell - Psi*(-g)`` against the exact (max-oracle) primal. Every sum over the
    examples goes through ``sums`` (a :class:`~sklearn_ssvm.solvers.sums.ExampleSums` of
    ``problem``: threads or a cluster).
    """

    def __init__(self, problem, sums, penalty, mu, x0=None):
        self.problem, self.sums, self.penalty = problem, sums, penalty
        self.smoothing = Smoothing(ENTROPY, 1, mu)
        self.strong = penalty.c
        self.x0 = np.zeros(problem.n_params) if x0 is None else x0
        cum = np.concatenate([[0.0], np.cumsum(problem.data ** 2)])
        rows = problem.indptr[problem.tok_offsets]
        # ||phi(x_i, y) - phi(x_i, y_i)||^2 <= 2 ||X_i||_F^2 + 2 T_i bounds the curvature
        self.lipschitz0 = (2.0 * np.max(cum[rows[1:]] - cum[rows[:-1]])
                           + 2.0 * np.max(np.diff(problem.tok_offsets))) / mu

    def image(self, w):
        return w  # the oracles see w whole: nothing to carry

    def gradient(self, w, _):
        value, grad, dual_loss = self.sums.smoothed(w, self.smoothing)
        return value, grad, (grad, dual_loss)

    def value(self, w, _):
        return self.sums.smoothed(w, self.smoothing, gradient=False) + self.psi(w), None

    def psi(self, w):
        return self.penalty.value(w)

    def model_min(self, p, c):
        return self.penalty.model_min(p, c)

    def certificate(self, w, info, by_avg):
        g, ell = by_avg
        primal = self.sums.hinge(w) + self.psi(w)
        return primal, float(ell) - self.penalty.conjugate(-g), w, 0.0, None


def agm_structured(problem, penalty, mu, *, memory="inf", tol=1e-3, max_iter=1000, check_every=1,
                   continuation=False, n_jobs=None, cluster=False, n_partitions=None, verbose=0):
    """AGM on the entropy-smoothed structured SVM of any structure (spec 001 §1.3, §3.2).

    Minimises ``r(w) + mean_i mu log sum_y exp(H_i(y) / mu)`` (the smoothed ``mean_i H~_i``;
    the smoothing adds at most ``mu log |Y_i|``) with a certified gap on the non-smooth
    objective of spec 002 eq. (1), ``r`` the L2 penalty ``alpha/2 ||w||^2`` or an elastic net
    (spec 001 Example 6: the composite's model step is the soft-threshold).

    ``problem`` (Problem); ``penalty``: any :class:`~sklearn_ssvm.penalties.Penalty` (the model
    step is its ``model_min``, the certificate its conjugate), or a float, ``lambda`` of the L2
    penalty. ``mu``: entropy smoothing ``> 0`` (the first stage's, with ``continuation``); the
    certified gap cannot fall below the smoothing's bias. ``memory`` ``{"inf", "1"}``; ``tol``:
    target certified gap of the non-smooth objective; ``max_iter`` (int): iterations, all stages
    together; ``check_every`` (int): iterations between certificates (one max-oracle pass each).
    ``n_jobs``, ``cluster``, ``n_partitions`` as in :func:`~sklearn_ssvm.solvers.bmrm.bmrm`, for
    the sums over the examples; ``verbose`` (int).

    ``continuation`` (bool): smooth less whenever the gap stalls above ``tol``: the run stops once
    doubling its iterations lowers the gap by less than 10% (``agm_solve``'s ``stall_checks``;
    halving it, the rule ended runs at small ``mu`` that were still descending), and a new run
    at ``mu / CONTINUATION_FACTOR`` starts from its best point (the prox-centre ``x0``),
    until the gap is within ``tol``, ``max_iter`` is spent or ``mu`` reaches
    ``SMOOTHING_FLOOR`` of its start. Each run's certificate bounds the same non-smooth
    objective, so the best primal and the best dual point of all runs make the gap. A
    constant ``mu`` converges to the smoothed problem, whose gap stalls near ``mu/3`` of
    ``loss_scale`` on tiny chains; the stages reach the SSVM's optimum and its zeros.

    Returns an :class:`AGMResult`, whose history records add ``mu``, the stage's smoothing;
    ``gap`` is the best of all stages."""
    if not mu > 0:
        raise ValueError(f"mu must be > 0, got {mu!r}.")
    penalty = as_penalty(penalty)
    mu0, mu, x0 = float(mu), float(mu), None
    stages = []
    with kernel_threads(n_jobs), open_sums(problem, cluster, n_partitions) as sums:
        while True:
            done = sum(stage.n_iter for stage in stages)
            stage = agm_solve(StructuredEntropy(problem, sums, penalty, mu, x0), memory=memory,
                              tol=tol, max_iter=max_iter - done, check_every=check_every,
                              stall_checks=CONTINUATION_CHECKS if continuation else None,
                              stall_gap=_joined(stages, tol).duality_gap if stages else np.inf,
                              verbose=verbose, desc="AGM-M3N")
            for record in stage.history:
                record.update(iter=record["iter"] + done, mu=mu)
            stages.append(stage)
            if (not continuation or stage.converged or stage.n_iter == max_iter - done
                    or mu <= SMOOTHING_FLOOR * mu0 or stop_requested()):
                break
            mu = max(mu / CONTINUATION_FACTOR, SMOOTHING_FLOOR * mu0)
            x0 = stage.coef
    return _joined(stages, tol)


def _joined(stages, tol):
    """The result of consecutive AGM runs on one objective: the best primal point and the best
    dual value of all of them, the gap between the two, the histories end to end."""
    primal = min(stages, key=lambda stage: stage.objective)
    dual = max(stage.dual_objective for stage in stages)
    best_primal, best_dual = np.inf, -np.inf
    history = [record for stage in stages for record in stage.history]
    for record in history:
        if "gap" in record:
            best_primal = min(best_primal, record["objective"])
            best_dual = max(best_dual, record["dual_objective"])
            record["gap"] = best_primal - best_dual
    gap = primal.objective - dual
    return AGMResult(coef=primal.coef, intercept=primal.intercept, dual_coef=None,
                     objective=primal.objective, dual_objective=dual, duality_gap=gap,
                     n_iter=len(history), n_oracle_calls=sum(s.n_oracle_calls for s in stages),
                     converged=bool(gap <= tol), lipschitz=stages[-1].lipschitz,
                     history=history)


_CAPABILITIES = capabilities.register("agm", capabilities.Capabilities(
    name="SmoothSSVMClassifier(solver='agm' or 'agm-ef1')",
    options=("elastic_net", "sample_weight"),
    penalty_codes=(),
    penalty_methods=("value", "conjugate", "model_min"),
    refused={("graph", None): capabilities.PYTHON_ORACLES,
             ("binary_graph", None): capabilities.PYTHON_ORACLES,
             ("compiled", "sample_weight"): "its batched entropy oracle weighs every "
                                            "example alike"},
    certificate="the SSVM objective's gap, from AGM's excessive-gap dual (spec 001)",
    warm_start=False, path="grid (cold)"))
capabilities.register("agm-cluster", replace(
    _CAPABILITIES, name="SmoothSSVMClassifier(solver='agm' or 'agm-ef1', cluster=True)",
    certificate=_CAPABILITIES.certificate + ", the sums over the examples on the cluster (the "
    "same iterates to the bit as on one process)"))


class AGM(Solver):
    """:func:`agm_structured` behind the :class:`~sklearn_ssvm.solvers.base.Solver` protocol.

    ``mu`` (float): entropy smoothing ``> 0``; ``**settings``: the other keyword arguments of
    :func:`agm_structured`. It has no warm start (declared): ``warm`` must be None."""

    @property
    def capabilities(self):
        """``SOLVERS["agm"]``, or ``SOLVERS["agm-cluster"]`` with ``cluster``."""
        return capabilities.SOLVERS["agm-cluster" if self.settings.get("cluster") else "agm"]

    def _solve(self, problem, penalty, warm):
        if warm is not None:
            raise ValueError("AGM starts from its own centre: it has no warm start.")
        return agm_structured(problem, penalty, **self.settings)


class LeastSquaresElasticNet:
    """Elastic net in scikit-learn's form (spec 001 Example 6, §3.9): ``f(w) = ||y - X w||^2 /
    (2n)``, ``Psi(w) = alpha l1_ratio ||w||_1 + alpha (1 - l1_ratio)/2 ||w||^2``.

    The model step is the soft-threshold prox; the residuals ``theta(u) = (y - X u)/n`` average
    to a point of the Fenchel dual ``D(theta) = <theta, y> - n/2 ||theta||^2 - Psi*(X^T theta)``.
    """

    def __init__(self, X, y, alpha, l1_ratio):
        self.X, self.y = X, y
        self.n = y.shape[0]
        self.penalty = ElasticNet.from_alpha(alpha, l1_ratio)
        self.strong = self.penalty.c
        self.x0 = np.zeros(X.shape[1])
        self.lipschitz0 = sigma_max_sq(X) / self.n

    def image(self, w):
        return self.X @ w

    def gradient(self, w, Xw):
        theta = (self.y - Xw) / self.n
        v = np.asarray(self.X.T @ theta).ravel()
        return 0.5 * self.n * theta @ theta, -v, (theta, v)

    def value(self, w, Xw):
        r = self.y - Xw
        return 0.5 * r @ r / self.n + self.psi(w), r

    def psi(self, w):
        return self.penalty.value(w)

    def model_min(self, p, c):
        return self.penalty.model_min(p, c)

    def certificate(self, w, r, by_avg):
        theta, v = by_avg
        dual = theta @ self.y - 0.5 * self.n * theta @ theta - self.penalty.conjugate(v)
        return 0.5 * r @ r / self.n + self.psi(w), dual, w, 0.0, theta


def agm_elastic_net(X, y, alpha=1.0, l1_ratio=0.5, *, memory="inf", tol=1e-8, max_iter=10000,
                    verbose=0):
    """Elastic net by AGM with a certified duality gap (spec 001 Example 6).

    Minimises scikit-learn's ``ElasticNet`` objective (no intercept)
    ``||y - X w||^2 / (2n) + alpha l1_ratio ||w||_1 + alpha (1 - l1_ratio)/2 ||w||^2``.
    ``X`` (n_samples, n_features), ndarray or sparse; ``y`` (n_samples,); ``alpha`` (float);
    ``l1_ratio`` in ``[0, 1)`` (the l2 part makes ``Psi`` strongly convex and the dual finite);
    ``memory``, ``tol``, ``max_iter``, ``verbose`` as in :func:`agm`."""
    X = X.tocsr() if sp.issparse(X) else np.asarray(X, dtype=float)
    return agm_solve(LeastSquaresElasticNet(X, np.asarray(y, dtype=float), alpha, l1_ratio),
                     memory=memory, tol=tol, max_iter=max_iter, verbose=verbose, desc="AGM-enet")
