"""Regularization paths of the structured SVM (spec 002 §8; Osokin et al. 2016, §4, App. A).

:func:`regularization_path` builds an **eps-approximate path**: a piecewise constant ``w(alpha)``
(linear in ``1/alpha`` above the largest breakpoint) whose duality gap at every ``alpha`` of the
covered range is at most ``eps``, so that ``P_alpha(w(alpha)) - P*_alpha <= eps``. The largest
useful ``alpha`` is found in closed form (Alg. 6, eq. (11)); each next breakpoint follows from
Proposition 1 (eq. (12), (13)): rescaling the dual towards the true labelings keeps ``w`` and
moves the duality gap by a known, affine amount, so one can step down in ``alpha`` exactly as far
as the gap budget ``eps`` allows, then re-solve (Alg. 7) until the gap is back below
``kappa * eps``.

:func:`~sklearn_ssvm.model_selection.grid_search_path` (``_grid.py``) is the paper's baseline
(§5.2, App. K), on every estimator. :func:`cross_validate_path` picks ``alpha`` by K-fold
cross-validation on one path per fold (joblib). Paths and grids choose ``alpha`` on held-out data
without refitting (``best_estimator``).

Notation: ``alpha`` is the paper's ``lambda`` everywhere (eq. (1)), the estimators' name for it.
The dual is kept in label space (:class:`~sklearn_ssvm.solvers.bcfw.DualState`): block ``i`` holds
``M_i = E_{alpha_i} S(y)``, ``Q_i = E_{alpha_i} q(y)`` and ``ell_i = sum_y alpha_i(y) L_i(y) / n``,
and ``w_i = [phi(x_i, y_i) - (X_i^T M_i (+) Q_i)] / (alpha n)``, ``GraphCRF``'s too (its
``GraphProblem.label_space()``; ``solvers/bcfw_path.py``).
"""
import copy
import time
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_params
from ..solvers._common import generator, kernel_threads
from ..solvers.bcfw import BCFWResult, DualState, certificate
from ..solvers.bcfw_path import block_deltas, check_zero_loss, initialize_path

__all__ = ["PathCV", "RegularizationPath", "cross_validate_path", "regularization_path"]

#: default ``kappa`` (fraction of ``eps`` each breakpoint is solved to), paper App. K
KAPPA_EXACT = 0.9
KAPPA_HEURISTIC = 0.7


# ----------------------------------------------------------------------------------------------
# solver settings taken from the estimator
# ----------------------------------------------------------------------------------------------

def _seed_sequences(random_state, k):
    """``k`` independent seeds, fixed by ``random_state`` (whatever the execution order)."""
    if isinstance(random_state, np.random.Generator):
        entropy = int(random_state.integers(2**63))
    elif isinstance(random_state, np.random.RandomState):
        entropy = int(random_state.randint(2**31))
    else:
        entropy = random_state
    return np.random.SeedSequence(entropy).spawn(k)


def _certified_path_refusal(estimator, solver=None):
    """Why ``estimator`` has no certified path (spec 002 §8), or None: its ``solver`` (the
    fit's on the packed data) must declare ``certified_path`` (Prop. 1 and Alg. 6 are BCFW's
    dual under the L2 penalty, without constraints); without ``solver`` (before the data are
    packed) the checks that need none. Invalid parameters raise scikit-learn's error first."""
    from ..estimators.base import StructuredEstimator

    structured = isinstance(estimator, StructuredEstimator)
    if structured:
        check_params(estimator)
    caps = None if solver is None else solver.capabilities
    if not structured or caps is not None and not caps.certified_path:
        name = type(estimator).__name__ if caps is None else caps.name
        return (f"The certified paths (regularization_path, cross_validate_path) are built on "
                f"the dual of a solver that declares certified_path (BCFW's, spec 002 §8; "
                f"cluster fits keep their dual blocks on the workers), not {name}. "
                f"grid_search_path solves {name} on a grid of alpha with warm starts, and "
                f"its CV estimator chooses alpha.")
    if getattr(estimator, "coef_bounds", None) is not None:
        return ("Certified paths with box constraints (coef_bounds) are not implemented: "
                "Alg. 6 gives no bound for them (spec 002 §8.2); grid_search_path solves them "
                "on a grid.")
    if getattr(estimator.structure, "constrained_coef", False):
        return (f"Certified paths of {type(estimator.structure).__name__} are not implemented: "
                f"its coefficients are projected on a cone (graph cuts need a submodular "
                f"pairwise table), which like box constraints breaks Prop. 1's rescaling (spec "
                f"002 §8.2); grid_search_path solves it on a grid. GraphCRF has no such "
                f"constraint.")
    if getattr(estimator, "penalty", None) is not None or getattr(estimator, "l1_ratio", 0):
        return ("Certified paths with an l1 penalty (l1_ratio > 0) or another penalty are not "
                "implemented: Alg. 6 and Prop. 1 are the L2 penalty's (spec 002 §8); "
                "grid_search_path solves them on a grid.")
    return None


def _uses_atoms(settings):
    """Whether the solver keeps per-block labelings that a warm start must carry over."""
    return settings.get("step", "fw") != "fw" or bool(settings.get("cache", False))


def _check_positive(value, name, upper=None):
    if not isinstance(value, Real) or not np.isfinite(value) or value <= 0 or (
            upper is not None and value >= upper):
        bound = f" and < {upper}" if upper is not None else ""
        raise ValueError(f"{name} must be a finite number > 0{bound}, got {value!r}.")


# ----------------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------------

class _PathResult:
    """Model selection shared by the path and the grid search: no refitting."""

    def _candidates(self, alphas):
        raise NotImplementedError

    def validation_scores(self, X_val, Y_val, alphas=None):
        """Score ``1 - mean task loss`` on held-out data at each candidate ``alpha``.

        Parameters
        ----------
        X_val : list of arrays or sparse matrices, or 2-D array
            Validation inputs, in the format of the training data.
        Y_val : list of label arrays, 1-D array or 2-D indicator matrix
            Validation labelings, in the format of the training data.
        alphas : array-like or None, default=None
            Candidate regularisation values (default: the breakpoints / grid points). They
            must be covered by the path.

        Returns
        -------
        alphas : ndarray
            The candidates, descending.
        scores : ndarray
            The validation score of the path's solution at each candidate, in [0, 1].
        """
        problem, score = self.structure_.prediction_scorer(X_val, Y_val)
        cands = self._candidates(alphas)
        cache = {}
        scores = np.empty(len(cands))
        for k, (alpha, key, coef, _) in enumerate(cands):
            if key not in cache:  # predictions only change from one piece to the next
                y_pred, _, _, _ = problem.run_oracle(coef, False)
                cache[key] = score(y_pred)
            scores[k] = cache[key]
        return np.array([c[0] for c in cands]), scores

    def best_estimator(self, X_val, Y_val, alphas=None):
        """Return the fitted estimator of the ``alpha`` scoring best on held-out data.

        There is no refit. Ties go to the largest ``alpha``. The returned estimator is a clone of
        the one the path was computed with, ``alpha`` set to the choice, and fitted attributes
        ``coef_``, ``structure_``, ``alpha_``, ``classes_``, ``n_features_in_``,
        ``duality_gap_`` (the path's certificate at that ``alpha``) and ``validation_score_``;
        ``predict`` and ``score`` work. It has no dual state, so ``warm_start`` cannot continue
        from it.

        Parameters
        ----------
        X_val : list of arrays or sparse matrices, or 2-D array
            Validation inputs, in the format of the training data.
        Y_val : list of label arrays, 1-D array or 2-D indicator matrix
            Validation labelings, in the format of the training data.
        alphas : array-like or None, default=None
            Candidates (default: the breakpoints / grid points).

        Returns
        -------
        BCFWStructuredSVM
            A clone of the path's estimator with the path's solution at the chosen ``alpha``.
        """
        cand_alphas, scores = self.validation_scores(X_val, Y_val, alphas)
        best = int(np.argmax(scores))  # candidates are descending: first max = largest alpha
        alpha, _, coef, gap = self._candidates(alphas)[best]
        est = self._estimator_at(alpha, coef, gap)
        est.validation_score_ = float(scores[best])
        return est

    def _estimator_at(self, alpha, coef, gap):
        """A clone of ``estimator`` fitted with ``coef`` at ``alpha`` (no solver run)."""
        est = clone(self.estimator)
        est.set_params(alpha=float(alpha))
        est.coef_ = np.array(coef, dtype=float)
        est.structure_ = copy.deepcopy(self.structure_)
        est.alpha_ = float(alpha)
        est.classes_ = est.structure_.classes_
        est.n_features_in_ = est.structure_.n_features_in_
        est.duality_gap_ = float(gap)
        return est

    @property
    def effective_passes_(self):
        """Cumulative oracle calls / n at each point: the paper's effective passes."""
        return self.n_oracle_calls_ / self.n_samples_


class RegularizationPath(_PathResult):
    """An eps-approximate regularization path (spec 002 §8; Alg. 7).

    Breakpoints ``alphas_[0] = lambda^inf > alphas_[1] > ... > alphas_[J]``. For
    ``alpha >= alphas_[0]`` the path is ``(alphas_[0] / alpha) coefs_[0]``; on
    ``[alphas_[j+1], alphas_[j]]`` it is ``coefs_[j]``; below ``alphas_[J]`` it is ``coefs_[J]``
    down to ``alpha_lower_`` (0 when the path ended with ``Delta <= tau``).

    Built by :func:`regularization_path`, which passes the parameters.

    Parameters
    ----------
    estimator : BCFWStructuredSVM
        The (unfitted) estimator the path was computed with.
    structure : Structure
        The structure fitted on the training data.
    n_samples : int
        Number of training examples.
    eps : float
        Target suboptimality along the path.
    kappa : float
        Fraction of ``eps`` each breakpoint is solved to.
    heuristic : bool
        Whether the path is the heuristic one of App. K.
    records : list of dict
        One per breakpoint, with keys ``alpha``, ``coef``, ``gap``, ``exact``, ``ell``,
        ``hinge``, ``calls`` and ``time`` (the attributes' entries).
    stop_reason : str
        Why the path ended (``stop_reason_``).
    alpha_lower : float
        Lower end of the covered range (``alpha_lower_``).
    start : PathStart
        The initialisation of Alg. 6 (``init_bound_`` and ``init_gap_bounds_`` are its).

    Attributes
    ----------
    alphas_ : ndarray of shape (J + 1,)
        Breakpoints, strictly decreasing.
    coefs_ : ndarray of shape (J + 1, n_params)
        ``w^j``, the solution at ``alphas_[j]``.
    gaps_ : ndarray of shape (J + 1,)
        Duality gap at each breakpoint: exact where ``exact_``, else the sum of the block-gap
        estimates (upper bounds at ``alphas_[0]`` of a heuristic path).
    exact_ : ndarray of bool
    ells_ : ndarray
        ``ell^j = b^T alpha^j`` (the linear part of the dual).
    hinges_ : ndarray
        ``mean_i H~_i(w^j)``; on a heuristic path an estimate, ``sum_i (g^_i + delta_i)`` from
        the stale gap estimates (an upper bound at ``alphas_[0]``), so its ``gap_bound`` is
        no certificate either.
    sq_norms_ : ndarray
        ``||w^j||^2``.
    n_oracle_calls_ : ndarray of int
        Cumulative max-oracle calls (initialisation and exact gap passes included) when
        breakpoint ``j`` was reached.
    times_ : ndarray
        Cumulative wall-clock seconds when breakpoint ``j`` was reached.
    stop_reason_ : str
        ``'delta_le_tau'`` (``w^J`` is eps-approximate for every ``0 < alpha <= alphas_[J]``),
        ``'alpha_min'``, ``'max_breakpoints'``, ``'time_budget'``, ``'not_converged'`` (a solve
        hit ``max_iter`` before reaching ``kappa eps``) or ``'degenerate'`` (``w = 0`` is optimal
        for every ``alpha``; then ``alphas_ = [0]``).
    alpha_lower_ : float
        The covered range is ``[alpha_lower_, inf)`` (``(0, inf)`` when 0): the next
        breakpoint Alg. 7 would have taken, certified by ``G_J``.
    init_bound_ : float
        ``||psi~||^2 + mean theta_i`` (eq. (11)): the gap above ``alphas_[0]`` is at most
        ``init_bound_ / alpha``.
    init_gap_bounds_ : ndarray
        ``g^_i`` of Alg. 6 (sum ``kappa eps``).
    estimator, structure_, n_samples_, eps, kappa, heuristic
        The parameters.
    """

    def __init__(self, *, estimator, structure, n_samples, eps, kappa, heuristic, records,
                 stop_reason, alpha_lower, start):
        self.estimator = estimator
        self.structure_ = structure
        self.n_samples_ = n_samples
        self.eps = eps
        self.kappa = kappa
        self.heuristic = heuristic
        self.alphas_ = np.array([r["alpha"] for r in records], dtype=float)
        self.coefs_ = np.array([r["coef"] for r in records], dtype=float)
        self.gaps_ = np.array([r["gap"] for r in records], dtype=float)
        self.exact_ = np.array([r["exact"] for r in records], dtype=bool)
        self.ells_ = np.array([r["ell"] for r in records], dtype=float)
        self.hinges_ = np.array([r["hinge"] for r in records], dtype=float)
        self.sq_norms_ = np.einsum("ij,ij->i", self.coefs_, self.coefs_)
        self.n_oracle_calls_ = np.array([r["calls"] for r in records], dtype=np.int64)
        self.times_ = np.array([r["time"] for r in records], dtype=float)
        self.stop_reason_ = stop_reason
        self.alpha_lower_ = float(alpha_lower)
        self.init_bound_ = float(start.bound)
        self.init_gap_bounds_ = start.gap_bounds

    def __repr__(self):
        return (f"RegularizationPath(n_breakpoints={len(self.alphas_)}, "
                f"alpha=[{self.alpha_lower_:.3g}, {self.alphas_[0]:.3g}], eps={self.eps}, "
                f"stop_reason={self.stop_reason_!r})")

    def covers(self, alpha):
        """Tell whether ``alpha`` is in the certified range ``[alpha_lower_, inf)``.

        Parameters
        ----------
        alpha : float
            Regularisation value.

        Returns
        -------
        bool
            Whether ``alpha`` is finite, ``> 0`` and ``>= alpha_lower_``.
        """
        return bool(np.isfinite(alpha) and alpha > 0 and alpha >= self.alpha_lower_)

    def _piece(self, alpha):
        """-1 above ``alphas_[0]``, else ``j`` with ``alphas_[j+1] <= alpha <= alphas_[j]``
        (at a breakpoint the solution computed there)."""
        if not self.covers(alpha):
            raise ValueError(f"alpha={alpha!r} is not covered by the path: it certifies "
                             f"alpha >= {self.alpha_lower_!r} (stop_reason_="
                             f"{self.stop_reason_!r}).")
        if alpha > self.alphas_[0]:
            return -1
        return int(np.count_nonzero(self.alphas_ >= alpha)) - 1

    def coef_at(self, alpha):
        """Return ``w(alpha)``, eps-approximate at ``alpha`` (ValueError if not covered).

        ``(alphas_[0] / alpha) coefs_[0]`` for ``alpha > alphas_[0]`` (the first piece, dual
        fixed at ``alpha^inf``), ``coefs_[j]`` for ``alpha`` in ``[alphas_[j+1], alphas_[j]]``
        and ``coefs_[J]`` below the last breakpoint down to ``alpha_lower_``.

        Parameters
        ----------
        alpha : float
            Regularisation value covered by the path (see :meth:`covers`).

        Returns
        -------
        ndarray of shape (n_params,)
            The path's coefficients at ``alpha`` (a copy).
        """
        j = self._piece(alpha)
        if j < 0:
            return (self.alphas_[0] / alpha) * self.coefs_[0]
        return self.coefs_[j].copy()

    def gap_bound(self, alpha):
        """Return a certified upper bound on the duality gap of ``coef_at(alpha)`` at ``alpha``.

        On piece ``j`` this is the affine certificate of the Prop. 1 dual point (spec 002 §8.3),
        ``G_j(alpha) = alpha ||w^j||^2 + mean_i H~_i(w^j) - (alpha / alpha_j) ell^j``, the exact
        gap at ``alpha = alpha_j``, at most ``eps`` on the piece. Above ``alphas_[0]`` it is the
        bound (11), ``init_bound_ / alpha <= kappa eps``.

        Parameters
        ----------
        alpha : float
            Regularisation value covered by the path (see :meth:`covers`); ValueError if not.

        Returns
        -------
        float
            The bound on the gap (an estimate only on a heuristic path, see ``hinges_``).
        """
        j = self._piece(alpha)
        if j < 0:
            return self.init_bound_ / alpha
        return (alpha * self.sq_norms_[j] + self.hinges_[j]
                - (alpha / self.alphas_[j]) * self.ells_[j])

    def _candidates(self, alphas):
        if alphas is None:
            alphas = self.alphas_[self.alphas_ > 0] if self.alphas_[0] > 0 else [1.0]
        alphas = np.sort(np.asarray(alphas, dtype=float).ravel())[::-1]
        out = []
        for a in alphas:
            j = self._piece(a)
            # (alphas_[0]/alpha) w^0 predicts like w^0: positive scaling keeps every argmax
            out.append((a, max(j, 0), self.coef_at(a), self.gap_bound(a)))
        return out


# ----------------------------------------------------------------------------------------------
# Alg. 7
# ----------------------------------------------------------------------------------------------

def regularization_path(estimator, X, Y, eps=0.1, alpha_min=1e-5, kappa=None, heuristic=False,
                        max_breakpoints=None, time_budget=None, n_jobs=None, verbose=0):
    """Compute an eps-approximate regularization path (Osokin et al. 2016, §4, Alg. 6 + 7).

    Initialisation (Alg. 6, eq. (11)): ``lambda^inf`` in closed form from two oracle passes,
    with a dual point whose gap is at most ``kappa eps`` for every ``alpha >= lambda^inf``.
    Induction (Alg. 7 with errata 1-2 of spec 002 §12): at breakpoint ``alpha_J`` with exact
    block gaps ``g_i`` and ``delta_i = ell_i - alpha_J <w, w_i>``, let ``Delta = sum delta_i``
    and ``tau = eps - sum g_i``. If ``Delta <= tau`` the current ``w`` is eps-approximate for
    every smaller ``alpha`` and the path ends. Otherwise ``rho = 1 - tau / Delta`` (eq. (13)),
    the dual is rescaled by Prop. 1 (``w`` unchanged, gap exactly ``eps`` at
    ``rho alpha_J``, eq. (12)) and BCFW is run at ``alpha_{J+1} = rho alpha_J`` from there until
    the exact gap is at most ``kappa eps``. On ``[alpha_{J+1}, alpha_J]`` the gap of ``w^J`` is
    then at most ``eps`` (affine certificate ``G_J``, :meth:`RegularizationPath.gap_bound`).

    Parameters
    ----------
    estimator : BCFWStructuredSVM
        Supplies ``structure`` (cloned, then fitted on ``X, Y``) and the solver settings
        ``max_iter``, ``gap_check``, ``sampling``, ``random_state`` and, if it has them,
        ``step``, ``cache``, ``cache_size`` and ``max_active`` (active sets and caches are
        carried from one breakpoint to the next, rescaled by Prop. 1). Its ``alpha``, ``tol``
        and ``averaging`` are ignored: the path certifies the last iterate. Every structure
        is supported, ``GraphCRF`` included (its label-space dual takes Prop. 1 alike; the
        gaps are certificates where its oracle is exact or bounds its maxima); box constraints
        (``coef_bounds``), ``BinaryGraphCRF``'s submodular cone and the elastic net
        (``l1_ratio > 0``) are not: :func:`grid_search_path` solves them on a grid.
    X : list of arrays or sparse matrices, or 2-D array
        Training inputs, as for ``estimator.fit``.
    Y : list of label arrays, 1-D array or 2-D indicator matrix
        Training labelings, as for ``estimator.fit``.
    eps : float, default=0.1
        Target suboptimality along the whole path (primal objective (1) scale).
    alpha_min : float, default=1e-5
        Stop once a breakpoint ``<= alpha_min`` is reached (the loop runs while the last
        breakpoint is ``> alpha_min``: errata 2).
    kappa : float in (0, 1) or None, default=None
        Each breakpoint is solved to a gap ``<= kappa eps``; ``None``: 0.9, or 0.7 when
        ``heuristic`` (paper App. K).
    heuristic : bool, default=False
        The heuristic path of App. K: the next breakpoint is computed from the block-gap
        estimates of the solver instead of exact gaps; ``exact_`` is all False. With the
        current solver the estimates are exact after its final gap check; the difference to the
        exact path is then ``kappa`` and that no extra exact pass is made at ``lambda^inf``.
    max_breakpoints : int or None, default=None
        Stop after this many breakpoints (``alphas_[0]`` included).
    time_budget : float or None, default=None
        Stop (after the current breakpoint) once this many seconds have passed.
    n_jobs : int or None, default=None
        Threads of the batched oracle passes (exact gaps, initialisation); default: the
        estimator's ``n_jobs``. The result does not depend on it.
    verbose : int, default=0
        Print one line per breakpoint when > 0.

    Returns
    -------
    RegularizationPath
        The breakpoints, their solutions and certificates, and the covered range.
    """
    _check_positive(eps, "eps")
    if kappa is None:
        kappa = KAPPA_HEURISTIC if heuristic else KAPPA_EXACT
    _check_positive(kappa, "kappa", upper=1.0)
    if not isinstance(alpha_min, Real) or not alpha_min >= 0:
        raise ValueError(f"alpha_min must be >= 0, got {alpha_min!r}.")
    if max_breakpoints is not None and (not isinstance(max_breakpoints, Integral)
                                        or max_breakpoints < 1):
        raise ValueError(f"max_breakpoints must be an int >= 1 or None, got "
                         f"{max_breakpoints!r}.")
    refusal = _certified_path_refusal(estimator)  # before the data are packed
    if refusal is not None:
        raise ValueError(refusal)
    if n_jobs is None:
        n_jobs = getattr(estimator, "n_jobs", None)
    rng = generator(getattr(estimator, "random_state", None))
    structure = clone(estimator.structure)
    problem = structure.prepare(X, Y)
    solver = estimator._solver(problem, 1.0)  # its own: tol, seed and threads the path's
    refusal = _certified_path_refusal(estimator, solver)
    if refusal is not None:
        raise ValueError(refusal)
    check_zero_loss(problem)
    n = problem.n_samples
    tol = kappa * eps
    exact = not heuristic
    solver = solver.replace(tol=tol, random_state=rng, n_jobs=n_jobs, averaging=False,
                            certify=exact, verbose=0)
    settings = solver.settings
    t0 = time.perf_counter()
    vertex = DualState.at_labels(problem)

    def result(records, reason, lower, start):
        return RegularizationPath(estimator=clone(estimator), structure=structure, n_samples=n,
                                  eps=eps, kappa=kappa, heuristic=heuristic, records=records,
                                  stop_reason=reason, alpha_lower=lower, start=start)

    with kernel_threads(n_jobs):
        start = initialize_path(problem, eps, kappa, vertex)
        calls = start.n_oracle_calls
        alpha, state, coef = start.alpha, start.state, start.coef
        if alpha == 0.0:  # w = 0 is optimal for every alpha (spec §8.2)
            rec = dict(alpha=0.0, coef=coef, gap=0.0, exact=exact, ell=state.ell_blocks.sum(),
                       hinge=state.ell_blocks.sum(), calls=calls, time=time.perf_counter() - t0)
            return result([rec], "degenerate", 0.0, start)
        if exact:  # one exact pass: exact block gaps take a larger first step than the bounds
            cert = certificate(problem, state, coef, alpha)
            calls += n
            gaps = cert.block_gaps
        else:
            gaps = start.gap_bounds
        hinge = None  # the exact mean hinge, when a certificate gives it
        atoms = None
        if _uses_atoms(settings):  # active sets of alpha^inf: one atom, y~_i, per block
            atoms = _vertex_atoms(problem, start.labels, settings)
    records = []
    not_converged = False
    while True:
        deltas = block_deltas(problem, state, coef, vertex)
        gap = float(gaps.sum())
        if hinge is None:
            # mean_i H~_i(w) = sum_i (g_i + delta_i): exact with exact gaps, an upper bound with
            # the upper bounds of Alg. 6 (the first breakpoint of a heuristic path)
            hinge = gap + float(deltas.sum())
        records.append(dict(alpha=alpha, coef=coef, gap=gap, exact=exact,
                            ell=float(state.ell_blocks.sum()), hinge=hinge, calls=calls,
                            time=time.perf_counter() - t0))
        if verbose > 0:
            print(f"[path] breakpoint {len(records) - 1:4d}  alpha={alpha:.6g}  gap={gap:.4g}  "
                  f"mean hinge={hinge:.4g}  oracle calls={calls}  "
                  f"time={records[-1]['time']:.2f}s")
        Delta = float(deltas.sum())
        tau = eps - gap
        if Delta <= tau:  # Alg. 7 line 8, corrected (errata 1)
            return result(records, "delta_le_tau", 0.0, start)
        rho = 1.0 - tau / Delta  # eq. (13); tau > 0 since gap <= kappa eps (or <= eps)
        next_alpha = rho * alpha
        reason = None
        if not_converged:
            reason = "not_converged"
        elif alpha <= alpha_min:
            reason = "alpha_min"
        elif max_breakpoints is not None and len(records) >= max_breakpoints:
            reason = "max_breakpoints"
        elif time_budget is not None and time.perf_counter() - t0 >= time_budget:
            reason = "time_budget"
        if reason is not None:
            return result(records, reason, next_alpha, start)
        # Prop. 1 warm start: w kept, gaps moved by (1 - rho) delta_i (stale estimates: by
        # their positive parts, §8.3)
        warm = solver.rescaled(problem, BCFWResult(coef=coef, state=state, active_sets=atoms,
                                                   gap_estimates=gaps),
                               rho, deltas=deltas, stale=not exact)
        res = solver.solve(problem, next_alpha, warm=warm)
        calls += res.n_oracle_calls
        cert = res.certificate
        atoms = res.active_sets if atoms is not None else None
        # exact path: the final exact gaps; heuristic path: the stale estimates (App. K)
        gap_now = cert.gap if exact else float(np.sum(res.gap_estimates))
        if gap_now > eps:  # not eps-approximate at next_alpha: w^J still is (G_J = eps there)
            warnings.warn(f"BCFW reached max_iter={settings['max_iter']} at alpha={next_alpha:.6g} "
                          f"with duality gap {gap_now:.4g} > eps={eps}; the path stops. "
                          f"Increase the estimator's max_iter.", ConvergenceWarning)
            return result(records, "not_converged", next_alpha, start)
        if not res.converged:
            warnings.warn(f"BCFW reached max_iter={settings['max_iter']} at alpha={next_alpha:.6g} "
                          f"with duality gap {gap_now:.4g} > kappa eps={tol:.4g}; the path "
                          f"stops after this breakpoint. Increase the estimator's max_iter.",
                          ConvergenceWarning)
            not_converged = True
        alpha, state, coef = next_alpha, res.state, res.coef
        gaps = cert.block_gaps if exact else np.asarray(res.gap_estimates, dtype=float)
        # heuristic pieces have no exact hinge (no oracle pass at their end): estimated below
        hinge = float(cert.primal - 0.5 * alpha * coef @ coef) if exact else None


def _vertex_atoms(problem, labels, settings):
    """Active sets of ``alpha^inf`` (one atom per block, ``y~_i``) for pairwise/away steps
    and the oracle cache."""
    from ..solvers import bcfw as solver  # only solvers with active sets get here

    capacity = solver.ActiveSets.initial_room(settings.get("cache", False),
                                              settings.get("cache_size", 50),
                                              settings.get("max_active"))
    atoms = solver.ActiveSets.at_labels(problem, capacity=capacity)
    atoms.labels[:, 0] = labels
    return atoms


# ----------------------------------------------------------------------------------------------
# cross-validation along the path
# ----------------------------------------------------------------------------------------------

def _take(X, idx):
    if isinstance(X, np.ndarray) or sp.issparse(X):
        return X[idx]
    return [X[i] for i in idx]


class PathCV:
    """Cross-validated choice of ``alpha`` along regularization paths (:func:`cross_validate_path`).

    Cross-validation along the certified regularization paths of Osokin et al. (2016, §4).

    Built by :func:`cross_validate_path`, which passes the parameters.

    Parameters
    ----------
    alphas : ndarray
        The candidates, descending.
    scores : ndarray of shape (n_folds, n_alphas)
        Validation score (``1 - mean task loss``) of each fold's path at each candidate.
    paths : list of RegularizationPath
        One path per fold.
    path : RegularizationPath
        The path on all the data.
    best_alpha : float
        The chosen ``alpha``: the largest with the best mean score.
    best_estimator : BCFWStructuredSVM
        ``path``'s solution at ``best_alpha`` (no refit), eps-approximate there.

    Attributes
    ----------
    alphas_, scores_, paths_, path_, best_alpha_, best_estimator_
        The parameters.
    mean_scores_ : ndarray
        ``scores_`` averaged over the folds.
    """

    def __init__(self, alphas, scores, paths, path, best_alpha, best_estimator):
        self.alphas_ = alphas
        self.scores_ = scores
        self.mean_scores_ = scores.mean(axis=0)
        self.paths_ = paths
        self.path_ = path
        self.best_alpha_ = best_alpha
        self.best_estimator_ = best_estimator

    def __repr__(self):
        return (f"PathCV(n_folds={len(self.paths_)}, n_alphas={len(self.alphas_)}, "
                f"best_alpha={self.best_alpha_:.4g})")


def cross_validate_path(estimator, X, Y, cv=5, alphas=None, n_alphas=30, eps=0.1,
                        alpha_min=1e-5, kappa=None, heuristic=False, n_jobs=None):
    """Choose ``alpha`` by K-fold cross-validation on eps-approximate regularization paths.

    Cross-validation along the certified regularization paths of Osokin et al. (2016, §4, Alg. 6).

    One path per fold and one on all the data are computed, in parallel over joblib threads
    (the BCFW kernels release the GIL); each fold's path is scored on its held-out part at
    every candidate ``alpha`` (a piecewise constant path is scored once per piece). The result
    does not depend on ``n_jobs``: every path gets the same seed as a sequential run would.

    Parameters
    ----------
    estimator : BCFWStructuredSVM
        Supplies the structure and the solver settings, as in :func:`regularization_path`.
    X : list of arrays or sparse matrices, or 2-D array
        Training inputs, as for ``estimator.fit``.
    Y : list of label arrays, 1-D array or 2-D indicator matrix
        Training labelings, as for ``estimator.fit``.
    cv : int or cross-validation splitter, default=5
        Folds (``sklearn.model_selection.KFold(cv)`` for an int, no shuffling).
    alphas : array-like or None, default=None
        Candidates; default ``n_alphas`` values log-spaced over the range every path covers
        (from the largest ``alphas_[0]`` down to ``alpha_min`` or the paths' lower ends).
    n_alphas : int, default=30
        Number of default candidates (when ``alphas`` is None).
    eps : float, default=0.1
        As in :func:`regularization_path`.
    alpha_min : float, default=1e-5
        As in :func:`regularization_path`.
    kappa : float in (0, 1) or None, default=None
        As in :func:`regularization_path`.
    heuristic : bool, default=False
        As in :func:`regularization_path`.
    n_jobs : int or None, default=None
        Joblib workers over the ``n_folds + 1`` paths.

    Returns
    -------
    PathCV
        The fold scores, the chosen ``alpha`` and the full path's estimator there.
    """
    from sklearn.model_selection import KFold, check_cv

    splitter = KFold(cv) if isinstance(cv, Integral) else check_cv(cv)
    n = Y.shape[0] if hasattr(Y, "shape") else len(Y)
    folds = list(splitter.split(np.zeros((n, 1))))
    parallel = n_jobs not in (None, 1)
    kwargs = dict(eps=eps, alpha_min=alpha_min, kappa=kappa, heuristic=heuristic,
                  n_jobs=1 if parallel else n_jobs)  # n_jobs=1: one thread everywhere
    rs = getattr(estimator, "random_state", None)
    if isinstance(rs, (np.random.Generator, np.random.RandomState)):  # one fixed seed for all
        estimator = clone(estimator).set_params(random_state=int(generator(rs).integers(2**31)))
    data = [(_take(X, tr), _take(Y, tr)) for tr, _ in folds] + [(X, Y)]
    jobs = (delayed(regularization_path)(estimator, Xf, Yf, **kwargs) for Xf, Yf in data)
    paths = Parallel(n_jobs=n_jobs, prefer="threads")(jobs)
    full = paths.pop()
    if alphas is None:
        top = max(p.alphas_[0] for p in paths + [full])
        low = max([p.alpha_lower_ for p in paths + [full]] + [alpha_min])
        if low <= 0:
            low = min(p.alphas_[-1] for p in paths + [full])
        alphas = np.geomspace(top, low, n_alphas)
    alphas = np.sort(np.asarray(alphas, dtype=float).ravel())[::-1]
    scores = np.array([p.validation_scores(_take(X, va), _take(Y, va), alphas)[1]
                       for p, (_, va) in zip(paths, folds)])
    best = alphas[int(np.argmax(scores.mean(axis=0)))]
    est = full._estimator_at(best, full.coef_at(best), full.gap_bound(best))
    return PathCV(alphas, scores, paths, full, float(best), est)
