"""The cross-validated estimators against GridSearchCV over the same grid and folds."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_ssvm import (BCFWStructuredSVM, BCFWStructuredSVMCV, ChainCRF,
                          SmoothSSVMClassifierCV)
from sklearn_ssvm.metrics import get_scorer


def tagged(rng, n=45, n_features=5, noise=1.5):
    tags = np.array(["B-NP", "I-NP", "O"])
    W = rng.normal(size=(n_features, 3))
    X = [rng.normal(size=(2 + i % 5, n_features)) for i in range(n)]
    Y = [tags[np.argmax(x @ W + noise * rng.normal(size=(x.shape[0], 3)), axis=1)] for x in X]
    return X, Y


@pytest.mark.parametrize("scoring", [None, "chunk_f1"])
def test_bcfw_cv_picks_the_grid_searchs_alpha(scoring):
    """Same grid, folds and scorer: the CV estimator (warm-started along alpha) scores every
    alpha as GridSearchCV's cold fits do (both solved to a gap of 1e-6) and picks its alpha."""
    X, Y = tagged(np.random.default_rng(0))
    alphas = [3.0, 1.0, 0.3, 0.1]
    settings = dict(tol=1e-6, max_iter=2000, step="pairwise", random_state=0)
    cv = BCFWStructuredSVMCV(ChainCRF(), alphas=alphas, cv=KFold(3), scoring=scoring,
                             **settings).fit(X, Y)
    search = GridSearchCV(BCFWStructuredSVM(ChainCRF(), **settings), {"alpha": alphas},
                          cv=KFold(3), scoring=scoring and get_scorer(scoring)).fit(X, Y)
    np.testing.assert_allclose(cv.cv_results_["mean_test_score"],
                               search.cv_results_["mean_test_score"], atol=1e-9)
    assert cv.alpha_ == search.best_params_["alpha"] and cv.best_score_ == pytest.approx(
        search.best_score_)
    assert len(set(np.round(cv.cv_results_["mean_test_score"], 9))) > 1
    np.testing.assert_allclose(cv.coef_, search.best_estimator_.coef_, atol=1e-3)
    assert cv.score(X, Y) == pytest.approx(search.best_estimator_.score(X, Y), abs=1e-9)
    assert cv.primal_objective(X, Y) == pytest.approx(
        search.best_estimator_.primal_objective(X, Y), abs=1e-6)


def test_smooth_cv_over_alphas_and_l1_ratios():
    X, Y = tagged(np.random.default_rng(1))
    est = SmoothSSVMClassifierCV(ChainCRF(), alphas=3, l1_ratios=[0.0, 0.5], cv=3,
                                 max_iter=5, random_state=0, n_jobs=2).fit(X, Y)
    assert est.scores_.shape == (2, 3, 3)
    assert est.cv_results_["param_alpha"].tolist() == [1e-1, 1e-3, 1e-5] * 2
    assert np.all(np.isfinite(est.cv_results_["mean_test_score"]))
    best = np.argmax(est.cv_results_["mean_test_score"])
    assert est.cv_results_["rank_test_score"][best] == 1
    assert (est.alpha_, est.l1_ratio_) == (est.cv_results_["param_alpha"][best],
                                           est.cv_results_["param_l1_ratio"][best])
    assert est.coef_.shape[0] == est.structure_.n_params and len(est.predict(X)) == len(X)
    assert clone(est).get_params()["l1_ratios"] == [0.0, 0.5]


@pytest.mark.parametrize("bad, message", [(dict(alphas=0), "alphas must be >= 1"),
                                          (dict(alphas=[0.1, -1.0]), "finite numbers > 0"),
                                          (dict(l1_ratios=[1.0]), r"l1_ratios must be .*\[0, 1\)")])
def test_cv_errors(bad, message):
    X, Y = tagged(np.random.default_rng(2), n=9)
    with pytest.raises(ValueError, match=message):
        BCFWStructuredSVMCV(ChainCRF(), cv=3, max_iter=2, **bad).fit(X, Y)
