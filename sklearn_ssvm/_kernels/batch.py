"""Batched kernels over all examples of a packed problem (``nogil``, on ``threads``)."""
import functools

import numpy as np
from numba import njit

from .labelings import (GRAPH, TRUE, add_stats, example_graph, expected_label_loss, expected_score,
                        label_loss, labeling_score, oracle_one_kind, oracle_work_size)
from .graph_oracle import graph_oracle
from .sparse import add_outer_into, unary_scores_into
from .threads import run_chunks


@njit(cache=True, nogil=True)
def max_length(offsets):
    m = 0
    for i in range(offsets.shape[0] - 1):
        m = max(m, offsets[i + 1] - offsets[i])
    return m


def oracle_all(packed, W, theta, augment, M, Q, y_out, values, true_scores, expected_scores):
    """Run the (loss-augmented) oracle on every example at the weights ``(W, theta)``.

    Writes the argmax labelings to ``y_out`` (packed like ``y``) and their values to ``values``.
    With ``augment``, also the score of the true labeling (``true_scores``) and, when the dual
    state ``(M, Q)`` has rows, the expected score ``<U, M_i> + <theta, Q_i>`` under the block's
    dual distribution (``expected_scores``): together they give exact hinge losses and block
    duality gaps in one pass. Runs on ``threads.n_threads()`` threads.
    """
    run_chunks(_oracle_range(int(packed.kind)), packed.tok_off.shape[0] - 1, packed, W, theta,
               augment, M, Q, y_out, values, true_scores, expected_scores)


@functools.lru_cache(maxsize=None)
def _oracle_range(structure_kind):
    """``oracle_all`` on examples ``lo..hi-1``, scratch buffers allocated once, compiled for one
    structure kind (the oracle inlined and pruned to it: see ``labelings.oracle_one_kind``)."""
    @njit(cache=True, nogil=True)
    def oracle_range(packed, W, theta, augment, M, Q, y_out, values, true_scores,
                     expected_scores, lo, hi):
        kind, edges, parent, order, indptr, indices, data, tok_off, y, node_off, tok_loss, \
            edge_off, _, graph_oracles = packed
        C = W.shape[1]
        with_state = M.shape[0] > 0
        max_T = max_length(tok_off[lo:hi + 1])
        U_buf = np.empty((max_T, C))
        work = np.empty(oracle_work_size(kind, max_T, C))
        for i in range(lo, hi):
            t0 = tok_off[i]
            T = tok_off[i + 1] - t0
            U = U_buf[:T]
            unary_scores_into(indptr, indices, data, t0, t0 + T, W, U)
            yi = y[node_off[i]:node_off[i + 1]]
            yo = y_out[node_off[i]:node_off[i + 1]]
            graph = example_graph(packed, i)
            if structure_kind == GRAPH:
                values[i] = graph_oracle(graph_oracles, i, t0, U, theta, yi, tok_loss[t0:t0 + T],
                                         augment, graph, edge_off[i], TRUE, yo)
            else:
                values[i] = oracle_one_kind(structure_kind, U, theta, yi, tok_loss[t0:t0 + T],
                                            augment, edges, parent, order, yo, work)
            if augment:
                true_scores[i] = labeling_score(kind, U, theta, yi, graph)
                if with_state:
                    expected_scores[i] = expected_score(U, theta, M, Q, t0, i)

    return oracle_range


@njit(cache=True, nogil=True)
def best_atom_values(packed, W, theta, atom_y, atom_n, out):
    """``out[i] = max_k H_i(y_k)``, the largest loss-augmented score at ``(W, theta)`` among
    block ``i``'s atoms (columns of ``atom_y``, ``atom_n[i]`` of them; -inf without any)."""
    kind, indptr, indices, data = packed.kind, packed.indptr, packed.indices, packed.data
    tok_off, y, node_off, tok_loss = packed.tok_off, packed.y, packed.node_off, packed.tok_loss
    U_buf = np.empty((max_length(tok_off), W.shape[1]))
    ya = np.empty(max_length(node_off), dtype=np.int32)  # contiguous, as the passes score them
    for i in range(tok_off.shape[0] - 1):
        out[i] = -np.inf
        if atom_n[i] == 0:
            continue
        t0, t1, n0, n1 = tok_off[i], tok_off[i + 1], node_off[i], node_off[i + 1]
        U = U_buf[:t1 - t0]
        unary_scores_into(indptr, indices, data, t0, t1, W, U)
        graph = example_graph(packed, i)
        for k in range(atom_n[i]):
            for t in range(n0, n1):
                ya[t - n0] = atom_y[t, k]
            value = (labeling_score(kind, U, theta, ya[:n1 - n0], graph)
                     + label_loss(kind, y[n0:n1], ya[:n1 - n0], tok_loss[t0:t1]))
            out[i] = max(out[i], value)


@njit(cache=True, nogil=True)
def weights_from_state(packed, M, Q, scale, sample_weight, W, theta):
    """``w = scale * sum_i w_i [phi(x_i, y_i) - E_{alpha_i} phi(x_i, .)]`` from the label-space
    state, ``w_i = sample_weight[i]`` (ones unweighted).

    With ``scale = 1/(lambda n)`` this is ``w(alpha) = A alpha`` (spec 002 eq. (3)); solvers call
    it to resynchronise incrementally updated weights.
    """
    W[:, :] = 0.0
    theta[:] = 0.0
    add_block_weights(packed, M, Q, scale, sample_weight, W, theta, 0, packed.tok_off.shape[0] - 1)


@njit(cache=True, nogil=True)
def add_block_weights(packed, M, Q, scale, sample_weight, W, theta, lo, hi):
    """Add the terms of blocks ``lo..hi-1`` of ``weights_from_state`` into ``(W, theta)``, in
    order of the blocks."""
    kind, indptr, indices, data = packed.kind, packed.indptr, packed.indices, packed.data
    tok_off, y, node_off = packed.tok_off, packed.y, packed.node_off
    C = W.shape[1]
    for i in range(lo, hi):
        t0 = tok_off[i]
        T = tok_off[i + 1] - t0
        D = np.empty((T, C))
        for t in range(T):
            for c in range(C):
                D[t, c] = -M[t0 + t, c]
        dq = -Q[i].copy()
        add_stats(kind, y[node_off[i]:node_off[i + 1]], 1.0, D, dq, example_graph(packed, i))
        s = scale * sample_weight[i]
        add_outer_into(indptr, indices, data, t0, t0 + T, D, s, W, False)
        for j in range(theta.shape[0]):
            theta[j] += s * dq[j]


@njit(cache=True, nogil=True)
def stats_from_labels(packed, y, n_codes, n_pair):
    """Dual state of the vertex ``alpha_i = e_{y_i}`` (``y`` packed like ``packed.y``): rows
    ``S(y_i)`` of ``M``, ``q(y_i)`` of ``Q``."""
    kind, tok_off, node_off = packed.kind, packed.tok_off, packed.node_off
    n = tok_off.shape[0] - 1
    M = np.zeros((tok_off[n], n_codes))
    Q = np.zeros((n, n_pair))
    for i in range(n):
        add_stats(kind, y[node_off[i]:node_off[i + 1]], 1.0, M[tok_off[i]:tok_off[i + 1]], Q[i],
                  example_graph(packed, i))
    return M, Q


@njit(cache=True, nogil=True)
def expected_losses(kind, tok_off, y, node_off, tok_loss, M):
    """``E_{alpha_i} L(y_i, y)`` of every example from the label-space statistics ``M``."""
    n = tok_off.shape[0] - 1
    out = np.empty(n)
    for i in range(n):
        t0, t1 = tok_off[i], tok_off[i + 1]
        out[i] = expected_label_loss(kind, y[node_off[i]:node_off[i + 1]], M[t0:t1],
                                     tok_loss[t0:t1])
    return out
