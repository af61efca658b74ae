"""Prox-linear method for structured prediction with a non-linear score (spec 000 §4, Algo. 5).

Candidate-set problems (each example a list of candidate outputs with features ``x_y`` and
losses ``L(y_i, y)``) whose score ``s(x_y; w)`` is non-linear in ``w`` (a feature map of
``sklearn_ssvm.feature_maps``). The objective (59) is

    F(w) = (1/n) sum_i [max_y (L(y_i, y) + s(x_iy; w)) - s(x_iy_i; w)] + (alpha/2) ||w||^2.

Linearising every score at ``w_k``, ``s(x_y; w) ~ s(x_y; w_k) + <J_y, w - w_k>`` with ``J_y`` its
gradient, gives the convex model ``F(w; w_k)`` of eq. (60): an ordinary linear candidate-set SSVM
whose candidate features are the Jacobian rows ``J_y`` and whose losses absorb the offsets
``c_y = s(x_y; w_k) - <J_y, w_k>``. Algo. 5 minimises ``F(w; w_k) + ||w - w_k||^2 / (2 eta)``
approximately and keeps the result only if it does not increase ``F``: :func:`prox_linear` does
so with Casimir-SVRG (the paper's PL-Casimir-SVRG), :func:`prox_linear_loop` with any solver.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._kernels.labelings import CANDIDATES
from ..structures._problem import Problem
from . import capabilities
from ._common import Clock, ProgressBar, stop_requested
from .base import Solver
from .result import SolverResult, history_record
from .smooth import casimir_svrg

MU_SCHEDULES = ("linear", "const")


@dataclass(kw_only=True)
class ProxLinearResult(SolverResult):
    """Outcome of :func:`prox_linear` and :func:`prox_linear_loop`: a
    :class:`~sklearn_ssvm.solvers.result.SolverResult` at the last accepted iterate ``w_K``,
    ``objective`` ``F(coef)``, no duality gap (the objective is not convex in the weights);
    ``converged`` says whether the gradient-mapping estimate fell to ``tol``. ``n_oracle_calls``
    counts the inner solver's calls plus ``n`` per acceptance test. One history record per
    outer iteration, the starting point first (iteration 0)."""


@dataclass
class _Candidates:
    """Candidate sets stacked once: all candidates' features, offsets, losses, true indices."""

    X: np.ndarray
    offsets: np.ndarray
    losses: np.ndarray
    y: np.ndarray

    @property
    def n_samples(self):
        return self.y.shape[0]

    @property
    def true_rows(self):
        return self.offsets[:-1] + self.y


def _stack(X, losses, y_true):
    """Validate raw candidate-set inputs and stack them into a :class:`_Candidates`."""
    if len(X) == 0 or len(X) != len(losses) or len(X) != len(y_true):
        raise ValueError(f"X, losses and y_true must hold the same positive number of examples, "
                         f"got {len(X)}, {len(losses)} and {len(y_true)}.")
    blocks = [x.toarray() if sp.issparse(x) else np.asarray(x, dtype=float) for x in X]
    losses = [np.asarray(loss, dtype=float) for loss in losses]
    y = np.asarray(y_true)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError("y_true must be a 1-D array of candidate indices.")
    n_features = blocks[0].shape[1] if blocks[0].ndim == 2 else None
    for i, (x, loss) in enumerate(zip(blocks, losses)):
        if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] != n_features:
            raise ValueError(f"Example {i} must be a non-empty (n_candidates, {n_features}) "
                             f"matrix.")
        if loss.shape != (x.shape[0],):
            raise ValueError(f"Example {i} has {x.shape[0]} candidates but losses of shape "
                             f"{loss.shape}.")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(loss)) and np.all(loss >= 0)):
            raise ValueError(f"Example {i}: features and losses must be finite, losses >= 0.")
        if not 0 <= y[i] < x.shape[0] or loss[y[i]] != 0:
            raise ValueError(f"Example {i}: y_true must index a candidate of loss 0.")
    sizes = [x.shape[0] for x in blocks]
    return _Candidates(np.vstack(blocks), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                       np.concatenate(losses), y.astype(np.int32))


def _objective(feature_map, data, w, alpha):
    scores = feature_map.scores(data.X, w)
    best = np.maximum.reduceat(data.losses + scores, data.offsets[:-1])
    return float(np.mean(best - scores[data.true_rows])) + 0.5 * alpha * float(w @ w)


def _linearize(feature_map, data, w):
    J = feature_map.jacobian(data.X, w)
    offsets = feature_map.scores(data.X, w) - J @ w
    # L(y_i, y) + c_y - c_{y_i}: the linear SSVM's scores <J_y, w> then add up to the
    # linearised scores, and the loss stays 0 at the true candidate
    tok_loss = data.losses + offsets - np.repeat(offsets[data.true_rows], np.diff(data.offsets))
    J = sp.csr_matrix(J)
    return Problem(kind=CANDIDATES, indptr=J.indptr.astype(np.int64),
                   indices=J.indices.astype(np.int32), data=J.data, n_features=J.shape[1],
                   tok_offsets=data.offsets, y=data.y,
                   node_offsets=np.arange(data.n_samples + 1, dtype=np.int64), n_codes=1,
                   n_pair=0, tok_loss=tok_loss)


def linearize(feature_map, X, losses, y_true, w):
    """The convex model ``F(.; w)`` of eq. (60) as a packed linear candidate-set problem.

    ``feature_map``: the non-linear score, e.g. :class:`~sklearn_ssvm.feature_maps.MLPFeatureMap`;
    ``X``: per example, the candidate features, array-like (n_candidates_i, n_features), dense or
    sparse; ``losses``: per example, ``L(y_i, y) >= 0`` of each candidate, (n_candidates_i,), zero
    at the true one; ``y_true`` (n_samples,) int: the index of each example's true candidate;
    ``w`` (n_params,): the linearisation point ``w_k``. Returns a Problem of kind ``CANDIDATES``:
    candidate ``y`` of example ``i`` has the features ``J_iy`` (the gradient of its score at
    ``w``) and the loss ``L(y_i, y) + c_iy - c_iy_i`` with ``c_iy = s(x_iy; w) - <J_iy, w>``, so
    that ``problem.hinge_losses(v)`` are the hinge losses of the linearised scores at any ``v``
    (equal to the non-linear ones at ``v = w``). Its parameter vector has the layout of ``w``."""
    return _linearize(feature_map, _stack(X, losses, y_true), np.asarray(w, dtype=float))


def nonlinear_objective(feature_map, X, losses, y_true, w, alpha):
    """``F(w)`` of eq. (59): mean structured hinge of the non-linear scores (exhaustive over
    the candidates) plus ``(alpha/2) ||w||^2``. Arguments as in :func:`linearize`."""
    return _objective(feature_map, _stack(X, losses, y_true), np.asarray(w, dtype=float), alpha)


def prox_linear(feature_map, X, losses, y_true, alpha, smoothing, *, eta, learning_rate,
                inner_iter=5, inner_tol=None, mu_schedule="linear", max_iter=50, tol=0.0,
                init=None, random_state=None, n_jobs=None, verbose=0, callback=None):
    """Inexact prox-linear method with Casimir-SVRG inside (spec 000 Algo. 5, PL-Casimir-SVRG).

    Outer iteration ``k`` linearises the scores at ``w_{k-1}`` (:func:`linearize`) and runs
    Casimir-SVRG with constant smoothing on
    ``F_eta(w; w_{k-1}) = F(w; w_{k-1}) + ||w - w_{k-1}||^2 / (2 eta)`` (eq. (60)), started at
    the prox center ``w_{k-1}``; the result is kept only if it does not increase ``F``
    (:func:`prox_linear_loop`). The inner solve stops after ``inner_iter`` iterations (the
    paper's practical budget, Sec. 7.3.2) or, with ``inner_tol = eps_0``, as soon as it is
    certified ``eps_k``-accurate in the sense of (62), ``eps_k = eps_0 / k``: its duality gap
    on the non-smooth ``F_eta(.; w_{k-1})`` bounds ``F_eta(w_hat_k) - min F_eta``.

    ``feature_map``: the non-linear score with ``n_params``, ``init_params``, ``scores`` and
    ``jacobian``, e.g. :class:`~sklearn_ssvm.feature_maps.MLPFeatureMap`; ``X``, ``losses``,
    ``y_true``: candidate sets, as in :func:`linearize`. ``alpha``: regularisation ``lambda``
    (the paper's non-convex experiments use ``1/n``); ``smoothing`` (Smoothing): smoother of the
    inner problems and its ``mu``. ``eta``: prox-linear step ``eta > 0`` (Thm 35 needs ``eta <=
    1/L``, Assumption 33; the paper grid-searches powers of 10). ``learning_rate``: SVRG step size
    of the first inner problem; it must satisfy ``learning_rate * 2 (alpha + 1/eta) < 1`` (the
    inner Catalyst weight is ``kappa = alpha + 1/eta``). ``inner_iter`` (default 5, as in the
    paper): Casimir-SVRG iterations (epochs) per outer iteration; the cap per outer iteration when
    ``inner_tol`` is set.

    ``inner_tol`` (default None: the fixed budget alone): ``eps_0 > 0`` of the tolerance schedule
    ``eps_k = eps_0 / k`` (spec 000 §4): the k-th inner solve stops once its certified gap is at
    most ``eps_k``, which implies (62). Remark 38: ``eps_0`` of the order of ``F(w_0) - F*`` (``F*
    >= 0``). The smoothed subproblem's minimum lies up to ``mu_k / 2`` above the non-smooth one,
    so take ``mu <= eps_0``: the linear schedule then keeps ``mu_k <= eps_k`` (Prop. 37's
    coupling); otherwise the inner solves may stop at the cap. ``mu_schedule``: ``"linear"``
    (default), the paper's adaptive default, ``mu_k = mu / k`` with the learning rate divided by
    ``k`` (``L_k = k L_0``); ``"const"``: ``mu`` and the learning rate fixed. ``max_iter``,
    ``tol``, ``init``, ``verbose``, ``callback`` as in :func:`prox_linear_loop`;
    ``random_state`` (int, Generator or None) seeds the inner solver's sampling; ``n_jobs`` (int
    or None): threads of the batched oracles.

    Returns a ProxLinearResult whose history records also hold the inner ``mu``,
    ``learning_rate``, ``inner_objective`` (``F_eta(w_hat_k; w_{k-1})``, non-smooth),
    ``inner_gap`` (its certified gap), ``inner_tol`` (``eps_k``, 0 without ``inner_tol``) and
    ``inner_iter`` (epochs run)."""
    if mu_schedule not in MU_SCHEDULES:
        raise ValueError(f"mu_schedule must be one of {MU_SCHEDULES}, got {mu_schedule!r}.")
    if inner_iter < 1:
        raise ValueError(f"inner_iter must be >= 1, got {inner_iter!r}.")
    if inner_tol is not None and not inner_tol > 0:
        raise ValueError(f"inner_tol must be > 0 or None, got {inner_tol!r}.")
    rng = np.random.default_rng(random_state)

    def solve(problem, prox, k):
        scale = k if mu_schedule == "linear" else 1
        eps_k = 0.0 if inner_tol is None else inner_tol / k
        inner = casimir_svrg(problem, alpha, smoothing.at(smoothing.mu / scale),
                             learning_rate=learning_rate / scale, mu_schedule="const",
                             max_iter=inner_iter, tol=eps_k, prox=prox, init=prox[1],
                             random_state=rng, n_jobs=n_jobs)
        eta_inv, center = prox
        # the inner solver drops the constant of the prox term
        inner_objective = inner.objective + 0.5 * eta_inv * center @ center
        return inner.coef, inner.n_oracle_calls, dict(
            inner_objective=inner_objective, inner_gap=inner.duality_gap, inner_tol=eps_k,
            inner_iter=inner.n_iter, mu=smoothing.mu / scale,
            learning_rate=learning_rate / scale)

    return prox_linear_loop(feature_map, X, losses, y_true, alpha, solve, eta=eta,
                            max_iter=max_iter, tol=tol, init=init, verbose=verbose,
                            callback=callback)


def prox_linear_loop(feature_map, X, losses, y_true, alpha, solve, *, eta, max_iter=50, tol=0.0,
                     init=None, verbose=0, callback=None):
    """The outer loop of the inexact prox-linear method (spec 000 Algo. 5), for any convex
    solver ``M``.

    Iteration ``k`` builds the model ``F(.; w_{k-1})`` (:func:`linearize`), lets ``solve``
    minimise ``F_eta(.; w_{k-1})`` approximately into ``w_hat_k``, and sets
    ``w_k = w_hat_k`` if ``F(w_hat_k) <= F(w_{k-1})``, else ``w_k = w_{k-1}`` (the acceptance
    step, line 4), so ``F(w_k)`` is non-increasing (Thm 35).

    ``feature_map``, ``X``, ``losses``, ``y_true``, ``alpha`` as in :func:`prox_linear`.
    ``solve(problem, prox, k) -> (w_hat, n_oracle_calls, info)`` approximately minimises the
    problem's mean hinge plus ``(alpha/2) ||w||^2 + (eta_inv/2) ||w - center||^2``, with ``prox =
    (eta_inv, center)`` (``center = w_{k-1}``); ``info`` is a dict merged into the iteration's
    record. ``eta``: prox-linear step ``eta > 0``; ``max_iter`` (default 50): outer iterations
    ``K``; ``tol`` (default 0.0): stop once ``||w_hat_k - w_{k-1}|| / eta``, the inexact gradient
    mapping (63) at ``w_{k-1}``, is at most ``tol``. ``init``: ``w_0``; None draws
    ``feature_map.init_params(n_features)`` (``w = 0`` is stationary for scores without a bias).
    ``verbose`` (int): progress bar. ``callback(k, coef) -> dict or None`` (or None), merged into
    iteration ``k``'s record.

    Returns a ProxLinearResult; history records: ``iteration``, ``objective`` (``F(w_k)``),
    ``candidate_objective`` (``F(w_hat_k)``), ``accepted``, ``grad_mapping`` (the estimate above),
    ``time``, ``cpu_time``, ``oracle_calls`` (cumulative: the solver's plus ``n`` per acceptance
    test)."""
    if not eta > 0:
        raise ValueError(f"eta must be > 0, got {eta!r}.")
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter!r}.")
    data = _stack(X, losses, y_true)
    n = data.n_samples
    w = (feature_map.init_params(data.X.shape[1]) if init is None
         else np.array(init, dtype=float))
    value = _objective(feature_map, data, w, alpha)
    clock = Clock()
    oracle_calls = n
    history = [history_record(iter=0, objective=value, oracle_calls=oracle_calls, time=0.0,
                              cpu_time=0.0)]
    bar = ProgressBar(max_iter, verbose, "Prox-linear")
    converged = False
    problem = None  # the model at w_{k-1}, kept while steps are rejected
    k = 0
    for k in range(1, max_iter + 1):
        if problem is None:
            problem = _linearize(feature_map, data, w)
        w_hat, calls, info = solve(problem, (1.0 / eta, w), k)
        candidate = _objective(feature_map, data, w_hat, alpha)
        grad_mapping = float(np.linalg.norm(w_hat - w)) / eta
        accepted = candidate <= value
        if accepted:
            w, value, problem = w_hat, candidate, None
        oracle_calls += calls + n
        record = history_record(iter=k, objective=value, oracle_calls=oracle_calls,
                                time=clock.wall(), cpu_time=clock.cpu(),
                                candidate_objective=candidate, accepted=accepted,
                                grad_mapping=grad_mapping, **info)
        if callback is not None:
            record.update(callback(k, w) or {})
        history.append(record)
        bar.set_postfix(objective=f"{value:.4g}")
        bar.log(f"step {k}", objective=value, gradient_mapping=grad_mapping)
        bar.update()
        converged = grad_mapping <= tol
        if converged or stop_requested():
            break
    bar.close()
    return ProxLinearResult(coef=w, n_iter=k, n_oracle_calls=oracle_calls, objective=value,
                            gap_certified=False,
                            gap_reason="the objective is not convex in the weights: no dual",
                            converged=converged, history=history)


def candidate_sets(problem):
    """The candidate sets ``(X, losses, y_true)`` of a packed ``CandidateSet`` problem, as
    :func:`linearize` takes them: each example's candidate rows and losses."""
    rows, bounds = problem.token_matrix(), problem.tok_offsets
    spans = list(zip(bounds[:-1], bounds[1:]))
    return ([rows[a:b] for a, b in spans], [problem.tok_loss[a:b] for a, b in spans],
            problem.y)


class ProxLinear(Solver):
    """:func:`prox_linear` behind the :class:`~sklearn_ssvm.solvers.base.Solver` protocol, on
    the candidate sets of a packed ``CandidateSet`` problem scored by a non-linear
    ``feature_map`` (the non-linear score, :func:`prox_linear`), with ``smoothing`` (Smoothing)
    the smoother of the inner problems. ``**settings``: the other keyword arguments of
    :func:`prox_linear`; ``solve(..., warm=result)`` starts at a previous result's ``coef``
    instead of ``init``."""

    capabilities = capabilities.register("prox-linear", capabilities.Capabilities(
        name="SmoothSSVMClassifier(feature_map=...) on CandidateSet",
        options=("elastic_net", "sample_weight"), penalty_codes=("l2",),
        refused={("compiled", "elastic_net"): "the prox-linear method takes the L2 penalty",
                 ("compiled", "sample_weight"): "the prox-linear method weighs every example "
                                                "alike",
                 ("graph", None): capabilities.PYTHON_ORACLES,
                 ("binary_graph", None): capabilities.PYTHON_ORACLES},
        certificate="none (non-convex in the weights)", warm_start=True,
        path="grid (warm: coefficients)"))

    def _solve(self, problem, penalty, warm):
        settings = dict(self.settings)
        if warm is not None:
            settings["init"] = warm.coef
        return prox_linear(settings.pop("feature_map"), *candidate_sets(problem), penalty.c,
                           settings.pop("smoothing"), **settings)
