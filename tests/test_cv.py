"""The cross-validated estimators against GridSearchCV over the same grid and folds."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_ssvm import (BCFWStructuredSVM, BCFWStructuredSVMCV, BMRMStructuredSVM,
                          BMRMStructuredSVMCV, ChainCRF, SmoothSSVMClassifierCV)
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
                             n_alphas_no_change=None, **settings).fit(X, Y)
    search = GridSearchCV(BCFWStructuredSVM(ChainCRF(), **settings), {"alpha": alphas},
                          cv=KFold(3), scoring=scoring and get_scorer(scoring)).fit(X, Y)
    np.testing.assert_allclose(cv.cv_results_["mean_test_score"],
                               search.cv_results_["mean_test_score"], atol=1e-9)
    assert cv.alpha_ == search.best_params_["alpha"] and cv.best_score_ == pytest.approx(
        search.best_score_)
    assert len(set(np.round(cv.cv_results_["mean_test_score"], 9))) > 1
    np.testing.assert_allclose(cv.coef_, search.best_estimator_.coef_, atol=1e-3)
    assert cv.score(X, Y) == pytest.approx(search.best_estimator_.score(X, Y), abs=1e-9)
    # the refit (warm-started from a fold's blocks) and the cold fit solve one problem: their
    # objectives agree within the sum of their certified gaps
    assert abs(cv.primal_objective(X, Y) - search.best_estimator_.primal_objective(X, Y)) \
        <= cv.duality_gap_ + search.best_estimator_.duality_gap_


def test_bmrm_cv_picks_the_grid_searchs_alpha():
    """BMRM's CV estimator: each fold's cutting planes carry over along the grid (they bound
    the fold's risk at every alpha); its scores are GridSearchCV's cold fits', and it has no
    l1_ratios (BMRM solves the L2 penalty only)."""
    X, Y = tagged(np.random.default_rng(1))
    alphas = [3.0, 1.0, 0.3, 0.1]
    cv = BMRMStructuredSVMCV(ChainCRF(), alphas=alphas, cv=KFold(3), tol=1e-8,
                             n_alphas_no_change=None).fit(X, Y)
    search = GridSearchCV(BMRMStructuredSVM(ChainCRF(), tol=1e-8), {"alpha": alphas},
                          cv=KFold(3)).fit(X, Y)
    np.testing.assert_allclose(cv.cv_results_["mean_test_score"],
                               search.cv_results_["mean_test_score"], atol=1e-9)
    assert len(set(np.round(cv.cv_results_["mean_test_score"], 9))) > 1
    assert cv.alpha_ == search.best_params_["alpha"] and cv.l1_ratio_ == 0.0
    assert abs(cv.primal_objective_ - search.best_estimator_.primal_objective_) <= \
        cv.duality_gap_ + search.best_estimator_.duality_gap_
    assert "l1_ratios" not in cv.get_params() and "l1_ratios :" not in cv.__doc__


class _HeavierL2(BMRMStructuredSVM):  # no docstring: the CV factory reads the parent's
    def _penalty(self, alpha, problem):
        from sklearn_ssvm.penalties import ElasticNet
        return ElasticNet.from_alpha(3.0 * alpha, 0.0)


def test_cv_estimator_of_a_subclass_keeps_its_penalty():
    """The CV estimator of an estimator subclassed outside the package with its own penalty
    (issue 48): built without a docstring of its own, and its objectives are the subclass's
    penalty's, not an elastic net rebuilt at ``l1_ratio_``."""
    from sklearn_ssvm.model_selection import cross_validated

    X, Y = tagged(np.random.default_rng(4), n=24)
    cv = cross_validated(_HeavierL2)(ChainCRF(), alphas=[1.0, 0.3], cv=KFold(2),
                                      tol=1e-8).fit(X, Y)
    plain = _HeavierL2(ChainCRF(), alpha=cv.alpha_, tol=1e-8).fit(X, Y)
    assert abs(cv.primal_objective(X, Y) - plain.primal_objective(X, Y)) <= \
        cv.duality_gap_ + plain.duality_gap_
    coef = cv.coef_
    assert cv.primal_objective(X, Y) == pytest.approx(
        1.5 * cv.alpha_ * coef @ coef + cv.primal_objective(X, Y, alpha=1e-300), rel=1e-9)


def test_smooth_cv_over_alphas_and_l1_ratios():
    X, Y = tagged(np.random.default_rng(1))
    est = SmoothSSVMClassifierCV(ChainCRF(), alphas=3, l1_ratios=[0.0, 0.5], cv=3,
                                 max_iter=5, random_state=0, n_jobs=2).fit(X, Y)
    assert est.scores_.shape == (2, 3, 3)
    rule = ChainCRF().prepare(X, Y).default_alpha()  # the grid is centred on alpha=None's
    np.testing.assert_allclose(est.cv_results_["param_alpha"], [2 * rule, rule, rule / 2] * 2)
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


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # not the point
def test_walk_stops_where_the_score_turns_down_and_matches_the_full_grid():
    """The walk from the grid point nearest alpha=None fits a subset of the grid: down while
    the mean score improves, up when it did not; its scores equal the full grid's on the alphas
    it fits (the same warm starts along each direction), NaN elsewhere, and it picks the best
    of those."""
    X, Y = tagged(np.random.default_rng(3), n=60)
    settings = dict(cv=KFold(3), tol=1e-4, max_iter=500, random_state=0)
    rule = ChainCRF().prepare(X, Y).default_alpha()
    alphas = rule * 4.0 ** np.arange(4, -5, -1)  # descending, alpha=None in the middle
    full = BCFWStructuredSVMCV(ChainCRF(), alphas=alphas, n_alphas_no_change=None,
                               **settings).fit(X, Y)
    walk = BCFWStructuredSVMCV(ChainCRF(), alphas=alphas, **settings).fit(X, Y)
    fitted = ~np.isnan(walk.cv_results_["mean_test_score"])
    assert fitted[4] and 2 <= fitted.sum() < len(alphas)  # the start, and not the whole grid
    np.testing.assert_allclose(walk.cv_results_["mean_test_score"][fitted],
                               full.cv_results_["mean_test_score"][fitted], atol=1e-6)
    mean = walk.cv_results_["mean_test_score"]
    assert walk.alpha_ == alphas[np.nanargmax(mean)]
    assert walk.cv_results_["rank_test_score"][np.nanargmax(mean)] == 1
    assert np.all(walk.cv_results_["rank_test_score"][~fitted] > fitted.sum())
    # a contiguous stretch of the grid around its best: the score turned down on both sides
    # (or the grid ended)
    lo, hi = np.flatnonzero(fitted)[[0, -1]]
    best = int(np.nanargmax(mean))
    assert fitted[lo:hi + 1].all()
    assert (lo < best or lo == 0) and (best < hi or hi == len(alphas) - 1)


def test_folds_and_refit_start_from_a_fits_dual_blocks():
    """transfer_blocks moves a fit's dual point to other examples: a feasible point (every
    block a distribution, the state its atoms' own), the examples the fit did not train on at
    their true labeling; a fit started there reaches the cold fit's certified optimum."""
    from sklearn_ssvm.solvers.bcfw import transfer_blocks, weights

    X, Y = tagged(np.random.default_rng(4), n=40)
    structure = ChainCRF()
    problem = structure.prepare(X, Y)
    source, target = np.arange(0, 30), np.arange(5, 40)
    fold = BCFWStructuredSVM(ChainCRF(), alpha=0.05, tol=1e-4, max_iter=2000, warm_start=True,
                             random_state=0)
    fold._fit_prepared(structure, problem.subset(source), None, None)
    state, atoms = transfer_blocks(problem, source, fold.dual_state_, fold.active_sets_, target)
    sub = problem.subset(target)
    np.testing.assert_allclose(atoms.weights.sum(axis=1), 1.0)
    new = np.flatnonzero(target >= 30)  # the examples the fold did not train on: their truth
    assert np.all(atoms.count[new] == 1) and np.all(atoms.weights[new, 0] == 1.0)
    assert np.all(state.ell_blocks[new] == 0.0)
    # the shared examples keep their blocks; their loss shares follow the new n
    shared = np.flatnonzero(target < 30)
    np.testing.assert_allclose(state.ell_blocks[shared],
                               fold.dual_state_.ell_blocks[shared + 5] * 30 / 35)
    full, _ = transfer_blocks(problem, source, fold.dual_state_, fold.active_sets_)
    np.testing.assert_allclose(weights(problem, full, 0.05) * 40,
                               weights(problem.subset(source), fold.dual_state_, 0.05) * 30,
                               atol=1e-12)  # the same blocks, a mean over 40 examples
    cold = BCFWStructuredSVM(ChainCRF(), alpha=0.05, tol=1e-4, max_iter=2000,
                             random_state=0).fit([X[i] for i in target], [Y[i] for i in target])
    warm = BCFWStructuredSVM(ChainCRF(), alpha=0.05, tol=1e-4, max_iter=2000, random_state=0)
    warm._fit_prepared(structure, sub, None, None, previous=fold._warm_start_from(
        fold, source, problem, target, sub))
    assert warm.converged_ and cold.converged_
    assert abs(warm.primal_objective_ - cold.primal_objective_) <= \
        warm.duality_gap_ + cold.duality_gap_
    # it starts closer: after a few passes its gap is well below the cold start's
    short = dict(alpha=0.05, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cold = BCFWStructuredSVM(ChainCRF(), **short).fit([X[i] for i in target],
                                                           [Y[i] for i in target])
        warm = BCFWStructuredSVM(ChainCRF(), **short)
        warm._fit_prepared(structure, sub, None, None, previous=fold._warm_start_from(
            fold, source, problem, target, sub))
    assert warm.duality_gap_ < 0.5 * cold.duality_gap_
