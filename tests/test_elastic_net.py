"""The elastic-net penalty through the estimators and AGM, against an independent solve."""
import numpy as np
import pytest

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, SmoothSSVMClassifier
from sklearn_ssvm.penalties import ElasticNet
from sklearn_ssvm.solvers.agm import agm_structured

from _brute import all_values, elastic_net_qp


def chain_data(rng, n=6, n_features=2, n_labels=2, max_len=3):
    W = rng.normal(size=(n_features, n_labels))
    X = [rng.normal(size=(1 + i % max_len, n_features)) for i in range(n)]
    Y = [np.argmax(x @ W + rng.normal(size=(x.shape[0], n_labels)), axis=1) for x in X]
    return X, Y


def test_agm_reaches_the_elastic_net_optimum_with_a_certified_gap():
    rng = np.random.default_rng(5)
    X, Y = chain_data(rng)
    structure = ChainCRF()
    problem = structure.prepare(X, Y)
    p_star, w_star = elastic_net_qp(structure, X, Y, ElasticNet.from_alpha(0.2, 0.5))
    assert np.sum(np.abs(w_star) < 1e-9) >= 2  # the l1 part is active at the optimum
    res = agm_structured(problem, ElasticNet.from_alpha(0.2, 0.5), 1e-6, tol=1e-7,
                         max_iter=20000)
    # the entropy smoothing biases the minimiser by at most mu log |Y|: within 1e-6 here
    assert res.objective - p_star <= res.duality_gap + 1e-9
    assert res.objective - p_star <= 1e-6
    assert res.dual_objective <= p_star + 1e-9
    np.testing.assert_allclose(res.coef, w_star, atol=1e-3)


def test_agm_at_l1_ratio_zero_is_the_l2_run():
    rng = np.random.default_rng(0)
    X, Y = chain_data(rng, n=8, n_labels=3)
    problem = ChainCRF().prepare(X, Y)
    a = agm_structured(problem, 0.1, 0.05, tol=0.0, max_iter=30)
    b = agm_structured(problem, ElasticNet.from_alpha(0.1, 0.0), 0.05, tol=0.0, max_iter=30)
    assert np.array_equal(a.coef, b.coef) and a.duality_gap == b.duality_gap


@pytest.mark.parametrize("bad", [1.0, -0.5, 2])
def test_smooth_estimator_refuses_l1_ratio_outside_zero_one(bad):
    rng = np.random.default_rng(0)
    X, Y = chain_data(rng)
    with pytest.raises(ValueError, match="l1_ratio"):
        SmoothSSVMClassifier(ChainCRF(), l1_ratio=bad).fit(X, Y)


def test_primal_objective_includes_the_l1_part():
    rng = np.random.default_rng(1)
    X, Y = chain_data(rng)
    est = SmoothSSVMClassifier(ChainCRF(), alpha=0.2, l1_ratio=0.5, solver="agm",
                               smoothing="entropy", top_k=None, mu=0.01, max_iter=50).fit(X, Y)
    w = est.coef_
    hinge = np.mean([np.max(all_values(est.structure_, x, y, w)[1]) for x, y in zip(X, Y)])
    expected = 0.2 * (0.25 * w @ w + 0.5 * np.abs(w).sum()) + hinge
    assert est.primal_objective(X, Y) == pytest.approx(expected, rel=1e-12)
    assert est.objective_ == pytest.approx(expected, rel=1e-9)
    assert est.n_nonzero_coef_ == np.count_nonzero(w)


@pytest.mark.parametrize("solver, mu, learning_rate", [("casimir-svrg", 0.3, 0.2),
                                                       ("svrg", 0.3, 0.05), ("sgd", 0.02, 0.2)])
def test_stochastic_solvers_fit_the_elastic_net(solver, mu, learning_rate):
    """The estimator's stochastic solvers take l1_ratio: near the independent optimum (up to
    the smoothing's bias for SVRG and SGD, which keep ``mu``), with a certified gap that
    bounds the suboptimality (SVRG solvers)."""
    rng = np.random.default_rng(5)
    X, Y = chain_data(rng)
    structure = ChainCRF(normalize_loss=True)  # the learning rates are this loss's
    structure.prepare(X, Y)
    p_star, _ = elastic_net_qp(structure, X, Y, ElasticNet.from_alpha(0.2, 0.5))
    est = SmoothSSVMClassifier(structure, alpha=0.2, l1_ratio=0.5, solver=solver,
                               smoothing="l2", top_k=5, mu=mu, learning_rate=learning_rate,
                               max_iter=200, early_stopping=False, random_state=0).fit(X, Y)
    assert est.objective_ == pytest.approx(est.primal_objective(X, Y), rel=1e-12)
    assert p_star - 1e-9 <= est.objective_ <= p_star + (0.005 if solver == "casimir-svrg"
                                                         else 0.02)
    if solver != "sgd":
        assert est.objective_ - p_star <= est.duality_gap_ + 1e-9


def test_feature_maps_refuse_l1_ratio():
    from sklearn_ssvm import CandidateSet
    from sklearn_ssvm.feature_maps import MLPFeatureMap

    X = [np.ones((3, 2))] * 4
    Y = [np.array([0.0, 1.0, 1.0])] * 4
    with pytest.raises(ValueError, match="prox-linear method takes the L2 penalty"):
        SmoothSSVMClassifier(CandidateSet(), l1_ratio=0.5, max_iter=2,
                             feature_map=MLPFeatureMap()).fit(X, Y)


def test_agm_elastic_net_reaches_the_ssvm_optimum_with_exact_zeros():
    """AGM at the defaults (the smoothing decreases tenfold whenever the gap stalls) reaches
    the non-smooth optimum (BCFW's, certified to 1e-9) within 1e-5 relative, with the
    optimum's zeros exactly; a constant smoothing stalls at its bias, far above."""
    rng = np.random.default_rng(3)
    X, Y = chain_data(rng)
    reference = BCFWStructuredSVM(ChainCRF(), alpha=0.1, l1_ratio=0.5, tol=1e-10,
                                  max_iter=20000, random_state=0).fit(X, Y)
    optimum = reference.primal_objective(X, Y)
    assert reference.duality_gap_ <= 1e-8
    settings = dict(alpha=0.1, l1_ratio=0.5, solver="agm", smoothing="entropy", top_k=None,
                    max_iter=3000, tol=0.0)
    est = SmoothSSVMClassifier(ChainCRF(), **settings).fit(X, Y)
    assert est.primal_objective(X, Y) <= optimum * (1.0 + 1e-5)
    assert est.objective_ - est.duality_gap_ <= optimum + 1e-9  # the certificate holds
    np.testing.assert_array_equal(est.coef_ == 0.0, reference.coef_ == 0.0)
    mus = [record["mu"] for record in est.history_]
    assert mus[0] == est.mu * est.loss_scale_ and mus[-1] <= 1e-4 * mus[0]
    assert np.all(np.diff(mus) <= 0) and np.all(np.diff([r["gap"] for r in est.history_]) <= 0)
    constant = SmoothSSVMClassifier(ChainCRF(), mu_schedule="const", **settings).fit(X, Y)
    assert constant.duality_gap_ > 100 * est.duality_gap_
    assert constant.primal_objective(X, Y) > optimum * (1.0 + 1e-2)
