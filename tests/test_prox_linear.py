"""Prox-linear method (spec 000 §4, Algo. 5) and the ELU feature map: spec 000 §7 items 21-24."""
import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone

from sklearn_ssvm.feature_maps import MLPFeatureMap
from sklearn_ssvm.solvers.prox_linear import (linearize, nonlinear_objective, prox_linear,
                                              prox_linear_loop)
from sklearn_ssvm.solvers.smooth import Smoothing, casimir_svrg
from sklearn_ssvm.structures.base import smoothing_code
from sklearn_ssvm.structures.candidates import CandidateSet


class LinearFeatureMap:
    """The affine score ``<x_y, w>``: the linear SSVM as a feature map."""

    def n_params(self, n_features):
        return n_features

    def init_params(self, n_features):
        return np.zeros(n_features)

    def scores(self, Xc, w):
        return Xc @ w

    def jacobian(self, Xc, w):
        return np.array(Xc, dtype=float)


def random_candidates(rng, n=6, n_features=3, max_candidates=4):
    X = [rng.normal(size=(2 + i % (max_candidates - 1), n_features)) for i in range(n)]
    y = np.array([rng.integers(x.shape[0]) for x in X])
    losses = [rng.uniform(0.1, 1.0, size=x.shape[0]) for x in X]
    for loss, yi in zip(losses, y):
        loss[yi] = 0.0
    return X, losses, y


def nonlinear_toy(rng, n=40, n_candidates=8, n_features=5):
    """Candidates ranked by an ELU network with output weights of both signs (no linear score
    ranks them so); loss ``min(1, s*(y_i) - s*(y))`` with ``y_i`` the best candidate."""
    truth = MLPFeatureMap(n_hidden=4)
    w_star = np.concatenate([rng.normal(size=4 * n_features), [2.0, -2.0, 2.0, -2.0]])
    X = [rng.normal(size=(n_candidates, n_features)) for _ in range(n)]
    scores = [truth.scores(x, w_star) for x in X]
    y = np.array([np.argmax(s) for s in scores])
    return X, [np.minimum(1.0, s.max() - s) for s in scores], y


def hinges(feature_map, X, losses, y, w):
    """Per-example structured hinge of the non-linear scores, by enumeration."""
    out = []
    for x, loss, yi in zip(X, losses, y):
        s = feature_map.scores(x, w)
        out.append(np.max(loss + s) - s[yi])
    return np.array(out)


def exact_prox_step(problem, alpha, eta, center):
    """``argmin_z F_eta(z; center)`` for a linearised problem, as a QP in epigraph form."""
    J = problem.token_matrix().toarray()
    off = problem.tok_offsets
    n, d = problem.n_samples, J.shape[1]
    owner = np.repeat(np.arange(n), np.diff(off))
    A = J - J[(off[:-1] + problem.y)[owner]]  # constraints xi_i >= loss + <A_iy, z>
    C = np.zeros((A.shape[0], d + n))
    C[:, :d] = -A
    C[np.arange(A.shape[0]), d + owner] = 1.0

    def fun(v):
        z, xi = v[:d], v[d:]
        return xi.mean() + 0.5 * alpha * z @ z + (z - center) @ (z - center) / (2 * eta)

    def jac(v):
        z = v[:d]
        return np.concatenate([alpha * z + (z - center) / eta, np.full(n, 1.0 / n)])

    xi0 = np.maximum.reduceat(problem.tok_loss + A @ center, off[:-1])
    res = minimize(fun, np.concatenate([center, xi0]), jac=jac, method="SLSQP",
                   constraints=[dict(type="ineq", fun=lambda v: C @ v - problem.tok_loss,
                                     jac=lambda v: C)],
                   options=dict(ftol=1e-14, maxiter=1000))
    assert res.success, res.message
    return res.x[:d]


def test_jacobian_matches_finite_differences():
    rng = np.random.default_rng(0)
    fm = MLPFeatureMap(n_hidden=3, random_state=0)
    Xc = rng.normal(size=(5, 4))
    w = 2.0 * rng.normal(size=fm.n_params(4))  # pre-activations of both signs
    J = fm.jacobian(Xc, w)
    assert J.shape == (5, fm.n_params(4)) == (5, 15)
    h = 1e-6
    fd = np.array([(fm.scores(Xc, w + h * e) - fm.scores(Xc, w - h * e)) / (2 * h)
                   for e in np.eye(w.shape[0])]).T
    np.testing.assert_allclose(J, fd, atol=1e-7)
    # w = 0 is stationary (hence the random start), the random start is not
    assert not np.any(fm.jacobian(Xc, np.zeros_like(w)))
    w0 = fm.init_params(4)
    np.testing.assert_array_equal(w0, clone(fm).init_params(4))
    assert np.any(fm.jacobian(Xc, w0))


def test_linearization_of_affine_score_is_exact():
    # item 22: F(w; w_k) = F(w) for an affine score, at any w and w_k
    rng = np.random.default_rng(1)
    X, losses, y = random_candidates(rng)
    fm, alpha = LinearFeatureMap(), 0.3
    problem = linearize(fm, X, losses, y, rng.normal(size=3))
    reference = CandidateSet().prepare(X, losses)
    for _ in range(5):
        w = 3.0 * rng.normal(size=3)
        np.testing.assert_allclose(problem.hinge_losses(w), hinges(fm, X, losses, y, w))
        np.testing.assert_allclose(problem.hinge_losses(w), reference.hinge_losses(w))
        assert np.isclose(problem.hinge_losses(w).mean() + 0.5 * alpha * w @ w,
                          nonlinear_objective(fm, X, losses, y, w, alpha))


def test_linearization_is_exact_at_its_point():
    rng = np.random.default_rng(2)
    X, losses, y = random_candidates(rng)
    fm = MLPFeatureMap(n_hidden=4, random_state=2)
    w = 2.0 * rng.normal(size=fm.n_params(3))
    problem = linearize(fm, X, losses, y, w)
    assert problem.n_params == fm.n_params(3)
    np.testing.assert_allclose(problem.hinge_losses(w), hinges(fm, X, losses, y, w))
    # the loss at the true candidate stays 0
    assert not np.any(problem.tok_loss[problem.tok_offsets[:-1] + y])


def test_lemma_34_upper_model():
    # item 23: |h(g(w + z)) - h(g(w) + J z)| <= (L/2) ||z||^2, with L the Lipschitz constant of
    # the augmented scores' gradients along the segment [w, w + z], estimated on a grid
    rng = np.random.default_rng(3)
    X, losses, y = random_candidates(rng)
    fm = MLPFeatureMap(n_hidden=3, random_state=3)
    t_grid = np.linspace(0.0, 1.0, 201)[1:]

    def augmented_gradients(v):  # rows grad psi_iy(v) = J_iy - J_iy_i, all examples stacked
        return np.vstack([fm.jacobian(x, v) - fm.jacobian(x, v)[yi] for x, yi in zip(X, y)])

    ratios = []
    for scale in (0.01, 0.1, 1.0):
        for _ in range(4):
            w = rng.normal(size=fm.n_params(3))
            z = scale * rng.normal(size=w.shape[0])
            base = augmented_gradients(w)
            L = max(np.max(np.linalg.norm(augmented_gradients(w + t * z) - base, axis=1))
                    / (t * np.linalg.norm(z)) for t in t_grid)
            gap = np.abs(hinges(fm, X, losses, y, w + z)
                         - linearize(fm, X, losses, y, w).hinge_losses(w + z))
            bound = 0.5 * L * z @ z
            assert np.all(gap <= bound * (1 + 1e-6) + 1e-12)
            ratios.append(gap.max() / bound)
    assert max(ratios) > 0.05  # the model error is of the order of the bound, not vacuous


def test_acceptance_step_keeps_the_objective_non_increasing():
    # item 21 (Thm 35) with the real inner solver; a large eta makes some steps fail
    rng = np.random.default_rng(4)
    X, losses, y = nonlinear_toy(rng, n=20)
    alpha = 1.0 / len(X)
    smoothing = Smoothing(*smoothing_code("l2", None, CandidateSet._kind), 1.0)
    fm = MLPFeatureMap(n_hidden=4, random_state=0)
    rejected = 0
    for mu_schedule in ("linear", "const"):
        result = prox_linear(fm, X, losses, y, alpha, smoothing, eta=10.0, learning_rate=0.2,
                             mu_schedule=mu_schedule, max_iter=15, random_state=0,
                             callback=lambda k, w: dict(norm=np.linalg.norm(w)))
        values = [record["objective"] for record in result.history]
        assert np.all(np.diff(values) <= 0)
        assert values[-1] < values[0]
        for record in result.history[1:]:
            # a rejected candidate is worse than the kept iterate
            assert record["accepted"] == (record["candidate_objective"] <= record["objective"])
            rejected += not record["accepted"]
        assert np.isclose(result.objective, nonlinear_objective(fm, X, losses, y, result.coef,
                                                                alpha))
        assert np.isclose(result.history[-1]["norm"], np.linalg.norm(result.coef))
        assert result.n_iter == 15 == len(result.history) - 1
        calls = [record["oracle_calls"] for record in result.history]
        assert np.all(np.diff(calls) == 5 * 2 * len(X) + len(X))
    assert rejected > 0


def test_rejected_step_keeps_the_iterate():
    rng = np.random.default_rng(5)
    X, losses, y = random_candidates(rng)
    fm = MLPFeatureMap(n_hidden=2, random_state=5)
    w0 = fm.init_params(3)
    seen = []

    def bad_solver(problem, prox, k):
        seen.append(problem)
        return prox[1] + 100.0 * rng.normal(size=prox[1].shape[0]), 0, {}

    result = prox_linear_loop(fm, X, losses, y, 0.1, bad_solver, eta=1.0, max_iter=3, init=w0)
    assert not any(record["accepted"] for record in result.history[1:])
    np.testing.assert_array_equal(result.coef, w0)
    assert seen[0] is seen[1] is seen[2]  # the model at w_0 is built once


def test_gradient_mapping_vanishes_at_the_limit():
    # item 24: rho_eta(w) = (w - argmin_z F_eta(z; w)) / eta, with exact inner solves
    rng = np.random.default_rng(1)
    X, losses, y = nonlinear_toy(rng, n=8, n_candidates=3, n_features=2)
    fm, alpha, eta = MLPFeatureMap(n_hidden=2, random_state=0), 1.0 / 8, 1.0

    def rho(w):
        z = exact_prox_step(linearize(fm, X, losses, y, w), alpha, eta, w)
        return np.linalg.norm(w - z) / eta

    def solve(problem, prox, k):
        return exact_prox_step(problem, alpha, 1.0 / prox[0], prox[1]), 0, {}

    w0 = fm.init_params(2)
    result = prox_linear_loop(fm, X, losses, y, alpha, solve, eta=eta, max_iter=500, tol=1e-7,
                              init=w0)
    assert result.converged and result.n_iter < 500
    assert all(record["accepted"] for record in result.history[1:])  # eta <= 1/L here
    assert rho(w0) > 0.1
    assert rho(result.coef) < 1e-5


def test_inner_tolerance_certifies_the_inexactness_condition_62():
    # Algo. 5 with eps_k = eps_0 / k: every inner solve stops with F_eta(w_hat_k; w_{k-1})
    # within eps_k of the subproblem's minimum, checked against an exact QP solve
    rng = np.random.default_rng(2)
    X, losses, y = nonlinear_toy(rng, n=10, n_candidates=4, n_features=3)
    fm, alpha, eta, eps0 = MLPFeatureMap(n_hidden=2, random_state=0), 0.1, 1.0, 0.05
    # mu_k = mu / k <= eps_k: the smoothing bias (at most mu_k / 2) leaves room for eps_k
    smoothing = Smoothing(*smoothing_code("l2", None, CandidateSet._kind), eps0)
    w0 = fm.init_params(3)
    centers = [w0]
    result = prox_linear(fm, X, losses, y, alpha, smoothing, eta=eta, learning_rate=0.1,
                         inner_iter=300, inner_tol=eps0, max_iter=4, init=w0, random_state=0,
                         callback=lambda k, w: centers.append(w.copy()) or None)
    for k, record in enumerate(result.history[1:], start=1):
        center = centers[k - 1]
        problem = linearize(fm, X, losses, y, center)
        z = exact_prox_step(problem, alpha, eta, center)
        best = (np.mean(problem.hinge_losses(z)) + 0.5 * alpha * z @ z
                + (z - center) @ (z - center) / (2 * eta))
        excess = record["inner_objective"] - best
        assert record["inner_tol"] == pytest.approx(eps0 / k)
        assert record["inner_iter"] < 300
        assert -1e-7 <= excess <= record["inner_gap"] + 1e-7
        assert record["inner_gap"] <= eps0 / k
    fixed = prox_linear(fm, X, losses, y, alpha, smoothing, eta=eta, learning_rate=0.1,
                        inner_iter=1, max_iter=1, init=w0, random_state=0)
    assert fixed.history[1]["inner_tol"] == 0.0 and fixed.history[1]["inner_iter"] == 1


def test_prox_linear_fits_a_nonlinear_ranking():
    rng = np.random.default_rng(0)
    X, losses, y = nonlinear_toy(rng)
    alpha = 1.0 / len(X)
    smoothing = Smoothing(*smoothing_code("l2", None, CandidateSet._kind), 1.0)
    fm = MLPFeatureMap(n_hidden=4, random_state=0)
    result = prox_linear(fm, X, losses, y, alpha, smoothing, eta=1.0, learning_rate=0.2,
                         max_iter=30, random_state=0)
    start = result.history[0]["objective"]
    assert result.objective < 0.3 * start
    # the best linear score does worse on the same regularised objective
    linear = casimir_svrg(CandidateSet().prepare(X, losses), alpha, smoothing.at(0.1),
                          learning_rate=0.05, max_iter=100, random_state=0)
    assert result.objective < linear.objective - 0.05
    train_loss = np.mean([loss[np.argmax(fm.scores(x, result.coef))]
                          for x, loss in zip(X, losses)])
    linear_loss = np.mean([loss[np.argmax(x @ linear.coef)] for x, loss in zip(X, losses)])
    assert train_loss < linear_loss


@pytest.mark.parametrize("change, message", [
    (dict(y=[0, 0]), "same positive number"),
    (dict(y_first=1), "loss 0"),
    (dict(eta=0.0), "eta must be"),
    (dict(mu_schedule="expo"), "mu_schedule"),
    (dict(inner_tol=0.0), "inner_tol"),
    (dict(n_hidden=0), "n_hidden"),
    (dict(init=np.zeros(3)), "w must have shape"),
])
def test_invalid_inputs(change, message):
    rng = np.random.default_rng(6)
    X, losses, y = random_candidates(rng)
    y = np.array(change.get("y", y))
    if "y_first" in change:
        y[0] = (y[0] + 1) % X[0].shape[0]
    fm = MLPFeatureMap(n_hidden=change.get("n_hidden", 2))
    smoothing = Smoothing(*smoothing_code("l2", None, CandidateSet._kind), 1.0)
    with pytest.raises(ValueError, match=message):
        prox_linear(fm, X, losses, y, 0.1, smoothing, eta=change.get("eta", 1.0),
                    learning_rate=0.01, mu_schedule=change.get("mu_schedule", "linear"),
                    inner_tol=change.get("inner_tol"), max_iter=1, init=change.get("init"))
