"""The compiled minimum cut (Boykov-Kolmogorov search trees) and the MAP oracles built on it:
one cut on binary submodular models against enumeration and PyMaxflow, alpha-expansion against
the Python ``AlphaExpansionMAP`` it compiles."""
import numpy as np
import pytest

from sklearn_ssvm._kernels.maxflow import alpha_expansion, binary_cut_map
from sklearn_ssvm.marginals import (AlphaExpansionMAP, BruteForceMAP, PairwiseMRF, grid_edges,
                                    project_submodular)


def random_model(rng, n_nodes, n_edges, n_states, attraction=0.0):
    """Distinct random edges (isolated nodes allowed) with Gaussian potentials; ``n_states`` an
    int or one per node; ``attraction`` added to the diagonal of every table."""
    pairs = [(a, b) for a in range(n_nodes) for b in range(n_nodes) if a != b]
    take = rng.permutation(len(pairs))[:n_edges]
    edges = np.array([pairs[k] for k in take], dtype=np.int64).reshape(-1, 2)
    edges = edges[np.unique(np.sort(edges, axis=1), axis=0, return_index=True)[1]]
    states = np.broadcast_to(n_states, (n_nodes,))
    nodes = [rng.normal(size=s) for s in states]
    tables = [rng.normal(size=(states[a], states[b])) + attraction * np.eye(states[a], states[b])
              for a, b in edges]
    return PairwiseMRF(list(states), edges, nodes, tables)


def binary_model(rng, n_nodes, n_edges):
    mrf = random_model(rng, n_nodes, n_edges, 2)
    theta = mrf.theta.copy()
    start = mrf.edge_offsets[0]
    tables = project_submodular(theta[start:].reshape(-1, 2, 2))  # some on the boundary
    tables[::2] += 0.5 * np.abs(rng.normal(size=(len(tables[::2]), 1, 1))) * np.eye(2)
    theta[start:] = tables.ravel()
    return mrf, theta


def test_binary_cut_against_enumeration():
    """One cut on submodular models (cycles, isolated nodes, tables on the cone's boundary)
    reaches the enumerated maximum."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 10))
        mrf, theta = binary_model(rng, n, int(rng.integers(0, 3 * n)))
        y = np.full(n, -1, dtype=np.int64)
        assert binary_cut_map(theta, mrf.layout, y)
        assert mrf.score(y, theta) == pytest.approx(BruteForceMAP()(mrf, theta).value, abs=1e-9)


def test_binary_cut_refuses_tables_that_are_not_submodular():
    rng = np.random.default_rng(1)
    mrf, theta = binary_model(rng, 6, 8)
    theta[mrf.edge_offsets[3]:mrf.edge_offsets[4]] = [0.0, 1.0, 1.0, 0.0]
    y = np.full(6, -1, dtype=np.int64)
    assert not binary_cut_map(theta, mrf.layout, y)
    assert np.all(y == -1)


@pytest.mark.parametrize("coupling", [0.0, 0.3, 1.0, 3.0, 30.0])
def test_binary_cut_is_pymaxflow_on_grids(coupling):
    """On 20x20 grids (too large to enumerate) the compiled cut scores as PyMaxflow's, from
    independent unary terms to strong couplings with long augmenting paths."""
    pytest.importorskip("maxflow")
    from sklearn_ssvm.marginals import GraphCutMAP
    rng = np.random.default_rng(2)
    edges = grid_edges(20, 20)
    for _ in range(3):
        tables = coupling * np.abs(rng.normal(size=(len(edges), 1, 1))) * np.eye(2) \
            + rng.normal(size=(len(edges), 1, 1))
        mrf = PairwiseMRF(2, edges, rng.normal(size=(400, 2)), tables)
        y = np.empty(400, dtype=np.int64)
        assert binary_cut_map(mrf.theta, mrf.layout, y)
        assert mrf.score(y, mrf.theta) == pytest.approx(
            GraphCutMAP()(mrf, mrf.theta).value, rel=1e-12, abs=1e-9)


def test_alpha_expansion_is_the_python_oracle():
    """The compiled moves are ``AlphaExpansionMAP``'s: the same labeling on random models
    (nodes with different numbers of states, frustrated and attractive tables), never above
    the enumerated maximum."""
    rng = np.random.default_rng(3)
    for k in range(300):
        n = int(rng.integers(1, 9))
        S = int(rng.integers(2, 5))
        states = rng.integers(2, S + 1, size=n) if k % 2 else S
        mrf = random_model(rng, n, int(rng.integers(0, 2 * n + 2)), states,
                           attraction=float(rng.uniform(0.0, 2.0)))
        y = np.full(n, -1, dtype=np.int64)
        value = alpha_expansion(mrf.theta, mrf.layout, 20, y)
        python = AlphaExpansionMAP()(mrf, mrf.theta)
        np.testing.assert_array_equal(y, python.assignment)
        assert value == pytest.approx(mrf.score(y, mrf.theta), abs=1e-12)
        assert value <= BruteForceMAP()(mrf, mrf.theta).value + 1e-9


def test_alpha_expansion_within_its_bound_on_potts_grids():
    """Potts models with non-negative energies: ``E(result) <= 2 E(optimum)`` (Boykov, Veksler
    & Zabih 2001), the optimum enumerated on 3x3 grids with 3 states."""
    rng = np.random.default_rng(4)
    edges = grid_edges(3, 3)
    for _ in range(50):
        energy = rng.uniform(0.0, 2.0, size=(9, 3))
        weights = rng.uniform(0.0, 1.5, size=len(edges))
        tables = -weights[:, None, None] * (1.0 - np.eye(3))
        mrf = PairwiseMRF(3, edges, -energy, tables)
        y = np.empty(9, dtype=np.int64)
        found = -alpha_expansion(mrf.theta, mrf.layout, 20, y)
        optimum = -BruteForceMAP()(mrf, mrf.theta).value
        assert optimum - 1e-12 <= found <= 2.0 * optimum + 1e-12


def test_graphcut_map_without_pymaxflow_runs_the_compiled_cut(monkeypatch):
    """The plain install: ``graphcut_map`` (and the oracles on it: ``GraphCutMAP``,
    ``AlphaExpansionMAP``) cuts with the compiled kernel. Against enumeration, with
    constraints and with parallel and reversed edges (merged, their tables transposed)."""
    import itertools
    import sys

    from sklearn_ssvm.marginals import graphcut_map

    monkeypatch.setitem(sys.modules, "maxflow", None)  # `import maxflow` fails
    rng = np.random.default_rng(7)
    for _ in range(60):
        p = int(rng.integers(1, 8))
        edges = rng.integers(0, p, size=(int(rng.integers(0, 2 * p + 1)), 2))
        edges = edges[edges[:, 0] != edges[:, 1]]  # parallel and reversed edges stay
        tables = project_submodular(rng.normal(size=(len(edges), 2, 2)))
        unary = rng.normal(size=(p, 2))
        fixed = np.where(rng.random(p) < 0.3, rng.integers(0, 2, size=p), -1)
        for constraints in (None, fixed):
            ys = np.array(list(itertools.product([0, 1], repeat=p)))
            if constraints is not None:
                ys = ys[np.all((fixed < 0) | (ys == fixed), axis=1)]
            scores = (unary[np.arange(p), ys].sum(axis=1)
                      + tables[np.arange(len(edges)), ys[:, edges[:, 0]],
                               ys[:, edges[:, 1]]].sum(axis=1))
            y, value = graphcut_map(unary, edges, tables, constraints)
            assert value == pytest.approx(scores.max(), abs=1e-9)
            assert constraints is None or np.all((fixed < 0) | (y == fixed))


def test_grid_crfs_decode_by_expansion_without_pymaxflow(monkeypatch):
    """On the plain install BCFW's compiled passes ran alpha-expansion, but its prediction and
    BMRM's oracle (Python ``AlphaExpansionMAP``) needed PyMaxflow; they cut with the compiled
    kernel now, and predict the labelings that PyMaxflow's cuts give."""
    import sys
    import warnings

    from sklearn_ssvm import BCFWStructuredSVM, BMRMStructuredSVM, GraphCRF, grid_graph

    rng = np.random.default_rng(8)
    X, Y = [], []
    for _ in range(6):
        y = np.zeros((6, 6), int)
        y[1:4, 2:5] = 1
        X.append(grid_graph(np.dstack([y + 0.6 * rng.normal(size=y.shape), np.ones(y.shape)])))
        Y.append(y.ravel())
    fits = []
    for make in (BCFWStructuredSVM, BMRMStructuredSVM):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(make(GraphCRF(inference="expansion"), max_iter=5).fit(X, Y))
    with_pymaxflow = [est.predict(X) for est in fits] if _has_pymaxflow() else None
    monkeypatch.setitem(sys.modules, "maxflow", None)
    for k, est in enumerate(fits):
        predicted = est.predict(X)
        assert [len(p) for p in predicted] == [36] * 6
        if with_pymaxflow is not None:
            for a, b in zip(predicted, with_pymaxflow[k]):
                np.testing.assert_array_equal(a, b)


def test_auto_cuts_binary_grids_without_pymaxflow(monkeypatch):
    """On the plain install ``"auto"`` cuts binary grids as with PyMaxflow (it ran TRW-S with
    three iterations a step there and trained a poor model without a word): the same oracle
    calls, the same fit and predictions."""
    import sys
    import warnings

    from sklearn_ssvm import BCFWStructuredSVM, GraphCRF, grid_graph

    rng = np.random.default_rng(9)
    X, Y = [], []
    for _ in range(8):
        y = np.zeros((7, 7), int)
        y[rng.integers(0, 3):rng.integers(4, 7), rng.integers(0, 3):rng.integers(4, 7)] = 1
        X.append(grid_graph(np.dstack([y + 0.8 * rng.normal(size=y.shape), np.ones(y.shape)])))
        Y.append(y.ravel())

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = BCFWStructuredSVM(GraphCRF(), max_iter=20, random_state=0).fit(X, Y)
        return est, est.predict(X)

    reference = fit() if _has_pymaxflow() else None
    monkeypatch.setitem(sys.modules, "maxflow", None)
    est, predicted = fit()
    assert "GraphCutMAP" in est.oracle_calls_ and "TRWSMAP (step)" not in est.oracle_calls_
    accuracy = np.mean(np.concatenate(predicted) == np.concatenate(Y))
    assert accuracy > np.mean(np.concatenate([x[0][:, 0] > 0.5 for x in X])
                              == np.concatenate(Y))  # better than thresholding
    if reference is not None:
        np.testing.assert_allclose(est.coef_, reference[0].coef_, rtol=1e-9, atol=1e-12)
        for a, b in zip(predicted, reference[1]):
            np.testing.assert_array_equal(a, b)


def _has_pymaxflow():
    try:
        import maxflow  # noqa: F401
    except ImportError:
        return False
    return True
