"""Binary linear SVM as a structure: ``phi(x, y) = y x / 2`` with ``y in {-1, +1}``."""
from sklearn.utils import ClassifierTags

from .._kernels.labelings import BINARY
from .multiclass import MulticlassSVM


class BinarySVM(MulticlassSVM):
    """Binary classification with the 0-1 loss (spec 002 §10.1).

    With ``phi(x, y) = y x / 2`` the structured hinge is ``max(0, 1 - y <w, x>)``, so the
    structured SVM with regularisation ``alpha`` is the L2-regularised hinge-loss SVM with
    ``C = 1 / (alpha n)`` and no intercept (add a constant feature for one). ``coef`` is the
    usual weight vector: ``decision = X @ coef``.

    Parameters
    ----------
    labels : array-like or None, default=None
        The two classes. None learns them from the training labels; declare them when a
        training set (a cross-validation fold) may lack a class. A class outside a declared set
        is an error in fit; ``score`` counts a class never seen in fit as a wrong prediction.

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
        """Return the decision values ``X @ coef``: positive for ``classes_[1]``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Examples, one feature vector per row.
        coef : array-like of shape (n_features,)
            Weight vector.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``X @ coef``.
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
