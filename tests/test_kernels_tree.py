"""Tree and forest kernels (max-product, top-K, sum-product) against brute-force enumeration.

Spec 000, Sec. 7 item 13, plus agreement with the chain kernels on chains.
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ssvm._kernels.chain import (forward_backward, topk_viterbi, viterbi_into,
                                         viterbi_work_size)
from sklearn_ssvm._kernels.tree import tree_marginals, tree_max, tree_order, tree_topk


def random_forest(rng, p, root_prob=0.2):
    """Random parent array; node ids are shuffled so parents may come after children."""
    parent = np.full(p, -1, dtype=np.int64)
    for v in range(1, p):
        if rng.random() >= root_prob:
            parent[v] = rng.integers(0, v)
    perm = rng.permutation(p)  # new id of old node i is perm[i]
    shuffled = np.full(p, -1, dtype=np.int64)
    for v in range(p):
        if parent[v] >= 0:
            shuffled[perm[v]] = perm[parent[v]]
    return shuffled


def random_potentials(rng, p, S, scale=1.0):
    return rng.normal(scale=scale, size=(p, S)), rng.normal(scale=scale, size=(p, S, S))


def score_tree(unary, pair, parent, y):
    total = unary[np.arange(len(y)), y].sum()
    for v in range(len(y)):
        if parent[v] >= 0:
            total += pair[v, y[v], y[parent[v]]]
    return total


def enumerate_tree(unary, pair, parent):
    p, S = unary.shape
    ys = np.array(list(itertools.product(range(S), repeat=p)), dtype=np.int64)
    scores = unary[np.arange(p), ys].sum(axis=1)
    for v in range(p):
        if parent[v] >= 0:
            scores = scores + pair[v, ys[:, v], ys[:, parent[v]]]
    return ys, scores


def brute_marginals(unary, pair, parent, mu):
    p, S = unary.shape
    ys, scores = enumerate_tree(unary, pair, parent)
    finite = scores > -np.inf
    m = scores[finite].max()
    w = np.zeros_like(scores)
    w[finite] = np.exp((scores[finite] - m) / mu)
    Z = w.sum()
    prob = w / Z
    node = np.zeros((p, S))
    edge = np.zeros((p, S, S))
    for v in range(p):
        np.add.at(node[v], ys[:, v], prob)
        if parent[v] >= 0:
            np.add.at(edge[v], (ys[:, v], ys[:, parent[v]]), prob)
    return m + mu * np.log(Z), node, edge


CASES = [(p, S, seed) for p in range(1, 7) for S in (2, 3) for seed in range(3)]


def test_tree_order():
    rng = np.random.default_rng(0)
    for p in range(1, 9):
        parent = random_forest(rng, p)
        order = tree_order(parent)
        assert order.dtype == np.int64 and sorted(order) == list(range(p))
        position = np.empty(p, dtype=np.int64)
        position[order] = np.arange(p)
        for v in range(p):
            if parent[v] >= 0:
                assert position[parent[v]] < position[v]
    with pytest.raises(ValueError):
        tree_order(np.array([1, 0], dtype=np.int64))  # a cycle
    with pytest.raises(ValueError):
        tree_order(np.array([-1, 5], dtype=np.int64))


@pytest.mark.parametrize("p, S, seed", CASES)
def test_tree_max_matches_brute_force(p, S, seed):
    rng = np.random.default_rng(1000 * seed + 10 * p + S)
    parent = random_forest(rng, p)
    order = tree_order(parent)
    unary, pair = random_potentials(rng, p, S)
    ys, scores = enumerate_tree(unary, pair, parent)
    score, y = tree_max(unary, pair, parent, order)
    assert y.dtype == np.int32 and y.shape == (p,)
    assert score == pytest.approx(scores.max(), abs=1e-12)
    np.testing.assert_array_equal(y, ys[np.argmax(scores)])


def test_tree_max_ties_lowest_index():
    parent = np.array([-1, 0, 0, 1], dtype=np.int64)
    order = tree_order(parent)
    score, y = tree_max(np.zeros((4, 3)), np.zeros((4, 3, 3)), parent, order)
    assert score == 0.0
    np.testing.assert_array_equal(y, 0)


@pytest.mark.parametrize("p, S, seed", CASES)
@pytest.mark.parametrize("K", [1, 2, 5])
def test_tree_topk_matches_sorted_enumeration(p, S, seed, K):
    rng = np.random.default_rng(1000 * seed + 10 * p + S + 7)
    parent = random_forest(rng, p)
    order = tree_order(parent)
    unary, pair = random_potentials(rng, p, S)
    ys, scores = enumerate_tree(unary, pair, parent)
    for K_ in (K, len(scores) + K):
        top_scores, labelings = tree_topk(unary, pair, parent, order, K_)
        assert top_scores.shape == (K_,) and labelings.shape == (K_, p)
        assert labelings.dtype == np.int32
        n = min(K_, len(scores))
        np.testing.assert_allclose(top_scores[:n], np.sort(scores)[::-1][:n], rtol=0, atol=1e-12)
        assert np.all(top_scores[n:] == -np.inf) and np.all(labelings[n:] == -1)
        assert len({tuple(y) for y in labelings[:n]}) == n
        for k in range(n):
            assert score_tree(unary, pair, parent, labelings[k]) == pytest.approx(
                top_scores[k], abs=1e-12)
    best, y = tree_max(unary, pair, parent, order)
    top_scores, labelings = tree_topk(unary, pair, parent, order, 1)
    assert top_scores[0] == pytest.approx(best, abs=1e-12)
    np.testing.assert_array_equal(labelings[0], y)


@pytest.mark.parametrize("shape", ["star", "forest_of_singletons", "two_stars"])
def test_tree_topk_many_children(shape):
    """Several children (and several roots) are merged pairwise, keeping K candidates."""
    rng = np.random.default_rng(11)
    if shape == "star":
        parent = np.array([-1, 0, 0, 0, 0, 0], dtype=np.int64)
    elif shape == "forest_of_singletons":
        parent = np.full(6, -1, dtype=np.int64)
    else:
        parent = np.array([3, 3, -1, -1, 2, 2, 2], dtype=np.int64)
    p, S = len(parent), 3
    order = tree_order(parent)
    unary, pair = random_potentials(rng, p, S)
    ys, scores = enumerate_tree(unary, pair, parent)
    for K in (3, 20, 50):
        top_scores, labelings = tree_topk(unary, pair, parent, order, K)
        np.testing.assert_allclose(top_scores, np.sort(scores)[::-1][:K], atol=1e-12)
        assert len({tuple(y) for y in labelings}) == K
        for k in range(K):
            assert score_tree(unary, pair, parent, labelings[k]) == pytest.approx(
                top_scores[k], abs=1e-12)


@pytest.mark.parametrize("p, S, seed", CASES)
@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
def test_tree_marginals_match_brute_force(p, S, seed, mu):
    rng = np.random.default_rng(1000 * seed + 10 * p + S + int(10 * mu))
    parent = random_forest(rng, p)
    order = tree_order(parent)
    unary, pair = random_potentials(rng, p, S)
    value, node, edge = tree_marginals(unary, pair, parent, order, mu)
    assert node.shape == (p, S) and edge.shape == (p, S, S)
    ref_value, ref_node, ref_edge = brute_marginals(unary, pair, parent, mu)
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(edge, ref_edge, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(node.sum(axis=1), 1.0, rtol=1e-12)
    for v in range(p):
        if parent[v] >= 0:
            np.testing.assert_allclose(edge[v].sum(axis=1), node[v], atol=1e-12)
            np.testing.assert_allclose(edge[v].sum(axis=0), node[parent[v]], atol=1e-12)
        else:
            assert not edge[v].any()


@pytest.mark.parametrize("seed", range(6))
def test_tree_minus_inf_potentials(seed):
    rng = np.random.default_rng(seed)
    p, S = 5, 3
    parent = random_forest(rng, p)
    order = tree_order(parent)
    unary, pair = random_potentials(rng, p, S)
    forbid = rng.random((p, S)) < 0.35
    forbid[np.arange(p), rng.integers(0, S, size=p)] = False
    unary[forbid] = -np.inf
    pair[rng.random((p, S, S)) < 0.3] = -np.inf
    ys, scores = enumerate_tree(unary, pair, parent)
    n_feasible = int(np.sum(scores > -np.inf))
    score, y = tree_max(unary, pair, parent, order)
    assert score == pytest.approx(scores.max(), abs=1e-12)
    top_scores, labelings = tree_topk(unary, pair, parent, order, n_feasible + 2)
    np.testing.assert_allclose(top_scores[:n_feasible], np.sort(scores)[::-1][:n_feasible])
    assert np.all(top_scores[n_feasible:] == -np.inf) and np.all(labelings[n_feasible:] == -1)
    for mu in (0.1, 1.0):
        value, node, edge = tree_marginals(unary, pair, parent, order, mu)
        assert not np.isnan(value) and not np.isnan(node).any() and not np.isnan(edge).any()
        if n_feasible == 0:
            assert value == -np.inf and not node.any() and not edge.any()
            continue
        ref_value, ref_node, ref_edge = brute_marginals(unary, pair, parent, mu)
        assert value == pytest.approx(ref_value, rel=1e-12)
        np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(edge, ref_edge, rtol=1e-9, atol=1e-12)
        assert np.all(node[forbid] == 0.0)


def test_tree_all_forbidden_and_bad_arguments():
    parent = np.array([-1, 0], dtype=np.int64)
    order = tree_order(parent)
    unary = np.zeros((2, 2))
    pair = np.full((2, 2, 2), -np.inf)
    score, y = tree_max(unary, pair, parent, order)
    assert score == -np.inf and y.min() >= 0
    top_scores, labelings = tree_topk(unary, pair, parent, order, 2)
    assert np.all(top_scores == -np.inf) and np.all(labelings == -1)
    value, node, edge = tree_marginals(unary, pair, parent, order, 1.0)
    assert value == -np.inf and not node.any() and not edge.any()
    with pytest.raises(ValueError):
        tree_topk(unary, pair, parent, order, 0)
    with pytest.raises(ValueError):
        tree_marginals(unary, pair, parent, order, -1.0)


def chain_as_tree(unary, trans):
    """parent[t] = t - 1 and pair[t, a, b] = trans[b, a] (y_t = a, y_{t-1} = b)."""
    T, L = unary.shape
    parent = np.arange(-1, T - 1, dtype=np.int64)
    pair = np.zeros((T, L, L))
    pair[1:] = trans.T
    return pair, parent


@pytest.mark.parametrize("T, L", [(1, 3), (2, 2), (5, 3), (7, 4), (12, 6)])
def test_chain_and_tree_agree(T, L):
    rng = np.random.default_rng(T * L)
    unary, trans = rng.normal(size=(T, L)), rng.normal(size=(L, L))
    pair, parent = chain_as_tree(unary, trans)
    order = tree_order(parent)
    y_chain = np.empty(T, dtype=np.int32)
    s_chain = viterbi_into(unary, trans, y_chain, np.empty(viterbi_work_size(T, L)))
    s_tree, y_tree = tree_max(unary, pair, parent, order)
    assert s_tree == pytest.approx(s_chain, abs=1e-12)
    np.testing.assert_array_equal(y_tree, y_chain)
    for K in (1, 4, 9):
        sc_chain, paths_chain = topk_viterbi(unary, trans, K)
        sc_tree, paths_tree = tree_topk(unary, pair, parent, order, K)
        np.testing.assert_allclose(sc_tree, sc_chain, atol=1e-12)
        np.testing.assert_array_equal(paths_tree, paths_chain)
    for mu in (0.1, 1.0, 3.0):
        v_chain, n_chain, e_chain = forward_backward(unary, trans, mu)
        v_tree, n_tree, e_tree = tree_marginals(unary, pair, parent, order, mu)
        assert v_tree == pytest.approx(v_chain, rel=1e-12)
        np.testing.assert_allclose(n_tree, n_chain, rtol=1e-9, atol=1e-12)
        # tree edge [t, a, b] = P(y_t = a, y_{t-1} = b) = chain edge [t-1, b, a]
        np.testing.assert_allclose(e_tree[1:].transpose(0, 2, 1), e_chain, rtol=1e-9, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 6), S=st.integers(2, 3), K=st.integers(1, 10),
       mu=st.sampled_from([0.05, 0.5, 2.0]), seed=st.integers(0, 2**32 - 1))
def test_random_forests(p, S, K, mu, seed):
    rng = np.random.default_rng(seed)
    parent = random_forest(rng, p, root_prob=rng.uniform(0.0, 0.6))
    order = tree_order(parent)
    unary, pair = random_potentials(rng, p, S, scale=rng.uniform(0.1, 10.0))
    ys, scores = enumerate_tree(unary, pair, parent)
    score, y = tree_max(unary, pair, parent, order)
    assert score == pytest.approx(scores.max(), rel=1e-12, abs=1e-12)
    top_scores, labelings = tree_topk(unary, pair, parent, order, K)
    n = min(K, len(scores))
    np.testing.assert_allclose(top_scores[:n], np.sort(scores)[::-1][:n], rtol=1e-12, atol=1e-12)
    assert len({tuple(y) for y in labelings[:n]}) == n
    value, node, edge = tree_marginals(unary, pair, parent, order, mu)
    ref_value, ref_node, ref_edge = brute_marginals(unary, pair, parent, mu)
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(node, ref_node, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(edge, ref_edge, rtol=1e-8, atol=1e-12)
