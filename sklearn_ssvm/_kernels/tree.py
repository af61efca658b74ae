"""Tree and forest dynamic programs (max-product, top-K max-product, sum-product), generic.

A forest over ``p`` nodes, each with ``S`` states, is given by ``parent`` (``-1`` for a root)
and ``order``, a topological order (every parent before its children, see ``tree_order``).
A labeling scores

    score(y) = sum_v unary[v, y_v] + sum_{v non-root} pair[v, y_v, y_parent(v)].

The upward pass (spec 000 Algos. 7, 8, 9) is written once over the semirings of ``chain.py``
(``tree_recursion``, compiled per semiring):
visiting nodes children-first, each node ``v`` holds a table ``belief[v]`` (S, K) =
``unary[v] (x) (x)_{children c} msg[c]``; its message to the parent is the semiring product
``msg[v][b] = (+)_a belief[v][a] (x) pair[v, a, b]`` (the very products the chain recursion
uses), and ``(x)``-merging a message into the parent's table keeps K entries
(pairwise merge of two sorted K-lists for K-best), so several children never blow up to
``K^children`` candidates. The roots of a forest send their messages, through an all-zero
potential, to a virtual one-state node whose table is the answer: the forest is one tree.

Backtracking for K-best follows ``(state, rank)`` backpointers of the messages and ``(rank before
the merge, rank in the message)`` backpointers of the merges. Sum-product adds a downward
(outside) pass.
"""
import numpy as np
from numba import njit

from .chain import (KBEST, LOG_SUM_EXP, MAX_PLUS, _init_table, _insert_sorted, _lse_prepare,
                    _matvec_kbest, _matvec_lse, _matvec_max, lse_work_size)


@njit(cache=True, nogil=True)
def tree_order(parent):
    """A topological order of a forest: every parent comes before its children.

    ``parent`` (p,), integer: ``parent[v]`` is the parent of node ``v``, ``-1`` for a root.
    Returns ``order`` (p,) int64, roots first, then breadth-first. Raises ValueError if
    ``parent`` has an out-of-range entry or a cycle."""
    p = parent.shape[0]
    n_children = np.zeros(p + 1, dtype=np.int64)
    for v in range(p):
        q = parent[v]
        if q < -1 or q >= p:
            raise ValueError("parent entries must be -1 or a node index")
        n_children[q + 1] += 1  # slot 0 collects the roots
    # children lists in CSR form, slot 0 = roots
    start = np.zeros(p + 2, dtype=np.int64)
    for i in range(p + 1):
        start[i + 1] = start[i] + n_children[i]
    fill = start[:-1].copy()
    kids = np.empty(p, dtype=np.int64)
    for v in range(p):
        q = parent[v] + 1
        kids[fill[q]] = v
        fill[q] += 1
    order = np.empty(p, dtype=np.int64)
    n = 0
    for j in range(start[0], start[1]):
        order[n] = kids[j]
        n += 1
    head = 0
    while head < n:
        v = order[head]
        head += 1
        for j in range(start[v + 1], start[v + 2]):
            order[n] = kids[j]
            n += 1
    if n != p:
        raise ValueError("parent does not describe a forest (cycle)")
    return order


@njit(cache=True, nogil=True)
def _merge_kbest(acc, msg, bp_prev, bp_msg, tmp_val, tmp_prev, tmp_msg):
    """``acc[s] <- acc[s] (x) msg[s]`` for every state ``s`` in the K-best semiring: the K best
    of ``{acc[s, i] + msg[s, j]}`` are kept (both lists sorted, so the scans stop early) with
    merge backpointers ``bp_prev[s, k], bp_msg[s, k] = (i, j)``."""
    S = acc.shape[0]
    K = acc.shape[1]
    for s in range(S):
        for k in range(K):
            tmp_val[k] = -np.inf
            tmp_prev[k] = -1
            tmp_msg[k] = -1
        for i in range(K):
            a = acc[s, i]
            if not _insert_sorted(tmp_val, tmp_prev, tmp_msg, K, a + msg[s, 0], i, 0):
                break  # (i, 0) is the best pair left for every i' >= i: none can enter
            for j in range(1, K):
                if not _insert_sorted(tmp_val, tmp_prev, tmp_msg, K, a + msg[s, j], i, j):
                    break
        for k in range(K):
            acc[s, k] = tmp_val[k]
            bp_prev[s, k] = tmp_prev[k]
            bp_msg[s, k] = tmp_msg[k]


def tree_recursion(semiring):
    """The upward pass compiled for one semiring (as ``chain.chain_recursion``): ``upward(mu,
    unary, pair, tree, belief, msg, rmsg, vbelief, pointers, root_pointers)``, ``tree`` the
    forest's ``(parent, order)``.

    Fills ``belief`` (p, S, K), the messages ``msg`` (p, S, K) of non-roots to their parents,
    ``rmsg`` (p, 1, K) of roots to the virtual node, and ``vbelief`` (1, K), the virtual node's
    table: the best score(s) (max-plus) or the log-partition (log-sum-exp). For ``KBEST``,
    ``pointers = (msg_lab, msg_rank, mrg_prev, mrg_msg)`` are the message backpointers and the
    merge backpointers, likewise ``root_pointers`` for roots; the other semirings ignore them.
    """
    @njit(cache=True, nogil=True)
    def upward(mu, unary, pair, tree, belief, msg, rmsg, vbelief, pointers, root_pointers):
        parent, order = tree
        msg_lab, msg_rank, mrg_prev, mrg_msg = pointers
        rmsg_lab, rmsg_rank, rmrg_prev, rmrg_msg = root_pointers
        p = unary.shape[0]
        S = unary.shape[1]
        K = belief.shape[2]
        for v in range(p):
            _init_table(unary[v], belief[v])
        for k in range(K):
            vbelief[0, k] = 0.0 if k == 0 else -np.inf
        zero_col = np.zeros((S, 1))  # roots reach the virtual node through a zero potential
        no_bound = zero_col[:0]
        work = np.empty(lse_work_size(S, S))
        tmp_val = np.empty(K)
        tmp_prev = np.empty(K, dtype=np.int32)
        tmp_msg = np.empty(K, dtype=np.int32)
        # reverse topological order: all children of v are merged into belief[v] before v
        # sends; the children of a node are merged in decreasing position in ``order``
        for i in range(p - 1, -1, -1):
            v = order[i]
            q = parent[v]
            root = q < 0
            trans = zero_col if root else pair[v]
            out = rmsg[v] if root else msg[v]
            out_lab = rmsg_lab if root else msg_lab
            out_rank = rmsg_rank if root else msg_rank
            into = vbelief if root else belief[q]
            if semiring == MAX_PLUS:
                _matvec_max(belief[v], trans, out)
            elif semiring == KBEST:
                _matvec_kbest(belief[v], trans, out, out_lab, out_rank, work, no_bound, v)
            else:
                _lse_prepare(trans, mu, work)
                _matvec_lse(belief[v], trans, out, mu, work)
            if semiring == KBEST:
                _merge_kbest(into, out, rmrg_prev[v] if root else mrg_prev[v],
                             rmrg_msg[v] if root else mrg_msg[v], tmp_val, tmp_prev, tmp_msg)
            else:  # a root's message to the virtual node has one state, not S
                for s in range(out.shape[0]):
                    into[s, 0] += out[s, 0]

    return upward


_upward_max_plus = tree_recursion(MAX_PLUS)
_upward_kbest = tree_recursion(KBEST)
_upward_lse = tree_recursion(LOG_SUM_EXP)


@njit(cache=True, nogil=True)
def _tree_backtrack(tree, pointers, root_pointers, rank, y_out, cur_rank):
    """Recover the labeling of rank ``rank`` (K-best) into ``y_out`` (the arguments of the
    upward pass, see :func:`tree_recursion`).

    Visiting nodes parents-first meets a node's children in the reverse of their merge order,
    so each child peels the last merge off its parent's current rank.
    """
    parent, order = tree
    msg_lab, msg_rank, mrg_prev, mrg_msg = pointers
    rmsg_lab, rmsg_rank, rmrg_prev, rmrg_msg = root_pointers
    p = parent.shape[0]
    vrank = rank
    for i in range(p):
        v = order[i]
        q = parent[v]
        if q >= 0:
            s = y_out[q]
            r = cur_rank[q]
            km = mrg_msg[v, s, r]
            cur_rank[q] = mrg_prev[v, s, r]
            y_out[v] = msg_lab[v, s, km]
            cur_rank[v] = msg_rank[v, s, km]
        else:
            km = rmrg_msg[v, 0, vrank]
            vrank = rmrg_prev[v, 0, vrank]
            y_out[v] = rmsg_lab[v, 0, km]
            cur_rank[v] = rmsg_rank[v, 0, km]


@njit(cache=True, nogil=True)
def tree_max(unary, pair, parent, order):
    """Maximum-score labeling of a tree or forest (max-product, spec 000 Algo. 7).

    ``unary`` (p, S) float64 C-contiguous node scores; ``pair`` (p, S, S) float64 C-contiguous,
    ``pair[v, a, b]`` scoring ``(y_v = a, y_parent(v) = b)``, ignored for roots; ``parent`` (p,),
    integer, each node's parent, ``-1`` for roots; ``order`` (p,), integer, a topological order
    (parents before children), e.g. ``tree_order(parent)``. Returns ``(score, y)``: ``max_y
    score(y)`` and an argmax, (p,) int32, ties broken deterministically (lowest child state in
    each message)."""
    p = unary.shape[0]
    S = unary.shape[1]
    belief = np.empty((p, S, 1))
    msg = np.empty((p, S, 1))
    rmsg = np.empty((p, 1, 1))
    vbelief = np.empty((1, 1))
    no_bp = np.empty((p, 0, 0), dtype=np.int32)  # max-plus recomputes argmaxes instead
    _upward_max_plus(1.0, unary, pair, (parent, order), belief, msg, rmsg, vbelief,
                     (no_bp, no_bp, no_bp, no_bp), (no_bp, no_bp, no_bp, no_bp))
    # parents first: each node takes the lowest state maximising its belief (children included)
    # plus the potential to its parent's decoded state, i.e. the argmax its message kept
    y = np.empty(p, dtype=np.int32)
    for i in range(p):
        v = order[i]
        q = parent[v]
        best = 0
        best_val = -np.inf
        for a in range(S):
            val = belief[v, a, 0] + (pair[v, a, y[q]] if q >= 0 else 0.0)
            if a == 0 or val > best_val:
                best_val = val
                best = a
        y[v] = best
    return vbelief[0, 0], y


@njit(cache=True, nogil=True)
def tree_topk(unary, pair, parent, order, K):
    """The ``K`` best distinct labelings of a tree or forest (spec 000 Algo. 8).

    ``unary``, ``pair``, ``parent``, ``order`` as in ``tree_max``; ``K >= 1`` labelings. Returns
    ``(scores, labelings)``: ``scores`` (K,) float64, non-increasing, ``-inf`` beyond the number of
    feasible labelings; ``labelings`` (K, p) int32, pairwise distinct, padding rows ``-1``.
    Several children (and several roots) are merged pairwise, keeping K candidates per state
    after each merge: time ``O(p S^2 K + p S K^2)`` in the worst case, memory ``O(p S K)``."""
    if K < 1:
        raise ValueError("K must be >= 1")
    p = unary.shape[0]
    S = unary.shape[1]
    belief = np.empty((p, S, K))
    msg = np.empty((p, S, K))
    pointers = (np.empty((p, S, K), dtype=np.int32), np.empty((p, S, K), dtype=np.int32),
                np.empty((p, S, K), dtype=np.int32), np.empty((p, S, K), dtype=np.int32))
    rmsg = np.empty((p, 1, K))
    root_pointers = (np.empty((p, 1, K), dtype=np.int32), np.empty((p, 1, K), dtype=np.int32),
                     np.empty((p, 1, K), dtype=np.int32), np.empty((p, 1, K), dtype=np.int32))
    vbelief = np.empty((1, K))
    tree = (parent, order)
    _upward_kbest(1.0, unary, pair, tree, belief, msg, rmsg, vbelief, pointers, root_pointers)
    scores = vbelief[0].copy()
    labelings = np.full((K, p), -1, dtype=np.int32)
    cur_rank = np.empty(p, dtype=np.int32)
    for k in range(K):
        if scores[k] == -np.inf:
            break  # infeasible ranks are padding
        _tree_backtrack(tree, pointers, root_pointers, k, labelings[k], cur_rank)
    return scores, labelings


@njit(cache=True, nogil=True)
def tree_marginals(unary, pair, parent, order, mu):
    """Log-partition and marginals of the tree Gibbs distribution at temperature ``mu``.

    ``P(y) = exp(score(y) / mu) / Z``; sum-product (spec 000 Algo. 9) in log space. ``unary``,
    ``pair``, ``parent``, ``order`` as in ``tree_max`` (``-inf`` entries of ``unary`` forbid a
    state, probability 0); ``mu > 0``. Returns ``(value, node_marginals, edge_marginals)``:
    ``mu * log sum_y exp(score(y) / mu)``; ``P(y_v = a)``, (p, S); ``edge_marginals[v, a, b] =
    P(y_v = a, y_parent(v) = b)``, (p, S, S), zero for roots. If every labeling has score
    ``-inf``, ``value`` is ``-inf`` and the marginals are zero."""
    if not mu > 0:
        raise ValueError("mu must be > 0")
    p = unary.shape[0]
    S = unary.shape[1]
    belief = np.empty((p, S, 1))
    msg = np.empty((p, S, 1))
    rmsg = np.empty((p, 1, 1))
    vbelief = np.empty((1, 1))
    no_bp = np.empty((p, 0, 0), dtype=np.int32)  # log-sum-exp keeps no backpointers
    node = np.zeros((p, S))
    edge = np.zeros((p, S, S))
    mu = float(mu)
    _upward_lse(mu, unary, pair, (parent, order), belief, msg, rmsg, vbelief,
                (no_bp, no_bp, no_bp, no_bp), (no_bp, no_bp, no_bp, no_bp))
    value = vbelief[0, 0]
    if value == -np.inf:
        return value, node, edge
    # belief[v] without one child's message, by "subtraction" that survives -inf: keep, per
    # (node, state), the sum of the finite terms and the number of -inf terms
    fin = unary.copy()
    n_inf = np.zeros((p, S), dtype=np.int64)
    for v in range(p):
        for a in range(S):
            if fin[v, a] == -np.inf:
                fin[v, a] = 0.0
                n_inf[v, a] = 1
    for v in range(p):
        q = parent[v]
        if q >= 0:
            for b in range(S):
                m = msg[v, b, 0]
                if m == -np.inf:
                    n_inf[q, b] += 1
                else:
                    fin[q, b] += m
    # downward pass: outside[v, a] = log-sum over the rest of v's component with y_v = a,
    # the same semiring product with the transposed potential
    outside = np.zeros((p, S, 1))
    comp_logz = np.empty(p)  # log-partition of each node's component
    excl = np.empty((S, 1))
    trans_t = np.empty((S, S))
    work = np.empty(lse_work_size(S, S))
    inv_mu = 1.0 / mu
    for i in range(p):
        v = order[i]
        q = parent[v]
        if q < 0:
            comp_logz[v] = rmsg[v, 0, 0]
            continue
        comp_logz[v] = comp_logz[q]
        for b in range(S):
            m = msg[v, b, 0]
            k = n_inf[q, b] - (1 if m == -np.inf else 0)
            rest = -np.inf
            if k == 0:
                rest = fin[q, b] - (0.0 if m == -np.inf else m)
            excl[b, 0] = rest + outside[q, b, 0]
            for a in range(S):
                trans_t[b, a] = pair[v, a, b]
        _lse_prepare(trans_t, mu, work)
        _matvec_lse(excl, trans_t, outside[v], mu, work)
        zc = comp_logz[v]
        for a in range(S):
            ba = belief[v, a, 0]
            if ba == -np.inf:
                continue
            for b in range(S):
                e = ba + pair[v, a, b] + excl[b, 0]
                if e != -np.inf:
                    edge[v, a, b] = np.exp((e - zc) * inv_mu)
    for v in range(p):
        zc = comp_logz[v]
        for a in range(S):
            t = belief[v, a, 0] + outside[v, a, 0]
            if t != -np.inf:
                node[v, a] = np.exp((t - zc) * inv_mu)
    return value, node, edge
