"""Cross-validated estimators (scikit-learn's ``LogisticRegressionCV`` / ``ElasticNetCV``
pattern): choose ``alpha`` (and ``l1_ratio``) by K-fold cross-validation, each fold's fits
warm-started along the decreasing ``alpha`` grid, folds in parallel, then refit."""
import inspect
import warnings
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import check_cv

from .._validation import check_params
from ..metrics import get_scorer
from ..penalties import ElasticNet
from ..path import _take
from ..solvers._common import interruptible
from .bcfw import BCFWStructuredSVM
from .smooth import SmoothSSVMClassifier

#: the range an integer ``alphas`` spans, log-spaced
ALPHA_RANGE = (1e-1, 1e-5)
#: the parameters of the CV estimators that the wrapped estimator does not take
CV_PARAMS = ("alphas", "l1_ratios", "cv", "scoring", "refit")


def _fold_scores(estimator, X, Y, train, test, alphas, scorer):
    """Scores on ``test`` of fits on ``train`` along ``alphas`` (descending), each fit
    warm-started from the previous one, the training examples packed once; and how many of
    the fits stopped at ``max_iter``."""
    est = estimator.set_params(warm_start=True)  # a clone of its own (see fit)
    check_params(est)
    X_train, Y_train = _take(X, train), _take(Y, train)
    X_test, Y_test = _take(X, test), _take(Y, test)
    structure = clone(est.structure)
    problem = structure.prepare(X_train, Y_train)
    scores, short = [], 0
    for alpha in alphas:
        est.set_params(alpha=float(alpha))._fit_prepared(structure, problem, X_train, Y_train)
        short += est._stopped_at_max_iter()
        scores.append(est.score(X_test, Y_test) if scorer is None
                      else scorer(est, X_test, Y_test))
    return scores, short


class _CrossValidated:
    """``fit`` of the CV estimators: the grid, the folds, the choice and the refit."""

    def _penalty(self, alpha):
        return ElasticNet.from_alpha(alpha, self.l1_ratio_)

    def _wrapped(self):
        """The plain estimator with this one's solver parameters."""
        params = {k: v for k, v in self.get_params(deep=False).items() if k not in CV_PARAMS}
        return self._estimator_class(**params)

    def _grid(self):
        alphas = self.alphas
        if isinstance(alphas, Integral) and not isinstance(alphas, bool):
            if alphas < 1:
                raise ValueError(f"alphas must be >= 1 when an int, got {alphas}.")
            alphas = np.geomspace(*ALPHA_RANGE, alphas)
        alphas = np.asarray(alphas, dtype=float).ravel()
        if alphas.size == 0 or not np.all(np.isfinite(alphas) & (alphas > 0)):
            raise ValueError(f"alphas must be finite numbers > 0, got {self.alphas!r}.")
        l1_ratios = np.asarray(self.l1_ratios, dtype=float).ravel()
        if l1_ratios.size == 0 or not np.all((l1_ratios >= 0) & (l1_ratios < 1)):
            raise ValueError(f"l1_ratios must be numbers in [0, 1), got {self.l1_ratios!r}.")
        return np.unique(alphas)[::-1], l1_ratios

    def fit(self, X, Y):
        """Cross-validate every ``(l1_ratio, alpha)`` and refit at the best (``refit=True``).

        Ties go to the largest ``alpha``, then the first ``l1_ratio``.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Training inputs, as for the wrapped estimator's ``fit``.
        Y : list of label arrays, 1-D array or 2-D indicator matrix
            Training labelings, as for the wrapped estimator's ``fit``.

        Returns
        -------
        self
            The fitted estimator.
        """
        with interruptible(safe=False):  # Ctrl-C: KeyboardInterrupt, no half-scored grid
            return self._fit(X, Y)

    def _fit(self, X, Y):
        alphas, l1_ratios = self._grid()
        n = Y.shape[0] if hasattr(Y, "shape") else len(Y)
        folds = list(check_cv(self.cv).split(np.zeros((n, 1))))
        scorer = None if self.scoring is None else get_scorer(self.scoring)
        estimator = self._wrapped()
        if self.n_jobs not in (None, 1):  # the folds take the workers: one thread per fit
            estimator.set_params(n_jobs=1)
        jobs = [delayed(_fold_scores)(clone(estimator).set_params(l1_ratio=float(r)), X, Y,
                                      train, test, alphas, scorer)
                for r in l1_ratios for train, test in folds]
        runs = Parallel(n_jobs=self.n_jobs, prefer="threads")(jobs)
        scores = np.array([s for s, _ in runs]).reshape(len(l1_ratios), len(folds), len(alphas))
        short = sum(k for _, k in runs)
        if short:  # one warning for the grid, not one per fit
            warnings.warn(f"{short} of {scores.size} fold fits stopped at max_iter="
                          f"{estimator.max_iter} before their duality gap reached tol="
                          f"{estimator.tol}; increase max_iter for certified scores.",
                          ConvergenceWarning)
        mean = scores.mean(axis=1)
        i, j = np.unravel_index(int(np.argmax(mean)), mean.shape)  # first max: largest alpha
        results = {"param_l1_ratio": np.repeat(l1_ratios, len(alphas)),
                   "param_alpha": np.tile(alphas, len(l1_ratios)),
                   "mean_test_score": mean.ravel(), "std_test_score": scores.std(axis=1).ravel()}
        for k in range(len(folds)):
            results[f"split{k}_test_score"] = scores[:, k, :].ravel()
        order = np.argsort(-mean.ravel(), kind="stable")
        results["rank_test_score"] = np.empty(order.size, dtype=int)
        results["rank_test_score"][order] = np.arange(1, order.size + 1)
        if self.refit:
            best = self._wrapped().set_params(alpha=float(alphas[j]),
                                              l1_ratio=float(l1_ratios[i])).fit(X, Y)
            for name, value in vars(best).items():
                if name.endswith("_") and not name.startswith("_"):
                    setattr(self, name, value)
        self.alphas_, self.l1_ratios_ = alphas, l1_ratios
        self.alpha_, self.l1_ratio_ = float(alphas[j]), float(l1_ratios[i])
        self.scores_ = scores
        self.best_score_ = float(mean[i, j])
        self.cv_results_ = results
        return self


_CV_DOC = """
    The other parameters are those of :class:`{name}`, all but ``alpha``,
    ``l1_ratio`` and ``warm_start`` (which the cross-validation chooses or drives).

    Parameters
    ----------
    structure : StructuredModel
        As for :class:`{name}`.
    alphas : int or array-like, default=7
        Candidate ``alpha`` values, or their number, log-spaced from 1e-1 down to 1e-5.
        Each fold fits them in decreasing order, every fit warm-started from the previous.
    l1_ratios : float or array-like, default=0.0
        Candidate ``l1_ratio`` values (elastic net), each with every ``alpha``.
    cv : int or cross-validation splitter, default=5
        As ``GridSearchCV``'s (an int: ``KFold`` without shuffling).
    scoring : str, callable or None, default=None
        None: the estimator's ``score``; ``"chunk_f1"``, ``"token_accuracy"`` or any
        scikit-learn scorer (:func:`sklearn_ssvm.metrics.get_scorer`).
    refit : bool, default=True
        Refit on all the data at the chosen ``alpha`` and ``l1_ratio``: the fitted attributes of
        :class:`{name}` (``coef_``, ...) are then this estimator's.
{params}
    n_jobs : int or None, default=None
        Joblib workers over the folds (threads: the kernels release the GIL); with more than
        one worker every fit runs on one thread.

    Attributes
    ----------
    alpha_, l1_ratio_ : float
        The chosen values (largest ``alpha`` among the best mean scores).
    alphas_, l1_ratios_ : ndarray
        The grid, ``alphas_`` descending.
    scores_ : ndarray of shape (n_l1_ratios, n_folds, n_alphas)
    best_score_ : float
    cv_results_ : dict
        ``GridSearchCV``-style: ``param_alpha``, ``param_l1_ratio``, ``mean_test_score``,
        ``std_test_score``, ``split{{k}}_test_score``, ``rank_test_score``.
"""


def _parameter_docs(estimator_class, names):
    """The entries of ``estimator_class``'s docstring "Parameters" section for ``names``, in
    that order, indented for a class docstring (``_CV_DOC``'s ``{params}``)."""
    lines = inspect.cleandoc(estimator_class.__doc__).splitlines()
    entries, name = {}, None
    for i in range(lines.index("Parameters") + 2, len(lines)):
        if i + 1 < len(lines) and lines[i + 1].strip() and not lines[i + 1].strip("-"):
            break  # the next section's header
        line = lines[i]
        if line and not line[0].isspace():
            name = line.split(" : ")[0].strip()
            entries[name] = []
        if name is not None:
            entries[name].append(f"    {line}" if line else "")
    return "\n".join("\n".join(entries[n]).rstrip() for n in names)


def _cv_signature(estimator_class):
    """The wrapped estimator's ``__init__`` signature with ``alpha``, ``l1_ratio`` and
    ``warm_start`` (the CV chooses or drives them) replaced by the CV parameters."""
    params = list(inspect.signature(estimator_class.__init__).parameters.values())
    keep = [p for p in params if p.name not in ("alpha", "l1_ratio", "warm_start")]
    cv = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
          for name, default in zip(CV_PARAMS, (7, 0.0, 5, None, True))]
    return inspect.Signature(keep[:2] + cv + keep[2:])


def _cross_validated(estimator_class):
    """The CV estimator of ``estimator_class``: its parameters (scikit-learn reads them from
    the ``__init__`` signature) are the wrapped estimator's, so they cannot drift apart."""
    signature = _cv_signature(estimator_class)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature
    name = estimator_class.__name__
    __init__.__qualname__ = f"{name}CV.__init__"  # importable by name, for the API docs
    own = ("structure",) + CV_PARAMS + ("n_jobs",)  # documented by _CV_DOC itself
    wrapped = [p for p in list(signature.parameters)[1:] if p not in own]
    doc = (f"``{name}`` with ``alpha`` (and ``l1_ratio``) chosen by cross-validation.\n"
           + _CV_DOC.format(name=name, params=_parameter_docs(estimator_class, wrapped)))
    return type(f"{name}CV", (_CrossValidated, estimator_class),
                {"__init__": __init__, "__doc__": doc, "__module__": __name__,
                 "_estimator_class": estimator_class, "_parameter_constraints": {}})


BCFWStructuredSVMCV = _cross_validated(BCFWStructuredSVM)
SmoothSSVMClassifierCV = _cross_validated(SmoothSSVMClassifier)
