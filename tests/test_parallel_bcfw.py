"""BCFW's block steps on several threads: feasible duals, exact certificates, no lost update.

With ``n_jobs > 1`` the threads step disjoint blocks at once on shared weights (the
asynchronous scheme of ``solvers.bcfw._Steps.parallel_pass``). Their interleaving follows the
scheduler, so these tests check what must hold whatever it is: every block stays on its
simplex, the weights are the dual point's own (``v = A alpha``: no addition lost), the gap is
the exact one, and the objective is the sequential fit's within both gaps. ``n_jobs=1`` runs
the sequential code, which the golden results pin bit for bit (``test_golden.py``).
"""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numba import njit

from sklearn_ssvm import BCFWStructuredSVM, CandidateSet, ChainCRF, MulticlassSVM
from sklearn_ssvm._kernels.atomic import add_count, add_into, read_count
from sklearn_ssvm._kernels.bcfw import state_from_atoms
from sklearn_ssvm._kernels.sparse import token_gram
from sklearn_ssvm._kernels.threads import use_threads
from sklearn_ssvm.datasets import make_chain_data
from sklearn_ssvm.penalties import ElasticNet
from sklearn_ssvm.solvers.bcfw import (MIN_BLOCKS_PER_THREAD, ActiveSets, bcfw, certificate,
                                       parallel_steps, primal_point, weights)
from sklearn_ssvm.structures._problem import label_space


@njit(nogil=True)
def _hammer(W, n, atomic):
    for k in range(n):
        add_into(W, (k % 2, k % 3), 1.0, atomic)
        add_into(W[0], k % 3, 0.5, atomic)


def test_atomic_additions_lose_nothing_across_threads():
    W = np.zeros((2, 3))
    _hammer(W, 6, True)  # compile before timing the race
    W[:] = 0.0
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: _hammer(W, 300_000, True), range(2)))
    assert W.sum() == 2 * 300_000 * 1.5
    assert np.array_equal(W[1], [100_000.0] * 3)


def test_plain_additions_match_the_plain_operator():
    W = np.zeros((2, 3))
    _hammer(W, 7, False)
    expected = np.zeros((2, 3))
    for k in range(7):
        expected[k % 2, k % 3] += 1.0
        expected[0, k % 3] += 0.5
    assert np.array_equal(W, expected)


@njit(nogil=True)
def _take_all(counts, returned):
    taken = 0
    while add_count(counts, 0, -1) >= 0:
        taken += 1
        if taken <= returned:  # taken and not used: given back, taken again later
            add_count(counts, 0, 1)
            taken -= 1
            returned -= 1
    return taken


def test_a_shared_count_is_taken_exactly_once_across_threads():
    counts = np.array([3], np.int64)
    assert _take_all(counts, 1) == 3 and counts[0] == -1 and add_count(counts, 0, 0) == -1
    counts[0] = 400_000
    with ThreadPoolExecutor(2) as pool:
        taken = list(pool.map(lambda returned: _take_all(counts, returned), (0, 1000)))
    assert sum(taken) == 400_000 and counts[0] == -2


@njit(nogil=True)
def _spin(counts, limit):
    spins = 0
    while read_count(counts, 1) == 0 and spins < limit:
        spins += 1
    return spins


def test_a_shared_count_read_sees_another_threads_addition():
    """A compiled loop that only reads the count still sees the other thread's addition (the
    atomic load is made at every iteration, not hoisted out of the loop)."""
    counts = np.zeros(2, np.int64)
    assert _spin(counts, 10) == 10
    limit = 10**10  # seconds of spinning: reached only if the load left the loop
    with ThreadPoolExecutor(1) as pool:
        spinner = pool.submit(_spin, counts, limit)
        time.sleep(0.05)
        add_count(counts, 1, 1)
        spins = spinner.result(timeout=300)
    assert 0 < spins < limit and read_count(counts, 1) == 1


@pytest.mark.parametrize("room", [8, 1])
def test_a_parallel_pass_makes_as_many_draws_as_a_sequential_one(room, monkeypatch):
    """Gap sampling's draws come from one count that both threads take from: pass 2 (all
    blocks visited, no early exit at ``tol=0``) makes exactly ``n`` steps, like one thread;
    also when the atom stores start with room for one atom and grow in the passes (a thread
    that needs room stops the other, and gives back the draw of the step it could not make)."""
    X, Y = make_chain_data(n_samples=2 * MIN_BLOCKS_PER_THREAD, n_features=6, n_labels=3,
                           random_state=0)
    problem = ChainCRF().prepare(X, Y)
    n = problem.n_samples
    rooms = []
    original = ActiveSets.grown

    def grown(atoms, limit=None):
        rooms.append(atoms.room)
        return original(atoms, limit)
    monkeypatch.setattr(ActiveSets, "grown", grown)
    for n_jobs in (1, 2):
        result = bcfw(problem, 0.1, max_iter=2, tol=0.0, step="pairwise", random_state=0,
                      n_jobs=n_jobs, init_active_sets=ActiveSets.at_labels(problem, room))
        # pass 1 visits every block, pass 2 draws n, the exact check after it calls n oracles
        assert [record["oracle_calls"] for record in result.history] == [n, 3 * n]
        atoms = result.active_sets
        np.testing.assert_allclose(atoms.weights.sum(axis=1), 1.0, rtol=1e-12)
        v = weights(problem, result.state, 0.1)
        np.testing.assert_allclose(result.coef, v, atol=1e-10)
    assert bool(rooms) == (room == 1)


def test_token_gram_on_threads_equals_one_thread():
    X, Y = make_chain_data(n_samples=40, n_features=6, n_labels=3, random_state=0)
    problem = ChainCRF().prepare(X, Y)
    args = (problem.indptr, problem.indices, problem.data, problem.tok_offsets,
            problem.n_features)
    gram, offsets = token_gram(*args)
    with use_threads(2):
        gram2, offsets2 = token_gram(*args)
    assert np.array_equal(offsets, offsets2) and np.array_equal(gram, gram2)
    X0 = problem.token_matrix()[problem.tok_offsets[3]:problem.tok_offsets[4]].toarray()
    np.testing.assert_allclose(gram[offsets[3]:offsets[4]], (X0 @ X0.T).ravel())


def test_resync_on_threads_equals_one_thread():
    """A parallel fit's resync: the state from the atoms the same to the bit on two threads
    (each block's rows its own), the weights from the state equal up to rounding (the threads'
    sums are added at the end)."""
    X, Y = make_chain_data(n_samples=120, n_features=7, n_labels=4, random_state=1)
    problem = ChainCRF().prepare(X, Y)
    result = bcfw(problem, ElasticNet(0.05, 0.0), max_iter=3, step="pairwise", random_state=0)
    atoms, space = result.active_sets, label_space(problem)
    states = []
    for threads in (1, 2):
        M, Q, ell = (np.full_like(a, np.nan) for a in result.state.arrays())
        with use_threads(threads):
            state_from_atoms(space.packed(), atoms.labels, atoms.weights.copy(), atoms.count, M,
                             Q, ell, space.block_n)
        states.append((M, Q, ell))
    for one, two in zip(*states):
        assert not np.isnan(one).any() and np.array_equal(one, two)
    v1 = weights(problem, result.state, 0.05)
    v2 = weights(problem, result.state, 0.05, threads=2)
    assert np.abs(v1).max() > 0.1
    np.testing.assert_allclose(v2, v1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v1, result.coef, atol=1e-10)


def _problem(kind, rng):
    n = 2 * MIN_BLOCKS_PER_THREAD
    if kind == "chain":
        X, Y = make_chain_data(n_samples=n, n_features=6, n_labels=3, random_state=0)
        return ChainCRF(normalize_loss=False).prepare(X, Y)
    if kind == "multiclass":
        X = rng.normal(size=(n, 5))
        return MulticlassSVM().prepare(X, np.argmax(X[:, :3] + rng.normal(size=(n, 3)), axis=1))
    X = [rng.normal(size=(4, 3)) for _ in range(n)]
    return CandidateSet().prepare(X, [np.where(np.arange(4) == np.argmax(x[:, 0]), 0.0, 1.0)
                                      for x in X])


@pytest.mark.parametrize("kind, settings", [
    ("chain", dict(step="pairwise")),
    ("chain", dict(step="pairwise", sampling="perm", max_active=2, l1=0.05)),
    ("multiclass", dict(step="fw")),
    ("candidates", dict(step="away", cache=True)),
])  # each case compiles its parallel pass: one per step kind, store and penalty
def test_parallel_steps_keep_the_dual_feasible_and_the_gap_exact(kind, settings):
    rng = np.random.default_rng(0)
    problem = _problem(kind, rng)
    settings = dict(settings)
    alpha = 0.1
    penalty = ElasticNet(alpha, settings.pop("l1", 0.0))
    assert parallel_steps(problem, averaging=False, bounded=False, threads=2)
    sequential = bcfw(problem, penalty, max_iter=60, tol=1e-4, random_state=0, **settings)
    parallel = bcfw(problem, penalty, max_iter=60, tol=1e-4, random_state=0, n_jobs=2,
                    **settings)
    assert parallel.gap_certified and parallel.duality_gap <= 1e-2 * sequential.objective
    space = label_space(problem)
    # every block on its simplex
    if settings["step"] != "fw" or settings.get("cache"):
        atoms = parallel.active_sets
        live = np.arange(atoms.room) < atoms.count[:, None]
        assert np.all(atoms.weights >= 0.0) and np.all(atoms.weights[~live] == 0.0)
        np.testing.assert_allclose(atoms.weights.sum(axis=1), 1.0, rtol=1e-12)
    # the weights are the dual point's own, and its certificate the exact one
    v = weights(problem, parallel.state, penalty)
    np.testing.assert_allclose(parallel.coef, primal_point(v, penalty), atol=1e-10)
    again = certificate(problem, parallel.state, v, penalty)
    np.testing.assert_allclose([again.primal, again.dual], [parallel.objective,
                                                            parallel.dual_objective],
                               rtol=1e-9, atol=1e-12)
    # both fits within their gaps of one optimum
    assert abs(parallel.objective - sequential.objective) <= (parallel.duality_gap
                                                              + sequential.duality_gap + 1e-12)
    assert space.n_samples == problem.n_samples


def test_parallel_steps_decline_what_numbers_or_clips_the_steps():
    X, Y = make_chain_data(n_samples=2 * MIN_BLOCKS_PER_THREAD, n_features=3, n_labels=2,
                           random_state=0)
    problem = ChainCRF().prepare(X, Y)
    assert parallel_steps(problem, averaging=False, bounded=False, threads=2)
    assert not parallel_steps(problem, averaging=True, bounded=False, threads=2)
    assert not parallel_steps(problem, averaging=False, bounded=True, threads=2)
    assert not parallel_steps(problem, averaging=False, bounded=False, threads=3)
    # those fits run their steps on one thread: only the exact-gap passes are threaded, and
    # the fit is the one-thread fit's
    one, two = (bcfw(problem, 0.1, averaging=True, max_iter=20, random_state=0, n_jobs=n_jobs)
                for n_jobs in (1, 2))
    assert np.array_equal(one.coef, two.coef) and one.duality_gap == two.duality_gap


def test_estimator_on_two_threads_reaches_the_sequential_fit():
    X, Y = make_chain_data(n_samples=2 * MIN_BLOCKS_PER_THREAD, n_features=6, n_labels=3,
                           random_state=1)
    one = BCFWStructuredSVM(ChainCRF(), alpha=0.05, tol=1e-4, random_state=0).fit(X, Y)
    two = BCFWStructuredSVM(ChainCRF(), alpha=0.05, tol=1e-4, random_state=0,
                            n_jobs=2).fit(X, Y)
    assert two.duality_gap_ <= 1e-4 * two.loss_scale_
    # strong convexity: ||w - w*||^2 <= 2 gap / alpha for each, so the two are that close
    assert np.linalg.norm(one.coef_ - two.coef_) <= (np.sqrt(2 * one.duality_gap_ / 0.05)
                                                      + np.sqrt(2 * two.duality_gap_ / 0.05))
