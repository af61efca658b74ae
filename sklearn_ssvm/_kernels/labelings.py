"""Label-space kernels dispatched on the structure kind.

Every structure of the package has a joint feature map of one shape,

    phi(x, y) = vec(X^T S(y))  (+)  q(y),

where ``X`` is the ``(T, n_features)`` token-feature matrix of the example, ``S(y)`` a ``(T, C)``
matrix of per-token label statistics and ``q(y)`` a vector of ``n_pair`` label-interaction
counts. Scores are then ``<U, S(y)> + <theta, q(y)>`` with ``U = X W`` the unary scores. This
module knows, for each structure kind, ``S``, ``q``, the loss and the (loss-augmented) argmax.
Solvers only ever see these functions, so they never hold dense per-example joint features.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from .chain import viterbi_into, viterbi_work_size
from .tree import tree_max

CHAIN = 0  # tokens x labels, one-hot rows, label transitions
MULTICLASS = 1  # one token, one-hot row (Crammer-Singer)
BINARY = 2  # one token, one column holding y/2 with y in {-1, +1}
MULTILABEL_INDEPENDENT = 3  # one token, row = indicator vector of the labels
MULTILABEL_TREE = 4  # same, plus 2x2 tables on the edges of a tree (exact max-product)
MULTILABEL_FULL = 5  # same, plus 2x2 tables on every pair of labels (exhaustive search)
CANDIDATES = 6  # tokens are candidate outputs, one column: S(y) = e_y; given loss per candidate
GRAPH = 7  # tokens are nodes, one-hot rows; per-edge feature vectors times label-pair indicators

#: the packed examples as the kernels read them, bundled once per problem
#: (``Problem.packed()``): the structure kind and its graph (edges, parent and order of a tree),
#: the tokens' features (CSR), their offsets per example, the encoded labelings and their
#: offsets, per-token losses, and for graphs (``GRAPH``) each example's edges
#: ``edges[edge_off[i]:edge_off[i + 1]]`` with their feature rows ``edge_data`` and the
#: examples' oracles (``graph_oracle.GraphOracles``; ``NO_GRAPH_ORACLES`` for the others)
Packed = namedtuple("Packed", "kind edges parent order indptr indices data tok_off y node_off "
                              "tok_loss edge_off edge_data oracle")

# Flags passed to other kernels as numpy scalars: a literal True or False in a call would
# compile a second specialisation of the callee for that literal.
TRUE = np.bool_(True)
FALSE = np.bool_(False)


@njit(cache=True, nogil=True)
def example_graph(packed, i):
    """``(edges, edge_data)`` of example ``i``: its own rows for graphs (``edge_off`` given),
    else the edges every example shares (multi-label structures; none for the others)."""
    edges, edge_off, edge_data = packed.edges, packed.edge_off, packed.edge_data
    if edge_off.shape[0] == 0:
        return edges[:], edge_data[:]
    return edges[edge_off[i]:edge_off[i + 1]], edge_data[edge_off[i]:edge_off[i + 1]]


@njit(cache=True, nogil=True)
def n_pair_stats(kind, n_codes, n_edges):
    if kind == CHAIN:
        return n_codes * n_codes
    if kind == MULTILABEL_TREE or kind == MULTILABEL_FULL:
        return 4 * n_edges
    return 0


@njit(cache=True, nogil=True)
def add_stats(kind, y, coef, S, q, graph):
    """``S += coef * S(y)`` and ``q += coef * q(y)`` for the labeling ``y`` of one example;
    ``graph`` is its ``(edges, edge_data)`` (:func:`example_graph`)."""
    edges, edge_data = graph
    if kind == CHAIN:
        L = S.shape[1]
        for t in range(y.shape[0]):
            S[t, y[t]] += coef
            if t > 0:
                q[y[t - 1] * L + y[t]] += coef
    elif kind == MULTICLASS:
        S[0, y[0]] += coef
    elif kind == BINARY:
        S[0, 0] += coef * (y[0] - 0.5)
    elif kind == CANDIDATES:
        S[y[0], 0] += coef
    elif kind == GRAPH:
        C = S.shape[1]
        for t in range(y.shape[0]):
            S[t, y[t]] += coef
        for e in range(edges.shape[0]):
            pair = y[edges[e, 0]] * C + y[edges[e, 1]]
            for f in range(edge_data.shape[1]):
                q[f * C * C + pair] += coef * edge_data[e, f]
    else:
        for k in range(y.shape[0]):
            S[0, k] += coef * y[k]
        for e in range(edges.shape[0]):
            q[4 * e + 2 * y[edges[e, 0]] + y[edges[e, 1]]] += coef


@njit(cache=True, nogil=True)
def stats_difference(kind, y_plus, y_minus, graph, n_codes, rows, cols, vals, q_index, q_vals):
    """The non-zeros of ``S(y+) - S(y-)`` and ``q(y+) - q(y-)``, parts that cancel left out.

    Writes entries ``(rows[e], cols[e], vals[e])`` of the statistics difference and
    ``(q_index[e], q_vals[e])`` of the interaction difference; returns their counts. Buffers of
    ``2 * len(y)`` and ``2 * max(len(y), n_edges * n_edge_features)`` entries suffice. Two
    labelings that differ in a few variables give a few entries, which is what makes a pairwise
    step sparse.
    """
    edges, edge_data = graph
    n_s = 0
    n_q = 0
    if kind == CHAIN or kind == GRAPH:
        for t in range(y_plus.shape[0]):
            a = y_plus[t]
            b = y_minus[t]
            if a != b:
                rows[n_s] = t
                cols[n_s] = a
                vals[n_s] = 1.0
                rows[n_s + 1] = t
                cols[n_s + 1] = b
                vals[n_s + 1] = -1.0
                n_s += 2
            if kind == CHAIN and t > 0 and (a != b or y_plus[t - 1] != y_minus[t - 1]):
                q_index[n_q] = y_plus[t - 1] * n_codes + a
                q_vals[n_q] = 1.0
                q_index[n_q + 1] = y_minus[t - 1] * n_codes + b
                q_vals[n_q + 1] = -1.0
                n_q += 2
        if kind == GRAPH:
            block = n_codes * n_codes
            for e in range(edges.shape[0]):
                u = edges[e, 0]
                v = edges[e, 1]
                if y_plus[u] != y_minus[u] or y_plus[v] != y_minus[v]:
                    for f in range(edge_data.shape[1]):
                        q_index[n_q] = f * block + y_plus[u] * n_codes + y_plus[v]
                        q_vals[n_q] = edge_data[e, f]
                        q_index[n_q + 1] = f * block + y_minus[u] * n_codes + y_minus[v]
                        q_vals[n_q + 1] = -edge_data[e, f]
                        n_q += 2
    elif kind == MULTICLASS or kind == CANDIDATES:
        if y_plus[0] != y_minus[0]:
            for e in range(2):
                label = y_plus[0] if e == 0 else y_minus[0]
                rows[e] = 0 if kind == MULTICLASS else label
                cols[e] = label if kind == MULTICLASS else 0
                vals[e] = 1.0 if e == 0 else -1.0
            n_s = 2
    elif kind == BINARY:
        if y_plus[0] != y_minus[0]:
            rows[0] = 0
            cols[0] = 0
            vals[0] = float(y_plus[0] - y_minus[0])  # S(y) = y - 1/2
            n_s = 1
    else:
        for k in range(y_plus.shape[0]):
            if y_plus[k] != y_minus[k]:
                rows[n_s] = 0
                cols[n_s] = k
                vals[n_s] = float(y_plus[k] - y_minus[k])
                n_s += 1
        for e in range(edges.shape[0]):
            u = edges[e, 0]
            v = edges[e, 1]
            if y_plus[u] != y_minus[u] or y_plus[v] != y_minus[v]:
                q_index[n_q] = 4 * e + 2 * y_plus[u] + y_plus[v]
                q_vals[n_q] = 1.0
                q_index[n_q + 1] = 4 * e + 2 * y_minus[u] + y_minus[v]
                q_vals[n_q + 1] = -1.0
                n_q += 2
    return n_s, n_q


@njit(cache=True, nogil=True)
def label_loss(kind, y_true, y, losses):
    """Task loss: for chains the weighted Hamming loss ``sum_t losses[t] [y_t != y_true_t]``
    (``losses``: the example's per-token costs, ``1/T`` each for the normalised Hamming loss),
    for candidate sets the given loss of the candidate (``losses``: the example's per-token
    losses), for multi-label the Hamming loss normalised by the number of labels, else 0-1."""
    if kind == CANDIDATES:
        return losses[y[0]]
    if kind == MULTICLASS or kind == BINARY:
        return 0.0 if y_true[0] == y[0] else 1.0
    if kind == CHAIN or kind == GRAPH:
        total = 0.0
        for t in range(y.shape[0]):
            if y[t] != y_true[t]:
                total += losses[t]
        return total
    wrong = 0
    for t in range(y.shape[0]):
        if y[t] != y_true[t]:
            wrong += 1
    return wrong / y.shape[0]


@njit(cache=True, nogil=True)
def labeling_score(kind, U, theta, y, graph):
    """``<U, S(y)> + <theta, q(y)>`` in O(len(y)), without building ``S(y)``."""
    edges, edge_data = graph
    if kind == CHAIN:
        L = U.shape[1]
        total = U[0, y[0]]
        for t in range(1, y.shape[0]):
            total += U[t, y[t]] + theta[y[t - 1] * L + y[t]]
        return total
    if kind == MULTICLASS:
        return U[0, y[0]]
    if kind == BINARY:
        return U[0, 0] * (y[0] - 0.5)
    if kind == CANDIDATES:
        return U[y[0], 0]
    if kind == GRAPH:
        C = U.shape[1]
        total = 0.0
        for t in range(y.shape[0]):
            total += U[t, y[t]]
        for e in range(edges.shape[0]):
            pair = y[edges[e, 0]] * C + y[edges[e, 1]]
            for f in range(edge_data.shape[1]):
                total += theta[f * C * C + pair] * edge_data[e, f]
        return total
    total = 0.0
    for k in range(y.shape[0]):
        if y[k]:
            total += U[0, k]
    for e in range(edges.shape[0]):
        total += theta[4 * e + 2 * y[edges[e, 0]] + y[edges[e, 1]]]
    return total


@njit(cache=True, nogil=True)
def expected_score(U, theta, M, Q, t0, i):
    """``<U, M_i> + <theta, Q_i>``: the score expected under block ``i``'s dual distribution,
    ``M_i`` being rows ``t0 : t0 + len(U)`` of ``M`` (the label-space dual state)."""
    total = 0.0
    for t in range(U.shape[0]):
        for c in range(U.shape[1]):
            total += U[t, c] * M[t0 + t, c]
    for j in range(theta.shape[0]):
        total += theta[j] * Q[i, j]
    return total


@njit(cache=True, nogil=True)
def oracle_work_size(kind, max_T, n_codes):
    if kind == CHAIN:
        return max_T + viterbi_work_size(max_T, n_codes)
    return 4 * n_codes + 2


@njit(cache=True, nogil=True)
def chain_augment(U, y_true, losses, saved):
    """Loss-augment the unary scores of a chain in place, up to a constant, which it returns.

    ``L(y_true, y) = sum_t c_t - sum_t c_t [y_t = y_true_t]`` with the per-token costs
    ``c = losses``, so lowering each true label's score by ``c_t`` adds ``L - sum_t c_t`` to
    every labeling's score. The originals go to ``saved`` (``T`` floats) so that
    ``chain_restore`` puts them back exactly, not by adding ``c_t`` back.
    """
    total = 0.0
    for t in range(U.shape[0]):
        saved[t] = U[t, y_true[t]]
        U[t, y_true[t]] -= losses[t]
        total += losses[t]
    return total


@njit(cache=True, nogil=True)
def chain_restore(U, y_true, saved):
    """Undo ``chain_augment``."""
    for t in range(U.shape[0]):
        U[t, y_true[t]] = saved[t]


@njit(cache=True, nogil=True)
def tree_pair_into(theta, edges, pair):
    """Edge tables ``pair`` (K, 2, 2) of a label forest for ``tree.py``: edge ``e`` is
    ``(child, parent)`` and ``pair[child, a, b] = theta[4 e + 2 a + b]``; zero for roots."""
    pair[:, :, :] = 0.0
    for e in range(edges.shape[0]):
        v = edges[e, 0]
        for a in range(2):
            for b in range(2):
                pair[v, a, b] = theta[4 * e + 2 * a + b]


@njit(cache=True, nogil=True)
def multilabel_unary(U, y_true, augment, node):
    """Unary table (K, 2) of the binary label variables, loss-augmented if asked."""
    K = U.shape[1]
    for k in range(K):
        node[k, 0] = 0.0
        node[k, 1] = U[0, k]
        if augment:
            node[k, 1 - y_true[k]] += 1.0 / K


def _oracle(kind, U, theta, y_true, losses, augment, edges, parent, order, y_out, work):
    """Best labeling of one example; with ``augment`` the loss-augmented one.

    Returns the value ``<U, S(y)> + <theta, q(y)> (+ loss(y_true, y))`` of the labeling written
    to ``y_out``. ``work`` is a scratch buffer of ``oracle_work_size`` floats, so that hot loops
    do not allocate.
    """
    T = U.shape[0]
    C = U.shape[1]
    if kind == CHAIN:
        trans = theta.reshape((C, C))
        if not augment:
            return viterbi_into(U, trans, y_out, work)
        constant = chain_augment(U, y_true, losses, work[:T])
        value = viterbi_into(U, trans, y_out, work[T:])
        chain_restore(U, y_true, work[:T])
        return value + constant
    if kind == MULTICLASS:
        best = -np.inf
        for c in range(C):
            v = U[0, c]
            if augment and c != y_true[0]:
                v += 1.0
            if v > best:
                best = v
                y_out[0] = c
        return best
    if kind == CANDIDATES:  # exhaustive over the candidates (spec 000 §2.4)
        best = -np.inf
        for t in range(T):
            v = U[t, 0] + (losses[t] if augment else 0.0)
            if v > best:
                best = v
                y_out[0] = t
        return best
    if kind == BINARY:
        best = -np.inf
        for s in range(2):
            v = U[0, 0] * (s - 0.5)
            if augment and s != y_true[0]:
                v += 1.0
            if v > best:
                best = v
                y_out[0] = s
        return best
    K = C
    node = work[: 2 * K].reshape((K, 2))
    multilabel_unary(U, y_true, augment, node)
    if kind == MULTILABEL_INDEPENDENT:
        total = 0.0
        for k in range(K):
            y_out[k] = 1 if node[k, 1] > node[k, 0] else 0
            total += node[k, y_out[k]]
        return total
    if kind == MULTILABEL_TREE:
        pair = np.empty((K, 2, 2))
        tree_pair_into(theta, edges, pair)
        value, y = tree_max(node.copy(), pair, parent, order)
        y_out[:] = y
        return value
    # MULTILABEL_FULL: exhaustive search over the 2**K labelings
    best = -np.inf
    for mask in range(1 << K):
        v = 0.0
        for k in range(K):
            v += node[k, (mask >> k) & 1]
        for e in range(edges.shape[0]):
            a = (mask >> edges[e, 0]) & 1
            b = (mask >> edges[e, 1]) & 1
            v += theta[4 * e + 2 * a + b]
        if v > best:
            best = v
            for k in range(K):
                y_out[k] = (mask >> k) & 1
    return best


oracle = njit(cache=True, nogil=True)(_oracle)
#: the same oracle inlined into kernels compiled for one structure kind (a closure constant):
#: numba then prunes the other kinds' branches, so a chain fit compiles no tree max-product
oracle_one_kind = njit(nogil=True, inline="always")(_oracle)


@njit(cache=True, nogil=True)
def expected_label_loss(kind, y_true, M_i, losses):
    """``E L(y_true, y)`` under a distribution with expected statistics ``M_i = E S(y)``: every
    task loss of the package decomposes over the label variables, so it is linear in ``S(y)``."""
    if kind == CANDIDATES:
        total = 0.0
        for t in range(M_i.shape[0]):
            total += M_i[t, 0] * losses[t]
        return total
    if kind == MULTICLASS:
        return 1.0 - M_i[0, y_true[0]]
    if kind == BINARY:  # S = y - 1/2 with y in {0, 1}
        p_one = M_i[0, 0] + 0.5
        return 1.0 - p_one if y_true[0] == 1 else p_one
    if kind == CHAIN or kind == GRAPH:
        total = 0.0
        for t in range(M_i.shape[0]):
            total += losses[t] * (1.0 - M_i[t, y_true[t]])
        return total
    K = M_i.shape[1]  # multi-label: the indicator's expectation, label by label
    wrong = 0.0
    for k in range(K):
        wrong += 1.0 - M_i[0, k] if y_true[k] == 1 else M_i[0, k]
    return wrong / K
