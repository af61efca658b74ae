"""PRAGAM (spec 003): the box-hyperplane projection, the exact bias, the solver, PragamSVC."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC, LinearSVC
from sklearn.utils.estimator_checks import check_estimator

from sklearn_ssvm._kernels.pragam import kth_smallest
from sklearn_ssvm._kernels.projection import project_svm_into
from sklearn_ssvm._kernels.simplex import project_simplex
from sklearn_ssvm.estimators.pragam import PragamSVC
from sklearn_ssvm.solvers.pragam import min_bias, pragam, primal_objective, sigma_max_sq

from _box_projection import project_box_eq_into

SORTED, SELECT = 0, 1


def project(m, d, lo, hi, sigma, z, method):
    n = m.shape[0]
    out = np.empty(n)
    scratch = [np.empty(n) for _ in range(3)]
    nu = project_box_eq_into(m, d, lo, hi, sigma, z, out, *scratch, np.empty(2 * n), method)
    return out, nu


@st.composite
def box_eq_instances(draw):
    """Random feasible instances; rounding ``m`` to a coarse grid makes many kinks coincide."""
    n = draw(st.integers(1, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = rng.normal(size=n)
    if draw(st.booleans()):
        m = np.round(m, 1)
    d = rng.uniform(0.2, 3.0, n) if draw(st.booleans()) else np.ones(n)
    lo = np.round(-rng.uniform(0, 1, n), 1) if draw(st.booleans()) else np.zeros(n)
    hi = lo + (0.5 if draw(st.booleans()) else np.round(rng.uniform(0.1, 1, n), 1))
    sigma = rng.choice(draw(st.sampled_from([(-1.0, 1.0), (1.0,), (-2.0, 0.0, 0.5, 1.0)])), n)
    z = float(sigma @ rng.uniform(lo, hi))  # a feasible offset
    if draw(st.booleans()):  # offset at an extreme: the solution sits on the box's corner
        z = float(np.sum(np.where(sigma > 0, sigma * hi, sigma * lo)))
    return m, d, lo, hi, sigma, z


@settings(max_examples=300, deadline=None)
@given(box_eq_instances())
def test_projection_kkt_and_agreement(instance):
    m, d, lo, hi, sigma, z = instance
    ref, nu_ref = project(m, d, lo, hi, sigma, z, SORTED)
    fast, nu = project(m, d, lo, hi, sigma, z, SELECT)
    np.testing.assert_allclose(fast, ref, atol=1e-12)
    scale = 1.0 + np.abs(z) + np.abs(sigma) @ np.maximum(np.abs(lo), np.abs(hi))
    for a, mult in ((ref, nu_ref), (fast, nu)):
        assert np.all(a >= lo) and np.all(a <= hi)
        assert abs(sigma @ a - z) <= 1e-12 * scale
        # KKT: the gradient d(a - m) - nu sigma is >= 0 at lo, <= 0 at hi, 0 strictly inside
        grad = d * (a - m) - mult * sigma
        at_lo, at_hi = a == lo, a == hi
        inside = ~at_lo & ~at_hi
        assert np.all(grad[at_lo & ~at_hi] >= -1e-10)
        assert np.all(grad[at_hi & ~at_lo] <= 1e-10)
        np.testing.assert_allclose(grad[inside], 0.0, atol=1e-10)


@pytest.mark.parametrize("method", [SORTED, SELECT])
def test_projection_reproduces_the_simplex(method):
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 50):
        v = rng.normal(size=n) * 3
        v[: n // 2] = v[0]  # duplicates
        out, _ = project(v, np.ones(n), np.zeros(n), np.full(n, np.inf), np.ones(n), 1.0, method)
        np.testing.assert_allclose(out, project_simplex(v), atol=1e-14)


@pytest.mark.parametrize("method", [SORTED, SELECT])
def test_projection_rejects_an_infeasible_hyperplane(method):
    n = 4
    with pytest.raises(ValueError, match="infeasible"):
        project(np.zeros(n), np.ones(n), np.zeros(n), np.ones(n), np.ones(n), 5.0, method)


def test_svm_projection_equals_the_general_one_on_many_duplicates():
    rng = np.random.default_rng(1)
    n = 2000
    m = np.round(rng.normal(size=n) / n, 6)
    m[::3] = 0.0
    y = rng.choice([-1.0, 1.0], n)
    out = np.empty(n)
    project_svm_into(m, y, 1.0 / n, out, np.empty(n), np.empty(n), np.empty(n))
    ref, _ = project(m, np.ones(n), np.zeros(n), np.full(n, 1.0 / n), y, 0.0, SORTED)
    np.testing.assert_allclose(out, ref, atol=1e-15)
    assert abs(y @ out) < 1e-15


def test_kth_smallest_with_duplicates():
    rng = np.random.default_rng(2)
    for n in (1, 2, 5, 100):
        x = rng.integers(0, 4, n).astype(float)
        for k in range(n):
            buf = x.copy()
            assert kth_smallest(buf, n, k) == np.sort(x)[k]
            assert buf[k + 1:].min(initial=np.inf) >= np.sort(x)[k]


def test_min_bias_beats_every_kink():
    rng = np.random.default_rng(3)
    for n in (2, 3, 10, 101):
        margins = np.round(rng.normal(size=n), 1)
        y = rng.choice([-1.0, 1.0], n)
        y[:2] = [-1.0, 1.0]
        risk = lambda b: np.maximum(1 - y * (margins + b), 0).mean()  # noqa: E731
        b = min_bias(margins, y)
        best = min(risk(k) for k in y - margins)  # a convex piecewise-linear min is at a kink
        assert risk(b) <= best + 1e-14
        assert all(risk(b) <= risk(t) + 1e-14 for t in rng.normal(size=20))


def problem(n=60, d=20, sparse=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if sparse:
        X[rng.random((n, d)) < 0.7] = 0.0
        X = sp.csr_matrix(X)
    y = np.sign(X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) + 0.3)
    return X, y


def test_sigma_max_sq():
    X, _ = problem(sparse=True)
    assert np.isclose(sigma_max_sq(X), np.linalg.norm(X.toarray(), 2) ** 2, rtol=1e-8)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("alpha", [1e-1, 1e-3])
def test_gap_is_certified_and_within_the_bound_every_iteration(sparse, fit_intercept, alpha):
    X, y = problem(sparse=sparse)
    res = pragam(X, y, alpha, fit_intercept=fit_intercept, tol=0.0, max_iter=400)
    h = res.history
    assert h["gap"].shape == (401,) and res.n_iter == 400
    assert np.all(h["gap"] >= -1e-10)  # weak duality
    assert np.all(h["gap"] <= h["bound"])  # spec 003 eq. (26)
    a = res.dual_coef
    assert np.all(a >= 0) and np.all(a <= 1.0 / X.shape[0])
    if fit_intercept:
        assert abs(y @ a) <= 1e-12
    J, b = primal_objective(X, y, res.coef, alpha, fit_intercept)
    assert np.isclose(J, res.objective, rtol=1e-10) and np.isclose(b, res.intercept, atol=1e-10)


def test_no_bias_objective_matches_liblinear():
    X, y = problem(n=80, d=10)
    n, alpha = X.shape[0], 1e-2
    res = pragam(X, y, alpha, fit_intercept=False, tol=1e-9, max_iter=200_000)
    assert res.converged
    svc = LinearSVC(loss="hinge", C=1.0 / (alpha * n), fit_intercept=False, tol=1e-12,
                    max_iter=1_000_000, random_state=0).fit(X, y)
    J_svc, _ = primal_objective(X, y, svc.coef_.ravel(), alpha, False)
    assert abs(res.objective - J_svc) <= 1e-6 * J_svc
    assert res.dual_objective <= J_svc + 1e-12  # weak duality across solvers


def test_bias_objective_matches_libsvm():
    """SVC(kernel="linear", C = 1/(alpha n)) solves eq. (20) with an unregularised bias."""
    X, y = problem(n=80, d=10, seed=4)
    n, alpha = X.shape[0], 1e-2
    res = pragam(X, y, alpha, fit_intercept=True, tol=1e-9, max_iter=200_000)
    assert res.converged
    svc = SVC(kernel="linear", C=1.0 / (alpha * n), tol=1e-10).fit(X, y)
    J_svc, b_exact = primal_objective(X, y, svc.coef_.ravel(), alpha, True)
    assert abs(res.objective - J_svc) <= 1e-6 * J_svc
    assert res.dual_objective <= J_svc + 1e-12
    assert abs(res.intercept - b_exact) <= 1e-3


def test_warm_start_from_the_previous_dual():
    X, y = problem(n=100, d=10, seed=5)
    cold = pragam(X, y, 1e-2, fit_intercept=True, tol=1e-7, max_iter=100_000)
    warm = pragam(X, y, 1e-2, fit_intercept=True, tol=1e-7, max_iter=100_000,
                  init=cold.dual_coef)
    assert warm.converged and warm.n_iter < cold.n_iter / 2
    assert np.all(warm.history["gap"] <= warm.history["bound"])


def test_check_estimator():
    check_estimator(PragamSVC())


def test_estimator_binary_and_one_vs_rest():
    X, y = problem(n=90, d=6, seed=6)
    labels = np.where(y > 0, "yes", "no")
    clf = PragamSVC(alpha=1e-2).fit(sp.csr_matrix(X), labels)
    assert clf.coef_.shape == (1, 6) and clf.intercept_.shape == (1,)
    assert list(clf.classes_) == ["no", "yes"]
    assert 0.0 <= clf.duality_gap_ <= 1e-6
    res = pragam(X, np.where(labels == "yes", 1.0, -1.0), 1e-2, fit_intercept=True, tol=1e-6,
                 max_iter=100_000)
    np.testing.assert_allclose(clf.coef_.ravel(), res.coef)
    assert np.all(PragamSVC(alpha=1e-2, fit_intercept=False).fit(X, y).intercept_ == 0.0)
    y3 = np.argmax(X[:, :3], axis=1)
    multi = PragamSVC(alpha=1e-3).fit(X, y3)
    assert multi.coef_.shape == (3, 6) and multi.duality_gap_.shape == (3,)
    assert multi.decision_function(X).shape == (90, 3)
    assert multi.score(X, y3) > 0.9


def test_warm_start_estimator_needs_fewer_iterations():
    X, y = problem(n=100, d=10, seed=7)
    clf = PragamSVC(alpha=1e-2, warm_start=True).fit(X, y)
    first = clf.n_iter_
    clf.fit(X, y)
    assert clf.n_iter_ < first / 2


def test_errors_and_failed_fit_keeps_the_fitted_state():
    X, y = problem(n=40, d=3)
    clf = PragamSVC(alpha=1e-2).fit(X, y)
    coef, n_features = clf.coef_.copy(), clf.n_features_in_
    with pytest.raises(ValueError, match="one class"):
        clf.fit(X[:, :2], np.ones(40))
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(np.full((40, 2), np.nan), y)
    with pytest.raises(ValueError):
        clf.fit(X[:, :2], y[:10])
    for text in ("x", [["a", "b"]] * 40):  # numpy's words were about converting one string
        with pytest.raises(ValueError, match="X must hold real numbers"):
            clf.fit(text, y[:1] if text == "x" else y)
    with pytest.raises(ValueError, match="solver='agm-primal'"):
        PragamSVC(loss="f1").fit(X, y)
    np.testing.assert_array_equal(clf.coef_, coef)
    assert clf.n_features_in_ == n_features
    assert clf.predict(X).shape == (40,)
    with pytest.raises(ValueError, match="features"):
        clf.decision_function(X[:, :2])
    with pytest.warns(ConvergenceWarning):
        PragamSVC(alpha=1e-4, max_iter=5).fit(X, y)


@pytest.mark.parametrize("solver", ["agm-primal", "agm-dual", "agm-ef1-primal",
                                    "agm-ef1-dual"])
def test_agm_solvers_reach_the_pragam_objective(solver):
    """PragamSVC's AGM solvers (spec 001, EF-inf and EF-1) certify the same hinge optimum as
    PRAGAM."""
    X, y = problem(n=60, d=5)
    ref = PragamSVC(alpha=0.05, fit_intercept=False, tol=1e-9, max_iter=100_000).fit(X, y)
    clf = PragamSVC(alpha=0.05, fit_intercept=False, solver=solver, tol=1e-7,
                    max_iter=20_000).fit(X, y)
    assert clf.objective_ - ref.objective_ < 1e-5 + ref.duality_gap_
    assert clf.objective_ >= ref.objective_ - ref.duality_gap_ - 1e-12


@pytest.mark.parametrize("adaptive", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("alpha", [1e-1, 1e-3])
def test_excessive_gap_invariant_every_iteration(sparse, alpha, adaptive):
    """Spec 003 §5.2 item 2: with a_{-1} = 0 and mu_k = 4 L / ((k+1)(k+2)), or the adaptive
    steps' mu_k, the smoothed primal never exceeds the dual, J_{mu_k}(w_k) <= D(a_k) (no
    bias; the iterates after k iterations are those of a run with max_iter = k)."""
    X, y = problem(sparse=sparse)
    n = X.shape[0]
    L = sigma_max_sq(X) / alpha
    for k in range(25):
        res = pragam(X, y, alpha, tol=0.0, max_iter=k, lipschitz=L, adaptive=adaptive)
        w, a = res.coef, res.dual_coef
        mu = 2.0 * n * res.history["bound"][-1]  # the bound is mu_k D2, D2 = 1 / (2 n)
        if not adaptive:
            assert mu == pytest.approx(4.0 * L / ((k + 1) * (k + 2)), rel=1e-12)
        t = 1.0 - y * (X @ w)
        best = np.clip(t / mu, 0.0, 1.0 / n)  # argmax over [0, 1/n]^n of <a, t> - mu/2 ||a||^2
        smoothed = 0.5 * alpha * w @ w + best @ t - 0.5 * mu * best @ best
        v = X.T @ (y * a)
        assert smoothed <= a.sum() - v @ v / (2.0 * alpha) + 1e-10


# -- structured PRAGAM (App. E.1) ---------------------------------------------------------------


def _multiclass(rng, n=40, d=4, k=3):
    X = rng.normal(size=(n, d))
    return X, np.argmax(X @ rng.normal(size=(d, k)) + rng.normal(size=(n, k)), axis=1)


def _candidates(rng, n=25, d=3):
    X = [rng.normal(size=(rng.integers(2, 6), d)) for _ in range(n)]
    Y = []
    for x in X:
        losses = rng.random(len(x))
        losses[rng.integers(len(x))] = 0.0
        Y.append(losses)
    return X, Y


@pytest.mark.parametrize("structure", ["multiclass", "candidates"])
def test_structured_pragam_reaches_the_certified_optimum(structure):
    """Against BCFW's optimum (certified to 1e-9), with sample weights: the gap certifies the
    returned weights, stays within eq. (26)'s bound ``mu_k D2`` every iteration, and the
    dual value never exceeds the optimum."""
    from sklearn_ssvm import BCFWStructuredSVM, CandidateSet, MulticlassSVM, PragamStructuredSVM

    rng = np.random.default_rng(1)
    X, Y = _multiclass(rng) if structure == "multiclass" else _candidates(rng)
    make = MulticlassSVM if structure == "multiclass" else CandidateSet
    weights = rng.uniform(0.5, 2.0, len(Y))
    ref = BCFWStructuredSVM(make(), alpha=0.1, tol=1e-10, max_iter=20000, random_state=0)
    ref.fit(X, Y, sample_weight=weights)
    optimum = ref.primal_objective(X, Y, sample_weight=weights)
    assert ref.duality_gap_ <= 1e-8
    est = PragamStructuredSVM(make(), alpha=0.1, tol=1e-6, max_iter=20000)
    est.fit(X, Y, sample_weight=weights)
    assert est.converged_ and est.duality_gap_ <= 1e-6 * est.loss_scale_
    assert est.primal_objective_ == pytest.approx(est.primal_objective(X, Y, sample_weight=weights),
                                                  rel=1e-10)
    assert optimum - 1e-9 <= est.primal_objective_ <= optimum + est.duality_gap_ + 1e-9
    assert est.primal_objective_ - est.duality_gap_ <= optimum + 1e-9
    gaps = np.array([r["gap"] for r in est.history_])
    assert np.all(gaps <= np.array([r["bound"] for r in est.history_]) * (1 + 1e-9))
    assert np.all(np.diff(gaps) <= 0)
    blocks = np.add.reduceat(est.dual_coef_, est.structure_.pack(X).tok_offsets[:-1]
                             * (3 if structure == "multiclass" else 1))
    np.testing.assert_allclose(blocks, weights / weights.mean() / len(Y))
    assert np.all(est.dual_coef_ >= 0)


def test_structured_pragam_lipschitz_bounds_the_explicit_operator():
    """``L`` is at least ``sigma_max(Delta)^2 / alpha`` of the explicitly built matrix whose
    columns are every output's ``phi(x_i, y_i) - phi(x_i, y)``."""
    from sklearn_ssvm import MulticlassSVM
    from sklearn_ssvm.solvers.pragam_structured import SimplexDual

    rng = np.random.default_rng(2)
    X, y = _multiclass(rng, n=15)
    structure = MulticlassSVM()
    problem = structure.prepare(X, y)
    columns = [structure.joint_feature(x, t) - structure.joint_feature(x, c)
               for x, t in zip(X, y) for c in structure.classes_]
    exact = np.linalg.norm(np.array(columns).T, 2) ** 2 / 0.1
    L = SimplexDual(problem).lipschitz(0.1)
    assert exact <= L <= 1.1 * exact


def test_structured_pragam_refuses_what_it_does_not_train():
    from sklearn_ssvm import ChainCRF, MultiLabel, PragamStructuredSVM

    rng = np.random.default_rng(0)
    X = [rng.normal(size=(3, 2)) for _ in range(4)]
    Y = [rng.integers(0, 2, 3) for _ in range(4)]
    with pytest.raises(ValueError, match="does not train ChainCRF, only MulticlassSVM and "
                                         "CandidateSet"):
        PragamStructuredSVM(ChainCRF()).fit(X, Y)
    with pytest.raises(ValueError, match="does not train MultiLabel"):
        PragamStructuredSVM(MultiLabel()).fit(rng.normal(size=(6, 2)),
                                              rng.integers(0, 2, (6, 3)))


def test_structured_pragam_as_printed_keeps_its_bound_and_the_adaptive_steps_are_fewer():
    """Algorithm 1 at the worst-case ``L`` keeps eq. (26) every iteration and reaches the
    adaptive run's certified optimum, in more iterations."""
    from sklearn_ssvm import MulticlassSVM
    from sklearn_ssvm.solvers.pragam_structured import pragam_structured

    rng = np.random.default_rng(4)
    X, y = _multiclass(rng)
    problem = MulticlassSVM().prepare(X, y)
    fixed = pragam_structured(problem, 0.1, tol=1e-5, max_iter=20000, adaptive=False)
    adaptive = pragam_structured(problem, 0.1, tol=1e-5, max_iter=20000)
    for result in (fixed, adaptive):
        assert result.converged
        assert all(r["gap"] <= r["bound"] * (1 + 1e-9) for r in result.history)
    assert abs(fixed.objective - adaptive.objective) <= 2e-5
    assert adaptive.n_iter < fixed.n_iter
