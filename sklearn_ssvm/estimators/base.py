"""What every structured estimator shares: fitted-structure handling, predict and score."""
import warnings
from numbers import Integral, Real

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._validation import Interval, check_params
from ..penalties import ElasticNet, Penalty
from ..solvers._common import interruptible, kernel_threads
from ..structures.base import Structure


def training_key(problem, features=True):
    """A fingerprint of the training examples a warm start's solver state depends on: their
    lengths (graphs), labels and sample weights, and their features unless
    ``features=False``."""
    return joblib.hash(problem.training_parts(features))


def n_examples(X, name="X"):
    """The number of examples of ``X``: rows of a matrix, items of a list; a ValueError for
    None and scalars, which hold no examples."""
    scalar = X is None or isinstance(X, (str, bytes)) or (
        not isinstance(X, (list, tuple))  # (np.ndim would convert through array functions)
        and getattr(X, "ndim", None) in (0, None) and np.asarray(X).ndim == 0)
    if scalar:
        raise ValueError(f"{name} must hold one item per example (a list, an array or a sparse "
                         f"matrix), got {type(X).__name__} {X!r:.40}.")
    if hasattr(X, "shape"):
        return X.shape[0]
    return len(X) if hasattr(X, "__len__") else np.asarray(X).shape[0]


def take_examples(X, keep):
    """The examples ``keep`` (a boolean mask) of ``X``, a matrix or a list."""
    if isinstance(X, (list, tuple)):
        return [x for x, k in zip(X, keep) if k]
    return (X if hasattr(X, "shape") else np.asarray(X))[np.flatnonzero(keep)]


def check_sample_weight(sample_weight, n):
    """Validate per-example weights: ``None``, a scalar or ``n`` finite non-negative numbers
    with a positive one. Returns ``None`` (unweighted) or an ``(n,)`` float array."""
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("sample_weight must be numbers, one per example.") from None
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape != (n,):
        raise ValueError(f"sample_weight has shape {w.shape}; expected ({n},), one weight per "
                         f"example.")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        raise ValueError(f"sample_weight must be finite and non-negative; example {bad[0]} has "
                         f"{float(w[bad[0]])}.")
    if not np.any(w > 0):
        raise ValueError("sample_weight has no positive weight (all are zero): nothing to "
                         "fit.")
    return w


def warn_interrupted(estimator):
    """The ``ConvergenceWarning`` of a fit that Ctrl-C stopped at a safe point."""
    gap = getattr(estimator, "duality_gap_", None)
    gap = f", duality gap {np.max(gap):.3g}" if gap is not None and np.all(np.isfinite(gap)) \
        else ""
    warnings.warn(f"{type(estimator).__name__}.fit was interrupted (Ctrl-C) after "
                  f"{estimator.n_iter_} iterations{gap}: the model is the iterate reached. "
                  f"Fit again with warm_start=True to continue from it.", ConvergenceWarning)


def _chain_attribute(read, estimator):
    """``read(estimator)``, an inspection function, where its refusal (not a chain, or scores
    through a feature map) is an AttributeError: ``hasattr`` and ``dir`` then work."""
    try:
        return read(estimator)
    except ValueError as error:
        raise AttributeError(str(error)) from None


class StructuredEstimator(BaseEstimator):
    """Base class: ``fit`` is the subclass's; ``predict``/``score``/objectives live here.

    Subclasses implement ``_solver(problem, loss_scale)``, the
    :class:`~sklearn_ssvm.solvers.base.Solver` of the fit (``loss_scale`` is
    ``problem.loss_scale()``, the zero model's objective, on which ``tol`` is relative: the
    solvers take ``tol * loss_scale``), and may override ``_solve(solver, problem, alpha,
    previous, loss_scale)``, which returns a dict of fitted attributes (``coef_`` at least).
    ``fit`` validates, packs, checks the solver's declared capabilities, solves and only then
    sets the attributes, so a failed fit leaves a previously fitted estimator unchanged.

    A subclass declares, beside its class, the solvers it runs in ``solver_params``
    (``{name: params}``: each :data:`~sklearn_ssvm.solvers.capabilities.SOLVERS` name with the
    parameters that choose it), from which the contract tests build every declared cell.
    """

    solver_params = {}

    _parameter_constraints = {
        "structure": [Structure],
        "alpha": [Interval(Real, 0, None, closed="neither"), None],
        "penalty": [Penalty, None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "n_jobs": [Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left"), None],  # joblib's: not 0
    }

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the structured SVM on examples ``X`` with labelings ``y``.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Per-example inputs as the structure expects them (a list of ``(n_tokens,
            n_features)`` matrices for ``ChainCRF``; a 2-D array for flat structures).
        y : list of label arrays, 1-D array or 2-D indicator matrix
            Labelings, any hashable label values (mapped through ``structure_.classes_``):
            the structured target (``Y`` in the papers; ``y`` as scikit-learn names it).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights of the examples' losses: the objective's loss term becomes the weighted
            mean ``sum_i w_i H~_i(w) / sum_i w_i``, so an integer weight counts an example
            that many times, a zero weight drops it, and scaling all weights changes nothing
            (change ``alpha`` instead). The solvers take the weights exactly (BCFW scales each
            block's share of the dual, the stochastic solvers draw examples in proportion to
            them); the oracles are unchanged.
        **fit_params
            Passed to the solver (see the estimator's own ``fit``).

        Returns
        -------
        self
            The fitted estimator.
        """
        check_params(self)
        n_examples(y, "y")
        if not hasattr(y, "__len__"):  # an array-like without len (numpy understands it)
            y = np.asarray(y)
        weights = check_sample_weight(sample_weight, n_examples(X))
        if weights is not None and not np.all(weights > 0):
            keep = weights > 0
            X, y, weights = take_examples(X, keep), take_examples(y, keep), weights[keep]
        structure = clone(self.structure)  # never self.structure_: a failed fit keeps it
        # the batched kernels of the packing and of the loss scale run on n_jobs threads too
        with kernel_threads(getattr(self, "n_jobs", None)):
            problem = structure.prepare(X, y)
            if weights is not None:
                problem = problem.with_sample_weight(weights)
            self._fit_prepared(structure, problem, X, y, **fit_params)
        if self._stopped_at_max_iter():
            gap = getattr(self, "duality_gap_", np.nan)
            relaxed = getattr(self, "relaxation_gap_", 0.0)
            part = ("" if not relaxed else f" less the relaxation's part "
                    f"relaxation_gap_ = {relaxed:.3g}, which no pass can close,")
            gap = (f"its duality gap is {gap:.3g}{part} > tol * loss_scale_ = {self.tol} * "
                   f"{self.loss_scale_:.3g}" if np.isfinite(gap)
                   else "no duality gap was certified")
            warnings.warn(f"{type(self).__name__} stopped at max_iter={self._budget()}: {gap}. "
                          f"Increase max_iter (or tol) for a certified fit.",
                          ConvergenceWarning)
        return self

    def _fit_prepared(self, structure, problem, X, Y, previous=None, **fit_params):
        """``fit`` on the examples ``structure.prepare(X, Y)`` packed as ``problem`` (the CV
        estimators pack the data once for all folds and alphas), warm-started from
        ``previous`` (a fit of :meth:`_warm_start_from`) or, with ``warm_start=True``, from
        this estimator's previous fit."""
        if previous is None and self.warm_start and self._warm_startable():
            self._check_warm_start(structure)
            previous = self
        dense = getattr(problem, "dense_oracles", False)
        scale = self._loss_scale(problem)  # tol (and mu) are relative to it
        solver = self._solver(problem, scale)
        solver.check(problem, self._options(problem))
        if previous is not None and not solver.capabilities.warm_start:
            raise ValueError(f"warm_start=True continues the previous fit, but "
                             f"{solver.capabilities.name} declares no warm start: set "
                             f"warm_start=False.")
        alpha = self._default_alpha(problem) if self.alpha is None else float(self.alpha)
        with interruptible() as stopped:
            fitted = self._solve(solver, problem, alpha, previous, scale, **fit_params)
            interrupted = stopped()
        if not np.all(np.isfinite(fitted["coef_"])):  # refused before any attribute changes
            raise ValueError(f"{type(self).__name__} produced non-finite coefficients (an "
                             f"overflow: features or alpha at extreme scales); rescale the "
                             f"features or change alpha.")
        self.structure_ = structure
        self.alpha_ = alpha
        self.loss_scale_ = scale
        self.classes_ = structure.classes_
        self.n_features_in_ = structure.n_features_in_
        for name, value in fitted.items():
            setattr(self, name, value)
        self.n_nonzero_coef_ = int(np.count_nonzero(self.coef_))
        # graph structures run exact or approximate oracles: only exact ones certify gaps
        self.gap_certified_ = problem.certified if dense else True
        self.oracle_calls_ = dict(problem.oracle_calls) if dense else None
        if not self.gap_certified_:
            warnings.warn(f"{type(self).__name__}: an approximate oracle ran "
                          f"({self.oracle_calls_}), so the reported duality gap is a lower "
                          f"estimate, not a certificate (gap_certified_ is False).",
                          UserWarning)
        if interrupted:
            warn_interrupted(self)
        return self

    @staticmethod
    def _fitted(result, **extra):
        """The fitted attributes every estimator reads the same way from a solver's
        :class:`~sklearn_ssvm.solvers.result.SolverResult`, and ``extra`` (the estimator's
        own names)."""
        return dict(coef_=result.coef, n_iter_=result.n_iter, duality_gap_=result.duality_gap,
                    converged_=result.converged, history_=result.history, **extra)

    def _warm_start_from(self, fit, source, problem, target=None, target_problem=None):
        """What a fit on ``target_problem = problem.subset(target)`` (all of ``problem`` when
        None) warm-starts from, given ``fit``, a fit of this estimator on
        ``problem.subset(source)`` at the same ``alpha`` (the CV estimators: one fold for the
        others, a fold for the refit); None: a cold start. Estimators whose warm start takes
        such a point override it."""
        return None

    def _loss_scale(self, problem):
        """The zero model's objective, ``loss_scale_``, on which ``tol`` is relative."""
        return problem.loss_scale()

    def _default_alpha(self, problem):
        """The regularisation of ``alpha=None``."""
        return problem.default_alpha()

    def _budget(self):
        """The iterations the last fit was allowed."""
        return self.max_iter

    def _stopped_at_max_iter(self):
        return not self.converged_ and self.n_iter_ >= self._budget()

    def _penalty(self, alpha, problem):
        """The fit's regulariser at ``alpha`` on the examples of ``problem``: ``penalty``
        bound to their layout and scaled by ``alpha``, or (``penalty=None``) the elastic net
        of ``l1_ratio`` (estimators without that parameter: the L2 penalty
        ``alpha/2 ||w||^2``)."""
        penalty, l1_ratio = getattr(self, "penalty", None), self._l1_ratio()
        if penalty is None:
            return ElasticNet.from_alpha(alpha, l1_ratio)
        if l1_ratio != 0:
            raise ValueError(f"{type(self).__name__} got penalty={penalty!r} and an l1 ratio of "
                             f"{l1_ratio}: l1_ratio shapes the default elastic net only; write "
                             f"the l1 part into the penalty (e.g. ElasticNet(c, l1)).")
        bound = penalty.bind(problem).scaled(alpha)
        # numba takes no NaN: the strong convexity and an l1 weight must be finite numbers
        c, l1 = getattr(bound, "c", None), getattr(bound, "l1", 0.0)
        if not (isinstance(c, Real) and np.isfinite(c) and c > 0 and isinstance(l1, Real)
                and np.isfinite(l1) and l1 >= 0):
            raise ValueError(f"penalty={penalty!r} must be strongly convex with a finite "
                             f"modulus c > 0 (and a finite l1 >= 0); at alpha={alpha} it has "
                             f"c={c!r}, l1={l1!r}.")
        return bound

    def _l1_ratio(self):
        """The default elastic net's ``l1_ratio``."""
        return getattr(self, "l1_ratio", 0.0)

    def _solver(self, problem, loss_scale):
        """The :class:`~sklearn_ssvm.solvers.base.Solver` the fit runs on ``problem``, with this
        estimator's settings (``tol`` times ``loss_scale``, the zero model's objective)."""
        raise NotImplementedError

    def _solve(self, solver, problem, alpha, previous, loss_scale):
        """The fitted attributes of ``solver`` on ``problem`` at ``alpha``, continuing from
        ``previous`` (a fit whose result the solver accepts as ``warm``). Estimators whose warm
        start or attributes need more override it."""
        warm = None if previous is None else previous._result
        result = solver.solve(problem, self._penalty(alpha, problem), warm=warm)
        return self._fitted(result, _result=result if self.warm_start else None)

    def _options(self, problem):
        """The :data:`~sklearn_ssvm.solvers.capabilities.OPTIONS` this fit asks for."""
        bounds = getattr(self, "coef_bounds", None)
        asked = {"elastic_net": self._penalty(1.0, problem).code == "elastic_net",
                 "away": getattr(self, "step", None) == "away",
                 "averaging": bool(getattr(self, "averaging", False)),
                 "bounds": bounds is not None,
                 "box": bounds is not None and not isinstance(bounds, str),
                 "sample_weight": problem.weighted}
        return [option for option, on in asked.items() if on]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # every structure takes sparse features
        structure_tags = getattr(self.structure, "_estimator_tags", None)
        return tags if structure_tags is None else structure_tags(tags)

    def _check_warm_start(self, structure):
        """Refuse, before any fitted attribute changes, a warm start whose structure, label set
        or feature count differs from the previous fit's (the solver's state indexes them)."""
        previous = self.structure_
        what = None
        if type(structure) is not type(previous) or (joblib.hash(structure.get_params())
                                                     != joblib.hash(previous.get_params())):
            what = f"the structure ({structure!r} now, {previous!r} before)"
        elif not np.array_equal(structure.classes_, previous.classes_):
            what = (f"the label set ({structure.classes_.tolist()[:10]} now, "
                    f"{previous.classes_.tolist()[:10]} before)")
        elif structure.n_features_in_ != previous.n_features_in_:
            what = (f"the number of features ({structure.n_features_in_} now, "
                    f"{previous.n_features_in_} before)")
        if what is not None:
            raise ValueError(f"warm_start=True continues the previous fit, but {what} "
                             f"differs: set warm_start=False to fit from scratch.")

    def _warm_startable(self):
        """Whether a previous fit left what ``warm_start`` continues from."""
        return hasattr(self, "coef_")

    def predict(self, X):
        """Predict the best labeling ``argmax_y <coef_, phi(x, y)>`` of each example.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.

        Returns
        -------
        list of ndarray or ndarray
            The predicted labelings, in the format of ``Y`` in :meth:`fit`: one label array per
            sequence for ``ChainCRF``, an array of labels for ``BinarySVM`` and
            ``MulticlassSVM``, a 0/1 indicator matrix for ``MultiLabel``, candidate indices
            for ``CandidateSet``.
        """
        check_is_fitted(self, "coef_")
        return self.structure_.predict(X, self._dense_coef())

    def predict_marginals(self, X, temperature=1.0):
        """Per-token label marginals of each sequence (chains) or per-node marginals of each
        graph (``GraphCRF``), as CRF users read them.

        The marginals of ``P(y | x) ~ exp(<coef_, phi(x, y)> / temperature)``, computed by
        forward-backward on chains (the entropy oracle's dynamic program) and by
        tree-reweighted belief propagation on graphs (entropy smoothing's computation there:
        exact on forests, TRW's pseudo-marginals on graphs with cycles). A structured SVM's
        scores are margins, not log-probabilities: ``temperature`` sets how peaked the
        distribution is (the argmax of each row need not be the best labeling's).

        Parameters
        ----------
        X : list of (n_tokens, n_features) matrices, or of graph examples
            The sequences or graphs, as for :meth:`fit`.
        temperature : float, default=1.0
            Temperature of the distribution, a finite number > 0: smaller values make it more
            peaked.

        Returns
        -------
        list of ndarray of shape (n_tokens, n_labels)
            Columns in ``classes_`` order; each row sums to 1.
        """
        check_is_fitted(self, "coef_")
        if not hasattr(self.structure_, "marginals"):
            raise ValueError(f"predict_marginals needs a ChainCRF or GraphCRF structure, not "
                             f"{type(self.structure_).__name__}.")
        return self.structure_.marginals(X, self._dense_coef(), temperature)

    def decision_function(self, X):
        """Compute the scores of the examples.

        For ``MulticlassSVM`` the ``(n_samples, n_classes)`` class scores, for ``BinarySVM``
        ``X @ coef_`` (positive: ``classes_[1]``), for ``MultiLabel`` each label's max-marginal
        margin ``(n_samples, n_labels)`` (positive: predicted on), otherwise the score
        ``<coef_, phi(x, y)>`` of each example's predicted output.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples,), (n_samples, n_classes) or (n_samples, n_labels)
            The scores; 2-D for ``MulticlassSVM`` and ``MultiLabel``.
        """
        check_is_fitted(self, "coef_")
        return self.structure_.decision_function(X, self._dense_coef())

    @property
    def intercept_(self):
        """The intercepts of a flat structure's model, as scikit-learn's linear models name
        them: one per class (``MulticlassSVM``), per label (``MultiLabel``), or ``(1,)``
        (``BinarySVM``); zeros with ``fit_intercept=False``. The constant feature's weights in
        ``coef_`` times the structure's ``intercept_scaling``. Sequence and graph structures
        have none (their biases are features: ``ChainCRF(bias=True)``).
        """
        check_is_fitted(self, "coef_")
        intercept = getattr(self.structure_, "intercept", None)
        if intercept is None:
            raise AttributeError(f"{type(self.structure_).__name__} has no intercept_: only "
                                 f"the flat structures (BinarySVM, MulticlassSVM, MultiLabel) "
                                 f"fit one.")
        return intercept(self._dense_coef())

    @property
    def transition_features_(self):
        """Transition weights of a chain, ``{(label_from, label_to): weight}``.

        sklearn-crfsuite's attribute; see :mod:`sklearn_ssvm.inspection` for tables and named
        features through a pipeline.
        """
        from ..inspection import transition_features
        return _chain_attribute(transition_features, self)

    @property
    def state_features_(self):
        """Non-zero token-feature weights of a chain, ``{(feature, label): weight}``.

        Features are named ``"x0"``, ``"x1"``, ... (see :mod:`sklearn_ssvm.inspection` for the
        names a ``SequenceVectorizer`` gives).
        """
        from ..inspection import state_features
        return _chain_attribute(state_features, self)

    def _packed(self, X, Y):
        check_is_fitted(self, "coef_")
        return self.structure_.pack(X, Y)

    def score(self, X, y):
        """Return ``1 - mean task loss`` of the predictions on ``(X, y)``.

        Each task loss is in [0, 1]: the score is the mean per-sequence token accuracy for
        chains (also with ``ChainCRF(normalize_loss=False)``), the accuracy for classifiers,
        and for candidate sets ``1 -`` the mean of the predicted candidate's loss over the
        example's largest. A label never seen in fit counts as a wrong prediction.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.
        y : list of label arrays, 1-D array or 2-D indicator matrix
            The labelings, as in :meth:`fit`.

        Returns
        -------
        float
            The score, in [0, 1].
        """
        check_is_fitted(self, "coef_")
        problem, score = self.structure_.prediction_scorer(X, y)
        y_pred, _, _, _ = problem.run_oracle(self._dense_coef(), False)
        return score(y_pred)

    def primal_objective(self, X, Y, alpha=None, sample_weight=None):
        """Compute the primal objective ``r(coef_) + mean_i H~_i(coef_)`` on ``(X, Y)``.

        The objective of spec 002 eq. (1), ``r`` the fit's penalty (``penalty``, or the
        elastic net of ``l1_ratio``) at ``alpha`` (default: ``alpha_``).

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Examples, in the format of ``X`` in :meth:`fit`.
        Y : list of label arrays, 1-D array or 2-D indicator matrix
            Their labelings, in the format of ``Y`` in :meth:`fit`.
        alpha : float or None, default=None
            Regularisation of the penalty; None means ``alpha_``, the one of the fit.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights of the examples' losses, as in :meth:`fit` (a weighted mean).

        Returns
        -------
        float
            The penalty plus the (weighted) mean structured hinge loss of ``coef_``.
        """
        weights = check_sample_weight(sample_weight, n_examples(X))
        problem = self._packed(X, Y)
        penalty = self._penalty(self.alpha_ if alpha is None else alpha, problem)
        coef = self._dense_coef()
        losses = problem.hinge_losses(coef)
        return penalty.value(coef) + float(np.average(losses, weights=weights))

    def sparsify(self):
        """Store ``coef_`` as a scipy sparse row (CSR, ``1 x n_params``), as scikit-learn's
        linear models do: a much smaller model (and pickle) when most weights are zero, e.g.
        text features; ``predict``, ``score`` and the rest work unchanged (each call expands it
        once). :meth:`densify` undoes it; a refit stores a dense ``coef_`` again.

        Returns
        -------
        self
            The estimator, ``coef_`` now sparse.
        """
        check_is_fitted(self, "coef_")
        if not sp.issparse(self.coef_):
            self.coef_ = sp.csr_matrix(self.coef_[None, :])
        return self

    def densify(self):
        """Store ``coef_`` as a dense 1-D array again (undoes :meth:`sparsify`).

        Returns
        -------
        self
            The estimator, ``coef_`` now dense.
        """
        check_is_fitted(self, "coef_")
        self.coef_ = self._dense_coef()
        return self

    def _dense_coef(self):
        return self.coef_.toarray().ravel() if sp.issparse(self.coef_) else self.coef_
