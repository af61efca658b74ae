"""Inspect a fitted chain model as a CRF user would (sklearn-crfsuite's ``transition_features_``
and ``state_features_``), also through a ``Pipeline`` that names the token features.

Every function takes a fitted estimator with a ``ChainCRF`` structure (``predict_marginals`` and
``calibrate_temperature`` also ``GraphCRF``, ``certify_predictions`` only ``GraphCRF``), or a fitted
``Pipeline`` ending in one; the four functions that read the weights (``transition_weights``,
``transition_features``, ``state_features``, ``top_state_features``) raise a ValueError for another
model or one with a ``feature_map``. In a pipeline the feature names come from the step before the
estimator (``SequenceVectorizer.get_feature_names_out()``), otherwise they are ``"x0"``, ``"x1"``,
.... The position biases of ``ChainCRF(bias=True)`` are named ``"bias"``, ``"bias:first"`` and
``"bias:last"``.
"""
import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils import Bunch
from sklearn.utils.validation import check_is_fitted

from .structures.chain import ChainCRF
from .structures.graph_crf import GraphCRF

BIAS_NAMES = ("bias", "bias:first", "bias:last")


def _chain_model(model):
    """The fitted chain estimator of ``model`` and its token feature names."""
    names = None
    if isinstance(model, Pipeline):
        check_is_fitted(model.steps[-1][1], "coef_")
        if len(model.steps) > 1:
            names = np.asarray(model[:-1].get_feature_names_out(), dtype=object)
        model = model.steps[-1][1]
    check_is_fitted(model, "coef_")
    structure = getattr(model, "structure_", None)
    if not isinstance(structure, ChainCRF):
        raise ValueError(f"needs an estimator fitted with a ChainCRF structure, got "
                         f"{type(structure).__name__}.")
    if getattr(model, "feature_map_", None) is not None:
        raise ValueError("a model with a feature_map has no linear token weights.")
    if names is None:
        names = np.array([f"x{j}" for j in range(structure.n_features_in_)], dtype=object)
    if structure.bias:
        names = np.concatenate([names, np.array(BIAS_NAMES, dtype=object)])
    return model, names


def transition_weights(model):
    """Return the transition weights as a ``labels x labels`` table.

    As sklearn-crfsuite's tutorial reads CRFsuite models (Okazaki 2007).

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted estimator with a ``ChainCRF`` structure (and no ``feature_map``), or a
        fitted ``Pipeline`` ending in one.

    Returns
    -------
    table : ndarray of shape (n_labels, n_labels)
        ``table[a, b]``: the weight of label ``classes[b]`` right after ``classes[a]``.
    classes : ndarray of shape (n_labels,)
        The labels of the rows and columns of ``table`` (the structure's ``classes_``).
    """
    est, _ = _chain_model(model)
    return est.structure_.transition_table(est._dense_coef()), est.structure_.classes_


def transition_features(model):
    """Return the transition weights as a dict keyed by pairs of labels.

    The attribute of sklearn-crfsuite, the CRFsuite wrapper (Okazaki 2007).

    ``{(label_from, label_to): weight}``, as sklearn-crfsuite's ``transition_features_``.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted estimator with a ``ChainCRF`` structure (and no ``feature_map``), or a
        fitted ``Pipeline`` ending in one.

    Returns
    -------
    dict
        Maps every pair ``(label_from, label_to)`` of labels to the float weight of
        ``label_to`` right after ``label_from`` (see :func:`transition_weights`).
    """
    table, classes = transition_weights(model)
    return {(a, b): float(table[i, j]) for i, a in enumerate(classes.tolist())
            for j, b in enumerate(classes.tolist())}


def state_features(model):
    """Return the non-zero token-feature weights as a dict keyed by (feature, label) pairs.

    The attribute of sklearn-crfsuite, the CRFsuite wrapper (Okazaki 2007).

    ``{(feature_name, label): weight}`` of the non-zero token-feature weights, as
    sklearn-crfsuite's ``state_features_``.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted estimator with a ``ChainCRF`` structure (and no ``feature_map``), or a
        fitted ``Pipeline`` ending in one.

    Returns
    -------
    dict
        Maps ``(feature_name, label)`` to the float weight, for the non-zero weights
        only; the position biases are named as in the module docstring.
    """
    est, names = _chain_model(model)
    table = est.structure_.state_table(est._dense_coef())
    rows, cols = np.nonzero(table)
    classes = est.structure_.classes_.tolist()
    return {(names[r], classes[c]): float(table[r, c]) for r, c in zip(rows, cols)}


def top_state_features(model, n=10):
    """Return, per label, the ``n`` token features with the largest weights.

    As sklearn-crfsuite's tutorial reads CRFsuite models (Okazaki 2007).

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted estimator with a ``ChainCRF`` structure (and no ``feature_map``), or a
        fitted ``Pipeline`` ending in one.
    n : int, default=10
        Number of features kept per label.

    Returns
    -------
    dict
        ``{label: [(feature_name, weight), ...]}``, weights descending.
    """
    est, names = _chain_model(model)
    table = est.structure_.state_table(est._dense_coef())
    out = {}
    for c, label in enumerate(est.structure_.classes_.tolist()):
        order = np.argsort(-table[:, c], kind="stable")[:n]
        out[label] = [(names[r], float(table[r, c])) for r in order]
    return out


def _final_step(model, X):
    """The estimator ending ``model`` (a ``Pipeline`` or an estimator) and ``X`` transformed by
    the steps before it."""
    if isinstance(model, Pipeline):
        return model.steps[-1][1], model[:-1].transform(X) if len(model.steps) > 1 else X
    return model, X


def predict_marginals(model, X, temperature=1.0, as_dicts=False):
    """Return the per-token (per-node) label marginals, also through a ``Pipeline``.

    A ``Pipeline`` has no ``predict_marginals``; this function transforms ``X`` through the
    steps before the estimator and calls the estimator's (a chain's forward-backward, a
    graph's tree-reweighted belief propagation of Wainwright et al. 2005), at
    ``temperature``.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted estimator with a ``ChainCRF`` or ``GraphCRF`` structure, or a fitted
        ``Pipeline`` ending in one.
    X : list
        The sequences or graphs, as ``model`` takes them (e.g. token feature dicts before a
        ``SequenceVectorizer``).
    temperature : float, default=1.0
        Temperature of the distribution ``P(y | x) ~ exp(score / temperature)``, finite and
        > 0; :func:`calibrate_temperature` chooses one on labelled data.
    as_dicts : bool, default=False
        Return sklearn-crfsuite's form: per sequence a list of ``{label: probability}`` dicts,
        one per token.

    Returns
    -------
    list of ndarray of shape (n_tokens, n_labels), or list of list of dict
        Columns in ``classes_`` order; each row sums to 1.
    """
    est, Xt = _final_step(model, X)
    check_is_fitted(est, "coef_")
    marginals = est.predict_marginals(Xt, temperature=temperature)
    if not as_dicts:
        return marginals
    labels = est.classes_.tolist()
    return [[dict(zip(labels, row.tolist())) for row in m] for m in marginals]


def calibrate_temperature(model, X, Y, bounds=(1e-3, 1e3)):
    """Return the temperature whose marginals give the true labels the largest likelihood.

    A structured SVM's scores are margins, not log-probabilities: at ``temperature=1`` its
    marginals can be nearly flat or nearly hard. The temperature returned minimises the mean
    negative log marginal of the true labels of ``(X, Y)`` (held-out data: the labels the
    model was fitted on make it too sure): the temperature scaling of Guo et al. (2017,
    ICML), searched on a log scale within ``bounds``.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted estimator with a ``ChainCRF`` or ``GraphCRF`` structure, or a fitted
        ``Pipeline`` ending in one.
    X : list
        Sequences or graphs, as ``model`` takes them.
    Y : list of array-like
        Their true labels, one array per sequence or graph.
    bounds : tuple of float, default=(1e-3, 1e3)
        The smallest and the largest temperature tried, both > 0.

    Returns
    -------
    float
        The temperature, for :func:`predict_marginals` or the estimator's own
        ``predict_marginals``.
    """
    from scipy.optimize import minimize_scalar

    low, high = (float(b) for b in bounds)
    if not 0 < low < high < np.inf:
        raise ValueError(f"bounds must be two finite temperatures 0 < low < high, got "
                         f"{bounds!r}.")
    est, Xt = _final_step(model, X)
    check_is_fitted(est, "coef_")
    truth = [np.asarray(y).ravel() for y in Y]
    if len(truth) != len(Xt):
        raise ValueError(f"X and Y have different numbers of examples: {len(Xt)} and "
                         f"{len(truth)}.")
    codes = np.searchsorted(est.classes_, np.concatenate(truth))
    codes = np.clip(codes, 0, len(est.classes_) - 1)
    known = est.classes_[codes] == np.concatenate(truth)  # a label unseen in fit: left out

    def loss(log_t):
        rows = np.concatenate(est.predict_marginals(Xt, temperature=float(np.exp(log_t))))
        picked = rows[np.arange(len(codes)), codes][known]
        return -float(np.mean(np.log(np.maximum(picked, np.finfo(float).tiny))))

    result = minimize_scalar(loss, bounds=(np.log(low), np.log(high)), method="bounded",
                             options={"xatol": 1e-3})
    return float(np.exp(result.x))


def certify_predictions(model, X):
    """Return a fitted graph model's predictions with a certificate of each, also through a
    ``Pipeline``.

    The labelings are those of ``predict``; each comes with its score and an upper bound on the
    best score of its graph (the MAP certificate of spec 004 §2.2: TRW-S's bound, Kolmogorov
    2006, where the oracle is not exact), and a labeling is exact when it meets the bound.
    ``inference="auto"`` decodes exactly on forests, binary submodular models and small
    graphs, and on other loopy models keeps TRW-S's labeling, exact where its bound is met.

    Parameters
    ----------
    model : estimator or Pipeline
        A fitted estimator with a ``GraphCRF`` structure, or a fitted ``Pipeline`` ending in
        one.
    X : list
        The graphs, as ``model`` takes them.

    Returns
    -------
    Bunch
        ``labels`` (list of ndarray, ``predict``'s), ``scores`` (ndarray of shape
        ``(n_samples,)``, their ``<coef_, phi(x, y)>``), ``upper_bounds`` (the bounds on each
        graph's best score; ``inf`` where the oracle gives none) and ``exact`` (ndarray of bool:
        the labeling is a best one).
    """
    est, Xt = _final_step(model, X)
    check_is_fitted(est, "coef_")
    if not isinstance(est.structure_, GraphCRF):
        raise ValueError(f"certify_predictions needs a GraphCRF structure, not "
                         f"{type(est.structure_).__name__} (whose predictions are exact).")
    labels, scores, bounds, exact = est.structure_.decode_with_bounds(Xt, est._dense_coef())
    return Bunch(labels=labels, scores=scores, upper_bounds=bounds, exact=exact)
