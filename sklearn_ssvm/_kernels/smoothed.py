"""Smoothed structured hinge losses and their gradients, in label space (spec 000 §1.3-2.3).

For an example with true labeling ``y_i``, the loss-augmented scores
``z_y = L(y_i, y) + <U, S(y)> + <theta, q(y)>`` are smoothed by ``h`` and ``f_i = h(z) -
score(y_i)``. The smoothers (``smoothing`` codes) are

* ``ENTROPY``: ``h = mu log sum_y exp(z_y / mu)``, weights ``softmax(z / mu)`` (§1.4), by
  forward-backward on chains and sum-product on label trees (Algo. 3, Algo. 9), by enumeration
  elsewhere;
* ``TOP_K``: ``h_{mu,K}`` of eq. (11), the l2^2 smoother of the K best outputs (top-K Viterbi,
  Algo. 2; top-K max-product, Algo. 8; a partial selection where outputs are enumerated);
* ``L2``: the l2^2 smoother over all outputs (Prop. 3), only where outputs are enumerated;
* ``NONE``: the hard max, i.e. the loss-augmented max oracle.

Values are exact, ``-(mu/2)(||u||^2 - 1)`` included (§6.5 pitfall 6). The gradient of ``f_i`` is
``sum_y u_y phi(x_i, y) - phi(x_i, y_i)`` with ``u`` the smoothing weights (Lemma 7), i.e.
``X_i^T (M_i - S(y_i)) (+) (Q_i - q(y_i))`` with ``M_i = E_u S(y)`` and ``Q_i = E_u q(y)``: the
label-space form of BCFW's dual blocks, so no dense per-example gradient is ever built.
"""
import numpy as np
from numba import njit

from .batch import max_length
from .chain import (_insert_sorted, _log_forward_backward, _scaled_forward_backward,
                    topk_viterbi_into, topk_viterbi_work_size)
from .labelings import (BINARY, CANDIDATES, CHAIN, MULTICLASS, MULTILABEL_FULL, TRUE, add_stats,
                        chain_augment, chain_restore, example_graph, label_loss, labeling_score,
                        multilabel_unary, oracle, oracle_work_size, tree_pair_into)
from .simplex import entropy_smooth_max_into, topk_weights_into
from .sparse import unary_scores_into
from .threads import run_chunks
from .tree import tree_marginals, tree_topk

ENTROPY = 0  # mu log sum exp(z / mu)
TOP_K = 1  # l2^2 smoothing of the K best outputs, eq. (11)
L2 = 2  # l2^2 smoothing of all outputs (Prop. 3): enumerated outputs only
NONE = 3  # hard max (mu ignored)


@njit(cache=True, nogil=True)
def enumerable_outputs(kind):
    """Whether the smoothed oracles of ``kind`` enumerate the outputs (so ``L2`` is available)."""
    return kind == MULTICLASS or kind == BINARY or kind == CANDIDATES or kind == MULTILABEL_FULL


@njit(cache=True, nogil=True)
def _check_smoothing(kind, smoothing):
    if smoothing == L2 and not enumerable_outputs(kind):
        raise ValueError("l2 smoothing over all outputs needs enumerated outputs; use TOP_K")


@njit(cache=True, nogil=True)
def _n_outputs(kind, T, C):
    """``|Y|`` of an enumerable kind: classes, 2, candidates, or the ``2**C`` label subsets."""
    if kind == MULTICLASS:
        return C
    if kind == BINARY:
        return 2
    if kind == CANDIDATES:
        return T
    return 1 << C


@njit(cache=True, nogil=True)
def _output_into(kind, j, y):
    """Write output number ``j`` of an enumerable kind into ``y``, in the order the max oracle
    searches (subset ``j`` holds label ``k`` iff bit ``k`` of ``j`` is set)."""
    if kind == MULTILABEL_FULL:
        for k in range(y.shape[0]):
            y[k] = (j >> k) & 1
    else:
        y[0] = j


@njit(cache=True, nogil=True)
def smoothed_oracle_work_size(kind, max_T, n_codes, K):
    """Floats of ``work`` that ``smoothed_oracle`` needs for examples of at most ``max_T``
    tokens, ``n_codes`` columns of ``S(y)`` and ``K`` best outputs."""
    if kind == CHAIN:
        # saved true-label scores, the K best scores and labelings, top-K weights and scratch,
        # top-K Viterbi's tables
        size = max_T + K + K * max_T + 2 * K + topk_viterbi_work_size(max_T, n_codes, K)
    elif enumerable_outputs(kind):
        size = 3 * (_n_outputs(kind, max_T, n_codes) + K)
    else:
        size = 6 * n_codes + 2 * K  # node and edge tables, top-K weights and scratch
    return max(size, oracle_work_size(kind, max_T, n_codes))


@njit(cache=True, nogil=True)
def _topk_stats(kind, scores, outputs, mu, graph, M_i, Q_i, work):
    """``h_{mu,K}`` of the K best scores (eq. (11)); ``E_u S``, ``E_u q`` added to ``M_i, Q_i``.

    ``outputs[k]`` is the labeling scoring ``scores[k]``. ``-inf`` padding (fewer than K outputs
    exist) gets weight 0 and is skipped, like every labeling outside the projection's support
    (pitfall 2). ``work`` holds ``2 K`` floats.
    """
    K = scores.shape[0]
    weights = work[:K]
    value, _ = topk_weights_into(scores, mu, weights, work[K:2 * K])
    for k in range(K):
        if weights[k] > 0.0:
            add_stats(kind, outputs[k], weights[k], M_i, Q_i, graph)
    return value


@njit(cache=True, nogil=True)
def _chain_smoothed(U, theta, y_true, losses, graph, smoother, M_i, Q_i, work):
    """Entropy (forward-backward, Algo. 3) or top-K (Algo. 2 + eq. (11)) smoothing of a chain."""
    smoothing, K, mu = smoother
    T = U.shape[0]
    C = U.shape[1]
    trans = theta.reshape((C, C))
    constant = chain_augment(U, y_true, losses, work[:T])
    if smoothing == ENTROPY:
        # the scaled recursion writes the statistics in place; where it hands over, log space
        value = _scaled_forward_backward(U, trans, mu, M_i, np.empty((0, C, C)),
                                         Q_i.reshape((C, C)))
        if value != value:  # straight to log space: the scaled attempt would only repeat
            value, _, edge = _log_forward_backward(U, trans, mu, M_i,
                                                   np.zeros((max(T - 1, 0), C, C)))
            for t in range(T - 1):
                for a in range(C):
                    for b in range(C):
                        Q_i[a * C + b] += edge[t, a, b]
    else:
        scores = work[T:T + K]
        paths = work[T + K:T + K + K * T].view(np.int64).reshape((K, T))
        rest = work[T + K + K * T:]
        topk_viterbi_into(U, trans, K, scores, paths, rest[2 * K:])
        value = _topk_stats(CHAIN, scores, paths, mu, graph, M_i, Q_i, rest)
    chain_restore(U, y_true, work[:T])
    return value + constant  # the constant part of the loss (chain_augment)


@njit(cache=True, nogil=True)
def _tree_smoothed(kind, U, theta, y_true, graph, parent, order, smoother, M_i, Q_i, work):
    """Entropy (sum-product, Algo. 9) or top-K (Algo. 8 + eq. (11)) smoothing of a label forest
    (independent labels: a forest without edges)."""
    smoothing, K, mu = smoother
    edges = graph[0]
    C = U.shape[1]
    node = work[:2 * C].reshape((C, 2))
    pair = work[2 * C:6 * C].reshape((C, 2, 2))
    multilabel_unary(U, y_true, TRUE, node)
    tree_pair_into(theta, edges, pair)
    if smoothing != ENTROPY:
        scores, outputs = tree_topk(node, pair, parent, order, K)
        return _topk_stats(kind, scores, outputs, mu, graph, M_i, Q_i, work[6 * C:])
    value, node_marg, edge_marg = tree_marginals(node, pair, parent, order, mu)
    for k in range(C):
        M_i[0, k] = node_marg[k, 1]
    for e in range(edges.shape[0]):
        v = edges[e, 0]
        for a in range(2):
            for b in range(2):
                Q_i[4 * e + 2 * a + b] = edge_marg[v, a, b]
    return value


@njit(cache=True, nogil=True)
def _enumerated_smoothed(kind, U, theta, y_true, losses, graph, smoother, M_i, Q_i, work):
    """Entropy, l2^2 or top-K smoothing of the scores of all outputs, enumerated."""
    smoothing, K, mu = smoother
    n = _n_outputs(kind, U.shape[0], U.shape[1])
    z = work[:n]
    y = np.empty_like(y_true)
    for j in range(n):
        _output_into(kind, j, y)
        z[j] = label_loss(kind, y_true, y, losses) + labeling_score(kind, U, theta, y, graph)
    if smoothing == TOP_K:
        # partial selection of the K best into a sorted list, ties to the lowest index
        k_best = min(K, n)
        scores = work[n:n + k_best]
        index = np.empty(k_best, dtype=np.int64)
        rank = np.empty(k_best, dtype=np.int64)  # unused by a selection from a single list
        scores[:] = -np.inf
        for j in range(n):
            _insert_sorted(scores, index, rank, k_best, z[j], j, 0)
        outputs = np.empty((k_best, y.shape[0]), dtype=y.dtype)
        for k in range(k_best):
            _output_into(kind, index[k], outputs[k])
        return _topk_stats(kind, scores, outputs, mu, graph, M_i, Q_i, work[n + k_best:])
    u = work[n:2 * n]
    if smoothing == ENTROPY:
        value = entropy_smooth_max_into(z, mu, u)
    else:
        value, _ = topk_weights_into(z, mu, u, work[2 * n:3 * n])
    for j in range(n):
        if u[j] > 0.0:
            _output_into(kind, j, y)
            add_stats(kind, y, u[j], M_i, Q_i, graph)
    return value


@njit(cache=True, nogil=True)
def smoothed_oracle(kind, U, theta, y_true, losses, graph, parent, order, smoother, M_i, Q_i,
                    work):
    """Smoothed max of the loss-augmented scores of one example and its expected statistics.

    ``kind`` (int) is the structure kind (``labelings``); ``U`` (T, C) float64 the unary scores
    ``X W`` of the example, modified during the call and restored exactly; ``theta`` (n_pair,)
    float64 the interaction weights; ``y_true`` (int array) the true labeling (packed codes);
    ``losses`` (T,) float64 the per-candidate losses (candidate sets; ignored otherwise);
    ``graph`` the example's ``(edges, edge_data)`` (``labelings.example_graph``), the label graph
    of the multi-label kinds; ``parent``, ``order`` (int64) the forest of ``tree.py``
    (multi-label trees). ``smoother = (smoothing, K, mu)``: ``smoothing`` is ``ENTROPY``,
    ``TOP_K``, ``L2`` (enumerable kinds only) or ``NONE``; ``K >= 1`` the number of best outputs
    for ``TOP_K``; ``mu >= 0`` the smoothing parameter (``mu == 0``, and ``TOP_K`` with ``K == 1``,
    ``h_{mu,1} = max``, §1.6, is the hard max, i.e. the max oracle). ``M_i`` (T, C) and ``Q_i``
    (n_pair,) float64 are overwritten with ``E_u S(y)`` and ``E_u q(y)``; ``work`` float64 scratch
    of ``smoothed_oracle_work_size(kind, T, C, K)`` floats or more.

    Returns the float ``h(z)`` with ``z_y = L(y_true, y) + <U, S(y)> + <theta, q(y)>`` (the gold
    score is not subtracted): ``mu log sum exp(z / mu)`` (``ENTROPY``), ``h_{mu,K}(z)`` of eq. (11)
    (``TOP_K``), ``h_{mu l2^2}(z)`` of Prop. 3 (``L2``) or ``max z`` (``NONE``). The weights ``u``
    of ``M_i``, ``Q_i`` are the gradient ``nabla h(z)`` (Lemma 7), a one-hot at the max oracle's
    argmax for the hard max. Raises ValueError for ``L2`` on a kind whose outputs are not
    enumerated."""
    smoothing, K, mu = smoother
    M_i[:, :] = 0.0
    Q_i[:] = 0.0
    _check_smoothing(kind, smoothing)
    if smoothing == NONE or mu == 0.0 or (smoothing == TOP_K and K == 1):
        y_out = np.empty_like(y_true)
        value = oracle(kind, U, theta, y_true, losses, TRUE, graph[0], parent, order, y_out,
                       work)
        add_stats(kind, y_out, 1.0, M_i, Q_i, graph)
        return value
    if kind == CHAIN:
        return _chain_smoothed(U, theta, y_true, losses, graph, smoother, M_i, Q_i, work)
    if enumerable_outputs(kind):
        return _enumerated_smoothed(kind, U, theta, y_true, losses, graph, smoother, M_i, Q_i,
                                    work)
    return _tree_smoothed(kind, U, theta, y_true, graph, parent, order, smoother, M_i, Q_i,
                          work)


def smoothed_losses(packed, W, theta, smoothing, K, mu, values, M, Q):
    """Smoothed hinge ``f_i = h(z_i) - score(y_i) >= 0`` of every example and its label-space
    gradient statistics.

    Runs ``smoothed_oracle`` on every example at the weights ``(W, theta)`` (the arguments are
    those of ``batch.oracle_all``, the smoothing ones those of ``smoothed_oracle``). Writes
    ``f_i`` to ``values[i]``, ``E_u S(y)`` to rows ``tok_off[i]:tok_off[i + 1]`` of ``M`` and
    ``E_u q(y)`` to ``Q[i]``: the gradient of ``f_i`` is
    ``X_i^T (M_i - S(y_i)) (+) (Q_i - q(y_i))`` (Lemma 7, eq. (11)). Runs on
    ``threads.n_threads()`` threads.
    """
    _check_smoothing(packed.kind, smoothing)  # before the threads start
    run_chunks(_smoothed_range, packed.tok_off.shape[0] - 1, packed, W, theta, smoothing, K, mu,
               values, M, Q)


@njit(cache=True, nogil=True)
def _smoothed_range(packed, W, theta, smoothing, K, mu, values, M, Q, lo, hi):
    """``smoothed_losses`` on examples ``lo..hi-1``, scratch buffers allocated once."""
    kind, _, parent, order, indptr, indices, data, tok_off, y, node_off, tok_loss, _, _, _ = \
        packed
    C = W.shape[1]
    max_T = max_length(tok_off[lo:hi + 1])
    U_buf = np.empty((max_T, C))
    work = np.empty(smoothed_oracle_work_size(kind, max_T, C, K))
    for i in range(lo, hi):
        t0 = tok_off[i]
        T = tok_off[i + 1] - t0
        U = U_buf[:T]
        unary_scores_into(indptr, indices, data, t0, t0 + T, W, U)
        yi = y[node_off[i]:node_off[i + 1]]
        graph = example_graph(packed, i)
        h = smoothed_oracle(kind, U, theta, yi, tok_loss[t0:t0 + T], graph, parent, order,
                            (smoothing, K, mu), M[t0:t0 + T], Q[i], work)
        values[i] = h - labeling_score(kind, U, theta, yi, graph)
