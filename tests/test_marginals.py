"""Marginal inference by TRW Barrier Frank-Wolfe (spec 004 §5): exact references, MAP oracles,
the spanning-tree polytope, the objective and its certificates, the algorithmic invariants."""
import itertools
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_ssvm.marginals import (
    AlphaExpansionMAP, BestOfMAP, BruteForceMAP, GraphCutMAP, ICMMAP, MILPMAP, AutoMAP,
    MaxProductMAP, PairwiseMRF, TreeMAP, TRWSMAP,
    TRWBarrierFW, TRWFrankWolfe, TRWLocalPolytope, brute_force_marginals, edge_mutual_information,
    entropy_coefficients, frank_wolfe_trw, grid_edges, grid_marginals, initial_rho,
    marginal_error, max_weight_spanning_tree, random_complete_graph, random_grid, random_rbm,
    rescale_weights, spanning_tree_edge_probs, trbp_log_partition, trw_barrier_fw, trw_objective,
    update_delta)
from sklearn_ssvm._kernels import mrf as K


# -- helpers ------------------------------------------------------------------------------------

def enumerate_log_z(mrf):
    """log Z and marginals by itertools, independent of the numba enumeration."""
    configs = list(itertools.product(*[range(s) for s in mrf.n_states]))
    scores = np.array([mrf.score(np.array(c)) for c in configs])
    log_z = logsumexp(scores)
    mu = np.zeros(mrf.dim)
    for c, s in zip(configs, scores):
        mu += np.exp(s - log_z) * mrf.vertex(np.array(c))
    return log_z, mu


def random_mrf(rng, n_nodes, edges, max_states=3, scale=1.0):
    n_states = rng.integers(2, max_states + 1, n_nodes)
    node = [rng.normal(0, scale, s) for s in n_states]
    edge = [rng.normal(0, scale, (n_states[a], n_states[b])) for a, b in edges]
    return PairwiseMRF(n_states, edges, node, edge)


def loopy_edges(n):
    cyc = [(i, (i + 1) % n) for i in range(n)]
    return np.array(cyc + [(0, n // 2), (1, n - 2)])


def check_consistent(mrf, mu, atol=1e-9):
    nb, eb = mrf.node_blocks(mu), mrf.edge_blocks(mu)
    for t in nb:
        assert abs(t.sum() - 1) < atol and t.min() >= -atol
    for e, (a, b) in enumerate(mrf.edges):
        np.testing.assert_allclose(eb[e].sum(1), nb[a], atol=atol)
        np.testing.assert_allclose(eb[e].sum(0), nb[b], atol=atol)


# -- model container ----------------------------------------------------------------------------

def test_ising_convention_and_layout():
    mrf = PairwiseMRF.ising(3, [(0, 1), (1, 2)], [0.3, -0.2, 0.1], [1.5, -0.5])
    np.testing.assert_allclose(mrf.node_blocks(mrf.theta)[0], [-0.3, 0.3])
    np.testing.assert_allclose(mrf.edge_blocks(mrf.theta)[0], [[1.5, -1.5], [-1.5, 1.5]])
    s = np.array([1, -1, 1])
    x = (s + 1) // 2  # state index 1 means s = +1
    expect = 0.3 * 1 + -0.2 * -1 + 0.1 * 1 + 1.5 * s[0] * s[1] - 0.5 * s[1] * s[2]
    assert np.isclose(mrf.score(x), expect)
    assert mrf.dim == 3 * 2 + 2 * 4
    v = mrf.vertex(x)
    assert v.sum() == 5 and np.isclose(v @ mrf.theta, expect)
    np.testing.assert_allclose(mrf.uniform_marginals()[:6], 0.5)
    np.testing.assert_allclose(mrf.uniform_marginals()[6:], 0.25)


@pytest.mark.parametrize("bad, match", [
    (dict(edges=[(0, 0)]), "self loops"), (dict(edges=[(0, 1), (1, 0)]), "same pair"),
    (dict(edges=[(0, 5)]), "endpoints"),
    (dict(node=[[0.0, np.inf], [0, 0]]), r"node_potentials\[0\] has non-finite"),
    (dict(node=np.array([[0.0, 0], [0, 0], [np.nan, 0]])), r"node_potentials\[2\] has non-f"),
    (dict(node=[np.zeros(2), np.zeros(3), np.zeros(2)]), r"node_potentials\[1\] must have"),
    (dict(edge=np.zeros((1, 2, 3))), r"edge_potentials\[0\] must have shape"),
    (dict(edges=[(0, 1), (1, 2)], edge=np.r_[np.zeros((1, 2, 2)), [[[0, 0], [np.inf, 0]]]]),
     r"edge_potentials\[1\] has non-finite")])
def test_mrf_validation(bad, match):
    """Bad models are refused naming the table, whether the tables come as arrays (checked
    whole) or as lists (checked one by one)."""
    args = dict(edges=[(0, 1)], node=np.zeros((3, 2)), edge=np.zeros((1, 2, 2)))
    args.update(bad)
    n_edges = len(args["edges"])
    if "edge" not in bad:
        args["edge"] = np.zeros((n_edges, 2, 2))
    with pytest.raises(ValueError, match=match):
        PairwiseMRF(2, args["edges"], args["node"], args["edge"])


def test_generators():
    k10 = random_complete_graph(10, 3.0, random_state=0)
    assert k10.n_edges == 45
    c = k10.edge_blocks(k10.theta)[:, 1, 1]
    f = k10.node_blocks(k10.theta)[:, 1]
    assert np.abs(c).max() <= 3 and np.abs(f).max() <= 1
    g = random_grid(5, 5, random_state=0)
    assert g.n_nodes == 25 and g.n_edges == 40
    assert np.abs(g.edge_blocks(g.theta)[:, 1, 1]).max() <= 4
    r = random_rbm(4, 3, random_state=0)
    assert r.n_nodes == 7 and r.n_edges == 12


def test_from_uai(tmp_path):
    text = """MARKOV
3
2 3 2
4
1 0
2 0 1
2 2 1
2 0 1

2 0.5 2.0
6 1 2 3 4 5 6
6 1 1 2 2 3 3
6 2 2 2 2 2 2
"""
    path = tmp_path / "m.uai"
    path.write_text(text)
    mrf = PairwiseMRF.from_uai(path)
    np.testing.assert_array_equal(mrf.n_states, [2, 3, 2])
    np.testing.assert_array_equal(mrf.edges, [(0, 1), (1, 2)])
    np.testing.assert_allclose(mrf.node_blocks(mrf.theta)[0], np.log([0.5, 2.0]))
    np.testing.assert_allclose(mrf.edge_blocks(mrf.theta)[0],
                               np.log(np.arange(1, 7).reshape(2, 3) * 2.0))
    # factor over (2, 1): values with var 1 fastest; transposed to (1, 2)
    np.testing.assert_allclose(mrf.edge_blocks(mrf.theta)[1],
                               np.log(np.array([[1, 1, 2], [2, 3, 3]]).reshape(2, 3).T))
    x = np.array([1, 2, 0])
    p = 2.0 * (6 * 2) * np.array([[1, 1, 2], [2, 3, 3]])[0, 2]
    assert np.isclose(mrf.score(x), np.log(p))
    (tmp_path / "b.uai").write_text("BAYES\n1\n2\n1\n1 0\n2 0.5 0.5\n")
    with pytest.raises(ValueError, match="MARKOV"):
        PairwiseMRF.from_uai(tmp_path / "b.uai")
    (tmp_path / "z.uai").write_text("MARKOV\n1\n2\n1\n1 0\n2 0 1\n")
    with pytest.raises(ValueError, match="zero"):
        PairwiseMRF.from_uai(tmp_path / "z.uai")


# -- exact references ---------------------------------------------------------------------------

def test_brute_force_matches_enumeration():
    rng = np.random.default_rng(0)
    mrf = random_mrf(rng, 6, loopy_edges(6))
    lz, mu = brute_force_marginals(mrf)
    lz2, mu2 = enumerate_log_z(mrf)
    assert np.isclose(lz, lz2)
    np.testing.assert_allclose(mu, mu2, atol=1e-12)
    check_consistent(mrf, mu)


@pytest.mark.parametrize("rows,cols,S", [(3, 4, 2), (4, 3, 2), (2, 3, 3)])
def test_grid_transfer_matrix(rows, cols, S):
    rng = np.random.default_rng(rows * 10 + cols)
    edges = grid_edges(rows, cols)
    edges[::3] = edges[::3, ::-1]  # some reversed edges
    n = rows * cols
    mrf = PairwiseMRF(np.full(n, S), edges, rng.normal(size=(n, S)),
                      rng.normal(0, 2, (len(edges), S, S)))
    lz, mu = grid_marginals(mrf, rows, cols)
    lz2, mu2 = brute_force_marginals(mrf)
    assert np.isclose(lz, lz2)
    np.testing.assert_allclose(mu, mu2, atol=1e-10)


def test_spin_zero_one_conversion():
    """Spec §3.2/§5.1.7: the 0/1 form (1, e^a_i), (1, 1, 1, e^b_ij) has the same marginals and
    log Z_spin = log Z_01 + sum theta_ij - sum theta_i."""
    mrf = random_complete_graph(6, 2.0, random_state=3)
    th_i = mrf.node_blocks(mrf.theta)[:, 1]
    th_ij = mrf.edge_blocks(mrf.theta)[:, 1, 1]
    a = 2 * th_i - 2 * np.bincount(mrf.edges.ravel(), np.repeat(th_ij, 2), minlength=6)
    node = np.stack([np.zeros(6), a], 1)
    edge = np.zeros((mrf.n_edges, 2, 2))
    edge[:, 1, 1] = 4 * th_ij
    m01 = PairwiseMRF(2, mrf.edges, node, edge)
    lz, mu = brute_force_marginals(mrf)
    lz01, mu01 = brute_force_marginals(m01)
    np.testing.assert_allclose(mu, mu01, atol=1e-12)
    assert np.isclose(lz, lz01 + th_ij.sum() - th_i.sum())


# -- MAP oracles --------------------------------------------------------------------------------

def test_oracles_agree_with_brute_force():
    rng = np.random.default_rng(1)
    bf, milp = BruteForceMAP(), MILPMAP()
    for trial in range(4):
        mrf = random_mrf(rng, 7, loopy_edges(7), scale=2.0)
        pot = rng.normal(0, 2, mrf.dim)
        r = bf(mrf, pot)
        best = max(mrf.score(np.array(c), pot)
                   for c in itertools.product(*[range(s) for s in mrf.n_states]))
        assert r.exact and np.isclose(r.value, best)
        m = milp(mrf, pot)
        assert m.exact and np.isclose(m.value, best)
        assert m.upper_bound is None or best <= m.upper_bound <= best + 1e-6
        b = BestOfMAP([ICMMAP(), milp])(mrf, pot)
        assert b.exact and np.isclose(b.value, best)
        assert np.isclose(AutoMAP()(mrf, pot).value, best)


def test_trws_bound_and_certificate_against_enumeration():
    """TRW-S (Kolmogorov 2006): its bound is never below the enumerated maximum, its labeling
    never above it, and a call that says it is exact returns the maximum; on forests every call
    is exact. Mixed numbers of states, weak and frustrated couplings, warm-started messages."""
    rng = np.random.default_rng(12)
    certified = 0
    for trial in range(24):
        n = int(rng.integers(5, 8))
        edges = loopy_edges(n) if trial % 4 else np.array([(v, rng.integers(v))
                                                             for v in range(1, n)])
        mrf = random_mrf(rng, n, edges, max_states=4, scale=float(rng.choice([0.3, 1.0, 3.0])))
        oracle = TRWSMAP()
        for _ in range(2):  # the second call starts from the first one's messages
            pot = mrf.theta + 0.1 * rng.normal(size=mrf.dim)
            best = max(mrf.score(np.array(c), pot)
                       for c in itertools.product(*[range(s) for s in mrf.n_states]))
            r = oracle(mrf, pot)
            assert np.isclose(r.value, mrf.score(r.assignment, pot))
            assert r.value <= best + 1e-9 and r.upper_bound >= best - 1e-9
            if r.exact:
                certified += 1
                assert np.isclose(r.value, best, rtol=1e-7, atol=1e-9)
            if trial % 4 == 0:
                assert r.exact
    assert certified >= 24  # the relaxation is tight on most of these models


def test_trws_then_milp_runs_integer_programs_up_to_its_size():
    """``"auto"``'s oracle on loopy models: HiGHS on the calls TRW-S leaves uncertified (the
    enumerated maximum), only on models of at most ``max_variables``; beyond, TRW-S's labeling
    and bound, reported as not exact."""
    from sklearn_ssvm.marginals._oracles import TRWSThenMILPMAP
    rng = np.random.default_rng(5)
    loose = 0
    for trial in range(12):
        mrf = random_mrf(rng, 6, loopy_edges(6), max_states=3, scale=3.0)
        best = max(mrf.score(np.array(c), mrf.theta)
                   for c in itertools.product(*[range(s) for s in mrf.n_states]))
        exact = TRWSThenMILPMAP()(mrf, mrf.theta)
        assert exact.exact and np.isclose(exact.value, best)
        capped = TRWSThenMILPMAP(max_variables=mrf.dim - 1)
        r = capped(mrf, mrf.theta)
        assert capped.answered == "TRWSMAP" and r.upper_bound >= best - 1e-9
        if not r.exact:
            loose += 1
            assert r.value <= best + 1e-9
    assert loose > 0  # some relaxations are loose here


def test_tree_oracle_mixed_states():
    rng = np.random.default_rng(2)
    edges = np.array([(0, 1), (2, 1), (1, 3), (4, 3), (5, 6)])  # a forest, reversed edges
    for _ in range(3):
        mrf = random_mrf(rng, 7, edges, max_states=4, scale=2.0)
        pot = rng.normal(0, 2, mrf.dim)
        r = TreeMAP()(mrf, pot)
        assert np.isclose(r.value, BruteForceMAP()(mrf, pot).value)
        assert isinstance(AutoMAP().choose(mrf), TreeMAP)
    loopy = random_mrf(rng, 5, loopy_edges(5))
    with pytest.raises(ValueError, match="cycle"):
        TreeMAP()(loopy, np.zeros(loopy.dim))


def test_an_image_sized_model_chooses_its_oracle_without_overflow_warnings():
    """8 states on 32 x 32 pixels count 8**1024 assignments, past float64: the choice (and the
    brute force's refusal) treat them as more than any limit, and warn of no overflow."""
    edges = grid_edges(32, 32)
    mrf = PairwiseMRF(np.full(1024, 8), edges, np.zeros((1024, 8)), np.zeros((len(edges), 8, 8)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert type(AutoMAP().choose(mrf)).__name__ == "TRWSThenMILPMAP"
        with pytest.raises(ValueError, match="inf assignments exceed"):
            BruteForceMAP()(mrf, np.zeros(mrf.dim))


def test_graphcut_oracle():
    pytest.importorskip("maxflow")
    rng = np.random.default_rng(3)
    edges = grid_edges(3, 4)
    mrf = PairwiseMRF.ising(12, edges, rng.uniform(-1, 1, 12), rng.uniform(0, 2, len(edges)))
    pot = mrf.theta + rng.normal(0, 0.1, mrf.dim) * np.r_[np.ones(24), np.zeros(mrf.dim - 24)]
    r = GraphCutMAP()(mrf, pot)
    assert np.isclose(r.value, BruteForceMAP()(mrf, pot).value)
    frustrated = PairwiseMRF.ising(3, [(0, 1)], 0.0, -1.0)
    with pytest.raises(ValueError, match="submodular"):
        GraphCutMAP()(frustrated, frustrated.theta)


def test_icm_is_local_optimum():
    rng = np.random.default_rng(4)
    mrf = random_mrf(rng, 8, loopy_edges(8), scale=2.0)
    pot = rng.normal(0, 2, mrf.dim)
    r = ICMMAP()(mrf, pot, init=np.zeros(8, dtype=np.int64))
    assert not r.exact
    for i in range(8):
        for s in range(mrf.n_states[i]):
            y = r.assignment.copy()
            y[i] = s
            assert mrf.score(y, pot) <= r.value + 1e-9
    assert BestOfMAP([ICMMAP(), BruteForceMAP()])(mrf, pot).value >= r.value


def test_max_product_exact_on_forests_never_above_the_optimum():
    """Loopy max-product is exact on forests (random potentials: no ties); TRW and loopy
    max-product on 3x3 grids and loopy graphs of 10 nodes with 2-4 states are never above the
    brute-force optimum and never below ICM from their own decoding (they end with it)."""
    rng = np.random.default_rng(7)
    forest = np.array([(0, 1), (2, 1), (1, 3), (4, 3), (5, 6), (6, 7)])
    for _ in range(4):
        mrf = random_mrf(rng, 8, forest, max_states=4, scale=2.0)
        pot = rng.normal(0, 2, mrf.dim)
        bf = BruteForceMAP()(mrf, pot)
        r = MaxProductMAP(rho="loopy", damping=0.0)(mrf, pot)
        assert not r.exact and np.isclose(r.value, bf.value)
        # the max-beliefs alone decode the optimum (no ICM), each block's maximum is 0
        beliefs = np.empty(mrf.dim)
        K.trw_max_product(pot, np.ones(mrf.n_edges), mrf.layout,
                          np.zeros((2 * mrf.n_edges, 4)), (0.0, 1e-12, 100), beliefs)
        blocks = [beliefs[mrf.node_offsets[i]:mrf.node_offsets[i + 1]] for i in range(8)]
        np.testing.assert_array_equal([np.argmax(b) for b in blocks], bf.assignment)
        assert all(np.max(b) == 0.0 for b in blocks)
    for edges in (grid_edges(3, 3), loopy_edges(10)):
        for rho in ("uniform", "loopy"):
            mrf = random_mrf(rng, int(edges.max()) + 1, edges, max_states=4, scale=2.0)
            pot = rng.normal(0, 2, mrf.dim)
            best = BruteForceMAP()(mrf, pot).value
            r = MaxProductMAP(rho=rho)(mrf, pot)
            assert r.value <= best + 1e-9
            for i in range(mrf.n_nodes):  # an ICM fixed point
                for s in range(mrf.n_states[i]):
                    y = r.assignment.copy()
                    y[i] = s
                    assert mrf.score(y, pot) <= r.value + 1e-9
            init = BruteForceMAP()(mrf, pot).assignment
            assert np.isclose(MaxProductMAP(rho=rho)(mrf, pot, init=init).value, best)


def potts_model(rng, n_nodes, edges, n_states):
    """Energies ``D_i(x) >= 0`` and Potts terms ``w_ab [x_a != x_b]``, ``w >= 0``, as scores
    (their negatives), with the energy of an assignment."""
    D = rng.uniform(0, 2, (n_nodes, n_states))
    w = rng.uniform(0, 2, len(edges))
    tables = [-wi * (1.0 - np.eye(n_states)) for wi in w]
    mrf = PairwiseMRF(np.full(n_nodes, n_states), edges, list(-D), tables)
    return mrf, mrf.theta


def test_alpha_expansion_within_its_bound():
    """Potts models: never above the optimum, at least its start, no expansion move improves
    the result (enumerated), and within the known bound E(result) <= 2 E(optimum) of Boykov,
    Veksler & Zabih (2001, Thm. 6.1), on 3x3 grids and loopy graphs of 8-10 nodes with 3-4
    states; exact with two states from the all-zero start (the first move spans every
    labeling)."""
    pytest.importorskip("maxflow")
    rng = np.random.default_rng(5)
    for edges, n_states in [(grid_edges(3, 3), 3), (loopy_edges(10), 3), (loopy_edges(8), 4),
                            (grid_edges(3, 3), 2)]:
        for _ in range(3):
            mrf, pot = potts_model(rng, int(edges.max()) + 1, edges, n_states)
            best = BruteForceMAP()(mrf, pot).value
            start = np.zeros(mrf.n_nodes, dtype=np.int64)
            r = AlphaExpansionMAP()(mrf, pot, init=start)
            assert not r.exact
            assert mrf.score(start, pot) - 1e-9 <= r.value <= best + 1e-9
            assert -r.value <= 2.0 * -best + 1e-9
            for label in range(n_states):
                for switch in itertools.product([False, True], repeat=mrf.n_nodes):
                    moved = np.where(switch, label, r.assignment)
                    assert mrf.score(moved, pot) <= r.value + 1e-9
            if n_states == 2:
                assert np.isclose(r.value, best)


def test_alpha_expansion_on_general_models():
    """Non-Potts tables (truncated moves): the score never falls below the start's and never
    exceeds the optimum."""
    pytest.importorskip("maxflow")
    rng = np.random.default_rng(6)
    for _ in range(4):
        mrf = random_mrf(rng, 7, loopy_edges(7), max_states=4, scale=2.0)
        pot = rng.normal(0, 2, mrf.dim)
        start = ICMMAP()(mrf, pot).assignment
        r = AlphaExpansionMAP()(mrf, pot, init=start)
        assert mrf.score(start, pot) - 1e-9 <= r.value
        assert r.value <= BruteForceMAP()(mrf, pot).value + 1e-9


# -- objective ----------------------------------------------------------------------------------

def _random_point(mrf, rng, n=5):
    w = rng.dirichlet(np.ones(n))
    return sum(wi * mrf.vertex((rng.random(mrf.n_nodes) * mrf.n_states).astype(int))
               for wi in w) * 0.9 + 0.1 * mrf.uniform_marginals()


def test_gradient_and_concavity():
    rng = np.random.default_rng(5)
    mrf = random_mrf(rng, 5, loopy_edges(5))
    rho = spanning_tree_edge_probs(5, mrf.edges)
    kvec = entropy_coefficients(mrf, rho)
    x = _random_point(mrf, rng)
    g = np.empty(mrf.dim)
    f = K.trw_value_grad(x, mrf.theta, kvec, g)
    assert np.isclose(-f, trw_objective(mrf, x, rho))
    h = 1e-7
    for j in range(0, mrf.dim, 3):
        e = np.zeros(mrf.dim)
        e[j] = h
        g2 = np.empty(mrf.dim)
        num = (K.trw_value_grad(x + e, mrf.theta, kvec, g2)
               - K.trw_value_grad(x - e, mrf.theta, kvec, g2)) / (2 * h)
        assert np.isclose(num, g[j], rtol=1e-6, atol=1e-6)
    y = _random_point(mrf, rng)
    ts = np.linspace(0, 1, 21)
    vals = [trw_objective(mrf, (1 - t) * x + t * y, rho) for t in ts]
    assert np.all(np.diff(vals, 2) <= 1e-9)


def test_single_node_exact():
    mrf = PairwiseMRF(np.array([3]), np.zeros((0, 2)), [np.array([0.5, -1.0, 2.0])], [])
    est = TRWBarrierFW(tol=1e-8, max_iter=200).fit(mrf)
    assert np.isclose(est.log_partition_upper_, logsumexp([0.5, -1.0, 2.0]), atol=1e-6)


# -- spanning-tree polytope ---------------------------------------------------------------------

def spanning_trees(n, edges):
    for sub in itertools.combinations(range(len(edges)), n - 1):
        ind = np.zeros(len(edges))
        ind[list(sub)] = 1
        if max_weight_spanning_tree(n, edges, ind).sum() == n - 1 and all(
                max_weight_spanning_tree(n, edges, ind)[list(sub)]):
            yield ind


def test_max_weight_spanning_tree_against_enumeration():
    """The heaviest spanning forest of every small graph, weights of any sign and ties, parallel
    edges and self loops included (scipy's tree on ranks keeps zero and negative weights), and
    is_forest against the same enumeration."""
    rng = np.random.default_rng(21)
    for case in range(300):
        n = int(rng.integers(1, 6))
        edges = rng.integers(0, n, size=(int(rng.integers(0, 7)), 2))
        w = (rng.integers(-2, 3, len(edges)).astype(float) if case % 2
             else rng.normal(size=len(edges)))
        tree = max_weight_spanning_tree(n, edges, w)
        # a forest is a subset with no cycle; the spanning forests have n - components edges
        best, size = -np.inf, 0
        for k in range(len(edges) + 1):
            for sub in itertools.combinations(range(len(edges)), k):
                parent = list(range(n))

                def root(v):
                    while parent[v] != v:
                        v = parent[v]
                    return v
                acyclic = True
                for e in sub:
                    a, b = root(edges[e, 0]), root(edges[e, 1])
                    acyclic &= a != b
                    parent[a] = b
                if acyclic and (k > size or (k == size and w[list(sub)].sum() > best)):
                    best, size = w[list(sub)].sum(), k
        assert tree.sum() == size and np.isclose(w @ tree, best)
        loops = edges[:, 0] == edges[:, 1]
        if n > 1 and not loops.any() and len(np.unique(np.sort(edges, 1), axis=0)) == len(edges):
            mrf = PairwiseMRF(np.full(n, 2), edges, np.zeros((n, 2)), np.zeros((len(edges), 2, 2)))
            assert mrf.is_forest() == (size == len(edges))


def test_spanning_tree_probs():
    for n in (3, 5, 7):
        edges = np.array(list(itertools.combinations(range(n), 2)))
        np.testing.assert_allclose(spanning_tree_edge_probs(n, edges), 2.0 / n)
    edges = np.array([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 5), (5, 3), (1, 4)])
    rng = np.random.default_rng(6)
    w = rng.uniform(0.2, 2, len(edges))
    rho = spanning_tree_edge_probs(6, edges, w)
    assert np.isclose(rho.sum(), 5) and np.all(rho > 0) and np.all(rho <= 1)
    trees = list(spanning_trees(6, edges))
    p = np.array([np.prod(w[t == 1]) for t in trees])
    np.testing.assert_allclose(rho, (p[:, None] * np.array(trees)).sum(0) / p.sum(), atol=1e-10)
    bridge = np.array([(0, 1), (1, 2), (2, 0), (2, 3)])
    assert np.isclose(spanning_tree_edge_probs(4, bridge)[3], 1.0)
    tree = np.array([(0, 1), (1, 2), (1, 3)])
    np.testing.assert_allclose(spanning_tree_edge_probs(4, tree), 1.0)
    # zero weights neither disconnect nor zero out an edge
    rho0 = spanning_tree_edge_probs(6, edges, np.r_[0.0, w[1:]])
    assert np.isclose(rho0.sum(), 5) and rho0[0] > 0


def test_sampled_spanning_tree_probs_lie_in_the_polytope(monkeypatch):
    """The average of random spanning trees: in the spanning-tree polytope (its sum ``n -
    components`` and ``sum_{e in S} rho_e <= |S| - 1`` over every node subset ``S``, checked by
    enumeration), every coverable edge covered, the same ``rho`` for the same graph, TRW's bound
    at it above the exact ``log Z``; ``initial_rho(mrf, "uniform")`` takes it on graphs larger
    than ``EXACT_RHO_NODES``."""
    from sklearn_ssvm.marginals import _spanning, sampled_spanning_tree_probs

    edges = np.array([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 5), (5, 3), (1, 4), (1, 0),
                      (6, 7), (7, 8), (8, 6), (5, 5)])  # a parallel edge, a triangle, a loop
    rho = sampled_spanning_tree_probs(9, edges)
    np.testing.assert_array_equal(rho, sampled_spanning_tree_probs(9, edges))
    assert np.isclose(rho.sum(), 9 - 2) and np.all(rho[:8] > 0) and np.all(rho <= 1)
    assert rho[8] > 0 and rho[12] == 0 and np.all(rho[9:12] > 0)
    for size in range(2, 10):
        for S in itertools.combinations(range(9), size):
            inside = np.isin(edges, S).all(axis=1)
            assert rho[inside].sum() <= size - 1 + 1e-12
    rng = np.random.default_rng(3)
    mrf = random_mrf(rng, 12, grid_edges(3, 4), max_states=2)
    monkeypatch.setattr(_spanning, "EXACT_RHO_NODES", 11)
    sampled = initial_rho(mrf, "uniform")
    np.testing.assert_array_equal(sampled, sampled_spanning_tree_probs(12, mrf.edges))
    assert not np.allclose(sampled, spanning_tree_edge_probs(12, mrf.edges))
    bound, _, converged = trbp_log_partition(mrf, mrf.theta, sampled)
    assert converged and bound >= enumerate_log_z(mrf)[0] - 1e-9


def test_max_weight_spanning_tree():
    edges = np.array([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 5), (5, 3), (1, 4)])
    rng = np.random.default_rng(7)
    trees = list(spanning_trees(6, edges))
    for w in [rng.normal(size=len(edges)), np.zeros(len(edges)), np.r_[np.zeros(4), np.ones(4)]]:
        t = max_weight_spanning_tree(6, edges, w)
        assert t.sum() == 5
        assert any(np.array_equal(t, s) for s in trees)
        assert np.isclose(t @ w, max(s @ w for s in trees))


# -- algorithmic invariants ---------------------------------------------------------------------

def test_delta_rule_lemma_d2_and_identity():
    rng = np.random.default_rng(8)
    for _ in range(2000):
        g = rng.exponential()
        gu = rng.normal(0, 5)
        delta = rng.uniform(0, 0.25)
        new = update_delta(g, gu, delta)
        assert new <= delta and (new == delta or new <= delta / 2)
        assert (1 - new) * g + new * gu >= g / 2 - 1e-12


def test_rescale_weights():
    rng = np.random.default_rng(9)
    mrf = random_complete_graph(4, 1.0, random_state=0)
    st = TRWFrankWolfe(mrf, "brute_force", delta_init=0.2)
    for _ in range(6):
        st.add_atom(rng.integers(0, 2, 4))
    st.alpha[:st.n_atoms] = rng.dirichlet(np.ones(st.n_atoms))
    x = st.barycentre()
    new = rescale_weights(st.alpha[:st.n_atoms], 0.2, 0.05)
    assert np.all(new >= 0) and np.isclose(new.sum(), 1)
    st.set_delta(0.05)
    np.testing.assert_allclose(st.barycentre(), x, atol=1e-14)


def test_bound_every_iteration_and_invariants():
    """Spec §5.1.2, §5.2.1, §5.2.4, §5.2.5 on K_4 with several couplings."""
    for theta in (0.5, 2.0, 4.0):
        mrf = random_complete_graph(5, theta, random_state=int(theta * 10))
        lz, _ = brute_force_marginals(mrf)
        rho = spanning_tree_edge_probs(5, mrf.edges)
        kvec = entropy_coefficients(mrf, rho)
        st = TRWFrankWolfe(mrf, "brute_force", delta_init=0.05)
        st.run(rho, tol=1e-3, max_iter=300)
        bounds = [h["bound"] for h in st.history]
        assert min(bounds) >= lz - 1e-9
        trw = [h["trw"] for h in st.history]
        assert np.all(np.diff(trw) >= -1e-7)  # f non-increasing
        deltas = [h["delta"] for h in st.history]
        d = np.array(deltas)
        assert np.all((d[1:] == d[:-1]) | (d[1:] <= d[:-1] / 2 + 1e-300))
        check_consistent(mrf, st.x)
        np.testing.assert_allclose(st.barycentre(), st.x, atol=1e-10)
        assert np.all(st.x >= st.delta * st.u0 - 1e-12)  # mu_c >= delta / n_c
        g = np.empty(mrf.dim)
        K.trw_value_grad(st.x, mrf.theta, kvec, g)
        s = BruteForceMAP()(mrf, -g).assignment
        gap = g @ st.x - g @ mrf.vertex(s)
        gu = g @ st.x - g @ st.u0
        dl = st.delta
        gd = -g @ ((1 - dl) * mrf.vertex(s) + dl * st.u0 - st.x)
        assert np.isclose(gd, (1 - dl) * gap + dl * gu, atol=1e-10)  # identity (8)


@pytest.mark.parametrize("mode,away", [("fixed", False), ("none", False), ("adaptive", True)])
def test_variants_certify(mode, away):
    mrf = random_complete_graph(6, 2.0, random_state=11)
    lz, mu = brute_force_marginals(mrf)
    rho = spanning_tree_edge_probs(6, mrf.edges)
    st, info = frank_wolfe_trw(mrf, rho, "brute_force", delta_init=1e-3, delta_mode=mode,
                               away_steps=away, correction=mode != "none", tol=0.05,
                               max_iter=2000)
    assert info["bound"] >= lz - 1e-9
    assert info["bound"] - lz < 3.0
    check_consistent(mrf, st.x, atol=1e-8)


def test_exact_on_trees():
    rng = np.random.default_rng(12)
    edges = np.array([(0, 1), (1, 2), (2, 3), (1, 4), (4, 5)])
    mrf = PairwiseMRF.ising(6, edges, rng.uniform(-1, 1, 6), rng.uniform(-2, 2, 5))
    lz, mu = brute_force_marginals(mrf)
    assert np.allclose(initial_rho(mrf), 1.0)
    assert np.allclose(entropy_coefficients(mrf, np.ones(5))[:12:2], 1 - np.bincount(
        edges.ravel()))
    est = TRWBarrierFW(tol=1e-4, n_rho_iter=1, delta_init=0.05).fit(mrf)
    assert est.log_partition_upper_ >= lz - 1e-9
    assert est.log_partition_upper_ - lz < 1e-3
    assert marginal_error(mrf, est.marginals_, mu) < 1e-2


def test_marginal_polytope_tighter_than_local():
    mrf = random_complete_graph(7, 3.0, random_state=13)
    lz, mu = brute_force_marginals(mrf)
    rho = initial_rho(mrf)
    _, info = frank_wolfe_trw(mrf, rho, "brute_force", tol=0.01)
    lp = TRWLocalPolytope(tol=1e-6).fit(mrf)
    assert lz - 1e-9 <= info["bound"]
    assert info["trw"] <= lp.trw_objective_ + 1e-6
    check_consistent(mrf, lp.marginals_, atol=1e-3)  # TRBP converges slowly here


def test_local_polytope_exact_on_tree():
    rng = np.random.default_rng(14)
    edges = np.array([(0, 1), (1, 2), (1, 3), (3, 4)])
    mrf = random_mrf(rng, 5, edges)
    lz, mu = brute_force_marginals(mrf)
    lp = TRWLocalPolytope().fit(mrf)
    assert np.isclose(lp.trw_objective_, lz) and lp.converged_
    np.testing.assert_allclose(lp.marginals_, mu, atol=1e-7)


def test_rho_loop():
    mrf = random_complete_graph(7, 2.5, random_state=15)
    lz, mu = brute_force_marginals(mrf)
    seen = []

    def cb(i, state, rho, info):
        seen.append(rho.copy())
        mi = edge_mutual_information(mrf, state.x)
        vert = max_weight_spanning_tree(7, mrf.edges, mi)
        assert mi @ (vert - rho) >= -1e-12

    res = trw_barrier_fw(mrf, "brute_force", n_rho_iter=4, tol=0.1, callback=cb)
    assert len(seen) == 5
    for rho in seen:
        assert np.all(rho > 0) and np.isclose(rho.sum(), 6)
    assert all(b >= lz - 1e-9 for b in res["bounds"])
    assert res["log_partition_upper"] <= res["bounds"][0]


def test_estimator_defaults_certified_and_attributes():
    mrf = random_rbm(5, 5, coupling=1.5, random_state=16)
    lz, mu = brute_force_marginals(mrf)
    est = TRWBarrierFW().fit(mrf)
    assert est.log_partition_upper_ >= lz - 1e-9
    assert est.node_marginals_.shape == (10, 2) and est.edge_marginals_.shape == (25, 2, 2)
    check_consistent(mrf, est.marginals_, atol=1e-9)
    assert est.n_map_calls_ == len(est.history_) > 0
    assert set(est.history_[0]) >= {"map_calls", "gap", "delta", "trw", "bound", "time"}
    assert marginal_error(mrf, est.marginals_, mu) < 0.2  # TRW optimum itself: 0.125


def test_estimator_twenty_nodes_default():
    """Defaults certify a bound on 20 binary nodes (2**20 assignments: exact MAP by HiGHS)."""
    rng = np.random.default_rng(17)
    edges = np.array([(i, (i + 1) % 20) for i in range(20)] + [(i, i + 10) for i in range(0, 10,
                                                                                          3)])
    mrf = PairwiseMRF.ising(20, edges, rng.uniform(-1, 1, 20), rng.uniform(-1, 1, len(edges)))
    est = TRWBarrierFW(n_rho_iter=1).fit(mrf)
    assert est.log_partition_upper_ is not None
    lz, _ = brute_force_marginals(mrf)
    assert est.log_partition_upper_ >= lz - 1e-9


def test_estimator_approximate_oracle_and_validation():
    mrf = random_complete_graph(6, 1.0, random_state=18)
    est = TRWBarrierFW(map_oracle=ICMMAP(), n_rho_iter=1, local_search=True).fit(mrf)
    assert est.log_partition_upper_ is None
    check_consistent(mrf, est.marginals_, atol=1e-9)
    for params in [dict(map_oracle="nope"), dict(delta_init=0.5), dict(n_rho_iter=-1),
                   dict(delta_mode="x"), dict(tol=0)]:
        with pytest.raises(ValueError):
            TRWBarrierFW(**params).fit(mrf)
    with pytest.raises(ValueError, match="PairwiseMRF"):
        TRWBarrierFW().fit(np.zeros(3))
