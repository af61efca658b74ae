"""Loopy binary graphs (spec 000 §2.4, §7 item 14): graph-cut max-marginals, BMMF top-K and
``BinaryGraphCRF``, all against exhaustive enumeration on small graphs."""
import itertools
import sys

import numpy as np
import pytest

pytest.importorskip("maxflow")

from sklearn_ssvm.smoothing import topk_smooth_max  # noqa: E402
from sklearn_ssvm.marginals import (  # noqa: E402
    bmmf_topk, graphcut_map, graphcut_max_marginals, project_submodular)
from sklearn_ssvm.structures import BinaryGraphCRF  # noqa: E402


# -- random models and enumeration -----------------------------------------------------------

def grid_edges(rows, cols):
    idx = np.arange(rows * cols).reshape(rows, cols)
    return np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1),
                           np.stack([idx[:-1].ravel(), idx[1:].ravel()], axis=1)])


def loopy_edges(rng, p, n_edges):
    """A cycle through all nodes plus random chords (parallel edges allowed)."""
    cycle = [(v, (v + 1) % p) for v in range(p)] if p > 2 else [(0, 1)]
    chords = [tuple(rng.choice(p, size=2, replace=False)) for _ in range(n_edges)]
    return np.array(cycle + chords, dtype=np.int64)


def submodular_tables(rng, n_edges):
    """Continuous random tables, half of them on the boundary of the cone."""
    tables = project_submodular(rng.normal(size=(n_edges, 2, 2)))
    strict = rng.random(n_edges) < 0.5
    tables[strict] += rng.random((strict.sum(), 1, 1)) * np.eye(2)
    return tables


def random_model(rng, graph, p, shared):
    edges = grid_edges(3, 3) if graph == "grid" else loopy_edges(rng, p, p)
    p = int(edges.max()) + 1
    unary = 2.0 * rng.normal(size=(p, 2))
    pairwise = submodular_tables(rng, 1)[0] if shared else submodular_tables(rng, len(edges))
    return unary, edges, pairwise


def enumerate_scores(unary, edges, pairwise, allowed=None):
    """All labelings (n, p) and their scores, ``-inf`` where ``allowed`` is broken."""
    p = unary.shape[0]
    Y = np.array(list(itertools.product(range(unary.shape[1]), repeat=p)))
    tables = np.broadcast_to(pairwise, (len(edges),) + unary.shape[1:] * 2)
    scores = unary[np.arange(p), Y].sum(axis=1) + \
        tables[np.arange(len(edges)), Y[:, edges[:, 0]], Y[:, edges[:, 1]]].sum(axis=1)
    if allowed is not None:
        scores[~allowed[np.arange(p), Y].all(axis=1)] = -np.inf
    return Y, scores


def brute_max_marginals(unary, edges, pairwise, allowed=None):
    Y, scores = enumerate_scores(unary, edges, pairwise, allowed)
    p, L = unary.shape
    table = np.full((p, L), -np.inf)
    for v, j in itertools.product(range(p), range(L)):
        table[v, j] = scores[Y[:, v] == j].max()
    return table


def random_fixed(rng, p):
    return np.where(rng.random(p) < 0.3, rng.integers(0, 2, size=p), -1)


def mask_of(fixed):
    allowed = np.ones((len(fixed), 2), dtype=bool)
    allowed[fixed == 0, 1] = False
    allowed[fixed == 1, 0] = False
    return allowed


class Counted:
    """A max-marginal routine that counts its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, allowed):
        self.calls += 1
        return self.fn(allowed)


# -- graph cuts -------------------------------------------------------------------------------

@pytest.mark.parametrize("graph", ["grid", "loopy"])
@pytest.mark.parametrize("shared", [True, False])
def test_graphcut_max_marginals_equal_brute_force(graph, shared):
    rng = np.random.default_rng(2 * ["grid", "loopy"].index(graph) + shared)
    for trial in range(8):
        unary, edges, pairwise = random_model(rng, graph, int(rng.integers(3, 11)), shared)
        p = unary.shape[0]
        np.testing.assert_allclose(graphcut_max_marginals(unary, edges, pairwise),
                                   brute_max_marginals(unary, edges, pairwise), atol=1e-10)
        fixed = random_fixed(rng, p)
        expected = brute_max_marginals(unary, edges, pairwise, mask_of(fixed))
        as_dict = {int(v): int(fixed[v]) for v in np.flatnonzero(fixed >= 0)}
        for constraints in (fixed, as_dict, mask_of(fixed)):
            table = graphcut_max_marginals(unary, edges, pairwise, constraints)
            np.testing.assert_allclose(table, expected, atol=1e-10)
        # the MAP with one cut, unconstrained and constrained
        for constraints in (None, fixed):
            Y, scores = enumerate_scores(unary, edges, pairwise,
                                         None if constraints is None else mask_of(fixed))
            y, value = graphcut_map(unary, edges, pairwise, constraints)
            np.testing.assert_array_equal(y, Y[np.argmax(scores)])
            assert value == pytest.approx(scores.max(), abs=1e-10)


def test_graphcut_edge_cases():
    unary = np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]])
    no_edges = np.zeros((0, 2), dtype=int)
    np.testing.assert_allclose(graphcut_max_marginals(unary, no_edges, np.zeros((2, 2))),
                               brute_max_marginals(unary, no_edges, np.zeros((2, 2))))
    assert graphcut_map(unary[:1], [], np.zeros((2, 2)))[0].tolist() == [1]
    # a node without allowed labels: no labeling at all
    allowed = np.ones((3, 2), dtype=bool)
    allowed[1] = False
    table, y = graphcut_max_marginals(unary, no_edges, np.zeros((2, 2)), allowed,
                                      return_map=True)
    assert np.all(np.isneginf(table)) and np.all(y == -1)
    with pytest.raises(ValueError, match="node 1 no allowed label"):
        graphcut_map(unary, no_edges, np.zeros((2, 2)), allowed)


def test_decoding_exact_max_marginals_gives_the_map():
    """Thm 45: under unambiguity, ``argmax_j psi_{v;j}`` is the MAP labeling."""
    rng = np.random.default_rng(45)
    for trial in range(10):
        unary, edges, pairwise = random_model(rng, "loopy", int(rng.integers(3, 9)), False)
        Y, scores = enumerate_scores(unary, edges, pairwise)
        for table in (brute_max_marginals(unary, edges, pairwise),
                      graphcut_max_marginals(unary, edges, pairwise)):
            np.testing.assert_array_equal(np.argmax(table, axis=1), Y[np.argmax(scores)])


# -- BMMF -------------------------------------------------------------------------------------

def check_topk(labelings, scores, Y, all_scores, K):
    order = np.argsort(-all_scores, kind="stable")
    m = min(K, int(np.isfinite(all_scores).sum()))
    np.testing.assert_allclose(scores[:m], all_scores[order[:m]], atol=1e-10)
    assert np.all(np.isneginf(scores[m:])) and np.all(labelings[m:] == -1)
    assert len({tuple(y) for y in labelings[:m]}) == m  # distinct
    # each labeling has the score reported for it
    index = {tuple(y): i for i, y in enumerate(Y)}
    np.testing.assert_allclose(all_scores[[index[tuple(y)] for y in labelings[:m]]],
                               scores[:m], atol=1e-10)


@pytest.mark.parametrize("n_labels", [2, 3])
@pytest.mark.parametrize("K", [1, 2, 5, 12])
def test_bmmf_with_brute_force_max_marginals_is_exact_top_k(n_labels, K):
    """Thm 46: exact top-K with at most 2K calls of the max-marginal routine."""
    rng = np.random.default_rng(10 * K + n_labels)
    for trial in range(4):
        p = int(rng.integers(2, 6))
        unary = rng.normal(size=(p, n_labels))
        edges = loopy_edges(rng, p, 2)
        pairwise = rng.normal(size=(len(edges), n_labels, n_labels))  # any scores will do
        fn = Counted(lambda allowed: brute_max_marginals(unary, edges, pairwise, allowed))
        labelings, scores = bmmf_topk(fn, p, K, n_labels=n_labels)
        assert fn.calls <= 2 * K
        check_topk(labelings, scores, *enumerate_scores(unary, edges, pairwise), K)


@pytest.mark.parametrize("K", [1, 3, 8, 40])
def test_bmmf_with_graph_cuts_equals_sorted_enumeration(K):
    rng = np.random.default_rng(K)
    for trial in range(5):
        unary, edges, pairwise = random_model(rng, "grid" if trial % 2 else "loopy",
                                              int(rng.integers(3, 8)), trial % 3 == 0)
        fn = Counted(lambda allowed: graphcut_max_marginals(unary, edges, pairwise, allowed,
                                                            return_map=True))
        labelings, scores = bmmf_topk(fn, unary.shape[0], K)
        assert fn.calls <= 2 * K
        check_topk(labelings, scores, *enumerate_scores(unary, edges, pairwise), K)


def test_bmmf_pads_when_fewer_labelings_exist():
    unary = np.array([[0.0, 1.0], [0.3, 0.0]])
    labelings, scores = bmmf_topk(
        lambda allowed: graphcut_max_marginals(unary, [[0, 1]], np.eye(2), allowed), 2, 6)
    check_topk(labelings, scores, *enumerate_scores(unary, np.array([[0, 1]]), np.eye(2)), 6)
    assert np.isneginf(scores[4:]).all()


def test_bmmf_is_exact_under_ties_with_map_labelings():
    """With a maximising labeling returned by the routine, ties do not break BMMF."""
    unary = np.zeros((4, 2))
    edges = grid_edges(2, 2)
    pairwise = np.eye(2)  # all-0 and all-1 tie, as do many others
    first = bmmf_topk(lambda allowed: graphcut_max_marginals(unary, edges, pairwise, allowed,
                                                             return_map=True), 4, 16)
    check_topk(*first, *enumerate_scores(unary, edges, pairwise), 16)
    second = bmmf_topk(lambda allowed: graphcut_max_marginals(unary, edges, pairwise, allowed,
                                                              return_map=True), 4, 16)
    np.testing.assert_array_equal(first[0], second[0])  # deterministic


def test_bmmf_validates_its_routine():
    with pytest.raises(ValueError, match="shape"):
        bmmf_topk(lambda allowed: np.zeros((3, 2)), 2, 2)
    with pytest.raises(ValueError, match="NaN"):
        bmmf_topk(lambda allowed: np.full((2, 2), np.nan), 2, 2)
    with pytest.raises(ValueError, match="breaks the constraints"):
        bmmf_topk(lambda allowed: (np.zeros((2, 2)), np.array([0, 5])), 2, 2)
    with pytest.raises(ValueError, match="K must be an integer >= 1"):
        bmmf_topk(lambda allowed: np.zeros((2, 2)), 2, 0)
    with pytest.raises(ValueError, match="callable"):
        bmmf_topk(None, 2, 2)


# -- projection onto the submodular cone ------------------------------------------------------

def test_project_submodular():
    rng = np.random.default_rng(0)
    tables = rng.normal(size=(200, 2, 2))
    projected = project_submodular(tables)
    margin = projected[:, 0, 0] + projected[:, 1, 1] - projected[:, 0, 1] - projected[:, 1, 0]
    assert np.all(margin >= -1e-12)
    np.testing.assert_allclose(project_submodular(projected), projected, atol=1e-15)
    inside = tables[:, 0, 0] + tables[:, 1, 1] >= tables[:, 0, 1] + tables[:, 1, 0]
    np.testing.assert_array_equal(projected[inside], tables[inside])
    # outside: the move is along the cone's normal and lands on its boundary (the projection)
    move = (tables - projected)[~inside].reshape(-1, 4)
    np.testing.assert_allclose(move / move[:, :1], np.tile([1, -1, -1, 1], (len(move), 1)))
    np.testing.assert_allclose(margin[~inside], 0.0, atol=1e-12)
    flat = project_submodular(np.array([0.0, 1.0, 1.0, 0.0]))
    np.testing.assert_allclose(flat, [0.5, 0.5, 0.5, 0.5])
    graphcut_map(rng.normal(size=(9, 2)), grid_edges(3, 3), projected[:12])
    with pytest.raises(ValueError, match="shape"):
        project_submodular(np.zeros(3))


# -- BinaryGraphCRF ---------------------------------------------------------------------------

def crf_example(rng, graph="loopy", n_features=3):
    edges = grid_edges(3, 3) if graph == "grid" else loopy_edges(rng, int(rng.integers(2, 9)), 3)
    p = int(edges.max()) + 1
    x = (rng.normal(size=(p, n_features)), edges)
    return x, rng.integers(0, 2, size=p)


def crf_coef(rng, crf, n_features=3):
    coef = rng.normal(size=2 * n_features + 4)
    return crf.project_coef(coef)


def crf_values(crf, x, y_true, coef):
    """All labelings and ``H(y) = L(y_true, y) + <coef, phi(x, y) - phi(x, y_true)>``."""
    gold = coef @ crf.joint_feature(x, y_true)
    Y = [np.array(y) for y in itertools.product([0, 1], repeat=len(y_true))]
    return Y, np.array([crf.loss(y_true, y) + coef @ crf.joint_feature(x, y) - gold for y in Y])


def test_crf_joint_feature_and_loss():
    rng = np.random.default_rng(1)
    crf = BinaryGraphCRF()
    x, y = crf_example(rng)
    features, edges = x
    phi = crf.joint_feature(x, y)
    W, theta = rng.normal(size=(3, 2)), rng.normal(size=(2, 2))
    score = (features @ W)[np.arange(len(y)), y].sum() + theta[y[edges[:, 0]], y[edges[:, 1]]].sum()
    assert np.concatenate([W.ravel(), theta.ravel()]) @ phi == pytest.approx(score)
    assert phi[-4:].sum() == len(edges)
    assert crf.loss(y, y) == 0.0
    assert crf.loss([0, 1, 1, 0], [1, 1, 0, 0]) == 0.5


@pytest.mark.parametrize("graph", ["grid", "loopy"])
def test_crf_oracles_match_enumeration(graph):
    rng = np.random.default_rng(7 if graph == "grid" else 8)
    crf = BinaryGraphCRF()
    for trial in range(5):
        x, y_true = crf_example(rng, graph)
        coef = crf_coef(rng, crf)
        Y, values = crf_values(crf, x, y_true, coef)
        order = np.argsort(-values, kind="stable")
        y_star, value = crf.max_oracle(x, y_true, coef)
        assert value == pytest.approx(values.max(), abs=1e-10)
        np.testing.assert_array_equal(y_star, Y[order[0]])
        scores = [coef @ crf.joint_feature(x, y) for y in Y]
        np.testing.assert_array_equal(crf.decode(x, coef), Y[int(np.argmax(scores))])
        K = 6
        labelings, topk = crf.topk_oracle(x, y_true, coef, K)
        m = min(K, len(Y))
        np.testing.assert_allclose(topk[:m], values[order[:m]], atol=1e-10)
        assert all(lab is None for lab in labelings[m:]) and np.isneginf(topk[m:]).all()
        assert len({tuple(lab) for lab in labelings[:m]}) == m
        for mu in (0.1, 1.0, 10.0):
            value, grad = crf.smoothed_oracle(x, y_true, coef, mu=mu, top_k=K)
            h, u, _ = topk_smooth_max(values[order[:K]], mu)
            assert value == pytest.approx(h, abs=1e-10)
            phi_true = crf.joint_feature(x, y_true)
            expected = sum(u[k] * crf.joint_feature(x, Y[order[k]]) for k in range(len(u)))
            np.testing.assert_allclose(grad, expected - phi_true, atol=1e-9)


def test_crf_k1_and_none_are_the_max_oracle():
    rng = np.random.default_rng(3)
    crf = BinaryGraphCRF()
    x, y_true = crf_example(rng, "grid")
    coef = crf_coef(rng, crf)
    y_star, value = crf.max_oracle(x, y_true, coef)
    subgradient = crf.joint_feature(x, y_star) - crf.joint_feature(x, y_true)
    for kwargs in ({"smoothing": None}, {"top_k": 1}, {"mu": 0.0}):
        v, g = crf.smoothed_oracle(x, y_true, coef, **kwargs)
        assert v == pytest.approx(value, abs=1e-12)
        np.testing.assert_allclose(g, subgradient, atol=1e-12)
    labelings, values = crf.topk_oracle(x, y_true, coef, 1)
    np.testing.assert_array_equal(labelings[0], y_star)
    assert values[0] == pytest.approx(value, abs=1e-12)


def test_crf_fit_and_validation_errors():
    rng = np.random.default_rng(5)
    crf = BinaryGraphCRF()
    x, y = crf_example(rng)
    features, edges = x
    p = len(y)
    assert crf.fit([x, x], [y, y]) is crf
    assert crf.n_params == 10 and list(crf.classes_) == [0, 1]
    coef = np.zeros(crf.n_params)
    with pytest.raises(ValueError, match="Entropy smoothing.*#P-hard"):
        crf.smoothed_oracle(x, y, coef, smoothing="entropy")
    with pytest.raises(ValueError, match="smoothing must be"):
        crf.smoothed_oracle(x, y, coef, smoothing="l1")
    with pytest.raises(ValueError, match="top_k must be an integer"):
        crf.smoothed_oracle(x, y, coef, top_k=0)
    with pytest.raises(ValueError, match="coef must have shape"):
        crf.max_oracle(x, y, np.zeros(5))
    with pytest.raises(ValueError, match="not submodular"):
        crf.decode(x, np.r_[np.zeros(6), 0.0, 1.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="values other than 0 and 1"):
        crf.max_oracle(x, np.full(p, 2), coef)
    with pytest.raises(ValueError, match="one label per node"):
        crf.max_oracle(x, y[:-1], coef)
    with pytest.raises(ValueError, match="out of range"):
        crf.decode((features, np.array([[0, p]])), coef)
    with pytest.raises(ValueError, match="self loop"):
        crf.decode((features, np.array([[0, 1], [1, 1]])), coef)
    with pytest.raises(ValueError, match=r"shape \(n_edges, 2\)"):
        crf.decode((features, np.array([[0, 1, 2]])), coef)
    with pytest.raises(ValueError, match="integer array"):
        crf.decode((features, np.array([[0.0, 1.0]])), coef)
    with pytest.raises(ValueError, match="2-D"):
        crf.decode((features[0], edges), coef)
    with pytest.raises(ValueError, match="NaN"):
        crf.decode((np.full_like(features, np.nan), edges), coef)
    with pytest.raises(ValueError, match="expected 3"):
        crf.decode((features[:, :2], edges), coef)
    with pytest.raises(ValueError, match="pair"):
        crf.decode(features, coef)
    with pytest.raises(ValueError, match="different numbers of examples"):
        BinaryGraphCRF().fit([x, x], [y])
    with pytest.raises(ValueError, match="Example 1 has 2 node features"):
        BinaryGraphCRF().fit([x, (features[:, :2], edges)], [y, y])


def test_graphcut_validation_errors():
    unary, edges = np.zeros((3, 2)), np.array([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="not submodular"):
        graphcut_map(unary, edges, [[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="pairwise must be"):
        graphcut_map(unary, edges, np.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match="unary must have shape"):
        graphcut_map(np.zeros((3, 3)), edges, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="labels are 0 and 1"):
        graphcut_map(unary, edges, np.zeros((2, 2)), {0: 2})
    with pytest.raises(ValueError, match="nodes are 0..2"):
        graphcut_map(unary, edges, np.zeros((2, 2)), {5: 1})
    with pytest.raises(ValueError, match="constraints must be"):
        graphcut_map(unary, edges, np.zeros((2, 2)), np.zeros(4, dtype=int))


def test_missing_pymaxflow_names_the_extra(monkeypatch):
    """The max-marginals reuse PyMaxflow's residual graph; the MAP cut has the compiled kernel
    (tests/test_maxflow.py)."""
    monkeypatch.setitem(sys.modules, "maxflow", None)
    with pytest.raises(ImportError, match=r'pip install "sklearn_ssvm\[graphcut\]"'):
        graphcut_max_marginals(np.zeros((2, 2)), [[0, 1]], np.zeros((2, 2)))
    assert graphcut_map(np.array([[0.0, 1.0], [0.0, -1.0]]), [[0, 1]],
                        np.zeros((2, 2)))[0].tolist() == [1, 0]


def test_crf_topk_at_zero_coef_where_scores_tie():
    """At ``coef = 0`` (the start of learning) ``H`` is the Hamming loss: massive ties."""
    rng = np.random.default_rng(11)
    crf = BinaryGraphCRF()
    x, y_true = crf_example(rng, "grid")
    coef = np.zeros(10)
    _, values = crf_values(crf, x, y_true, coef)
    labelings, topk = crf.topk_oracle(x, y_true, coef, 20)
    np.testing.assert_allclose(topk, np.sort(values)[::-1][:20], atol=1e-12)
    assert len({tuple(lab) for lab in labelings}) == 20
    for lab, value in zip(labelings, topk):
        assert crf.loss(y_true, lab) == pytest.approx(value)


# -- training (SmoothSSVMClassifier on graph cuts) ---------------------------------------------

def graph_dataset(rng, n=10, n_features=2):
    """Cycles of 4 nodes with a chord; node labels follow the first feature, noisily."""
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])
    X, Y = [], []
    for _ in range(n):
        y = rng.integers(0, 2, size=4)
        features = rng.normal(size=(4, n_features))
        features[:, 0] += 1.5 * y - 0.75
        X.append((features, edges))
        Y.append(y)
    return X, Y


def constrained_optimum(crf, X, Y, alpha):
    """``min alpha/2 ||w||^2 + mean_i max_y H_i(y)`` over coefficients with a submodular
    pairwise table: a QP in epigraph form over the enumerated labelings (SLSQP)."""
    from scipy.optimize import minimize
    rows, owners, losses = [], [], []
    for i, (x, y_true) in enumerate(zip(X, Y)):
        gold = crf.joint_feature(x, y_true)
        for y in itertools.product([0, 1], repeat=len(y_true)):
            rows.append(crf.joint_feature(x, np.array(y)) - gold)
            owners.append(i)
            losses.append(crf.loss(y_true, np.array(y)))
    A, owners, losses = np.array(rows), np.array(owners), np.array(losses)
    n, d = len(X), A.shape[1]
    C = np.zeros((A.shape[0], d + n))  # xi_i - <A_iy, w> >= L_iy
    C[:, :d] = -A
    C[np.arange(A.shape[0]), d + owners] = 1.0
    S = np.zeros(d + n)  # the submodular cone: p00 - p01 - p10 + p11 >= 0
    S[d - 4:d] = [1.0, -1.0, -1.0, 1.0]
    res = minimize(lambda v: 0.5 * alpha * v[:d] @ v[:d] + v[d:].mean(), np.ones(d + n),
                   jac=lambda v: np.concatenate([alpha * v[:d], np.full(n, 1.0 / n)]),
                   method="SLSQP", constraints=[
                       dict(type="ineq", fun=lambda v: C @ v - losses, jac=lambda v: C),
                       dict(type="ineq", fun=lambda v: S @ v, jac=lambda v: S)],
                   options=dict(ftol=1e-12, maxiter=1000))
    assert res.success, res.message
    return res.fun


@pytest.mark.parametrize("step, bounds", [("fw", None), ("pairwise", None),
                                          ("pairwise", "positive_pairwise")])
def test_bcfw_brackets_the_constrained_optimum(step, bounds):
    """BCFW's dense pass with the projection onto the submodular cone (or the attractive box
    inside it): the certified interval [dual, primal] holds the optimum of an independent
    constrained solve, and every fitted table is submodular."""
    from sklearn_ssvm import BCFWStructuredSVM
    rng = np.random.default_rng(21)
    X, Y = graph_dataset(rng)
    alpha = 0.1
    crf = BinaryGraphCRF().fit(X, Y)
    f_star = constrained_optimum(crf, X, Y, alpha)
    est = BCFWStructuredSVM(BinaryGraphCRF(), alpha=alpha, step=step, coef_bounds=bounds,
                            tol=1e-3, max_iter=1000, random_state=0).fit(X, Y)
    theta = est.coef_[-4:]
    assert theta[0] + theta[3] >= theta[1] + theta[2] - 1e-12
    if bounds:
        assert theta[0] >= 0 and theta[3] >= 0 and theta[1] <= 0 and theta[2] <= 0
    assert est.converged_ and est.gap_certified_
    assert est.primal_objective(X, Y) == pytest.approx(est.primal_objective_)
    assert est.dual_objective_ <= f_star + 1e-9 <= est.primal_objective_ + 2e-9 or bounds
    assert est.dual_objective_ <= est.primal_objective_ <= est.dual_objective_ + 1e-3
    if not bounds:  # the box is a subset of the cone: its optimum can only be higher
        assert est.primal_objective_ - f_star < 1e-3


@pytest.mark.parametrize("solver", ["casimir-svrg", "sgd"])
def test_smooth_estimator_trains_to_the_constrained_optimum(solver):
    from sklearn_ssvm import SmoothSSVMClassifier
    rng = np.random.default_rng(21)
    X, Y = graph_dataset(rng)
    alpha = 0.1
    crf = BinaryGraphCRF().fit(X, Y)
    f_star = constrained_optimum(crf, X, Y, alpha)
    est = SmoothSSVMClassifier(BinaryGraphCRF(), alpha=alpha, solver=solver, max_iter=60,
                               tol=0.0, smoothing=None if solver == "sgd" else "l2",
                               random_state=0).fit(X, Y)
    theta = est.coef_[-4:]
    assert theta[0] + theta[3] >= theta[1] + theta[2] - 1e-12  # kept submodular
    assert est.objective(X, Y) == pytest.approx(est.objective_)
    assert 0.0 <= est.objective_ - f_star < 0.01
    certified = [r for r in est.history_ if np.isfinite(r["gap"])]
    assert len(certified) == (0 if solver == "sgd" else 59)  # after the SGD warm-up epoch
    for record in certified:  # the dual bound never passes the optimum
        assert record["objective"] - record["gap"] <= f_star + 1e-7
    assert est.score(X, Y) == pytest.approx(
        1 - np.mean([np.mean(p != y) for p, y in zip(est.predict(X), Y)]))
    assert est.score(X, Y) >= 0.75  # the first feature alone gives about 0.77


def test_graph_crf_training_errors():
    from sklearn_ssvm import BMRMStructuredSVM, SmoothSSVMClassifier
    rng = np.random.default_rng(22)
    X, Y = graph_dataset(rng, n=4)
    with pytest.raises(ValueError, match="keeps no constraint on coef"):
        BMRMStructuredSVM(BinaryGraphCRF()).fit(X, Y)
    with pytest.raises(ValueError, match="SmoothSSVMClassifier"):
        SmoothSSVMClassifier(BinaryGraphCRF(), solver="agm", smoothing="entropy",
                             top_k=None).fit(X, Y)
    with pytest.raises(ValueError, match="#P-hard"):
        SmoothSSVMClassifier(BinaryGraphCRF(), smoothing="entropy", top_k=None).fit(X, Y)
    with pytest.raises(ValueError, match="set top_k"):
        SmoothSSVMClassifier(BinaryGraphCRF(), top_k=None).fit(X, Y)
    with pytest.raises(ValueError, match=r"BinaryGraphCRF with an l1 part \(l1_ratio > 0\): "
                                         r"the soft-threshold"):
        SmoothSSVMClassifier(BinaryGraphCRF(), l1_ratio=0.5).fit(X, Y)
    est = SmoothSSVMClassifier(BinaryGraphCRF(), max_iter=2, random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match="node features"):
        est.predict([(np.zeros((4, 3)), X[0][1])])
