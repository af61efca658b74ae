"""The smoothed structured SVM estimator: Casimir-SVRG, SVRG or SGD (spec 000)."""
import copy
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._validation import Interval, Options, check_params
from ..feature_maps import MLPFeatureMap
from ..solvers import prox_linear, smooth
from ..solvers.agm import AGM
from ..solvers.capabilities import check_penalty
from ..solvers.prox_linear import ProxLinear
from ..solvers.smooth import Stochastic
from ..structures.base import smoothing_code
from ..structures.candidates import CandidateSet
from .base import StructuredEstimator, n_examples

#: epochs of each trial of the learning-rate search: large steps overshoot in the first epochs
#: and win later, so two epochs pick rates about twice too small (measured on CoNLL-2000)
LR_SEARCH_EPOCHS = 4
#: fewest examples for which ``early_stopping="auto"`` holds out a validation set
EARLY_STOPPING_MIN_SAMPLES = 1000


class _ValidationTracker:
    """Per-epoch callback: the task score ``1 - mean loss`` of ``coef`` on held-out examples;
    keeps the best coefficients and asks to stop after ``patience`` epochs without a better
    score. Chains the user's callback."""

    def __init__(self, validation, patience, callback):
        self.validation, self.patience, self.callback = validation, patience, callback
        self.best_score, self.best_epoch, self.best_coef = -np.inf, 0, None
        self.scores = []

    def __call__(self, epoch, coef):
        y_pred, _, _, _ = self.validation.run_oracle(coef, False)
        score = self.validation.score(y_pred)
        self.scores.append(score)
        if score > self.best_score:
            self.best_score, self.best_epoch, self.best_coef = score, epoch, coef.copy()
        said = dict(validation_score=score,
                    stop=epoch - self.best_epoch >= self.patience)
        if self.callback is not None:
            said.update(self.callback(epoch, coef) or {})
        return said


class SmoothSSVMClassifier(StructuredEstimator):
    """Structured SVM trained on a smoothed hinge loss (Pillutla et al. 2018, "Casimir").

    Minimises ``r(w) + (1/n) sum_i f_i(w)`` (spec 000 eq. (1)) with the elastic-net penalty
    ``r(w) = alpha ((1 - l1_ratio)/2 ||w||^2 + l1_ratio ||w||_1)`` (``l1_ratio = 0``: the
    paper's ``alpha/2 ||w||^2``), where the structured
    hinge ``f_i = max_y psi_i(y; w)`` (eq. (4)) is replaced during training by its smoothing
    ``f_{i,mu}`` (Def. 1): ``smoothing="l2"`` with ``top_k=K`` uses the l2^2 smoother restricted
    to the K best outputs (eq. (11), top-K oracles), ``top_k=None`` the l2^2 smoother over all
    outputs (enumerable structures only), ``"entropy"`` the log-sum-exp (exp oracle, Prop. 9:
    chains and trees only), and ``None`` the plain hinge (max oracle, SGD only). The smoothing
    ``mu`` shrinks along ``mu_schedule`` so the solution approaches the non-smooth problem's.

    Solvers:

    - ``"casimir-svrg"``: Catalyst acceleration around one SVRG epoch per outer iteration
      (Algo. 4, the paper's practical budget), ``kappa = alpha`` by default;
      ``mu_schedule="expo"`` is the paper's Casimir-SVRG-adapt, ``"const"`` Casimir-SVRG-const.
    - ``"svrg"``: SVRG epochs on ``F_mu`` with a constant ``mu``.
    - ``"sgd"``: stochastic (sub)gradient, step ``learning_rate / (1 + t/n)``, weighted
      averaging (§5.4).
    - ``"agm"``: batch accelerated gradient (Zhang et al. 2011, AGM-EF-inf) with adaptive
      Lipschitz estimates on the entropy-smoothed objective (needs ``smoothing="entropy"``,
      ``top_k=None``); one full gradient per iteration, ``max_iter`` iterations. The smoothing
      decreases tenfold whenever the certified gap stalls above ``tol`` (any ``mu_schedule``
      but ``"const"``), so the fit reaches the SSVM's optimum, not the smoothed problem's,
      and with an l1 part its exact zeros (three tiny chains, elastic net: within 3e-5 of the
      optimum with its zero pattern after 1,000 iterations; the stochastic solvers stay
      2e-3 to 1e-2 above it after 3,000 epochs, without zeros: on few examples their
      ``n + kappa`` steps per accuracy digit lose to AGM's ``sqrt(kappa)``). ``"agm-ef1"``:
      the same with AGM-EF-1's model, the last linearisation alone (spec 001 Algorithm 4)
      instead of their running aggregate.

    Every epoch logs the non-smooth objective and, for the SVRG solvers, a certified duality
    gap: the smoothing weights of the epoch's full gradient are a feasible dual point, so
    ``duality_gap_ >= objective(X, Y) - min objective``. Fitting stops when it is at most
    ``tol``.

    Parameters
    ----------
    structure : Structure
        ``ChainCRF()``, ``MultiLabel()``, ``MulticlassSVM()``, ``CandidateSet()``, ...
    alpha : float or None, default=None
        Regularisation ``lambda``; None: the scale-free rule of :class:`BCFWStructuredSVM`
        (the same objective; before 0.1, ``1 / n_samples``).
    l1_ratio : float, default=0.0
        Share of the l1 part of the penalty, in ``[0, 1)`` (scikit-learn's ``SGDClassifier``
        convention). The stochastic solvers take proximal steps (the soft-threshold applied
        just in time to the rows an example touches, so a step still costs O(nnz_i C)); the
        AGM solver takes the soft-threshold as its model step (spec 001 Example 6); both
        certify the gap with the elastic net's conjugate. Linear scores on chains, trees,
        multi-class, multi-label and candidate sets: loopy graphs and ``feature_map`` fits
        take ``l1_ratio=0`` only.
    smoothing : {"l2", "entropy"} or None, default="l2"
        The smoother of the structured hinge during training: the l2^2 smoother (over the
        ``top_k`` best outputs, or all of them with ``top_k=None``), the log-sum-exp, or None
        for the plain hinge (``solver="sgd"`` only).
    top_k : int or None, default=5
        ``K`` of the top-K strategy (the paper's 5 for sequences, 10 for candidate sets).
    mu : float, default=0.3
        Initial smoothing ``mu_0``, relative to ``loss_scale_`` (the mean largest loss; the
        solvers smooth with ``mu * loss_scale_``), so the smoothing bias ``mu/2`` (l2) means
        the same with a normalised or a counting loss. The default 0.3 (with the "expo"
        schedule: 0.034 after 10 epochs) reached the lowest objective among 0.03, 0.1, 0.3
        and 1 on CoNLL-2000 chunking with the normalised loss, after 10 and after 25 epochs
        (the paper's 2 is for counted Hamming losses of ~20-token sentences: 0.1 here).
    mu_schedule : {"expo", "const", "linear"}, default="expo"
        ``mu_k``: ``mu (1 - sqrt(q)/2)^{k/2}`` with ``q = alpha/(alpha+kappa)`` (Cor. 18),
        constant, or ``mu/k`` (Cor. 20) for ``"casimir-svrg"``. The AGM solvers keep ``mu``
        with ``"const"`` and otherwise divide it by 10 each time the gap stalls (restarting
        from the best point: see :func:`~sklearn_ssvm.solvers.agm.agm_structured`).
    solver : {"casimir-svrg", "svrg", "sgd", "agm", "agm-ef1"}, default="casimir-svrg"
        The training algorithm: Casimir-SVRG (Catalyst around SVRG), SVRG at a constant
        ``mu``, stochastic (sub)gradient, or the batch accelerated gradient method
        (AGM-EF-inf or AGM-EF-1).
    kappa : float or None, default=None
        Catalyst's proximal weight (``None``: ``alpha``).
    learning_rate : float or None, default=None
        Step size. None picks it by a short search on a subsample of at most 500 examples:
        learning rates ``mu / R^2 * 2^k`` (``R^2`` a data-based smoothness scale) are each run
        for four epochs from zero (the warm-up included), and the one with the lowest
        objective is kept (``learning_rate_`` tells which); a warm start keeps the previous
        fit's ``learning_rate_`` (a grid of alphas searches once). Casimir-SVRG's steps follow the
        smoothing, ``learning_rate * max(mu_k / mu, 1/k)`` (see
        :func:`~sklearn_ssvm.solvers.smooth.casimir_svrg`).
    warm_start_rule : {"prox-center", "extrapolation", "prev-iterate"}, default="prox-center"
        Where each inner SVRG epoch starts (§3.3).
    warmup : int, default=1
        Epochs of SGD on the smoothed objective (this ``learning_rate``, step
        ``learning_rate / (1 + t/n)``, weighted average) that start the SVRG solvers when they
        start from zero (not on warm starts); 0 starts SVRG at ``w = 0`` as the paper does. A
        first full gradient at zero, where every output scores alike, makes SVRG's first epochs
        slow (CoNLL-2000: objective 0.82 after one Casimir-SVRG epoch, 0.15 after one SGD
        epoch; see :func:`~sklearn_ssvm.solvers.smooth.sgd_warmup`). Counted in ``max_iter``.
    early_stopping : "auto" or bool, default=False
        Hold out ``validation_fraction`` of the examples, score each epoch's coefficients on
        them (``1 - mean task loss``, as :meth:`score`), stop after ``n_iter_no_change`` epochs
        without a better score and keep the best epoch's coefficients. ``"auto"`` (the default
        before 0.1): on for the stochastic solvers when there are at least 1000 examples, off
        otherwise (as in scikit-learn's histogram gradient boosting). It regularises a weak
        ``alpha`` (the former ``alpha = 1/n`` with the normalised loss over-fitted:
        CoNLL-2000 test chunk F1 92.7 after 5 epochs, 91.6 after 25); at the scale-free
        ``alpha=None`` the minimiser on all the examples is the better model (CoNLL-2003
        testa entity F1 86.66 against 86.16 with early stopping, CoNLL-2000 3-fold chunk F1
        93.01 against 92.93; ``benchmarks/select_defaults.py``), so False is the default.
        The stochastic solvers only: the AGM solver and ``feature_map`` fits refuse True.
    validation_fraction : float, default=0.1
        Share of the examples held out by early stopping.
    n_iter_no_change : int, default=5
        Epochs without a better validation score before early stopping ends the fit.
    max_iter : int, default=25
        Epochs (the warm-up's included). The default 25 is the paper's budget of 50 passes
        counted as oracle calls / n (two per SVRG step). At ``alpha = 1/n`` the test score can
        peak long before the objective's optimum (CoNLL-2000, Casimir-SVRG-adapt: chunk F1
        92.7 after 5 epochs, 91.7 after 20): see ``early_stopping``.
    tol : float, default=1e-3
        Target certified duality gap (SVRG solvers), relative to ``loss_scale_``, the zero
        model's objective (as in :class:`BCFWStructuredSVM`).
    feature_map : object or None, default=None
        A non-linear score with parameters, e.g.
        :class:`~sklearn_ssvm.feature_maps.MLPFeatureMap` (an ELU network on each candidate's
        features), for ``CandidateSet`` structures: ``score(x, y; coef)`` replaces
        ``<coef, phi(x, y)>`` and the non-convex objective is trained by the prox-linear method
        (spec 000 Algo. 5) with Casimir-SVRG on each linearised problem (``inner_iter`` epochs,
        ``mu_k = mu/k``, the paper's PL-Casimir-SVRG). ``max_iter`` then counts prox-linear
        steps; ``mu_schedule``, ``kappa``, ``warm_start_rule`` and ``tol`` do not apply.
    eta : float, default=1.0
        Prox-linear step (with ``feature_map``).
    inner_iter : int, default=5
        Casimir-SVRG epochs per prox-linear step (the paper's 5); the cap per step when
        ``inner_tol`` is set.
    inner_tol : float or None, default=None
        With ``feature_map``: ``eps_0`` of the inexactness schedule (62), ``eps_k = eps_0 / k``;
        step ``k``'s inner solve stops once its certified gap is at most ``eps_k``. None: the
        fixed budget ``inner_iter`` alone, as in the paper's experiments.
    random_state : int, RandomState instance or None, default=None
        Seed of the solver's random draws (the sampled examples, the learning-rate search and
        the early-stopping split).
    verbose : int, default=0
        As in :class:`BCFWStructuredSVM`.
    warm_start : bool, default=False
        Start from the previous fit's ``coef_`` (data with the same features and labels; not
        with the AGM solvers).
    n_jobs : int or None, default=None
        As in :class:`BCFWStructuredSVM`: threads of the batched oracle passes (numba). The
        AGM solvers add their sums over the examples in one fixed order (chunks of 256
        examples along a fixed tree): their fits are the same to the bit for any ``n_jobs``.
    cluster : bool, default=False
        With ``solver="agm"`` or ``"agm-ef1"``: compute the sums over the examples (the
        smoothed loss, its gradient, the certificate's hinge) on the cluster of the current
        dask client (``distributed.Client(...)`` made before ``fit``), one partition of the
        examples per worker, sent once and packed there; the iterates stay on this process
        and are those of a fit on one process, to the bit
        (:class:`~sklearn_ssvm.solvers.sums.ClusterSums`). The compiled structures; a lost
        worker's partition is sent again and its sum recomputed. The stochastic solvers
        refuse it (their steps are sequential).
    penalty : Penalty or None, default=None
        As in :class:`BCFWStructuredSVM`; None: the elastic net of ``l1_ratio``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_params,)
    structure_, classes_, n_features_in_, alpha_
    n_nonzero_coef_ : int
        Non-zero entries of ``coef_``.
    learning_rate_ : float
    n_iter_ : int
        Epochs run.
    n_oracle_calls_ : int
        Smoothed-oracle calls as the paper counts them (two per SVRG step, full gradients
        apart).
    objective_ : float
        Non-smooth training objective at ``coef_``.
    duality_gap_ : float
        Certified gap of ``coef_`` (NaN for SGD).
    converged_ : bool
        Whether ``duality_gap_ <= tol * loss_scale_``.
    loss_scale_, gap_certified_, oracle_calls_
        As in :class:`BCFWStructuredSVM`.
    history_ : list of dict
        Per epoch, the columns every solver's history has
        (:data:`~sklearn_ssvm.solvers.result.HISTORY_COLUMNS`: ``iter`` is the epoch, time
        excludes the evaluations), ``mu``, and ``validation_score`` with early stopping.
    validation_scores_ : list of float or None
        With early stopping, the held-out score of every epoch; ``objective_``,
        ``duality_gap_`` and ``coef_`` are then the best epoch's (on the examples trained
        on).
    best_validation_score_ : float or None
        The best of ``validation_scores_``.

    Notes
    -----
    ``check_estimator`` does not apply: ``Y`` is structured (lists of label sequences).
    """

    solver_params = {"stochastic": {},
                     "agm": dict(solver="agm", smoothing="entropy", top_k=None),
                     "agm-cluster": dict(solver="agm", smoothing="entropy", top_k=None,
                                         cluster=True),
                     "prox-linear": dict(feature_map=MLPFeatureMap())}

    _parameter_constraints = {
        **StructuredEstimator._parameter_constraints,
        "l1_ratio": [Interval(Real, 0, 1, closed="left")],
        "smoothing": [Options({"l2", "entropy"}), None],
        "top_k": [Interval(Integral, 1, None, closed="left"), None],
        "mu": [Interval(Real, 0, None, closed="left")],
        "mu_schedule": [Options({"expo", "const", "linear"})],
        "solver": [Options({"casimir-svrg", "svrg", "sgd", "agm", "agm-ef1"})],
        "kappa": [Interval(Real, 0, None, closed="neither"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "warm_start_rule": [Options({"prox-center", "extrapolation", "prev-iterate"})],
        "warmup": [Interval(Integral, 0, None, closed="left")],
        "early_stopping": [Options({"auto"}), "boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "feature_map": [None, object],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "inner_iter": [Interval(Integral, 1, None, closed="left")],
        "inner_tol": [Interval(Real, 0, None, closed="neither"), None],
        "cluster": ["boolean"],
    }

    def __init__(self, structure, alpha=None, l1_ratio=0.0, smoothing="l2", top_k=5, mu=0.3,
                 mu_schedule="expo", solver="casimir-svrg", kappa=None, learning_rate=None,
                 warm_start_rule="prox-center", warmup=1, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=5, max_iter=25, tol=1e-3,
                 feature_map=None, eta=1.0, inner_iter=5, inner_tol=None, random_state=None,
                 verbose=0, warm_start=False, n_jobs=None, cluster=False, penalty=None):
        self.structure = structure
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.smoothing = smoothing
        self.top_k = top_k
        self.mu = mu
        self.mu_schedule = mu_schedule
        self.solver = solver
        self.kappa = kappa
        self.learning_rate = learning_rate
        self.warm_start_rule = warm_start_rule
        self.warmup = warmup
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.max_iter = max_iter
        self.tol = tol
        self.feature_map = feature_map
        self.eta = eta
        self.inner_iter = inner_iter
        self.inner_tol = inner_tol
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.cluster = cluster
        self.penalty = penalty

    def _stochastic(self):
        """Whether the fit runs SGD, SVRG or Casimir-SVRG on linear scores."""
        return self.feature_map is None and not self._agm()

    def _agm(self):
        """Whether the fit runs AGM (``"agm"``: EF-inf, ``"agm-ef1"``: EF-1)."""
        return self.solver in ("agm", "agm-ef1")

    def _solver(self, problem, loss_scale):
        """The solver of the fit, but for what ``_solve`` decides (the smoothing, the learning
        rate, the seed and the callback)."""
        common = dict(max_iter=self.max_iter, n_jobs=self.n_jobs, verbose=self.verbose)
        cluster = getattr(self, "cluster", False)  # the CV estimator has none
        if cluster and (self.feature_map is not None or not self._agm()):
            raise ValueError(f"cluster=True runs the AGM solvers ('agm', 'agm-ef1'), whose "
                             f"iterations are sums over the examples; solver={self.solver!r}"
                             f"{' with a feature_map' if self.feature_map is not None else ''} "
                             f"steps through the examples one at a time. Set cluster=False.")
        if self.feature_map is not None:
            inner_tol = None if self.inner_tol is None else self.inner_tol * loss_scale
            return ProxLinear(feature_map=self.feature_map, eta=self.eta,
                              inner_iter=self.inner_iter, inner_tol=inner_tol, **common)
        if self._agm():
            return AGM(mu=self.mu * loss_scale, tol=self.tol * loss_scale,
                       memory="1" if self.solver == "agm-ef1" else "inf",
                       continuation=self.mu_schedule != "const", cluster=cluster, **common)
        if self.solver == "sgd":  # no certificate to stop on
            return Stochastic(method="sgd", **common)
        if self.solver == "svrg":
            return Stochastic(method="svrg", tol=self.tol * loss_scale, warmup=self.warmup,
                              **common)
        return Stochastic(method="casimir-svrg", mu_schedule=self.mu_schedule, kappa=self.kappa,
                          warm_start=self.warm_start_rule, tol=self.tol * loss_scale,
                          warmup=self.warmup, **common)

    def _smoothing(self, kind, mu):
        """The solvers' ``Smoothing`` at the absolute ``mu`` (``self.mu`` times the loss
        scale)."""
        code, K = smoothing_code(self.smoothing, self.top_k, kind)
        return smooth.Smoothing(code, K, float(mu))

    def fit(self, X, y, sample_weight=None, callback=None):
        """Fit on examples ``X`` with labelings ``y``.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Per-example inputs, as in :meth:`BCFWStructuredSVM.fit`.
        y : list of label arrays, 1-D array or 2-D indicator matrix
            Labelings, as in :meth:`BCFWStructuredSVM.fit`.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights of the examples' losses, as in :meth:`BCFWStructuredSVM.fit`: the full
            gradients are weighted means and the stochastic steps draw example ``i`` with
            probability ``w_i / sum_j w_j`` (unbiased for the weighted objective). Solvers
            'casimir-svrg', 'svrg' and 'sgd' on linear scores.
        callback : callable or None, default=None
            ``callback(epoch, coef) -> dict or None`` after every epoch, its dict merged into
            that epoch's ``history_`` record (e.g. a validation score); its time is not
            counted in the record's ``time``.

        Returns
        -------
        self
            The fitted estimator.
        """
        # a feature map scores the raw candidate sets, so they go to the solver too
        super().fit(X, y, sample_weight=sample_weight, callback=callback)
        self._stream = None  # a later partial_fit starts a new stream
        return self

    def _streams(self):
        """Whether ``partial_fit`` exists: only for SGD on linear scores (scikit-learn's
        ``available_if``; the other solvers need all the examples at once)."""
        if self.solver != "sgd" or self.feature_map is not None:
            raise AttributeError("partial_fit needs solver='sgd' and linear scores (no "
                                 "feature_map): the other solvers need all the examples at "
                                 "once.")
        return True

    @available_if(_streams)
    def partial_fit(self, X, y):
        """Make one SGD pass over ``(X, y)`` in order, continuing the previous calls.

        For data that does not fit in memory: feed it in chunks (with a hashing
        ``SequenceVectorizer`` the features need no fitted vocabulary), as many passes over
        the chunks as wanted. Needs ``solver="sgd"`` and linear scores. The first call fixes
        what the later ones must share: the label set (declare it, e.g.
        ``ChainCRF(labels=...)``, when the first chunk may lack one), the number of features,
        ``alpha`` (None: ``1 / n`` of the first chunk), the learning rate (None: searched on
        the first chunk, as :meth:`fit` does) and the step schedule
        ``learning_rate / (1 + t / t0)`` with ``t0`` the first chunk's size. ``coef_`` is the
        average of the iterates, iterate ``t`` weighted by ``t`` (spec 000 §5.4); chunking does
        not change it: the same examples in the same order give the same ``coef_`` whatever
        the chunk boundaries after the first. :meth:`fit` discards the stream.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            A chunk of examples, as in :meth:`fit`.
        y : list of label arrays, 1-D array or 2-D indicator matrix
            Their labelings, as in :meth:`fit`.

        Returns
        -------
        self
            The estimator, its ``coef_`` updated.
        """
        check_params(self)
        n_examples(X)
        n_examples(y, "y")
        stream = getattr(self, "_stream", None)
        if stream is None:
            structure = clone(self.structure)
            problem = structure.prepare(X, y)
            if getattr(problem, "dense_oracles", False):
                raise ValueError(f"partial_fit runs the compiled oracles; "
                                 f"{type(structure).__name__} trains with fit.")
            alpha = problem.default_alpha() if self.alpha is None else float(self.alpha)
            scale = problem.loss_scale()
            penalty = self._penalty(alpha, problem)
            check_penalty(Stochastic.capabilities, penalty)  # its compiled steps
            smoothing = self._smoothing(problem.kind, self.mu * scale)
            learning_rate = self.learning_rate
            if learning_rate is None:
                solver = self._solver(problem, scale).replace(smoothing=smoothing)
                learning_rate = self._search_learning_rate(solver, problem, penalty, self._rng())
            stream = smooth.SGDStream.start(problem, penalty, t0=problem.n_samples)
            calls = 0
        else:  # the first call's labels, features, alpha and learning rate
            structure, alpha, learning_rate = self.structure_, self.alpha_, self.learning_rate_
            scale = self.loss_scale_
            problem = structure.pack(X, y)
            penalty = self._penalty(alpha, problem)
            smoothing = self._smoothing(problem.kind, self.mu * scale)
            stream, calls = copy.deepcopy(stream), self.n_iter_  # a failed call changes nothing
        coef = stream.pass_over(problem, penalty, smoothing, learning_rate)
        if not np.all(np.isfinite(coef)):
            raise ValueError("partial_fit produced non-finite coefficients: lower the "
                             "learning rate or rescale the features.")
        self.structure_, self.alpha_, self.learning_rate_ = structure, alpha, learning_rate
        self.classes_, self.n_features_in_ = structure.classes_, structure.n_features_in_
        self.loss_scale_ = scale
        self.coef_, self._stream = coef, stream
        self.n_iter_, self.n_oracle_calls_, self.converged_ = calls + 1, stream.t, False
        self.n_nonzero_coef_ = int(np.count_nonzero(coef))
        return self

    def _rng(self):
        return np.random.default_rng(check_random_state(self.random_state).randint(2**31))

    def _search_learning_rate(self, solver, problem, penalty, rng):
        """The learning rate of a few epochs' best objective on a subsample (``learning_rate=
        None``); ``solver`` is the fit's, with its smoothing."""
        trial = solver.replace(max_iter=LR_SEARCH_EPOCHS, verbose=0, callback=None)
        return smooth.choose_learning_rate(
            problem, lambda sub, lr: trial.replace(
                learning_rate=lr, random_state=rng.integers(2**31)).solve(sub, penalty).objective,
            solver.settings["smoothing"], rng)

    def _solve(self, solver, problem, alpha, previous, loss_scale, callback=None):
        if self.early_stopping is True and not self._stochastic():
            raise ValueError("early_stopping=True needs a stochastic solver ('casimir-svrg', "
                             "'svrg' or 'sgd') and linear scores (no feature_map).")
        if self.feature_map is not None:
            fitted = self._solve_nonlinear(solver, problem, alpha, previous, callback, loss_scale)
        elif self._agm():
            fitted = self._solve_agm(solver, problem, self._penalty(alpha, problem), previous)
        else:
            fitted = self._solve_stochastic(solver, problem, self._penalty(alpha, problem),
                                            previous, callback, loss_scale)
        return {"validation_scores_": None, "best_validation_score_": None, **fitted}

    def _early_stops(self, n_samples):
        if self.early_stopping == "auto":
            return n_samples >= EARLY_STOPPING_MIN_SAMPLES
        return self.early_stopping

    def _solve_stochastic(self, solver, problem, penalty, previous, callback, loss_scale):
        if self.solver != "sgd" and self.smoothing is None:
            raise ValueError(f"solver={self.solver!r} needs a smooth objective: set smoothing "
                             f"to 'l2' or 'entropy' (smoothing=None works with solver='sgd').")
        rng = self._rng()
        smoothing = self._smoothing(problem.kind, self.mu * loss_scale)
        if getattr(problem, "dense_oracles", False):
            problem.check_smoothing(smoothing)  # refuses what the graph structure cannot smooth
        warm = None
        if previous is not None:
            warm = smooth.SmoothResult(coef=previous._dense_coef())
            if warm.coef.shape[0] != problem.n_params:
                raise ValueError("warm_start=True needs data with the same features and labels "
                                 "as the previous fit.")
        tracker = None
        if self._early_stops(problem.n_samples):
            n = problem.n_samples
            n_val = int(round(self.validation_fraction * n))
            if not 0 < n_val < n:
                raise ValueError(f"early stopping holds out {n_val} of {n} examples: it needs "
                                 f"at least one on each side (change validation_fraction or "
                                 f"set early_stopping=False).")
            order = rng.permutation(n)
            tracker = _ValidationTracker(problem.subset(np.sort(order[:n_val])),
                                         self.n_iter_no_change, callback)
            problem, callback = problem.subset(np.sort(order[n_val:])), tracker
        solver = solver.replace(smoothing=smoothing)
        learning_rate = self.learning_rate
        if learning_rate is None and previous is not None:  # the warm start's, searched once
            learning_rate = previous.learning_rate_
        if learning_rate is None:
            learning_rate = self._search_learning_rate(solver, problem, penalty, rng)
        result = solver.replace(learning_rate=learning_rate, random_state=rng.integers(2**31),
                                callback=callback).solve(problem, penalty, warm=warm)
        fitted = self._fitted(result, learning_rate_=learning_rate,
                              n_oracle_calls_=result.n_oracle_calls,
                              objective_=result.objective, feature_map_=None)
        if tracker is not None:  # the best epoch's model
            best = result.history[tracker.best_epoch - 1]
            fitted.update(coef_=tracker.best_coef, objective_=best["objective"],
                          duality_gap_=best["gap"],
                          converged_=bool(best["gap"] <= self.tol * loss_scale),
                          validation_scores_=tracker.scores,
                          best_validation_score_=tracker.best_score)
        return fitted

    def _warm_start_from(self, fit, source, problem, target=None, target_problem=None):
        """A fitted estimator at ``fit``'s coefficients and learning rate, for a fit on other
        examples of ``problem`` to start from."""
        if not self._stochastic():
            return None
        warm = clone(self)
        warm.coef_, warm.learning_rate_ = fit._dense_coef(), fit.learning_rate_
        return warm

    def _solve_agm(self, solver, problem, penalty, previous):
        if self.smoothing != "entropy":
            raise ValueError(f"solver={self.solver!r} needs smoothing='entropy' (with "
                             "top_k=None).")
        smoothing_code(self.smoothing, self.top_k, problem.kind)  # validates top_k and kind
        result = solver.solve(problem, penalty)
        return self._fitted(result, learning_rate_=np.nan,
                            n_oracle_calls_=result.n_iter * problem.n_samples,
                            objective_=result.objective, feature_map_=None)

    def _solve_nonlinear(self, solver, problem, alpha, previous, callback, loss_scale):
        if not isinstance(self.structure, CandidateSet):
            raise ValueError("feature_map needs a CandidateSet structure (each example a list "
                             "of candidates scored by the feature map).")
        if self.smoothing is None:
            raise ValueError("the prox-linear inner solver needs smoothing='l2' or 'entropy'.")
        rng = self._rng()
        smoothing = self._smoothing(problem.kind, self.mu * loss_scale)
        w0 = (previous._dense_coef() if previous is not None
              else clone(self.feature_map).init_params(problem.n_features))
        if w0.shape[0] != self.feature_map.n_params(problem.n_features):
            raise ValueError("warm_start=True needs data with the same features as the "
                             "previous fit.")
        learning_rate = self.learning_rate
        if learning_rate is None:  # picked on the first linearised problem
            first = prox_linear.linearize(self.feature_map, *prox_linear.candidate_sets(problem),
                                          w0)
            inner = Stochastic(method="casimir-svrg", smoothing=smoothing, mu_schedule="const",
                               prox=(1.0 / self.eta, w0), max_iter=LR_SEARCH_EPOCHS)
            learning_rate = smooth.choose_learning_rate(
                first, lambda sub, lr: inner.replace(
                    learning_rate=lr, random_state=rng.integers(2**31)).solve(
                        sub, alpha, warm=smooth.SmoothResult(coef=w0)).objective,
                smoothing, rng)
        result = solver.replace(smoothing=smoothing, learning_rate=learning_rate, init=w0,
                                random_state=rng.integers(2**31), callback=callback).solve(
                                    problem, self._penalty(alpha, problem))
        return self._fitted(result, learning_rate_=learning_rate,
                            n_oracle_calls_=result.n_oracle_calls,
                            objective_=result.objective,
                            feature_map_=clone(self.feature_map))

    def predict(self, X):
        """Predict the best output of each example.

        With ``feature_map``: the best-scoring candidate.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.

        Returns
        -------
        list of ndarray or ndarray
            The predicted labelings, in the format of ``Y`` in :meth:`fit` (with
            ``feature_map``: the index of each example's best candidate).
        """
        check_is_fitted(self, "coef_")
        if getattr(self, "feature_map_", None) is None:
            return super().predict(X)
        self.structure_.pack(X)  # validates X
        coef = self._dense_coef()
        return np.array([int(np.argmax(self.feature_map_.scores(x, coef))) for x in X])

    def decision_function(self, X):
        """Compute the scores of the examples.

        As :meth:`BCFWStructuredSVM.decision_function`; with ``feature_map``, the score of
        each example's best candidate.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            The scores; ``(n_samples, n_classes)`` for ``MulticlassSVM`` only.
        """
        check_is_fitted(self, "coef_")
        if getattr(self, "feature_map_", None) is None:
            return super().decision_function(X)
        self.structure_.pack(X)  # validates X
        coef = self._dense_coef()
        return np.array([float(np.max(self.feature_map_.scores(x, coef))) for x in X])

    def score(self, X, y):
        """Return ``1 - mean task loss`` of the predictions, in [0, 1].

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.
        y : list of label arrays, 1-D array or 2-D indicator matrix
            The labelings, as in :meth:`fit` (with ``feature_map``: each example's vector of
            candidate losses, scored as ``CandidateSet`` scores them).

        Returns
        -------
        float
            The score, in [0, 1].
        """
        if getattr(self, "feature_map_", None) is None:
            return super().score(X, y)
        y_pred = self.predict(X)  # each example's loss over its largest, as without the map
        losses = [np.asarray(yi, float)[k] / max(np.max(yi), 1e-300)
                  for yi, k in zip(y, y_pred)]
        return 1.0 - float(np.mean(losses))

    def objective(self, X, Y):
        """Compute the non-smooth objective ``r(coef_) + mean_i f_i(coef_)``.

        Eq. (1); eq. (59) with a ``feature_map``.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.
        Y : list of label arrays, 1-D array or 2-D indicator matrix
            Their labelings, in the format of ``Y`` in :meth:`fit`.

        Returns
        -------
        float
            The objective at ``coef_`` on ``(X, Y)``, at ``alpha_``.
        """
        if getattr(self, "feature_map_", None) is None:
            return self.primal_objective(X, Y)
        problem = self._packed(X, Y)
        return prox_linear.nonlinear_objective(self.feature_map_, X, Y, problem.y,
                                               self._dense_coef(),
                                               self.alpha_)

    def smoothed_objective(self, X, Y, mu):
        """Compute the smoothed objective ``r(coef_) + mean_i f_{i,mu}(coef_)``.

        With this estimator's smoother and penalty (linear scores only: not with a
        ``feature_map``).

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.
        Y : list of label arrays, 1-D array or 2-D indicator matrix
            Their labelings, in the format of ``Y`` in :meth:`fit`.
        mu : float
            The smoothing parameter, relative to ``loss_scale_`` as the estimator's ``mu``.

        Returns
        -------
        float
            The smoothed objective at ``coef_`` on ``(X, Y)``, at ``alpha_``.
        """
        check_is_fitted(self, "coef_")
        if getattr(self, "feature_map_", None) is not None:
            raise ValueError("smoothed_objective is defined for linear scores (no feature_map).")
        problem = self._packed(X, Y)
        smoothing = self._smoothing(problem.kind, float(mu) * self.loss_scale_)
        coef = self._dense_coef()
        return (self._penalty(self.alpha_, problem).value(coef)
                + smooth.full_gradient(problem, coef, smoothing).value)
