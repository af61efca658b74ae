"""PRAGAM on structured outputs (spec 003 App. E.1): Nesterov's excessive-gap method on the
M3N dual of a structure whose outputs per example are listed, each block of the dual a simplex.

With ``Delta f_v = phi(x_i, y_i) - phi(x_i, v)`` and ``l_v`` the loss of output ``v`` of example
``i`` (weight ``c_i = w_i / n``), the SSVM objective and its dual are

    J(w) = lambda/2 ||w||^2 + sum_i c_i max_v [l_v - <w, Delta f_v>],
    D(a) = <a, l> - ||sum_v a_v Delta f_v||^2 / (2 lambda),   a_i in c_i * simplex,

``w(a) = sum_v a_v Delta f_v / lambda`` (spec 003 App. E.1 with ``Q2`` the scaled simplices:
multi-class outputs and candidate sets, whose marginal polytope is the simplex itself). PRAGAM's
maps (23)-(25) are block-wise projections onto the scaled simplices; the prox-function is
``d2(a) = 1/2 ||a - a_gold||^2`` centred at the true outputs (``w(a_gold) = 0``: the start is
the zero model), so ``D2 = max_Q2 d2 = sum_i c_i^2``.
"""
import numpy as np

from .._kernels.labelings import CANDIDATES, MULTICLASS
from .._kernels.pragam import ADAPT_DOWN, ADAPT_UP
from .._kernels.simplex import project_blocks_into
from . import capabilities
from ._common import Clock, ProgressBar, kernel_threads, stop_requested
from .base import Solver
from .pragam import LIPSCHITZ_FLOOR, PragamResult
from .result import history_record

#: power iterations for ``sigma_max(Delta)^2`` and their safety factor (an underestimated L
#: voids PRAGAM's bound, spec 003 §2.4)
POWER_ITERATIONS, POWER_SAFETY = 100, 1.05


class SimplexDual:
    """The SSVM dual of a multi-class or candidate-set problem as flat arrays: vertex ``v`` is
    output ``v - offsets[i]`` of example ``i``, its score the entry of ``Z @ W`` (tokens x
    codes, flattened: a multi-class example has one token and ``C`` codes, a candidate set one
    code per candidate token). ``problem``: packed ``MulticlassSVM`` or ``CandidateSet`` data."""

    def __init__(self, problem):
        if problem.kind not in (MULTICLASS, CANDIDATES) or problem.n_pair:
            raise ValueError("structured PRAGAM takes MulticlassSVM and CandidateSet problems, "
                             "whose dual blocks are simplices over each example's outputs.")
        n, C = problem.n_samples, problem.n_codes
        self.Z = problem.token_matrix()
        self.shape = (self.Z.shape[0], C)
        self.offsets = (problem.tok_offsets * C).astype(np.int64)
        sizes = np.diff(self.offsets)
        self.block = np.repeat(np.arange(n), sizes)
        truth = problem.y[problem.node_offsets[:-1]].astype(np.int64)
        self.gold = self.offsets[:-1] + truth
        if problem.kind == MULTICLASS:
            self.loss = np.ones(self.offsets[-1])
            self.loss[self.gold] = 0.0
        else:
            self.loss = np.asarray(problem.tok_loss, dtype=float)
        self.mass = problem.sample_weight / n
        self.n_params = problem.n_params

    def scores(self, coef):
        """``<coef, phi(x_i, v)>`` of every vertex."""
        return np.asarray(self.Z @ coef.reshape(-1, self.shape[1])).ravel()

    def violations(self, coef):
        """``l_v - <coef, Delta f_v>`` of every vertex (the hinge's terms; ``grad D``)."""
        s = self.scores(coef)
        return self.loss - (s[self.gold][self.block] - s)

    def features(self, a):
        """``sum_v a_v Delta f_v`` (``lambda w(a)``): linear in ``a``."""
        b = -a.copy()
        b[self.gold] += np.bincount(self.block, weights=a, minlength=len(self.mass))
        return np.asarray(self.Z.T @ b.reshape(self.shape)).ravel()

    def project(self, v):
        """Block-wise Euclidean projection onto ``c_i`` times the simplex."""
        out = np.empty_like(v)
        project_blocks_into(np.ascontiguousarray(v), self.offsets, self.mass, out,
                            np.empty(int(np.max(np.diff(self.offsets)))))
        return out

    def centre(self):
        """The dual point of the true outputs, ``w(a) = 0``."""
        a = np.zeros(self.offsets[-1])
        a[self.gold] = self.mass
        return a

    def primal(self, coef, violations, alpha):
        """``J(coef)`` from ``violations(coef)``."""
        hinge = np.maximum.reduceat(violations, self.offsets[:-1])
        return 0.5 * alpha * coef @ coef + self.mass @ hinge

    def lipschitz(self, alpha, seed=0):
        """``sigma_max(Delta)^2 / lambda`` by power iteration, with a safety factor."""
        rng = np.random.default_rng(seed)
        v = rng.normal(size=self.n_params)
        norm = 0.0
        for _ in range(POWER_ITERATIONS):
            s = self.scores(v)
            u = self.features(s[self.gold][self.block] - s)  # Delta Delta^T v
            norm = np.linalg.norm(u)
            if norm == 0.0:
                break
            v = u / norm
        return max(POWER_SAFETY * norm / alpha, LIPSCHITZ_FLOOR)


def pragam_structured(problem, alpha, *, tol=1e-3, max_iter=1000, lipschitz=None, adaptive=True,
                      verbose=0, n_jobs=None):
    """Train a multi-class or candidate-set SSVM by PRAGAM (spec 003 Algorithm 1, App. E.1).

    ``problem``: packed ``MulticlassSVM`` or ``CandidateSet`` data (sample weights taken);
    ``alpha``: ``lambda > 0`` of the L2 penalty; ``tol``: absolute duality gap ``J(w_k) - D(a_k)``
    at which to stop; ``max_iter``: iterations of Algorithm 1's loop. ``lipschitz`` (float or
    None: power iteration): ``L >= sigma_max(Delta)^2 / lambda``, with ``adaptive`` the cap of the
    estimate. ``adaptive`` (default True): steps with an adaptive estimate ``L_k <= L``, as
    :func:`~sklearn_ssvm.solvers.pragam.pragam` takes them (the largest ``tau_k`` with ``L_k
    tau_k^2 <= (1 - tau_k) mu_k``, each step verified by the exact descent inequality of the
    quadratic ``D``, ``L_k`` raised twofold where it fails and lowered by 1.2 after each accepted
    step); False: Algorithm 1 as printed at ``L``. ``verbose`` (int); ``n_jobs`` (int or None):
    threads of the sparse products. Returns a PragamResult: ``coef`` the best primal iterate,
    ``dual_coef`` the best dual point (flat over the vertices); history records add ``bound``,
    eq. (26)'s ``mu_k D2``."""
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}.")
    dual = SimplexDual(problem)
    clock = Clock()
    L = dual.lipschitz(alpha) if lipschitz is None else float(lipschitz)
    centre = dual.centre()
    D2 = float(dual.mass @ dual.mass)

    with kernel_threads(n_jobs), ProgressBar(max_iter, verbose, "PRAGAM-M3N") as bar:
        # the start (step 1 at a_{-1} = centre, whose w is 0): a_0 = v(centre)
        w = np.zeros(dual.n_params)
        a = dual.project(centre + dual.loss / L)
        g_a = dual.features(a)  # lambda w(a_k)
        mu, L_k = 2.0 * L, L
        best = dict(primal=np.inf, dual=-np.inf, coef=w, dual_coef=a)
        history, converged = [], False
        for k in range(max_iter + 1):
            violations = dual.violations(w)  # the primal's and (23)'s
            primal = dual.primal(w, violations, alpha)
            dual_value = a @ dual.loss - g_a @ g_a / (2.0 * alpha)
            if primal < best["primal"]:
                best.update(primal=primal, coef=w)
            if dual_value > best["dual"]:
                best.update(dual=dual_value, dual_coef=a)
            gap = best["primal"] - best["dual"]
            history.append(history_record(
                iter=k, objective=primal, dual_objective=dual_value, gap=gap,
                oracle_calls=(k + 1) * problem.n_samples, time=clock.wall(),
                cpu_time=clock.cpu(), bound=mu * D2))
            bar.update()
            bar.set_postfix(gap=f"{gap:.2e}")
            converged = gap <= tol
            if converged or k == max_iter or stop_requested():
                break
            # (23): the smoothed maximiser at w_k, prox-centred at the true outputs
            a_mu = dual.project(centre + violations / mu)
            while True:
                tau = (2.0 * mu / (mu + np.sqrt(mu * mu + 4.0 * L_k * mu)) if adaptive
                       else 2.0 / (k + 3.0))
                beta = (1.0 - tau) * a + tau * a_mu
                w_beta = dual.features(beta) / alpha
                a_new = dual.project(beta + dual.violations(w_beta) / L_k)  # (25)
                g_a = dual.features(a_new)
                if not adaptive:
                    break
                curvature = np.sum((g_a / alpha - w_beta) ** 2)
                if (alpha * curvature <= L_k * np.sum((a_new - beta) ** 2) * (1.0 + 1e-12)
                        or L_k >= L):
                    break
                L_k = min(L_k * ADAPT_UP, L)
            w = (1.0 - tau) * w + tau * w_beta
            a = a_new
            mu *= 1.0 - tau
            if adaptive:
                L_k /= ADAPT_DOWN
    return PragamResult(coef=best["coef"], intercept=0.0, dual_coef=best["dual_coef"],
                        objective=best["primal"], dual_objective=best["dual"],
                        duality_gap=best["primal"] - best["dual"], n_iter=k,
                        n_oracle_calls=(k + 1) * problem.n_samples, converged=converged,
                        lipschitz=L, history=history)


class StructuredPragam(Solver):
    """:func:`pragam_structured` behind the :class:`~sklearn_ssvm.solvers.base.Solver` protocol
    (the L2 penalty; no warm start); ``**settings`` are the keyword arguments of
    :func:`pragam_structured`."""

    capabilities = capabilities.register("pragam-structured", capabilities.Capabilities(
        name="PragamStructuredSVM", options=("sample_weight",), penalty_codes=("l2",),
        refused={("graph", None): capabilities.PYTHON_ORACLES,
                 ("binary_graph", None): capabilities.PYTHON_ORACLES},
        certificate="exact duality gap of the best primal and dual iterates (spec 003 eq. (26))",
        warm_start=False, path="grid (cold)",
        structures=(("MulticlassSVM", "CandidateSet"),
                    "its dual blocks are simplices over each example's outputs; a marginal "
                    "polytope (chains, label trees) needs App. E.3's factorised projection")))

    def _solve(self, problem, penalty, warm):
        if warm is not None:
            raise ValueError("structured PRAGAM starts from its prox-centre: it has no warm "
                             "start.")
        return pragam_structured(problem, penalty.c, **self.settings)
