"""sample_weight in the structured estimators: the weighted mean loss, checked against the same
examples repeated (integer weights) and against the solvers' own certificates."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssvm import (BCFWStructuredSVM, BMRMStructuredSVM, ChainCRF, MulticlassSVM,
                          SmoothSSVMClassifier)

ALPHA = 0.1


def chains(seed=0, n=12):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(2, 6)), 4)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)) for x in X]
    return X, Y, rng.integers(0, 4, n)


def repeated(X, Y, w):
    return ([x for x, k in zip(X, w) for _ in range(k)],
            [y for y, k in zip(Y, w) for _ in range(k)])


def optimum(X, Y, w=None):
    """The weighted objective's minimum, certified by BMRM to 1e-10."""
    est = BMRMStructuredSVM(ChainCRF(), alpha=ALPHA, tol=1e-10, max_iter=1000)
    est.fit(X, Y, sample_weight=w)
    assert est.converged_
    return est


@pytest.mark.parametrize("step", ["fw", "pairwise", "away"])
def test_bcfw_certificate_brackets_the_weighted_optimum(step):
    X, Y, w = chains()
    best = optimum(*repeated(X, Y, w)).primal_objective_  # the same data, repeated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = BCFWStructuredSVM(ChainCRF(), alpha=ALPHA, tol=1e-6, max_iter=1000, step=step,
                                random_state=0).fit(X, Y, sample_weight=w)
    # the certificate is the weighted objective's: recomputed independently, and its gap
    # brackets the optimum of the repeated data
    assert est.primal_objective_ == pytest.approx(
        est.primal_objective(X, Y, sample_weight=w), abs=1e-12)
    assert est.dual_objective_ - 1e-9 <= best <= est.primal_objective_ + 1e-9
    # (weights spread the blocks' curvatures: slower than unweighted, plain FW sublinear)
    assert est.duality_gap_ < (0.02 if step == "fw" else 5e-3)
    # an unweighted fit is far from it: the test sees weights that are ignored
    plain = optimum(X, Y)
    assert plain.primal_objective(X, Y, sample_weight=w) - best > 0.05


def test_bmrm_weighted_equals_repeated():
    X, Y, w = chains(1)
    weighted = optimum(X, Y, w)
    rep = optimum(*repeated(X, Y, w))
    np.testing.assert_allclose(weighted.coef_, rep.coef_, atol=1e-6)
    assert weighted.primal_objective_ == pytest.approx(rep.primal_objective_, abs=1e-9)


def test_casimir_svrg_reaches_the_weighted_optimum():
    X, Y, w = chains(2)
    best = optimum(X, Y, w).primal_objective_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = SmoothSSVMClassifier(ChainCRF(), alpha=ALPHA, solver="casimir-svrg",
                                   max_iter=100, tol=0, random_state=0).fit(X, Y,
                                                                            sample_weight=w)
    plain = optimum(X, Y).primal_objective(X, Y, sample_weight=w)
    assert est.primal_objective(X, Y, sample_weight=w) - best < 0.2 * (plain - best)


@pytest.mark.parametrize("make", [
    lambda: BCFWStructuredSVM(ChainCRF(), alpha=ALPHA, max_iter=20, random_state=0),
    lambda: BCFWStructuredSVM(ChainCRF(), alpha=ALPHA, max_iter=20, step="pairwise",
                              random_state=0),
    lambda: SmoothSSVMClassifier(ChainCRF(), alpha=ALPHA, solver="svrg", max_iter=5,
                                 random_state=0),
    lambda: SmoothSSVMClassifier(ChainCRF(), alpha=ALPHA, solver="sgd", max_iter=5,
                                 random_state=0),
])
def test_unit_weights_change_nothing_zero_weights_drop(make):
    X, Y, w = chains(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = make().fit(X, Y)
        ones = make().fit(X, Y, sample_weight=np.ones(len(X)))
        np.testing.assert_array_equal(plain.coef_, ones.coef_)
        # a zero weight drops the example; scaling all weights changes nothing
        w = w.astype(float)
        keep = w > 0
        dropped = make().fit(X, Y, sample_weight=w)
        kept = make().fit([x for x, k in zip(X, keep) if k], [y for y, k in zip(Y, keep) if k],
                          sample_weight=w[keep])
        scaled = make().fit(X, Y, sample_weight=3.5 * w)
    assert not keep.all()
    np.testing.assert_array_equal(dropped.coef_, kept.coef_)
    np.testing.assert_allclose(scaled.coef_, dropped.coef_, rtol=1e-9, atol=1e-12)


def test_flat_examples_take_weights():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3))
    y = rng.integers(0, 3, 30)
    w = rng.integers(0, 3, 30)
    make = lambda: BMRMStructuredSVM(MulticlassSVM(), alpha=ALPHA, tol=1e-10, max_iter=1000)
    weighted = make().fit(X, y, sample_weight=w)
    rep = make().fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(weighted.coef_, rep.coef_, atol=1e-6)


@pytest.mark.parametrize("weights, message", [
    (np.ones(3), r"shape \(3,\); expected \(12,\)"),
    (-np.ones(12), "finite and non-negative; example 0"),
    (np.r_[np.ones(11), np.nan], "example 11 has nan"),
    (np.zeros(12), "no positive weight .all are zero"),
    (["a"] * 12, "numbers, one per example"),
])
def test_bad_weights_are_refused(weights, message):
    X, Y, _ = chains()
    with pytest.raises(ValueError, match=message):
        BCFWStructuredSVM(ChainCRF()).fit(X, Y, sample_weight=weights)


def test_solvers_without_weights_refuse_them():
    X, Y, w = chains()
    with pytest.raises(ValueError, match="with sample_weight: its batched entropy oracle"):
        SmoothSSVMClassifier(ChainCRF(), solver="agm", smoothing="entropy",
                             top_k=None).fit(X, Y, sample_weight=w)


def test_warm_start_with_other_weights_refuses():
    X, Y, w = chains()
    est = BCFWStructuredSVM(ChainCRF(), warm_start=True, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, Y, sample_weight=w + 1)
        est.fit(X, Y, sample_weight=w + 1)  # the same weights: continues
    with pytest.raises(ValueError, match="same examples"):
        est.fit(X, Y, sample_weight=w + 2)


def test_loopy_graphs_take_weights_in_the_stochastic_solvers():
    """BinaryGraphCRF (Python graph-cut oracles, dense gradients): a zero weight drops the
    example there too."""
    pytest.importorskip("maxflow")
    from sklearn_ssvm.structures import BinaryGraphCRF
    rng = np.random.default_rng(5)
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    X = [(rng.normal(size=(4, 2)), edges) for _ in range(8)]
    Y = [rng.integers(0, 2, 4) for _ in range(8)]
    w = np.r_[np.zeros(2), rng.integers(1, 4, 6)]

    def make():
        return SmoothSSVMClassifier(BinaryGraphCRF(), alpha=ALPHA, solver="svrg", max_iter=3,
                                    random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = make().fit(X, Y, sample_weight=w)
        kept = make().fit(X[2:], Y[2:], sample_weight=w[2:])
        plain = make().fit(X[2:], Y[2:])
    np.testing.assert_array_equal(weighted.coef_, kept.coef_)
    assert not np.array_equal(weighted.coef_, plain.coef_)
