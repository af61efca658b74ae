"""Binary linear SVM as a structure: ``phi(x, y) = y x / 2`` with ``y in {-1, +1}``."""
from sklearn.utils import ClassifierTags

from .._kernels.labelings import BINARY
from .multiclass import MulticlassSVM


class BinarySVM(MulticlassSVM):
    """Binary classification with the 0-1 loss (spec 002 §10.1).

    With ``phi(x, y) = y x / 2`` the structured hinge is ``max(0, 1 - y (<w, x> + b))``, so
    the structured SVM with regularisation ``alpha`` is the L2-regularised hinge-loss SVM with
    ``C = 1 / (alpha n)``: liblinear's ``LinearSVC(loss="hinge", C=1 / (alpha n))``, the
    intercept ``b`` included as liblinear fits it (penalised, through a constant feature
    ``intercept_scaling``). ``coef`` is the usual weight vector followed by the constant
    feature's weight: ``decision = X @ coef[:-1] + intercept_scaling * coef[-1]``, or
    ``X @ coef`` with ``fit_intercept=False``.

    Parameters
    ----------
    labels : array-like or None, default=None
        The two classes. None learns them from the training labels; declare them when a
        training set (a cross-validation fold) may lack a class. A class outside a declared set
        is an error in fit; ``score`` counts a class never seen in fit as a wrong prediction.
    fit_intercept : bool, default=True
        Fit the intercept ``b`` (the estimators' ``intercept_``). False: no intercept.
    intercept_scaling : float, default=1.0
        The constant feature's value, > 0: a larger one penalises the intercept less, as
        scikit-learn's ``LinearSVC`` has it.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class (``y = +1``).
    n_features_in_ : int
        Number of features.
    """

    _kind = BINARY
    _n_codes = 1

    def decision_function(self, X, coef):
        """Return the decision values ``<w, x> + b``: positive for ``classes_[1]``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Examples, one feature vector per row.
        coef : array-like of shape (n_params,)
            Weight vector, then the constant feature's weight with ``fit_intercept``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``<w, x> + b``.
        """
        return super().decision_function(X, coef).ravel()

    def _check_classes(self, classes):
        if len(classes) > 2:  # scikit-learn's words for a binary-only classifier first
            raise ValueError(f"Only binary classification is supported. The type of the target "
                             f"is multiclass: BinarySVM needs exactly 2 classes in y, got "
                             f"{len(classes)}: {list(classes)[:10]}.")
        if len(classes) < 2:
            raise ValueError(f"BinarySVM needs exactly 2 classes in y, got 1 class: "
                             f"{list(classes)}.")

    def _estimator_tags(self, tags):
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags(multi_class=False)
        return tags
