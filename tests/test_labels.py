"""Label sets: declared ``labels``, and labels unseen in fit scored as errors (cross-validation
folds that lack a label)."""
import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_ssvm import BCFWStructuredSVM, BinarySVM, ChainCRF, MulticlassSVM
from sklearn_ssvm.datasets import load_ocr_letters, split_folds


def rare_label_sequences(rng, n=30, n_features=4):
    """Chains over labels a, b, c and a rare label r that only the first 3 sequences have, so
    the first of 3 unshuffled folds holds every r."""
    W = rng.normal(size=(n_features, 3))
    X, Y = [], []
    for i in range(n):
        x = rng.normal(size=(3 + i % 3, n_features))
        y = np.array(["a", "b", "c"])[np.argmax(x @ W, axis=1)].astype(object)
        if i < 3:
            y[0] = "r"
        X.append(x)
        Y.append(y)
    return X, Y


@pytest.mark.parametrize("labels", [None, ["a", "b", "c", "r"]])
def test_grid_search_on_folds_that_lack_a_label(labels):
    """Every fold's score is finite: a label the fold's fit never saw is a wrong prediction;
    with declared labels every fold's model has the whole label set."""
    X, Y = rare_label_sequences(np.random.default_rng(0))
    est = BCFWStructuredSVM(ChainCRF(labels=labels), max_iter=10, random_state=0)
    search = GridSearchCV(est, {"alpha": [1e-3, 1e-2, 1e-1, 10.0]}, cv=KFold(3),
                          return_train_score=True).fit(X, Y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores <= 1)
    assert len(set(np.round(scores, 12))) > 1  # the alphas are told apart
    first = search.cv_results_["split0_test_score"]  # the fold with every r
    r_share = np.mean([np.mean(y == "r") for y in Y[:10]])
    if labels is None:
        assert np.all(first <= 1 - r_share + 1e-12)  # each r is an error
    assert search.best_estimator_.structure_.classes_.tolist() == ["a", "b", "c", "r"]
    fold = BCFWStructuredSVM(ChainCRF(labels=labels), alpha=0.01, max_iter=5,
                             random_state=0).fit(X[10:], Y[10:])
    assert fold.structure_.classes_.tolist() == (["a", "b", "c"] if labels is None
                                                 else ["a", "b", "c", "r"])


def test_readme_grid_search_on_ocr_gives_finite_scores():
    """The README's example: 600 OCR words, 3 folds, some letters missing from a fold's
    training part."""
    X_train, _, Y_train, _ = split_folds(load_ocr_letters(), test_fold=0)
    search = GridSearchCV(BCFWStructuredSVM(ChainCRF(), max_iter=30),
                          {"alpha": [1e-3, 1e-2, 1e-1]}, cv=3).fit(X_train[:600], Y_train[:600])
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and 0.5 < scores.max() < 1
    assert scores.max() - scores.min() > 0.01
    assert search.best_params_["alpha"] == [1e-3, 1e-2, 1e-1][int(np.argmax(scores))]


def test_declared_labels_are_checked():
    X, Y = rare_label_sequences(np.random.default_rng(1))
    with pytest.raises(ValueError, match="label 'r', which is not in labels="):
        BCFWStructuredSVM(ChainCRF(labels=["a", "b", "c"]), max_iter=2).fit(X, Y)
    with pytest.raises(ValueError, match="repeated"):
        BCFWStructuredSVM(ChainCRF(labels=["a", "a", "b", "c", "r"]), max_iter=2).fit(X, Y)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        BCFWStructuredSVM(ChainCRF(labels=[]), max_iter=2).fit(X, Y)
    rng = np.random.default_rng(2)
    Xf, yf = rng.normal(size=(20, 3)), np.arange(20) % 2
    est = BCFWStructuredSVM(MulticlassSVM(labels=[0, 1, 2]), max_iter=3).fit(Xf, yf)
    assert est.structure_.classes_.tolist() == [0, 1, 2]
    assert est.coef_.shape == ((3 + 1) * 3,)  # three features and the constant, 3 classes
    with pytest.raises(ValueError, match="exactly 2 classes"):
        BCFWStructuredSVM(BinarySVM(labels=[0, 1, 2]), max_iter=3).fit(Xf, yf)
    est = BCFWStructuredSVM(BinarySVM(labels=[-1, 1]), max_iter=3).fit(Xf, 2 * yf - 1)
    assert est.structure_.classes_.tolist() == [-1, 1]
    assert est.score(Xf, np.where(yf == 1, 1, 5)) <= 0.5 + 1e-12  # 5 is always wrong


def test_default_alpha():
    """alpha=None is scale-free: on chains max(0.01, 4.5e-5 T^2) per unit of the loss scale
    (the same model with either loss), multi-label data 1e-3 R^2 per unit (R^2 the mean
    squared norm of an example's features, the constant one included), 1/n otherwise; every
    estimator of the objective takes the same."""
    from sklearn_ssvm import BMRMStructuredSVM, MultiLabel, SmoothSSVMClassifier

    X, Y = rare_label_sequences(np.random.default_rng(3))
    T = np.mean([len(y) for y in Y])
    per_unit = max(0.01, 4.5e-5 * T ** 2)
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), max_iter=2).fit(X, Y)
    assert est.alpha_ == pytest.approx(per_unit)
    est = BCFWStructuredSVM(ChainCRF(), max_iter=2).fit(X, Y)
    assert est.loss_scale_ == pytest.approx(T) and est.alpha_ == pytest.approx(per_unit / T)
    assert SmoothSSVMClassifier(ChainCRF(), max_iter=2).fit(X, Y).alpha_ == est.alpha_
    assert BMRMStructuredSVM(ChainCRF(), max_iter=2).fit(X, Y).alpha_ == est.alpha_
    long = [np.tile(x, (8, 1)) for x in X]  # sentences of over 15 tokens: 4.5e-5 per token
    est = BCFWStructuredSVM(ChainCRF(), max_iter=2).fit(long, [np.tile(y, 8) for y in Y])
    assert est.alpha_ == pytest.approx(4.5e-5 * 8 * T)
    rng = np.random.default_rng(4)
    Xf = rng.normal(size=(25, 3))
    assert BCFWStructuredSVM(MulticlassSVM(), max_iter=2).fit(Xf, np.arange(25) % 3).alpha_ \
        == 1 / 25
    assert BCFWStructuredSVM(MultiLabel(), max_iter=2).fit(
        Xf, rng.integers(0, 2, size=(25, 4))).alpha_ == pytest.approx(
            1e-3 * (np.mean(np.sum(Xf ** 2, axis=1)) + 1))