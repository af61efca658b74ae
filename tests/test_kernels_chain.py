"""Chain kernels (Viterbi, top-K Viterbi, forward-backward) against brute-force enumeration.

Spec 000, Sec. 7 items 10-12. Random continuous potentials, so ties have probability 0.
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ssvm._kernels.chain import (
    _SCALED_RANGE,
    _forward_kbest,
    _log_forward_backward,
    _scaled_forward_backward,
    forward_backward,
    score_labeling,
    topk_viterbi,
    topk_viterbi_into,
    topk_viterbi_work_size,
    viterbi_into,
    viterbi_work_size,
)

SHAPES = [(T, L) for T in range(1, 7) for L in range(2, 5)]


def viterbi(unary, trans):
    """``(score, y)``: ``viterbi_into`` with fresh buffers, ``y`` int32."""
    y = np.empty(unary.shape[0], dtype=np.int32)
    return viterbi_into(unary, trans, y, np.empty(viterbi_work_size(*unary.shape))), y


def enumerate_chain(unary, trans):
    """All labelings (N, T) in lexicographic order and their scores."""
    T, L = unary.shape
    ys = np.array(list(itertools.product(range(L), repeat=T)), dtype=np.int64)
    scores = unary[np.arange(T), ys].sum(axis=1)
    if T > 1:
        scores = scores + trans[ys[:, :-1], ys[:, 1:]].sum(axis=1)
    return ys, scores


def brute_marginals(unary, trans, mu):
    """value, node marginals, edge marginals and expected statistics by enumeration."""
    T, L = unary.shape
    ys, scores = enumerate_chain(unary, trans)
    finite = scores > -np.inf
    m = scores[finite].max()
    w = np.zeros_like(scores)
    w[finite] = np.exp((scores[finite] - m) / mu)
    Z = w.sum()
    value = m + mu * np.log(Z)
    p = w / Z
    node = np.zeros((T, L))
    edge = np.zeros((max(T - 1, 0), L, L))
    for t in range(T):
        np.add.at(node[t], ys[:, t], p)
    for t in range(T - 1):
        np.add.at(edge[t], (ys[:, t], ys[:, t + 1]), p)
    return value, node, edge


def random_chain(rng, T, L, scale=1.0):
    return (rng.normal(scale=scale, size=(T, L)), rng.normal(scale=scale, size=(L, L)))


@pytest.mark.parametrize("T, L", SHAPES)
def test_viterbi_matches_brute_force(T, L):
    rng = np.random.default_rng(100 * T + L)
    unary, trans = random_chain(rng, T, L)
    ys, scores = enumerate_chain(unary, trans)
    score, y = viterbi(unary, trans)
    assert y.dtype == np.int32 and y.shape == (T,)
    assert score == pytest.approx(scores.max(), abs=1e-12)
    np.testing.assert_array_equal(y, ys[np.argmax(scores)])
    assert score_labeling(unary, trans, y) == pytest.approx(score, abs=1e-12)


@pytest.mark.parametrize("T, L", [(1, 3), (4, 2), (6, 4), (8, 26), (30, 5)])
def test_viterbi_into_equals_viterbi(T, L):
    rng = np.random.default_rng(T * L)
    unary, trans = random_chain(rng, T, L)
    score, y = viterbi(unary, trans)
    # buffers larger than needed (slices of a bigger buffer, as in the solvers) are fine
    work = np.full(viterbi_work_size(T, L) + 7, np.nan)
    for y_out in (np.empty(T, dtype=np.int32), np.empty(T, dtype=np.int64)):
        assert viterbi_into(unary, trans, y_out, work) == score
        np.testing.assert_array_equal(y_out, y)


def test_viterbi_ties_lowest_index():
    unary = np.zeros((4, 3))
    trans = np.zeros((3, 3))
    score, y = viterbi(unary, trans)
    assert score == 0.0
    np.testing.assert_array_equal(y, [0, 0, 0, 0])
    # two optimal paths, [1, 2] and [2, 1]: the lowest label at the last position, then the
    # lowest predecessor
    unary = np.array([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    trans = np.zeros((3, 3))
    trans[1, 1] = trans[2, 2] = -5.0
    score, y = viterbi(unary, trans)
    assert score == 2.0
    np.testing.assert_array_equal(y, [2, 1])


@pytest.mark.parametrize("T, L", SHAPES)
@pytest.mark.parametrize("K", [1, 2, 5])
def test_topk_matches_sorted_enumeration(T, L, K):
    rng = np.random.default_rng(1000 * K + 10 * T + L)
    unary, trans = random_chain(rng, T, L)
    ys, scores = enumerate_chain(unary, trans)
    for K_ in (K, len(scores) + K):  # the second one needs padding
        top_scores, paths = topk_viterbi(unary, trans, K_)
        assert top_scores.shape == (K_,) and paths.shape == (K_, T)
        assert paths.dtype == np.int32
        n = min(K_, len(scores))
        expected = np.sort(scores)[::-1][:n]
        np.testing.assert_allclose(top_scores[:n], expected, rtol=0, atol=1e-12)
        assert np.all(np.diff(top_scores[:n]) <= 0)
        assert np.all(top_scores[n:] == -np.inf)
        assert np.all(paths[n:] == -1)
        assert len({tuple(p) for p in paths[:n]}) == n  # distinct
        for k in range(n):
            assert score_labeling(unary, trans, paths[k]) == pytest.approx(top_scores[k], abs=1e-12)
        # with continuous scores the order is unique: the paths are the sorted enumeration
        np.testing.assert_array_equal(paths[:n], ys[np.argsort(-scores, kind="stable")[:n]])


@pytest.mark.parametrize("T, L", [(1, 2), (3, 3), (6, 4)])
def test_topk_k1_is_viterbi(T, L):
    rng = np.random.default_rng(7 + T)
    unary, trans = random_chain(rng, T, L)
    score, y = viterbi(unary, trans)
    top_scores, paths = topk_viterbi(unary, trans, 1)
    assert top_scores[0] == pytest.approx(score, abs=1e-12)
    np.testing.assert_array_equal(paths[0], y)


def test_topk_ties_are_distinct_and_deterministic():
    unary = np.zeros((3, 2))
    trans = np.zeros((2, 2))
    top_scores, paths = topk_viterbi(unary, trans, 10)
    np.testing.assert_array_equal(top_scores[:8], 0.0)
    assert np.all(top_scores[8:] == -np.inf)
    assert len({tuple(p) for p in paths[:8]}) == 8
    again = topk_viterbi(unary, trans, 10)[1]
    np.testing.assert_array_equal(paths, again)


@pytest.mark.parametrize("T, L", SHAPES)
@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
def test_forward_backward_matches_brute_force(T, L, mu):
    rng = np.random.default_rng(int(1000 * mu) + 10 * T + L)
    unary, trans = random_chain(rng, T, L)
    value, node, edge = forward_backward(unary, trans, mu)
    assert node.shape == (T, L) and edge.shape == (T - 1, L, L)
    ref_value, ref_node, ref_edge = brute_marginals(unary, trans, mu)
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(edge, ref_edge, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(node.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(edge.sum(axis=2), node[:-1], atol=1e-12)
    np.testing.assert_allclose(edge.sum(axis=1), node[1:], atol=1e-12)
    # expected sufficient statistics: token-label counts and transition counts
    ys, scores = enumerate_chain(unary, trans)
    p = np.exp((scores - ref_value) / mu)
    exp_unary = np.zeros((T, L))
    exp_trans = np.zeros((L, L))
    for y, py in zip(ys, p):
        exp_unary[np.arange(T), y] += py
        for t in range(T - 1):
            exp_trans[y[t], y[t + 1]] += py
    np.testing.assert_allclose(node, exp_unary, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(edge.sum(axis=0), exp_trans, rtol=1e-9, atol=1e-12)


def test_forward_backward_gradient_is_expected_statistics():
    """d value / d unary = node marginals, d value / d trans = summed edge marginals."""
    rng = np.random.default_rng(3)
    T, L, mu = 4, 3, 0.7
    unary, trans = random_chain(rng, T, L)
    _, node, edge = forward_backward(unary, trans, mu)
    h = 1e-6
    for t, s in [(0, 1), (2, 0), (3, 2)]:
        up, um = unary.copy(), unary.copy()
        up[t, s] += h
        um[t, s] -= h
        fd = (forward_backward(up, trans, mu)[0] - forward_backward(um, trans, mu)[0]) / (2 * h)
        assert fd == pytest.approx(node[t, s], abs=1e-7)
    for a, b in [(0, 0), (1, 2), (2, 1)]:
        tp, tm = trans.copy(), trans.copy()
        tp[a, b] += h
        tm[a, b] -= h
        fd = (forward_backward(unary, tp, mu)[0] - forward_backward(unary, tm, mu)[0]) / (2 * h)
        assert fd == pytest.approx(edge[:, a, b].sum(), abs=1e-7)


def test_forward_backward_t1_and_limits():
    unary = np.array([[0.3, -1.2, 2.0]])
    trans = np.zeros((3, 3))
    value, node, edge = forward_backward(unary, trans, 1.0)
    assert edge.shape == (0, 3, 3)
    assert value == pytest.approx(np.log(np.exp(unary).sum()))
    np.testing.assert_allclose(node[0], np.exp(unary[0]) / np.exp(unary[0]).sum())
    # mu -> 0 gives the max; large scores at small mu neither overflow nor lose the max
    rng = np.random.default_rng(0)
    unary, trans = random_chain(rng, 5, 4, scale=1e4)
    score, y = viterbi(unary, trans)
    value, node, edge = forward_backward(unary, trans, 1e-3)
    assert np.isfinite(value) and score <= value <= score + 1e-3 * np.log(4**5)
    assert np.isfinite(node).all() and np.isfinite(edge).all()
    np.testing.assert_allclose(node[np.arange(5), y], 1.0)


def test_forward_backward_underflow_fallback():
    """Columns whose shifted sum underflows are recomputed exactly (small mu, spread scores)."""
    mu = 0.01
    unary = np.array([[0.0, -10.0], [0.0, 0.0], [0.0, -3.0]])
    trans = np.array([[-10.0, -10.0], [0.0, 0.0]])
    value, node, edge = forward_backward(unary, trans, mu)
    ref_value, ref_node, ref_edge = brute_marginals(unary, trans, mu)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(edge, ref_edge, rtol=1e-9, atol=1e-12)


def both_paths(unary, trans, mu):
    """The scaled and the log-space forward-backward on the same chain."""
    T, L = unary.shape
    scaled = [np.zeros((T, L)), np.zeros((max(T - 1, 0), L, L))]
    pair = np.ones((L, L))  # added to
    value = _scaled_forward_backward(unary, trans, mu, *scaled, pair)
    np.testing.assert_allclose(pair - 1.0, scaled[1].sum(axis=0), atol=1e-12)
    logged = _log_forward_backward(unary, trans, mu, np.zeros((T, L)),
                                   np.zeros((max(T - 1, 0), L, L)))
    return (value, *scaled), logged


@pytest.mark.parametrize("T, L", [(1, 2), (2, 3), (7, 5), (40, 9)])
@pytest.mark.parametrize("mu, scale", [(1.0, 3.0), (0.05, 1.0), (2.0, 20.0)])
def test_scaled_forward_backward_equals_log_space(T, L, mu, scale):
    """Both recursions of ``forward_backward``, on chains too long to enumerate as well: the
    same value to 1e-12 and marginals to 1e-12 (the log space's own rounding)."""
    rng = np.random.default_rng(T * L)
    unary, trans = random_chain(rng, T, L, scale=scale)
    unary[rng.random((T, L)) < 0.2] = -np.inf  # forbidden labels are exact zeros in both
    unary[:, 0] = rng.normal(size=T)
    (value, node, edge), (ref_value, ref_node, ref_edge) = both_paths(unary, trans, mu)
    assert np.isfinite(value)
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(edge, ref_edge, rtol=1e-9, atol=1e-12)
    assert np.all(node[unary == -np.inf] == 0.0)


def test_scaled_forward_backward_refuses_what_could_underflow():
    """The scaled recursion hands over (NaN, the arrays untouched) where a state's share could
    be lost: a ``-inf`` transition, or a step whose scores span more than ``_SCALED_RANGE mu``.
    Unguarded, the second chain loses every path (0 -> 0 costs 2000 at the second token, 0 -> 1
    costs 1500, both shares underflow), where the answer is finite."""
    unary = np.array([[0.0, -2000.0], [-2000.0, 0.0]])
    trans = np.array([[0.0, -1500.0], [-1500.0, 0.0]])
    forbidden = np.zeros((2, 2))
    forbidden[0, 1] = -np.inf
    for u, tr in [(np.zeros((3, 2)), forbidden), (unary, trans), (unary / 5, trans / 5)]:
        node, edge = np.full((len(u), 2), 7.0), np.full((len(u) - 1, 2, 2), 7.0)
        assert np.isnan(_scaled_forward_backward(u, tr, 1.0, node, edge, np.zeros((2, 2))))
        assert np.all(node == 7.0) and np.all(edge == 7.0)
        value, node, edge = forward_backward(u, tr, 1.0)
        ref_value, ref_node, ref_edge = brute_marginals(u, tr, 1.0)
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(edge, ref_edge, rtol=1e-9, atol=1e-12)
    # just inside the range: scaled, and exact
    u = unary * (_SCALED_RANGE - 1) / 3500
    tr = trans * (_SCALED_RANGE - 1) / 3500
    (value, node, edge), (ref_value, ref_node, ref_edge) = both_paths(u, tr, 1.0)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("T, L", [(1, 3), (3, 3), (5, 4), (6, 2)])
def test_minus_inf_potentials(T, L):
    rng = np.random.default_rng(5 * T + L)
    unary, trans = random_chain(rng, T, L)
    forbid = rng.random((T, L)) < 0.4
    forbid[np.arange(T), rng.integers(0, L, size=T)] = False  # keep one label per position
    unary[forbid] = -np.inf
    trans[rng.random((L, L)) < 0.2] = -np.inf
    ys, scores = enumerate_chain(unary, trans)
    n_feasible = int(np.sum(scores > -np.inf))
    score, y = viterbi(unary, trans)
    assert score == pytest.approx(scores.max(), abs=1e-12)
    if n_feasible:
        assert score_labeling(unary, trans, y) == pytest.approx(score, abs=1e-12)
    top_scores, paths = topk_viterbi(unary, trans, n_feasible + 3)
    np.testing.assert_allclose(top_scores[:n_feasible], np.sort(scores)[::-1][:n_feasible])
    assert np.all(top_scores[n_feasible:] == -np.inf) and np.all(paths[n_feasible:] == -1)
    for mu in (0.1, 1.0):
        value, node, edge = forward_backward(unary, trans, mu)
        assert not np.isnan(value) and not np.isnan(node).any() and not np.isnan(edge).any()
        if n_feasible == 0:
            assert value == -np.inf and not node.any() and not edge.any()
            continue
        ref_value, ref_node, ref_edge = brute_marginals(unary, trans, mu)
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(edge, ref_edge, rtol=1e-9, atol=1e-12)
        assert np.all(node[forbid] == 0.0)


def test_all_labelings_forbidden():
    unary = np.zeros((3, 2))
    unary[1, :] = -np.inf
    trans = np.zeros((2, 2))
    score, y = viterbi(unary, trans)
    assert score == -np.inf and y.min() >= 0  # still a labeling
    top_scores, paths = topk_viterbi(unary, trans, 3)
    assert np.all(top_scores == -np.inf) and np.all(paths == -1)
    value, node, edge = forward_backward(unary, trans, 1.0)
    assert value == -np.inf and not node.any() and not edge.any()


def test_bad_arguments():
    unary, trans = np.zeros((2, 2)), np.zeros((2, 2))
    with pytest.raises(ValueError):
        topk_viterbi(unary, trans, 0)
    with pytest.raises(ValueError):
        forward_backward(unary, trans, 0.0)


@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 5), L=st.integers(2, 4), K=st.integers(1, 12),
       mu=st.sampled_from([0.05, 0.5, 2.0]), seed=st.integers(0, 2**32 - 1))
def test_random_chains(T, L, K, mu, seed):
    rng = np.random.default_rng(seed)
    unary, trans = random_chain(rng, T, L, scale=rng.uniform(0.1, 10.0))
    ys, scores = enumerate_chain(unary, trans)
    score, y = viterbi(unary, trans)
    assert score == pytest.approx(scores.max(), rel=1e-12, abs=1e-12)
    top_scores, paths = topk_viterbi(unary, trans, K)
    n = min(K, len(scores))
    np.testing.assert_allclose(top_scores[:n], np.sort(scores)[::-1][:n], rtol=1e-12, atol=1e-12)
    assert len({tuple(p) for p in paths[:n]}) == n
    value, node, edge = forward_backward(unary, trans, mu)
    ref_value, ref_node, ref_edge = brute_marginals(unary, trans, mu)
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(node, ref_node, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(edge, ref_edge, rtol=1e-8, atol=1e-12)


# ------------------------------------------------------------------------------------------
# top-K Viterbi without allocation, and its pruning
# ------------------------------------------------------------------------------------------


def best_paths(last, T, K, back):
    """The K best of the final entries ``last`` (``(value, s, l)``, ties in ``(s, l)`` order) and
    their paths, followed back by ``back(t, s, l) -> (s', l')``."""
    final = sorted((c for c in last if c[0] > -np.inf), key=lambda c: -c[0])[:K]
    scores = np.full(K, -np.inf)
    paths = np.full((K, T), -1, dtype=np.int32)
    for k, (v, s, l) in enumerate(final):
        scores[k] = v
        for t in range(T - 1, -1, -1):
            paths[k, t] = s
            s, l = back(t, s, l)
    return scores, paths


def kbest_reference(unary, trans, K):
    """The K-best recursion without any pruning, in Python: at every (t, s) the K best of the
    candidates (s', l) offered in lexicographic order, a stable sort on the value (the
    documented tie order); the same float operations as the kernels, so results are equal."""
    T, L = unary.shape
    lists = [[(unary[0, s], -1, -1)] for s in range(L)]
    table = [lists]
    for t in range(1, T):
        new = []
        for s in range(L):
            cand = [(lists[sp][l][0] + trans[sp, s], sp, l)
                    for sp in range(L) for l in range(len(lists[sp]))
                    if lists[sp][l][0] + trans[sp, s] > -np.inf]
            cand.sort(key=lambda c: -c[0])  # stable: ties stay in (s', l) order
            new.append([(v + unary[t, s], sp, l) for v, sp, l in cand[:K]])
        lists = new
        table.append(lists)
    last = [(lists[s][l][0], s, l) for s in range(L) for l in range(len(lists[s]))]
    return best_paths(last, T, K, lambda t, s, l: table[t][s][l][1:])


def unpruned_topk(unary, trans, K):
    """The kernels' K-best recursion without a bound (the tree kernels' products)."""
    T, L = unary.shape
    alpha = np.empty((T, L, K))
    bp_lab = np.empty((T, L, K), dtype=np.int32)
    bp_rank = np.empty((T, L, K), dtype=np.int32)
    work = np.empty(4 * L + 2 + K)
    _forward_kbest(1.0, unary, trans, alpha, bp_lab, bp_rank, work, unary[:0])
    last = [(alpha[T - 1, s, l], s, l) for s in range(L) for l in range(K)]
    return best_paths(last, T, K, lambda t, s, l: (bp_lab[t, s, l], bp_rank[t, s, l]))


def peaked_chain(rng, T, L, scale):
    """Scores like a trained model's: one or two clear labels per position, so the bound
    prunes almost every state."""
    unary = rng.normal(size=(T, L))
    unary[np.arange(T), rng.integers(0, L, size=T)] += scale
    return unary, rng.normal(scale=0.3, size=(L, L))


CHAINS = [
    ("continuous", lambda rng, T, L: random_chain(rng, T, L)),
    ("peaked", lambda rng, T, L: peaked_chain(rng, T, L, 6.0)),
    ("integer ties", lambda rng, T, L: (rng.integers(-2, 3, size=(T, L)).astype(float),
                                        rng.integers(-1, 2, size=(L, L)).astype(float))),
    ("all equal", lambda rng, T, L: (np.zeros((T, L)), np.zeros((L, L)))),
    ("forbidden", lambda rng, T, L: forbid(rng, *random_chain(rng, T, L))),
    # large terms that cancel, scores apart by about their rounding: the bound's slack
    ("cancellation", lambda rng, T, L: (1e8 + rng.normal(scale=1e-7, size=(T, L)),
                                        -1e8 + rng.normal(scale=1e-7, size=(L, L)))),
]


def forbid(rng, unary, trans):
    unary[rng.random(unary.shape) < 0.3] = -np.inf
    trans[rng.random(trans.shape) < 0.3] = -np.inf
    return unary, trans


@pytest.mark.parametrize("kind", [c[0] for c in CHAINS])
@pytest.mark.parametrize("T, L, K", [(1, 4, 3), (2, 3, 12), (5, 4, 5), (9, 6, 7), (30, 26, 5),
                                     (24, 22, 20)])
def test_topk_equals_unpruned_recursion(kind, T, L, K):
    """The bound prunes only what cannot matter: scores, paths and the order of ties are those
    of the plain recursion (Python reference for small chains, the unbounded kernel always)."""
    make = dict(CHAINS)[kind]
    rng = np.random.default_rng(T * 1000 + L * 10 + K)
    unary, trans = make(rng, T, L)
    scores, paths = topk_viterbi(unary, trans, K)
    ref_scores, ref_paths = unpruned_topk(unary, trans, K)
    np.testing.assert_array_equal(scores, ref_scores)
    np.testing.assert_array_equal(paths, ref_paths)
    if T * L * L * K <= 20000:
        ref_scores, ref_paths = kbest_reference(unary, trans, K)
        np.testing.assert_array_equal(scores, ref_scores)
        np.testing.assert_array_equal(paths, ref_paths)
    n = int(np.sum(scores > -np.inf))
    assert len({tuple(p) for p in paths[:n]}) == n
    for k in range(n):
        assert score_labeling(unary, trans, paths[k]) == pytest.approx(scores[k], rel=1e-12,
                                                                         abs=1e-9)


@pytest.mark.parametrize("T, L, K", [(1, 3, 2), (4, 2, 20), (8, 26, 5), (30, 5, 3)])
def test_topk_viterbi_into_equals_topk_viterbi(T, L, K):
    rng = np.random.default_rng(T + L + K)
    unary, trans = peaked_chain(rng, T, L, 3.0)
    scores, paths = topk_viterbi(unary, trans, K)
    # scratch larger than needed and dirty (reused after another chain), as in hot loops
    work = np.full(topk_viterbi_work_size(T, L, K) + 11, np.nan)
    other = np.full(topk_viterbi_work_size(T, L, K), np.nan)
    for dtype in (np.int32, np.int64):
        s_out = np.full(K, np.nan)
        p_out = np.full((K, T), 99, dtype=dtype)
        u2, t2 = random_chain(rng, T, L)
        topk_viterbi_into(u2, t2, K, s_out, p_out, work)  # leaves other values in work
        n = topk_viterbi_into(unary, trans, K, s_out, p_out, work)
        assert n == min(K, L ** T)
        np.testing.assert_array_equal(s_out, scores)
        np.testing.assert_array_equal(p_out, paths)
    # exactly the advertised size is enough; paths_out may be a view of a wider buffer
    wide = np.full((K, T + 5), 7, dtype=np.int32)
    s_out = np.empty(K)
    topk_viterbi_into(unary, trans, K, s_out, wide[:, :T], other)
    np.testing.assert_array_equal(wide[:, :T], paths)
    assert np.all(wide[:, T:] == 7)
    with pytest.raises(ValueError):
        topk_viterbi_into(unary, trans, 0, s_out, wide[:, :T], other)


def test_topk_viterbi_into_padding():
    """Fewer feasible labelings than K: -inf scores, -1 rows, and the count returned."""
    unary = np.zeros((3, 2))
    unary[1, 0] = -np.inf
    trans = np.zeros((2, 2))
    trans[1, 0] = -np.inf
    K = 6
    s_out = np.empty(K)
    p_out = np.empty((K, 3), dtype=np.int32)
    n = topk_viterbi_into(unary, trans, K, s_out, p_out,
                          np.empty(topk_viterbi_work_size(3, 2, K)))
    # y_1 = 1 and no 1 -> 0: (0|1, 1, 1) only
    assert n == 2
    np.testing.assert_array_equal(s_out[:2], 0.0)
    assert np.all(s_out[2:] == -np.inf) and np.all(p_out[2:] == -1)
    assert sorted(map(tuple, p_out[:2])) == [(0, 1, 1), (1, 1, 1)]


def test_unary_scores_into_order_of_additions():
    """The chains' unary scores U = X_i W, several non-zeros per sweep of a row, add in the order
    of the non-zeros, one at a time: equal to the bit to that sum, close to the dense product."""
    import scipy.sparse as sp

    from sklearn_ssvm._kernels.sparse import unary_scores_into

    rng = np.random.default_rng(0)
    for density in (0.05, 0.3, 1.0):  # 0 to 9 non-zeros per row at 0.05, every one at 1.0
        X = sp.random(40, 30, density=density, format="csr", random_state=rng,
                      data_rvs=rng.standard_normal)
        W = rng.normal(size=(30, 7))
        U = np.full((25, 7), np.nan)
        unary_scores_into(X.indptr, X.indices, X.data, 10, 35, W, U)
        ref = np.zeros((25, 7))
        for t in range(10, 35):
            for k in range(X.indptr[t], X.indptr[t + 1]):
                ref[t - 10] += X.data[k] * W[X.indices[k]]
        np.testing.assert_array_equal(U, ref)
        np.testing.assert_allclose(U, X[10:35] @ W, rtol=1e-12, atol=1e-12)


def test_add_outer_into_rows_of_any_sparsity():
    """W += s X_i^T D for rows of D with 0, a few (the columns-only sweep) or all non-zeros,
    against the dense product."""
    import scipy.sparse as sp

    from sklearn_ssvm._kernels.sparse import add_outer_into

    rng = np.random.default_rng(1)
    X = sp.random(40, 30, density=0.3, format="csr", random_state=rng,
                  data_rvs=rng.standard_normal)
    C = 26
    D = np.zeros((25, C))
    for r in range(25):
        k = [0, 1, 2, 6, 7, C][r % 6]  # 4 * k >= C switches to the dense sweep
        D[r, rng.choice(C, size=k, replace=False)] = rng.normal(size=k)
    W0 = rng.normal(size=(30, C))
    expected = W0 - 0.7 * (X[10:35].T @ D)
    for atomic in (False, True):
        W = W0.copy()
        add_outer_into(X.indptr, X.indices, X.data, 10, 35, D, -0.7, W, atomic)
        np.testing.assert_allclose(W, expected, rtol=1e-12, atol=1e-12)
