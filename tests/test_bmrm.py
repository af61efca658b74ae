"""BMRM: the lower-bound sequence, certificates, and agreement with BCFW and LinearSVC."""
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_ssvm import BCFWStructuredSVM, BinarySVM, ChainCRF, MulticlassSVM
from sklearn_ssvm.datasets import make_chain_data, make_hadamard_bmrm
from sklearn_ssvm.estimators.bmrm import BMRMStructuredSVM
from sklearn_ssvm.solvers.bmrm import bmrm, bmrm_binary, bundle_method, pieces_oracle


def _column(history, key):
    return np.array([h[key] for h in history])


@pytest.mark.parametrize("d, lam", [(8, 0.1), (16, 0.1), (32, 1.0)])
def test_hadamard_sequence(d, lam):
    """Spec 003 §2.3 (fixed instance): w_t = -(1/(lam t)) sum_{j<=t} h_j, J_t(w_t) =
    -1/(2 lam t), J(w_t) = eps_t = 1/(2 lam t) for every t <= d."""
    pieces, offsets = make_hadamard_bmrm(d)
    h = pieces[:d]
    np.testing.assert_allclose(h @ h.T, np.eye(d), atol=1e-12)
    t = np.arange(1, d + 1)
    for T in (1, 3, d):  # the returned best iterate of a T-step run is w_T (J decreases)
        res = bundle_method(pieces_oracle(pieces, offsets), np.zeros(d), lam, tol=0.0,
                            max_iter=T, inner_tol=1e-12)
        assert res.n_iter == T
        if T > 1:  # w_0 = 0 has J = 0 and stays the best iterate
            np.testing.assert_allclose(np.vstack(res.cuts), h[:T], atol=1e-12)
    res = bundle_method(pieces_oracle(pieces, offsets), np.zeros(d), lam, tol=0.0, max_iter=d,
                        inner_tol=1e-12)
    np.testing.assert_allclose(_column(res.history, "dual_objective"), -1 / (2 * lam * t),
                               atol=1e-7)
    np.testing.assert_allclose(_column(res.history, "gap"), 1 / (2 * lam * t), atol=1e-7)
    # history t holds J(w_{t-1}): J(w_0) = 0, then J(w_t) = 1/(2 lam t)
    objective = _column(res.history, "objective")
    assert objective[0] == 0.0
    np.testing.assert_allclose(objective[1:], 1 / (2 * lam * t[:-1]), atol=1e-7)
    # iterations to certify eps: ceil(1/(2 lam eps)) while that is <= d
    for eps in (1 / (2 * lam * d), 1 / (2 * lam * 3.5)):
        run = bundle_method(pieces_oracle(pieces, offsets), np.zeros(d), lam,
                            tol=eps * (1 + 1e-9), max_iter=d, inner_tol=1e-12)
        assert run.n_iter == int(np.ceil(1 / (2 * lam * eps) - 1e-9))


@pytest.mark.parametrize("variant", ["qp", "ls"])
def test_warm_start_from_blocks_equals_the_matrix_and_keeps_the_earlier_bundle(variant):
    """A bundle of more than one block of cuts (the model's storage, returned uncopied) warm
    starts a run as its matrix of rows does, to the bit, and twice from the same bundle: the
    later runs adopt its full blocks but write none of its rows."""
    pieces, offsets = make_hadamard_bmrm(64)
    oracle = pieces_oracle(pieces, offsets)
    first = bundle_method(oracle, np.zeros(64), 0.1, variant=variant, tol=0.0, max_iter=37)
    kept = np.vstack(first.cuts).copy()
    if variant == "qp":
        assert [block.shape[0] for block in first.cuts] == [16, 16, 5]
    runs = [bundle_method(oracle, first.coef, 0.05, variant=variant, tol=0.0, max_iter=9,
                          cuts=cuts, offsets=first.offsets)
            for cuts in (first.cuts, first.cuts, np.vstack(first.cuts))]
    for run in runs[1:]:
        assert np.array_equal(run.coef, runs[0].coef)
        assert np.array_equal(np.vstack(run.cuts), np.vstack(runs[0].cuts))
    assert np.array_equal(np.vstack(first.cuts), kept)
    n_cuts = kept.shape[0]
    with pytest.raises(ValueError, match=f"{n_cuts} cuts and {n_cuts + 1} offsets"):
        bundle_method(oracle, first.coef, 0.05, variant=variant, cuts=first.cuts,
                      offsets=np.append(first.offsets, 0.0))


def test_hadamard_paper_instance_stops_after_two_iterations():
    """The construction as printed has antipodal pieces (spec 003 §2.3 erratum)."""
    lam, d = 0.1, 16
    pieces, offsets = make_hadamard_bmrm(d, variant="paper")
    assert pieces[0] @ pieces[d // 2] == pytest.approx(-1.0)
    res = bundle_method(pieces_oracle(pieces, offsets), np.zeros(d), lam, tol=0.0,
                        max_iter=10)
    assert res.n_iter == 2
    assert res.history[0]["dual_objective"] == pytest.approx(-1 / (2 * lam))
    assert res.history[1]["objective"] == pytest.approx(3 / (2 * lam))
    assert res.history[1]["gap"] == pytest.approx(0.0, abs=1e-12)


def test_hadamard_rejects_bad_sizes():
    with pytest.raises(ValueError, match="power of 2"):
        make_hadamard_bmrm(12)
    with pytest.raises(ValueError, match="variant"):
        make_hadamard_bmrm(8, variant="other")


def _chain_problem():
    X, Y = make_chain_data(n_samples=15, n_features=5, n_labels=3, random_state=0)
    return ChainCRF(normalize_loss=True), X, Y  # the scale (1) of the absolute gaps below


def _multiclass_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    return MulticlassSVM(), X, np.argmax(X[:, :3] + rng.normal(size=(40, 3)), axis=1)


@pytest.mark.parametrize("make", [_chain_problem, _multiclass_problem])
@pytest.mark.parametrize("variant", ["qp", "ls"])
def test_gap_and_lower_bound(make, variant):
    """eps_t >= 0 and J_t(w_t) non-decreasing (warm-started model QP / line search), and the
    gap is J_best - lower bound."""
    structure, X, Y = make()
    problem = structure.prepare(X, Y)
    res = bmrm(problem, 0.05, variant=variant, tol=0.0, max_iter=60)
    gap, lower = _column(res.history, "gap"), _column(res.history, "dual_objective")
    best = np.minimum.accumulate(_column(res.history, "objective"))
    assert np.all(gap >= -1e-12)
    assert np.all(np.diff(lower) >= -1e-10)
    np.testing.assert_allclose(gap, best - lower, atol=1e-12)
    assert res.objective == pytest.approx(0.5 * 0.05 * res.coef @ res.coef
                                       + problem.hinge_losses(res.coef).mean(), abs=1e-12)


@pytest.mark.parametrize("make", [_chain_problem, _multiclass_problem])
def test_reaches_bcfw_optimum_within_its_gap(make):
    structure, X, Y = make()
    alpha = 0.05
    ref = BCFWStructuredSVM(structure, alpha=alpha, tol=1e-8, max_iter=5000, step="pairwise",
                            random_state=0).fit(X, Y)
    assert ref.duality_gap_ <= 1e-8
    for variant, tol in (("qp", 1e-6), ("ls", 1e-2)):
        est = BMRMStructuredSVM(structure, alpha=alpha, variant=variant, tol=tol,
                                max_iter=3000).fit(X, Y)
        assert est.converged_ and 0 <= est.duality_gap_ <= tol
        # the certificate brackets the optimum: lower bound <= P* <= J(coef_) <= lower + gap
        assert est.lower_bound_ <= ref.primal_objective_ + 1e-8
        assert est.primal_objective_ >= ref.dual_objective_ - 1e-8
        assert est.primal_objective_ - ref.primal_objective_ <= est.duality_gap_ + 1e-8
        assert est.primal_objective(X, Y) == pytest.approx(est.primal_objective_, abs=1e-12)


def test_binary_agrees_with_structure_and_liblinear():
    """bmrm_binary (dense and CSR) solves BinarySVM's problem, LinearSVC's with C = 1/(lam n)."""
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 6)) * (rng.random((80, 6)) < 0.6)
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=80) > 0, 1.0, -1.0)
    lam = 1e-2
    dense = bmrm_binary(X, y, lam, tol=1e-9, max_iter=2000)
    sparse = bmrm_binary(sp.csr_matrix(X), y, lam, tol=1e-9, max_iter=2000)
    assert dense.converged and sparse.converged
    np.testing.assert_allclose(sparse.coef, dense.coef, atol=1e-6)
    problem = BinarySVM(fit_intercept=False).prepare(X, y)  # bmrm_binary's: no intercept
    structured = bmrm(problem, lam, tol=1e-9, max_iter=2000)
    assert structured.objective == pytest.approx(dense.objective, abs=2e-9)
    svc = LinearSVC(loss="hinge", C=1 / (lam * len(y)), fit_intercept=False, tol=1e-10,
                    max_iter=200000).fit(X, y)
    w = svc.coef_.ravel()
    reference = 0.5 * lam * w @ w + np.maximum(0, 1 - y * (X @ w)).mean()
    assert dense.dual_objective <= reference + 1e-12
    assert dense.objective <= reference + 1e-9
    ls = bmrm_binary(X, y, lam, variant="ls", tol=1e-3, max_iter=5000)
    assert ls.converged and ls.objective - dense.objective <= 1e-3 + 1e-9


def test_estimator_warm_start_reuses_the_bundle():
    structure, X, Y = _multiclass_problem()
    est = BMRMStructuredSVM(structure, alpha=0.05, tol=1e-5).fit(X, Y)
    assert np.vstack(est.bundle_[0]).shape == (est.n_iter_, est.coef_.shape[0])
    cold = BMRMStructuredSVM(structure, alpha=0.02, tol=1e-5).fit(X, Y)
    est.set_params(alpha=0.02, warm_start=True).fit(X, Y)
    assert est.converged_ and cold.converged_
    assert est.n_iter_ < cold.n_iter_
    assert abs(est.primal_objective_ - cold.primal_objective_) <= 1e-5
    assert est.score(X, Y) == pytest.approx(cold.score(X, Y), abs=0.05)
    with pytest.raises(ValueError, match="variant"):
        BMRMStructuredSVM(structure, variant="cg").fit(X, Y)
