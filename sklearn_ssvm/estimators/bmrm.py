"""Structured SVM trained by a bundle method (BMRM; Teo et al. 2010, spec 003 §2.1-2.2)."""
from .._validation import Options
from ..solvers.bmrm import BMRM, BMRMResult
from .base import StructuredEstimator, training_key


class BMRMStructuredSVM(StructuredEstimator):
    """Structured SVM trained by the bundle method for regularised risk minimisation (BMRM).

    Minimises the primal of spec 002 eq. (1),

        J(w) = alpha/2 ||w||^2 + (1/n) sum_i max_y [L(y_i, y) - <w, phi(x_i, y_i) - phi(x_i, y)>],

    by replacing the empirical risk with a cutting-plane model built from one subgradient per
    pass of the loss-augmented max oracle (spec 003 eq. (3)). The model's dual value is a lower
    bound on ``min J``, so the BMRM gap (eq. (4)) certifies the returned weights; fitting stops
    when it falls below ``tol``. BMRM needs ``O(1 / (alpha eps))`` passes in the worst case,
    and this is tight (spec 003 §2.3, :func:`~sklearn_ssvm.datasets.make_hadamard_bmrm`).

    Parameters
    ----------
    structure : Structure
        What is predicted: ``ChainCRF()``, ``BinarySVM()``, ``MulticlassSVM()``,
        ``MultiLabel()``, ``CandidateSet()``, ``GraphCRF()`` (loopy graphs, oracles run from
        Python per example). Cloned at fit; the fitted copy is ``structure_``.
    alpha : float or None, default=None
        Regularisation ``lambda`` of eq. (1); ``None``: the rule of
        :class:`BCFWStructuredSVM` (the same objective).
    variant : {"qp", "ls"}, default="qp"
        ``"qp"``: qp-bmrm, the model minimised exactly over every cut (a small QP over the
        simplex each iteration; ``n_iter_ x n_params`` floats of memory). ``"ls"``: ls-bmrm,
        an exact line search between the aggregated cut and the new one (spec 003 §2.2;
        O(n_params) memory, slower convergence).
    max_iter : int, default=1000
        Maximum number of oracle passes over the data.
    tol : float, default=1e-3
        Stop when the BMRM gap is below ``tol`` times ``loss_scale_``, the zero model's
        objective (a relative precision, as in :class:`BCFWStructuredSVM`).
    verbose : int, default=0
        1: a progress bar with the current gap; 2: also one line per certificate check
        (objective, gap, seconds).
    warm_start : bool, default=False
        Start from the previous fit's weights and bundle. The cuts lower-bound the empirical
        risk whatever ``alpha``, so they stay valid after changing ``alpha`` or ``max_iter``;
        the data must be the same.
    n_jobs : int or None, default=None
        Threads of the fit (numba kernels without the GIL): the oracle pass and the sum of
        the subgradient over the examples, the products with the cuts. The sums are added in
        one fixed order (chunks of 256 examples along a fixed tree), so the fit is the same to
        the bit for any ``n_jobs``. None: 1 unless ``joblib.parallel_config(n_jobs=...)`` says
        otherwise; -1: all cores.
    cluster : bool, default=False
        Compute the risk and its subgradient on the cluster of the current dask client
        (``distributed.Client(...)`` made before ``fit``): the examples are split into one
        partition per worker, sent once and packed there; each iteration sends ``w`` out and
        sums the partitions' risks and subgradients back along the same fixed tree, and the
        bundle stays on this process (:class:`~sklearn_ssvm.solvers.sums.ClusterSums`). The
        iterates, the model and the gap are those of a fit on one process, to the bit. The
        compiled structures; a lost worker's partition is sent again and its sum recomputed.
        Worth it when a pass over the data computes for seconds (see ``doc/scaling.md``).
    penalty : Penalty or None, default=None
        As in :class:`BCFWStructuredSVM`; None: the L2 penalty ``alpha/2 ||w||^2``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_params,)
        ``w``, the best iterate (the one the gap certifies).
    structure_ : Structure
    classes_ : ndarray
    n_features_in_ : int
    alpha_ : float
        The regularisation used.
    n_iter_ : int
        Oracle passes made.
    duality_gap_ : float
        The BMRM gap ``J(coef_) - J_t(w_t) >= J(coef_) - min J``.
    primal_objective_ : float
        ``J(coef_)``.
    lower_bound_ : float
        The model's dual value ``J_t(w_t) <= min J``.
    converged_ : bool
        Whether ``duality_gap_ <= tol * loss_scale_``.
    loss_scale_, gap_certified_, oracle_calls_
        As in :class:`BCFWStructuredSVM`.
    history_ : list of dict
        Per iteration ``t``, the columns every solver's history has
        (:data:`~sklearn_ssvm.solvers.result.HISTORY_COLUMNS`): ``iter``, ``objective`` (``J``
        at the point of the ``t``-th cut, ``w_{t-1}``), ``dual_objective`` (the model's lower
        bound), ``gap``, ``oracle_calls`` (cuts), ``time``, ``cpu_time``.
    bundle_ : tuple
        ``(cuts, offsets)`` of the model (ls-bmrm: the aggregated cut), for ``warm_start``:
        the cuts as the fit kept them, a list of blocks of rows (``np.vstack(cuts)`` is the
        ``(n_cuts, n_params)`` matrix), and an ndarray of their offsets.
    """

    solver_params = {"bmrm": {}, "bmrm-cluster": {"cluster": True}}

    _parameter_constraints = {
        **StructuredEstimator._parameter_constraints,
        "variant": [Options({"qp", "ls"})],
        "cluster": ["boolean"],
    }

    def __init__(self, structure, alpha=None, variant="qp", max_iter=1000, tol=1e-3, verbose=0,
                 warm_start=False, n_jobs=None, cluster=False, penalty=None):
        self.structure = structure
        self.alpha = alpha
        self.variant = variant
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.cluster = cluster
        self.penalty = penalty

    def _warm_startable(self):
        return hasattr(self, "bundle_")

    def _solver(self, problem, loss_scale):
        return BMRM(variant=self.variant, tol=self.tol * loss_scale, max_iter=self.max_iter,
                    n_jobs=self.n_jobs, verbose=self.verbose,
                    cluster=getattr(self, "cluster", False))  # the CV estimator has none

    def _solve(self, solver, problem, alpha, previous, loss_scale):
        warm = None
        data_key = training_key(problem)  # the cuts lower-bound this data's risk only
        if previous is not None:
            if previous._data_key != data_key:
                raise ValueError("warm_start=True needs the same training data as the "
                                 "previous fit (its cutting planes bound that data's risk). "
                                 "Set warm_start=False to fit from scratch.")
            warm = BMRMResult(coef=previous._dense_coef(), cuts=previous.bundle_[0],
                              offsets=previous.bundle_[1])
        result = solver.solve(problem, self._penalty(alpha, problem), warm=warm)
        return self._fitted(result, _data_key=data_key, primal_objective_=result.objective,
                            lower_bound_=result.dual_objective,
                            bundle_=(result.cuts, result.offsets))
