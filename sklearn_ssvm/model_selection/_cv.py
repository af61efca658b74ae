"""Cross-validated estimators (scikit-learn's ``LogisticRegressionCV`` / ``ElasticNetCV``
pattern): choose ``alpha`` (and ``l1_ratio``) by K-fold cross-validation along a grid centred
on the ``alpha=None`` rule, each fold's fits warm-started along the decreasing ``alpha``, the
grid stopped once the validation score has turned down, then refit on all the examples from
the folds' dual blocks."""
import copy
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
from ._path import _take
from ..solvers._common import interruptible
from ..estimators.base import n_examples
from ..estimators.bcfw import BCFWStructuredSVM
from ..estimators.bmrm import BMRMStructuredSVM
from ..estimators.smooth import SmoothSSVMClassifier

#: an integer ``alphas`` is that many values this ratio apart, centred on ``alpha=None``
GRID_RATIO = 2.0
#: the parameters of the CV estimators that the wrapped estimator does not take
CV_PARAMS = ("alphas", "l1_ratios", "cv", "scoring", "n_alphas_no_change", "refit")
#: their defaults, in that order
CV_DEFAULTS = (7, 0.0, 3, None, 1, True)


def _with_l1_ratio(estimator, l1_ratio):
    """``estimator`` at ``l1_ratio``; an estimator of the L2 penalty only (no ``l1_ratio``
    parameter: its CV estimator has no ``l1_ratios``) is left as it is, at 0."""
    if "l1_ratio" in estimator.get_params(deep=False):
        estimator.set_params(l1_ratio=float(l1_ratio))
    return estimator


def _fit_fold(estimator, structure, problem, X_train, Y_train, X_test, Y_test, alpha, scorer,
              previous=None):
    """Fit ``estimator`` on a fold's packed training examples at ``alpha``, warm-started from
    ``previous`` or (``warm_start=True``) from its fit at the previous alpha; returns it, its
    score on the held-out examples and whether it stopped at ``max_iter``."""
    estimator.set_params(alpha=float(alpha))._fit_prepared(structure, problem, X_train,
                                                           Y_train, previous=previous)
    score = (estimator.score(X_test, Y_test) if scorer is None
             else scorer(estimator, X_test, Y_test))
    return estimator, score, bool(estimator._stopped_at_max_iter())


class _CrossValidated:
    """``fit`` of the CV estimators: the grid, the folds, the choice and the refit."""

    def _penalty(self, alpha, problem):
        """The wrapped estimator's penalty at the chosen ``l1_ratio_`` (a subclass's own
        penalty included: an elastic net built here would silently evaluate another
        objective)."""
        return _with_l1_ratio(self._wrapped(), self.l1_ratio_)._penalty(alpha, problem)

    def _wrapped(self):
        """The plain estimator with this one's solver parameters."""
        own = inspect.signature(self._estimator_class.__init__).parameters
        return self._estimator_class(**{k: v for k, v in self.get_params(deep=False).items()
                                        if k in own and k not in CV_PARAMS})

    def _grid(self, problem):
        """The descending alphas (an integer ``alphas``: that many, ``GRID_RATIO`` apart,
        centred on ``problem.default_alpha()``, the ``alpha=None`` rule) and the l1 ratios."""
        alphas = self.alphas
        if isinstance(alphas, Integral) and not isinstance(alphas, bool):
            if alphas < 1:
                raise ValueError(f"alphas must be >= 1 when an int, got {alphas}.")
            alphas = problem.default_alpha() * GRID_RATIO ** ((alphas - 1) / 2 - np.arange(alphas))
        alphas = np.asarray(alphas, dtype=float).ravel()
        if alphas.size == 0 or not np.all(np.isfinite(alphas) & (alphas > 0)):
            raise ValueError(f"alphas must be finite numbers > 0, got {self.alphas!r}.")
        l1_ratios = np.asarray(getattr(self, "l1_ratios", 0.0), dtype=float).ravel()
        if l1_ratios.size == 0 or not np.all((l1_ratios >= 0) & (l1_ratios < 1)):
            raise ValueError(f"l1_ratios must be numbers in [0, 1), got {self.l1_ratios!r}.")
        patience = self.n_alphas_no_change
        if patience is not None and (isinstance(patience, bool)
                                     or not isinstance(patience, Integral) or patience < 1):
            raise ValueError(f"n_alphas_no_change must be None or an integer >= 1, got "
                             f"{patience!r}.")
        return np.unique(alphas)[::-1], l1_ratios

    def _walk(self, n_alphas, start, fits, fit_round):
        """Fit the folds along the grid (indices ``0 .. n_alphas - 1``, alphas decreasing)
        from ``start``: down while the mean score improves on its best, then, if no smaller
        alpha beat ``start``, up from ``start`` (warm-started there), each way stopping after
        ``n_alphas_no_change`` alphas without a better mean score (None: to the grid's end).
        ``fit_round(fits, j)`` fits every fold at alpha ``j`` and returns the fits and their
        mean score."""
        patience = self.n_alphas_no_change
        at_start, best, best_j = None, -np.inf, start
        for walk in (range(start, n_alphas), range(start - 1, -1, -1)):
            if at_start is not None:
                fits = [copy.copy(fit) for fit in at_start]
            since = 0
            for j in walk:
                fits, mean = fit_round(fits, j)
                if j == start:
                    at_start = [copy.copy(fit) for fit in fits]
                since = 0 if mean > best else since + 1
                if mean > best:
                    best, best_j = mean, j
                if patience is not None and since >= patience:
                    break
            if patience is not None and best_j != start:
                return  # a smaller alpha did better: the scores have turned down above it

    def fit(self, X, y):
        """Cross-validate ``(l1_ratio, alpha)`` pairs and refit at the best (``refit=True``).

        For each ``l1_ratio`` the folds walk the grid from the alpha nearest the
        ``alpha=None`` rule: down the grid (each fold's fit warm-started from its fit at the
        previous alpha) until the mean validation score has not improved on its best for
        ``n_alphas_no_change`` alphas in a row, then, if no smaller alpha did better, up from
        the start the same way. Ties go to the largest ``alpha``, then the first ``l1_ratio``.
        The first alpha's fold fits start from fold 0's (BCFW: its dual blocks, the examples
        it held out at their true labeling; the smoothed solvers: its coefficients), and so
        does the refit on all the examples from the last fold's fit at the chosen values.

        Parameters
        ----------
        X : list of arrays or sparse matrices, or 2-D array
            Training inputs, as for the wrapped estimator's ``fit``.
        y : list of label arrays, 1-D array or 2-D indicator matrix
            Training labelings, as for the wrapped estimator's ``fit``.

        Returns
        -------
        self
            The fitted estimator.
        """
        with interruptible(safe=False):  # Ctrl-C: KeyboardInterrupt, no half-scored grid
            return self._fit(X, y)

    def _fit(self, X, Y):
        check_params(self._wrapped())
        n_examples(X)
        n_examples(Y, "y")
        structure = clone(self.structure)
        problem = structure.prepare(X, Y)  # packed once: the folds are subsets of it
        alphas, l1_ratios = self._grid(problem)
        folds = list(check_cv(self.cv).split(np.zeros((problem.n_samples, 1))))
        trains = [np.sort(train) for train, _ in folds]
        parts = [(problem.subset(train), _take(X, train), _take(Y, train), _take(X, test),
                  _take(Y, test)) for train, (_, test) in zip(trains, folds)]
        scorer = None if self.scoring is None else get_scorer(self.scoring)
        # each fit continues from the previous alpha's, where the solver declares warm starts
        warm = self._wrapped()._solver(problem, problem.loss_scale()).capabilities.warm_start
        estimator = self._wrapped().set_params(warm_start=warm)
        if self.n_jobs not in (None, 1) and "n_jobs" in estimator.get_params():
            estimator.set_params(n_jobs=1)  # the folds take the workers: one thread per fit
        parallel = Parallel(n_jobs=self.n_jobs, prefer="threads")
        scores = np.full((len(l1_ratios), len(folds), len(alphas)), np.nan)
        start = int(np.argmin(np.abs(np.log(alphas / problem.default_alpha()))))
        best = dict(score=-np.inf, fits=None)
        short = fitted = 0

        def fit_round(i, fits, j):
            """Every fold at ``alphas[j]``, each from its fit at the previous alpha; at the
            walk's start fold 0 first, the others from its blocks (the folds share most
            examples). Returns the fits and their mean score."""
            nonlocal short, fitted
            runs, previous = [], [None] * len(parts)
            if j == start and warm:
                runs = [_fit_fold(fits[0], structure, *parts[0], alphas[j], scorer)]
                previous = [fits[0]._warm_start_from(runs[0][0], trains[0], problem, train,
                                                     part[0])
                            for train, part in zip(trains[1:], parts[1:])]
            runs += parallel(delayed(_fit_fold)(fit, structure, *part, alphas[j], scorer, warm)
                             for fit, part, warm in zip(fits[len(runs):], parts[len(runs):],
                                                        previous))
            fits = [fit for fit, _, _ in runs]
            scores[i, :, j] = [score for _, score, _ in runs]
            short += sum(stopped for _, _, stopped in runs)
            fitted += len(runs)
            mean = scores[i, :, j].mean()
            if mean > best["score"]:  # shallow copies: later fits replace, never edit, them
                best.update(score=mean, fits=[copy.copy(fit) for fit in fits])
            return fits, mean

        for i, r in enumerate(l1_ratios):
            self._walk(len(alphas), start, [_with_l1_ratio(clone(estimator), r)
                                            for _ in folds],
                       lambda fits, j: fit_round(i, fits, j))
        if short:  # one warning for the grid, not one per fit
            warnings.warn(f"{short} of {fitted} fold fits stopped at max_iter="
                          f"{estimator.max_iter} before their duality gap reached tol="
                          f"{estimator.tol} (relative); increase max_iter for certified "
                          f"scores.", ConvergenceWarning)
        mean = scores.mean(axis=1)
        # the first max: the first l1 ratio, the largest alpha (NaN: not fitted)
        i, j = np.unravel_index(int(np.nanargmax(mean)), mean.shape)
        results = {"param_l1_ratio": np.repeat(l1_ratios, len(alphas)),
                   "param_alpha": np.tile(alphas, len(l1_ratios)),
                   "mean_test_score": mean.ravel(), "std_test_score": scores.std(axis=1).ravel()}
        for k in range(len(folds)):
            results[f"split{k}_test_score"] = scores[:, k, :].ravel()
        order = np.argsort(np.where(np.isnan(mean.ravel()), np.inf, -mean.ravel()),
                           kind="stable")
        results["rank_test_score"] = np.empty(order.size, dtype=int)
        results["rank_test_score"][order] = np.arange(1, order.size + 1)
        if self.refit:
            refit = _with_l1_ratio(self._wrapped().set_params(alpha=float(alphas[j])),
                                   l1_ratios[i])
            refit._fit_prepared(structure, problem, X, Y, previous=refit._warm_start_from(
                best["fits"][-1], trains[-1], problem) if warm else None)
            if refit._stopped_at_max_iter():
                warnings.warn(f"The refit stopped at max_iter={refit._budget()} before its "
                              f"duality gap reached tol={refit.tol} (relative).",
                              ConvergenceWarning)
            for name, value in vars(refit).items():
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
    structure : Structure
        As for :class:`{name}`.
    alphas : int or array-like, default=7
        Candidate ``alpha`` values, or their number: that many, a factor 2 apart, centred on
        the ``alpha`` that ``alpha=None`` means for these data (so the grid follows the
        loss's scale; with 7, from 8 times it down to an eighth). The folds walk the grid from
        the alpha nearest ``alpha=None``, every fit warm-started from the previous (see
        ``n_alphas_no_change``).
    l1_ratios : float or array-like, default=0.0
        Candidate ``l1_ratio`` values (elastic net), each with the alphas.
    cv : int or cross-validation splitter, default=3
        As ``GridSearchCV``'s (an int: ``KFold`` without shuffling). 3 folds keep model
        selection at the cost of a few fits (``BCFWStructuredSVMCV`` on CoNLL-2003: 1.5x
        CRFsuite's CPU with 5 folds, 1.2x with 3); 5 choose from more data.
    scoring : str, callable or None, default=None
        None: the estimator's ``score``; ``"chunk_f1"`` (sequence labelling: chunks and
        entities), ``"token_accuracy"`` or any scikit-learn scorer
        (:func:`sklearn_ssvm.metrics.get_scorer`).
    n_alphas_no_change : int or None, default=1
        The folds walk the grid from the alpha nearest ``alpha=None``, down, then up if no
        smaller alpha did better; a walk stops once the mean validation score has not improved
        on its best for this many alphas in a row (it has turned down: the alphas left cost
        passes and would not be chosen). None: fit every alpha.
    refit : bool, default=True
        Refit on all the data at the chosen ``alpha`` and ``l1_ratio``, warm-started from the
        folds' fits there: the fitted attributes of :class:`{name}` (``coef_``, ...) are then
        this estimator's.
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
        The folds' validation scores; NaN for the alphas the early stop left out.
    best_score_ : float
    cv_results_ : dict
        ``GridSearchCV``-style: ``param_alpha``, ``param_l1_ratio``, ``mean_test_score``,
        ``std_test_score``, ``split{{k}}_test_score``, ``rank_test_score``.
"""


def _parameter_docs(estimator_class, names):
    """The entries of ``estimator_class``'s docstring "Parameters" section for ``names``, in
    that order, indented for a class docstring (``_CV_DOC``'s ``{params}``)."""
    lines = (inspect.getdoc(estimator_class) or "").splitlines()
    entries, name = {}, None  # a class without a Parameters section: the names alone
    first = lines.index("Parameters") + 2 if "Parameters" in lines else len(lines)
    for i in range(first, len(lines)):
        if i + 1 < len(lines) and lines[i + 1].strip() and not lines[i + 1].strip("-"):
            break  # the next section's header
        line = lines[i]
        if line and not line[0].isspace():
            name = line.split(" : ")[0].strip()
            entries[name] = []
        if name is not None:
            entries[name].append(f"    {line}" if line else "")
    return "\n".join("\n".join(entries.get(n, [f"    {n}"])).rstrip() for n in names)


def _cv_signature(estimator_class, defaults):
    """The wrapped estimator's ``__init__`` signature with ``alpha``, ``l1_ratio`` and
    ``warm_start`` (the CV chooses or drives them) replaced by the CV parameters, and
    ``defaults`` (name: value) where this CV estimator's differ. Without ``cluster``: the
    folds warm-start from each other's dual blocks, which a cluster fit keeps on its
    workers."""
    params = list(inspect.signature(estimator_class.__init__).parameters.values())
    keep = [p for p in params if p.name not in ("alpha", "l1_ratio", "warm_start", "cluster")]
    elastic = any(p.name == "l1_ratio" for p in params)  # else the L2 penalty only
    cv = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
          for name, default in zip(CV_PARAMS, CV_DEFAULTS) if elastic or name != "l1_ratios"]
    # n_jobs, the folds' workers, last (as _CV_DOC documents it), the wrapped one's or None
    n_jobs = [p for p in keep if p.name == "n_jobs"] or [inspect.Parameter(
        "n_jobs", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)]
    params = keep[:2] + cv + [p for p in keep[2:] if p.name != "n_jobs"] + n_jobs
    return inspect.Signature([p.replace(default=defaults[p.name]) if p.name in defaults else p
                              for p in params])


def _replace_entries(doc, entries):
    """``doc`` (a class docstring) with the "Parameters" entries of ``entries`` (name: the
    entry, unindented, or None to drop it) in place of its own."""
    lines = doc.splitlines()
    for name, entry in entries.items():
        start = next(i for i, line in enumerate(lines) if line.startswith(f"    {name} : "))
        end = start + 1
        while lines[end].startswith("        "):
            end += 1
        lines[start:end] = ([] if entry is None else
                            ["    " + line for line in inspect.cleandoc(entry).splitlines()])
    return "\n".join(lines)


def cross_validated(estimator_class, defaults=None):
    """Return the CV estimator of a structured estimator class.

    ``LogisticRegressionCV``'s pattern for any
    :class:`~sklearn_ssvm.estimators.base.StructuredEstimator` subclass, the package's or one
    written outside it: ``alpha`` (and ``l1_ratio``, where the class has it) chosen by K-fold
    cross-validation along a grid, each fold's fits warm-started along it (the warm starts of
    Osokin et al. 2016, §4) where its solver declares warm starts
    (``Capabilities.warm_start``), the objectives those of its penalty. Its
    parameters (scikit-learn reads them from the ``__init__`` signature) are the wrapped
    estimator's, so they cannot drift apart; their documentation is the wrapped class's
    "Parameters" entries where it has them, their names otherwise.

    Parameters
    ----------
    estimator_class : type
        The estimator class to wrap.
    defaults : dict or None, default=None
        ``{name: (value, docstring entry)}``: the parameters whose defaults differ for the CV
        estimator.

    Returns
    -------
    type
        The class ``<name>CV``.
    """
    defaults = defaults or {}
    signature = _cv_signature(estimator_class, {k: v for k, (v, _) in defaults.items()})

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
    entries = {k: entry for k, (_, entry) in defaults.items()}
    if "l1_ratios" not in signature.parameters:
        entries["l1_ratios"] = None
    doc = _replace_entries(doc, entries)
    return type(f"{name}CV", (_CrossValidated, estimator_class),
                {"__init__": __init__, "__doc__": doc, "__module__": __name__,
                 "_estimator_class": estimator_class, "_parameter_constraints": {}})


BCFWStructuredSVMCV = cross_validated(BCFWStructuredSVM)
BMRMStructuredSVMCV = cross_validated(BMRMStructuredSVM)
# A smoothed fit does not stop on its certificate (its relative gap stalls near 0.2), so
# every fit runs max_iter epochs and one fit at the plain defaults costs about one CRFsuite
# fit: 2 folds of 15 epochs keep the walk near 2.5x (CoNLL-2003 testa, 3 seeds).
SmoothSSVMClassifierCV = cross_validated(SmoothSSVMClassifier, defaults=dict(
    cv=(2, """
    cv : int or cross-validation splitter, default=2
        As ``GridSearchCV``'s (an int: ``KFold`` without shuffling). Two folds, as a smoothed
        fit runs all its epochs (see ``max_iter``).
    """),
    max_iter=(15, """
    max_iter : int, default=15
        Epochs of every fit, folds and refit (the warm-up's included; the refit starts from
        the last fold's fit). Fewer than :class:`SmoothSSVMClassifier`'s 25: a smoothed fit
        does not stop on its certificate, so each fit runs them all; 2 folds of 15 epochs
        cost 0.4x 3 folds of 25 for much the same model (CoNLL-2003 testa entity F1 86.66 to
        86.80 over 3 seeds at 2.3x to 2.5x CRFsuite's CPU, CRFsuite 86.62; 3 folds of 25
        epochs: 86.85 at 6.1x; ``benchmarks/sequence_labelling.py``).
    """)))
