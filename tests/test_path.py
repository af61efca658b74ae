"""Regularization path (spec 002 §8, Alg. 6 and 7) and the grid-search baseline (§8.5).

The numbers refer to the tests of spec 002 §11. Primal values are computed independently of the
path's bookkeeping, from ``problem.hinge_losses`` and ``alpha / 2 ||w||^2``.
"""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssvm import (BCFWStructuredSVM, BMRMStructuredSVM, ChainCRF, MulticlassSVM,
                          MultiLabel, PragamSVC, SmoothSSVMClassifier)
from sklearn_ssvm.model_selection import (GridSearchPath, RegularizationPath, grid_search_path,
                                          regularization_path)
from sklearn_ssvm.solvers.bcfw import DualState, bcfw, certificate, keep_primal_rescale, weights
from sklearn_ssvm.solvers.bcfw_path import block_deltas, initialize_path
from sklearn_ssvm.structures import Problem

EPS = 0.1


def chain_data(seed, n=20, n_features=4, n_labels=3, max_len=5, noise=1.0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n_features, n_labels))
    X, Y = [], []
    for i in range(n):
        x = rng.normal(size=(1 + i % max_len, n_features))
        X.append(x)
        Y.append(np.argmax(x @ W + rng.normal(scale=noise, size=(x.shape[0], n_labels)), axis=1))
    return X, Y


def data_for(structure, seed):
    """Small random training data in the format of ``structure``."""
    if isinstance(structure, ChainCRF):
        return chain_data(seed)
    if isinstance(structure, MultiLabel):
        rng = np.random.default_rng(seed)
        return rng.normal(size=(25, 4)), rng.integers(0, 2, size=(25, 4))
    return multiclass_data(seed)


def multiclass_data(seed, n=30, n_features=4, n_classes=3, spread=1.0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    centers = 3.0 * rng.normal(size=(n_classes, n_features))
    return centers[y] + spread * rng.normal(size=(n, n_features)), y


def primal(problem, coef, alpha):
    return 0.5 * alpha * coef @ coef + float(np.mean(problem.hinge_losses(coef)))


STRUCTURES = {
    "chain": (ChainCRF, lambda: chain_data(0)),
    "multiclass": (MulticlassSVM, lambda: multiclass_data(1)),
}


@pytest.fixture(scope="module", params=sorted(STRUCTURES))
def fitted_path(request):
    """An exact path per structure, with the packed problem it was computed on."""
    make, data = STRUCTURES[request.param]
    X, Y = data()
    est = BCFWStructuredSVM(make(), random_state=0, max_iter=500)
    path = regularization_path(est, X, Y, eps=EPS, alpha_min=0.02)
    return path, make().prepare(X, Y), (X, Y)


# --- 25 ------------------------------------------------------------------------------------------

def test_nonzero_loss_of_the_true_labeling_raises(monkeypatch):
    X, Y = multiclass_data(0)
    monkeypatch.setattr(Problem, "losses", lambda self, y_pred: np.full(self.n_samples, 0.5))
    est = BCFWStructuredSVM(MulticlassSVM())
    with pytest.raises(ValueError, match=r"L\(y_i, y_i\) = 0"):
        regularization_path(est, X, Y)
    with pytest.raises(ValueError, match=r"L\(y_i, y_i\) = 0"):
        grid_search_path(est, X, Y, alphas=[1.0])


# --- identities used by the path (§1.3, test 7) --------------------------------------------------

@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM(), MultiLabel(pairwise="tree")])
def test_delta_identity(structure):
    """delta_i = ell_i - alpha <w, w_i> = (true - expected score)/n form = H~_i(w)/n - g_i."""
    X, Y = data_for(structure, 3)
    problem = structure.prepare(X, Y)
    alpha = 0.3
    res = bcfw(problem, alpha, max_iter=2, tol=0.0, random_state=0)
    n = problem.n_samples
    deltas = block_deltas(problem, res.state, res.coef)
    _, values, true, expected = problem.run_oracle(res.coef, True, res.state.M, res.state.Q)
    np.testing.assert_allclose(deltas, res.state.ell_blocks - (true - expected) / n,
                               rtol=0, atol=1e-12)
    cert = certificate(problem, res.state, res.coef, alpha)
    np.testing.assert_allclose(deltas, problem.hinge_losses(res.coef) / n - cert.block_gaps,
                               rtol=0, atol=1e-12)


# --- 26 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_initialisation(name):
    make, data = STRUCTURES[name]
    X, Y = data()
    structure = make()
    problem = structure.prepare(X, Y)
    kappa = 0.9
    start = initialize_path(problem, EPS, kappa)
    # psi~ and the oracle at w = 0, recomputed from the structure's own joint feature and loss
    y_tilde = [structure.max_oracle(x, y, np.zeros(problem.n_params))[0] for x, y in zip(X, Y)]
    psi = np.mean([structure.joint_feature(x, y) - structure.joint_feature(x, z)
                   for x, y, z in zip(X, Y, y_tilde)], axis=0)
    np.testing.assert_allclose(start.psi_mean, psi, atol=1e-12)
    assert start.state.ell_blocks.sum() == pytest.approx(
        np.mean([structure.loss(y, z) for y, z in zip(Y, y_tilde)]), abs=1e-12)
    theta = [psi @ (structure.joint_feature(x, structure.decode(x, psi))
                    - structure.joint_feature(x, y)) for x, y in zip(X, Y)]
    np.testing.assert_allclose(start.theta, theta, atol=1e-12)
    assert start.alpha == pytest.approx((psi @ psi + np.mean(theta)) / (kappa * EPS), rel=1e-12)
    np.testing.assert_allclose(start.coef, psi / start.alpha, atol=1e-14)
    # the upper bounds of Alg. 6 sum to kappa eps exactly and bound the exact block gaps
    assert start.gap_bounds.sum() == pytest.approx(kappa * EPS, rel=1e-12)
    cert = certificate(problem, start.state, start.coef, start.alpha)
    assert np.all(cert.block_gaps <= start.gap_bounds + 1e-12)
    assert cert.gap <= kappa * EPS
    # eq. (11): alpha^inf with w = (lambda^inf / lambda) w^inf is kappa-eps-approximate above
    for factor in (1.0, 2.0, 10.0):
        lam = factor * start.alpha
        w = (start.alpha / lam) * start.coef
        np.testing.assert_allclose(w, weights(problem, start.state, lam), atol=1e-14)
        gap = certificate(problem, start.state, w, lam).gap
        assert gap <= kappa * EPS / factor + 1e-12
        # independent primal: P(w) - D(alpha^inf)
        dual = start.state.ell_blocks.sum() - 0.5 * lam * w @ w
        assert primal(problem, w, lam) - dual == pytest.approx(gap, abs=1e-12)


def test_degenerate_initialisation_gives_a_one_piece_path():
    """psi~ = 0 (two copies of one point, one per class): w = 0 is optimal for every alpha."""
    X = np.array([[1.0, 2.0], [1.0, 2.0]])
    y = np.array([0, 1])
    path = regularization_path(BCFWStructuredSVM(MulticlassSVM()), X, y)
    assert path.stop_reason_ == "degenerate" and path.alphas_.tolist() == [0.0]
    for alpha in (1e-9, 1.0, 1e9):
        assert path.covers(alpha)
        np.testing.assert_array_equal(path.coef_at(alpha), 0.0)
        assert path.gap_bound(alpha) == 0.0
    # the certificate: the dual point of Alg. 6 has a zero gap with w = 0 at every alpha
    problem = MulticlassSVM().prepare(X, y)
    start = initialize_path(problem, EPS, 0.9)
    assert start.alpha == 0.0
    for alpha in (1e-3, 1.0, 1e3):
        w = np.zeros(problem.n_params)
        assert certificate(problem, start.state, w, alpha).gap == pytest.approx(0.0, abs=1e-15)


# --- 27 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM(), MultiLabel(pairwise="tree")])
@pytest.mark.parametrize("rho", [0.37, 0.999])
def test_proposition_1(structure, rho):
    X, Y = data_for(structure, 4)
    problem = structure.prepare(X, Y)
    alpha = 0.5
    res = bcfw(problem, alpha, max_iter=3, tol=0.0, random_state=1)  # a random dual point
    old = res.state
    coef = weights(problem, old, alpha)
    cert_old = certificate(problem, old, coef, alpha)
    deltas = block_deltas(problem, old, coef)
    vertex = DualState.at_labels(problem)
    new = keep_primal_rescale(old, rho, vertex)
    coef_new = weights(problem, new, rho * alpha)
    np.testing.assert_allclose(coef_new, coef, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(new.ell_blocks, rho * old.ell_blocks, rtol=1e-15, atol=0)
    cert_new = certificate(problem, new, coef_new, rho * alpha)
    np.testing.assert_allclose(cert_new.block_gaps,
                               cert_old.block_gaps + (1 - rho) * deltas, rtol=0, atol=1e-10)
    assert cert_new.gap == pytest.approx(cert_old.gap + (1 - rho) * deltas.sum(), abs=1e-10)
    with pytest.raises(ValueError, match="rho"):
        keep_primal_rescale(old, 1.5, vertex)


# --- 28 ------------------------------------------------------------------------------------------

def test_breakpoints(fitted_path):
    path, problem, _ = fitted_path
    assert isinstance(path, RegularizationPath)
    J = len(path.alphas_) - 1
    assert J >= 5 and path.stop_reason_ == "alpha_min"
    assert np.all(np.diff(path.alphas_) < 0)
    assert path.alphas_[-1] <= 0.02 < path.alphas_[-2]
    rho = path.alphas_[1:] / path.alphas_[:-1]
    Delta = path.hinges_[:-1] - path.gaps_[:-1]  # sum_i delta_i = mean H~ - g
    assert np.all((rho > 0) & (rho < 1))
    assert np.all(rho <= 1 - EPS * (1 - path.kappa) / Delta + 1e-12)
    assert path.exact_.all() and np.all(path.gaps_ <= path.kappa * EPS)
    # stored certificates are those of an independent evaluation
    for j in range(0, J + 1, max(1, J // 6)):
        w, a = path.coefs_[j], path.alphas_[j]
        assert path.hinges_[j] == pytest.approx(problem.hinge_losses(w).mean(), abs=1e-10)
        assert path.gaps_[j] == pytest.approx(primal(problem, w, a) - (path.ells_[j]
                                              - 0.5 * a * w @ w), abs=1e-10)
    assert np.all(np.diff(path.n_oracle_calls_) > 0) and np.all(np.diff(path.times_) >= 0)
    np.testing.assert_allclose(path.effective_passes_, path.n_oracle_calls_ / problem.n_samples)


# --- 29 ------------------------------------------------------------------------------------------

def test_coverage(fitted_path):
    path, problem, _ = fitted_path
    a = path.alphas_
    for j in range(len(a) - 1):
        w = path.coefs_[j]
        hinge = problem.hinge_losses(w).mean()
        for lam in (a[j + 1], a[j], 0.5 * (a[j] + a[j + 1])):
            G = lam * w @ w + hinge - (lam / a[j]) * path.ells_[j]  # affine certificate G_j
            assert G <= EPS + 1e-10
            assert path.covers(lam)
            assert path.gap_bound(lam) <= EPS + 1e-10
        mid = 0.5 * (a[j] + a[j + 1])
        np.testing.assert_array_equal(path.coef_at(mid), w)
        assert path.gap_bound(mid) == pytest.approx(
            mid * w @ w + hinge - (mid / a[j]) * path.ells_[j], abs=1e-10)
    # at a breakpoint: the solution computed there, and its exact gap
    np.testing.assert_array_equal(path.coef_at(a[1]), path.coefs_[1])
    assert path.gap_bound(a[1]) == pytest.approx(path.gaps_[1], abs=1e-10)
    # [alpha_min, inf) is covered, down to the next breakpoint Alg. 7 would have taken
    assert 0 < path.alpha_lower_ < a[-1] <= 0.02
    assert path.covers(0.02) and path.covers(path.alpha_lower_)
    w = path.coefs_[-1]
    lam = path.alpha_lower_
    assert lam * w @ w + problem.hinge_losses(w).mean() - (lam / a[-1]) * path.ells_[-1] \
        == pytest.approx(EPS, abs=1e-10)
    assert not path.covers(0.5 * path.alpha_lower_) and not path.covers(0.0)
    with pytest.raises(ValueError, match="not covered"):
        path.coef_at(0.5 * path.alpha_lower_)
    # above alphas_[0]: (alpha_0 / alpha) w^0 with the dual of Alg. 6 (gap <= kappa eps)
    start = initialize_path(problem, EPS, path.kappa)
    assert start.alpha == a[0]
    for factor in (1.5, 4.0):
        lam = factor * a[0]
        w = path.coef_at(lam)
        np.testing.assert_allclose(w, path.coefs_[0] / factor, rtol=1e-15)
        gap = certificate(problem, start.state, w, lam).gap
        assert gap <= path.gap_bound(lam) + 1e-12 and path.gap_bound(lam) <= path.kappa * EPS


# --- 30 ------------------------------------------------------------------------------------------

def test_true_suboptimality():
    X, y = multiclass_data(5, n=24)
    problem = MulticlassSVM().prepare(X, y)
    path = regularization_path(BCFWStructuredSVM(MulticlassSVM(), random_state=0), X, y,
                               eps=EPS, alpha_min=0.05)
    rng = np.random.default_rng(0)
    low = max(path.alpha_lower_, 0.1 * path.alphas_[-1])
    lams = np.exp(rng.uniform(np.log(low), np.log(3 * path.alphas_[0]), 8))
    for lam in np.concatenate([lams, path.alphas_[[0, 1, -1]]]):
        long = bcfw(problem, lam, max_iter=20000, tol=1e-6, random_state=0)
        assert long.converged
        # P* >= D(long run), so this bounds the true suboptimality P(w) - P*
        assert primal(problem, path.coef_at(lam), lam) - long.certificate.dual <= EPS


# --- 31 ------------------------------------------------------------------------------------------

def test_delta_le_tau_termination():
    """Separable data: the path ends once mean H~(w^J) <= eps and then covers (0, inf)."""
    X, y = multiclass_data(2, n=30, spread=0.3)
    problem = MulticlassSVM().prepare(X, y)
    path = regularization_path(BCFWStructuredSVM(MulticlassSVM(), random_state=0), X, y,
                               eps=EPS, alpha_min=0.0)
    assert path.stop_reason_ == "delta_le_tau" and path.alpha_lower_ == 0.0
    w = path.coefs_[-1]
    assert problem.hinge_losses(w).mean() <= EPS
    for lam in (1e-12, 1e-6, 0.5 * path.alphas_[-1]):
        assert path.covers(lam)
        np.testing.assert_array_equal(path.coef_at(lam), w)
        assert path.gap_bound(lam) <= EPS + 1e-10
        assert primal(problem, w, lam) - (path.ells_[-1] * lam / path.alphas_[-1]
                                          - 0.5 * lam * w @ w) <= EPS + 1e-10


# --- stopping rules, errors ----------------------------------------------------------------------

def test_max_breakpoints_and_time_budget():
    X, Y = chain_data(6)
    est = BCFWStructuredSVM(ChainCRF(), random_state=0)
    path = regularization_path(est, X, Y, max_breakpoints=4)
    assert path.stop_reason_ == "max_breakpoints" and len(path.alphas_) == 4
    assert path.alpha_lower_ < path.alphas_[-1] and path.covers(path.alpha_lower_)
    path = regularization_path(est, X, Y, time_budget=0.0)
    assert path.stop_reason_ == "time_budget" and len(path.alphas_) == 1
    for bad in (dict(eps=0.0), dict(kappa=1.0), dict(kappa=0.0), dict(alpha_min=-1.0),
                dict(max_breakpoints=0)):
        with pytest.raises(ValueError):
            regularization_path(est, X, Y, **bad)
    with pytest.raises(ValueError, match="warm_start"):
        grid_search_path(est, X, Y, warm_start="both")
    if "coef_bounds" in est.get_params():
        boxed = BCFWStructuredSVM(ChainCRF(), coef_bounds="positive_pairwise")
        with pytest.raises(ValueError, match="box constraints"):
            regularization_path(boxed, X, Y)


def test_not_converged_stops_with_a_warning():
    X, Y = chain_data(7)
    est = BCFWStructuredSVM(ChainCRF(), random_state=0, max_iter=1, gap_check=1)
    with pytest.warns(Warning, match="max_iter"):
        path = regularization_path(est, X, Y, alpha_min=1e-6)
    assert path.stop_reason_ == "not_converged"
    for j in range(len(path.alphas_)):
        assert path.gap_bound(path.alphas_[j]) <= EPS + 1e-10
    assert path.covers(path.alpha_lower_)


# --- 32 ------------------------------------------------------------------------------------------

def test_joblib_gives_identical_results():
    X, Y = chain_data(8)
    est = BCFWStructuredSVM(ChainCRF(), random_state=3)
    alphas = 2.0 ** np.arange(4, -4, -1)
    one = grid_search_path(est, X, Y, alphas=alphas, warm_start=None, n_jobs=1)
    two = grid_search_path(est, X, Y, alphas=alphas, warm_start=None, n_jobs=2)
    np.testing.assert_array_equal(one.coefs_, two.coefs_)
    np.testing.assert_array_equal(one.gaps_, two.gaps_)
    np.testing.assert_array_equal(one.n_oracle_calls_, two.n_oracle_calls_)
    p1 = regularization_path(est, X, Y, alpha_min=0.1, n_jobs=1)
    p2 = regularization_path(est, X, Y, alpha_min=0.1, n_jobs=2)
    np.testing.assert_array_equal(p1.alphas_, p2.alphas_)
    np.testing.assert_array_equal(p1.coefs_, p2.coefs_)


# --- 33 ------------------------------------------------------------------------------------------

def test_heuristic_path():
    X, Y = chain_data(9)
    est = BCFWStructuredSVM(ChainCRF(), random_state=5)
    path = regularization_path(est, X, Y, heuristic=True, alpha_min=0.05)
    assert path.kappa == 0.7 and not path.exact_.any()
    assert path.gaps_[0] == pytest.approx(0.7 * EPS, rel=1e-12)  # the bounds of Alg. 6
    assert np.all(np.diff(path.alphas_) < 0) and path.stop_reason_ == "alpha_min"
    # no exact pass ends a heuristic breakpoint: its hinge is an estimate, and it costs less
    # than the exact path over the same range
    assert np.all(np.isfinite(path.hinges_))
    exact = regularization_path(est, X, Y, kappa=0.7, alpha_min=path.alphas_[-1])
    assert path.n_oracle_calls_[-1] < exact.n_oracle_calls_[-1]
    again = regularization_path(est, X, Y, heuristic=True, alpha_min=0.05)
    np.testing.assert_array_equal(path.alphas_, again.alphas_)
    np.testing.assert_array_equal(path.coefs_, again.coefs_)


# --- grid search ---------------------------------------------------------------------------------

@pytest.mark.parametrize("warm_start", ["keep_primal", "keep_dual", None])
def test_grid_search(warm_start):
    X, Y = chain_data(10)
    problem = ChainCRF().prepare(X, Y)
    alphas = 2.0 ** np.arange(-3, 5)  # any order: solved descending
    grid = grid_search_path(BCFWStructuredSVM(ChainCRF(), random_state=0), X, Y, alphas=alphas,
                            tol=0.05, warm_start=warm_start)
    assert isinstance(grid, GridSearchPath)
    np.testing.assert_array_equal(grid.alphas_, np.sort(alphas)[::-1])
    assert grid.converged_.all() and np.all(grid.gaps_ <= 0.05)
    assert np.all(np.diff(grid.n_oracle_calls_) > 0)
    for a, w, g in zip(grid.alphas_, grid.coefs_, grid.gaps_):
        ref = bcfw(problem, a, max_iter=2000, tol=1e-5, random_state=0).certificate
        assert primal(problem, w, a) - ref.dual <= g + 1e-10


# --- model selection without refitting -----------------------------------------------------------

def test_best_estimator():
    X, y = multiclass_data(11, n=60, spread=2.5)
    Xt, yt, Xv, yv = X[:40], y[:40], X[40:], y[40:]
    est = BCFWStructuredSVM(MulticlassSVM(), random_state=0)
    path = regularization_path(est, Xt, yt, alpha_min=0.01)
    cand, scores = path.validation_scores(Xv, yv)
    np.testing.assert_array_equal(cand, path.alphas_)
    best = path.best_estimator(Xv, yv)
    assert best.alpha == best.alpha_ and best.alpha_ in path.alphas_
    assert best.score(Xv, yv) == pytest.approx(scores.max()) == best.validation_score_
    assert best.alpha_ == cand[np.argmax(scores)]  # ties: the largest alpha
    j = int(np.flatnonzero(path.alphas_ == best.alpha_)[0])
    np.testing.assert_array_equal(best.coef_, path.coefs_[j])
    assert best.duality_gap_ == pytest.approx(path.gaps_[j])
    assert best.predict(Xv).shape == yv.shape
    assert best.primal_objective(Xt, yt) - path.gap_bound(best.alpha_) <= primal(
        est.structure.prepare(Xt, yt), best.coef_, best.alpha_) + 1e-12
    # a user grid inside the covered range, above alphas_[0] included
    grid = np.geomspace(path.alpha_lower_, 10 * path.alphas_[0], 7)
    best = path.best_estimator(Xv, yv, alphas=grid)
    assert best.alpha_ in grid and best.duality_gap_ <= EPS + 1e-10
    np.testing.assert_allclose(best.coef_, path.coef_at(best.alpha_))
    with pytest.raises(ValueError, match="not covered"):
        path.best_estimator(Xv, yv, alphas=[0.5 * path.alpha_lower_])
    # the grid search selects the same way
    gs = grid_search_path(est, Xt, yt, alphas=[4.0, 1.0, 0.25], warm_start="keep_primal")
    best = gs.best_estimator(Xv, yv)
    assert best.alpha_ in gs.alphas_ and best.score(Xv, yv) == best.validation_score_


# --- pairwise / away steps and the oracle cache: Prop. 1 on the active sets ---------------------

@pytest.mark.parametrize("step,cache", [("pairwise", False), ("away", False), ("pairwise", True),
                                        ("fw", True)])
def test_proposition_1_on_active_sets(step, cache):
    from sklearn_ssvm._kernels.bcfw import state_from_atoms
    from sklearn_ssvm.solvers.bcfw import rescale_active_sets

    X, Y = chain_data(12)
    problem = ChainCRF().prepare(X, Y)
    res = bcfw(problem, 0.3, max_iter=3, tol=0.0, step=step, cache=cache, cache_size=4,
               random_state=0)
    rho = 0.4
    atoms = rescale_active_sets(problem, res.active_sets, rho)
    assert np.all(atoms.count <= atoms.labels.shape[1])
    if step == "fw":  # weights are bookkeeping only: y_i is in every block's store
        return
    expected = keep_primal_rescale(res.state, rho, DualState.at_labels(problem))
    rebuilt = DualState.zeros_like(res.state)
    state_from_atoms(problem.packed(), atoms.labels, atoms.weights, atoms.count, rebuilt.M,
                     rebuilt.Q, rebuilt.ell_blocks, problem.block_n)
    np.testing.assert_allclose(rebuilt.M, expected.M, atol=1e-12)
    np.testing.assert_allclose(rebuilt.Q, expected.Q, atol=1e-12)
    np.testing.assert_allclose(rebuilt.ell_blocks, expected.ell_blocks, atol=1e-14)


@pytest.mark.parametrize("step,cache", [("pairwise", False), ("away", True)])
def test_path_with_active_sets(step, cache):
    X, Y = chain_data(13)
    problem = ChainCRF().prepare(X, Y)
    est = BCFWStructuredSVM(ChainCRF(), random_state=0, step=step, cache=cache, max_iter=500)
    path = regularization_path(est, X, Y, alpha_min=0.05)
    assert path.stop_reason_ == "alpha_min" and np.all(path.gaps_ <= path.kappa * EPS)
    a = path.alphas_
    for j in range(len(a) - 1):
        w = path.coefs_[j]
        assert path.gaps_[j] == pytest.approx(primal(problem, w, a[j]) - (
            path.ells_[j] - 0.5 * a[j] * w @ w), abs=1e-10)
        G = a[j + 1] * w @ w + problem.hinge_losses(w).mean() - (a[j + 1] / a[j]) * path.ells_[j]
        assert G == pytest.approx(EPS, abs=1e-10)
    grid = grid_search_path(est, X, Y, alphas=[4.0, 1.0, 0.25], tol=0.05)
    assert grid.converged_.all()


# --- cross-validation along the path -------------------------------------------------------------

def test_cross_validate_path():
    from sklearn_ssvm.model_selection import cross_validate_path

    X, y = multiclass_data(14, n=45, spread=2.5)
    est = BCFWStructuredSVM(MulticlassSVM(), random_state=0)
    one = cross_validate_path(est, X, y, cv=3, alpha_min=0.05, n_jobs=1)
    two = cross_validate_path(est, X, y, cv=3, alpha_min=0.05, n_jobs=2)
    np.testing.assert_array_equal(one.scores_, two.scores_)
    assert one.best_alpha_ == two.best_alpha_
    assert one.scores_.shape == (3, len(one.alphas_)) and np.all(np.diff(one.alphas_) < 0)
    j = int(np.argmax(one.mean_scores_))
    assert one.best_alpha_ == one.alphas_[j]
    # each fold's score is its path's held-out score at that alpha
    fold_path = one.paths_[0]
    val = np.arange(15)  # KFold(3) without shuffling: the first fold holds out the first third
    best = fold_path.best_estimator(X[val], y[val], alphas=[one.best_alpha_])
    assert best.score(X[val], y[val]) == pytest.approx(one.scores_[0, j])
    full = one.best_estimator_
    np.testing.assert_array_equal(full.coef_, one.path_.coef_at(one.best_alpha_))
    assert full.alpha_ == one.best_alpha_ and full.duality_gap_ <= EPS + 1e-10
    assert full.predict(X).shape == y.shape


@pytest.mark.parametrize("make", [lambda: SmoothSSVMClassifier(ChainCRF()),
                                  lambda: BMRMStructuredSVM(ChainCRF()), lambda: PragamSVC()])
def test_certified_paths_refuse_other_estimators_clearly(make):
    from sklearn_ssvm import cross_validate_path, grid_search_path, regularization_path
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(3, 2)) for _ in range(6)]
    Y = [np.array([0, 1, 0])] * 6
    for path in (regularization_path, cross_validate_path):
        kwargs = dict(cv=2) if path is cross_validate_path else {}
        with pytest.raises(ValueError, match="a solver that declares certified_path .*, not"):
            path(make(), X, Y, **kwargs)
    if isinstance(make(), PragamSVC):
        with pytest.raises(ValueError, match="takes a structured estimator"):
            grid_search_path(make(), X, Y)


def test_certified_path_refuses_constraints_with_the_grid_as_the_way_out():
    from sklearn_ssvm.structures import BinaryGraphCRF
    X, Y = chain_data(0)
    for est in (BCFWStructuredSVM(ChainCRF(), l1_ratio=0.5),
                BCFWStructuredSVM(ChainCRF(), coef_bounds=(-1.0, 1.0)),
                BCFWStructuredSVM(BinaryGraphCRF())):
        with pytest.raises(ValueError, match="grid_search_path solves"):
            regularization_path(est, X, Y)


def graph_data():
    from sklearn_ssvm.datasets import make_snakes
    return make_snakes(4, random_state=0, shape=(3, 3), n_segments=3, noise=0.3)


def test_certified_path_on_graphs():
    """GraphCRF's dense dual rows take Prop. 1 and Alg. 6 as the label-space states do: the
    path's gap bound holds against an independent lower bound of ``P*`` (a long run's dual
    value) at alphas across the pieces, and every breakpoint meets ``kappa eps``."""
    from sklearn_ssvm.structures import GraphCRF

    X, Y = graph_data()
    make = lambda: GraphCRF(edge_features=True, directed=True, normalize_loss=True)  # noqa: E731
    path = regularization_path(BCFWStructuredSVM(make(), random_state=0, max_iter=500), X, Y,
                               eps=0.05, max_breakpoints=6)
    assert len(path.alphas_) == 6 and path.stop_reason_ == "max_breakpoints"
    assert np.all(path.gaps_ <= path.kappa * 0.05 + 1e-12)
    rng = np.random.default_rng(0)
    for lam in np.exp(rng.uniform(np.log(path.alpha_lower_), np.log(2 * path.alphas_[0]), 3)):
        long = BCFWStructuredSVM(make(), alpha=lam, tol=1e-4, max_iter=2000, step="pairwise",
                                 random_state=0).fit(X, Y)  # its dual value bounds P* below
        at = long.structure_.prepare(X, Y)
        suboptimality = primal(at, path.coef_at(lam), lam) - long.dual_objective_
        assert suboptimality <= path.gap_bound(lam) + 1e-9 <= 0.05 + 1e-9


@pytest.mark.parametrize("make", [
    lambda: BMRMStructuredSVM(ChainCRF(), max_iter=500),
    lambda: BCFWStructuredSVM(ChainCRF(), l1_ratio=0.3, max_iter=2000, random_state=0),
    lambda: SmoothSSVMClassifier(ChainCRF(), max_iter=40, random_state=0)])
def test_grid_paths_of_every_estimator(make):
    """Estimators without a certified path solve the grid through their own solver, each fit
    warm-started from the previous one: the same optima as cold fits (within the tolerance),
    gaps certified where the solver certifies, fewer oracle calls for BMRM (its cutting
    planes bound the risk at every alpha)."""
    X, Y = chain_data(0, n=12)
    alphas = 2.0 ** np.arange(0, -8, -2)
    tol = 1e-3
    smooth = isinstance(make(), SmoothSSVMClassifier)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if smooth else "error", ConvergenceWarning)
        warm = grid_search_path(make(), X, Y, alphas=alphas, tol=tol)
        cold = grid_search_path(make(), X, Y, alphas=alphas, tol=tol, warm_start=None)
    l1_ratio = getattr(make(), "l1_ratio", 0.0)
    for a in alphas:  # the optimum, from an independent solver run long
        ref = BCFWStructuredSVM(ChainCRF(), alpha=a, l1_ratio=l1_ratio, tol=1e-8, max_iter=3000,
                                step="pairwise", random_state=0).fit(X, Y)
        for path in (warm, cold):
            j = int(np.flatnonzero(path.alphas_ == a)[0])
            mine = path.best_estimator(X, Y, [a]).primal_objective(X, Y)
            assert mine >= ref.dual_objective_ - 1e-9  # never below the optimum
            assert mine - ref.primal_objective_ <= path.gaps_[j] + 1e-7  # the gap holds
            if not smooth:
                assert path.gaps_[j] <= tol
    if isinstance(make(), BMRMStructuredSVM):
        assert warm.n_oracle_calls_[-1] < cold.n_oracle_calls_[-1]
    assert warm.best_estimator(X, Y).predict(X)[0].shape == Y[0].shape
