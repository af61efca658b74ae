"""Crammer-Singer multi-class SVM as a structure: ``phi(x, y) = x (x) e_y``."""
import numpy as np
from sklearn.utils.validation import column_or_1d

from .._kernels.labelings import MULTICLASS
from .base import FlatStructure, check_label_types, unique_labels


class MulticlassSVM(FlatStructure):
    """Multi-class classification, one weight vector per class, 0-1 loss (Crammer-Singer).

    The multiclass hinge of Crammer & Singer (2001, JMLR), as a structure of Osokin et al. (2016).

    The oracle is ``argmax_k [k != y] + <w_k, x> + b_k``. ``coef`` is laid out feature-major:
    ``coef.reshape(n_features + 1, n_classes)[:, k]`` is the weight vector of class ``k``, its
    last entry the weight of the constant feature (``coef.reshape(n_features, n_classes)``
    with ``fit_intercept=False``).

    Parameters
    ----------
    labels : array-like or None, default=None
        The classes. None learns them from the training labels; declare them when a training
        set (a cross-validation fold) may lack a class. A class outside a declared set is an
        error in fit; ``score`` counts a class never seen in fit as a wrong prediction.
    fit_intercept : bool, default=True
        Fit an intercept ``b_k`` per class, as liblinear does: a constant feature
        ``intercept_scaling`` appended to every example, its weight penalised with the others
        (the estimators' ``intercept_``). False: scores ``<w_k, x>`` through the origin.
    intercept_scaling : float, default=1.0
        The constant feature's value, > 0: a larger one penalises the intercept less
        (``b_k = intercept_scaling * w_k[-1]``), as scikit-learn's ``LinearSVC`` has it.

    Attributes
    ----------
    classes_ : ndarray
        The classes, sorted: ``labels``, or the classes seen in fit.
    n_features_in_ : int
        Number of features.
    """

    _kind = MULTICLASS

    def __init__(self, labels=None, fit_intercept=True, intercept_scaling=1.0):
        self.labels = labels
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling

    @property
    def _n_codes(self):
        return len(self.classes_)

    def _check_classes(self, classes):
        if len(classes) < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes in y, got "
                             f"{len(classes)} class: {classes.tolist()}.")

    def _fit_labels(self, Y):
        check_label_types([Y], "y", item=None)
        Y = np.asarray(Y)
        if Y.ndim == 2 and Y.shape[1] == 1:  # a column: scikit-learn's warning, then 1-D
            Y = column_or_1d(Y, warn=True)
        if Y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {Y.shape}.")
        fractional = (np.flatnonzero(np.isfinite(Y) & (Y != np.round(Y)))
                      if Y.dtype.kind == "f" else [])  # (NaN: the label checks name it)
        if len(fractional):
            raise ValueError(f"Unknown label type: continuous. {type(self).__name__} takes "
                             f"classes (integers, strings, ...), not real-valued targets such "
                             f"as {Y[fractional[0]]!r} (example {fractional[0]}).")
        classes = self._label_set(unique_labels(Y))
        self._check_classes(classes)
        self.classes_ = classes

    def _encode_labels(self, Y, lengths):
        offsets = np.arange(len(lengths) + 1, dtype=np.int64)
        if Y is None:
            return np.zeros(len(lengths), dtype=np.int32), offsets
        Y = np.asarray(Y)
        if Y.ndim == 2 and Y.shape[1] == 1:
            Y = Y.ravel()
        if Y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {Y.shape}.")
        idx = np.clip(np.searchsorted(self.classes_, Y), 0, len(self.classes_) - 1)
        bad = np.flatnonzero(self.classes_[idx] != Y)
        if len(bad):
            self._encode_values(Y[bad[:1]], int(bad[0]))  # raises, naming the example
        return idx.astype(np.int32), offsets

    prediction_scorer = FlatStructure._label_space_scorer

    def decision_function(self, X, coef):
        """Return the class scores ``X @ W + b``, shape ``(n_samples, n_classes)``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Examples, one feature vector per row.
        coef : array-like of shape (n_params,)
            Parameter vector, ``coef.reshape(-1, n_classes)`` being ``W`` (its last row the
            constant feature's weights with ``fit_intercept``).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Score ``<w_k, x> + b_k`` of each class for each example, columns in ``classes_``
            order.
        """
        problem = self.pack(X)
        W, _ = problem.split_coef(np.asarray(coef, float))
        return np.asarray(problem.token_matrix() @ W)

    def _encode_one(self, y):
        return self._encode_values(np.asarray(y).reshape(1), 0)

    def _decode_labels(self, y, offsets):
        return self.classes_[y]
