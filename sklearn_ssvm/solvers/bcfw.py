"""Block-coordinate Frank-Wolfe for the structured SVM dual (spec 002 §2, Alg. 1).

A pure function over a packed :class:`~sklearn_ssvm.structures.Problem`: no estimator, no
scikit-learn. The dual state lives in label space (see ``_kernels/bcfw.py``).

The penalty is an :class:`~sklearn_ssvm.penalties.ElasticNet` ``(c/2) ||w||^2 + l1 ||w||_1``
(a float ``alpha`` is the L2 penalty of spec 002 eq. (1)). The dual keeps ``v = u / c``, ``u``
the unthresholded weights ``(1/n) sum_i E_{alpha_i} psi_i``: ``v = A alpha`` of eq. (3) at
``lambda = c``. The primal point is ``w = soft(v, l1 / c) = grad r*(u)``, ``v`` itself for the
L2 penalty, and the dual is ``sum_i ell_i - r*(u)``.
"""
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .._kernels.batch import add_block_weights, best_atom_values
from .._kernels.bcfw import (AWAY, DRAWS_LEFT, FW, N_PASS_COUNTS, PAIRWISE, WAITING, PassAtoms,
                             PassAverages, PassDual, PassSchedule, PassWeights, bcfw_pass,
                             state_from_atoms)
from .._kernels.labelings import CHAIN, GRAPH
from .._kernels.threads import n_threads, run_sums
from ..penalties import as_penalty, soft_threshold
from ..structures._problem import example_rows, label_space
from . import capabilities
from ._common import Clock, ProgressBar, generator, kernel_threads, stop_requested
from .base import Solver
from .result import SolverResult, history_record

#: early exact check when the stale block-gap estimates sum below this fraction of tol
#: (spec 002 §3.2, the reference code's heuristic exit)
HEURISTIC_EXIT = 0.8


@dataclass
class DualState:
    """Label-space dual point: ``M`` (tokens x codes), ``Q`` (samples x pair stats), ``ell``."""

    M: np.ndarray
    Q: np.ndarray
    ell_blocks: np.ndarray

    @classmethod
    def at_labels(cls, problem):
        """The vertex ``alpha_i = e_{y_i}``, where ``w = 0`` and ``ell = 0``."""
        M, Q = label_space(problem).truth_stats()
        return cls(M, Q, np.zeros(problem.n_samples))

    @classmethod
    def zeros_like(cls, other, rows=True):
        """All-zero state of the same shape (``rows=False``: zero rows, i.e. disabled)."""
        if not rows:
            return cls(np.zeros((0, other.M.shape[1])), np.zeros((0, other.Q.shape[1])),
                       np.zeros(0))
        return cls(np.zeros_like(other.M), np.zeros_like(other.Q),
                   np.zeros_like(other.ell_blocks))

    def copy(self):
        return DualState(self.M.copy(), self.Q.copy(), self.ell_blocks.copy())

    def arrays(self):
        return self.M, self.Q, self.ell_blocks

    def minus(self, other, scale):
        """``self - scale * other``, entry by entry."""
        return DualState(self.M - scale * other.M, self.Q - scale * other.Q,
                         self.ell_blocks - scale * other.ell_blocks)


@dataclass
class ActiveSets:
    """The atoms of every block, stored as labelings (spec 002 §4.1, §10.3 'labels').

    Atom ``k`` of block ``i`` is the labeling ``labels[node_offsets[i]:node_offsets[i+1], k]``
    with weight ``weights[i, k] = alpha_i(y)``; block ``i`` has ``count[i]`` atoms. A block's
    labelings are contiguous in memory (rows: label variables, columns: atoms).
    """

    labels: np.ndarray
    weights: np.ndarray
    count: np.ndarray

    @staticmethod
    def initial_room(cache, cache_size, max_active):
        """The room per block a run starts with: the cache's size, else 8 (at most
        ``max_active``)."""
        return cache_size if cache else min(8, max_active or 8)

    @classmethod
    def at_labels(cls, problem, capacity=8):
        """One atom per block, the true labeling, with weight 1 (Alg. 3 lines 2-3)."""
        labels = np.zeros((problem.y.shape[0], capacity), dtype=np.int32)
        labels[:, 0] = problem.y
        weights = np.zeros((problem.n_samples, capacity))
        weights[:, 0] = 1.0
        return cls(labels, weights, np.ones(problem.n_samples, dtype=np.int32))

    @classmethod
    def none(cls, problem):
        """Empty store, for plain Frank-Wolfe steps."""
        return cls(np.zeros((problem.y.shape[0], 0), dtype=np.int32),
                   np.zeros((problem.n_samples, 0)), np.zeros(problem.n_samples, np.int32))

    @property
    def room(self):
        """Atoms a block can hold."""
        return self.weights.shape[1]

    def grown(self, limit=None):
        """The same atoms with twice the room per block (at most ``limit``)."""
        extra = max(self.room, 1)
        if limit is not None:
            extra = min(extra, limit - self.room)
        return ActiveSets(np.hstack([self.labels, np.zeros((self.labels.shape[0], extra),
                                                           dtype=np.int32)]),
                          np.hstack([self.weights, np.zeros((self.weights.shape[0], extra))]),
                          self.count)

    def copy(self):
        return ActiveSets(self.labels.copy(), self.weights.copy(), self.count.copy())


def keep_primal_rescale(state, rho, vertex):
    """Proposition 1: ``alpha_i(y) <- rho alpha_i(y)`` for ``y != y_i``, the rest on ``y_i``.

    In label space ``M_i <- rho M_i + (1 - rho) S(y_i)``, ``Q_i`` likewise and
    ``ell_i <- rho ell_i`` (``L_i(y_i) = 0``). At ``alpha_new = rho * alpha_old`` the weights
    ``w`` and every ``w_i`` are unchanged, and each block gap moves by ``(1 - rho) delta_i``
    (eq. (12)): ``g_i(new) = g_i(old) + (1 - rho) delta_i``. ``rho = alpha_new / alpha_old`` in
    ``(0, 1]``; ``vertex`` is ``DualState.at_labels(problem)`` (rows ``S(y_i)``, ``q(y_i)``).
    Returns the new DualState."""
    if not 0.0 < rho <= 1.0:
        raise ValueError(f"rho must be in (0, 1], got {rho!r}.")
    return DualState(rho * state.M + (1.0 - rho) * vertex.M,
                     rho * state.Q + (1.0 - rho) * vertex.Q,
                     rho * state.ell_blocks)


def rescale_active_sets(problem, atoms, rho):
    """Prop. 1 on explicit active sets (pairwise/away steps, oracle cache): the same move as
    ``keep_primal_rescale``, atom by atom. ``y_i`` becomes an atom if it is not one, in a
    free slot, else in place of an inactive (cached) labeling, else in one more column."""
    labels, wts, count = atoms.labels.copy(), atoms.weights * rho, atoms.count.copy()
    n, room, off = problem.n_samples, labels.shape[1], problem.node_offsets
    # found[i]: the first atom of block i that is y_i
    same = np.minimum.reduceat((labels == problem.y[:, None]).astype(np.int8), off[:-1],
                               axis=0) > 0
    same &= np.arange(room) < count[:, None]
    has = same.any(axis=1)
    found = same.argmax(axis=1)
    wts[np.flatnonzero(has), found[has]] += 1.0 - rho
    need = np.flatnonzero(~has)
    slot = count[need].astype(np.int64)
    full = slot == room  # full store: reuse an inactive (cached) slot, else grow one column
    inactive = (wts[need[full]] == 0.0) & (np.arange(room) < count[need[full], None])
    slot[full] = np.where(inactive.any(axis=1), inactive.argmax(axis=1), room)
    grown = np.flatnonzero(slot == room)
    if grown.size:  # the blocks after the first that grows the store take the new column
        slot[full & (np.arange(need.size) > grown[0])] = room
        labels = np.hstack([labels, np.zeros((labels.shape[0], 1), labels.dtype)])
        wts = np.hstack([wts, np.zeros((n, 1))])
    nodes = example_rows(off, need)
    labels[nodes, np.repeat(slot, off[need + 1] - off[need])] = problem.y[nodes]
    wts[need, slot] = 1.0 - rho
    count[need] = np.maximum(count[need], slot + 1)
    return ActiveSets(labels, wts, count)


def transfer_blocks(problem, source, state, atoms=None, target=None):
    """The dual point of a fit on the examples ``source`` of ``problem``, moved to the
    examples ``target``: the examples of both keep their blocks, the others start at their
    true labeling.

    The dual is a product of one simplex per example, so the point is feasible. Fits on
    overlapping subsets at one ``alpha`` (cross-validation folds) end near one optimum, so
    such a point starts a fold's fit, or the refit on all the examples, close to it. The
    blocks of one fit are kept together: the optimum's blocks are not unique (those of
    examples on the margin only sum to the optimum), and blocks mixed from several fits can
    add up to weights far from any of them.

    ``problem`` (Problem or GraphProblem): all the examples; ``source`` (int array): sorted
    indices, in ``problem``, of the fit's examples (its problem was ``problem.subset(source)``);
    ``state``, ``atoms``: the fit's DualState and ActiveSets (None for Frank-Wolfe steps without a
    cache); ``target``: sorted indices of the examples to move the point to, None (default) for
    all of ``problem``. Returns ``(state, atoms)``: ``M_i`` and ``Q_i`` (expectations) as they
    are, ``ell_i`` rescaled from the block's share ``1 / block_n`` of the fit's mean loss to its
    share in the target; the moved ActiveSets or None."""
    problem = label_space(problem)
    full = DualState.at_labels(problem)
    rows = problem.tok_offsets
    full.M[example_rows(rows, source)] = state.M
    full.Q[source] = state.Q
    full.ell_blocks[source] = state.ell_blocks * _block_n(problem, source)
    moved = None
    if atoms is not None:
        moved = ActiveSets.at_labels(problem, capacity=atoms.room)
        moved.labels[example_rows(problem.node_offsets, source)] = atoms.labels
        moved.weights[source] = atoms.weights
        moved.count[source] = atoms.count
    if target is None:
        full.ell_blocks /= problem.block_n
        return full, moved
    full = DualState(full.M[example_rows(rows, target)], full.Q[target],
                     full.ell_blocks[target] / _block_n(problem, target))
    if moved is not None:
        moved = ActiveSets(moved.labels[example_rows(problem.node_offsets, target)],
                           moved.weights[target], moved.count[target])
    return full, moved


def _block_n(problem, idx):
    """``block_n`` of ``problem.subset(idx)``: its n over its sample weights, renormalised to
    mean 1 there."""
    weights = problem.sample_weight[idx]
    return weights.sum() / weights


@dataclass
class Certificate:
    """Exact primal, dual and duality gap at a dual point (spec 002 eq. (1), (3), (5)), and the
    part ``relaxation`` of the gap that the oracle's bounds leave (0 with exact oracles; see
    :func:`certificate`)."""

    primal: float
    dual: float
    gap: float
    block_gaps: np.ndarray = field(repr=False)
    coef: np.ndarray = field(repr=False)
    relaxation: float = 0.0
    relaxation_blocks: np.ndarray = field(default=None, repr=False)

    @property
    def closable(self):
        """``gap - relaxation``: the gap of the problem restricted to the labelings found, which
        more passes can close."""
        return self.gap - self.relaxation


def weights(problem, state, penalty, threads=1):
    """``v = A alpha = u / c`` (spec 002 eq. (3) at ``lambda = c``), recomputed from the dual
    state; ``penalty`` an ``ElasticNet`` or a float ``alpha`` (``c = alpha``). For the L2
    penalty this is ``w(alpha)``, else see :func:`primal_point`. On ``threads > 1`` threads
    the sums are added in another order: equal up to rounding, not to the bit."""
    c = as_penalty(penalty).c
    problem = label_space(problem)
    v = np.zeros(problem.n_params)
    run_sums(add_block_weights, problem.n_samples, threads, problem.split_coef(v),
             problem.packed(), state.M, state.Q, 1.0 / (c * problem.n_samples),
             problem.sample_weight)
    return v


class Projection:
    """A closed convex set of feasible weights, given by its Euclidean projection (spec 002 §7
    for boxes; ``BinaryGraphCRF``'s submodular cone).

    With the L2 penalty restricted to the set, ``r*(c v) = c (<v, w> - ||w||^2 / 2)`` at ``w =
    project(v)``, and its gradient is ``c w`` (Moreau): the dual's weights ``v`` stay
    unprojected, the oracle and the gaps score with ``w``.
    """

    def __init__(self, project):
        self.project = project

    def conjugate_term(self, v):
        """``<v, w> - ||w||^2 / 2`` at ``w = project(v)``: ``r*(c v) / c``."""
        w = self.project(v)
        return float(v @ w - 0.5 * w @ w)


class Box(Projection):
    """Bounds ``lower <= w <= upper`` on the parameters (spec 002 §7; +-inf allowed): the
    projection is ``clip``, and ``conjugate_term`` is eq. (53)'s ``||w||^2 / 2 + beta_u^T u -
    beta_l^T l`` at the optimal ``beta`` of eq. (56), (57)."""

    def __init__(self, lower, upper):
        self.lower = lower
        self.upper = upper
        super().__init__(self.clip)

    @classmethod
    def check(cls, bounds, n_params):
        try:
            lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), (n_params,)).copy()
                            for b in bounds)
        except (TypeError, ValueError):
            raise ValueError(f"Parameter bounds must be a pair (lower, upper) of scalars or "
                             f"arrays of length n_params = {n_params}.") from None
        if np.any(np.isnan(lower)) or np.any(np.isnan(upper)) or np.any(lower > upper):
            raise ValueError("Parameter bounds must satisfy lower <= upper, without NaN.")
        if np.any(lower == np.inf) or np.any(upper == -np.inf):
            raise ValueError("Parameter bounds must allow a finite value for every parameter.")
        return cls(lower, upper)

    def clip(self, v):
        return np.clip(v, self.lower, self.upper)


def primal_point(v, penalty, box=None):
    """The ``w`` of the dual's ``v = u / c``: ``box.project(v)`` under constraints (L2 only),
    else ``soft(v, l1 / c)``, the penalty's ``dual_map(u)`` taken in the scaling of ``v`` so
    that the L2 penalty returns ``v`` itself (the kernels score with the same thresholds)."""
    return soft_threshold(v, penalty.l1 / penalty.c) if box is None else box.project(v)


def certificate(problem, state, v, penalty, box=None, atoms=None):
    """One batched oracle pass giving the exact block gaps ``g_i`` (eq. (7)), P and D.

    ``v = A alpha`` is the dual's weight vector (:func:`weights`), ``penalty`` an
    ``ElasticNet`` or a float ``alpha``. The primal point is ``w = primal_point(v)``,
    ``P = r(w) + mean_i w_i H_i(w)`` (``w_i`` the sample weights) and
    ``D = sum_i ell_i - r*(c v)``; with a feasible set (a ``Projection``: box constraints, spec
    002 eq. (53)) ``r*`` is that of the penalty restricted to it. The gap is the sum of the
    block gaps, equal to ``P - D`` (Fenchel-Young: ``w`` is the gradient of ``r*`` at
    ``c v``).

    Where the oracle bounds a maximum instead of reaching it (TRW-S on a loopy graph), ``H_i``
    in ``P`` is that upper bound ``B_i``, and block ``i``'s gap splits at the best value known
    for its maximum, ``h_i = max(labeling found, best of the block's ``atoms``, E_alpha H_i)``
    (each a labeling's value or a mean of them, so ``h_i <= max_y H_i(y) <= B_i``):
    ``relaxation_i = (B_i - h_i) / n >= 0`` bounds how far the primal may overstate ``H_i``,
    and the rest, ``(h_i - E_alpha H_i) / n >= 0``, is the block gap of the problem restricted
    to the labelings found, which more passes can close (``Certificate.closable``).
    """
    penalty = as_penalty(penalty)
    problem = label_space(problem)
    w = primal_point(v, penalty, box)
    _, found, true_scores, expected = problem.run_oracle(w, True, state.M, state.Q)
    values = problem.upper_values(found)
    block_n = problem.block_n
    block_gaps = (values - expected) / block_n - state.ell_blocks
    relaxation_blocks = np.zeros_like(block_gaps)
    if np.any(values > found):
        mean_values = expected + block_n * state.ell_blocks
        known = np.maximum(found, mean_values)
        if atoms is not None and atoms.room:
            best = np.empty_like(known)
            W, theta = problem.split_coef(w)
            best_atom_values(problem.packed(), np.ascontiguousarray(W), theta, atoms.labels,
                             atoms.count, best)
            known = np.maximum(known, best)
        relaxation_blocks = np.maximum(values - known, 0.0) / block_n
    primal = penalty.value(w) + problem.weighted_mean(values - true_scores)
    if box is None:
        dual = state.ell_blocks.sum() - penalty.conjugate(penalty.c * v)
    else:  # the L2 penalty restricted to the feasible set
        dual = state.ell_blocks.sum() - penalty.c * box.conjugate_term(v)
    return Certificate(primal, dual, block_gaps.sum(), block_gaps, w, relaxation_blocks.sum(),
                       relaxation_blocks)


@dataclass(kw_only=True)
class BCFWResult(SolverResult):
    """BCFW's :class:`~sklearn_ssvm.solvers.result.SolverResult`, with what a warm start
    continues from: the dual ``state`` (and ``certified_state``, the averaged one when
    averaging), the ``active_sets``, the blocks' ``gap_estimates``, the last ``certificate``
    (None when none was made) and ``n_cache_hits``; ``relaxation_gap``, the part of the gap
    left by an oracle's bounds (:func:`certificate`). History records add ``cache_hits``,
    ``gap_estimate`` (the sum of the blocks' estimates) and, at the checks,
    ``relaxation_gap``."""

    relaxation_gap: float = 0.0
    state: DualState = None
    certificate: Certificate = None
    certified_state: DualState = None
    active_sets: ActiveSets = None
    gap_estimates: np.ndarray = None
    n_cache_hits: int = 0


def _resync(problem, step, atoms, state, penalty, box, coef, scored, threads=1):
    """Recompute the state from the atoms, ``coef = v`` from the state (on ``threads``
    threads, see ``weights``) and the scoring weights ``scored = primal_point(v)`` (unless
    they are ``coef`` itself): incremental updates drift (spec 002 §10.3)."""
    if step != "fw":
        state_from_atoms(problem.packed(), atoms.labels, atoms.weights, atoms.count, state.M,
                         state.Q, state.ell_blocks, problem.block_n)
    coef[:] = weights(problem, state, penalty, threads)
    if scored is not coef:
        scored[:] = primal_point(coef, penalty, box)


#: parallel steps need this many blocks per thread: each thread's steps read weights some of
#: the others' steps behind, which slows a fit of few blocks more than the threads speed it
#: (60 chain examples on 2 threads: a gap of 3e-4 after 300 passes, against 1e-6 in 251 on one)
MIN_BLOCKS_PER_THREAD = 256


def parallel_steps(problem, averaging, bounded, threads):
    """Whether a fit's block steps run on ``threads`` threads (``n_jobs``): on compiled
    oracles, without averaging (its weights number the steps of one sequence) or bounds, with
    ``MIN_BLOCKS_PER_THREAD`` blocks per thread. The other fits run their steps on one thread
    and only their exact-gap passes on several."""
    return (threads > 1 and not averaging and not bounded
            and problem.n_samples >= MIN_BLOCKS_PER_THREAD * threads
            and label_space(problem).kind != GRAPH)


class _Steps:
    """The steps of a fit's passes over fixed arrays: the kernel's bundles but the atom store,
    which grows (doubling, up to ``room_limit``) when a block's active set fills it."""

    def __init__(self, bundles, atoms, room_limit, averages):
        self.bundles = bundles  # (packed, gram, gram_off, PassWeights, PassDual)
        self.atoms = atoms
        self.room_limit = room_limit
        self.averages = averages

    def _capped(self):
        return self.room_limit is not None and self.atoms.room >= self.room_limit

    def _run(self, schedule, store, step0, start, shared):
        """Steps ``start ..`` of ``schedule``; returns ``(done, needs_room, cache_hits)``."""
        atoms = self.atoms
        return bcfw_pass(*self.bundles, schedule, PassAtoms(store[0], atoms.labels,
                                                            atoms.weights, atoms.count,
                                                            *store[1:]),
                         PassAverages(step0, *self.averages.arrays()), start, self._capped(),
                         shared)

    def sequential_pass(self, order, uniforms, sampling, estimates, exit_below, store, step0):
        """One pass of ``n`` steps on this thread (``bcfw_pass``); returns ``(done, hits,
        stopped_early)``."""
        n = estimates.shape[0]
        schedule = PassSchedule(order, n, uniforms, sampling == "gap", exit_below, estimates)
        done, hits = self._until_done([schedule], store, step0, None)[0]
        return done, hits, done < n

    def parallel_pass(self, order, sampling, estimates, exit_below, store, pool, rng):
        """One pass on ``pool = (executor, threads)``: asynchronous block steps.

        Thread ``t`` steps the blocks ``i`` with ``i % threads == t``, as a sequential pass
        over them would: their share of ``order`` (the unvisited blocks first), then with gap
        sampling draws among them (in proportion to their gap estimates). The pass's draws are
        one count that the threads take from as they go (``bcfw_pass``'s ``pass_counts``), so
        a thread whose steps are quicker makes more of them, and none waits for the other at
        the pass's end; a thread that fills a block's atom store stops the others, so that the
        store grows at once. (Smaller shares of blocks, taken by the threads as they become
        free, would balance the loads too, but each share's sampler sees only its blocks: at 4
        shares per thread, a CoNLL-2000 fit needed 37 passes where one share per thread, like
        one thread, needed 27.)

        The threads read and write the shared weights without locks (the asynchronous scheme
        of AP-BCFW, Wang et al. 2016): each step reads weights some of the others' steps
        behind, and adds its change atomically (``bcfw_pass(..., shared=True)``), so none is
        lost. No two threads touch one block, so the dual point stays a product of simplices
        (feasible) and every certificate, computed from it, is exact. The steps' interleaving
        follows the scheduler: such fits are certified, not reproducible bit for bit. Each
        thread stops early once its blocks' estimates sum below their share of
        ``exit_below``; an exact check follows when the estimates sum below ``exit_below``
        after the pass. Returns ``(done, hits, stopped_early)``.
        """
        executor, threads = pool
        n = estimates.shape[0]
        owner = np.arange(n) % threads
        steps = np.bincount(owner[order], minlength=threads)
        mass = np.bincount(owner, np.where(np.isinf(estimates), 0.0,
                                           np.maximum(estimates, 0.0)), threads)
        counts = np.zeros(N_PASS_COUNTS, np.int64)
        if sampling == "gap":  # each thread may make all the draws; the count stops them
            counts[DRAWS_LEFT] = n - order.shape[0]
            steps += counts[DRAWS_LEFT]
        # a thread stops once its blocks' estimates sum below its share of exit_below (their
        # share of the sum now): when all have, the sum is below exit_below, as in a pass
        # that stops early on one thread
        exits = np.full(threads, exit_below)
        if exit_below >= 0.0 and mass.sum() > 0.0:
            exits = exit_below * mass / mass.sum()
        schedules, members = [], []
        for t in range(threads):
            mine = owner == t
            # the thread's own estimates: the other blocks weigh 0 in its sampler
            schedules.append(PassSchedule(order[mine[order]], int(steps[t]),
                                          rng.random(steps[t]), sampling == "gap",
                                          float(exits[t]), np.where(mine, estimates, 0.0),
                                          counts))
            members.append(mine)
        results = self._until_done(schedules, store, 0, executor, counts)
        for schedule, mine in zip(schedules, members):
            estimates[mine] = schedule.gap_estimates[mine]
        stopped_early = (not np.isinf(estimates).any()
                         and np.maximum(estimates, 0.0).sum() <= exit_below)
        return sum(r[0] for r in results), sum(r[1] for r in results), stopped_early

    def _until_done(self, schedules, store, step0, executor, counts=None):
        """Run each schedule from its start, on ``executor`` (None: on this thread); a schedule
        that fills a block's store stops (and the others with it, through the ``counts`` they
        share on ``executor``), and the store grows once every schedule has stopped (none
        writes it then), before the rest runs. Returns ``[(done, cache_hits)]``."""
        progress = [[0, 0] for _ in schedules]
        running = list(range(len(schedules)))
        while running:
            if executor is None:
                results = [self._run(schedules[k], store, step0, progress[k][0], False)
                           for k in running]
            else:
                futures = [executor.submit(self._run, schedules[k], store, step0,
                                           progress[k][0], True) for k in running]
                results = [future.result() for future in futures]
            full = []
            for k, (done, needs_room, hits) in zip(running, results):
                progress[k] = [done, progress[k][1] + hits]
                if needs_room:
                    full.append(k)
            if full:
                self.atoms = self.atoms.grown(self.room_limit)
                if counts is not None:
                    counts[WAITING] = 0
            running = full
        return progress


@contextmanager
def _step_threads(problem, averaging, bounded):
    """``(executor, threads)`` for parallel steps on the threads of ``kernel_threads``, or
    None (see ``parallel_steps``)."""
    threads = n_threads()
    if not parallel_steps(problem, averaging, bounded, threads):
        yield None
        return
    with ThreadPoolExecutor(threads) as executor:
        yield executor, threads


#: the budget of ``max_iter=None``: BCFW's rate is per block step (Lacoste-Julien et al. 2013,
#: Thm. 2: ``2n (C + h0) / (k + 2n)`` after ``k`` steps with ``C <= 4 R^2 / (lambda n)``), so
#: the steps to a relative gap do not shrink with ``n``: graph fits that stopped by themselves
#: took 8,900 to 58,400 steps on 1 to 200 examples, that is 74 to 22,170 passes
#: (``benchmarks/select_defaults.py --sections pass-budget``)
MIN_PASSES = 200
STEP_BUDGET = 100_000


def pass_budget(n_samples):
    """The passes of ``max_iter=None`` over ``n_samples`` blocks: ``MIN_PASSES``, or
    ``STEP_BUDGET`` block steps where that is more (fewer than 500 blocks)."""
    return max(MIN_PASSES, -(-STEP_BUDGET // max(int(n_samples), 1)))


SAMPLINGS = ("gap", "uniform", "perm")
STEPS = {"fw": FW, "pairwise": PAIRWISE, "away": AWAY}


def _pass_order(sampling, estimates, rng):
    """Blocks a pass starts with, and the uniforms of its gap-sampling draws."""
    n = estimates.shape[0]
    if sampling == "uniform":
        return rng.integers(0, n, size=n), np.zeros(0)
    if sampling == "perm":
        return rng.permutation(n), np.zeros(0)
    # gap sampling: never-visited blocks (estimate +inf) first, in random order (spec 002 §3.1)
    unvisited = rng.permutation(np.flatnonzero(np.isinf(estimates)))
    return unvisited, rng.random(n)


def bcfw(problem, penalty, *, max_iter=100, tol=1e-2, gap_check=10, sampling="gap", step="fw",
         cache=False, cache_size=50, cache_F=0.25, cache_nu=0.01, max_active=64, bounds=None,
         averaging=False,
         certify=True, random_state=None, init=None, init_active_sets=None, init_estimates=None,
         n_jobs=None, verbose=0):
    """Minimise ``r(w) + mean_i w_i H~_i(w)`` (``w_i = problem.sample_weight``) by
    block-coordinate Frank-Wolfe.

    Each pass makes up to ``n`` steps, each on one block with the exact line search of spec 002
    §2. The exact duality gap (a certificate: ``P(w) - P* <= gap``) is computed every
    ``gap_check`` passes (the paper's 10), after the last one, and whenever the block-gap
    estimates sum below ``0.8 tol`` (the pass then stops early); the solver stops once it is
    ``<= tol`` (on the scale of eq. (1)) or after ``max_iter`` passes. Exact gap passes refresh
    every block's gap estimate. ``problem``: packed training data (``structure.prepare(X, Y)``).

    ``penalty`` (ElasticNet or float): ``r(w) = (c/2) ||w||^2 + l1 ||w||_1`` (no linear term); a
    float ``alpha`` is ``lambda`` of spec 002 eq. (1), the L2 penalty ``alpha/2 ||w||^2``. With
    ``l1 > 0`` the steps' line searches are exact on the elastic-net dual and ``coef`` is
    ``soft(v, l1 / c)`` (exact zeros); box constraints are then not supported.

    ``sampling``: blocks are picked proportionally to their last computed gap (``"gap"``, spec
    002 Alg. 2, unvisited blocks first), uniformly at random (``"uniform"``), or in a random
    permutation each pass (``"perm"``). ``step``: Frank-Wolfe steps (``"fw"``, Alg. 1), block
    pairwise steps (``"pairwise"``, Alg. 3: mass moves from the worst active labeling to the
    oracle's) or away steps (``"away"``, Alg. 4); the last two keep each block's active set of
    labelings and converge linearly in practice (spec 002 §4).

    ``cache``: keep up to ``cache_size`` labelings per block and step towards the best cached
    one instead of calling the oracle when its gap is at least ``cache_F`` times the block's
    last oracle gap and ``cache_nu / n`` times the last exact gap (spec 002 §5, Alg. 5; the
    paper's 50, 0.25 and 0.01). Cache hits are not oracle calls. With pairwise or away steps the
    cache and the active sets are one store (active labelings are never evicted).
    ``max_active`` (int or None, no cap): cap on the labelings a block keeps (its active set,
    and with ``cache`` its cached corners; ``max(max_active, cache_size)`` with a cache). The
    store starts at 8 per block (``cache_size`` with a cache) and doubles while some block fills
    it; at the cap, a corner that would join a full active set waits, and the block takes a
    pairwise step from its worst active atom to its best, whose drops free slots. Memory is then
    at most ``cap * (n_label_variables * 4 + n * 8)`` bytes.

    ``bounds`` ((lower, upper) or None): box constraints ``lower <= w <= upper`` (scalars or
    arrays of ``n_params``, +-inf allowed), e.g. non-negative pairwise weights for graph-cut
    oracles (spec 002 §7); the dual keeps the unclipped ``v``, the oracle and the returned
    ``coef`` use ``clip(v)``; L2 penalty only. ``averaging``: return (and certify) the weighted
    average of the iterates, iterate ``k`` weighted by ``k`` (Lacoste-Julien et al. 2013); the
    averaged dual point is feasible, so its duality gap is exact too. ``random_state``: numpy
    Generator, RandomState, int or None. ``certify=False``: stop as soon as the blocks' (stale)
    gap estimates sum below ``tol``, without the final exact pass: no guarantee (the heuristic
    path of spec 002 §8.4); the periodic exact checks still run and ``certificate`` is the last
    of them, or None.

    Warm start: ``init`` (DualState or None; its ``w`` is recomputed at ``penalty``), its atoms
    ``init_active_sets`` (required to warm start pairwise or away steps) and ``init_estimates``,
    the block gap estimates at ``init`` (default: unknown, ``+inf``, so every block is visited
    before gap sampling starts). ``n_jobs`` (int or None): threads of the batched exact-gap
    passes and, where ``parallel_steps`` allows, of the block steps (``_Steps.parallel_pass``:
    each thread steps its own blocks on the shared weights, the dual stays feasible and the
    certificates exact, the fit is not reproducible bit for bit); with one thread, the sequential
    steps. ``verbose > 0``: progress bar with the current gap.

    Returns a BCFWResult: ``coef`` and ``certificate`` belong to the certified point (the average
    with ``averaging``), ``state`` is the last iterate (to warm start from), ``gap_estimates`` the
    last known gap of each block at the last iterate (exact after an exact check)."""
    rng = generator(random_state)
    n = problem.n_samples
    penalty = as_penalty(penalty)
    if penalty.p is not None:
        raise ValueError("BCFW takes a penalty without a linear term (no proximal centre).")
    alpha, kappa = penalty.c, penalty.l1 / penalty.c  # the kernel's lambda and threshold
    asked = {"elastic_net": kappa > 0, "away": step == "away", "averaging": averaging,
             "bounds": bounds is not None, "sample_weight": problem.weighted}
    capabilities.check("bcfw", problem, [option for option, on in asked.items() if on])
    problem = label_space(problem)  # graphs: packed for the compiled pass, Python oracles
    state = DualState.at_labels(problem) if init is None else init.copy()
    coef = weights(problem, state, penalty) if init is not None else np.zeros(problem.n_params)
    box = None if bounds is None else Box.check(bounds, problem.n_params)
    # BinaryGraphCRF's graph cuts score with the pairwise table projected onto the submodular
    # cone: the kernel keeps the unprojected v apart as under a box, without bounds
    cone = box is None and getattr(problem, "constrained", False)
    if cone:
        box = Projection(problem.project)
        lower, upper = np.full(problem.n_params, -np.inf), np.full(problem.n_params, np.inf)
    elif box is not None:
        lower, upper = box.lower, box.upper
    if box is None:  # soft(v, kappa): without l1, the kernel scores with the v it updates
        clipped, limits = (primal_point(coef, penalty),
                           (np.zeros((0, problem.n_codes)),) * 2 + (np.zeros(0),) * 2)
    else:
        clipped = box.project(coef)
        (lower_W, lower_theta), (upper_W, upper_theta) = map(problem.split_coef, (lower, upper))
        limits = (lower_W, upper_W, lower_theta, upper_theta)
    W, theta = problem.split_coef(coef)
    Wc, theta_c = problem.split_coef(clipped)
    gram, gram_off = problem.gram
    estimates = np.full(n, np.inf) if init_estimates is None else np.array(init_estimates, float)
    averages = DualState.zeros_like(state, rows=averaging)
    certified = state
    clock = Clock()
    history = []
    calls = 0
    cert = None
    converged = False
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}.")
    if step not in STEPS:
        raise ValueError(f"step must be one of {tuple(STEPS)}, got {step!r}.")
    if cache and not (cache_F > 0 or cache_nu > 0):
        raise ValueError("cache_F or cache_nu must be positive: with both 0 every step hits "
                         "the cache and Frank-Wolfe does not converge (spec 002 §5.2).")
    if max_active is not None and (isinstance(max_active, bool) or
                                   not isinstance(max_active, (int, np.integer))
                                   or max_active < 1):
        raise ValueError(f"max_active must be a positive integer or None, got {max_active!r}.")
    room_limit = None if max_active is None else max(max_active, cache_size if cache else 1)
    if step == "fw" and not cache:
        atoms = ActiveSets.none(problem)
    elif init_active_sets is not None:
        atoms = init_active_sets.copy()
    elif init is None or step == "fw":  # FW with a cache: the weights are bookkeeping only
        atoms = ActiveSets.at_labels(problem, capacity=ActiveSets.initial_room(
            cache, cache_size, max_active))
    else:
        raise ValueError(f"step={step!r} needs the active sets of the warm start; a dual point "
                         "reached by Frank-Wolfe steps alone does not have them.")
    steps = 0
    hits = 0
    # the largest loss bounds the gap at the start (spec 002 §5.1): 1, or a chain's total cost
    start_gap = 1.0
    if problem.kind == CHAIN and n > 0:
        start_gap = float(np.max(problem.chain_costs()))
    if averaging and not certify:
        raise ValueError("averaging needs exact checks: the estimates are the last iterate's.")
    # the heuristic exit watches the last iterate's gaps; with averaging the average is certified
    exit_below = -1.0 if averaging else (HEURISTIC_EXIT if certify else 1.0) * tol
    with kernel_threads(n_jobs), ProgressBar(max_iter, verbose, "BCFW") as bar, \
            _step_threads(problem, averaging, box is not None) as pool:
        steps_of = _Steps((problem.packed(), gram, gram_off,
                           PassWeights(W, theta, Wc, theta_c, *limits, alpha, kappa,
                                       np.bool_(cone)),
                           PassDual(state.M, state.Q, state.ell_blocks, problem.block_n)),
                          atoms, room_limit, averages)
        # the threads' steps are not reproducible to the bit: neither need their resyncs be
        resync_threads = 1 if pool is None else pool[1]
        for it in range(1, max_iter + 1):
            first, uniforms = _pass_order(sampling, estimates, rng)
            last_gap = start_gap if cert is None else max(cert.gap, 0.0)
            store = (STEPS[step], cache, cache_F, cache_nu * last_gap / n)
            if pool is None:
                done, pass_hits, stopped_early = steps_of.sequential_pass(
                    first, uniforms, sampling, estimates, exit_below, store, steps)
            else:
                done, pass_hits, stopped_early = steps_of.parallel_pass(
                    first, sampling, estimates, exit_below, store, pool, rng)
            atoms = steps_of.atoms
            steps += done
            hits += pass_hits
            calls += done - pass_hits
            record = history_record(iter=it, oracle_calls=calls, cache_hits=hits,
                                    gap_estimate=estimates.sum())
            if not certify and estimates.sum() <= tol:  # +inf while a block is unvisited
                _resync(problem, step, atoms, state, penalty, box, coef, clipped, resync_threads)
                converged = True
                record.update(time=clock.wall(), cpu_time=clock.cpu())
                history.append(record)
                break
            last_pass = it == max_iter or stop_requested()  # Ctrl-C: certify and stop here
            if it % gap_check == 0 or last_pass or stopped_early:
                _resync(problem, step, atoms, state, penalty, box, coef, clipped, resync_threads)
                if averaging and done == 0:  # the estimates stall the pass: refresh them
                    estimates[:] = certificate(problem, state, coef, penalty, box).block_gaps
                    calls += n
                if averaging and steps > 0:
                    certified = state.minus(averages, 2.0 / (steps * (steps + 1.0)))
                    certified_v = weights(problem, certified, penalty)
                else:
                    certified, certified_v = state, coef
                cert = certificate(problem, certified, certified_v, penalty, box,
                                   None if averaging else atoms)
                calls += n
                if not averaging:  # exact gaps of the current iterate: fresh estimates
                    estimates[:] = cert.block_gaps - cert.relaxation_blocks
                record.update(oracle_calls=calls, objective=cert.primal,
                              dual_objective=cert.dual, gap=cert.gap,
                              relaxation_gap=cert.relaxation)
                # passes close only the closable part: what the relaxation leaves (0 with exact
                # oracles) no pass can
                converged = cert.closable <= tol
                bar.set_postfix(gap=f"{cert.gap:.2e}")
                bar.log(f"pass {it}", primal=cert.primal, dual=cert.dual, gap=cert.gap)
            record.update(time=clock.wall(), cpu_time=clock.cpu())
            history.append(record)
            bar.update()
            if converged or last_pass:
                break
    if cert is None or (not certify and converged):
        returned = clipped.copy()
        reason = "the blocks' gap estimates stopped the run, no exact pass certified it"
    else:
        returned = cert.coef.copy()
        reason = ("" if getattr(problem, "certified", True)
                  else "an approximate oracle ran: the primal compares its (too low) maxima")
    nan = np.nan
    return BCFWResult(coef=returned, objective=cert.primal if cert else nan,
                      dual_objective=cert.dual if cert else nan,
                      duality_gap=cert.gap if cert else nan,
                      relaxation_gap=cert.relaxation if cert else 0.0, gap_certified=not reason,
                      gap_reason=reason, state=state, certificate=cert,
                      certified_state=certified, active_sets=atoms,
                      gap_estimates=estimates, n_iter=it,
                      n_oracle_calls=calls, n_cache_hits=hits, converged=converged,
                      history=history)


class BCFW(Solver):
    """:func:`bcfw` behind the :class:`~sklearn_ssvm.solvers.base.Solver` protocol.

    ``**settings``: keyword arguments of :func:`bcfw` (``max_iter``, ``tol``, ``step``, ...), but
    not its ``init*`` ones: ``solve(..., warm=result)`` continues from a previous
    :class:`BCFWResult`'s ``state``, ``active_sets`` and ``gap_estimates``."""

    capabilities = capabilities.register("bcfw", capabilities.Capabilities(
        name="BCFWStructuredSVM", options=("elastic_net", "away", "averaging", "bounds", "box",
                                           "sample_weight"),
        penalty_codes=("l2", "elastic_net"),
        refused={("binary_graph", "elastic_net"): capabilities.SOFT_AND_CONE,
                 ("binary_graph", "box"): "a box replaces the projection onto the submodular "
                                          "cone that its graph cuts need (coef_bounds="
                                          "'positive_pairwise' is a box inside the cone)",
                 (None, ("bounds", "elastic_net")): "the box's dual (spec 002 §7) is the L2 "
                                                    "penalty's"},
        certificate="exact duality gap (eq. (5)), certified where the oracle is exact or "
                    "bounds its maxima (TRW-S)",
        warm_start=True, path="certified eps-path under L2 without bounds (BinaryGraphCRF: grid)",
        certified_path=True))

    def rescaled(self, problem, warm, ratio, deltas=None, stale=False):
        """Prop. 1 (spec 002 eq. (12)) for a smaller L2 ``alpha`` (``ratio`` in ``(0, 1]``):
        ``w`` kept, the dual moved towards the true labelings (:func:`keep_primal_rescale`),
        the active sets alike (:func:`rescale_active_sets`), and where ``warm`` holds gap
        estimates and ``deltas`` (``bcfw_path.block_deltas`` at ``warm``) each moved by
        ``(1 - ratio) delta_i`` (by its positive part for ``stale`` bounds, §8.3), at least 0.
        The one rescaling of the estimator's warm start, the grid path and the certified
        path."""
        vertex = DualState.at_labels(problem)
        atoms = (None if warm.active_sets is None
                 else rescale_active_sets(problem, warm.active_sets, ratio))
        estimates = None
        if warm.gap_estimates is not None and deltas is not None:
            moved = np.maximum(deltas, 0.0) if stale else deltas
            estimates = np.maximum(warm.gap_estimates + (1.0 - ratio) * moved, 0.0)
        return BCFWResult(coef=warm.coef, state=keep_primal_rescale(warm.state, ratio, vertex),
                          active_sets=atoms, gap_estimates=estimates)

    def _solve(self, problem, penalty, warm):
        if warm is None:
            return bcfw(problem, penalty, **self.settings)
        return bcfw(problem, penalty, init=warm.state, init_active_sets=warm.active_sets,
                    init_estimates=warm.gap_estimates, **self.settings)
