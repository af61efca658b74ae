"""Smoothed structured SVM solvers: SGD, SVRG and Casimir-SVRG (spec 000 §3, §5.4).

Pure functions over a packed :class:`~sklearn_ssvm.structures.Problem`. They minimise

    F_mu(w) = (1/n) sum_i f_{i,mu}(w) + r(w)                                     (spec eq. (1))

where ``f_{i,mu}`` is the structured hinge of example ``i`` smoothed by ``h_{mu omega}``
(entropy, l2^2 over all outputs, or the top-K strategy; ``mu = 0`` or no smoothing is the
non-smooth hinge), and ``r`` the elastic net of :mod:`~sklearn_ssvm.penalties` (``alpha`` a
float: ``alpha/2 ||w||^2``, spec 000's). Gradients are kept in label space
(``_kernels/smoothed.py``) and steps are applied lazily (``_kernels/stochastic.py``; with an l1
part they are proximal, the soft-threshold applied just in time): a step costs O(nnz_i C), not
O(d).

Each solver logs, per epoch, the non-smooth objective ``F(w)`` (the paper's "train loss"), the
oracle calls counted as the paper counts them (one per SGD step, two per SVRG step, full
gradients apart) and a certified duality gap: the smoothing weights ``u_i`` of every full
gradient are a feasible point ``a`` of the SSVM dual, so ``F(w) - D(a) >= F(w) - F*`` for any
``w``, with ``D(a) = mean_i E_{u_i} L(y_i, y) - r*(-g(a))`` and ``g(a)`` the mean loss
gradient (:class:`DualBound` keeps the best combination of them).
"""
from dataclasses import dataclass, replace

import numpy as np

from ..penalties import as_penalty
from .._kernels.batch import expected_losses, weights_from_state
from .._kernels.penalty import soft_line_search
from .._kernels.stochastic import (RSUM, S, R, WSUM, flush, lazy_state, prox_steps,
                                   stochastic_steps)
from . import capabilities
from ._common import Clock, ProgressBar, kernel_threads, sparsified, stop_requested
from ._common import dense_oracles as _dense
from .base import Solver
from .catalyst import catalyst, delta_schedule, stopping_test
from .result import SolverResult, history_record


@dataclass(kw_only=True)
class SmoothResult(SolverResult):
    """The smoothed solvers' :class:`~sklearn_ssvm.solvers.result.SolverResult`: ``objective``
    is the SSVM objective (not the smoothed one) at ``coef``, ``dual_objective`` the best dual
    value of the smoothed oracles' distributions (each is a feasible point of the SSVM's dual),
    NaN until a full pass computed one. History records are per epoch."""


@dataclass
class Smoothing:
    """How the hinge is smoothed: kernel code, ``K`` for top-K, and the scale ``mu``."""

    code: int
    K: int
    mu: float

    def at(self, mu):
        return replace(self, mu=float(mu))


@dataclass
class FullGradient:
    """Mean smoothed hinge and its gradient at ``w`` (loss part only), the label-space
    statistics ``M, Q`` of every example there, and their mean expected loss."""

    value: float
    grad: np.ndarray
    M: np.ndarray
    Q: np.ndarray
    dual_loss: float



class DualBound:
    """The best dual value found so far (a lower bound on ``min F``, spec 002 eq. (4)).

    Each full gradient's smoothing weights are a feasible dual point ``a``; ``D(a) = ell(a) -
    r*(-g(a))`` depends on it only through the mean loss gradient ``g(a)`` and expected loss
    ``ell(a)``, both linear in ``a``. A new point is merged with the current one by an exact
    line search on the segment between them (``D`` is a concave quadratic there, piecewise
    with an l1 part): a full-batch Frank-Wolfe step on the dual, so the bound never gets worse.
    """

    def __init__(self, penalty):
        self.penalty = penalty
        self.g = None
        self.ell = 0.0
        self.value = -np.inf

    def _step(self, dg, dell):
        """argmax over ``s`` in [0, 1] of ``D`` at ``(g + s dg, ell + s dell)``."""
        c = self.penalty.c
        u = self.penalty.linear(self.g) - self.g  # -g + p, the conjugate's argument
        if not self.penalty.l1:
            curvature = dg @ dg
            return 1.0 if curvature == 0 else float(np.clip(
                (c * dell + u @ dg) / curvature, 0.0, 1.0))
        n = dg.shape[0]
        return soft_line_search(dell, u, -dg, n, self.penalty.l1, c, 1.0, np.empty(2 * n),
                                np.empty(2 * n, dtype=np.int64))

    def update(self, snap):
        """Merge the dual point of the full gradient ``snap``; returns the bound."""
        if self.g is None:
            step = 1.0
        else:
            step = self._step(snap.grad - self.g, snap.dual_loss - self.ell)
            if step == 0.0:
                return self.value
        self.g = snap.grad.copy() if self.g is None else self.g + step * (snap.grad - self.g)
        self.ell += step * (snap.dual_loss - self.ell)
        self.value = self.ell - self.penalty.conjugate(-self.g)
        return self.value


def full_gradient(problem, coef, smoothing):
    if _dense(problem):  # per-example dense gradients stand for the label statistics M
        values, grads, ells = problem.smoothed_all(coef, smoothing)
        grads = np.array(grads)
        w = problem.sample_weight
        return FullGradient(problem.weighted_mean(values), w @ grads / len(w), grads, None,
                            problem.weighted_mean(ells))
    values, M, Q = problem.smoothed_losses(coef, smoothing.code, smoothing.mu, smoothing.K)
    ell = expected_losses(problem.kind, problem.tok_offsets, problem.y, problem.node_offsets,
                          problem.tok_loss, M)
    grad = np.zeros(problem.n_params)
    W, theta = problem.split_coef(grad)
    # weights_from_state gives scale * sum_i w_i X_i^T (S(y_i) - M_i): the mean gradient is -1/n
    weights_from_state(problem.packed(), M, Q, -1.0 / problem.n_samples, problem.sample_weight,
                       W, theta)
    return FullGradient(problem.weighted_mean(values), grad, M, Q, problem.weighted_mean(ell))


class LazyIterate:
    """``w = s v + r B`` with its lazily kept weighted average (``_kernels/stochastic.py``);
    with ``l1 > 0`` proximal steps on the explicit ``w = v``, soft-thresholded just in time."""

    def __init__(self, problem, w, B=None, l1=0.0):
        self.problem = problem
        self.v = np.array(w, dtype=float)
        self.B = np.zeros(0) if B is None else B  # empty: no dense constant (plain SGD)
        self.l1 = l1
        self.lazy = lazy_state()
        self.acc = np.zeros_like(self.v)
        self.marks = np.zeros(problem.n_features + 1)

    def steps(self, smoothing, M_ref, Q_ref, samples, step_sizes, decays, weights):
        p = self.problem
        args = (p.packed(), (smoothing.code, smoothing.K, smoothing.mu), (M_ref, Q_ref),
                (samples, step_sizes, decays, weights))
        if self.l1 > 0:
            prox_steps(*args, self.l1, self.v, self.B, self.lazy, self.acc)
        else:
            stochastic_steps(*args, self.v, self.B, self.lazy, self.acc, self.marks)

    def current(self):
        w = self.lazy[S] * self.v
        return w + self.lazy[R] * self.B if self.B.shape[0] else w

    def average(self):
        if not self.l1 > 0:  # prox_steps leaves every row caught up
            flush(self.v, self.acc, self.marks, self.lazy, self.problem.n_features,
                  self.problem.n_codes)
        acc = self.acc + self.lazy[RSUM] * self.B if self.B.shape[0] else self.acc
        return acc / self.lazy[WSUM]


class DenseIterate:
    """The steps of :class:`LazyIterate` for a dense-oracle problem: the oracle's dense
    gradient minus the reference one (``M_ref[i]``), then a projection onto the problem's
    feasible set (the graph cuts need a submodular pairwise table); the weighted average of
    the projected iterates stays feasible."""

    def __init__(self, problem, w, B=None):
        self.problem = problem
        self.w = problem.project(np.array(w, dtype=float))
        self.B = 0.0 if B is None else B
        self.acc = np.zeros_like(self.w)
        self.weight = 0.0

    def steps(self, smoothing, M_ref, Q_ref, samples, step_sizes, decays, weights):
        for i, gamma, decay, omega in zip(samples, step_sizes, decays, weights):
            grad = self.problem.smoothed(i, self.w, smoothing)[1] - M_ref[i]
            self.w = self.problem.project(decay * self.w - gamma * (self.B + grad))
            self.acc += omega * self.w
            self.weight += omega

    def current(self):
        return self.w.copy()

    def average(self):
        return self.acc / self.weight


def _iterate(problem, w, penalty, B=None):
    if not _dense(problem):
        return LazyIterate(problem, w, B, penalty.l1)
    capabilities.check("stochastic", problem, ("elastic_net",) if penalty.l1 > 0 else ())
    return DenseIterate(problem, w, B)


def svrg_epoch(problem, w_start, smoothing, step_size, penalty, n_steps, rng, snap=None):
    """One SVRG epoch (spec 000 §3.4) on ``F_mu`` with the regulariser ``penalty`` (an
    :class:`~sklearn_ssvm.penalties.ElasticNet`; proximal steps with an l1 part, Prox-SVRG):
    the full gradient at the snapshot ``w_start`` (``snap`` when the caller has it already),
    then ``n_steps`` steps on examples drawn uniformly with replacement. Returns the uniform
    average of the iterates and the snapshot's :class:`FullGradient`.

    The snapshot's per-example gradients are stored in label space, so a step makes one
    oracle call instead of the two the paper counts.
    """
    decay = 1.0 - step_size * penalty.c
    if not 0.0 < decay < 1.0:
        raise ValueError(f"learning_rate * (alpha + kappa) = {step_size * penalty.c:.3g} must "
                         f"be in (0, 1): lower the learning rate.")
    w_start = problem.project(w_start)  # the snapshot's oracles need a feasible point
    if snap is None:
        snap = full_gradient(problem, w_start, smoothing)
    lazy = _iterate(problem, w_start, penalty, snap.grad - penalty.linear(snap.grad))
    samples = problem.draw(rng, n_steps)
    lazy.steps(smoothing, snap.M, snap.Q, samples, np.full(n_steps, step_size),
               np.full(n_steps, decay), np.ones(n_steps))
    return lazy.average(), snap


def objective(problem, coef, penalty):
    """The non-smooth objective: (sample-weighted) mean structured hinge plus the
    regulariser."""
    return problem.weighted_mean(problem.hinge_losses(coef)) + penalty.value(coef)


class Monitor:
    """Per-epoch history (spec 000 §6.3): non-smooth objective, certified gap, oracle calls,
    solver seconds (wall and CPU, evaluation excluded); progress bar; the stopping test. With
    ``sparsify`` (a solver that targets the non-smooth objective) and an l1 part, the result
    zeros what the certificate allows (:func:`~sklearn_ssvm.solvers._common.sparsified`)."""

    def __init__(self, problem, penalty, tol, max_iter, verbose, desc, callback,
                 sparsify=False):
        self.problem, self.penalty, self.tol = problem, penalty, tol
        self.sparsify = sparsify
        self.callback = callback
        self.stopped = False  # the callback asked to stop
        self.clock = Clock()
        self.eval_wall = self.eval_cpu = 0.0
        self.history = []
        self.dual = DualBound(penalty)
        self.bar = ProgressBar(max_iter, verbose, desc)

    def record(self, epoch, coef, oracle_calls, snap=None, **extra):
        """Log epoch ``epoch`` ending at ``coef``; True when the run should end: the certified
        gap is <= tol, the callback returned ``{"stop": True}`` or Ctrl-C asked to stop."""
        wall, cpu = self.clock.wall() - self.eval_wall, self.clock.cpu() - self.eval_cpu
        value = objective(self.problem, coef, self.penalty)
        dual = np.nan if snap is None else self.dual.update(snap)
        gap = value - dual
        record = history_record(iter=epoch, objective=value, dual_objective=dual, gap=gap,
                                oracle_calls=oracle_calls, time=wall, cpu_time=cpu, **extra)
        if self.callback is not None:
            said = dict(self.callback(epoch, coef) or {})
            self.stopped = bool(said.pop("stop", False))
            record.update(said)
        self.history.append(record)
        self.bar.set_postfix(objective=f"{value:.4g}", gap=f"{gap:.2e}")
        self.bar.log(f"epoch {epoch}", objective=value, gap=gap)
        self.bar.update()
        self.eval_wall += self.clock.wall() - wall - self.eval_wall
        self.eval_cpu += self.clock.cpu() - cpu - self.eval_cpu
        return self.stopped or bool(gap <= self.tol) or stop_requested()

    def result(self, coef, n_iter, oracle_calls, converged):
        self.bar.close()
        last = self.history[-1] if self.history else history_record()
        reason = "" if np.isfinite(last["gap"]) else "no full pass computed a dual value yet"
        if not reason and not getattr(self.problem, "certified", True):
            reason = "an approximate oracle ran: the primal compares its (too low) maxima"
        value, dual = last["objective"], last["dual_objective"]
        if self.sparsify and self.penalty.l1 > 0 and not reason:  # averaged iterates
            coef, value = sparsified(coef, value, dual, self.penalty.c,
                                     self.tol if converged else np.inf,
                                     lambda w: objective(self.problem, w, self.penalty))
        return SmoothResult(coef=coef, n_iter=n_iter, n_oracle_calls=oracle_calls,
                            objective=value, dual_objective=dual, duality_gap=value - dual,
                            gap_certified=not reason, gap_reason=reason, converged=converged,
                            history=self.history)


def svrg(problem, penalty, smoothing, *, learning_rate, max_iter=50, tol=0.0, warmup=0,
         prox=None, init=None, random_state=None, n_jobs=None, verbose=0, callback=None):
    """SVRG on ``F_mu`` with a constant ``mu`` (the paper's SVRG baseline, spec 000 §3.6):
    each epoch restarts from the previous epoch's averaged iterate.

    ``penalty``: the elastic net (:meth:`~sklearn_ssvm.penalties.ElasticNet.from_alpha`):
    proximal steps, the certificate with its conjugate; a float is ``lambda`` of eq. (1), the L2
    penalty ``lambda/2 ||w||^2``. ``max_iter``: epochs (``n`` steps each, plus one full
    gradient), ``warmup`` included; ``tol``: stop once the certified duality gap of the non-smooth
    problem is at most ``tol``. ``warmup`` (default 0): epochs of SGD on ``F_mu`` before the first
    full gradient (:func:`sgd_warmup`); 0 starts SVRG at ``init`` as the paper does. ``prox``
    ((float, ndarray) or None): an extra proximal term ``(eta_inv / 2) ||w - center||^2`` (the
    prox-linear method's). ``init``: starting point (default ``0``). ``callback(epoch, coef) ->
    dict or None`` (or None), merged into the epoch's history record (e.g. a validation score); a
    ``"stop": True`` entry ends the run after this epoch."""
    rng = np.random.default_rng(random_state)
    penalty = _base_penalty(penalty, prox)
    n = problem.n_samples
    w = np.zeros(problem.n_params) if init is None else np.array(init, dtype=float)
    monitor = Monitor(problem, penalty, tol, max_iter, verbose, "SVRG", callback)
    with kernel_threads(n_jobs):
        w, epoch = sgd_warmup(problem, penalty, smoothing, learning_rate, w, warmup, max_iter,
                              rng, monitor)
        calls, stop = n * epoch, monitor.stopped
        while not stop and epoch < max_iter:
            epoch += 1
            w, snap = svrg_epoch(problem, w, smoothing, learning_rate, penalty, n, rng)
            calls += 2 * n
            stop = monitor.record(epoch, w, calls, snap, mu=smoothing.mu)
    converged = bool(monitor.history and monitor.history[-1]["gap"] <= tol)
    return monitor.result(w, epoch, calls, converged)


def sgd_warmup(problem, penalty, smoothing, learning_rate, w, warmup, max_iter, rng, monitor):
    """Start an SVRG-type solver with ``min(warmup, max_iter)`` SGD epochs on ``F_mu`` from
    ``w``: the solver's ``learning_rate`` in the ``linear`` schedule, weighted average, one
    oracle call per step. Returns the point reached and the epochs run.

    SVRG's first full gradient is otherwise taken at the starting point (``w = 0``), where
    every output scores alike; SVRG's corrections are then as noisy as SGD's steps without
    their decreasing rates, and the uniform average of the first epoch lands far from the
    optimum (CoNLL-2000: objective 0.82 after one Casimir-SVRG epoch, 0.15 after one SGD
    epoch). Johnson and Zhang (2013) start SVRG from SGD for this reason.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup!r}.")
    n = problem.n_samples
    return _sgd_epochs(problem, penalty, smoothing, w, learning_rate, "linear", n, "weighted",
                       min(int(warmup), max_iter), rng, lambda epoch, coef: monitor.record(
                           epoch, coef, n * epoch, mu=smoothing.mu))


def _base_penalty(penalty, prox):
    penalty = as_penalty(penalty)
    return penalty if prox is None else penalty.plus_prox(*prox)


def casimir_svrg(problem, penalty, smoothing, *, learning_rate, mu_schedule="expo", kappa=None,
                 kappa_schedule="const", warm_start="prox-center", scale_steps=True,
                 inner_epochs=1, inner_test=False, max_iter=50, tol=0.0, warmup=0, prox=None,
                 init=None, random_state=None, n_jobs=None, verbose=0, callback=None):
    """Casimir-SVRG (spec 000 Algo. 4): Catalyst's accelerated outer loop around one SVRG
    epoch per outer iteration (the paper's practical budget ``T_budget = n``, §3.2), on
    ``F_{mu_k, kappa_k}(w; z_{k-1})``, with a decreasing smoothing ``mu_k``.

    ``penalty``: as in :func:`svrg`; Catalyst's ``lambda`` is its l2 modulus ``c``. ``smoothing``:
    the smoother and ``mu_0``. ``learning_rate``: SVRG step size at ``mu_0`` (the paper tunes it;
    the estimator picks it automatically). ``mu_schedule``: ``mu_k`` constant (``"const"``,
    Casimir-SVRG-const), ``mu_0 (1 - sqrt(q)/2)^{k/2}`` (``"expo"``, Cor. 18, the adaptive
    variant) or ``mu_0 / k`` (``"linear"``, Cor. 20). ``kappa``: Catalyst's proximal weight; None
    uses ``kappa = alpha`` (``q = 1/2``), the paper's Casimir-SVRG-adapt setting;
    ``kappa_schedule`` ``{"const", "linear"}``. ``warm_start`` (``"prox-center"``,
    ``"extrapolation"``, ``"prev-iterate"``): starting point of each inner SVRG epoch (§3.3).

    ``scale_steps`` (default True): inner problem ``k`` uses ``learning_rate * max(mu_k / mu_0, 1
    / k)``, the step following the smoothing: the smoothed hinge's gradient is ``A /
    mu_k``-Lipschitz, so the step ``1 / L_k`` of Prop. 30 shrinks with ``mu_k`` (the spec's
    practical prox-linear schedule does the same, ``L_k = k L_0``). The ``1 / k`` floor keeps the
    steps' sum divergent under the geometric "expo" schedule, where steps following ``mu_k`` alone
    would stall the iterates. False keeps ``learning_rate`` fixed, as the paper's experiments tune
    it. On CoNLL-2000 (alpha = 1/n, "expo", one SGD warm-up epoch), a fixed step of 0.0074
    reached the objective 0.039 after 10 epochs and 0.023 after 25; scaled steps from 0.0074
    reached 0.020 and 0.0125, from 0.0147 0.017 and 0.0097.

    ``inner_epochs`` (default 1): SVRG epochs per outer iteration: the paper's practical budget
    ``T_budget = n`` steps is 1 (§3.2); with ``inner_test`` the cap. ``inner_test`` (default
    False): stop each inner solve as soon as it is accurate in the sense of (26), by the test of
    §3.2 (:func:`~sklearn_ssvm.solvers.catalyst.stopping_test` with ``delta_k`` of Cor. 17-20):
    after each epoch, a full gradient at its output gives ``||grad F_{mu_k, kappa_k}(w;
    z_{k-1})||`` (and the next epoch's snapshot). ``max_iter``: epochs: ``warmup`` SGD epochs,
    then outer iterations (``inner_epochs`` SVRG epochs at most each, counted as one). ``tol``,
    ``warmup``, ``prox``, ``init``, ``random_state``, ``n_jobs``, ``verbose``, ``callback`` as in
    :func:`svrg`; after a warm-up, ``w_0 = z_0`` is the point it reached.

    Returns a SmoothResult: ``coef`` is the last outer iterate ``w_K`` (an averaged SVRG
    iterate); history records hold ``inner_epochs``, the SVRG epochs of the iteration."""
    if inner_epochs < 1:
        raise ValueError(f"inner_epochs must be >= 1, got {inner_epochs!r}.")
    rng = np.random.default_rng(random_state)
    base = _base_penalty(penalty, prox)
    n = problem.n_samples
    w0 = np.zeros(problem.n_params) if init is None else np.array(init, dtype=float)
    kappa = base.c if kappa is None else float(kappa)
    # a decreasing smoothing targets the SSVM itself, whose zeros the result may then show
    monitor = Monitor(problem, base, tol, max_iter, verbose, "Casimir-SVRG", callback,
                      sparsify=mu_schedule != "const")
    snaps, epochs = {}, {}  # per outer iteration: the last full gradient, SVRG epochs run

    def inner(z, w_start, mu_k, kappa_k, k):
        scaled = scale_steps and smoothing.mu > 0
        step = learning_rate * max(mu_k / smoothing.mu, 1.0 / k) if scaled else learning_rate
        penalty, smoothing_k = base.plus_prox(kappa_k, z), smoothing.at(mu_k)
        w, snap = w_start, None
        for epoch in range(1, inner_epochs + 1):
            w, snap = svrg_epoch(problem, w, smoothing_k, step, penalty, n, rng, snap)
            if inner_test:
                snap = full_gradient(problem, w, smoothing_k)
                # F_{mu,kappa} - min <= ||least-norm subgradient||^2 / (2 (lambda + kappa))
                grad = penalty.least_norm_subgradient(w, snap.grad)
                if stopping_test(grad @ grad, base.c, kappa_k,
                                 delta_schedule(base.c, kappa_k, k), np.sum((w - z) ** 2)):
                    break
        snaps[k], epochs[k] = snap, epoch
        return w

    with kernel_threads(n_jobs):
        w0, warm = sgd_warmup(problem, base, smoothing, learning_rate, w0, warmup, max_iter,
                              rng, monitor)
        calls = n * warm

        def outer_callback(k, w_k, z_k, mu_k, kappa_k):
            nonlocal calls
            calls += 2 * n * epochs[k]
            return monitor.record(warm + k, w_k, calls, snaps.pop(k), mu=mu_k, kappa=kappa_k,
                                  inner_epochs=epochs.pop(k))

        w, n_iter = catalyst(inner, w0, base.c, kappa=kappa, kappa_schedule=kappa_schedule,
                             mu0=smoothing.mu, mu_schedule=mu_schedule, warm_start=warm_start,
                             max_iter=0 if monitor.stopped else max_iter - warm,
                             callback=outer_callback)
    converged = bool(monitor.history and monitor.history[-1]["gap"] <= tol)
    return monitor.result(w, warm + n_iter, calls, converged)


SGD_SCHEDULES = ("const", "linear", "pegasos")
SGD_AVERAGING = ("none", "uniform", "weighted")


def sgd_step_sizes(schedule, learning_rate, t0, alpha, t):
    """Step sizes at the (1-based) global steps ``t`` (spec 000 §5.4): constant, the paper's
    ``gamma_0 / (1 + t / t0)`` (the code's form, erratum 7), or Pegasos ``1 / (alpha (t + 1))``."""
    if schedule == "const":
        return np.full(t.shape[0], float(learning_rate))
    if schedule == "linear":
        return learning_rate / (1.0 + t / t0)
    return 1.0 / (alpha * (t + 1.0))


def sgd(problem, penalty, smoothing, *, learning_rate, schedule="linear", t0=None,
        averaging="weighted", max_iter=100, prox=None, init=None, random_state=None,
        n_jobs=None, verbose=0, callback=None):
    """Stochastic subgradient descent (``smoothing.mu = 0``) or SGD on ``F_mu`` (spec 000
    §5.4), one oracle call per step, with the paper's schedules and averaging.

    ``schedule`` (``"const"``, ``"linear"``, ``"pegasos"``): see :func:`sgd_step_sizes`; ``t0``
    defaults to ``n`` (the step halves after an epoch). ``averaging``: return the last iterate
    (``"none"``), the uniform average (``"uniform"``), or the average with iterate ``t`` weighted
    by ``t`` (``"weighted"``, the paper's ``2/(T^2+T) sum_t t w_t``). Other parameters as in
    :func:`svrg` (with an elastic net the steps are proximal and the averages are those of the
    thresholded iterates); there is no certified gap (no dual point), so SGD runs ``max_iter``
    epochs unless the callback stops it."""
    if schedule not in SGD_SCHEDULES:
        raise ValueError(f"schedule must be one of {SGD_SCHEDULES}, got {schedule!r}.")
    if averaging not in SGD_AVERAGING:
        raise ValueError(f"averaging must be one of {SGD_AVERAGING}, got {averaging!r}.")
    rng = np.random.default_rng(random_state)
    penalty = _base_penalty(penalty, prox)
    n = problem.n_samples
    w0 = np.zeros(problem.n_params) if init is None else np.array(init, dtype=float)
    monitor = Monitor(problem, penalty, -np.inf, max_iter, verbose, "SGD", callback)
    with kernel_threads(n_jobs):
        w, epochs = _sgd_epochs(problem, penalty, smoothing, w0, learning_rate, schedule,
                                n if t0 is None else t0, averaging, max_iter, rng,
                                lambda epoch, coef: monitor.record(epoch, coef, n * epoch,
                                                                   mu=smoothing.mu))
    return monitor.result(w, epochs, n * epochs, False)


def _sgd_steps(schedule, learning_rate, t0, alpha, t):
    """The step sizes at the global steps ``t`` and the decays ``1 - step * alpha`` of the
    iterate they imply, which must stay positive."""
    steps = sgd_step_sizes(schedule, learning_rate, t0, alpha, t)
    decays = 1.0 - steps * alpha
    if np.any(decays <= 0.0):
        raise ValueError(f"learning_rate * alpha = {steps.max() * alpha:.3g} must be below 1: "
                         f"lower the learning rate.")
    return steps, decays


@dataclass
class SGDStream:
    """What SGD carries from one chunk of examples to the next (``partial_fit``): the lazy
    iterate's arrays (:class:`LazyIterate`), the global step count ``t`` and the schedule's
    ``t0``. The chunks must share the features and labels of the first one."""

    v: np.ndarray
    lazy: np.ndarray
    acc: np.ndarray
    marks: np.ndarray
    t: int
    t0: float

    @classmethod
    def start(cls, problem, penalty, t0):
        """The stream at ``w = 0`` before any step; ``t0`` as in :func:`sgd_step_sizes`."""
        it = LazyIterate(problem, np.zeros(problem.n_params), None, as_penalty(penalty).l1)
        return cls(it.v, it.lazy, it.acc, it.marks, 0, float(t0))

    def pass_over(self, problem, penalty, smoothing, learning_rate):
        """One SGD pass over ``problem``'s examples in their order: steps ``t + 1 .. t + n`` of
        the ``linear`` schedule, iterate ``t`` weighted by ``t`` in the average (as
        :func:`sgd` with ``averaging="weighted"``). Returns the weighted average so far."""
        penalty = as_penalty(penalty)
        n = problem.n_samples
        t = np.arange(self.t + 1, self.t + n + 1, dtype=float)
        steps, decays = _sgd_steps("linear", learning_rate, self.t0, penalty.c, t)
        it = LazyIterate(problem, self.v, None, penalty.l1)
        it.v, it.lazy, it.acc, it.marks = self.v, self.lazy, self.acc, self.marks
        M_ref, Q_ref = problem.truth_stats()
        it.steps(smoothing, M_ref, Q_ref, np.arange(n), steps, decays, t)
        self.t += n
        # the average from a copy: flushing the lazy rows here would round them differently
        # from an uncut stream, so the chunk boundaries would show in the result
        it.v, it.lazy, it.acc, it.marks = (a.copy() for a in (it.v, it.lazy, it.acc, it.marks))
        return it.average()


def _sgd_epochs(problem, penalty, smoothing, w0, learning_rate, schedule, t0, averaging, epochs,
                rng, record):
    """Up to ``epochs`` SGD epochs from ``w0`` (see :func:`sgd`); ``record(epoch, coef)`` after
    each, a True return ending the run. Returns the last epoch's iterate (averaged as asked)
    and the epochs run."""
    n = problem.n_samples
    M_ref, Q_ref = problem.truth_stats()
    lazy = _iterate(problem, w0, penalty, None if penalty.p is None else -penalty.p)
    w, epoch = w0, 0
    for epoch in range(1, epochs + 1):
        t = np.arange((epoch - 1) * n + 1, epoch * n + 1, dtype=float)
        steps, decays = _sgd_steps(schedule, learning_rate, t0, penalty.c, t)
        weights = {"none": np.ones(n), "uniform": np.ones(n), "weighted": t}[averaging]
        lazy.steps(smoothing, M_ref, Q_ref, problem.draw(rng, n), steps, decays, weights)
        w = lazy.current() if averaging == "none" else lazy.average()
        if record(epoch, w):
            break
    return w, epoch


def learning_rate_scale(problem, smoothing):
    """``mu / R^2``, a (conservative) ``1/L`` for the smoothed hinge, with ``R^2`` the
    problem's ``squared_radius`` (a bound on ``||phi(x_i, y) - phi(x_i, y')||^2``); for the
    non-smooth hinge, ``1/R^2``."""
    return (smoothing.mu if smoothing.mu > 0 else 1.0) / problem.squared_radius()


def choose_learning_rate(problem, run, smoothing, rng, n_sub=500, grid=tuple(range(0, 15, 2))):
    """Pick a learning rate by a short search on a subsample (the paper tunes it by hand).

    ``run(subproblem, learning_rate)`` trains a couple of epochs on ``min(n, n_sub)`` random
    examples and returns the objective reached; the rates tried are
    ``learning_rate_scale * 2^k`` for ``k`` in ``grid`` and then the two neighbours
    (factor 2) of the best one. Rates that diverge or are invalid are skipped.
    """
    n = problem.n_samples
    sub = problem.subset(np.sort(rng.choice(n, size=min(n, n_sub), replace=False)))
    scale = learning_rate_scale(sub, smoothing)
    tried = {}

    def score(k):
        if k not in tried:
            try:
                value = run(sub, scale * 2.0 ** k)
            except ValueError:  # step too large for the regulariser
                value = np.inf
            tried[k] = value if np.isfinite(value) else np.inf
        return tried[k]

    best = min(grid, key=score)
    best = min((best - 1, best, best + 1), key=score)
    if not np.isfinite(tried[best]):
        raise ValueError(f"no learning rate gave a finite objective on a subsample (rates "
                         f"{scale:.3g} x 2^k, from the features' squared radius "
                         f"{sub.squared_radius():.3g}): features of extreme scale leave no "
                         f"stable step; rescale them (e.g. with MaxAbsScaler) or set "
                         f"learning_rate explicitly.")
    return scale * 2.0 ** best


class Stochastic(Solver):
    """:func:`sgd`, :func:`svrg` or :func:`casimir_svrg` behind the
    :class:`~sklearn_ssvm.solvers.base.Solver` protocol.

    ``method`` (``"sgd"``, ``"svrg"``, ``"casimir-svrg"``): the algorithm; ``smoothing``: the
    smoother and its ``mu``; ``**settings``: the keyword arguments of that function
    (``learning_rate``, ``max_iter``, ...) but ``init``: ``solve(..., warm=result)`` starts at a
    previous result's ``coef``, without the SGD warm-up epochs (the warm start is an informed
    snapshot)."""

    capabilities = capabilities.register("stochastic", capabilities.Capabilities(
        name="SmoothSSVMClassifier(solver='casimir-svrg', 'svrg' or 'sgd')",
        options=("elastic_net", "sample_weight"), penalty_codes=("l2", "elastic_net"),
        refused={("graph", "elastic_net"): "the dense-oracle path of the stochastic solvers "
                                           "takes the L2 penalty",
                 ("binary_graph", "elastic_net"): capabilities.SOFT_AND_CONE},
        certificate="the SSVM objective's gap, from the smoothed duals (stalls above tol)",
        warm_start=True, path="grid (warm: coefficients, learning rate)"))
    methods = {"sgd": sgd, "svrg": svrg, "casimir-svrg": casimir_svrg}

    def _solve(self, problem, penalty, warm):
        settings = dict(self.settings)
        run, smoothing = self.methods[settings.pop("method")], settings.pop("smoothing")
        if warm is not None:
            settings["init"] = warm.coef
            if "warmup" in settings:
                settings["warmup"] = 0
        return run(problem, penalty, smoothing, **settings)
