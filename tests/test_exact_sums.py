"""The sums over the examples of the exact-sum solvers (``solvers.sums``, ``_kernels/reduce.py``):
one fixed order of additions, so BMRM and AGM give the same bits for any number of threads,
partitions and workers; the sums equal an independent computation to rounding; a lost worker's
partition is sent again and the fit goes on, the same to the bit."""
import numpy as np
import pytest
import scipy.sparse as sp

from _cluster import fit_losing_a_worker

from sklearn_ssvm import BMRMStructuredSVM, ChainCRF, GraphCRF, MultiLabel, SmoothSSVMClassifier
from sklearn_ssvm._kernels.reduce import combine_rows, dot_rows, tree_rows
from sklearn_ssvm._kernels.smoothed import ENTROPY, NONE
from sklearn_ssvm._kernels.threads import use_threads
from sklearn_ssvm.datasets import make_chain_data
from sklearn_ssvm.solvers import sums
from sklearn_ssvm.solvers.agm import agm_structured
from sklearn_ssvm.solvers.bmrm import bmrm
from sklearn_ssvm.solvers.smooth import Smoothing, full_gradient

ALPHA = 0.05


def tree_sum(values, lo, size):
    """The dyadic tree's sum by its definition: ``V(node) = V(left) + V(right)``."""
    if size == 1:
        return values.get(lo)
    left, right = tree_sum(values, lo, size // 2), tree_sum(values, lo + size // 2, size // 2)
    return right if left is None else left if right is None else left + right


def test_tree_rows_adds_along_the_dyadic_tree():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        positions = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
        # magnitudes far apart, so that another order of additions gives other bits
        scales = 10.0 ** rng.integers(-8, 8, (len(positions), 1))
        rows = rng.normal(size=(len(positions), 3)) * scales
        out = np.empty(3)
        tree_rows(positions, rows, out)
        size = 1 << max(n - 1, 0).bit_length()
        assert np.array_equal(out, tree_sum(dict(zip(positions, rows)), 0, size))


def test_partitions_cover_the_chunks_evenly():
    for total in (1, 2, 7, 64, 140, 1000, 14000):
        for n_partitions in (1, 2, 3, 4, 7, 8, 16, 256):
            ranges = sums.partition_chunks(total, n_partitions)
            assert ranges[0][0] == 0 and ranges[-1][1] == total
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            assert len(ranges) == min(n_partitions, total)
            shares = [hi - lo for lo, hi in ranges]
            if total >= 32 * n_partitions:  # balanced within 1/16 of an even share
                assert max(shares) <= total / n_partitions * (1 + 1 / 16) + 1


def test_nodes_join_along_the_tree_in_any_grouping():
    rng = np.random.default_rng(5)
    for _ in range(100):
        total = int(rng.integers(1, 40))
        rows = rng.normal(size=(total, 2)) * 10.0 ** rng.integers(-8, 8, (total, 1))
        expected = np.empty(2)
        tree_rows(np.arange(total), rows, expected)
        lists = [[{"first": c, "size": 1, "small": rows[c]}] for c in range(total)]
        while len(lists) > 1:  # neighbours joined in a random order
            k = int(rng.integers(len(lists) - 1))
            lists[k:k + 2] = [sums._merged(lists[k], lists[k + 1], total)]
        nodes = lists[0]
        assert len(nodes) == 1 and nodes[0]["first"] == 0
        assert np.array_equal(nodes[0]["small"], expected)


def test_bundle_products_do_not_depend_on_the_split():
    rng = np.random.default_rng(1)
    A, x, coefs = rng.normal(size=(7, 5003)), rng.normal(size=5003), rng.normal(size=7)
    whole, parts = np.empty(7), np.empty(7)
    dot_rows(A, x, whole, 0, 7)
    dot_rows(A, x, parts, 0, 3)
    dot_rows(A, x, parts, 3, 7)
    assert np.array_equal(whole, parts)
    np.testing.assert_allclose(whole, A @ x, rtol=1e-12, atol=1e-10)
    v, w = np.zeros(5003), np.zeros(5003)
    combine_rows(A, coefs, v, 0, 5003)
    combine_rows(A, coefs, w, 0, 2500)
    combine_rows(A, coefs, w, 2500, 5003)
    assert np.array_equal(v, w)
    u = np.zeros(5003)  # rows added block after block: the same order for each entry
    combine_rows(A[:4], coefs[:4], u, 0, 5003)
    combine_rows(A[4:], coefs[4:], u, 0, 5003)
    assert np.array_equal(u, v)
    np.testing.assert_allclose(v, coefs @ A, rtol=1e-12, atol=1e-12)


def problems():
    X, Y = make_chain_data(n_samples=1500, n_features=5, n_labels=4, random_state=0)  # 6 chunks
    chain = ChainCRF().prepare(X, Y)
    rng = np.random.default_rng(2)
    Xm = rng.normal(size=(1200, 6))
    multilabel = MultiLabel().prepare(Xm, (Xm[:, :3] + rng.normal(size=(1200, 3)) > 0).astype(int))
    weighted = chain.with_sample_weight(rng.uniform(0.5, 2.0, chain.n_samples))
    # sparse tokens of many features: each chunk has its own subset of them, and the threads'
    # row-by-row sums run over several blocks of features (sums.COLUMN_BLOCK)
    Xs = [sp.random(int(rng.integers(1, 5)), 700, density=0.004, format="csr", random_state=i)
          for i in range(2600)]
    Ys = [rng.integers(0, 3, x.shape[0]) for x in Xs]
    sparse = ChainCRF().prepare(Xs, Ys)
    return {"chain": chain, "multilabel": multilabel, "weighted chain": weighted,
            "sparse chain": sparse}


def leaves(part, small, emission):
    """A part's chunks as the leaves of the tree, each with its touched emission rows."""
    rows, touched = emission
    out = []
    for c in range(part.n_chunks):
        span = slice(part.row_off[c], part.row_off[c + 1])
        out.append({"first": part.first_chunk + c, "size": 1, "small": small[c],
                    "W": (part.features[c][touched[span]], rows[span][touched[span]])})
    return out


def same_nodes(a, b):
    """Two lists of nodes, the same to the bit."""
    assert [(x["first"], x["size"]) for x in a] == [(x["first"], x["size"]) for x in b]
    for x, y in zip(a, b):
        assert np.array_equal(x["small"], y["small"])
        assert np.array_equal(x["W"][0], y["W"][0]) and np.array_equal(x["W"][1], y["W"][1])


def parts_by_hand(problem, n_partitions, coef, smoothing, reduce=False):
    """What the workers of :class:`~sklearn_ssvm.solvers.sums.ClusterSums` compute, in this
    process: each partition packed apart, its chunks summed into the nodes of the tree (row by
    row; the same bits as joining its leaves, checked), then combined on the driver
    (``reduce``: first joined pairwise from the right, as workers might)."""
    total = sums.n_chunks(problem.n_samples)
    partitions = []
    for lo, hi in sums.partition_chunks(total, n_partitions):
        idx = np.arange(lo * sums.CHUNK, min(hi * sums.CHUNK, problem.n_samples))
        sub = problem.subset(idx)
        sub.sample_weight = problem.sample_weight[idx]
        part = sums._Part(sub, lo, problem.n_samples)
        small, emission = part.smoothed(coef, smoothing, True)
        nodes = part.nodes(small, emission, total)
        same_nodes(nodes, sums._merged(leaves(part, small, emission), [], total))
        partitions.append(nodes)
    if reduce:
        while len(partitions) > 1:
            partitions[-2:] = [sums._merged(partitions[-2], partitions[-1], total)]
    return sums._assemble([node for nodes in partitions for node in nodes], problem.n_samples,
                          (problem.n_features, problem.n_codes, problem.n_pair))


@pytest.mark.parametrize("name", ["chain", "multilabel", "weighted chain", "sparse chain"])
@pytest.mark.parametrize("smoothing", [Smoothing(ENTROPY, 1, 0.5), Smoothing(NONE, 1, 0.0)],
                         ids=["entropy", "max"])
def test_sums_equal_the_direct_sums_and_do_not_depend_on_the_split(name, smoothing):
    problem = problems()[name]
    coef = np.random.default_rng(3).normal(size=problem.n_params) * 0.5
    direct = full_gradient(problem, coef, smoothing)  # every example's terms, one by one
    results = []
    for threads in (1, 2, 3, 4):
        with use_threads(threads):
            results.append(sums.ThreadSums(problem).smoothed(coef, smoothing))
    value, grad, dual_loss = results[0]
    np.testing.assert_allclose(value, direct.value, rtol=1e-12)
    np.testing.assert_allclose(grad, direct.grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dual_loss, direct.dual_loss, rtol=1e-12)
    for n_partitions in (2, 3, 4, 6):
        for reduce in (False, True):
            results.append(parts_by_hand(problem, n_partitions, coef, smoothing, reduce))
    for other in results[1:]:
        assert other[0] == value and other[2] == dual_loss and np.array_equal(other[1], grad)
    assert sums.ThreadSums(problem).smoothed(coef, smoothing, gradient=False) == value
    np.testing.assert_allclose(sums.ThreadSums(problem).hinge(coef),
                               problem.weighted_mean(problem.hinge_losses(coef)), rtol=1e-12)


def same_fit(a, b):
    """Two results of the same iterates: every bit of the coefficients and certificates."""
    assert np.array_equal(a.coef, b.coef)
    assert (a.objective, a.dual_objective, a.duality_gap, a.n_iter) == \
        (b.objective, b.dual_objective, b.duality_gap, b.n_iter)
    assert [r["gap"] for r in a.history] == [r["gap"] for r in b.history]


def chain_problem():
    X, Y = make_chain_data(n_samples=700, n_features=5, n_labels=4, random_state=1)  # 3 chunks
    return ChainCRF(normalize_loss=False).prepare(X, Y)


def test_bmrm_and_agm_are_the_same_to_the_bit_on_any_number_of_threads():
    problem = chain_problem()
    fits = [bmrm(problem, ALPHA, tol=1e-6, max_iter=40, n_jobs=n_jobs) for n_jobs in (1, 2, 4)]
    for fit in fits[1:]:
        same_fit(fits[0], fit)
    fits = [agm_structured(problem, ALPHA, 0.5, max_iter=15, continuation=True, n_jobs=n_jobs)
            for n_jobs in (1, 2, 4)]
    for fit in fits[1:]:
        same_fit(fits[0], fit)


def test_the_estimators_graph_structures_keep_their_threads_alike():
    # the graphs' oracles run from Python: the dense path, the same on any number of threads
    from sklearn_ssvm.structures import grid_graph
    rng = np.random.default_rng(4)
    Y = [rng.integers(3, size=(3, 3)) for _ in range(8)]
    X = [grid_graph(np.eye(3)[y] + rng.normal(size=(3, 3, 3))) for y in Y]
    Y = [y.ravel() for y in Y]
    fits = [BMRMStructuredSVM(GraphCRF(), alpha=0.1, max_iter=15, n_jobs=n_jobs).fit(X, Y)
            for n_jobs in (1, 2)]
    assert np.array_equal(fits[0].coef_, fits[1].coef_)


# -- on a dask cluster ------------------------------------------------------------------------

@pytest.fixture
def client(dask_client):
    """The 2-worker cluster of ``conftest.py`` (threads), the current client."""
    return dask_client


def test_cluster_sums_are_the_one_process_sums(client):
    for problem in problems().values():
        coef = np.random.default_rng(5).normal(size=problem.n_params) * 0.5
        local = sums.ThreadSums(problem)
        for n_partitions in (1, 2, 3):
            with sums.ClusterSums(client, problem, n_partitions) as remote:
                for smoothing in (Smoothing(ENTROPY, 1, 0.5), Smoothing(NONE, 1, 0.0)):
                    value, grad, dual_loss = remote.smoothed(coef, smoothing)
                    expected = local.smoothed(coef, smoothing)
                    assert value == expected[0] and dual_loss == expected[2]
                    assert np.array_equal(grad, expected[1])
                assert remote.hinge(coef) == local.hinge(coef)


def test_bmrm_and_agm_on_the_cluster_are_the_one_process_fits(client):
    problem = chain_problem()
    local = bmrm(problem, ALPHA, tol=1e-6, max_iter=40)
    for n_partitions in (2, 3):
        same_fit(local, bmrm(problem, ALPHA, tol=1e-6, max_iter=40, cluster=client,
                             n_partitions=n_partitions))
    local = agm_structured(problem, ALPHA, 0.5, max_iter=15, continuation=True)
    same_fit(local, agm_structured(problem, ALPHA, 0.5, max_iter=15, continuation=True,
                                   cluster=client, n_partitions=3))
    # the certified gap on the cluster is the one-process gap: the primal at its coef
    primal = ALPHA / 2 * local.coef @ local.coef + problem.hinge_losses(local.coef).mean()
    np.testing.assert_allclose(local.objective, primal, rtol=1e-12)


def test_the_estimators_fit_on_the_current_client(client):
    X, Y = make_chain_data(n_samples=150, n_features=5, n_labels=3, random_state=2)
    with client.as_current():
        for make in (lambda **k: BMRMStructuredSVM(ChainCRF(), alpha=ALPHA, max_iter=20, **k),
                     lambda **k: SmoothSSVMClassifier(ChainCRF(), solver="agm",
                                                      smoothing="entropy", top_k=None,
                                                      alpha=ALPHA, max_iter=8, **k)):
            local, remote = make().fit(X, Y), make(cluster=True).fit(X, Y)
            assert np.array_equal(local.coef_, remote.coef_)
            assert local.duality_gap_ == remote.duality_gap_
        with pytest.raises(ValueError, match="cluster=True runs the AGM solvers"):
            SmoothSSVMClassifier(ChainCRF(), cluster=True).fit(X, Y)
        with pytest.raises(ValueError, match=r"BMRMStructuredSVM\(cluster=True\) does not train "
                                             "GraphCRF"):
            from sklearn_ssvm.structures import grid_graph
            BMRMStructuredSVM(GraphCRF(), cluster=True).fit(
                [grid_graph(np.ones((2, 2, 2)))], [np.array([0, 1, 1, 0])])


def test_a_lost_worker_is_replaced_and_the_fit_is_the_same_or_a_clear_error():
    pytest.importorskip("distributed")
    problem = chain_problem()
    local = bmrm(problem, ALPHA, tol=0.0, max_iter=150)
    outcome = fit_losing_a_worker(
        lambda client: bmrm(problem, ALPHA, tol=0.0, max_iter=150, cluster=client))
    if "error" in outcome:  # never a silent wrong model: a clear error, or the same fit
        assert isinstance(outcome["error"], RuntimeError), repr(outcome["error"])
        assert "worker was lost" in str(outcome["error"])
    else:
        same_fit(local, outcome["fit"])
