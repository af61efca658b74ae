"""BCFW: duality identities, bookkeeping, and agreement with independent solvers."""
from dataclasses import astuple

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.svm import LinearSVC

from sklearn_ssvm import (BCFWStructuredSVM, BinarySVM, BMRMStructuredSVM, ChainCRF, MulticlassSVM,
                          MultiLabel)
from sklearn_ssvm._kernels.bcfw import PassAtoms, PassAverages, PassDual, PassSchedule, PassWeights
from sklearn_ssvm.solvers.bcfw import bcfw, certificate, weights

from _brute import all_labelings

# bounds of no box constraints, for direct calls of the BCFW kernel
NO_BOX = (np.zeros((0, 1)), np.zeros((0, 1)), np.zeros(0), np.zeros(0))


def chain_data(rng, n=20, n_features=4, n_labels=3, max_len=5):
    X, Y = [], []
    W = rng.normal(size=(n_features, n_labels))
    for i in range(n):
        T = 1 + i % max_len
        x = rng.normal(size=(T, n_features))
        X.append(x)
        Y.append(np.argmax(x @ W + rng.normal(scale=1.0, size=(T, n_labels)), axis=1))
    return X, Y


@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM(), MultiLabel(pairwise="tree")])
def test_gap_identities_along_the_run(structure):
    """sum_i g_i = P(w) - D(alpha) >= 0, block gaps >= 0, w = sum of blocks (spec 002 §11)."""
    rng = np.random.default_rng(0)
    if isinstance(structure, ChainCRF):
        X, Y = chain_data(rng)
    elif isinstance(structure, MultiLabel):
        X, Y = rng.normal(size=(30, 4)), rng.integers(0, 2, size=(30, 4))
    else:
        X, Y = rng.normal(size=(30, 4)), rng.integers(0, 3, size=30)
    problem = structure.prepare(X, Y)
    alpha = 0.1
    for max_iter in (1, 3, 7):
        res = bcfw(problem, alpha, max_iter=max_iter, tol=0.0, random_state=1)
        cert = certificate(problem, res.state, res.coef, alpha)
        assert np.all(cert.block_gaps >= -1e-12)
        assert cert.gap == pytest.approx(cert.primal - cert.dual, abs=1e-10)
        # the incrementally updated w equals w(alpha) recomputed from the label-space state
        np.testing.assert_allclose(res.coef, weights(problem, res.state, alpha), atol=1e-10)
        # independent primal: hinge by brute-force enumeration
        hinge = []
        for x, y in zip(X, Y):
            gold = res.coef @ structure.joint_feature(x, y)
            hinge.append(max(structure.loss(y, z) + res.coef @ structure.joint_feature(x, z)
                             - gold for z in all_labelings(structure, x)))
        primal = 0.5 * alpha * res.coef @ res.coef + np.mean(hinge)
        assert cert.primal == pytest.approx(primal, abs=1e-10)


def test_dual_is_monotone():
    rng = np.random.default_rng(2)
    X, Y = chain_data(rng)
    problem = ChainCRF().prepare(X, Y)
    duals = []
    res = None
    for _ in range(6):
        res = bcfw(problem, 0.05, max_iter=1, tol=0.0, random_state=len(duals),
                   init=None if res is None else res.state)
        duals.append(res.certificate.dual)
    assert np.all(np.diff(duals) >= -1e-12)


def qp_chain_optimum(structure, X, Y, alpha, lower=None):
    """Independent solution of the n-slack QP (spec 002 (48), (49) with ``w >= lower``) by
    SLSQP on tiny data."""
    n = len(X)
    d = structure.n_params
    rows = []  # xi_i >= L(y_i, y) + <w, phi(x_i, y) - phi(x_i, y_i)>
    for i, (x, y) in enumerate(zip(X, Y)):
        gold = structure.joint_feature(x, y)
        for z in all_labelings(structure, x):
            rows.append((i, structure.joint_feature(x, z) - gold, structure.loss(y, z)))
    A = np.array([r[1] for r in rows])
    b = np.array([r[2] for r in rows])
    idx = np.array([r[0] for r in rows])

    def obj(v):
        return 0.5 * alpha * v[:d] @ v[:d] + v[d:].mean()

    def jac(v):
        return np.concatenate([alpha * v[:d], np.full(n, 1.0 / n)])

    cons = {"type": "ineq", "fun": lambda v: v[d:][idx] - A @ v[:d] - b,
            "jac": lambda v: np.hstack([-A, np.eye(n)[idx]])}
    bounds = None if lower is None else [(lo if np.isfinite(lo) else None, None)
                                         for lo in lower] + [(None, None)] * n
    res = minimize(obj, np.concatenate([np.zeros(d), np.ones(n)]), jac=jac, constraints=[cons],
                   bounds=bounds, method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
    assert res.success, res.message
    return res.fun


def test_chain_matches_qp_solution():
    rng = np.random.default_rng(5)
    X, Y = chain_data(rng, n=6, n_features=2, n_labels=2, max_len=3)
    alpha = 0.2
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=alpha, max_iter=3000,
                            tol=1e-3, random_state=0).fit(X, Y)
    p_star = qp_chain_optimum(est.structure_, X, Y, alpha)
    # weak duality against the independent optimum: D(alpha) <= P* <= P(w) <= D + gap
    assert est.converged_ and est.duality_gap_ <= 1e-3
    assert est.dual_objective_ <= p_star + 1e-9
    assert p_star <= est.primal_objective_ + 1e-9
    assert est.primal_objective_ - p_star <= est.duality_gap_ + 1e-9


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_binary_matches_linear_svc(fit_intercept):
    """liblinear's problem, its intercept included (a constant feature ``intercept_scaling``,
    its weight penalised)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    offset = 0.8 if fit_intercept else 0.0  # a base rate only an intercept can express
    y = np.sign(X @ rng.normal(size=5) + offset + 0.5 * rng.normal(size=60))
    alpha, scaling = 0.05, 2.0
    est = BCFWStructuredSVM(BinarySVM(fit_intercept=fit_intercept, intercept_scaling=scaling),
                            alpha=alpha, max_iter=5000, tol=1e-9, random_state=0).fit(X, y)
    svc = LinearSVC(loss="hinge", C=1 / (alpha * len(y)), fit_intercept=fit_intercept,
                    intercept_scaling=scaling, tol=1e-10, max_iter=200000).fit(X, y)
    w, b = svc.coef_.ravel(), np.atleast_1d(svc.intercept_)
    p_svc = (0.5 * alpha * (w @ w + (b[0] / scaling) ** 2)
             + np.maximum(0, 1 - y * (X @ w + b[0])).mean())
    assert est.primal_objective_ == pytest.approx(p_svc, rel=1e-6)
    assert est.coef_.shape == (5 + fit_intercept,)
    np.testing.assert_allclose(est.coef_[:5], w, atol=1e-3)
    np.testing.assert_allclose(est.intercept_, b, atol=1e-3)
    assert not fit_intercept or abs(b[0]) > 0.1
    np.testing.assert_allclose(est.decision_function(X), X @ est.coef_[:5] + est.intercept_)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_multiclass_matches_crammer_singer(fit_intercept):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 4))
    offset = np.array([0.0, 0.7, -0.7]) if fit_intercept else 0.0
    y = np.argmax(X @ rng.normal(size=(4, 3)) + offset + 0.5 * rng.normal(size=(60, 3)),
                  axis=1)
    alpha = 0.05
    est = BCFWStructuredSVM(MulticlassSVM(fit_intercept=fit_intercept), alpha=alpha,
                            max_iter=5000, tol=1e-4, random_state=0).fit(X, y)
    svc = LinearSVC(multi_class="crammer_singer", C=1 / (alpha * len(y)),
                    fit_intercept=fit_intercept, tol=1e-10, max_iter=200000).fit(X, y)
    b = np.broadcast_to(svc.intercept_, (3,))
    # our layout: (n_features [+ 1], n_classes) feature-major, the constant feature last
    w = np.vstack([svc.coef_.T, b[None]] if fit_intercept else [svc.coef_.T]).ravel()
    scores = X @ svc.coef_.T + b
    hinge = np.max(scores + (np.arange(3)[None] != y[:, None]), axis=1) - scores[np.arange(60), y]
    p_svc = 0.5 * alpha * w @ w + hinge.mean()
    # Frank-Wolfe is sublinear here: sandwich liblinear's optimum with the certificate
    assert est.converged_
    assert est.dual_objective_ <= p_svc + 1e-9 <= est.primal_objective_ + 2e-9
    assert est.primal_objective_ - p_svc <= est.duality_gap_ + 1e-9
    # both within sqrt(2 gap / alpha) of the optimum, the objective being alpha-strongly convex
    assert np.linalg.norm(est.coef_ - w) <= 2 * np.sqrt(2 * est.duality_gap_ / alpha)
    assert est.intercept_.shape == (3,)
    assert not fit_intercept or np.ptp(svc.intercept_) > 0.2


def test_same_seed_same_coef():
    rng = np.random.default_rng(3)
    X, Y = chain_data(rng)
    a = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=5, random_state=7).fit(X, Y)
    b = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=5, random_state=7).fit(X, Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert all(h["gap"] >= 0 for h in a.history_ if np.isfinite(h["gap"]))


def test_warm_start_continues():
    rng = np.random.default_rng(4)
    X, Y = chain_data(rng)
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=2, tol=0.0, random_state=0,
                            warm_start=True).fit(X, Y)
    dual0 = est.dual_objective_
    est.fit(X, Y)
    assert est.dual_objective_ >= dual0 - 1e-12
    est.set_params(alpha=0.05).fit(X, Y)  # a new alpha keeps the dual point, gap stays exact
    assert est.duality_gap_ == pytest.approx(est.primal_objective_ - est.dual_objective_)


def test_weighted_averaging_is_the_weighted_mean_of_iterates():
    """w_bar^(K) = sum_k k w^(k) / (K(K+1)/2) over steps (spec 002 §2), and its gap is exact."""
    rng = np.random.default_rng(6)
    X, Y = chain_data(rng, n=7)
    problem = ChainCRF().prepare(X, Y)
    alpha = 0.1
    # one step per call: the k-th call's iterate is w^(k)
    from sklearn_ssvm._kernels.bcfw import bcfw_pass
    from sklearn_ssvm.solvers.bcfw import ActiveSets, DualState
    state = DualState.at_labels(problem)
    averages = DualState.zeros_like(state)
    no_atoms = astuple(ActiveSets.none(problem))
    coef = np.zeros(problem.n_params)
    W, theta = problem.split_coef(coef)
    gram, gram_off = problem.gram
    blocks = rng.integers(0, problem.n_samples, size=25)
    total = np.zeros_like(coef)
    for k, i in enumerate(blocks, start=1):
        bcfw_pass(problem.packed(), gram, gram_off,
                  PassWeights(W, theta, W, theta, *NO_BOX, alpha, 0.0),
                  PassDual(state.M, state.Q, state.ell_blocks, problem.block_n),
                  PassSchedule(np.array([i]), 1, np.zeros(0), False, -1.0,
                               np.zeros(problem.n_samples)),
                  PassAtoms(0, *no_atoms, False, 0.0, 0.0), PassAverages(k - 1, *averages.arrays()),
                  0)
        total += k * coef
    K = len(blocks)
    mean = total / (K * (K + 1) / 2)
    averaged = state.minus(averages, 2.0 / (K * (K + 1)))
    np.testing.assert_allclose(weights(problem, averaged, alpha), mean, atol=1e-10)
    cert = certificate(problem, averaged, mean, alpha)
    assert cert.gap >= -1e-12 and np.all(cert.block_gaps >= -1e-12)
    assert cert.gap == pytest.approx(cert.primal - cert.dual, abs=1e-10)


def test_averaging_estimator_certifies_the_average():
    rng = np.random.default_rng(8)
    X, Y = chain_data(rng)
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=20, averaging=True, tol=0.0,
                            random_state=0).fit(X, Y)
    assert est.primal_objective(X, Y) == pytest.approx(est.primal_objective_)
    assert est.duality_gap_ == pytest.approx(est.primal_objective_ - est.dual_objective_)


@pytest.mark.parametrize("sampling", ["gap", "uniform", "perm"])
def test_every_sampling_reaches_the_same_optimum(sampling):
    rng = np.random.default_rng(9)
    X, Y = chain_data(rng, n=15, n_features=3)
    alpha = 0.2
    est = BCFWStructuredSVM(ChainCRF(), alpha=alpha, max_iter=3000, tol=1e-3, sampling=sampling,
                            random_state=0).fit(X, Y)
    p_star = qp_chain_optimum(est.structure_, X, Y, alpha)
    assert est.converged_
    assert est.dual_objective_ <= p_star + 1e-9 <= est.primal_objective_ + 2e-9


def test_gap_sampling_visits_every_block_first_then_follows_the_gaps():
    """Alg. 2 with +inf initial estimates: the first pass is a permutation (spec 002 §3.1)."""
    from sklearn_ssvm._kernels.bcfw import bcfw_pass
    from sklearn_ssvm.solvers.bcfw import ActiveSets, DualState, _pass_order
    rng = np.random.default_rng(10)
    X, Y = chain_data(rng, n=12)
    problem = ChainCRF().prepare(X, Y)
    n = problem.n_samples
    state = DualState.at_labels(problem)
    coef = np.zeros(problem.n_params)
    W, theta = problem.split_coef(coef)
    gram, gram_off = problem.gram
    estimates = np.full(n, np.inf)
    no_avg = DualState.zeros_like(state, rows=False)
    fixed = (PassWeights(W, theta, W, theta, *NO_BOX, 0.1, 0.0),
             PassDual(state.M, state.Q, state.ell_blocks, problem.block_n))
    no_atoms = (PassAtoms(0, *astuple(ActiveSets.none(problem)), False, 0.0, 0.0),
                PassAverages(0, *no_avg.arrays()))
    first, uniforms = _pass_order("gap", estimates, rng)
    assert sorted(first) == list(range(n))
    done, _, _ = bcfw_pass(problem.packed(), gram, gram_off, *fixed,
                           PassSchedule(first, n, uniforms, True, -1.0, estimates), *no_atoms, 0)
    assert done == n and np.all(np.isfinite(estimates))
    # a block whose estimate is 0 is never drawn again; with all estimates 0 the pass stops
    estimates[:] = 0.0
    first, uniforms = _pass_order("gap", estimates, rng)
    assert len(first) == 0
    done, _, _ = bcfw_pass(problem.packed(), gram, gram_off, *fixed,
                           PassSchedule(first, n, uniforms, True, -1.0, estimates), *no_atoms, 0)
    assert done == 0


def test_unnormalised_loss_is_the_normalised_one_at_alpha_times_length():
    """For sequences of one length T the count-loss objective at alpha is T times the
    normalised one at alpha T, at w / T (ChainCRF's docstring): both fits certify it."""
    rng = np.random.default_rng(5)
    T = 4
    X = [rng.normal(size=(T, 3)) for _ in range(30)]
    Y = [rng.integers(0, 3, size=T) for _ in range(30)]
    alpha = 0.02
    count = BCFWStructuredSVM(ChainCRF(normalize_loss=False), alpha=alpha, step="pairwise",
                              tol=1e-9, max_iter=5000, random_state=0).fit(X, Y)
    normalised = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=alpha * T, step="pairwise",
                                   tol=1e-9, max_iter=5000, random_state=0).fit(X, Y)
    assert count.converged_ and normalised.converged_
    assert count.primal_objective_ == pytest.approx(T * normalised.primal_objective_, abs=1e-7)
    np.testing.assert_allclose(count.coef_, T * normalised.coef_, atol=1e-4)


@pytest.mark.parametrize("estimator, tol", [
    (lambda structure, alpha, tol: BCFWStructuredSVM(structure, alpha=alpha, tol=tol,
                                                     max_iter=2000, random_state=0), 1e-3),
    (lambda structure, alpha, tol: BCFWStructuredSVM(structure, alpha=alpha, step="fw",
                                                     tol=tol, max_iter=2000, random_state=0),
     1e-2),
    (lambda structure, alpha, tol: BMRMStructuredSVM(structure, alpha=alpha, tol=tol), 1e-3)])
def test_tol_is_relative_the_same_precision_with_either_loss(estimator, tol):
    """tol is relative to the zero model's objective: the count loss at alpha and the
    normalised loss at alpha T (one model, sequences of one length T) stop at the same
    relative precision after about the same work, while their absolute gaps differ by T."""
    rng = np.random.default_rng(5)
    T = 6
    X = [rng.normal(size=(T, 3)) for _ in range(40)]
    Y = [rng.integers(0, 3, size=T) for _ in range(40)]
    count = estimator(ChainCRF(normalize_loss=False), 0.01, tol).fit(X, Y)
    normalised = estimator(ChainCRF(normalize_loss=True), 0.01 * T, tol).fit(X, Y)
    assert count.loss_scale_ == pytest.approx(T) and normalised.loss_scale_ == pytest.approx(1)
    for est in (count, normalised):
        assert est.converged_ and est.duality_gap_ <= tol * est.loss_scale_
    assert count.duality_gap_ > tol  # not an absolute precision
    assert abs(count.n_iter_ - normalised.n_iter_) <= 0.1 * normalised.n_iter_
    # both within tol (relative) of one optimum: P_count(w) = T P_normalised(w / T)
    assert abs(count.primal_objective_ / T - normalised.primal_objective_) <= tol


@pytest.mark.parametrize("normalize_loss", [True, False])
def test_score_is_the_token_accuracy_with_either_loss(normalize_loss):
    X, Y = chain_data(np.random.default_rng(8), n=30)
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=normalize_loss), alpha=0.1, max_iter=3,
                            random_state=0).fit(X, Y)
    expected = np.mean([np.mean(p == y) for p, y in zip(est.predict(X), Y)])
    assert est.score(X, Y) == pytest.approx(expected)


def test_gap_sampling_needs_fewer_passes_than_uniform():
    """The paper's finding (spec 002 §9.2): gap sampling converges in fewer effective passes."""
    rng = np.random.default_rng(11)
    X, Y = chain_data(rng, n=200, n_features=6, n_labels=4, max_len=6)
    calls = {}
    for sampling in ("gap", "uniform"):
        runs = [BCFWStructuredSVM(ChainCRF(), alpha=0.01, tol=1e-3, max_iter=2000,
                                  sampling=sampling, random_state=s).fit(X, Y)
                for s in range(3)]
        assert all(r.converged_ for r in runs)
        calls[sampling] = np.median([r.n_oracle_calls_ for r in runs])
    assert calls["gap"] < calls["uniform"]


# -- pairwise and away steps (spec 002 §4, §11 items 2, 4, 10, 18, 19) -----------------------

@pytest.mark.parametrize("step", ["pairwise", "away"])
@pytest.mark.parametrize("data", ["random", "ocr"])
@pytest.mark.parametrize("room", [64, 2])
def test_active_sets_stay_consistent(step, data, room):
    """With room 2 the store is at its cap (``drop_when_full``): corners wait while full sets
    step within themselves, and the bookkeeping must hold all the same."""
    from sklearn_ssvm._kernels.bcfw import AWAY, PAIRWISE, bcfw_pass, state_from_atoms
    from sklearn_ssvm.datasets import load_ocr_letters
    from sklearn_ssvm.solvers.bcfw import ActiveSets, DualState
    rng = np.random.default_rng(12)
    if data == "ocr":  # real data: the oracle often returns an active labeling (y* == y_a)
        ocr = load_ocr_letters()
        X, Y = ocr.data[:60], ocr.target[:60]
    else:
        X, Y = chain_data(rng, n=25)
    problem = ChainCRF().prepare(X, Y)
    n, alpha = problem.n_samples, 0.01
    state = DualState.at_labels(problem)
    atoms = ActiveSets.at_labels(problem, capacity=room)
    capped = room < 64
    coef = np.zeros(problem.n_params)
    W, theta = problem.split_coef(coef)
    gram, gram_off = problem.gram
    no_avg = DualState.zeros_like(state, rows=False)
    estimates = np.full(n, np.inf)
    duals = []
    for _ in range(15):
        done, full, _ = bcfw_pass(
            problem.packed(), gram, gram_off, PassWeights(W, theta, W, theta, *NO_BOX, alpha, 0.0),
            PassDual(state.M, state.Q, state.ell_blocks, problem.block_n),
            PassSchedule(rng.integers(0, n, size=n), n, np.zeros(0), False, -1.0, estimates),
            PassAtoms(PAIRWISE if step == "pairwise" else AWAY, atoms.labels, atoms.weights,
                      atoms.count, False, 0.0, 0.0), PassAverages(0, *no_avg.arrays()), 0, capped)
        assert done == n and not full
        duals.append(state.ell_blocks.sum() - 0.5 * alpha * coef @ coef)
        for i in range(n):
            w = atoms.weights[i, :atoms.count[i]]
            assert atoms.count[i] >= 1
            assert np.all(w > 0) and abs(w.sum() - 1) <= 1e-12
            assert np.all(atoms.weights[i, atoms.count[i]:] == 0)
        # incremental state == state rebuilt from the atoms, and w == A alpha
        rebuilt = state.copy()
        state_from_atoms(problem.packed(), atoms.labels, atoms.weights.copy(), atoms.count,
                         rebuilt.M, rebuilt.Q, rebuilt.ell_blocks, problem.block_n)
        np.testing.assert_allclose(rebuilt.M, state.M, atol=1e-12)
        np.testing.assert_allclose(rebuilt.Q, state.Q, atol=1e-12)
        np.testing.assert_allclose(rebuilt.ell_blocks, state.ell_blocks, atol=1e-14)
        np.testing.assert_allclose(weights(problem, state, alpha), coef, atol=1e-10)
    # every step is an exact line search on f, at the cap too (a full set steps within itself)
    assert np.all(np.diff(duals) >= -1e-12)
    assert atoms.count.max() == (2 if capped else atoms.count.max()) and atoms.count.max() > 1


@pytest.mark.parametrize("step", ["pairwise", "away"])
@pytest.mark.parametrize("cache", [False, True])
def test_capped_active_sets_reach_the_qp_optimum(step, cache):
    """``max_active`` bounds the store; at the cap a full active set steps within itself, the
    dual feasible and never lower, so the certified gap still closes on the QP's optimum."""
    rng = np.random.default_rng(5)
    X, Y = chain_data(rng, n=6, n_features=2, n_labels=3, max_len=4)
    alpha = 0.02
    problem = ChainCRF(normalize_loss=True).prepare(X, Y)
    free = bcfw(problem, alpha, max_iter=4000, tol=1e-6, step=step, random_state=0)
    # the optimum needs 4 atoms in one block; on the way there blocks hold more
    capped = bcfw(problem, alpha, max_iter=4000, tol=1e-6, step=step, cache=cache,
                  cache_size=4, max_active=4, random_state=0)
    assert capped.active_sets.room == 4 and capped.active_sets.count.max() == 4
    if not cache:  # the cap bound: steps within full sets changed the run
        assert [h.get("gap") for h in capped.history] != [h.get("gap") for h in free.history]
    assert capped.converged and capped.certificate.gap <= 1e-6
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=alpha, max_iter=1,
                            tol=0.0).fit(X, Y)
    p_star = qp_chain_optimum(est.structure_, X, Y, alpha)
    assert p_star <= capped.certificate.primal <= p_star + 1e-6
    assert p_star <= free.certificate.primal <= p_star + 1e-6


def test_max_active_is_validated():
    rng = np.random.default_rng(5)
    X, Y = chain_data(rng, n=4)
    with pytest.raises(ValueError, match="max_active"):
        BCFWStructuredSVM(ChainCRF(), step="pairwise", max_active=0).fit(X, Y)


@pytest.mark.parametrize("step", ["pairwise", "away"])
def test_pairwise_and_away_reach_the_qp_optimum(step):
    rng = np.random.default_rng(5)
    X, Y = chain_data(rng, n=6, n_features=2, n_labels=2, max_len=3)
    alpha = 0.2
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=alpha, max_iter=3000,
                            tol=1e-8, step=step, random_state=0).fit(X, Y)
    p_star = qp_chain_optimum(est.structure_, X, Y, alpha)
    assert est.converged_ and est.duality_gap_ <= 1e-8
    assert est.primal_objective_ == pytest.approx(p_star, abs=1e-7)


def test_pairwise_binary_matches_linear_svc_to_1e6():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = np.sign(X @ rng.normal(size=5) + 0.5 * rng.normal(size=60))
    alpha = 0.05
    est = BCFWStructuredSVM(BinarySVM(fit_intercept=False), alpha=alpha, max_iter=5000,
                            tol=1e-10, step="pairwise", random_state=0).fit(X, y)
    svc = LinearSVC(loss="hinge", C=1 / (alpha * len(y)), fit_intercept=False, tol=1e-10,
                    max_iter=1000000).fit(X, y)
    w = svc.coef_.ravel()
    p_svc = 0.5 * alpha * w @ w + np.maximum(0, 1 - y * (X @ w)).mean()
    assert est.converged_
    assert est.primal_objective_ == pytest.approx(p_svc, rel=1e-6)


def test_pairwise_multiclass_matches_crammer_singer_to_1e6():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 4))
    y = np.argmax(X @ rng.normal(size=(4, 3)) + 0.5 * rng.normal(size=(60, 3)), axis=1)
    alpha = 0.05
    est = BCFWStructuredSVM(MulticlassSVM(fit_intercept=False), alpha=alpha, max_iter=5000,
                            tol=1e-10, step="pairwise", random_state=0).fit(X, y)
    svc = LinearSVC(multi_class="crammer_singer", C=1 / (alpha * len(y)), fit_intercept=False,
                    tol=1e-10, max_iter=1000000).fit(X, y)
    scores = X @ svc.coef_.T
    hinge = np.max(scores + (np.arange(3)[None] != y[:, None]), axis=1) - scores[np.arange(60), y]
    p_svc = 0.5 * alpha * np.sum(svc.coef_ ** 2) + hinge.mean()
    assert est.converged_
    assert est.primal_objective_ == pytest.approx(p_svc, rel=1e-6)


def test_active_set_store_grows_when_full():
    rng = np.random.default_rng(13)
    X, Y = chain_data(rng, n=10)
    problem = ChainCRF().prepare(X, Y)
    from sklearn_ssvm.solvers.bcfw import ActiveSets, DualState
    init = DualState.at_labels(problem)
    tiny = ActiveSets.at_labels(problem, capacity=1)
    res = bcfw(problem, 0.05, max_iter=20, tol=0.0, step="pairwise", random_state=0, init=init,
               init_active_sets=tiny)
    assert res.active_sets.labels.shape[1] > 1
    assert res.active_sets.count.max() > 1
    cert = certificate(problem, res.state, weights(problem, res.state, 0.05), 0.05)
    assert cert.gap == pytest.approx(res.certificate.gap)


def test_warm_start_keeps_the_active_sets():
    rng = np.random.default_rng(14)
    X, Y = chain_data(rng)
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=3, tol=0.0, step="pairwise",
                            warm_start=True, random_state=0).fit(X, Y)
    dual0 = est.dual_objective_
    est.fit(X, Y)
    assert est.dual_objective_ >= dual0 - 1e-12
    with pytest.raises(ValueError, match="active sets"):
        est.set_params(step="fw").fit(X, Y)
        est.set_params(step="pairwise").fit(X, Y)


# -- oracle caching (spec 002 §5, §11 items 15-17) -------------------------------------------

def test_cache_that_never_hits_changes_nothing():
    """Item 15: hit threshold +inf: no hits and the very same trajectory as without a cache."""
    rng = np.random.default_rng(15)
    X, Y = chain_data(rng, n=30)
    problem = ChainCRF().prepare(X, Y)
    plain = bcfw(problem, 0.05, max_iter=12, tol=0.0, random_state=3)
    never = bcfw(problem, 0.05, max_iter=12, tol=0.0, random_state=3, cache=True,
                 cache_F=np.inf)
    assert never.n_cache_hits == 0
    np.testing.assert_array_equal(never.coef, plain.coef)
    assert never.n_oracle_calls == plain.n_oracle_calls


@pytest.mark.parametrize("step", ["fw", "pairwise"])
def test_cache_hits_save_oracle_calls_and_keep_the_optimum(step):
    rng = np.random.default_rng(16)
    X, Y = chain_data(rng, n=6, n_features=2, n_labels=2, max_len=3)
    alpha = 0.2
    est = BCFWStructuredSVM(ChainCRF(), alpha=alpha, max_iter=3000, tol=1e-4, step=step,
                            cache=True, cache_size=3, random_state=0,
                            warm_start=True).fit(X, Y)  # keeps the atoms
    p_star = qp_chain_optimum(est.structure_, X, Y, alpha)
    assert est.converged_ and est.n_cache_hits_ > 0
    assert est.dual_objective_ <= p_star + 1e-9 <= est.primal_objective_ + 2e-9
    atoms = est.active_sets_
    assert np.all(atoms.count <= max(3, atoms.labels.shape[1]))
    if step == "fw":
        assert np.all(atoms.count <= 3)


def test_cache_reduces_oracle_calls_per_gap_on_ocr_words():
    """The paper's finding (§9.2): caching helps per effective pass."""
    from sklearn_ssvm.datasets import load_ocr_letters
    ocr = load_ocr_letters()
    X, Y = ocr.data[:300], ocr.target[:300]
    calls = {}
    for cache in (False, True):
        est = BCFWStructuredSVM(ChainCRF(), alpha=0.01, tol=0.02, max_iter=500, cache=cache,
                                random_state=0).fit(X, Y)
        assert est.converged_
        calls[cache] = est.n_oracle_calls_
    assert calls[True] < calls[False]


def test_cache_without_any_criterion_is_refused():
    rng = np.random.default_rng(17)
    X, Y = chain_data(rng, n=5)
    problem = ChainCRF().prepare(X, Y)
    with pytest.raises(ValueError, match="cache_F or cache_nu"):
        bcfw(problem, 0.1, cache=True, cache_F=0.0, cache_nu=0.0)


# -- box constraints (spec 002 §7, §11 items 1, 23) -------------------------------------------

def test_infinite_bounds_change_nothing():
    rng = np.random.default_rng(18)
    X, Y = chain_data(rng, n=20)
    problem = ChainCRF().prepare(X, Y)
    free = bcfw(problem, 0.05, max_iter=8, tol=0.0, random_state=2)
    boxed = bcfw(problem, 0.05, max_iter=8, tol=0.0, random_state=2,
                 bounds=(-np.inf, np.inf))
    np.testing.assert_array_equal(boxed.coef, free.coef)


@pytest.mark.parametrize("step, tol", [("fw", 1e-4), ("pairwise", 1e-7)])
def test_positive_transitions_match_the_constrained_qp(step, tol):
    rng = np.random.default_rng(19)
    X, Y = chain_data(rng, n=6, n_features=2, n_labels=2, max_len=3)
    structure = ChainCRF()
    problem = structure.prepare(X, Y)
    alpha = 0.2
    lower = np.full(problem.n_params, -np.inf)
    lower[problem.n_features * problem.n_codes:] = 0.0  # transitions >= 0
    res = bcfw(problem, alpha, max_iter=3000, tol=tol, step=step, bounds=(lower, np.inf),
               random_state=0)
    cert = res.certificate
    assert res.converged and np.all(res.coef >= lower)
    assert np.any(res.coef[lower == 0] == 0)  # the constraint is active
    assert cert.gap == pytest.approx(cert.primal - cert.dual, abs=1e-10)
    # the primal of the clipped w, evaluated independently
    primal = 0.5 * alpha * res.coef @ res.coef + problem.hinge_losses(res.coef).mean()
    assert cert.primal == pytest.approx(primal, abs=1e-12)
    p_star = qp_chain_optimum(structure, X, Y, alpha, lower=lower)
    assert cert.dual <= p_star + 1e-7 and p_star <= cert.primal + 1e-7
    assert cert.primal - p_star <= cert.gap + 1e-7


def test_bounds_are_validated():
    rng = np.random.default_rng(20)
    X, Y = chain_data(rng, n=5)
    problem = ChainCRF().prepare(X, Y)
    with pytest.raises(ValueError, match="lower <= upper"):
        bcfw(problem, 0.1, bounds=(1.0, 0.0))


def test_estimator_positive_pairwise():
    rng = np.random.default_rng(21)
    X, Y = chain_data(rng, n=30)
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.05, coef_bounds="positive_pairwise",
                            random_state=0).fit(X, Y)
    F, C = est.n_features_in_ + 3, len(est.classes_)
    assert np.all(est.coef_[F * C:] >= 0)
    assert est.duality_gap_ == pytest.approx(est.primal_objective_ - est.dual_objective_)
    assert est.primal_objective(X, Y) == pytest.approx(est.primal_objective_)
    with pytest.raises(ValueError, match="n_params"):
        BCFWStructuredSVM(ChainCRF(), coef_bounds=(np.zeros(3), np.ones(3))).fit(X, Y)


# -- the toy problem of spec 002 App. C: gap sampling is min{n, K, 1/(n eps)} times faster ---

def app_c_toy(n, K):
    """One hard object (K candidates along orthogonal directions) and n - 1 easy ones."""
    from sklearn_ssvm import CandidateSet
    losses = np.r_[0.0, np.ones(K)]
    hard = np.zeros((K + 1, K + 1))
    hard[1:, :K] = -np.eye(K) / np.sqrt(2)  # phi(x_1, k) = -e_k / sqrt(2)
    easy = np.zeros((K + 1, K + 1))
    easy[1:, K] = -1.0  # phi(x_i, k) = -e_{K+1}
    X = [hard] + [easy] * (n - 1)
    return CandidateSet(), X, [losses] * n


def test_app_c_toy_optimum_and_gap_sampling_advantage():
    n, K = 200, 50
    structure, X, Y = app_c_toy(n, K)
    problem = structure.prepare(X, Y)
    alpha = 1.0 / n
    p_star = (1.5 - 1.0 / (4 * K)) / n
    w_star = np.r_[np.full(K, 1 / (K * np.sqrt(2))), 1.0]
    calls = {}
    for sampling in ("gap", "uniform"):
        runs = [bcfw(problem, alpha, tol=1e-4, max_iter=5000, sampling=sampling,
                     random_state=seed) for seed in range(3)]
        for res in runs:
            assert res.converged
            assert res.certificate.primal == pytest.approx(p_star, abs=1e-4)
            assert res.certificate.dual <= p_star + 1e-12
        calls[sampling] = np.median([r.n_oracle_calls for r in runs])
        if sampling == "gap":
            np.testing.assert_allclose(runs[0].coef, w_star, atol=2e-2)
    # App. C: O(n + t) oracle calls for gap sampling against O(n t) for uniform sampling
    assert calls["uniform"] >= 3 * calls["gap"]


def test_warm_start_to_a_smaller_alpha_keeps_the_primal_point():
    """Prop. 1 (spec 002 §8.3): w kept, ell scaled, the new gap exact."""
    rng = np.random.default_rng(22)
    X, Y = chain_data(rng)
    for step in ("fw", "pairwise"):
        est = BCFWStructuredSVM(ChainCRF(), alpha=0.2, max_iter=5, tol=0.0, step=step,
                                warm_start=True, random_state=0).fit(X, Y)
        coef = est.coef_.copy()
        est.set_params(alpha=0.1, max_iter=1)
        problem = est.structure_.prepare(X, Y)
        from sklearn_ssvm.solvers.bcfw import DualState, keep_primal_rescale
        moved = keep_primal_rescale(est.dual_state_, 0.5, DualState.at_labels(problem))
        np.testing.assert_allclose(weights(problem, moved, 0.1), coef, atol=1e-12)
        est.fit(X, Y)
        assert est.duality_gap_ == pytest.approx(est.primal_objective_ - est.dual_objective_)
        assert est.primal_objective(X, Y) == pytest.approx(est.primal_objective_)


def _structure_problem(kind, rng):
    """A small problem of each structure kind with random labelings to compare."""
    from sklearn_ssvm import BinarySVM, CandidateSet
    if kind == "chain":
        X, Y = chain_data(rng, n=6, max_len=6)
        return ChainCRF().prepare(X, Y)
    if kind == "multiclass":
        return MulticlassSVM().prepare(rng.normal(size=(6, 3)), rng.integers(0, 4, size=6))
    if kind == "binary":
        return BinarySVM().prepare(rng.normal(size=(6, 3)), np.array([0, 1] * 3))
    if kind == "candidates":
        X = [rng.normal(size=(5, 3)) for _ in range(6)]
        losses = [np.r_[0.0, rng.uniform(size=4)] for _ in range(6)]
        return CandidateSet().prepare(X, losses)
    if kind == "graph":  # each example its own graph, real edge features weighing the pairs
        from sklearn_ssvm import GraphCRF
        edges = [np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 1]])[:rng.integers(2, 6)]
                 for _ in range(6)]
        X = [(rng.normal(size=(4, 3)), e, rng.normal(size=(len(e), 2))) for e in edges]
        Y = [rng.integers(0, 3, size=4) for _ in range(6)]
        return GraphCRF(edge_features=True).prepare(X, Y).label_space()
    X, Y = rng.normal(size=(6, 3)), rng.integers(0, 2, size=(6, 5))
    return MultiLabel(pairwise=None if kind == "independent" else kind).prepare(X, Y)


@pytest.mark.parametrize("kind", ["chain", "multiclass", "binary", "candidates", "independent",
                                  "tree", "full", "graph"])
def test_sparse_difference_matches_the_dense_statistics(kind):
    """stats_difference, entries_quadratic and add_entries_outer against add_stats,
    gram_quadratic and add_outer_into, on random pairs of labelings (equal ones included); the
    line searches without a Gram matrix (direct_quadratic, direct_entries_quadratic) against
    ``||X_i^T D||^2 + ||dq||^2`` formed by scipy."""
    from sklearn_ssvm._kernels.labelings import add_stats, stats_difference
    from sklearn_ssvm._kernels.sparse import (add_entries_outer, add_outer_into,
                                              direct_entries_quadratic, direct_quadratic,
                                              entries_quadratic, gram_quadratic)
    rng = np.random.default_rng(31)
    problem = _structure_problem(kind, rng)
    gram, gram_off = problem.gram
    C, p, tok, nodes = problem.n_codes, problem.n_pair, problem.tok_offsets, problem.node_offsets
    n_labels = {"chain": C, "multiclass": C, "binary": 2, "graph": C}.get(kind)
    for i in range(problem.n_samples):
        T, size = tok[i + 1] - tok[i], nodes[i + 1] - nodes[i]
        high = T if kind == "candidates" else (n_labels or 2)
        for trial in range(6):
            a = rng.integers(0, high, size=size).astype(np.int32)
            b = a.copy() if trial == 0 else rng.integers(0, high, size=size).astype(np.int32)
            D, dq = np.zeros((T, C)), np.zeros(p)
            graph = problem.example_graph(i)
            add_stats(problem.kind, a, 1.0, D, dq, graph)
            add_stats(problem.kind, b, -1.0, D, dq, graph)
            rows, cols = np.empty(2 * size, np.int64), np.empty(2 * size, np.int64)
            vals = np.empty(2 * size)
            q_index = np.empty(2 * max(size, graph[1].size, graph[0].shape[0]), np.int64)
            q_vals = np.empty(q_index.shape[0])
            n_s, n_q = stats_difference(problem.kind, a, b, graph, C, rows, cols, vals,
                                        q_index, q_vals)
            D_sparse, dq_sparse = np.zeros((T, C)), np.zeros(p)
            np.add.at(D_sparse, (rows[:n_s], cols[:n_s]), vals[:n_s])
            np.add.at(dq_sparse, q_index[:n_q], q_vals[:n_q])
            np.testing.assert_array_equal(D_sparse, D)
            # the graphs' edge features: the sparse difference cancels exactly what the sums of
            # add_stats leave to rounding
            np.testing.assert_allclose(dq_sparse, dq, rtol=0, atol=1e-12)
            assert (n_s == 0) == (trial == 0 or np.array_equal(a, b))
            dense_quad = gram_quadratic(gram, gram_off[i], T, D) + dq @ dq
            assert entries_quadratic(gram, gram_off[i], T, rows, cols, vals, n_s, q_index,
                                     q_vals, n_q) == pytest.approx(dense_quad, abs=1e-12)
            X_i = problem.token_matrix()[tok[i]:tok[i + 1]]
            reference = np.sum((X_i.T @ D) ** 2) + dq @ dq
            assert dense_quad == pytest.approx(reference, abs=1e-12)
            V, Vq = np.zeros((problem.n_features, C)), np.zeros(p)
            args = problem.indptr, problem.indices, problem.data, tok[i]
            assert direct_quadratic(*args, T, D, V) + dq @ dq == pytest.approx(reference,
                                                                              abs=1e-12)
            assert direct_entries_quadratic(*args, rows, cols, vals, n_s, q_index, q_vals, n_q,
                                            V, Vq) == pytest.approx(reference, abs=1e-12)
            assert not V.any() and not Vq.any()  # the scratch is left zero
            W_dense = rng.normal(size=(problem.n_features, C))
            W_sparse = W_dense.copy()
            add_outer_into(problem.indptr, problem.indices, problem.data, tok[i], tok[i + 1],
                           D, -0.7, W_dense, False)
            # the atomic additions of parallel steps add the same
            add_entries_outer(problem.indptr, problem.indices, problem.data, tok[i], rows, cols,
                              vals, n_s, -0.7, W_sparse, True)
            np.testing.assert_allclose(W_sparse, W_dense, atol=1e-12)


@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM(), MultiLabel(pairwise="tree")])
@pytest.mark.parametrize("cache", [False, True])
def test_sparse_pairwise_steps_equal_the_dense_ones(structure, cache):
    """Pairwise steps move along sparse directions; with (infinite) bounds the kernel takes its
    dense path. From the same dual point, a pass of each makes the same steps to rounding.
    (Not whole runs: where two labelings score the same, rounding breaks the tie either way.)"""
    from sklearn_ssvm._kernels.bcfw import PAIRWISE, bcfw_pass
    from sklearn_ssvm.solvers.bcfw import DualState
    rng = np.random.default_rng(32)
    if isinstance(structure, ChainCRF):
        X, Y = chain_data(rng, n=25)
    elif isinstance(structure, MultiLabel):
        X, Y = rng.normal(size=(30, 4)), rng.integers(0, 2, size=(30, 4))
    else:
        X, Y = rng.normal(size=(30, 4)), rng.integers(0, 3, size=30)
    problem = structure.prepare(X, Y)
    n, alpha = problem.n_samples, 0.05
    start = bcfw(problem, alpha, max_iter=4, tol=0.0, step="pairwise", cache=cache,
                 cache_size=6, random_state=3)  # a generic point: scores without ties
    gram, gram_off = problem.gram
    order = rng.permutation(n)
    p = problem.n_pair
    runs = []
    for bounded in (False, True):
        state, atoms = start.state.copy(), start.active_sets.copy()
        coef = weights(problem, state, alpha)
        W, theta = problem.split_coef(coef)
        box = NO_BOX
        if bounded:
            box = (np.full(W.shape, -np.inf), np.full(W.shape, np.inf), np.full(p, -np.inf),
                   np.full(p, np.inf))
        scored = problem.split_coef(coef.copy()) if bounded else (W, theta)
        estimates = start.gap_estimates.copy()
        done, full, hits = bcfw_pass(
            problem.packed(), gram, gram_off, PassWeights(W, theta, *scored, *box, alpha, 0.0),
            PassDual(state.M, state.Q, state.ell_blocks, problem.block_n),
            PassSchedule(order, n, np.zeros(0), False, -1.0, estimates),
            PassAtoms(PAIRWISE, atoms.labels, atoms.weights, atoms.count, cache, 0.25,
                      1e-12),  # no hits of gap ~0
            PassAverages(0, *DualState.zeros_like(state, rows=False).arrays()), 0)
        assert done == n and not full
        runs.append((coef, state, atoms, estimates, hits))
    (c1, s1, a1, e1, h1), (c2, s2, a2, e2, h2) = runs
    assert h1 == h2 and (h1 > 0) == cache  # the cache path is exercised
    np.testing.assert_array_equal(a1.count, a2.count)
    np.testing.assert_array_equal(a1.labels, a2.labels)
    np.testing.assert_allclose(a1.weights, a2.weights, atol=1e-12)
    np.testing.assert_allclose(c1, c2, atol=1e-12)
    for x, y in zip(s1.arrays(), s2.arrays()):
        np.testing.assert_allclose(x, y, atol=1e-12)
    np.testing.assert_allclose(e1, e2, atol=1e-12)


def test_prefetch_accepts_contiguous_arrays_only():
    """The prefetch hint compiles for the arrays the kernels pass (any dtype, 1-D or 2-D,
    empty spans) and refuses non-contiguous ones at compile time."""
    import numba
    from numba import njit
    from sklearn_ssvm._kernels.prefetch import prefetch, prefetch_rows, prefetch_span

    for arr in (np.arange(10.0), np.arange(12, dtype=np.int32).reshape(3, 4),
                np.zeros(0, dtype=np.int64)):
        prefetch_span(arr, 0, arr.size)
        prefetch_span(arr, 3, 3)  # empty span: nothing to fetch
    W = np.zeros((5, 3))
    prefetch_rows(np.array([4, 0, 2], dtype=np.int32), 0, 3, W)

    @njit
    def strided(a):
        prefetch(a[::2], 1)

    with pytest.raises(numba.core.errors.TypingError):
        strided(np.arange(10.0))


def test_dual_state_is_kept_and_pickled_only_for_warm_starts():
    import pickle
    rng = np.random.default_rng(3)
    X, Y = chain_data(rng, n=30)
    lean = BCFWStructuredSVM(ChainCRF(), max_iter=5, step="pairwise", random_state=0).fit(X, Y)
    warm = clone(lean).set_params(warm_start=True).fit(X, Y)
    assert lean.dual_state_ is None and lean.active_sets_ is None
    assert warm.dual_state_ is not None and warm.active_sets_ is not None
    np.testing.assert_array_equal(lean.coef_, warm.coef_)
    assert len(pickle.dumps(lean)) < len(pickle.dumps(warm))
    # a lean model refits from scratch even when warm_start is switched on afterwards
    refit = lean.set_params(warm_start=True).fit(X, Y)
    np.testing.assert_array_equal(refit.coef_, warm.coef_)
    resumed = pickle.loads(pickle.dumps(warm)).set_params(max_iter=1).fit(X, Y)
    assert resumed.dual_objective_ >= warm.dual_objective_ - 1e-12
