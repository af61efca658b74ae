"""Chain dynamic programs (Viterbi, top-K Viterbi, forward-backward): one recursion, many semirings.

A chain of length ``T`` over ``L`` labels scores a labeling ``y`` as

    score(y) = sum_t unary[t, y_t] + sum_{t >= 1} trans[y_{t-1}, y_t].

Viterbi, top-K Viterbi and forward-backward are one forward recursion (spec 000, Sec. 2.3)

    alpha_0(s) = unary[0, s]
    alpha_t(s) = unary[t, s]  (x)  (+)_{s'} [ alpha_{t-1}(s')  (x)  trans[s', s] ]

over different semirings; only the semiring "matrix-vector product" ``(+)_{s'}`` differs
(``_matvec_max``, ``_matvec_kbest``, ``_matvec_lse``):

* ``MAX_PLUS`` (Viterbi): ``(+) = max``, one value per state. No backpointers are stored: the
  argmax is recomputed along the decoded path only (``O(T L)`` instead of ``O(T L^2)``
  compare-and-store), which keeps the hot loop a branch-free, vectorisable max.
* ``KBEST`` (top-K Viterbi, Algo. 2): a state holds the sorted list of its K best prefix scores;
  ``(+)`` keeps the K best of the union of the lists with ``(prev_label, rank)`` backpointers
  (pitfall 4: distinct paths need the rank, not only the score). Head and bound pruning
  (``_matvec_kbest``, ``topk_viterbi_into``) leave the results, ties included, those of the
  plain recursion.
* ``LOG_SUM_EXP`` (forward-backward): ``(+)_i z_i = mu log sum_i exp(z_i / mu)``, in score units,
  always max-shifted (pitfall 1). ``_lse_prepare`` tabulates ``exp`` of the (column-shifted)
  potential once, so a step costs ``L`` exponentials and ``L^2`` fused multiply-adds instead of
  ``L^2`` exponentials; a column whose shifted sum would underflow is recomputed exactly.

``chain_recursion`` is the recursion, written once and compiled per semiring (so that a Viterbi
does not compile the K-best merge: a first fit compiles what it runs). The backward messages of
forward-backward in log space are the same forward recursion on the reversed chain with
``trans.T``. The tree kernels (``tree.py``) reuse the same semiring products for their messages.
``forward_backward`` first tries scaled probabilities instead (see its Notes).

Labelings whose score is ``-inf`` (forbidden by a ``-inf`` potential) are infeasible: they get
probability 0 and ``topk_viterbi`` pads instead of listing them. ``viterbi_into`` still returns
a labeling (with score ``-inf``) when every labeling is infeasible.
"""
import numpy as np
from numba import njit

MAX_PLUS = 0  # (max, +), K = 1, values only
KBEST = 1  # K-best (max, +) with (label, rank) backpointers
LOG_SUM_EXP = 2  # (mu-log-sum-exp, +)

# Columns whose shifted exponential sum falls below this are recomputed exactly: the terms
# dropped by underflow (< 1e-308 each) are then < 1e-150 relative, and the edge-marginal scale
# factor exp(g) <= 1 / sum stays far from overflow.
_TINY = 1e-150


# ------------------------------------------------------------------------------------------
# Semiring products over (n_states, K) C tables
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _matvec_max(prev, trans, out):
    """``out[s] = max_{s'} prev[s'] + trans[s', s]`` (K = 1), no backpointers.

    ``s'`` outside and ``s`` inside, so ``trans`` is read row by row and the inner loop is a
    vectorised compare/select. Four rows are folded per sweep of ``out``: a quarter of the
    loads/stores of ``out`` and of the loop set-up (2x faster for L = 26). The max is exact,
    so the order of the rows does not change the result. Inlined into the recursion, so that
    the views of its tables cost no reference counting per step (a quarter of a Viterbi).
    """
    n_in = prev.shape[0]
    n_out = out.shape[0]
    a0 = prev[0, 0]
    for s in range(n_out):
        out[s, 0] = a0 + trans[0, s]
    sp = 1
    while sp + 3 < n_in:
        a = prev[sp, 0]
        b = prev[sp + 1, 0]
        c = prev[sp + 2, 0]
        d = prev[sp + 3, 0]
        for s in range(n_out):
            v = a + trans[sp, s]
            w = b + trans[sp + 1, s]
            x = c + trans[sp + 2, s]
            z = d + trans[sp + 3, s]
            v = w if w > v else v
            x = z if z > x else x
            v = x if x > v else v
            o = out[s, 0]
            out[s, 0] = v if v > o else o
        sp += 4
    while sp < n_in:
        a = prev[sp, 0]
        for s in range(n_out):
            v = a + trans[sp, s]
            o = out[s, 0]
            out[s, 0] = v if v > o else o
        sp += 1


@njit(cache=True, nogil=True, inline="always")
def _argmax_into(prev, trans, s):
    """Lowest ``s'`` maximising ``prev[s'] + trans[s', s]`` (the same float operations as
    ``_matvec_max``, so it finds the very value the forward pass kept). Inlined: its caller
    passes a literal ``0`` first, which would compile a second specialisation."""
    best = 0
    best_val = prev[0, 0] + trans[0, s]
    for sp in range(1, prev.shape[0]):
        v = prev[sp, 0] + trans[sp, s]
        if v > best_val:
            best_val = v
            best = sp
    return best


@njit(cache=True, nogil=True, inline="always")
def _insert_sorted(vals, labs, ranks, K, v, lab, rank):
    """Insert ``v`` into the non-increasing length-``K`` list ``vals`` (the last entry drops).

    Ties keep the earlier entry first (strict ``>``): candidates offered in lexicographic
    ``(lab, rank)`` order come out in a deterministic, lowest-index-first order. Returns False,
    inserting nothing, when ``v`` does not beat the current K-th value.
    """
    if not v > vals[K - 1]:
        return False
    j = K - 1
    while j > 0 and v > vals[j - 1]:
        vals[j] = vals[j - 1]
        labs[j] = labs[j - 1]
        ranks[j] = ranks[j - 1]
        j -= 1
    vals[j] = v
    labs[j] = lab
    ranks[j] = rank
    return True


@njit(cache=True, nogil=True, inline="always")
def _before(v, lab, rank, w, w_lab, w_rank):
    """Whether the entry ``(v, lab, rank)`` precedes ``(w, w_lab, w_rank)``: higher value first,
    ties in lexicographic ``(lab, rank)`` order; ``-inf`` precedes nothing (it never enters)."""
    if v > w:
        return True
    if v < w or v == -np.inf:
        return False
    return lab < w_lab or (lab == w_lab and rank < w_rank)


@njit(cache=True, nogil=True)
def kbest_work_size(n_in, n_out, K):
    """Floats of scratch the K-best product needs for an ``(n_in, n_out)`` potential and lists
    of length ``K``: ``n_out + n_in + max(n_in, n_out)``, and ``2 + K`` more with a bound
    (``_matvec_kbest``); the first part fits in ``lse_work_size(n_in, n_out)``."""
    return n_out + n_in + max(n_in, n_out) + 2 + K


@njit(cache=True, nogil=True, inline="always")
def _matvec_kbest(prev, trans, out, bp_lab, bp_rank, work, bound, idx):
    """K-best (max, +): ``out[s, :]`` = the K best of ``{prev[s', l] + trans[s', s]}``.

    Entries are ordered by value, ties by ``(s', l)``; backpointers go to ``bp_lab[idx],
    bp_rank[idx]`` (3-D tables, indexed in place). Unfilled entries are ``-inf`` / ``-1`` (with
    a bound, a list whose first entry is ``-inf`` is empty and its other entries are left as
    they were: nothing reads them). ``work`` holds ``kbest_work_size(n_in, n_out, K)`` floats.

    Head pruning: each list ``prev[s', :]`` is sorted, so its head ``prev[s', 0] + trans[s', s]``
    precedes all its other entries. The best head of every ``s`` is one max-plus sweep over the
    non-empty lists (Viterbi's product); a state whose best head cannot enter gets an empty
    list at once. For the others, with at most K non-empty lists, the lists are merged in
    ``(s', l)`` order, each until an entry does not enter; with more, a list whose head is not
    among the K best heads contributes nothing, so the K best heads are selected first (offered
    by decreasing ``prev[s', 0]``) and only their lists are merged, in place: the list is
    scanned front to back and each head met is followed by the next entries of its own list
    until one does not enter (they land after their head, so the positions already scanned do
    not move).

    Bound pruning (chains, ``bound.shape[0] > 0``): ``bound[idx, s]`` bounds the score of the
    best completion of label ``s`` at this position, its unary score included (the backward
    max-product). ``tau``, after ``n_out + n_in + max(n_in, n_out)`` floats of ``work``, is a
    lower bound on the K-th best score of the whole chain, set by the caller (the K-th largest
    ``bound[0]``) and raised here to the K-th largest ``entry + bound[idx]`` of the lists made
    (distinct prefixes, each with its best completion, are distinct labelings); ``slack``, next
    to it, covers rounding. An entry whose every completion scores below ``tau - slack`` is not
    among the K best labelings: it is dropped, and so are states with no entry left (at
    ``idx == 1``, where ``prev`` is ``unary[0]``, the predecessors too, by ``bound[0]``). The
    lists kept are the unpruned lists cut after their last useful entry, so ranks, backpointers
    and the final K best are unchanged.
    """
    n_in = prev.shape[0]
    n_out = out.shape[0]
    K = out.shape[1]
    # work: states to fill[n_out] | non-empty lists[n_in] | best heads, then sorted
    # heads[max(n_in, n_out)] | tau, slack, the K best entry + bound (descending). Indexed in
    # place: views of work would cost reference counting at every product.
    CAND = 0
    ORD = n_out
    PV = ORD + n_in
    ST = PV + max(n_in, n_out)
    pruned = bound.shape[0] > 0
    lim = -np.inf
    if pruned:
        lim = work[ST] - work[ST + 1]
        for k in range(K):
            work[ST + 2 + k] = -np.inf
    # empty lists: with a bound only their first entry is written (the others of a state
    # whose first is -inf are never read), and the states kept are filled below
    for s in range(n_out):
        out[s, 0] = -np.inf
    if not pruned:
        for s in range(n_out):
            for k in range(1, K):
                out[s, k] = -np.inf
            for k in range(K):
                bp_lab[idx, s, k] = -1
                bp_rank[idx, s, k] = -1
    # non-empty predecessor lists in increasing s' (branch-free compaction)
    m = 0
    first = pruned and idx == 1
    for sp in range(n_in):
        work[ORD + m] = sp
        ok = prev[sp, 0] > -np.inf
        if first:
            ok = ok and bound[0, sp] >= lim
        m += ok
    # best head of every state (vectorised over s), then the states that can keep an entry
    for s in range(n_out):
        work[PV + s] = -np.inf
    for i in range(m):
        sp = int(work[ORD + i])
        a = prev[sp, 0]
        for s in range(n_out):
            v = a + trans[sp, s]
            h = work[PV + s]
            work[PV + s] = v if v > h else h
    c = 0
    if pruned:
        for s in range(n_out):
            work[CAND + c] = s
            h = work[PV + s]
            # an entry, and one that can complete above lim (NaN, -inf - -inf, is False)
            c += (h > -np.inf) & (h >= lim - bound[idx, s])
    else:
        for s in range(n_out):
            work[CAND + c] = s
            c += work[PV + s] > -np.inf
    if m > K:  # heads by decreasing value, for the selection of the K best heads
        for i in range(m):
            sp = work[ORD + i]
            v = prev[int(sp), 0]
            j = i
            while j > 0 and v > work[PV + j - 1]:
                work[PV + j] = work[PV + j - 1]
                work[ORD + j] = work[ORD + j - 1]
                j -= 1
            work[PV + j] = v
            work[ORD + j] = sp
    for ci in range(c):
        s = int(work[CAND + ci])
        floor = -np.inf  # entries below it are dropped
        b = 0.0
        if pruned:
            b = bound[idx, s]
            floor = lim - b
            for k in range(1, K):
                out[s, k] = -np.inf
            for k in range(K):
                bp_lab[idx, s, k] = -1
                bp_rank[idx, s, k] = -1
        if m <= K:
            # every list, in increasing (s', rank): strict insertion orders ties the same way
            for i in range(m):
                sp = int(work[ORD + i])
                w = trans[sp, s]
                for r in range(K):
                    v = prev[sp, r] + w
                    if v < floor or not v > out[s, K - 1]:
                        break
                    j = K - 1
                    while j > 0 and v > out[s, j - 1]:
                        out[s, j] = out[s, j - 1]
                        bp_lab[idx, s, j] = bp_lab[idx, s, j - 1]
                        bp_rank[idx, s, j] = bp_rank[idx, s, j - 1]
                        j -= 1
                    out[s, j] = v
                    bp_lab[idx, s, j] = sp
                    bp_rank[idx, s, j] = r
        else:
            # the K best heads, offered by decreasing prev[s', 0] (mostly rejected at once)
            for i in range(m):
                sp = int(work[ORD + i])
                v = work[PV + i] + trans[sp, s]
                if v < floor or not _before(v, sp, 0, out[s, K - 1],
                                            bp_lab[idx, s, K - 1], 0):
                    continue
                j = K - 1
                while j > 0 and _before(v, sp, 0, out[s, j - 1], bp_lab[idx, s, j - 1], 0):
                    out[s, j] = out[s, j - 1]
                    bp_lab[idx, s, j] = bp_lab[idx, s, j - 1]
                    j -= 1
                out[s, j] = v
                bp_lab[idx, s, j] = sp
            for k in range(K):
                if bp_lab[idx, s, k] < 0:
                    break
                bp_rank[idx, s, k] = 0
            # the other entries of the selected lists
            for p in range(K - 1):
                if bp_rank[idx, s, p] != 0:
                    if bp_rank[idx, s, p] < 0:
                        break
                    continue
                sp = bp_lab[idx, s, p]
                w = trans[sp, s]
                for r in range(1, K):
                    v = prev[sp, r] + w
                    if v < floor or not _before(v, sp, r, out[s, K - 1], bp_lab[idx, s, K - 1],
                                                bp_rank[idx, s, K - 1]):
                        break
                    j = K - 1
                    while j > 0 and _before(v, sp, r, out[s, j - 1], bp_lab[idx, s, j - 1],
                                            bp_rank[idx, s, j - 1]):
                        out[s, j] = out[s, j - 1]
                        bp_lab[idx, s, j] = bp_lab[idx, s, j - 1]
                        bp_rank[idx, s, j] = bp_rank[idx, s, j - 1]
                        j -= 1
                    out[s, j] = v
                    bp_lab[idx, s, j] = sp
                    bp_rank[idx, s, j] = r
        if pruned:  # offer entry + bound to the K best (values only), for the next tau
            for k in range(K):
                v = out[s, k] + b
                if not v > work[ST + K + 1]:
                    break
                j = K - 1
                while j > 0 and v > work[ST + j + 1]:
                    work[ST + j + 2] = work[ST + j + 1]
                    j -= 1
                work[ST + j + 2] = v
    if pruned and work[ST + K + 1] > work[ST]:
        work[ST] = work[ST + K + 1]


@njit(cache=True, nogil=True)
def lse_work_size(n_in, n_out):
    """Floats of scratch the log-sum-exp product needs for an ``(n_in, n_out)`` potential."""
    return n_in * n_out + 2 * n_out + n_in


@njit(cache=True, nogil=True)
def _lse_parts(work, n_in, n_out):
    """Views of the log-sum-exp scratch: exp table, column shifts, row weights, column sums."""
    m = n_in * n_out
    E = work[:m].reshape((n_in, n_out))
    C = work[m:m + n_out]
    pa = work[m + n_out:m + n_out + n_in]
    acc = work[m + n_out + n_in:m + 2 * n_out + n_in]
    return E, C, pa, acc


@njit(cache=True, nogil=True)
def _lse_prepare(trans, mu, work):
    """Tabulate ``C[s] = max_{s'} trans[s', s]`` and ``E = exp((trans - C) / mu) <= 1``."""
    n_in = trans.shape[0]
    n_out = trans.shape[1]
    E, C, pa, acc = _lse_parts(work, n_in, n_out)
    for s in range(n_out):
        C[s] = trans[0, s]
    for sp in range(1, n_in):
        for s in range(n_out):
            v = trans[sp, s]
            C[s] = v if v > C[s] else C[s]
    inv_mu = 1.0 / mu
    for sp in range(n_in):
        for s in range(n_out):
            c = C[s]
            # exp(-inf) = 0 covers forbidden entries; an all -inf column gets a zero column
            E[sp, s] = np.exp((trans[sp, s] - c) * inv_mu) if c != -np.inf else 0.0


@njit(cache=True, nogil=True)
def _lse_column(prev, trans, s, mu):
    """Exact max-shifted ``mu log sum_{s'} exp((prev[s'] + trans[s', s]) / mu)``."""
    m = -np.inf
    for sp in range(prev.shape[0]):
        v = prev[sp, 0] + trans[sp, s]
        m = v if v > m else m
    if m == -np.inf:
        return -np.inf
    acc = 0.0
    inv_mu = 1.0 / mu
    for sp in range(prev.shape[0]):
        acc += np.exp((prev[sp, 0] + trans[sp, s] - m) * inv_mu)
    return m + mu * np.log(acc)


@njit(cache=True, nogil=True)
def _lse_row_weights(prev, mu, pa):
    """``pa[s'] = exp((prev[s'] - A) / mu)`` with ``A = max prev`` (so ``pa <= 1``); returns A."""
    A = -np.inf
    for sp in range(prev.shape[0]):
        v = prev[sp, 0]
        A = v if v > A else A
    if A == -np.inf:
        return A
    inv_mu = 1.0 / mu
    for sp in range(prev.shape[0]):
        pa[sp] = np.exp((prev[sp, 0] - A) * inv_mu)
    return A


@njit(cache=True, nogil=True)
def _lse_column_sums(pa, E, acc):
    """``acc[s] = sum_{s'} pa[s'] E[s', s]``, row-wise and four rows per sweep (vectorised)."""
    n_in = pa.shape[0]
    n_out = acc.shape[0]
    for s in range(n_out):
        acc[s] = 0.0
    sp = 0
    while sp + 3 < n_in:
        a = pa[sp]
        b = pa[sp + 1]
        c = pa[sp + 2]
        d = pa[sp + 3]
        for s in range(n_out):
            acc[s] += (a * E[sp, s] + b * E[sp + 1, s]) + (c * E[sp + 2, s] + d * E[sp + 3, s])
        sp += 4
    while sp < n_in:
        a = pa[sp]
        for s in range(n_out):
            acc[s] += a * E[sp, s]
        sp += 1


@njit(cache=True, nogil=True)
def _matvec_lse(prev, trans, out, mu, work):
    """``out[s] = mu log sum_{s'} exp((prev[s'] + trans[s', s]) / mu)`` (K = 1).

    With ``A = max prev`` and the tables of ``_lse_prepare``,
    ``out[s] = A + C[s] + mu log sum_{s'} exp((prev[s'] - A) / mu) E[s', s]``: both factors are
    ``<= 1`` (no overflow) and only ``n_in`` exponentials are taken. A column whose sum is below
    ``_TINY`` (heavy underflow, possible for tiny ``mu``) is recomputed by ``_lse_column``.
    """
    n_in = prev.shape[0]
    n_out = out.shape[0]
    E, C, pa, acc = _lse_parts(work, n_in, n_out)
    A = _lse_row_weights(prev, mu, pa)
    if A == -np.inf:
        for s in range(n_out):
            out[s, 0] = -np.inf
        return
    _lse_column_sums(pa, E, acc)
    for s in range(n_out):
        c = C[s]
        if c == -np.inf:
            out[s, 0] = -np.inf
        elif acc[s] >= _TINY:
            out[s, 0] = A + c + mu * np.log(acc[s])
        else:
            out[s, 0] = _lse_column(prev, trans, s, mu)


@njit(cache=True, nogil=True)
def _init_table(values, table):
    """``table[s, :] = [values[s], -inf, ..., -inf]``: one-element lists."""
    for s in range(table.shape[0]):
        table[s, 0] = values[s]
        for k in range(1, table.shape[1]):
            table[s, k] = -np.inf


# ------------------------------------------------------------------------------------------
# The recursion
# ------------------------------------------------------------------------------------------


def chain_recursion(semiring):
    """The chain recursion compiled for one semiring: ``forward(mu, unary, trans, alpha, bp_lab,
    bp_rank, work, bound)`` fills ``alpha`` (T, L, K) in place.

    ``alpha[t, s, :]`` is the semiring sum, over prefixes ``y_0..y_t`` with ``y_t = s``, of their
    scores: the max (``MAX_PLUS``), the sorted K best (``KBEST``, with ``bp_lab[t, s, k],
    bp_rank[t, s, k]`` the ``(y_{t-1}, rank)`` of entry ``k``; ``K = alpha.shape[2]``) or the
    ``mu``-log-sum-exp (``LOG_SUM_EXP``). ``work`` holds ``lse_work_size(L, L)`` floats for
    ``LOG_SUM_EXP`` (the tabulated potential) and ``kbest_work_size(L, L, K)`` for ``KBEST``;
    ``bound`` is ``(T, L)`` or has no rows (see ``_matvec_kbest``).

    The semiring is a constant of the closure (an int, which numba's cache keys on), so numba
    prunes the other semirings' branches: a Viterbi compiles neither the K-best merge nor the
    exponentials. The closure refers to other kernels by global name only: a compiled function
    held in a closure cell would defeat the on-disk cache.
    """
    @njit(cache=True, nogil=True)
    def forward(mu, unary, trans, alpha, bp_lab, bp_rank, work, bound):
        T = unary.shape[0]
        L = unary.shape[1]
        K = alpha.shape[2]
        _init_table(unary[0], alpha[0])
        if semiring == LOG_SUM_EXP and T > 1:
            _lse_prepare(trans, mu, work)
        for t in range(1, T):
            cur = alpha[t]
            if semiring == MAX_PLUS:
                _matvec_max(alpha[t - 1], trans, cur)
            elif semiring == KBEST:
                _matvec_kbest(alpha[t - 1], trans, cur, bp_lab, bp_rank, work, bound, t)
            else:
                _matvec_lse(alpha[t - 1], trans, cur, mu, work)
            # (x) unary[t, s]: adding a constant keeps every list sorted
            if K == 1:
                for s in range(L):
                    cur[s, 0] += unary[t, s]
            else:
                for s in range(L):
                    u = unary[t, s]
                    for k in range(K):
                        cur[s, k] += u

    return forward


_forward_max_plus = chain_recursion(MAX_PLUS)
_forward_kbest = chain_recursion(KBEST)
_forward_lse = chain_recursion(LOG_SUM_EXP)


# ------------------------------------------------------------------------------------------
# Viterbi (MAX_PLUS)
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def viterbi_work_size(T, L):
    """Length of the float64 ``work`` buffer of ``viterbi_into`` for ``T`` positions and ``L``
    labels: ``T * L`` (the forward table)."""
    return T * L


@njit(cache=True, nogil=True)
def viterbi_into(unary, trans, y_out, work):
    """Viterbi decoding (max-product, spec 000 Algo. 1) without allocation, for hot loops.

    ``unary`` (T, L), ``T >= 1``, and ``trans`` (L, L) are float64 C-contiguous; ``trans[a, b]``
    scores the transition ``y_{t-1} = a -> y_t = b``. ``y_out`` (T,), integer, receives the argmax
    labeling; ``work`` is 1-D float64 C-contiguous scratch of at least ``viterbi_work_size(T, L)``
    entries. Returns the maximal score (float; ``-inf`` if every labeling is forbidden, ``y_out``
    then still holds a labeling, the lowest-index one). Ties are broken towards the lowest label
    index: at the last position, then for each predecessor along the path. The forward pass keeps
    values only and the backtrack recomputes the argmax along the path, so no backpointer table
    is written."""
    T = unary.shape[0]
    L = unary.shape[1]
    alpha = work[:T * L].reshape((T, L, 1))
    # MAX_PLUS touches neither backpointers nor work nor bound: empty views, no allocation
    no_bp = work[:0].view(np.int32).reshape((0, 0, 0))
    _forward_max_plus(1.0, unary, trans, alpha, no_bp, no_bp, work, unary[:0])
    last = alpha[T - 1]
    s = 0
    for c in range(1, L):
        if last[c, 0] > last[s, 0]:
            s = c
    score = last[s, 0]
    y_out[T - 1] = s
    for t in range(T - 1, 0, -1):
        s = _argmax_into(alpha[t - 1], trans, s)
        y_out[t - 1] = s
    return score


# ------------------------------------------------------------------------------------------
# Top-K Viterbi (KBEST)
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def topk_viterbi_work_size(T, L, K):
    """Length of the float64 ``work`` buffer of ``topk_viterbi_into`` (``T`` positions, ``L``
    labels, ``K`` labelings): ``2 T L K`` (the K-best lists and their backpointers)
    ``+ 3 T L + L^2`` (the backward max-product) ``+ 3 L + 2 K + 2`` (scratch)."""
    return 2 * T * L * K + 3 * T * L + L * L + kbest_work_size(L, L, K) + K


_EPS = 2.220446049250313e-16


@njit(cache=True, nogil=True)
def topk_viterbi_into(unary, trans, K, scores_out, paths_out, work):
    """Top-K Viterbi without allocation, for hot loops (see ``topk_viterbi``).

    ``unary`` (T, L), ``T >= 1``, and ``trans`` (L, L) are float64 scores; ``K >= 1`` labelings.
    ``scores_out`` (K,) float64 receives the K best scores, non-increasing, ``-inf`` padded;
    ``paths_out`` (K, T), integer, the labelings, rows of ``-1`` as padding; ``work`` is 1-D float64
    C-contiguous scratch of at least ``topk_viterbi_work_size(T, L, K)`` entries. Returns the int
    number of labelings found, ``min(K, number of feasible labelings)``.

    A backward max-product (the Viterbi recursion on the reversed chain) first gives the best
    completion of every (position, label); the K-best recursion then drops the entries that
    cannot be among the K best labelings (``_matvec_kbest``), which on trained models leaves a
    few labels per position. The result is the unpruned one, ties included."""
    if K < 1:
        raise ValueError("K must be >= 1")
    T = unary.shape[0]
    L = unary.shape[1]
    n = T * L * K
    # work: the lists | their backpointers (int32) | bound | the K-best product's scratch |
    # the final backpointers (int32) | the reversed chain (unary, values, trans.T). Few views:
    # each costs reference counting.
    alpha = work[:n].reshape((T, L, K))
    ints = work[n:2 * n].view(np.int32)
    bp_lab = ints[:n].reshape((T, L, K))
    bp_rank = ints[n:].reshape((T, L, K))
    o = 2 * n
    bound = work[o:o + T * L].reshape((T, L))
    o += T * L
    kw = o  # the product's scratch, tau and slack at kw + 3 L, kw + 3 L + 1
    kwork = work[o:o + kbest_work_size(L, L, K)]
    o += kbest_work_size(L, L, K)
    fin = work[o:o + K].view(np.int32)  # final labels, then ranks
    o += K
    if T > 1:
        # bound[t, s]: best score of y_t..y_{T-1} given y_t = s, by the same recursion on the
        # reversed chain with trans.T
        rev = work[o:o + T * L].reshape((T, L))
        beta = work[o + T * L:o + 2 * T * L].reshape((T, L, 1))
        trans_t = work[o + 2 * T * L:o + 2 * T * L + L * L].reshape((L, L))
        # the copies, with the largest finite magnitudes for the slack (per-column maxima for
        # unary, two interleaved maxima for trans: independent chains of compares)
        for s in range(L):
            work[kw + s] = 0.0
        for t in range(T):
            for s in range(L):
                v = unary[T - 1 - t, s]
                rev[t, s] = v
                x = abs(v)
                x = x if x != np.inf else 0.0
                work[kw + s] = x if x > work[kw + s] else work[kw + s]
        umax = 0.0
        for s in range(L):
            umax = max(umax, work[kw + s])
        t0 = 0.0
        t1 = 0.0
        for a in range(L):
            b = 0
            while b + 1 < L:
                v0 = trans[b, a]
                v1 = trans[b + 1, a]
                trans_t[a, b] = v0
                trans_t[a, b + 1] = v1
                x0 = abs(v0)
                x1 = abs(v1)
                x0 = x0 if x0 != np.inf else 0.0
                x1 = x1 if x1 != np.inf else 0.0
                t0 = x0 if x0 > t0 else t0
                t1 = x1 if x1 > t1 else t1
                b += 2
            if b < L:
                v0 = trans[b, a]
                trans_t[a, b] = v0
                x0 = abs(v0)
                x0 = x0 if x0 != np.inf else 0.0
                t0 = x0 if x0 > t0 else t0
        tabs = max(t0, t1)
        _forward_max_plus(1.0, rev, trans_t, beta, bp_lab[:0], bp_lab[:0], kwork,
                       bound[:0])
        for t in range(T):
            for s in range(L):
                bound[t, s] = beta[T - 1 - t, s, 0]
        # tau: the K-th largest best labeling through y_0 (K distinct labelings), kept with
        # the K largest at kw + 3 L + 2...
        st = kw + 3 * L
        for k in range(K):
            work[st + 2 + k] = -np.inf
        for s in range(L):
            v = bound[0, s]
            if v > work[st + K + 1]:
                j = K - 1
                while j > 0 and v > work[st + j + 1]:
                    work[st + j + 2] = work[st + j + 1]
                    j -= 1
                work[st + j + 2] = v
        work[st] = work[st + K + 1]
        # slack: the rounding of sums of at most 2T terms, all below T (umax + tabs) in
        # magnitude, computed in other orders
        work[st + 1] = 16.0 * (T + 1) * _EPS * T * (umax + tabs)
        _forward_kbest(1.0, unary, trans, alpha, bp_lab, bp_rank, kwork, bound)
    else:
        _init_table(unary[0], alpha[0])
    # the final (+) over the last label: the K best of the lists, ties in (label, rank) order
    for k in range(K):
        scores_out[k] = -np.inf
        fin[k] = -1
        fin[K + k] = -1
    for s in range(L):
        for r in range(K):
            v = alpha[T - 1, s, r]
            if not v > scores_out[K - 1]:
                break
            j = K - 1
            while j > 0 and v > scores_out[j - 1]:
                scores_out[j] = scores_out[j - 1]
                fin[j] = fin[j - 1]
                fin[K + j] = fin[K + j - 1]
                j -= 1
            scores_out[j] = v
            fin[j] = s
            fin[K + j] = r
    found = 0
    for k in range(K):
        if scores_out[k] == -np.inf:
            for t in range(T):
                paths_out[k, t] = -1
            continue
        found += 1
        s = fin[k]
        r = fin[K + k]
        paths_out[k, T - 1] = s
        for t in range(T - 1, 0, -1):
            s_prev = bp_lab[t, s, r]
            r = bp_rank[t, s, r]
            s = s_prev
            paths_out[k, t - 1] = s
    return found


@njit(cache=True, nogil=True)
def topk_viterbi(unary, trans, K):
    """The ``K`` best distinct labelings of a chain (top-K Viterbi, spec 000 Algo. 2).

    ``unary``, ``trans``, ``K`` as in ``topk_viterbi_into`` (``unary`` and ``trans``
    C-contiguous). Returns ``(scores, paths)``: ``scores`` (K,) float64, non-increasing, ``-inf``
    beyond the number of feasible labelings (``L**T``, less those scored ``-inf``); ``paths``
    (K, T) int32, pairwise distinct, ``paths[k]`` scoring ``scores[k]``, padding rows ``-1``.

    Memory ``O(T L K)``. Time: one Viterbi pass plus ``O(T L^2 + T L K^2)`` at worst, and on
    trained models close to ``O(T L)`` for the K-best part, as entries that cannot be among
    the K best labelings are dropped (``topk_viterbi_into``). Ties are broken
    lexicographically on ``(previous label, rank)``. ``topk_viterbi_into`` is the same without
    allocation."""
    if K < 1:
        raise ValueError("K must be >= 1")
    T = unary.shape[0]
    L = unary.shape[1]
    scores = np.empty(K)
    paths = np.empty((K, T), dtype=np.int32)
    work = np.empty(topk_viterbi_work_size(T, L, K))
    topk_viterbi_into(unary, trans, K, scores, paths, work)
    return scores, paths


# ------------------------------------------------------------------------------------------
# Forward-backward (LOG_SUM_EXP)
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _lse_forward(unary, trans, mu, alpha, work):
    """The chain recursion in the log-sum-exp semiring, which keeps no backpointers."""
    no_bp = work[:0].view(np.int32).reshape((0, 0, 0))
    _forward_lse(mu, unary, trans, alpha, no_bp, no_bp, work, unary[:0])


# Below this scaled-probability forward-backward takes over from the log-space one: with
# every step's finite scores within _SCALED_RANGE * mu of each other, each state's share of a
# normalised message stays above exp(-_SCALED_RANGE) / L^2 (an ancestor of share >= 1 / L
# reaches it at a factor >= exp(-range / mu)), far from denormal numbers, so no share is lost.
_SCALED_RANGE = 600.0


@njit(cache=True, nogil=True)
def _vecmat_into(v, A, out):
    """``out = v A``, row by row (the inner loop runs along ``A``'s rows: vectorised)."""
    for b in range(out.shape[0]):
        out[b] = 0.0
    for a in range(v.shape[0]):
        w = v[a]
        for b in range(out.shape[0]):
            out[b] += w * A[a, b]


@njit(cache=True, nogil=True)
def _scaled_forward_backward(unary, trans, mu, node, edge, pair):
    """Forward-backward on probabilities normalised at every step (Rabiner's scaling): ``T L``
    exponentials and ``T`` logarithms in all, instead of log-space sums at every state.

    Fills ``node`` (``T, L``) and, unless it has no rows, ``edge`` (``T - 1, L, L``) as
    ``forward_backward`` returns them, adds the edge marginals summed over positions to
    ``pair`` (``L, L``) and returns the value; or returns NaN, the arrays untouched, where a
    ``-inf`` transition or a step's score range beyond ``_SCALED_RANGE * mu`` could lose a
    state's share to underflow (the log-space recursion is exact there). ``-inf`` unary scores
    are exact zeros here.
    """
    T = unary.shape[0]
    L = unary.shape[1]
    inv_mu = 1.0 / mu
    # E[a, b] = exp((trans[a, b] - C[b]) / mu) <= 1, column-shifted; ET its transpose
    C = np.empty(L)
    for b in range(L):
        C[b] = trans[0, b]
    lo = np.inf
    for a in range(L):
        for b in range(L):
            v = trans[a, b]
            lo = v if v < lo else lo
            C[b] = v if v > C[b] else C[b]
    hi = -np.inf
    for b in range(L):
        hi = C[b] if C[b] > hi else hi
    spread = hi - lo
    if not spread < np.inf:  # a -inf (or NaN) transition
        return np.nan
    E = np.empty((L, L))
    ET = np.empty((L, L))
    for a in range(L):
        for b in range(L):
            e = np.exp((trans[a, b] - C[b]) * inv_mu)
            E[a, b] = e
            ET[b, a] = e
    # forward: share[t] = alpha_t / its sum, P[t, b] = exp((unary[t, b] + C[b] - m_t) / mu)
    P = np.empty((T, L))
    share = np.empty((T, L))
    value = 0.0
    for t in range(T):
        g = P[t]  # the step's shifted scores, then their exponentials
        m = -np.inf
        low = np.inf
        for b in range(L):
            v = unary[t, b] + (C[b] if t > 0 else 0.0)
            g[b] = v
            m = v if v > m else m
            if v > -np.inf:
                low = v if v < low else low
        if m == -np.inf:  # every label forbidden at t: no labeling
            return -np.inf
        if not (m - low + spread) * inv_mu <= _SCALED_RANGE:
            return np.nan
        for b in range(L):
            g[b] = np.exp((g[b] - m) * inv_mu)
        s = share[t]
        if t == 0:
            for b in range(L):
                s[b] = g[b]
        else:
            _vecmat_into(share[t - 1], E, s)
            for b in range(L):
                s[b] *= g[b]
        z = 0.0
        for b in range(L):
            z += s[b]
        inv_z = 1.0 / z
        for b in range(L):
            s[b] *= inv_z
        value += m + mu * np.log(z)
    # backward: rest[b] ~ beta_{t+1}(b) P[t + 1, b] (any scale), each step's edge table
    # normalised to sum 1, node marginals its row sums (the last row: its column sums)
    back = np.ones(L)
    rest = np.empty(L)
    outer = np.zeros((L, L))  # sum_t share_t(a) rest_t(b) / norm_t: pair = E * outer
    for b in range(L):
        node[T - 1, b] = share[T - 1, b] if T == 1 else 0.0
    for t in range(T - 2, -1, -1):
        for b in range(L):
            rest[b] = back[b] * P[t + 1, b]
        _vecmat_into(rest, ET, back)
        s = share[t]
        norm = 0.0
        top = 0.0
        for a in range(L):
            norm += s[a] * back[a]
            top = back[a] if back[a] > top else top
        inv_norm = 1.0 / norm
        for a in range(L):
            f = s[a] * inv_norm
            node[t, a] = f * back[a]
            if f == 0.0:  # a forbidden label
                continue
            for b in range(L):
                outer[a, b] += f * rest[b]
            if edge.shape[0]:
                for b in range(L):
                    edge[t, a, b] = f * E[a, b] * rest[b]
            if t == T - 2:  # the last node's marginals: the last table's column sums
                for b in range(L):
                    node[T - 1, b] += f * E[a, b] * rest[b]
        inv_top = 1.0 / top
        for a in range(L):
            back[a] *= inv_top
    for a in range(L):
        for b in range(L):
            pair[a, b] += E[a, b] * outer[a, b]
    return value


@njit(cache=True, nogil=True)
def _log_forward_backward(unary, trans, mu, node, edge):
    """``forward_backward`` in log space, exact where scaled probabilities would underflow."""
    T = unary.shape[0]
    L = unary.shape[1]
    node[:, :] = 0.0
    alpha = np.empty((T, L, 1))
    fwork = np.empty(lse_work_size(L, L))
    _lse_forward(unary, trans, mu, alpha, fwork)
    # value = (+)_s alpha[T-1, s]
    m = -np.inf
    for s in range(L):
        m = max(m, alpha[T - 1, s, 0])
    if m == -np.inf:
        return -np.inf, node, edge
    acc = 0.0
    inv_mu = 1.0 / mu
    for s in range(L):
        acc += np.exp((alpha[T - 1, s, 0] - m) * inv_mu)
    value = m + mu * np.log(acc)
    if T == 1:
        for s in range(L):
            if unary[0, s] != -np.inf:
                node[0, s] = np.exp((unary[0, s] - value) * inv_mu)
        return value, node, edge
    # backward messages = the same forward recursion on the reversed chain with trans.T:
    # beta_rev[T-1-t, s] is the log-sum over suffixes y_t..y_{T-1} with y_t = s, unary included
    unary_rev = np.empty((T, L))
    for t in range(T):
        unary_rev[t] = unary[T - 1 - t]
    trans_t = np.ascontiguousarray(trans.T)
    beta_rev = np.empty((T, L, 1))
    bwork = np.empty(lse_work_size(L, L))
    _lse_forward(unary_rev, trans_t, mu, beta_rev, bwork)
    # P(y_t = a, y_{t+1} = b) = exp((alpha_t(a) + trans[a, b] + beta_{t+1}(b) - value) / mu)
    #   = pa[a] E[a, b] exp((A + C[b] + beta_{t+1}(b) - value) / mu), with the forward tables;
    # column b's factor is <= 1 / sum_a pa[a] E[a, b], so it cannot overflow above _TINY
    E, C, pa, colsum = _lse_parts(fwork, L, L)
    scale = np.empty(L)
    for t in range(T - 1):
        b_next = beta_rev[T - 2 - t]
        A = _lse_row_weights(alpha[t], mu, pa)
        _lse_column_sums(pa, E, colsum)
        exact = False
        for b in range(L):
            bn = b_next[b, 0]
            if C[b] == -np.inf or bn == -np.inf:
                scale[b] = 0.0
            elif colsum[b] >= _TINY:
                scale[b] = np.exp((A + C[b] + bn - value) * inv_mu)
            else:
                scale[b] = 0.0
                exact = True
        et = edge[t]
        for a in range(L):
            pa_a = pa[a]
            for b in range(L):
                et[a, b] = pa_a * E[a, b] * scale[b]
        if exact:  # columns left to the exact, guarded formula
            for b in range(L):
                bn = b_next[b, 0]
                if C[b] == -np.inf or bn == -np.inf or colsum[b] >= _TINY:
                    continue
                for a in range(L):
                    v = alpha[t, a, 0] + trans[a, b] + bn
                    et[a, b] = np.exp((v - value) * inv_mu) if v != -np.inf else 0.0
    # node marginals are the edge marginals summed (consistent by construction, no exp)
    for t in range(T - 1):
        for a in range(L):
            acc = 0.0
            for b in range(L):
                acc += edge[t, a, b]
            node[t, a] = acc
    for a in range(L):
        for b in range(L):
            node[T - 1, b] += edge[T - 2, a, b]
    return value, node, edge


@njit(cache=True, nogil=True)
def forward_backward(unary, trans, mu):
    """Log-partition and marginals of the chain Gibbs distribution at temperature ``mu``.

    ``P(y) = exp(score(y) / mu) / Z`` (spec 000 Sec. 2.3). ``unary`` (T, L), ``T >= 1``, and
    ``trans`` (L, L) are float64 C-contiguous; ``-inf`` forbids a label (probability 0) or a
    transition; ``mu > 0``. Returns ``(value, node_marginals, edge_marginals)``: ``value = mu * log
    sum_y exp(score(y) / mu)``, the entropy-smoothed max; ``node_marginals[t, s] = P(y_t = s)``,
    (T, L); ``edge_marginals[t, a, b] = P(y_t = a, y_{t+1} = b)``, (T - 1, L, L).

    Probabilities normalised at every step (``_scaled_forward_backward``: one exponential per
    token and label and one logarithm per token, 2.5 times faster on CoNLL-2000's 22 labels)
    where every step's finite scores lie within ``_SCALED_RANGE * mu`` of each other and no
    transition is ``-inf``, so that no state's share can underflow; log space with max-shifted
    log-sum-exp elsewhere (``_log_forward_backward``). Raw scores are
    never exponentiated, only differences ``<= 0`` (or bounded by the underflow guard). If
    every labeling scores ``-inf``, ``value`` is ``-inf`` and the marginals are all zero."""
    if not mu > 0:
        raise ValueError("mu must be > 0")
    mu = float(mu)
    T = unary.shape[0]
    L = unary.shape[1]
    node = np.zeros((T, L))
    edge = np.zeros((max(T - 1, 0), L, L))
    value = _scaled_forward_backward(unary, trans, mu, node, edge, np.zeros((L, L)))
    if value == value:
        return value, node, edge
    return _log_forward_backward(unary, trans, mu, node, edge)


# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def score_labeling(unary, trans, y):
    """Score ``sum_t unary[t, y_t] + sum_{t >= 1} trans[y_{t-1}, y_t]`` of one labeling ``y``
    (T,) given ``unary`` (T, L) and ``trans`` (L, L)."""
    T = unary.shape[0]
    total = unary[0, y[0]]
    for t in range(1, T):
        total += unary[t, y[t]] + trans[y[t - 1], y[t]]
    return total
