"""PRAGAM (spec 003): the binary linear SVM with a duality-gap certificate (PRAGAM or AGM, spec
001), and the multi-class / candidate-set structured SVM (App. E.1)."""
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import Interval, Options, check_params

from ..solvers._common import interruptible, stop_requested
from ..solvers.agm import agm
from ..solvers.pragam import pragam
from ..solvers.pragam_structured import StructuredPragam
from ..structures.base import as_real_array, check_label_types
from .base import StructuredEstimator, warn_interrupted


#: features up to this magnitude are solved as they are; larger ones are rescaled
MAX_UNSCALED = 2.0**20


def _numeric(X):
    """``X``, its numbers stored as objects converted; text refused in our words (numpy's
    would be about its conversion of one string)."""
    if not (sp.issparse(X) or isinstance(X, np.ndarray)):  # lists, scalars, strings
        try:
            converted = np.asarray(X)
        except (TypeError, ValueError):  # ragged: scikit-learn's validation says so
            return X
        if converted.dtype == object or converted.dtype.kind in "USV":
            X = converted
    if isinstance(X, np.ndarray) and X.dtype == object:
        return as_real_array(X, "X")
    if isinstance(X, np.ndarray) and X.dtype.kind in "USV":
        raise ValueError(f"X must hold real numbers, got dtype {X.dtype}.")
    return X


class PragamSVC(ClassifierMixin, BaseEstimator):
    """Linear SVM trained to a certified duality gap by PRAGAM (Saha, Zhang & Vishwanathan).

    Minimises, with ``lambda = alpha`` and labels mapped to ``y_i = +-1``,

    ``J(w) = alpha/2 ||w||^2 + min_b (1/n) sum_i [1 - y_i (<x_i, w> + b)]_+``

    (spec 003 eq. (20); ``b = 0`` unless ``fit_intercept``; the bias is not regularised). This is
    scikit-learn's ``SVC(kernel="linear", C=1/(alpha n))`` with an intercept and
    ``LinearSVC(loss="hinge", C=1/(alpha n), fit_intercept=False)`` without one, up to the factor
    ``alpha n`` on the objective: ``J(w) = alpha n [1/2 ||w||^2 + C sum_i hinge_i]``. (LinearSVC
    with ``fit_intercept=True`` regularises the bias, a different problem.)

    The default solver is PRAGAM (spec 003 Algorithm 1), Nesterov's excessive-gap method on the
    primal-dual pair (eq. (20)-(22)): ``O(1/sqrt(eps))`` iterations of two or three products
    with ``X``, each certified by the exact duality gap ``J(w_k) - D(a_k) >= J(w_k) - min J``.
    More than two classes are trained one-vs-rest.

    Parameters
    ----------
    alpha : float, default=1e-4
        Regularisation ``lambda > 0`` (the ``alpha`` of the package's structured estimators).
    fit_intercept : bool, default=True
        Fit an unregularised bias (Pragam-b); its optimum for the final ``w`` is exact
        (spec 003 §2.6).
    solver : {"pragam", "agm-primal", "agm-dual", "agm-ef1-primal", "agm-ef1-dual"}, \
            default="pragam"
        ``"agm-*"``: the accelerated gradient methods of spec 001 in the primal (smoothed hinge)
        or the dual, from :mod:`sklearn_ssvm.solvers.agm`: AGM-EF-inf, whose model aggregates
        every linearisation, or with ``ef1`` AGM-EF-1, the last one alone (Algorithm 4).
    loss : {"hinge", "f1"}, default="hinge"
        ``"f1"`` (the multivariate F1-score loss of spec 001) needs an ``"agm-*"`` solver.
    tol : float, default=1e-6
        Stop when the duality gap is at most ``tol`` relative to the zero model's objective,
        as in the structured estimators; here ``J(0) = 1`` (hinge and F1 losses), so it is
        also the absolute gap on the scale of ``J``.
    max_iter : int, default=100_000
        Iterations of the solver per binary problem.
    verbose : int, default=0
        1: a progress bar with the current gap; 2: also one line per certificate check
        (objective, gap, seconds).
    warm_start : bool, default=False
        Start PRAGAM from the previous fit's dual points (as ``a_{-1}`` and prox-center) when the
        classes and the number of samples are unchanged.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        One row for two classes (``classes_[1]`` is the positive class), else one per class.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Zeros when ``fit_intercept=False``.
    duality_gap_ : float or ndarray of shape (n_classes,)
        Certified gap ``J(w) - D(a)`` of each binary problem at the returned ``w``.
    objective_ : float or ndarray of shape (n_classes,)
        ``J(w)`` of each binary problem.
    n_iter_ : int
        Largest iteration count over the binary problems.
    history_ : dict, or list of dicts (one per class)
        The solver's per-iteration record with the columns every solver's history has
        (:data:`~sklearn_ssvm.solvers.result.HISTORY_COLUMNS`); PRAGAM's is columnar (arrays,
        and ``bound`` of spec 003 eq. (26); see
        :class:`~sklearn_ssvm.solvers.pragam.PragamResult`).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when ``X`` has string column names.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ssvm.estimators.pragam import PragamSVC
    >>> X, y = make_classification(random_state=0)
    >>> clf = PragamSVC(alpha=1e-2).fit(X, y)
    >>> bool(clf.duality_gap_ <= 1e-6)
    True
    """

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "solver": [Options({"pragam", "agm-primal", "agm-dual", "agm-ef1-primal",
                            "agm-ef1-dual"})],
        "loss": [Options({"hinge", "f1"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
    }

    def __init__(self, alpha=1e-4, fit_intercept=True, solver="pragam", loss="hinge", tol=1e-6,
                 max_iter=100_000, verbose=0, warm_start=False):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.loss = loss
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose
        self.warm_start = warm_start

    def fit(self, X, y):
        """Fit the SVM (one-vs-rest for more than two classes).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training vectors.
        y : array-like of shape (n_samples,)
            Class labels, at least two classes.

        Returns
        -------
        self
            The fitted estimator.
        """
        check_params(self)
        previous = dict(self.__dict__)
        try:  # validate_data sets n_features_in_ at once: restore it if anything fails
            with interruptible() as stopped:
                self._fit(X, y)
                if stopped():
                    warn_interrupted(self)
            return self
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(previous)
            raise

    def _fit(self, X, y):
        check_label_types([y], "y", item=None)
        X = _numeric(X)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        # large features: solve on X / s with alpha / s^2, the same problem in w * s (s a power
        # of two, so exactly), which keeps the iterates' intermediate products in range
        largest = float(np.abs(X.data if sp.issparse(X) else X).max(initial=0.0))
        scale = 2.0 ** np.round(np.log2(largest)) if largest > MAX_UNSCALED else 1.0
        X, alpha = X / scale, self.alpha / scale**2
        if not alpha >= np.finfo(float).tiny:
            raise ValueError(f"alpha={self.alpha!r} is negligible against features of up to "
                             f"{largest:.3g} (alpha / max|x|^2 underflows): the problem is "
                             f"numerically unregularised. Rescale X (e.g. with MaxAbsScaler) or "
                             f"raise alpha.")
        solve = self._solver(alpha)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least two classes; got "
                             f"one class ({classes[0]!r}).")
        positives = classes[1:] if classes.size == 2 else classes
        warm = (self.warm_start and self.solver == "pragam"
                and getattr(self, "_duals", None) is not None
                and np.array_equal(getattr(self, "classes_", None), classes)
                and self._duals.shape[1] == X.shape[0])
        results = [solve(X, np.where(y == c, 1.0, -1.0), self._duals[j] if warm else None)
                   for j, c in enumerate(positives)]
        gaps = np.array([r.duality_gap for r in results])
        if np.any(~(gaps <= self.tol)) and not stop_requested():
            warnings.warn(f"{self.solver} did not reach the duality gap tol={self.tol} in "
                          f"max_iter={self.max_iter} iterations (largest gap {np.max(gaps):.3g});"
                          " increase max_iter.", ConvergenceWarning)
        binary = classes.size == 2
        self.classes_ = classes
        self.coef_ = np.vstack([r.coef for r in results]) / scale
        self.intercept_ = np.array([float(r.intercept) for r in results])
        self.duality_gap_ = float(gaps[0]) if binary else gaps
        objectives = np.array([r.objective for r in results])
        self.objective_ = float(objectives[0]) if binary else objectives
        self.n_iter_ = int(max(r.n_iter for r in results))
        self.history_ = results[0].history if binary else [r.history for r in results]
        duals = [getattr(r, "dual_coef", None) for r in results]
        self._duals = None if any(a is None for a in duals) else np.vstack(duals)
        return self

    def _solver(self, alpha):
        """``solve(X, y_pm1, init) -> result`` for the chosen solver and loss at ``alpha``."""
        if self.solver == "pragam":
            if self.loss != "hinge":
                raise ValueError(f"loss={self.loss!r} needs solver='agm-primal' or 'agm-dual'; "
                                 "PRAGAM solves the hinge loss only.")
            return lambda X, y, init: pragam(
                X, y, alpha, fit_intercept=self.fit_intercept, tol=self.tol,
                max_iter=self.max_iter, verbose=self.verbose, init=init)
        formulation = self.solver.rsplit("-", 1)[1]
        memory = "1" if self.solver.startswith("agm-ef1") else "inf"
        return lambda X, y, init: agm(
            X, y, alpha, formulation=formulation, loss=self.loss, memory=memory,
            fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter,
            verbose=self.verbose)

    def decision_function(self, X):
        """Compute the scores ``<x, coef_> + intercept_`` of each sample.

        One column per class with more than two classes, else the positive class's score.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            The scores: one per sample for two classes (positive: ``classes_[1]``), else one
            per sample and class.
        """
        check_is_fitted(self)
        X = validate_data(self, _numeric(X), accept_sparse="csr", reset=False)
        scores = safe_sparse_dot(X, self.coef_.T, dense_output=True) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predict the class of the largest score (two classes: the positive one when it is > 0).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted class of each sample, from ``classes_``.
        """
        scores = self.decision_function(X)
        best = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[best]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class PragamStructuredSVM(StructuredEstimator):
    """Multi-class or candidate-set structured SVM trained by PRAGAM (spec 003 App. E.1).

    Minimises the primal of spec 002 eq. (1),

        J(w) = alpha/2 ||w||^2 + (1/n) sum_i max_y [L(y_i, y) - <w, phi(x_i, y_i) - phi(x_i, y)>],

    by Nesterov's excessive-gap method on the M3N dual (Algorithm 1, with the adaptive steps of
    :class:`PragamSVC` under the power iteration's ``sigma_max(Delta)^2 / alpha``): each dual
    block is the simplex over the example's outputs, so PRAGAM's maps (23)-(25) are block-wise
    simplex projections. Every iteration pairs a primal and a dual point whose gap certifies
    the best primal iterate and stays below ``mu_k D2`` (eq. (26); ``O(1/k^2)``); fitting
    stops when it is at most ``tol * loss_scale_``. On OCR's letters as flat examples it
    reaches a relative gap of 1e-4 before qp-BMRM, and far after BCFW
    (``benchmarks/multiclass_pragam.py``). Structures whose dual is a marginal polytope
    (chains, multi-label trees) need the factorised projection of App. E.3, which this
    estimator does not have: they are refused, as are graphs.

    Parameters
    ----------
    structure : MulticlassSVM or CandidateSet
        What is predicted (Crammer-Singer multi-class, or a candidate set per example). Cloned
        at fit; the fitted copy is ``structure_``.
    alpha : float or None, default=None
        Regularisation ``lambda``; ``None``: the rule of :class:`BCFWStructuredSVM`.
    max_iter : int, default=1000
        Iterations of Algorithm 1 (four products with the data each).
    tol : float, default=1e-3
        Target certified duality gap, relative to ``loss_scale_``.
    verbose : int, default=0
        1: a progress bar with the current gap.
    n_jobs : int or None, default=None
        Threads of the sparse products.
    penalty : Penalty or None, default=None
        As in :class:`BCFWStructuredSVM`; None: the L2 penalty ``alpha/2 ||w||^2``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_params,)
        The best primal iterate (the one the gap certifies).
    structure_, classes_, n_features_in_, alpha_
    n_iter_ : int
        Iterations run.
    duality_gap_ : float
        ``J(coef_) - D(dual_coef_) >= J(coef_) - min J``.
    primal_objective_ : float
        ``J(coef_)``.
    dual_coef_ : ndarray
        The best dual point, flat over every example's outputs (each block sums to ``w_i/n``).
    lipschitz_ : float
        The worst-case ``L`` (power iteration), the cap of the adaptive estimate.
    converged_ : bool
        Whether ``duality_gap_ <= tol * loss_scale_``.
    loss_scale_ : float
        The zero model's objective (the mean largest loss).
    gap_certified_ : bool
        Always True (the oracles are exact).
    oracle_calls_ : None
    history_ : list of dict
        Per iteration, the common columns (:data:`~sklearn_ssvm.solvers.result.HISTORY_COLUMNS`)
        and ``bound``, eq. (26)'s ``mu_k D2``, which the gap never exceeds.

    See Also
    --------
    PragamSVC : PRAGAM on binary data, compiled, with adaptive steps.
    """

    solver_params = {"pragam-structured": {}}
    #: PRAGAM starts from its prox-centre, the true outputs (no warm start)
    warm_start = False

    def __init__(self, structure, alpha=None, max_iter=1000, tol=1e-3, verbose=0, n_jobs=None,
                 penalty=None):
        self.structure = structure
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.penalty = penalty

    def _solver(self, problem, loss_scale):
        return StructuredPragam(tol=self.tol * loss_scale, max_iter=self.max_iter,
                                verbose=self.verbose, n_jobs=self.n_jobs)

    def _solve(self, solver, problem, alpha, previous, loss_scale):
        result = solver.solve(problem, self._penalty(alpha, problem))
        return self._fitted(result, primal_objective_=result.objective,
                            dual_coef_=result.dual_coef, lipschitz_=result.lipschitz)
