"""One pass of block-coordinate Frank-Wolfe in label space (spec 002 Alg. 1, 3, 4).

The block ``i`` of the dual is kept as expected label statistics ``M_i = E_{alpha_i} S(y)``
(rows ``tok_off[i]:tok_off[i+1]`` of ``M``) and ``Q_i = E_{alpha_i} q(y)``, plus
``ell_i = b_(i)^T alpha_(i)``. Then ``w_i = [phi(x_i, y_i) - (X_i^T M_i (+) Q_i)] / (lambda n)``:
memory is O(sum_i T_i C), never n dense d-vectors (ARCHITECTURE.md).

Every step type moves block i along a direction ``(D, dq, dl)`` in label space (``D`` for
``M_i``, ``dq`` for ``Q_i``, ``dl`` for ``ell_i``) with an exact line search on ``[0, gamma_max]``:

- Frank-Wolfe (Alg. 1): towards the oracle's corner, ``D = S(y*) - M_i``, ``gamma_max = 1``;
- pairwise (Alg. 3): mass from the away atom to the corner, ``D = S(y*) - S(y_a)``,
  ``gamma_max = alpha_a``;
- away (Alg. 4): away from the atom, ``D = M_i - S(y_a)``, ``gamma_max = alpha_a / (1 - alpha_a)``.

Along a direction, ``f(gamma)`` decreases at rate ``N = (<D, U> + <dq, theta>)/n + dl`` and has
curvature ``(||X_i^T D||^2 + ||dq||^2) / (lambda n^2)``, so ``gamma* = N lambda n^2 / quad``.
Under the elastic net the weights are soft-thresholded and ``f`` is piecewise quadratic along
the direction: its exact minimiser comes from the coordinates the step moves (``bcfw_pass``).
Pairwise and away steps need the active set of each block: its atoms are stored as labelings
(``atom_y[node_off[i]:node_off[i+1], k]``) with weights ``atom_w[i, k]`` (``atom_n[i]`` of them).
Rows are label variables and columns atoms, so all the labelings of a block are contiguous: a
step scoring a block's cached labelings reads a few cache lines, not one per labeling.
"""
import functools
from collections import namedtuple

import numpy as np
from numba import njit

from .atomic import add_count, add_into, read_count
from .batch import max_length
from .labelings import (FALSE, GRAPH, TRUE, add_stats, example_graph, expected_score, label_loss,
                        labeling_score, oracle_one_kind, oracle_work_size, stats_difference)
from .penalty import soft_line_search
from .prefetch import prefetch_rows, prefetch_span
from .graph_oracle import graph_oracle
from .sampling import sum_tree, sum_tree_sample, sum_tree_total, sum_tree_update
from .sparse import (add_entries_outer, add_outer_into, clip_rows, direct_entries_quadratic,
                     direct_quadratic, entries_quadratic, gram_quadratic, unary_scores_into)
from .threads import run_chunks

FW = 0
PAIRWISE = 1
AWAY = 2
NONE = np.int64(-1)  # no atom (a numpy scalar: see labelings.TRUE)


@njit(cache=True, nogil=True)
def _find_atom(atom_y, atom_n, i, n0, n1, ys):
    """Index of the atom of block ``i`` whose labeling is ``ys``, or -1."""
    for k in range(atom_n[i]):
        same = True
        for j in range(n1 - n0):
            if atom_y[n0 + j, k] != ys[j]:
                same = False
                break
        if same:
            return k
    return -1


@njit(cache=True, nogil=True, inline="always")
def _atom(atom_y, n0, n1, k, buf):
    """Atom ``k``'s labeling of nodes ``n0..n1-1``, copied into ``buf``: contiguous like ``ys``,
    so that the kernels it goes to compile once for both (a column of ``atom_y`` is strided,
    and each of them would compile a second time for it)."""
    out = buf[:n1 - n0]
    for t in range(n0, n1):
        out[t - n0] = atom_y[t, k]
    return out


@njit(cache=True, nogil=True)
def _remove_atom(atom_y, atom_w, atom_n, i, n0, n1, k):
    """Drop atom ``k`` of block ``i`` (the last atom takes its place)."""
    last = atom_n[i] - 1
    if k != last:
        for t in range(n0, n1):
            atom_y[t, k] = atom_y[t, last]
        atom_w[i, k] = atom_w[i, last]
    atom_w[i, last] = 0.0
    atom_n[i] = last


@njit(cache=True, nogil=True)
def _insert_atom(atom_y, atom_w, atom_n, H_atoms, i, n0, n1, ys, H_s, away, may_evict_active):
    """Add labeling ``ys`` (value ``H_s``) to block ``i``'s atoms with weight 0.

    When the store is full, the inactive atom with the smallest ``H`` is evicted (spec 002
    §5.4), or with ``may_evict_active`` (plain Frank-Wolfe, whose weights are bookkeeping only)
    the away atom. Returns ``(index, away)`` with the away index updated for the move, or
    ``(-1, away)`` when only active atoms fill the store: it needs more room.
    """
    cap = atom_w.shape[1]
    if atom_n[i] == cap:
        victim = NONE
        for k in range(atom_n[i]):
            if atom_w[i, k] == 0.0 and (victim < 0 or H_atoms[k] < H_atoms[victim]):
                victim = k
        if victim < 0 and may_evict_active:
            victim = away
        if victim < 0:
            return -1, away
        if victim == away:
            away = NONE
        _remove_atom(atom_y, atom_w, atom_n, i, n0, n1, victim)
        H_atoms[victim] = H_atoms[atom_n[i]]
        if away == atom_n[i]:
            away = victim
    k = atom_n[i]
    for t in range(n0, n1):
        atom_y[t, k] = ys[t - n0]
    atom_w[i, k] = 0.0
    H_atoms[k] = H_s
    atom_n[i] += 1
    return k, away


@njit(cache=True, nogil=True)
def _all_active(atom_w, atom_n, i):
    """Whether every atom of block ``i`` has a positive weight (none has a slot to evict)."""
    for k in range(atom_n[i]):
        if atom_w[i, k] <= 0.0:
            return False
    return True


#: weight matrices of more doubles than this (1 MB) get their rows prefetched a step ahead
LARGE_WEIGHTS = 1 << 17


@njit(cache=True, nogil=True)
def _prefetch_block(i, packed, gram, gram_off, dual, store, dense_state):
    """Start fetching what a step on block ``i`` reads: its CSR slice, Gram matrix, labels,
    losses, atoms and their weights, and with ``dense_state`` its rows of ``M`` and ``Q`` (a
    sparse step touches a few entries of them: fetching ``Q_i``, ``C^2`` floats, would cost
    more memory traffic than the step saves). See ``prefetch.py``."""
    indptr, indices, data, tok_off = packed.indptr, packed.indices, packed.data, packed.tok_off
    y, node_off, tok_loss = packed.y, packed.node_off, packed.tok_loss
    M, Q = dual.M, dual.Q
    atom_y, atom_w = store.atom_y, store.atom_w
    t0 = tok_off[i]
    t1 = tok_off[i + 1]
    if dense_state:
        C = M.shape[1]
        p = Q.shape[1]
        prefetch_span(M, t0 * C, t1 * C)
        prefetch_span(Q, i * p, (i + 1) * p)
    prefetch_span(indptr, t0, t1 + 1)
    prefetch_span(indices, indptr[t0], indptr[t1])
    prefetch_span(data, indptr[t0], indptr[t1])
    prefetch_span(gram, gram_off[i], gram_off[i + 1])
    prefetch_span(y, node_off[i], node_off[i + 1])
    prefetch_span(tok_loss, t0, t1)
    cap = atom_w.shape[1]
    prefetch_span(atom_w, i * cap, (i + 1) * cap)
    prefetch_span(atom_y, node_off[i] * cap, node_off[i + 1] * cap)


@njit(cache=True, nogil=True)
def _dense_direction(kind, graph, dual, block, step, D, dq):
    """Write a step's direction ``(D, dq)`` densely; return its ``dl``. ``block`` is
    ``(i, t0, T, yi, losses, ell_i, n)``, ``step`` ``(ys, L_s, ya, away_step, pairwise)``,
    ``ya`` the away atom's labeling (away and pairwise steps)."""
    M, Q = dual.M, dual.Q
    i, t0, T, yi, losses, ell_i, n = block
    ys, L_s, ya, away_step, pairwise = step
    C = D.shape[1]
    for t in range(T):
        for c in range(C):
            D[t, c] = M[t0 + t, c] if away_step else (0.0 if pairwise else -M[t0 + t, c])
    for j in range(dq.shape[0]):
        dq[j] = Q[i, j] if away_step else (0.0 if pairwise else -Q[i, j])
    if away_step:  # D = M_i - S(y_a)
        add_stats(kind, ya, -1.0, D, dq, graph)
        dl = ell_i - label_loss(kind, yi, ya, losses) / n
    elif pairwise:  # D = S(y*) - S(y_a)
        add_stats(kind, ys, 1.0, D, dq, graph)
        add_stats(kind, ya, -1.0, D, dq, graph)
        dl = (L_s - label_loss(kind, yi, ya, losses)) / n
    else:  # Frank-Wolfe: D = S(y*) - M_i
        add_stats(kind, ys, 1.0, D, dq, graph)
        dl = L_s / n - ell_i
    return dl


@njit(cache=True, nogil=True)
def _dense_entries(D, dq, rows, cols, vals, q_index, q_vals):
    """The non-zeros of a dense direction ``(D, dq)`` as entries (``stats_difference``'s
    layout); returns their counts."""
    n_s = 0
    for t in range(D.shape[0]):
        for c in range(D.shape[1]):
            if D[t, c] != 0.0:
                rows[n_s] = t
                cols[n_s] = c
                vals[n_s] = D[t, c]
                n_s += 1
    n_q = 0
    for j in range(dq.shape[0]):
        if dq[j] != 0.0:
            q_index[n_q] = j
            q_vals[n_q] = dq[j]
            n_q += 1
    return n_s, n_q


@njit(cache=True, nogil=True)
def _gather_direction(packed, t0, entries, scale, W, theta, touched):
    """The weights' move ``e = scale * (X_i^T D (+) dq)`` on the ``m`` coordinates it touches,
    ``(D, dq)`` given by ``entries = (rows, cols, vals, n_s, q_index, q_vals, n_q)``; in
    ``touched = (slot, touched_row, touched_col, base, direction)``, ``(touched_row,
    touched_col)`` an entry of ``W`` (row -1: entry ``touched_col`` of ``theta``), ``base`` its
    value, ``direction`` its move (a feature of several tokens is one coordinate). ``slot`` maps
    each of the ``W.size + theta.size`` coordinates to its place, -1 when untouched, and is left
    all -1. Returns ``m``."""
    indptr, indices, data = packed.indptr, packed.indices, packed.data
    rows, cols, vals, n_s, q_index, q_vals, n_q = entries
    slot, touched_row, touched_col, base, direction = touched
    C = W.shape[1]
    theta0 = W.shape[0] * C
    m = 0
    for e in range(n_s + n_q):  # the entries of D, each on a CSR row, then those of dq
        if e < n_s:
            t = t0 + rows[e]
            c = cols[e]
            v = scale * vals[e]
            k0, k1 = indptr[t], indptr[t + 1]
        else:
            c = q_index[e - n_s]
            v = scale * q_vals[e - n_s]
            k0, k1 = 0, 1
        for k in range(k0, k1):
            r = indices[k] if e < n_s else -1
            key = r * C + c if r >= 0 else theta0 + c
            j = slot[key]
            if j < 0:
                j = m
                slot[key] = m
                touched_row[m] = r
                touched_col[m] = c
                base[m] = W[r, c] if r >= 0 else theta[c]
                direction[m] = 0.0
                m += 1
            direction[j] += v * data[k] if r >= 0 else v
    for j in range(m):
        r = touched_row[j]
        slot[r * C + touched_col[j] if r >= 0 else theta0 + touched_col[j]] = -1
    return m


@njit(cache=True, nogil=True)
def _soft(v, t):
    """``sign(v) max(|v| - t, 0)``, rounded as ``penalties.soft_threshold``."""
    if v > t:
        return v - t
    if v < -t:
        return v + t
    return 0.0


@njit(cache=True, nogil=True)
def _move_gathered(touched_row, touched_col, direction, m, gamma, kappa, W, theta, Wc, theta_c,
                   atomic):
    """``v += gamma * direction`` on the gathered coordinates of ``v = (W, theta)`` (see
    ``_gather_direction``; atomic additions with ``atomic``), and the scoring weights
    ``(Wc, theta_c) = soft(v, kappa)`` there."""
    for j in range(m):
        r = touched_row[j]
        c = touched_col[j]
        if r >= 0:
            Wc[r, c] = _soft(add_into(W, (r, c), gamma * direction[j], atomic), kappa)
        else:
            theta_c[c] = _soft(add_into(theta, c, gamma * direction[j], atomic), kappa)


#: the model a pass updates and scores with: ``v = (W, theta)``, the scoring weights
#: ``w = (Wc, theta_c)`` (the same arrays without a box, the elastic net or the cone), the box
#: (zero-size arrays: none), the penalty's ``lam``, the elastic net's threshold ``kappa`` and
#: whether ``theta_c`` is ``theta`` projected onto the submodular cone (``BinaryGraphCRF``)
PassWeights = namedtuple("PassWeights", "W theta Wc theta_c lower_W upper_W lower_theta "
                                        "upper_theta lam kappa submodular", defaults=(FALSE,))
#: the dual blocks in label space and each block's share ``1 / block_n`` of the mean loss
PassDual = namedtuple("PassDual", "M Q ell_blocks block_n")
#: which blocks the steps visit: the ones known ahead, then gap sampling's draws; the counts
#: that the threads of a parallel pass share (zero size: one thread), see ``bcfw_pass``
PassSchedule = namedtuple("PassSchedule", "first_blocks n_steps uniforms gap_sampling exit_below "
                                          "gap_estimates pass_counts",
                          defaults=(np.zeros(0, np.int64),))
#: ``pass_counts[DRAWS_LEFT]``: the draws the threads have still to make between them;
#: ``pass_counts[WAITING]``: threads that stopped for the atom store to grow, read at every step
#: of every thread: 64 bytes apart, on another cache line than the count that draws change
DRAWS_LEFT, WAITING = 0, 8
N_PASS_COUNTS = 9
#: a parallel pass's thread takes this many draws at a time from ``pass_counts[DRAWS_LEFT]``:
#: the count's cache line moves between the cores once per so many steps, not at every step
DRAWS_TAKEN = 8
#: the step type and the atom store, which doubles as the cache of labelings
PassAtoms = namedtuple("PassAtoms", "step_type atom_y atom_w atom_n use_cache cache_F "
                                    "cache_min_gap")
#: weighted averaging: the global step before the pass and the accumulated changes
PassAverages = namedtuple("PassAverages", "step0 VM VQ Vell")


def bcfw_pass(packed, gram, gram_off, model, dual, schedule, store, averages, start,
              drop_when_full=False, shared=False):
    """Steps ``start .. n_steps - 1`` of a pass, one block each, with exact line searches.

    The arrays come bundled: ``packed`` (``labelings.Packed``), ``model`` (``PassWeights``),
    ``dual``, ``schedule``, ``store`` (``PassAtoms``) and ``averages``, named tuples built once
    per pass; the description below names their fields.

    The blocks are ``first_blocks`` in order, then (``gap_sampling``) blocks drawn with
    probability proportional to their gap estimates (spec 002 Alg. 2) through a sum tree, using
    ``uniforms[b]`` for draw ``b``. Each visited block's Frank-Wolfe gap ``g_i``, computed before
    its step (Alg. 1 line 6), is stored in ``gap_estimates`` (``+inf``: never visited). Once every
    block has an estimate, the pass stops early when their sum falls to ``exit_below`` or to 0
    (the heuristic exit of spec 002 §3.2: time for an exact gap).

    ``pass_counts``: threads that run passes over other blocks at the same time share these
    two counts, updated atomically. A thread takes its draws from ``pass_counts[DRAWS_LEFT]``,
    ``DRAWS_TAKEN`` at a time, gives back those it has not made when it stops, and stops when
    none is left: the threads' draws add up to the count, whichever thread's steps are
    quicker. A thread that needs room (below) adds itself to
    ``pass_counts[WAITING]``, and every thread stops at its next step as if it needed room:
    the store can grow once none writes it, without the others first finishing their passes.

    ``step_type`` is ``FW``, ``PAIRWISE`` or ``AWAY``; the last two maintain the atoms. Weighted
    averaging (Lacoste-Julien et al. 2013, iterate k weighted by k): when ``VM`` has rows, the
    change ``Delta_k`` of the dual state at global step ``k = step0 + b + 1`` is accumulated as
    ``V += (k - 1) k / 2 * Delta_k``, so that the average is ``state_K - V / (K (K + 1) / 2)``.

    Oracle caching (spec 002 §5, Alg. 5; ``use_cache``): the atom store doubles as a cache of
    labelings. Before calling the oracle on block ``i``, its best cached labeling is taken
    instead if its gap is positive, at least ``cache_F`` times the block's last oracle gap and
    at least ``cache_min_gap`` (``nu g / n`` from the last exact gap). Hits update neither the
    gap estimate nor the sampler, and consume no random numbers.

    Box constraints (spec 002 §7, Alg. 9): ``(W, theta)`` is the unclipped ``v = A alpha`` the
    steps update, ``(Wc, theta_c) = clip(v, lower, upper)`` the ``w`` that scores (oracle, gaps);
    the line search keeps its curvature in ``v``. Without bounds (zero-size bound arrays) pass
    ``Wc is W`` and ``theta_c is theta``. ``BinaryGraphCRF``'s cone (``submodular``, with infinite
    bounds) is the same with ``theta_c`` the projection of ``theta``: a projection is the gradient
    of a convex function of ``v`` (Moreau) with a 1-Lipschitz map, so the curvature in ``v``
    still bounds the dual's and no step decreases it.

    Graphs (``GRAPH``) are decoded by ``graph_oracle.graph_oracle``, one call per step, from
    inside the pass: TRW-S compiled, or the structure's oracle from Python.

    Elastic net (spec 002 with ``r(w) = (lam/2) ||w||^2 + lam kappa ||w||_1``, ``kappa > 0``):
    ``(W, theta)`` is ``u / lam``, ``u`` the unthresholded weights of the dual, and
    ``(Wc, theta_c) = soft(W, kappa)``, separate arrays, the ``w`` that scores; both are kept
    on the coordinates a step touches. The line search minimises
    ``-gamma dl + (lam/2) sum_j (|v_j + gamma e_j| - kappa)_+^2`` over the touched coordinates
    (``penalty.soft_line_search``), so a sparse pairwise step stays sparse. With ``kappa = 0``
    (L2) the closed-form step below is taken.

    Blocks known ahead are prefetched (``prefetch.py``): ``first_blocks[b + 2]`` and, for large
    weight matrices, the weight rows of ``first_blocks[b + 1]``; a gap-sampling draw is made as
    soon as the sampler is final for the step (right after the oracle) and its block prefetched.

    Sample weights: block ``i`` carries the share ``1 / block_n[i]`` of the mean loss
    (``block_n[i] = n / w_i``, ``w`` the weights normalised to mean 1; all ``n`` unweighted).
    Every per-block ``1 / n`` of the unweighted method, in the corner ``psi / (lambda n)``, its
    loss ``L / n``, the gaps and the line search, becomes ``1 / block_n[i]``: the oracle's
    argmax does not change, and the step solves the weighted dual exactly.

    Returns ``(steps_done, needs_room, cache_hits)``: ``needs_room`` is True when a block's atom
    store is full of active atoms and step ``steps_done`` could not be made (or, on several
    threads, another thread's could not); grow ``atom_y``/``atom_w``, set
    ``pass_counts[WAITING]`` back to 0 and call again with ``start = steps_done``. With
    ``drop_when_full`` (the store is at its cap) the corner does not enter: that step is a
    pairwise step from the block's worst active atom to its best one, line-searched, so the dual
    never decreases (spec 002 §10.3's forced drop of the lightest atom onto the corner could,
    and diverged at caps of 8 or 16 labelings); when it drops the worst atom a slot frees for
    the next corner.

    ``shared``: other threads run passes over other blocks on the same weights at the same
    time (``solvers.bcfw``'s parallel passes): every addition into ``(W, theta)`` is then
    atomic (``atomic.add_into``), so none is lost. Without bounds or averaging only.
    """
    kernel = _pass_kernel(int(packed.kind), model.kappa > 0.0, bool(shared))
    return kernel(packed, gram, gram_off, model, dual, schedule, store, averages, start,
                  drop_when_full)


@njit(cache=True, nogil=True, inline="always")
def _take_draws(pass_counts, k):
    """Up to ``k`` of a parallel pass's draws; returns how many (0: the others made the rest).
    Those taken beyond the count are given back at once, so the takes add up to the count."""
    left = add_count(pass_counts, DRAWS_LEFT, -k)
    beyond = min(max(-left, 0), k)
    if beyond > 0:
        add_count(pass_counts, DRAWS_LEFT, beyond)
    return k - beyond


@njit(cache=True, nogil=True, inline="always")
def _give_back(pass_counts, pooled, unmade):
    """A parallel pass's thread stops: the draws it took and has not made are the others'."""
    if pooled and unmade > 0:
        add_count(pass_counts, DRAWS_LEFT, unmade)


@njit(cache=True, nogil=True, inline="always")
def _wait_for_room(pass_counts, pooled, unmade):
    """A parallel pass's thread stops for the store to grow: the others stop too, and the draws
    it took and has not made (``unmade``: with the one its step took, the step being made again
    after the growth) are given back."""
    if pooled:
        add_count(pass_counts, WAITING, 1)
        _give_back(pass_counts, pooled, unmade)


@functools.lru_cache(maxsize=None)
def _pass_kernel(structure_kind, elastic_net, shared):
    """``bcfw_pass`` compiled for one structure kind, with or without the elastic net's line
    search (``elastic_net``): closure constants (ints and bools, which numba's cache keys on),
    so that numba prunes the other branches and a fit of a chain with the L2 penalty compiles
    neither the other kinds' oracles nor the line search's sort. (Only the inlined oracle takes
    the constant: a constant argument of a compiled kernel would compile it once more, for that
    literal.) ``shared`` likewise: atomic additions into the weights, or plain ones (the
    one-thread pass compiles no atomic operation). The atom store (pairwise and away steps,
    the cache) is a branch at run time: the defaults use it, and a constant would compile a
    second pass for every Frank-Wolfe fit without the cache."""

    @njit(cache=True, nogil=True)
    def bcfw_pass(packed, gram, gram_off, model, dual, schedule, store, averages, start,
                  drop_when_full):
        """The pass (see ``bcfw_pass``)."""
        kind, edges, parent, order, indptr, indices, data, tok_off, y, node_off, tok_loss, \
            edge_off, edge_data, graph_oracles = packed
        W, theta, Wc, theta_c, lower_W, upper_W, lower_theta, upper_theta, lam, kappa, \
            submodular = model
        M, Q, ell_blocks, block_n = dual
        first_blocks, n_steps, uniforms, gap_sampling, exit_below, gap_estimates, \
            pass_counts = schedule
        step_type, atom_y, atom_w, atom_n, use_cache, cache_F, cache_min_gap = store
        step0, VM, VQ, Vell = averages
        n = tok_off.shape[0] - 1
        C = W.shape[1]
        p = theta.shape[0]
        max_T = max_length(tok_off)
        cap = atom_w.shape[1]
        U_buf = np.empty((max_T, C))
        D_buf = np.empty((max_T, C))
        dq = np.empty(p)
        max_nodes = max_length(node_off)
        y_buf = np.empty(max_nodes, dtype=np.int32)
        ya_buf = np.empty(max_nodes, dtype=np.int32)
        H_atoms = np.empty(cap)
        soft = elastic_net  # line searches on the coordinates a step moves
        # sparse pairwise steps: the entries of S(y*) - S(y_a) and q(y*) - q(y_a); with the elastic
        # net also those of dense directions
        n_entries = max(2 * max_nodes, max_T * C if soft else 0)
        rows = np.empty(n_entries, dtype=np.int64)
        cols = np.empty(n_entries, dtype=np.int64)
        vals = np.empty(n_entries)
        max_edges = max_length(edge_off) if edge_off.shape[0] else edges.shape[0]
        q_index = np.empty(max(2 * max(max_nodes, max_edges * max(edge_data.shape[1], 1)),
                               p if soft else 0), dtype=np.int64)
        q_vals = np.empty(q_index.shape[0])
        work = np.empty(oracle_work_size(kind, max_T, C))
        # scratch of the line searches of examples without a stored Gram matrix (large graphs;
        # the other kinds' passes are pruned of them, and compile none of their kernels)
        direct = 0
        if structure_kind == GRAPH:
            for j in range(n):
                if gram_off[j + 1] - gram_off[j] < (tok_off[j + 1] - tok_off[j]) ** 2:
                    direct = 1
        V_direct = np.zeros((direct * W.shape[0], C))
        Vq_direct = np.zeros(direct * p)
        averaging = VM.shape[0] > 0
        bounded = lower_W.shape[0] > 0
        # a pairwise step moves mass between two labelings: its direction has a few non-zeros,
        # and the expected score comes from the atoms, so the step never reads M_i or Q_i densely
        sparse_steps = step_type == PAIRWISE and not averaging and not bounded
        # elastic net: the coordinates a step moves, gathered for its line search; per non-zero of
        # X_i at most C entries of D (dense) or two (sparse: a chain's two labels, a multiclass
        # pair; others one per column), then those of dq
        max_nnz = 0
        if soft:
            for j in range(n):
                max_nnz = max(max_nnz, indptr[tok_off[j + 1]] - indptr[tok_off[j]])
        n_touch = max_nnz * max(C, 2) + q_index.shape[0] if soft else 0
        slot = np.full(W.shape[0] * C + p if soft else 0, -1, dtype=np.int32)
        touched_row = np.empty(n_touch, dtype=np.int64)
        touched_col = np.empty(n_touch, dtype=np.int64)
        base = np.empty(n_touch)
        direction = np.empty(n_touch)
        breaks = np.empty(2 * n_touch)
        owner = np.empty(2 * n_touch, dtype=np.int64)
        weights = np.empty(n)
        n_unvisited = 0
        for j in range(n):
            if np.isinf(gap_estimates[j]):
                n_unvisited += 1
                weights[j] = 0.0
            else:
                weights[j] = max(gap_estimates[j], 0.0)
        tree = sum_tree(weights)
        keep_atoms = step_type != FW or bool(use_cache)
        n_hits = 0
        n_first = first_blocks.shape[0]
        large_weights = W.shape[0] * W.shape[1] > LARGE_WEIGHTS
        drawn = -1  # the next step's gap-sampling draw, made ahead to prefetch its block
        pooled = pass_counts.shape[0] > 0
        quota = 0  # draws taken from pass_counts and not yet made
        for b in range(start, n_steps):
            if n_unvisited == 0 and sum_tree_total(tree) <= exit_below:
                _give_back(pass_counts, pooled, quota)
                return b, False, n_hits
            if pooled and read_count(pass_counts, WAITING) > 0:  # the store grows: stop
                _give_back(pass_counts, pooled, quota)
                return b, True, n_hits
            if b < n_first:
                i = first_blocks[b]
            elif gap_sampling and sum_tree_total(tree) > 0.0:
                if pooled:
                    if quota == 0:
                        quota = _take_draws(pass_counts, DRAWS_TAKEN)
                        if quota == 0:  # the others make the rest
                            return b, False, n_hits
                    quota -= 1
                i = drawn if drawn >= 0 else sum_tree_sample(tree, uniforms[b])
            else:
                _give_back(pass_counts, pooled, quota)
                return b, False, n_hits
            drawn = -1
            if b + 2 < n_first:
                _prefetch_block(first_blocks[b + 2], packed, gram, gram_off, dual, store,
                                not sparse_steps)
            if large_weights and b + 1 < n_first:
                j = first_blocks[b + 1]
                prefetch_rows(indices, indptr[tok_off[j]], indptr[tok_off[j + 1]], Wc)
            t0 = tok_off[i]
            T = tok_off[i + 1] - t0
            n0 = node_off[i]
            n1 = node_off[i + 1]
            nb = block_n[i]  # n, or n / w_i with sample weights: the block's share is 1 / nb
            lam_n = lam * nb
            U = U_buf[:T]
            D = D_buf[:T]
            unary_scores_into(indptr, indices, data, t0, t0 + T, Wc, U)
            yi = y[n0:n1]
            ys = y_buf[:n1 - n0]
            losses = tok_loss[t0:t0 + T]
            graph = example_graph(packed, i)
            # expected value of H_i under alpha_i, minus the loss part: <U, M_i> + <theta, Q_i>,
            # which is also sum_k alpha_k score(y_k) over the atoms
            expected = 0.0 if sparse_steps else expected_score(U, theta_c, M, Q, t0, i)
            # the atoms' values H_i(y) = L(y_i, y) + score(y) (cached corners and active set)
            best = -1
            away = NONE
            if keep_atoms:
                for k in range(atom_n[i]):
                    ya = _atom(atom_y, n0, n1, k, ya_buf)
                    score_k = labeling_score(kind, U, theta_c, ya, graph)
                    H_atoms[k] = label_loss(kind, yi, ya, losses) + score_k
                    if sparse_steps:
                        expected += atom_w[i, k] * score_k
                    if best < 0 or H_atoms[k] > H_atoms[best]:
                        best = k
                    if atom_w[i, k] > 0.0 and (away < 0 or H_atoms[k] < H_atoms[away]):
                        away = k
            # cache oracle (spec 002 Alg. 5): the best cached corner, if its gap is large enough
            hit = False
            cached_gap = 0.0
            if keep_atoms and use_cache and best >= 0:
                cached_gap = (H_atoms[best] - expected) / nb - ell_blocks[i]
                hit = (cached_gap > 0.0 and cached_gap >= cache_F * gap_estimates[i]
                       and cached_gap >= cache_min_gap)
            if hit:
                k_star = best
                for t in range(n0, n1):
                    ys[t - n0] = atom_y[t, best]
                H_s = H_atoms[best]
                gap = cached_gap
                n_hits += 1
            else:
                if structure_kind == GRAPH:
                    H_s = graph_oracle(graph_oracles, i, t0, U, theta_c, yi, losses, TRUE, graph,
                                       edge_off[i], FALSE, ys)
                else:
                    H_s = oracle_one_kind(structure_kind, U, theta_c, yi, losses, TRUE, edges,
                                          parent, order, ys, work)
                gap = (H_s - expected) / nb - ell_blocks[i]  # the block's FW gap, eq. (7)
                if np.isinf(gap_estimates[i]):
                    n_unvisited -= 1
                gap_estimates[i] = gap
                sum_tree_update(tree, i, max(gap, 0.0))
                k_star = -1
                if keep_atoms:
                    k_star = _find_atom(atom_y, atom_n, i, n0, n1, ys)
                if keep_atoms and use_cache and k_star < 0:  # every oracle answer enters the cache
                    k_star, away = _insert_atom(atom_y, atom_w, atom_n, H_atoms, i, n0, n1, ys, H_s,
                                                away, step_type == FW)
                    if k_star < 0 and not drop_when_full:
                        _wait_for_room(pass_counts, pooled, quota + (b >= n_first))
                        return b, True, n_hits
            # the sampler is final for this step: draw the next block now (the draw the next step
            # would make) and fetch its data while this step updates
            if (gap_sampling and b + 1 >= n_first and b + 1 < n_steps
                    and sum_tree_total(tree) > 0.0):
                drawn = sum_tree_sample(tree, uniforms[b + 1])
                _prefetch_block(drawn, packed, gram, gram_off, dual, store, not sparse_steps)
            # the step's direction (D, dq, dl), rate of decrease and largest step
            numerator = gap
            gamma_max = 1.0
            pairwise = step_type == PAIRWISE
            away_step = False
            if step_type == AWAY and away >= 0 and away != k_star:
                mean_H = expected + nb * ell_blocks[i]  # sum_y alpha(y) H(y)
                away_gap = (mean_H - H_atoms[away]) / nb
                away_step = atom_w[i, away] < 1.0 and away_gap >= gap  # ties: away (Alg. 4)
                if away_step:
                    numerator = away_gap
                    gamma_max = atom_w[i, away] / (1.0 - atom_w[i, away])
            # a corner that would join a store full of active atoms at its cap waits: the step
            # moves weight from the worst active atom to the best one, line-searched like any
            # pairwise step (forcing a whole atom's weight onto the corner could lower the dual
            # and diverged at small caps); the drops of such steps free the slots
            if (keep_atoms and drop_when_full and k_star < 0 and not away_step
                    and atom_n[i] == cap and _all_active(atom_w, atom_n, i)):
                k_star = best
                for t in range(n0, n1):
                    ys[t - n0] = atom_y[t, best]
                H_s = H_atoms[best]
                pairwise = True
            L_s = label_loss(kind, yi, ys, losses)
            if pairwise:
                if away < 0 or k_star == away:  # the corner is the away atom: nothing to move
                    continue
                numerator = (H_s - H_atoms[away]) / nb
                gamma_max = atom_w[i, away]
            if numerator <= 0.0:
                continue
            n_s = n_q = m = 0
            if keep_atoms and sparse_steps:  # D = S(y*) - S(y_a) as entries
                ya = _atom(atom_y, n0, n1, away, ya_buf)
                n_s, n_q = stats_difference(kind, ys, ya, graph, C, rows, cols, vals, q_index,
                                            q_vals)
                dl = (L_s - label_loss(kind, yi, ya, losses)) / nb
            else:
                ya = ys  # read by away and pairwise steps only
                if away_step or pairwise:
                    ya = _atom(atom_y, n0, n1, away, ya_buf)
                dl = _dense_direction(kind, graph, dual, (i, t0, T, yi, losses, ell_blocks[i], nb),
                                      (ys, L_s, ya, away_step, pairwise), D, dq)
            if soft:  # exact line search on the elastic-net dual, f'(0) = -N
                if not sparse_steps:
                    n_s, n_q = _dense_entries(D, dq, rows, cols, vals, q_index, q_vals)
                m = _gather_direction(packed, t0, (rows, cols, vals, n_s, q_index, q_vals, n_q),
                                      -1.0 / lam_n, W, theta,
                                      (slot, touched_row, touched_col, base, direction))
                gamma = soft_line_search(dl, base, direction, m, kappa, 1.0 / lam, gamma_max,
                                         breaks, owner)
            else:  # exact line search: gamma* = N lambda n^2 / quad, clipped to [0, gamma_max]
                quad = -1.0  # a sum of squares once computed
                if structure_kind == GRAPH:
                    if gram_off[i + 1] - gram_off[i] < T * T:  # no Gram matrix stored
                        if keep_atoms and sparse_steps:
                            quad = direct_entries_quadratic(indptr, indices, data, t0, rows, cols,
                                                            vals, n_s, q_index, q_vals, n_q,
                                                            V_direct, Vq_direct)
                        else:
                            quad = direct_quadratic(indptr, indices, data, t0, T, D, V_direct)
                            for j in range(p):
                                quad += dq[j] * dq[j]
                if quad < 0.0 and keep_atoms and sparse_steps:
                    quad = entries_quadratic(gram, gram_off[i], T, rows, cols, vals, n_s, q_index,
                                             q_vals, n_q)
                elif quad < 0.0:
                    quad = gram_quadratic(gram, gram_off[i], T, D)
                    for j in range(p):
                        quad += dq[j] * dq[j]
                gamma = gamma_max if quad <= 0.0 else min(gamma_max, numerator * lam_n * nb / quad)
            if gamma <= 0.0:
                continue
            if keep_atoms and k_star < 0 and not away_step:  # the corner joins the active set
                k_star, away = _insert_atom(atom_y, atom_w, atom_n, H_atoms, i, n0, n1, ys, H_s,
                                            away, FALSE)
                if k_star < 0:
                    _wait_for_room(pass_counts, pooled, quota + (b >= n_first))
                    return b, True, n_hits
            # the block moves by gamma (D, dq), the weights by -gamma / (lambda n) (X_i^T D (+) dq)
            step = -gamma / lam_n
            if sparse_steps:
                for e in range(n_s):
                    M[t0 + rows[e], cols[e]] += gamma * vals[e]
                for e in range(n_q):
                    Q[i, q_index[e]] += gamma * q_vals[e]
            else:
                for t in range(T):
                    for c in range(C):
                        M[t0 + t, c] += gamma * D[t, c]
                for j in range(p):
                    Q[i, j] += gamma * dq[j]
            if soft:
                _move_gathered(touched_row, touched_col, direction, m, gamma, kappa, W, theta, Wc,
                               theta_c, shared)
            elif sparse_steps:
                for e in range(n_q):
                    add_into(theta, q_index[e], step * q_vals[e], shared)
                add_entries_outer(indptr, indices, data, t0, rows, cols, vals, n_s, step, W,
                                  shared)
            else:
                for j in range(p):
                    add_into(theta, j, step * dq[j], shared)
                add_outer_into(indptr, indices, data, t0, t0 + T, D, step, W, shared)
            if bounded:
                clip_rows(indptr, indices, t0, t0 + T, W, lower_W, upper_W, Wc)
                for j in range(p):
                    theta_c[j] = min(max(theta[j], lower_theta[j]), upper_theta[j])
                if submodular:
                    project_submodular_into(theta, theta_c)
            ell_blocks[i] += gamma * dl
            if averaging:
                k = float(step0 + b + 1)
                weight = (k - 1.0) * k / 2.0 * gamma
                for t in range(T):
                    for c in range(C):
                        VM[t0 + t, c] += weight * D[t, c]
                for j in range(p):
                    VQ[i, j] += weight * dq[j]
                Vell[i] += weight * dl
            if not keep_atoms:
                continue
            # the atoms' weights follow the step (spec 002 §4, §10.3 pitfall 3); atoms whose
            # weight reaches 0 stay as cached corners with a cache, else they are dropped
            if pairwise:
                atom_w[i, k_star] += gamma
                atom_w[i, away] -= gamma
                dropped = away if gamma >= gamma_max else -1
            elif away_step:  # alpha <- (1 + gamma) alpha - gamma e_{y_a}
                for k in range(atom_n[i]):
                    atom_w[i, k] *= 1.0 + gamma
                atom_w[i, away] -= gamma
                dropped = away if gamma >= gamma_max else -1
            else:  # alpha <- (1 - gamma) alpha + gamma e_{y*}; gamma = 1 collapses onto y*
                for k in range(atom_n[i]):
                    atom_w[i, k] = 0.0 if gamma >= 1.0 else atom_w[i, k] * (1.0 - gamma)
                atom_w[i, k_star] = 1.0 if gamma >= 1.0 else atom_w[i, k_star] + gamma
                dropped = NONE
                if gamma >= 1.0 and not use_cache:
                    for t in range(n0, n1):
                        atom_y[t, 0] = ys[t - n0]
                    atom_w[i, 0] = 1.0
                    for k in range(1, atom_n[i]):
                        atom_w[i, k] = 0.0
                    atom_n[i] = 1
            if dropped >= 0:
                atom_w[i, dropped] = 0.0
                if not use_cache:
                    _remove_atom(atom_y, atom_w, atom_n, i, n0, n1, dropped)
        _give_back(pass_counts, pooled, quota)
        return n_steps, False, n_hits

    return bcfw_pass


@njit(cache=True, nogil=True)
def project_submodular_into(theta, out):
    """``out`` = the 2x2 table ``theta`` (row-major) projected onto the submodular cone
    ``t00 + t11 >= t01 + t10``, as ``marginals.project_submodular`` (``BinaryGraphCRF``)."""
    margin = theta[0] - theta[1] - theta[2] + theta[3]
    shift = min(margin, 0.0) / 4.0
    out[0] = theta[0] - shift
    out[1] = theta[1] + shift
    out[2] = theta[2] + shift
    out[3] = theta[3] - shift


def state_from_atoms(packed, atom_y, atom_w, atom_n, M, Q, ell_blocks, block_n):
    """Recompute ``M, Q, ell`` from the atoms, renormalising each block's weights to sum 1
    (``ell_i`` the block's expected loss over ``block_n[i]``, see ``bcfw_pass``).

    Incremental updates drift; solvers call this at every exact check (spec 002 §10.3). Each
    block's rows are its own: the same to the bit on the threads of ``threads.use_threads``.
    """
    run_chunks(_blocks_from_atoms, packed.tok_off.shape[0] - 1, packed, atom_y, atom_w, atom_n,
               M, Q, ell_blocks, block_n)


@njit(cache=True, nogil=True)
def _blocks_from_atoms(packed, atom_y, atom_w, atom_n, M, Q, ell_blocks, block_n, lo, hi):
    """``state_from_atoms`` on blocks ``lo..hi-1``."""
    kind, tok_off, y, node_off, tok_loss = (packed.kind, packed.tok_off, packed.y,
                                            packed.node_off, packed.tok_loss)
    M[tok_off[lo]:tok_off[hi], :] = 0.0
    Q[lo:hi, :] = 0.0
    ya_buf = np.empty(max_length(node_off[lo:hi + 1]), dtype=np.int32)
    for i in range(lo, hi):
        n0 = node_off[i]
        n1 = node_off[i + 1]
        total = 0.0
        for k in range(atom_n[i]):
            total += atom_w[i, k]
        ell = 0.0
        for k in range(atom_n[i]):
            atom_w[i, k] /= total
            ya = _atom(atom_y, n0, n1, k, ya_buf)
            add_stats(kind, ya, atom_w[i, k], M[tok_off[i]:tok_off[i + 1]], Q[i],
                      example_graph(packed, i))
            ell += atom_w[i, k] * label_loss(kind, y[n0:n1], ya,
                                             tok_loss[tok_off[i]:tok_off[i + 1]])
        ell_blocks[i] = ell / block_n[i]
