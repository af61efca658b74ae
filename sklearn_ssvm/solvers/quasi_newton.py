"""Quasi-Newton on the entropy-smoothed objective: L-BFGS, and OWL-QN with an l1 part.

Minimises

    F_mu(w) = r(w) + mean_i w_i f_{i,mu}(w),   f_{i,mu}(w) = mu log sum_y exp(psi_i(y; w) / mu)

the structured hinge ``psi_i(y; w) = L(y_i, y) + <w, phi(x_i, y) - phi(x_i, y_i)>`` smoothed by
the entropy (spec 000 §1.4, the exp oracle of forward-backward), under the elastic net ``r``.
With ``mu = 1`` and no task loss ``f_i`` is the negative conditional log-likelihood
``log Z_i(w) - <w, phi(x_i, y_i)>``: the objective of a conditional random field, which
CRFsuite minimises by L-BFGS, and by OWL-QN (Andrew & Gao 2007) with an l1 part.

The steps: limited-memory BFGS directions (the two-loop recursion over the last ``memory``
pairs of steps and gradient changes of the smooth part ``F_mu - l1 ||w||_1``); with ``l1 > 0``
OWL-QN's pseudo-gradient, the direction clipped to its signs and the steps projected onto the
orthant they start in; a backtracking line search for the Armijo decrease.

Certificate: at any ``w`` the Gibbs distributions ``q_i`` that attain ``f_{i,mu}(w) =
max_q E_q psi_i + mu H(q)`` are a point of the smoothed problem's dual, ``D(q) = mean_i w_i
(E_{q_i} L + mu H(q_i)) - r*(-g)`` with ``g`` the mean loss gradient, and by Gibbs' variational
principle ``F_mu(w) - D(q) = r(w) + r*(-g) + <w, g>``: the penalty's Fenchel-Young gap at
``(w, -g)``, an upper bound on ``F_mu(w) - min F_mu`` that is 0 exactly at the optimum, from
the gradient the step needs anyway.
"""
from collections import deque
from dataclasses import dataclass

import numpy as np
from scipy.linalg.blas import daxpy

from .._kernels.orthant import clip_direction, orthant_step, pseudo_gradient_into
from ..structures.base import smoothing_code
from . import capabilities
from ._common import ProgressBar, stop_requested
from .base import Solver
from .result import SolverResult, history_record
from .smooth import Smoothing, full_gradient

#: Armijo's sufficient-decrease constant and the most halvings of one line search
ARMIJO = 1e-4
MAX_HALVINGS = 30


@dataclass(kw_only=True)
class QuasiNewtonResult(SolverResult):
    """The quasi-Newton :class:`~sklearn_ssvm.solvers.result.SolverResult`: ``objective`` is
    ``F_mu`` at ``coef``, ``dual_objective`` the dual value of its Gibbs distributions and
    ``duality_gap`` their difference; ``n_evaluations`` counts value-and-gradient
    evaluations (line searches included)."""

    n_evaluations: int = 0


def pseudo_gradient(w, grad, l1):
    """OWL-QN's pseudo-gradient of ``F = smooth + l1 ||w||_1`` (``grad``: the smooth part's):
    the one-sided derivative of least magnitude at the coordinates where ``w`` is 0, and 0
    where the l1 term's subdifferential holds ``-grad``."""
    if l1 == 0.0:
        return grad
    pg = np.empty_like(grad)
    pseudo_gradient_into(w, grad, l1, pg)
    return pg


def two_loop(pg, pairs):
    """``-H pg`` for the L-BFGS inverse Hessian ``H`` of the ``pairs`` ``(s, y, 1 / <s, y>,
    <s, y> / <y, y>)`` (Nocedal & Wright Algorithm 7.4, initial scaling the newest pair's
    last entry). The updates are BLAS axpys in place: at millions of parameters the loop is
    memory-bound, and a temporary per update doubles its traffic."""
    q = pg.copy()
    alphas = []
    for s, y, rho, _ in reversed(pairs):
        a = rho * (s @ q)
        q = daxpy(y, q, a=-a)
        alphas.append(a)
    if pairs:
        q *= pairs[-1][3]
    for (s, y, rho, _), a in zip(pairs, reversed(alphas)):
        q = daxpy(s, q, a=a - rho * (y @ q))
    q *= -1.0
    return q


class QuasiNewton(Solver):
    """L-BFGS (OWL-QN with an l1 part) on the entropy-smoothed objective ``F_mu``.

    ``mu`` (default 1.0): the entropy's scale; 1 with a problem whose losses are zero is the
    conditional log-likelihood (``CRFClassifier``). ``memory`` (default 10): pairs of the L-BFGS
    model (CRFsuite's ``num_memories`` default: 6; scipy's 10). ``tol`` (default 0.0): stop when
    the certified gap is at most ``tol`` (absolute). ``max_iter`` (default 100): quasi-Newton
    iterations (each one line search). ``verbose`` (default 0): 1 a progress bar, 2 also a line
    per iteration."""

    capabilities = capabilities.register("quasi-newton", capabilities.Capabilities(
        name="CRFClassifier", options=("elastic_net", "sample_weight"),
        penalty_codes=("l2", "elastic_net"),
        refused={("binary_graph", None): "the log-likelihood needs the log-partition "
                                         "function; use GraphCRF, whose entropy smoothing is "
                                         "TRW's bound on it"},
        certificate="exact duality gap of the log-likelihood objective (the penalty's "
                    "Fenchel-Young gap at the mean gradient); on loopy graphs of TRW's bound "
                    "on it, uncertified",
        warm_start=True, path="grid (warm: coefficients)",
        structures=(("ChainCRF", "CandidateSet"),
                    "the likelihood drops the task loss, which the other compiled structures "
                    "keep in their kernels")))

    def _solve(self, problem, penalty, warm):
        mu = float(self.settings.get("mu", 1.0))
        memory = int(self.settings.get("memory", 10))
        tol = float(self.settings.get("tol", 0.0))
        max_iter = int(self.settings.get("max_iter", 100))
        code, K = smoothing_code("entropy", None, problem.kind)
        smoothing = Smoothing(code, K, mu)
        l1 = penalty.l1 if hasattr(penalty, "l1") else 0.0
        n_eval = [0]

        def evaluate(w):
            """``F_mu(w)``, the smooth part's gradient, and the gap's terms: the mean loss
            gradient ``g`` and the penalty ``r(w)``."""
            n_eval[0] += 1
            fg = full_gradient(problem, w, smoothing)
            r = penalty.value(w)
            grad = fg.grad + penalty.c * w
            if penalty.p is not None:
                grad -= penalty.p
            return fg.value + r, grad, (fg.grad, r)

        def gap_at(w, terms):
            g, r = terms
            return r + penalty.conjugate(-g) + w @ g

        w = (np.zeros(problem.n_params) if warm is None
             else np.array(warm.coef, dtype=float, copy=True))
        F, grad, terms = evaluate(w)
        gap = gap_at(w, terms)
        pairs = deque(maxlen=memory)
        history = []
        converged = gap <= tol
        n_iter = 0
        with ProgressBar(max_iter, self.settings.get("verbose", 0), "L-BFGS") as bar:
            while not converged and n_iter < max_iter and not stop_requested():
                pg = pseudo_gradient(w, grad, l1)
                d = two_loop(pg, pairs)
                # OWL-QN: only coordinates that descend
                slope = clip_direction(d, pg) if l1 else pg @ d
                if not slope < 0.0:  # the model lost descent (rounding): restart it
                    pairs.clear()
                    d = -pg
                    slope = pg @ d
                    if not slope < 0.0:
                        break  # a zero pseudo-gradient: the optimum
                step = 1.0 if pairs else 1.0 / np.sqrt(pg @ pg)
                w_new = np.empty_like(w)
                for _ in range(MAX_HALVINGS):
                    decrease = orthant_step(w, d, pg, step, bool(l1), w_new)
                    F_new, grad_new, terms_new = evaluate(w_new)
                    if F_new <= F + ARMIJO * decrease:
                        break
                    step *= 0.5
                else:
                    break  # no decrease left at machine precision
                s, y = w_new - w, grad_new - grad
                sy = s @ y
                yy = y @ y
                if sy > 1e-12 * np.sqrt((s @ s) * yy):
                    pairs.append((s, y, 1.0 / sy, sy / yy))
                w, F, grad, terms = w_new, F_new, grad_new, terms_new
                gap = gap_at(w, terms)
                n_iter += 1
                converged = gap <= tol
                history.append(history_record(
                    iter=n_iter, objective=F, dual_objective=F - gap, gap=gap,
                    oracle_calls=n_eval[0] * problem.n_samples, time=bar.clock.wall(),
                    cpu_time=bar.clock.cpu(), step=step))
                bar.update()
                bar.set_postfix(gap=f"{gap:.2e}")
                bar.log(n_iter, objective=F, gap=gap)
        return QuasiNewtonResult(coef=w, objective=F, dual_objective=F - gap, duality_gap=gap,
                                 converged=converged, n_iter=n_iter,
                                 n_oracle_calls=n_eval[0] * problem.n_samples,
                                 n_evaluations=n_eval[0], history=history)
