"""Smoothed oracles (entropy, l2, top-K, hard max) of every structure against enumeration."""
import numpy as np
import pytest

from sklearn_ssvm import BinarySVM, CandidateSet, ChainCRF, MulticlassSVM, MultiLabel
from sklearn_ssvm._kernels.chain import _SCALED_RANGE
from sklearn_ssvm._kernels.labelings import labeling_score
from sklearn_ssvm._kernels.smoothed import (ENTROPY, L2, NONE, TOP_K, enumerable_outputs,
                                            smoothed_oracle, smoothed_oracle_work_size)
from sklearn_ssvm.smoothing import smooth_max, topk_smooth_max
from sklearn_ssvm.structures.base import smoothing_code

from _brute import all_features

STRUCTURES = ["chain", "chain-count", "multiclass", "binary", "candidates", "multilabel",
              "multilabel-tree", "multilabel-full"]
#: (smoothing, top_k) as the structures take them; "large" K exceeds every |Y| here (<= 27)
SMOOTHINGS = [("entropy", None), ("l2", None), ("l2", 1), ("l2", 2), ("l2", 5), ("l2", 100),
              (None, None)]


def make_data(name, rng):
    """A fitted structure and a few small examples (at most 27 outputs each)."""
    if name.startswith("chain"):
        X = [rng.normal(size=(1 + i % 3, 2)) for i in range(5)]
        Y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
        Y[2][:] = [0, 1, 2]  # every label seen
        structure = ChainCRF(normalize_loss=name == "chain")
    elif name == "candidates":
        X = [rng.normal(size=(1 + i % 5, 3)) for i in range(5)]
        Y = [rng.uniform(0.1, 1.0, size=x.shape[0]) for x in X]
        for y in Y:
            y[rng.integers(y.shape[0])] = 0.0
        structure = CandidateSet()
    elif name.startswith("multilabel"):
        X = rng.normal(size=(6, 3))
        Y = rng.integers(0, 2, size=(6, 4))
        structure = MultiLabel(pairwise={"multilabel": None, "multilabel-tree": "tree",
                                         "multilabel-full": "full"}[name])
    else:
        X = rng.normal(size=(6, 3))
        Y = np.arange(6) % (4 if name == "multiclass" else 2)
        structure = MulticlassSVM() if name == "multiclass" else BinarySVM()
    structure.prepare(X, Y)
    return structure, X, Y


@pytest.fixture(scope="module", params=STRUCTURES)
def instance(request):
    """Structure, data, random weights and, per example, the features and losses of every
    output (computed once: enumeration is the slow part)."""
    rng = np.random.default_rng(STRUCTURES.index(request.param))
    structure, X, Y = make_data(request.param, rng)
    coef = rng.normal(size=structure.n_params)
    examples = []
    for x, y in zip(X, Y):
        _, Phi, losses, phi_true = all_features(structure, x, y)
        z = losses + (Phi - phi_true) @ coef  # loss-augmented scores minus the gold one
        examples.append((x, y, Phi, z, phi_true))
    return structure, X, Y, coef, examples


def reference(z, smoothing, top_k, mu):
    """Smoothed max of ``z`` and its weights over all outputs, from the full score vector."""
    if smoothing is None:
        return smooth_max(z, 0.0, None)
    if smoothing == "entropy" or top_k is None:
        return smooth_max(z, mu, smoothing)
    best = np.argsort(-z, kind="stable")[:top_k]
    value, weights, _ = topk_smooth_max(z[best], mu)
    u = np.zeros_like(z)
    u[best] = weights
    return value, u


def enumerable(structure):
    return enumerable_outputs(structure._kind)


@pytest.mark.parametrize("mu", [0.3, 2.0])
@pytest.mark.parametrize("smoothing, top_k", SMOOTHINGS)
def test_smoothed_oracle_matches_enumeration(instance, smoothing, top_k, mu):
    structure, _, _, coef, examples = instance
    if smoothing == "l2" and top_k is None and not enumerable(structure):
        pytest.skip("l2 over all outputs needs enumerated outputs (see test_errors)")
    for x, y, Phi, z, phi_true in examples:
        value, grad = structure.smoothed_oracle(x, y, coef, smoothing, mu, top_k)
        expected, u = reference(z, smoothing, top_k, mu)
        assert value == pytest.approx(expected, abs=1e-10)
        np.testing.assert_allclose(grad, u @ Phi - phi_true, atol=1e-10)


@pytest.mark.parametrize("mu", [0.3, 2.0])
def test_bounds_and_monotonicity_in_k(instance, mu):
    """max z <= h_{mu,K} <= h_{mu,K+1} <= h_l2 <= max z + mu/2, with equality from K = |Y|,
    and max z <= h_entropy <= max z + mu log |Y| (spec 000 §1.4-1.6)."""
    structure, _, _, coef, examples = instance
    for x, y, _, z, _ in examples:
        top, m = z.max(), z.shape[0]
        if enumerable(structure):
            h_l2 = structure.smoothed_oracle(x, y, coef, "l2", mu, None)[0]
        else:
            h_l2 = smooth_max(z, mu, "l2")[0]
        assert top - 1e-12 <= h_l2 <= top + mu / 2 + 1e-12
        h = [structure.smoothed_oracle(x, y, coef, "l2", mu, K)[0] for K in range(1, m + 2)]
        assert h[0] == pytest.approx(top, abs=1e-12)
        assert np.all(np.diff(h) >= -1e-12)
        assert h[-1] <= h_l2 + 1e-12
        assert h[m - 1] == pytest.approx(h_l2, abs=1e-10)
        assert h[m] == pytest.approx(h_l2, abs=1e-10)
        h_ent = structure.smoothed_oracle(x, y, coef, "entropy", mu, None)[0]
        assert top - 1e-12 <= h_ent <= top + mu * np.log(m) + 1e-12


def test_hard_max_is_the_max_oracle(instance):
    """``None``, ``mu = 0`` for every smoothing and top-1 all give exactly the max oracle."""
    structure, _, _, coef, examples = instance
    cases = [(None, None, 1.0), ("l2", 1, 1.0), ("entropy", None, 0.0), ("l2", 3, 0.0)]
    if enumerable(structure):
        cases.append(("l2", None, 0.0))
    for x, y, _, _, phi_true in examples:
        y_star, best = structure.max_oracle(x, y, coef)
        grad_star = structure.joint_feature(x, y_star) - phi_true
        for smoothing, top_k, mu in cases:
            value, grad = structure.smoothed_oracle(x, y, coef, smoothing, mu, top_k)
            assert value == best
            np.testing.assert_allclose(grad, grad_star, rtol=0, atol=1e-14)


@pytest.mark.parametrize("code, K", [(ENTROPY, 1), (L2, 1), (TOP_K, 3), (NONE, 1)])
def test_batched_matches_single_example_kernel(instance, code, K):
    structure, X, Y, coef, _ = instance
    if code == L2 and not enumerable(structure):
        pytest.skip("l2 over all outputs needs enumerated outputs")
    problem = structure.pack(X, Y)
    mu = 0.5
    values, M, Q = problem.smoothed_losses(coef, code, mu, K)
    W, theta = problem.split_coef(coef)
    U_all = problem.token_matrix() @ W
    kind, parent, order = problem.kind, problem.parent, problem.order
    for i in range(problem.n_samples):
        t0, t1 = problem.tok_offsets[i], problem.tok_offsets[i + 1]
        yi = problem.y[problem.node_offsets[i]:problem.node_offsets[i + 1]]
        U = np.ascontiguousarray(U_all[t0:t1])
        U_before = U.copy()
        M_i = np.full((t1 - t0, problem.n_codes), np.nan)  # overwritten, not accumulated
        Q_i = np.full(problem.n_pair, np.nan)
        work = np.empty(smoothed_oracle_work_size(kind, t1 - t0, problem.n_codes, K))
        graph = problem.example_graph(i)
        h = smoothed_oracle(kind, U, theta, yi, problem.tok_loss[t0:t1], graph, parent, order,
                            (code, K, mu), M_i, Q_i, work)
        np.testing.assert_array_equal(U, U_before)  # restored exactly
        assert values[i] >= 0.0
        assert values[i] == pytest.approx(h - labeling_score(kind, U, theta, yi, graph),
                                          abs=1e-12)
        np.testing.assert_allclose(M[t0:t1], M_i, atol=1e-12)
        np.testing.assert_allclose(Q[i], Q_i, atol=1e-12)


def test_topk_ties_go_to_the_lowest_index():
    """At ``coef = 0`` every wrong class scores 1: the top-2 list is the two lowest ones."""
    structure = MulticlassSVM()
    X, y = np.ones((4, 1)), np.arange(4)
    structure.prepare(X, y)
    problem = structure.pack(X[2:3], y[2:3])
    values, M, _ = problem.smoothed_losses(np.zeros(structure.n_params), TOP_K, 10.0, 2)
    np.testing.assert_array_equal(M, [[0.5, 0.5, 0.0, 0.0]])
    assert values[0] == pytest.approx(1.0 + 10.0 / 4)  # <z, u> - (mu/2)(||u||^2 - 1)


def test_errors():
    structure, X, Y = make_data("chain", np.random.default_rng(0))
    coef = np.zeros(structure.n_params)
    with pytest.raises(ValueError, match="l2 smoothing over all outputs is only available"):
        structure.smoothed_oracle(X[0], Y[0], coef, "l2", 1.0, None)
    with pytest.raises(ValueError, match="entropy smoothing needs top_k=None"):
        structure.smoothed_oracle(X[0], Y[0], coef, "entropy", 1.0, 5)
    with pytest.raises(ValueError, match="smoothing must be"):
        structure.smoothed_oracle(X[0], Y[0], coef, "top-k", 1.0, 5)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="top_k must be None or an integer >= 1"):
            structure.smoothed_oracle(X[0], Y[0], coef, "l2", 1.0, bad)
    with pytest.raises(ValueError, match="mu must be"):
        structure.smoothed_oracle(X[0], Y[0], coef, "l2", -1.0, 5)
    def fitted(pairwise):  # the label graph (and kind) is fitted: "auto" depends on Y
        multilabel = MultiLabel(pairwise=pairwise)
        multilabel.prepare(np.eye(3), np.eye(3, dtype=int))
        return multilabel._kind

    for pairwise in (None, "tree"):
        with pytest.raises(ValueError, match="l2 smoothing over all outputs"):
            smoothing_code("l2", None, fitted(pairwise))
    assert smoothing_code("l2", None, fitted("full")) == (L2, 1)
    assert smoothing_code("l2", None, fitted("auto")) == (L2, 1)  # every pair of 3 labels
    assert smoothing_code(None, 7, structure._kind) == (NONE, 1)  # top_k unused by the max
    # the kernels refuse too (what the Python checks guard)
    problem = structure.pack(X, Y)
    with pytest.raises(ValueError, match="enumerated outputs"):
        problem.smoothed_losses(coef, L2, 1.0, 1)


def test_chain_entropy_falls_back_to_log_space_exactly():
    """At a temperature that spreads the transitions beyond the scaled recursion's range, the
    chain's entropy oracle takes the log-space recursion for every example: still the
    enumerated value and gradient."""
    rng = np.random.default_rng(7)
    structure, X, Y = make_data("chain-count", rng)
    coef = 50.0 * rng.normal(size=structure.n_params)
    mu = 0.05
    _, theta = structure.prepare(X, Y).split_coef(coef)
    assert (theta.max() - theta.min()) / mu > _SCALED_RANGE  # every step hands over
    for x, y in zip(X, Y):
        _, Phi, losses, phi_true = all_features(structure, x, y)
        z = losses + (Phi - phi_true) @ coef
        value, grad = structure.smoothed_oracle(x, y, coef, "entropy", mu, None)
        expected, u = reference(z, "entropy", None, mu)
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-10)
        np.testing.assert_allclose(grad, u @ Phi - phi_true, atol=1e-8)
