"""Intercepts of the flat structures (liblinear's constant feature), ``pairwise="auto"``, the
scale-free ``alpha=None`` of multi-label data, and labels of mixed types."""
import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from sklearn_ssvm import (BCFWStructuredSVM, BinarySVM, BMRMStructuredSVM, ChainCRF, GraphCRF,
                          MulticlassSVM, MultiLabel, PragamSVC,
                          SmoothSSVMClassifier)
from sklearn_ssvm.structures import grid_graph


def offset_binary(rng, n=80, n_features=4, offset=1.0):
    X = rng.normal(size=(n, n_features))
    y = np.where(X @ rng.normal(size=n_features) + offset + 0.5 * rng.normal(size=n) > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("make", [
    lambda s: BMRMStructuredSVM(s, alpha=0.05, tol=1e-7, max_iter=500),
    lambda s: SmoothSSVMClassifier(s, solver="agm", smoothing="entropy", top_k=None,
                                   alpha=0.05, tol=1e-7, max_iter=3000),
], ids=["bmrm", "agm"])
def test_every_solver_fits_liblinears_intercept(make):
    """Every solver's certificate bounds its distance to liblinear's solution, intercept
    included: ``||w - w*|| <= sqrt(2 gap / alpha)`` (the objective is alpha-strongly convex)."""
    X, y = offset_binary(np.random.default_rng(3))
    alpha, scaling = 0.05, 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make(BinarySVM(intercept_scaling=scaling)).fit(X, y)
    svc = LinearSVC(loss="hinge", C=1 / (alpha * len(y)), intercept_scaling=scaling,
                    tol=1e-10, max_iter=1000000).fit(X, y)
    w_star = np.append(svc.coef_.ravel(), svc.intercept_[0] / scaling)
    assert np.isfinite(est.duality_gap_) and est.duality_gap_ < 1e-3
    radius = np.sqrt(2 * est.duality_gap_ / alpha) + 1e-4  # (liblinear's own tolerance)
    assert np.linalg.norm(est.coef_ - w_star) <= radius
    assert abs(est.intercept_[0] - svc.intercept_[0]) <= scaling * radius
    assert abs(svc.intercept_[0]) > 0.3  # the data need one


def test_multilabel_intercepts_are_the_constant_features_weights():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    Y = (X[:, :2] + np.array([1.5, -1.5]) + rng.normal(size=(50, 2)) > 0).astype(int)
    est = BCFWStructuredSVM(MultiLabel(pairwise=None, intercept_scaling=2.0), alpha=0.01,
                            random_state=0).fit(X, Y)
    W = est.coef_.reshape(4, 2)
    np.testing.assert_allclose(est.intercept_, 2.0 * W[-1])
    np.testing.assert_allclose(est.decision_function(X), X @ W[:3] + est.intercept_)
    assert est.intercept_[0] > 0 > est.intercept_[1]  # the labels' base rates


def test_standardised_features_keep_the_labels_base_rates():
    """Without an intercept an independent-labels model of centred features cannot say that a
    label is rarely on, and predicts it far more often than it is."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5))
    Y = (X[:, :3] + np.array([-1.5, -1.5, -1.5]) + rng.normal(size=(300, 3)) > 0).astype(int)
    rates, errors = {}, {}
    for fit_intercept in (False, True):
        model = make_pipeline(StandardScaler(), BCFWStructuredSVM(
            MultiLabel(pairwise=None, fit_intercept=fit_intercept), random_state=0))
        P = model.fit(X, Y).predict(X)
        rates[fit_intercept], errors[fit_intercept] = P.mean(), np.mean(P != Y)
    assert Y.mean() < 0.2 and rates[True] < 0.2 < 0.3 < rates[False]
    assert errors[True] < 0.5 * errors[False]


def test_fit_intercept_false_is_the_model_through_the_origin():
    X, y = offset_binary(np.random.default_rng(4))
    est = BCFWStructuredSVM(BinarySVM(fit_intercept=False), alpha=0.05, tol=1e-8,
                            random_state=0).fit(X, y)
    assert est.coef_.shape == (4,) and est.intercept_.tolist() == [0.0]
    np.testing.assert_allclose(est.decision_function(X), X @ est.coef_)


@pytest.mark.parametrize("params, message", [
    (dict(fit_intercept="yes"), "'fit_intercept' parameter"),
    (dict(fit_intercept=None), "'fit_intercept' parameter"),
    (dict(intercept_scaling=0.0), "'intercept_scaling' parameter"),
    (dict(intercept_scaling=-1), "'intercept_scaling' parameter"),
    (dict(intercept_scaling=np.nan), "'intercept_scaling' parameter"),
    (dict(intercept_scaling=np.inf), "'intercept_scaling' parameter"),
    (dict(intercept_scaling="1"), "'intercept_scaling' parameter"),
])
@pytest.mark.parametrize("structure", [BinarySVM, MulticlassSVM, MultiLabel])
def test_intercept_parameters_are_validated(structure, params, message):
    X, y = offset_binary(np.random.default_rng(5), n=10)
    Y = np.column_stack([y > 0, y < 0]).astype(int) if structure is MultiLabel else y
    with pytest.raises(ValueError, match=message):
        BCFWStructuredSVM(structure(**params), max_iter=2).fit(X, Y)


def test_structures_without_intercepts_have_no_attribute():
    X = [np.random.default_rng(0).normal(size=(3, 2)) for _ in range(4)]
    Y = [np.array([0, 1, 0]), np.array([1, 1, 0]), np.array([0, 0, 1]), np.array([1, 0, 1])]
    est = BCFWStructuredSVM(ChainCRF(), max_iter=2)
    assert not hasattr(est, "intercept_")  # not fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, Y)
    assert not hasattr(est, "intercept_")
    with pytest.raises(AttributeError, match="ChainCRF has no intercept_"):
        est.intercept_


@pytest.mark.parametrize("n_labels, graph", [(1, "full"), (6, "full"), (8, "full"),
                                             (9, "tree")])
def test_auto_label_graph(n_labels, graph):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 3))
    Y = rng.integers(0, 2, size=(30, n_labels))
    structure = MultiLabel()
    structure.prepare(X, Y)
    assert structure.pairwise_ == graph
    n_edges = n_labels * (n_labels - 1) // 2 if graph == "full" else n_labels - 1
    assert structure.edges_.shape == (n_edges, 2)


def test_multilabel_default_alpha_follows_the_feature_scale():
    """``alpha=None`` is ``1e-3 R^2`` per unit of the largest loss: features scaled by ``s``
    scale it by ``s^2``, so the fitted scores are the same."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4))
    Y = (X[:, :3] + rng.normal(size=(40, 3)) > 0).astype(int)
    structure = MultiLabel(fit_intercept=False)
    alpha = structure.prepare(X, Y).default_alpha()
    assert alpha == pytest.approx(1e-3 * np.mean(np.sum(X ** 2, axis=1)))
    assert structure.prepare(10 * X, Y).default_alpha() == pytest.approx(100 * alpha)
    fits = [BCFWStructuredSVM(MultiLabel(fit_intercept=False), random_state=0).fit(s * X, Y)
            for s in (1.0, 10.0)]
    assert fits[1].alpha_ == pytest.approx(100 * fits[0].alpha_)
    # one objective (P(w / 10) on 10 X at 100 alpha is P(w)): the same within the gaps
    assert abs(fits[1].primal_objective_ - fits[0].primal_objective_) <= \
        fits[0].duality_gap_ + fits[1].duality_gap_


@pytest.mark.parametrize("fit", [
    lambda y: PragamSVC().fit(np.eye(4), y),
    lambda y: BCFWStructuredSVM(MulticlassSVM(), max_iter=2).fit(np.eye(4), y),
    lambda y: BCFWStructuredSVM(BinarySVM(), max_iter=2).fit(np.eye(4), y),
    lambda y: BCFWStructuredSVM(ChainCRF(), max_iter=2).fit([np.eye(2)] * 2, [y[:2], y[2:]]),
    lambda y: BCFWStructuredSVM(GraphCRF(), max_iter=2).fit(
        [grid_graph(np.ones((2, 2, 2)))], [y]),
], ids=["PragamSVC", "multiclass", "binary", "chain", "graph"])
@pytest.mark.parametrize("y", [[1, 1, "a", "a"], np.array([1, "a", 1, "a"], dtype=object)],
                         ids=["list", "object-array"])
def test_mixed_label_types_are_refused_in_scikit_learns_words(fit, y):
    with pytest.raises(ValueError, match=r"Mix of label input types \(string and number\)"):
        fit(y)


def test_mixed_declared_labels_are_refused():
    with pytest.raises(ValueError, match=r"Mix of label input types .* labels holds"):
        BCFWStructuredSVM(MulticlassSVM(labels=[0, "a"]), max_iter=2).fit(np.eye(4),
                                                                         [0, 0, 0, 0])
