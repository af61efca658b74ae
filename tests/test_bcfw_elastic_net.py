"""BCFW on the elastic-net dual: exact line searches, certificates, and the optimum against an
independent QP (issue #14, items 4 and 5)."""
from functools import partial

import numpy as np
import pytest

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, MulticlassSVM
from sklearn_ssvm._kernels.bcfw import (AWAY, FW, PAIRWISE, PassAtoms, PassAverages, PassDual,
                                        PassSchedule, PassWeights, bcfw_pass)
from sklearn_ssvm.model_selection import regularization_path
from sklearn_ssvm.penalties import ElasticNet, soft_threshold
from sklearn_ssvm.solvers.bcfw import DualState, bcfw, certificate, weights

from _brute import all_features, all_labelings, elastic_net_qp
from test_bcfw import chain_data as bcfw_chain_data

# bounds of no box constraints, for direct calls of the BCFW kernel
NO_BOX = (np.zeros((0, 1)), np.zeros((0, 1)), np.zeros(0), np.zeros(0))
STEP_TYPES = {"fw": FW, "pairwise": PAIRWISE, "away": AWAY}


# tiny chains: few labels and short sequences, so every labeling can be enumerated
chain_data = partial(bcfw_chain_data, n=6, n_features=3, n_labels=2, max_len=3)


def multiclass_data(rng, n=8, n_features=3, n_classes=3):
    X = rng.normal(size=(n, n_features))
    y = np.argmax(X @ rng.normal(size=(n_features, n_classes))
                  + rng.normal(size=(n, n_classes)), axis=1)
    return X, y


def brute_primal(structure, X, Y, penalty, coef):
    """``r(w) + mean_i max_y [L + <w, phi(x_i, y) - phi(x_i, y_i)>]`` by enumeration."""
    hinges = []
    for x, y in zip(X, Y):
        _, Phi, losses, phi_true = all_features(structure, x, y)
        hinges.append(np.max(losses + (Phi - phi_true) @ coef))
    return penalty.value(coef) + np.mean(hinges)


def run_pass(problem, penalty, state, atoms, W, theta, Wc, theta_c, blocks, step_type,
             averages=None):
    """One call of the kernel over ``blocks`` (a cache that never hits keeps every atom in
    place, so atom weights before and after a step line up)."""
    gram, gram_off = problem.gram
    if averages is None:
        averages = DualState.zeros_like(state, rows=False)
    done, full, _ = bcfw_pass(
        problem.packed(), gram, gram_off,
        PassWeights(W, theta, Wc, theta_c, *NO_BOX, penalty.c, penalty.l1 / penalty.c),
        PassDual(state.M, state.Q, state.ell_blocks, problem.block_n),
        PassSchedule(np.asarray(blocks), len(blocks), np.zeros(0), False, -1.0,
                     np.full(problem.n_samples, np.inf)),
        PassAtoms(step_type, atoms.labels, atoms.weights, atoms.count, True, np.inf, 0.0),
        PassAverages(0, *averages.arrays()), 0)
    assert done == len(blocks) and not full


def start_point(problem, penalty, step, passes=3):
    """A generic dual point (a few passes), its active sets with room, and the kernel's
    weights ``v = u / c`` and ``soft(v, l1 / c)``."""
    res = bcfw(problem, penalty, max_iter=passes, tol=0.0, step=step, cache=True,
               cache_size=64, random_state=0)
    coef = weights(problem, res.state, penalty)
    scored = soft_threshold(coef, penalty.l1 / penalty.c)
    return res.state.copy(), res.active_sets.copy(), coef, scored


# -- the line search inside the kernel -------------------------------------------------------

@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM()])
@pytest.mark.parametrize("step", ["fw", "pairwise", "away"])
def test_every_step_maximises_the_dual_along_its_direction(structure, step):
    """After each single step, the exact dual ``D(s) = ell(s) - r*(u(s))`` on the segment
    ``state + s (after - before)`` is maximal at ``s = 1``: ``D'(1) = 0`` inside the feasible
    segment, ``D'(1) >= 0`` at its end (the largest feasible ``s`` follows from the atoms)."""
    rng = np.random.default_rng(1)
    if isinstance(structure, ChainCRF):
        X, Y = chain_data(rng, n=6, n_features=3, n_labels=3)
    else:
        X, Y = multiclass_data(rng)
    problem = structure.prepare(X, Y)
    penalty = ElasticNet.from_alpha(0.3, 0.5)
    c, t = penalty.c, penalty.l1
    state, atoms, coef, scored = start_point(problem, penalty, step, passes=1)
    W, theta = problem.split_coef(coef)
    Wc, theta_c = problem.split_coef(scored)
    interior = kinks = 0
    for i in rng.integers(0, problem.n_samples, size=40):
        before, weights_before = state.copy(), atoms.weights.copy()
        run_pass(problem, penalty, state, atoms, W, theta, Wc, theta_c, [i], STEP_TYPES[step])
        u0, u1 = weights(problem, before, 1.0), weights(problem, state, 1.0)
        du, dell = u1 - u0, state.ell_blocks.sum() - before.ell_blocks.sum()
        # the kernel's weights are u / c and soft(u / c, l1 / c)
        np.testing.assert_allclose(coef, u1 / c, atol=1e-12)
        np.testing.assert_allclose(scored, soft_threshold(u1, t) / c, atol=1e-12)
        if np.max(np.abs(du)) <= 1e-12:  # no step, or one of rounding size near the optimum
            continue
        moved = atoms.weights - weights_before
        shrinking = moved < 0
        s_max = np.min(weights_before[shrinking] / -moved[shrinking])
        assert s_max >= 1 - 1e-9  # the step stays feasible

        def slope(s):  # D'(s), D concave and piecewise quadratic along the segment
            return dell - soft_threshold(u0 + s * du, t) @ du / c

        scale = abs(dell) + np.abs(soft_threshold(u1, t)) @ np.abs(du) / c
        assert slope(0.0) >= -1e-9 * scale  # an ascent direction (D may be flat at first)
        if s_max > 1 + 1e-9:
            assert abs(slope(1.0)) <= 1e-9 * scale
            interior += 1
        else:
            assert slope(1.0) >= -1e-9 * scale
        kinks += np.any((np.abs(u0) > t) != (np.abs(u1) > t))
    assert interior > 0 and kinks > 0  # steps that stop inside and that cross thresholds


def test_line_search_without_l1_is_the_l2_step():
    """The gathered line search with a tiny threshold makes the L2 steps (the closed form
    ``N lambda n^2 / quad`` the kernel takes at ``l1 = 0``) to rounding: the constants map
    consistently."""
    rng = np.random.default_rng(2)
    X, Y = chain_data(rng, n=12, n_features=4, n_labels=3, max_len=4)
    problem = ChainCRF().prepare(X, Y)
    l2 = ElasticNet(0.2)
    tiny = ElasticNet(0.2, 1e-12)
    for step in ("fw", "pairwise", "away"):
        state, atoms, coef, _ = start_point(problem, l2, step)
        order = rng.permutation(problem.n_samples)
        runs = []
        for penalty in (l2, tiny):
            s, a, v = state.copy(), atoms.copy(), coef.copy()
            W, theta = problem.split_coef(v)
            scored = v if penalty is l2 else v.copy()
            Wc, theta_c = problem.split_coef(scored)
            run_pass(problem, penalty, s, a, W, theta, Wc, theta_c, order, STEP_TYPES[step])
            runs.append((s, a, v, scored))
        (s1, a1, v1, _), (s2, a2, v2, w2) = runs
        np.testing.assert_allclose(a2.weights, a1.weights, atol=1e-9)
        np.testing.assert_allclose(v2, v1, atol=1e-9)
        np.testing.assert_allclose(w2, v2, atol=1e-10)
        np.testing.assert_allclose(s2.M, s1.M, atol=1e-9)


@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM()])
def test_sparse_pairwise_steps_equal_the_dense_ones(structure):
    """Sparse pairwise steps gather only the entries where two labelings differ; averaging
    sends the kernel down its dense path. From one point, a pass of each agrees to rounding."""
    rng = np.random.default_rng(3)
    if isinstance(structure, ChainCRF):
        X, Y = chain_data(rng, n=25, n_features=4, n_labels=3, max_len=5)
    else:
        X, Y = multiclass_data(rng, n=30)
    problem = structure.prepare(X, Y)
    penalty = ElasticNet.from_alpha(0.05, 0.5)
    state, atoms, coef, scored = start_point(problem, penalty, "pairwise", passes=4)
    order = rng.permutation(problem.n_samples)
    runs = []
    for dense in (False, True):
        s, a, v, w = state.copy(), atoms.copy(), coef.copy(), scored.copy()
        averages = DualState.zeros_like(s, rows=dense)
        run_pass(problem, penalty, s, a, *problem.split_coef(v), *problem.split_coef(w), order,
                 PAIRWISE, averages=averages)
        runs.append((s, a, v, w))
    (s1, a1, v1, w1), (s2, a2, v2, w2) = runs
    np.testing.assert_array_equal(a1.labels, a2.labels)
    np.testing.assert_allclose(a1.weights, a2.weights, atol=1e-12)
    np.testing.assert_allclose(v1, v2, atol=1e-12)
    np.testing.assert_allclose(w1, w2, atol=1e-12)
    for x, y in zip(s1.arrays(), s2.arrays()):
        np.testing.assert_allclose(x, y, atol=1e-12)
    assert np.any(w1 == 0) and not np.array_equal(v1, w1)  # the threshold is at work


# -- certificates ----------------------------------------------------------------------------

@pytest.mark.parametrize("step, averaging", [("fw", False), ("pairwise", False), ("away", True)])
def test_gap_is_the_sum_of_block_gaps(step, averaging):
    """``P(w) - D(a) = sum_i g_i`` with ``w = soft(u)``, P by enumeration, along the run."""
    rng = np.random.default_rng(4)
    X, Y = chain_data(rng, n=8, n_features=3, n_labels=3)
    structure = ChainCRF()
    problem = structure.prepare(X, Y)
    penalty = ElasticNet.from_alpha(0.1, 0.4)
    for max_iter in (1, 4, 9):
        res = bcfw(problem, penalty, max_iter=max_iter, tol=0.0, step=step, cache=True,
                   averaging=averaging, sampling="perm", random_state=1)
        cert = res.certificate
        assert np.all(cert.block_gaps >= -1e-12)
        assert cert.gap == pytest.approx(cert.primal - cert.dual, abs=1e-12)
        u = weights(problem, res.certified_state, 1.0)
        np.testing.assert_array_equal(res.coef, cert.coef)
        np.testing.assert_allclose(res.coef, penalty.dual_map(u), atol=1e-12)
        assert cert.dual == pytest.approx(res.certified_state.ell_blocks.sum()
                                          - penalty.conjugate(u), abs=1e-12)
        assert cert.primal == pytest.approx(brute_primal(structure, X, Y, penalty, res.coef),
                                            abs=1e-12)
        recomputed = certificate(problem, res.certified_state,
                                 weights(problem, res.certified_state, penalty), penalty)
        assert recomputed.gap == pytest.approx(cert.gap, abs=1e-12)


# -- l1_ratio = 0 is the L2 fit ----------------------------------------------------------------

@pytest.mark.parametrize("settings", [dict(step="fw"), dict(step="pairwise", cache=True),
                                      dict(step="fw", averaging=True), dict(step="away")])
def test_l1_ratio_zero_is_the_l2_fit_to_the_bit(settings):
    rng = np.random.default_rng(5)
    X, Y = chain_data(rng, n=20, n_features=4, n_labels=3, max_len=5)
    common = dict(alpha=0.05, max_iter=12, tol=0.0, gap_check=4, random_state=0, **settings)
    plain = BCFWStructuredSVM(ChainCRF(), **common).fit(X, Y)
    zero = BCFWStructuredSVM(ChainCRF(), l1_ratio=0.0, **common).fit(X, Y)
    np.testing.assert_array_equal(zero.coef_, plain.coef_)
    assert zero.duality_gap_ == plain.duality_gap_
    problem = plain.structure_.prepare(X, Y)
    by_float = bcfw(problem, 0.05, max_iter=12, tol=0.0, gap_check=4, random_state=0, **settings)
    np.testing.assert_array_equal(by_float.coef, plain.coef_)


# -- the optimum against an independent solve ----------------------------------------------------

CHAIN_RUNS = [dict(step="fw", tol=1e-6), dict(step="fw", cache=True, cache_size=3, tol=1e-6),
              dict(step="pairwise", tol=1e-9), dict(step="away", tol=1e-9),
              dict(step="pairwise", cache=True, cache_size=3, tol=1e-9),
              dict(step="away", cache=True, cache_size=3, tol=1e-9),
              # weighted averaging, whose gap is checked: with gap sampling it stalls once the
              # last iterate's gaps vanish (the sampler stops drawing), hence other samplings
              dict(step="fw", averaging=True, sampling="uniform", tol=1e-6),
              dict(step="pairwise", averaging=True, sampling="perm", tol=1e-7)]


def _check_optimum(est, p_qp, w_qp):
    """``D <= P* <= P(w) <= D + gap`` with the QP's value ``P_qp >= P*``, and ``P`` within
    ``1e-6`` of it."""
    assert est.converged_ and est.duality_gap_ <= est.tol
    assert est.duality_gap_ == pytest.approx(est.primal_objective_ - est.dual_objective_,
                                             abs=1e-12)
    assert est.dual_objective_ <= p_qp + 1e-9
    assert est.primal_objective_ - p_qp <= est.duality_gap_ + 1e-9
    assert abs(est.primal_objective_ - p_qp) <= 1e-6
    # the unique minimiser (r is strongly convex), to the accuracy the gap allows
    assert np.linalg.norm(est.coef_ - w_qp) <= 3 * np.sqrt(2 * est.duality_gap_ / est.alpha_
                                                           / (1 - est.l1_ratio)) + 1e-4


def _fit_against_qp(structure, X, Y, alpha, settings, l1_ratio=0.3):
    """BCFW on the elastic net against the QP; the l1 part is active at the optimum."""
    est = BCFWStructuredSVM(structure, alpha=alpha, l1_ratio=l1_ratio, max_iter=50000,
                            random_state=0, **settings).fit(X, Y)
    p_qp, w_qp = elastic_net_qp(est.structure_, X, Y, ElasticNet.from_alpha(alpha, l1_ratio))
    _check_optimum(est, p_qp, w_qp)
    assert 0 < np.count_nonzero(np.abs(w_qp) > 1e-9) < w_qp.size  # SLSQP's zeros are ~1e-16


@pytest.mark.parametrize("settings", CHAIN_RUNS)
def test_chain_matches_the_elastic_net_qp(settings):
    X, Y = chain_data(np.random.default_rng(1), n=6, n_features=3, n_labels=2)
    _fit_against_qp(ChainCRF(normalize_loss=True), X, Y, 1.0, settings)


@pytest.mark.parametrize("settings", [CHAIN_RUNS[0], CHAIN_RUNS[2], CHAIN_RUNS[5],
                                      CHAIN_RUNS[7]])
def test_multiclass_matches_the_elastic_net_qp(settings):
    X, y = multiclass_data(np.random.default_rng(6))
    _fit_against_qp(MulticlassSVM(), X, y, 0.5, settings)


def test_kkt_at_the_solution():
    """Zero coefficients have a loss subgradient within ``alpha l1_ratio``; the others satisfy
    ``c w + g + l1 sign(w) = 0``. The subgradient ``g = -(1/n) sum_i E_{alpha_i} psi_i`` is
    rebuilt from the active labelings by enumeration, and they are (near-)maximisers at ``w``."""
    rng = np.random.default_rng(1)
    X, Y = chain_data(rng, n=6, n_features=3, n_labels=2)
    penalty = ElasticNet.from_alpha(1.0, 0.3)
    est = BCFWStructuredSVM(ChainCRF(), alpha=1.0, l1_ratio=0.3, step="pairwise", tol=1e-12,
                            max_iter=50000, random_state=0, warm_start=True).fit(X, Y)
    structure, atoms, w = est.structure_, est.active_sets_, est.coef_
    n = len(X)
    problem = structure.prepare(X, Y)
    off = problem.node_offsets
    grad = np.zeros_like(w)
    for i, (x, y) in enumerate(zip(X, Y)):
        gold = structure.joint_feature(x, y)
        best = max(structure.loss(y, z) + w @ (structure.joint_feature(x, z) - gold)
                   for z in all_labelings(structure, x))
        for k in range(atoms.count[i]):
            if atoms.weights[i, k] == 0:
                continue
            z = structure.classes_[atoms.labels[off[i]:off[i + 1], k]]
            phi = structure.joint_feature(x, z)
            assert structure.loss(y, z) + w @ (phi - gold) >= best - 1e-9
            grad += atoms.weights[i, k] * (phi - gold) / n
    assert penalty.subgradient_distance(w, grad) <= 1e-9
    zero = w == 0
    assert zero.any() and np.all(np.abs(grad[zero]) <= penalty.l1 + 1e-9)
    # the averaged dual point (no active sets of its own): its gradient -A a, the same zeros
    res = bcfw(problem, penalty, tol=1e-8, max_iter=50000, step="pairwise", averaging=True,
               sampling="perm", random_state=0)
    u = weights(problem, res.certified_state, 1.0)
    assert penalty.subgradient_distance(res.coef, -u) <= 1e-12
    np.testing.assert_array_equal(res.coef == 0, zero)


def test_sizeable_l1_ratio_gives_exact_zeros():
    rng = np.random.default_rng(7)
    X, Y = chain_data(rng, n=40, n_features=8, n_labels=4, max_len=6)
    common = dict(alpha=0.2, step="pairwise", sampling="perm", max_iter=3000, tol=1e-4,
                  random_state=0)
    l2 = BCFWStructuredSVM(ChainCRF(), **common).fit(X, Y)
    sparse = BCFWStructuredSVM(ChainCRF(), l1_ratio=0.7, **common).fit(X, Y)
    assert sparse.converged_
    assert l2.n_nonzero_coef_ == l2.coef_.size
    assert sparse.n_nonzero_coef_ == np.count_nonzero(sparse.coef_) < 0.7 * sparse.coef_.size
    assert sparse.primal_objective(X, Y) == pytest.approx(sparse.primal_objective_, abs=1e-12)


def test_warm_start_keeps_the_dual_point():
    """With l1 the dual point is kept as it is (no Prop. 1 rescaling): the new fit starts at
    its dual value at the new penalty, ascends from there and its gap stays exact."""
    rng = np.random.default_rng(8)
    X, Y = chain_data(rng, n=15, n_features=4, n_labels=3, max_len=4)
    for step in ("fw", "pairwise"):
        est = BCFWStructuredSVM(ChainCRF(), alpha=0.2, l1_ratio=0.5, max_iter=5, tol=0.0,
                                step=step, warm_start=True, random_state=0).fit(X, Y)
        kept = est.dual_state_.copy()
        est.set_params(alpha=0.1, max_iter=1, gap_check=1).fit(X, Y)
        problem = est.structure_.prepare(X, Y)
        penalty = ElasticNet.from_alpha(0.1, 0.5)
        start = certificate(problem, kept, weights(problem, kept, penalty), penalty)
        assert est.dual_objective_ >= start.dual - 1e-12
        assert est.duality_gap_ == pytest.approx(est.primal_objective_ - est.dual_objective_,
                                                 abs=1e-12)
        assert est.primal_objective(X, Y) == pytest.approx(est.primal_objective_, abs=1e-12)


# -- parameters --------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [1, 1.0, -0.1, "a"])
def test_bad_l1_ratio_is_refused(bad):
    X, Y = chain_data(np.random.default_rng(9))
    with pytest.raises(ValueError, match="l1_ratio"):
        BCFWStructuredSVM(ChainCRF(), l1_ratio=bad).fit(X, Y)


def test_unsupported_combinations_are_refused():
    X, Y = chain_data(np.random.default_rng(10))
    with pytest.raises(ValueError, match=r"with coef_bounds and an l1 part \(l1_ratio > 0\)"):
        BCFWStructuredSVM(ChainCRF(), l1_ratio=0.5, coef_bounds="positive_pairwise").fit(X, Y)
    est = BCFWStructuredSVM(ChainCRF(), l1_ratio=0.5)
    with pytest.raises(ValueError, match="l1_ratio > 0.*grid_search_path solves them"):
        regularization_path(est, X, Y)  # the grid of test_path.py does
    problem = ChainCRF().prepare(X, Y)
    with pytest.raises(ValueError, match="linear term"):
        bcfw(problem, ElasticNet.from_alpha(0.1, 0.5).plus_prox(1.0, np.zeros(problem.n_params)))

