"""AGM (spec 001): certified gaps, agreement with independent solvers, the F1 and enet oracles."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.linear_model import ElasticNet
from sklearn.svm import SVC

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm.datasets import make_chain_data
from sklearn_ssvm.solvers.agm import (F1Primal, HingeDual, HingePrimal, agm, agm_elastic_net,
                                      agm_solve, agm_structured, f1_max,
                                      f1_smoothed)
from sklearn_ssvm.solvers.bmrm import bmrm_binary


def binary_data(seed=0, n=80, d=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.3 + 0.6 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def smoothed_hinge_objective(X, y, lam, mu):
    """J_mu(w) without bias in closed form (a_i = clip(t_i / mu, 0, 1/n)) and its gradient."""
    n = y.shape[0]

    def fun(w):
        t = 1.0 - y * (X @ w)
        a = np.clip(t / mu, 0.0, 1.0 / n)
        return a @ t - 0.5 * mu * a @ a + 0.5 * lam * w @ w, lam * w - X.T @ (y * a)

    return fun


@pytest.mark.parametrize("memory", ["inf", "1"])
def test_primal_minimises_the_smoothed_objective(memory):
    """The objective AGM minimises in the primal (J_mu, §3.2) against L-BFGS on its closed form,
    and the exact hinge optimum (bounded by the certificate) against an exact QP solve."""
    X, y = binary_data()
    lam, tol = 1e-2, 1e-6
    n = y.shape[0]
    res = agm(X, y, lam, memory=memory, tol=tol, max_iter=20000)
    assert res.converged and res.duality_gap <= tol
    fun = smoothed_hinge_objective(X, y, lam, n * tol)
    ref = minimize(fun, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=10000))
    assert fun(res.coef)[0] >= ref.fun - 1e-12
    assert fun(res.coef)[0] <= ref.fun + tol
    exact = bmrm_binary(X, y, lam, tol=1e-11, max_iter=5000)
    assert res.dual_objective <= exact.objective + 1e-10 <= res.objective + 1e-10
    assert res.objective - exact.objective <= tol


@pytest.mark.parametrize("formulation", ["primal", "dual"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_certificate_is_valid_every_iteration(formulation, fit_intercept):
    """D(alpha_k) <= J* <= J(w_k) at every iteration (§5.2), dense and CSR; with a bias the
    optimum is libsvm's (the bias is not regularised)."""
    X, y = binary_data(1)
    lam, tol = 1e-2, 1e-6
    n = y.shape[0]
    if fit_intercept:
        svc = SVC(kernel="linear", C=1 / (lam * n), tol=1e-10).fit(X, y)
        w, b = svc.coef_.ravel(), svc.intercept_[0]
        optimum = 0.5 * lam * w @ w + np.maximum(0, 1 - y * (X @ w + b)).mean()
    else:
        optimum = bmrm_binary(X, y, lam, tol=1e-12, max_iter=5000).objective
    res = agm(X, y, lam, formulation=formulation, fit_intercept=fit_intercept, tol=tol,
              max_iter=20000)
    primal = np.array([h["objective"] for h in res.history])
    dual = np.array([h["dual_objective"] for h in res.history])
    assert np.all(dual <= optimum + 1e-7) and np.all(primal >= optimum - 1e-7)
    assert res.converged and abs(res.objective - optimum) <= tol + 1e-7
    if formulation == "dual":  # the iterates stay in Q2
        assert np.all(res.dual_coef >= 0) and np.all(res.dual_coef <= 1 / n + 1e-15)
        if fit_intercept:
            assert abs(y @ res.dual_coef) <= 1e-11  # affine combinations: rounding only
    sparse = agm(sp.csr_matrix(X), y, lam, formulation=formulation,
                 fit_intercept=fit_intercept, tol=tol, max_iter=20000)
    assert sparse.objective == pytest.approx(res.objective, abs=2 * tol)


def test_numerical_safety():
    """A strongly convex dual (mu > 0) makes A_k grow geometrically: thousands of iterations
    stay finite (§5.3), and a far too optimistic Lipschitz estimate is only a few rejected
    trials, none of which leaves a trace in the certificate."""
    X, y = binary_data(2)
    oracle = HingeDual(X, y, 1e-2, False, mu=1.0)
    res = agm_solve(oracle, tol=0.0, max_iter=3000)
    assert res.n_iter == 3000 and np.isfinite(res.duality_gap) and res.duality_gap >= -1e-12
    for cls, args in ((HingePrimal, (False, 0.05)), (HingeDual, (True,))):
        oracle = cls(X, y, 1e-2, *args)
        reference = agm_solve(oracle, tol=1e-5, max_iter=20000)
        oracle.lipschitz0 *= 1e-8
        res = agm_solve(oracle, memory="1", tol=1e-5, max_iter=20000)
        assert res.history[0]["trials"] > 10
        assert res.converged and res.objective == pytest.approx(reference.objective, abs=2e-5)


def f1_loss(labels, y):
    """``1 - F1`` of each labeling (rows of ``labels``) against ``y``; 0 for the perfect
    labeling of an all-negative sample."""
    tp = np.sum((y > 0) & (labels > 0), axis=-1)
    errors = np.sum((y > 0) != (labels > 0), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(2 * tp + errors > 0, errors / (2 * tp + errors), 0.0)


def brute_f1(scores, y, mu):
    """Everything of the smoothed F1 loss by enumerating the 2^n labelings."""
    n = y.shape[0]
    labels = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
    loss = f1_loss(labels, y)
    z = loss + (labels - y) @ scores / n
    p = np.exp(z / mu - logsumexp(z / mu))
    return dict(z=z, p=p, labels=labels, loss=loss, value=mu * logsumexp(z / mu))


@pytest.mark.parametrize("n, seed, share", [(1, 0, 0.4), (5, 1, 0.4), (9, 2, 0.4),
                                            (10, 3, 0.4), (6, 4, 0.0), (6, 5, 1.0)])
def test_f1_oracle_against_enumeration(n, seed, share):
    """The compiled F1 kernels against the 2^n labelings, with one class absent too."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(rng.random(n) < share, 1.0, -1.0)
    w = rng.normal(size=3)
    for mu in (0.05, 1.0):
        brute = brute_f1(X @ w, y, mu)
        value, flips, loss = f1_smoothed(X @ w, y, mu)
        assert value == pytest.approx(brute["value"], abs=1e-12)
        np.testing.assert_allclose(flips, brute["p"] @ (brute["labels"] != y), atol=1e-12)
        assert loss == pytest.approx(brute["p"] @ brute["loss"], abs=1e-12)
        # the gradient is E_p psi(y') with psi(y') = (1/n) sum_i (y'_i - y_i) x_i
        oracle = F1Primal(X, y, 0.1, mu)
        f, grad, _ = oracle.gradient(w, oracle.image(w))
        expected = brute["p"] @ ((brute["labels"] - y) @ X) / n
        np.testing.assert_allclose(grad, expected, atol=1e-12)
        assert f == pytest.approx(brute["value"] - mu * n * np.log(2), abs=1e-12)
    assert f1_max(X @ w, y) == pytest.approx(brute["z"].max(), abs=1e-12)
    # stable in log space for tiny mu: the smoothed value tends to the max
    value, flips, _ = f1_smoothed(100 * X @ w, y, 1e-6)
    assert np.all(np.isfinite(flips)) and value == pytest.approx(f1_max(100 * X @ w, y), abs=1e-4)


def test_f1_agm_certificate():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(8, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=8) > 0, 1.0, -1.0)
    lam = 0.1
    res = agm(X, y, lam, loss="f1", tol=1e-4, max_iter=5000)
    assert res.converged
    labels = np.array(list(itertools.product([-1.0, 1.0], repeat=8)))
    loss = f1_loss(labels, y)
    psi = (labels - y) @ X / 8

    def objective(w):  # the exact F1 structured hinge by enumeration
        return np.max(loss + psi @ w) + 0.5 * lam * w @ w

    assert res.objective == pytest.approx(objective(res.coef), abs=1e-12)
    optimum = minimize(objective, res.coef, method="Nelder-Mead",
                       options=dict(xatol=1e-10, fatol=1e-12, maxiter=20000)).fun
    assert res.dual_objective <= optimum + 1e-9 and res.objective - optimum <= 1e-4


@pytest.mark.parametrize("memory", ["inf", "1"])
def test_elastic_net_matches_sklearn(memory):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 12))
    y = X @ (rng.normal(size=12) * (rng.random(12) < 0.5)) + 0.1 * rng.normal(size=60)
    for alpha, l1_ratio in ((0.1, 0.5), (0.02, 0.9), (0.5, 0.0)):
        res = agm_elastic_net(X, y, alpha, l1_ratio, memory=memory, tol=1e-12, max_iter=20000)
        ref = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-14,
                         max_iter=100000).fit(X, y)
        assert res.converged
        np.testing.assert_allclose(res.coef, ref.coef_, atol=1e-5)
        # x_k averages the sparse model minimisers z_i: zeros are only approximate
        assert np.all(np.abs(res.coef[ref.coef_ == 0]) <= 1e-5)


@pytest.mark.parametrize("memory", ["inf", "1"])
def test_structured_entropy_brackets_the_optimum(memory):
    X, Y = make_chain_data(n_samples=15, n_features=5, n_labels=3, random_state=0)
    alpha = 0.05
    ref = BCFWStructuredSVM(ChainCRF(), alpha=alpha, tol=1e-8, max_iter=2000, step="pairwise",
                            random_state=0).fit(X, Y)
    problem = ChainCRF().prepare(X, Y)
    res = agm_structured(problem, alpha, 0.01, memory=memory, tol=1e-2, max_iter=2000)
    assert res.converged
    primal = np.array([h["objective"] for h in res.history])
    dual = np.array([h["dual_objective"] for h in res.history])
    assert np.all(dual <= ref.primal_objective_ + 1e-9)
    assert np.all(primal >= ref.dual_objective_ - 1e-9)
    assert res.objective - ref.primal_objective_ <= res.duality_gap + 1e-9
    with pytest.raises(ValueError, match="mu"):
        agm_structured(problem, alpha, 0.0)
