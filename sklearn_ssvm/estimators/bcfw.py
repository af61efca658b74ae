"""Block-coordinate Frank-Wolfe structured SVM (Lacoste-Julien et al. 2013; spec 002)."""
from numbers import Integral, Real

from sklearn.base import clone

from .._validation import Interval, Options
from ..solvers.bcfw import BCFW, BCFWResult, pass_budget, transfer_blocks
from ..solvers.bcfw_cluster import BCFWCluster
from .base import StructuredEstimator, training_key


class BCFWStructuredSVM(StructuredEstimator):
    """Structured SVM trained by block-coordinate Frank-Wolfe with certified duality gaps.

    Minimises the primal of spec 002 eq. (1) with the elastic-net penalty of scikit-learn's
    ``SGDClassifier``,

        P(w) = alpha ((1 - l1_ratio)/2 ||w||^2 + l1_ratio ||w||_1)
               + (1/n) sum_i max_y [L(y_i, y) - <w, phi(x_i, y_i) - phi(x_i, y)>],

    (``l1_ratio = 0``: the paper's ``alpha/2 ||w||^2``) by Frank-Wolfe steps on one block of the
    dual (3) at a time, each with an exact line search (spec 002 §2), the blocks picked by their
    duality gaps (spec 002 §3). The exact duality gap (5), an upper bound on ``P(w) - P*``, is
    computed every ``gap_check`` passes; fitting stops when it falls below ``tol``.

    Parameters
    ----------
    structure : Structure
        What is predicted: ``ChainCRF()``, ``BinarySVM()``, ``MulticlassSVM()``,
        ``MultiLabel()``, ``CandidateSet()``, ``GraphCRF()`` (loopy graphs, oracles run from
        Python per example). Cloned at fit; the fitted copy is ``structure_``.
    alpha : float or None, default=None
        Regularisation ``lambda`` of eq. (1). ``None`` is scale-free, per unit of the zero
        model's objective ``loss_scale_`` (the mean largest loss), so a normalised and a
        counting loss give the same model: for ``ChainCRF`` ``max(0.01, 4.5e-5 T^2) /
        loss_scale_`` with ``T`` the mean length (0.01 per unit of the largest loss, at least
        4.5e-5 per token of the counting loss; with the default count loss ``0.01 / T`` for
        sentences of up to 15 tokens, ``4.5e-5 T`` beyond), for ``MultiLabel`` ``0.01 /
        loss_scale_``, otherwise ``1 / (n_samples loss_scale_)`` (``LinearSVC``'s ``C = 1``
        for ``BinarySVM``). Chosen on development data beside CRFsuite
        (``benchmarks/select_defaults.py``); cross-validate it (``BCFWStructuredSVMCV``, whose
        grid is centred on it) for the best model.
    l1_ratio : float in [0, 1), default=0.0
        Share of the l1 part of the penalty. With ``l1_ratio > 0`` the dual's weights are
        soft-thresholded, ``w = soft(u, alpha l1_ratio) / (alpha (1 - l1_ratio))``, every step's
        line search stays exact (on the piecewise quadratic dual, over the coordinates the step
        moves) and so does the duality gap; ``coef_`` has exact zeros. Not with
        ``coef_bounds``; a warm start keeps the dual point as it is.
    max_iter : int or None, default=None
        Maximum number of passes over the data (n block steps each). None: 200 passes, or
        100,000 block steps (``ceil(1e5 / n)`` passes) where that is more, with fewer than 500
        examples (:func:`~sklearn_ssvm.solvers.bcfw.pass_budget`): BCFW's rate is per step
        (Lacoste-Julien et al. 2013, Thm. 2), and at the scale-free ``alpha`` the steps to
        ``tol`` do not shrink with ``n``. Sequences and flat data reach ``tol`` in far fewer
        passes (CoNLL-2003 18, CoNLL-2000 27, OCR 74), and so do the 200 snakes of
        ``benchmarks/graph_defaults.py`` (74); fits of few graphs take many (2 images of
        128 x 128 pixels: 4,450 passes, 8,900 steps; graph fits that stopped by themselves
        took 8,900 to 58,400 steps, ``benchmarks/select_defaults.py --sections pass-budget``).
        The budget used is ``max_iter_``.
    tol : float, default=3e-3
        Stop when the certified duality gap is below ``tol`` times ``loss_scale_``, the zero
        model's objective ``P(0) = mean_i max_y L(y_i, y)`` (a relative precision, the same for
        a normalised or a counting loss and any data size; ``duality_gap_`` stays absolute).
        At 3e-3 the F1 on CoNLL-2003 testa was within noise of the converged model's (86.95 -
        87.09 over three seeds; 86.65 - 86.97 at 5e-3), at under 0.2x CRFsuite's CPU.
    gap_check : int, default=10
        Passes between exact duality-gap computations (one batched oracle pass each).
    sampling : {"gap", "uniform", "perm"}, default="gap"
        How the block of each step is picked: with probability proportional to its last
        computed duality gap (Osokin et al. 2016, Alg. 2; blocks never visited come first),
        uniformly at random (the original BCFW), or in a fresh random permutation every pass.
    step : {"fw", "pairwise", "away"}, default="pairwise"
        Block pairwise steps (mass moves from the worst active labeling of the block to the
        oracle's; Osokin et al. 2016, Alg. 3; the default since 0.1), Frank-Wolfe steps (the
        default before) or away steps (Alg. 4). Pairwise steps keep an active set of labelings
        per block and reach small gaps much sooner (OCR-large: 40 passes to a relative gap of
        5e-4 against 170 and more for Frank-Wolfe steps); plain steps cost less per step and
        memory.
    cache : bool or "auto", default="auto"
        Cache up to ``cache_size`` labelings per example and step towards the best cached one
        instead of calling the oracle when it still makes enough progress (Osokin et al. 2016,
        Alg. 5, with their F = 0.25, nu = 0.01). Worth it when the oracle is expensive:
        ``"auto"`` caches on graph structures (``GraphCRF``, ``BinaryGraphCRF``: message
        passing, graph cuts or integer programs per call; on the 200 snakes, 100 passes take
        10 s instead of 22 s and end at a smaller gap) and not on the others, whose compiled
        oracles cost about a step, nor on binary ``GraphCRF`` models whose every oracle is the
        compiled graph cut (on 40 noisy 16 x 16 binary images its 200 passes ended at a gap 2-3
        times larger with the cache).
    cache_size : int, default=50
        Labelings cached per example (active labelings of pairwise/away steps are never
        evicted).
    max_active : int or None, default=64
        Cap on the labelings an example keeps with pairwise or away steps (at least
        ``cache_size`` with the cache): the store grows to it while some example needs room;
        at the cap a new labeling waits until a step drops one (a full set steps within itself,
        from its worst labeling to its best, as Osokin et al. 2016's pairwise steps do). Bounds
        the memory of the active sets to ``max_active * (4 * n_tokens + 8 * n_samples)`` bytes.
        ``None``: no cap.
    coef_bounds : None, "positive_pairwise" or (lower, upper), default=None
        Box constraints on ``coef_`` (Osokin et al. 2016, App. H): ``"positive_pairwise"``
        keeps the label-interaction weights (transitions, label-pair tables) non-negative, as
        graph-cut oracles need; a pair of scalars or arrays of length ``n_params`` (+-inf
        allowed) bounds every parameter.
    averaging : bool, default=False
        Return the weighted average of the iterates (iterate ``k`` weighted by ``k``,
        Lacoste-Julien et al. 2013) instead of the last one. It often predicts better after few
        passes; its duality gap is exact too, and it is the one ``tol`` is checked against.
    random_state : int, RandomState instance or None, default=None
        Seed of the block sampling.
    verbose : int, default=0
        1: a progress bar with the current gap; 2: also one line per certificate check
        (objective, gap, seconds).
    warm_start : bool, default=False
        Continue from the previous dual solution (useful after changing ``alpha`` or
        ``max_iter``); the data must be the same. To a smaller ``alpha`` the dual is moved by
        Osokin et al.'s Prop. 1 (the previous ``coef_`` is kept exactly; ``l1_ratio = 0``
        only), otherwise it is kept as it is; either way the gap stays exact.
    n_jobs : int or None, default=None
        Threads of the fit (numba kernels without the GIL): the exact-gap passes, the
        packing, and with at least 256 examples per thread the block steps themselves, each
        thread stepping its own examples on the shared weights (atomic additions; no two
        threads touch one block, so every certificate stays exact). Such fits are certified
        but not reproducible bit for bit: the steps interleave as the scheduler runs them.
        Averaging, ``coef_bounds`` and graph structures keep their steps on one thread. None:
        1 unless ``joblib.parallel_config(n_jobs=...)`` says otherwise; -1: all cores.
    cluster : bool, default=False
        Fit on the cluster of the current dask client (``distributed.Client(...)`` made
        before ``fit``): the examples are split into one partition per worker, sent once and
        kept there with their dual blocks; each round runs a BCFW pass on every partition at
        ``alpha / K`` (CoCoA+'s safe aggregation over ``K`` partitions) and adds the
        partitions' changes of ``w``, which travel sparse
        (:class:`~sklearn_ssvm.solvers.bcfw_cluster.BCFWCluster`). ``max_iter`` counts
        rounds, ``gap_check`` rounds between the exact certificates, computed on the cluster.
        The L2 penalty, the compiled structures, without ``sample_weight``, averaging,
        bounds, the cache or ``warm_start``; a worker lost mid-fit raises a
        ``RuntimeError``. ``K`` partitions need about ``K`` times the rounds that one
        process needs passes: use it when the data do not fit one machine (see
        ``doc/scaling.md``).
    penalty : Penalty or None, default=None
        The regulariser at ``alpha = 1``, any :class:`~sklearn_ssvm.penalties.Penalty` the
        solver takes (the support table's penalty column): a fit binds it to the coefficients'
        layout and scales it by ``alpha``. None: the elastic net of ``l1_ratio``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_params,)
        ``w``; ``coef_ @ structure_.joint_feature(x, y)`` is the score of labeling ``y``.
    n_nonzero_coef_ : int
        Non-zero entries of ``coef_``.
    structure_ : Structure
        The fitted structure (``classes_``, ``n_features_in_``, ``loss``, oracles).
    classes_ : ndarray
    n_features_in_ : int
    alpha_ : float
        The regularisation used.
    n_iter_ : int
        Passes made.
    max_iter_ : int
        The passes allowed: ``max_iter``, or its rule's value for these data with ``None``.
    n_oracle_calls_ : int
        Max-oracle calls, exact-gap passes included (``n_oracle_calls_ / n`` are the paper's
        effective passes).
    n_cache_hits_ : int
        Steps taken towards a cached labeling instead of calling the oracle.
    duality_gap_ : float
        Last certified duality gap (absolute, on the scale of eq. (1)).
    relaxation_gap_ : float
        The part of ``duality_gap_`` that TRW-S's bounds leave on loopy graphs (0 with exact
        oracles): the bounds' excess over the best labelings known (those found and the
        blocks' atoms). No pass can close it; the rest, ``duality_gap_ - relaxation_gap_``,
        is the gap of the problem restricted to the labelings found, which passes close, and
        the true gap lies between the two.
    primal_objective_, dual_objective_ : float
        Primal ``P(w)`` and dual values at the last certificate.
    converged_ : bool
        Whether ``duality_gap_ - relaxation_gap_ <= tol * loss_scale_``: the gap itself with
        exact oracles, the part passes can close on loopy graphs.
    loss_scale_ : float
        The zero model's objective ``P(0) = mean_i max_y L(y_i, y)`` (the mean largest loss):
        ``tol`` is relative to it, ``duality_gap_ / loss_scale_`` is the relative gap.
    gap_certified_ : bool
        Whether every oracle call of the fit was exact, so that the duality gap is a
        certificate (always True for the compiled structures; graph structures with an
        approximate ``inference`` give False, with a warning).
    oracle_calls_ : dict or None
        Graph structures: the oracle calls of the fit by oracle name (``inference="auto"``
        says here which ran); None for the compiled structures.
    history_ : list of dict
        Per pass, the columns every solver's history has
        (:data:`~sklearn_ssvm.solvers.result.HISTORY_COLUMNS`: ``iter``, ``objective``,
        ``dual_objective``, ``gap``, ``oracle_calls``, ``time``, ``cpu_time``; the first
        three NaN on passes without an exact check), ``cache_hits`` and ``gap_estimate`` (sum of
        stale block gaps).
    dual_state_ : DualState or None
        Label-space dual state of the last iterate, which ``warm_start`` continues from
        (``n_tokens x n_labels`` plus ``n_samples x n_labels^2`` floats, often more than
        ``coef_``): kept, and pickled, only with ``warm_start=True``.
    active_sets_ : ActiveSets or None
        With pairwise or away steps or the cache, each block's labelings and their dual
        weights; only with ``warm_start=True``.
    """

    solver_params = {"bcfw": {}, "bcfw-cluster": {"cluster": True}}

    _parameter_constraints = {
        **StructuredEstimator._parameter_constraints,
        "l1_ratio": [Interval(Real, 0, 1, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "gap_check": [Interval(Integral, 1, None, closed="left")],
        "sampling": [Options({"gap", "uniform", "perm"})],
        "step": [Options({"fw", "pairwise", "away"})],
        "cache": ["boolean", Options({"auto"})],
        "cache_size": [Interval(Integral, 1, None, closed="left")],
        "max_active": [None, Interval(Integral, 1, None, closed="left")],
        "coef_bounds": [None, Options({"positive_pairwise"}), tuple, list],
        "averaging": ["boolean"],
        "cluster": ["boolean"],
    }

    def __init__(self, structure, alpha=None, l1_ratio=0.0, max_iter=None, tol=3e-3,
                 gap_check=10, sampling="gap", step="pairwise", cache="auto", cache_size=50,
                 max_active=64, coef_bounds=None, averaging=False, random_state=None, verbose=0,
                 warm_start=False, n_jobs=None, cluster=False, penalty=None):
        self.structure = structure
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.gap_check = gap_check
        self.sampling = sampling
        self.step = step
        self.cache = cache
        self.cache_size = cache_size
        self.max_active = max_active
        self.coef_bounds = coef_bounds
        self.averaging = averaging
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.cluster = cluster
        self.penalty = penalty

    def _warm_startable(self):
        # the dual state of a previous fit (kept with warm_start=True; estimators built from a
        # path have only coef_)
        return getattr(self, "dual_state_", None) is not None

    def _solver(self, problem, loss_scale):
        if getattr(self, "cluster", False):  # the CV estimator has no cluster option
            return self._cluster_solver(problem, loss_scale)
        bounds = self.coef_bounds
        if isinstance(bounds, str):  # "positive_pairwise": the structure's attractive box
            bounds = problem.pairwise_bounds()
        return BCFW(max_iter=self._max_passes(problem), tol=self.tol * loss_scale,
                    gap_check=self.gap_check, sampling=self.sampling, step=self.step,
                    cache=self._cache(problem), cache_size=self.cache_size,
                    max_active=self.max_active, bounds=bounds,
                    averaging=self.averaging, random_state=self.random_state,
                    n_jobs=self.n_jobs, verbose=self.verbose)

    def _max_passes(self, problem):
        """The passes (cluster: rounds) of a fit on ``problem``."""
        return pass_budget(problem.n_samples) if self.max_iter is None else self.max_iter

    def _budget(self):
        """``max_iter_``: ``max_iter=None`` resolved for the fit's examples."""
        return self.max_iter_

    def _cluster_solver(self, problem, loss_scale):
        """``cluster=True``: the cluster's solver, refusing (before any fit) what it does not
        keep; the cells of its capabilities are refused by ``solver.check``."""
        if self.warm_start:
            raise ValueError("cluster=True does not take warm_start=True: the dual blocks of "
                             "a cluster fit stay on its workers. Set warm_start=False.")
        if self.cache is True:  # "auto": none on the compiled structures it trains
            raise ValueError("cluster=True runs without the oracle cache: set cache=False "
                             "(or 'auto').")
        return BCFWCluster(max_iter=self._max_passes(problem), tol=self.tol * loss_scale,
                           gap_check=self.gap_check, step=self.step, sampling=self.sampling,
                           max_active=self.max_active, random_state=self.random_state)

    def _solve(self, solver, problem, alpha, previous, loss_scale):
        # the dual state has one block per example, its losses and labelings sized by the
        # example's tokens and labels: a warm start needs the same sequences and labels
        data_key = training_key(problem, features=False)
        if previous is not None and previous._data_key != data_key:
            raise ValueError("warm_start=True needs the same examples (their lengths) and "
                             "labels as the previous fit: its dual state holds one block per "
                             "example. Set warm_start=False to fit from scratch.")
        warm = None
        if previous is not None:
            warm = BCFWResult(coef=None, state=previous.dual_state_,  # w is the dual's
                              active_sets=previous.active_sets_)
            if warm.state is not None and alpha < previous.alpha_ and self.l1_ratio == 0:
                # a smaller alpha: Prop. 1 keeps w and moves the dual towards the true
                # labelings, so the warm start begins at the previous primal point, its gap
                # still exact (the rescaling is the L2 penalty's: with l1 the dual point is
                # kept, still feasible)
                warm = solver.rescaled(problem, warm, alpha / previous.alpha_)
        result = solver.solve(problem, self._penalty(alpha, problem), warm=warm)
        return self._fitted(result, _data_key=data_key, max_iter_=solver.settings["max_iter"],
                            n_oracle_calls_=result.n_oracle_calls,
                            primal_objective_=result.objective,
                            dual_objective_=result.dual_objective,
                            n_cache_hits_=result.n_cache_hits,
                            relaxation_gap_=result.relaxation_gap,
                            **self._dual(result, self._cache(problem)))

    def _warm_start_from(self, fit, source, problem, target=None, target_problem=None):
        """A fitted estimator holding ``fit``'s dual blocks (a fit on ``problem.subset(
        source)``) moved to ``target_problem = problem.subset(target)`` (all of ``problem``
        when None), the other examples at their true labeling
        (:func:`~sklearn_ssvm.solvers.bcfw.transfer_blocks`)."""
        state, atoms = transfer_blocks(problem, source, fit.dual_state_, fit.active_sets_,
                                       target)
        warm = clone(self)
        warm.dual_state_, warm.active_sets_, warm.alpha_ = state, atoms, fit.alpha_
        warm._data_key = training_key(problem if target is None else target_problem,
                                      features=False)
        return warm

    def _cache(self, problem):
        """``cache`` resolved: ``"auto"`` on the structures whose oracles run per example
        outside the compiled kernels' own (``dense_oracles``: graphs), unless every oracle is a
        compiled graph cut."""
        if self.cache == "auto":
            return (bool(getattr(problem, "dense_oracles", False))
                    and not getattr(problem, "cuts_only", False))
        return self.cache

    def _dual(self, result, cache):
        """What a warm start continues from, kept only when it may (the lean model otherwise)."""
        keep = self.warm_start
        return dict(dual_state_=result.state if keep else None,
                    active_sets_=result.active_sets if keep and (self.step != "fw" or cache)
                    else None)
