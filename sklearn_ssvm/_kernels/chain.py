"""Chain dynamic programs (Viterbi, top-K Viterbi, forward-backward), one recursion, many semirings.

A chain of length ``T`` over ``L`` labels scores a labeling ``y`` as

    score(y) = sum_t unary[t, y_t] + sum_{t >= 1} trans[y_{t-1}, y_t].

All three inference problems are the same forward recursion (spec 000, Sec. 2.3)

    alpha_0(s)  = unary[0, s]
    alpha_t(s)  = unary[t, s]  (x)  (+)_{s'} [ alpha_{t-1}(s')  (x)  trans[s', s] ]

over different semirings, and only the semiring "matrix-vector product" ``(+)_{s'}`` differs:

* max-plus (Viterbi): ``(+) = max``, one value per state, with an argmax backpointer;
* K-best max-plus (top-K Viterbi): a state holds a sorted list of its ``K`` best prefix scores,
  ``(+)`` keeps the ``K`` best of the union of the lists, with ``(prev_label, rank)`` backpointers
  (spec 000, Algo. 2 and pitfall 4: distinct paths need the rank, not just the score);
* log-sum-exp at temperature ``mu`` (forward-backward): ``(+)_i z_i = mu log sum_i exp(z_i / mu)``,
  computed max-shifted, in score units.

``_chain_forward`` is that recursion, written once; ``_semiring_matvec`` picks the product. The
backward messages of forward-backward are the forward recursion on the reversed chain with
``trans.T``. The tree kernels (``tree.py``) reuse ``_semiring_matvec`` for their messages.

Labelings whose score is ``-inf`` (forbidden by a ``-inf`` potential) are treated as infeasible:
they get probability 0 and are never listed by ``topk_viterbi`` (which pads instead). ``viterbi``
still returns some labeling (with score ``-inf``) if every labeling is infeasible.
"""
import numpy as np
from numba import njit

MAX_PLUS = 0  # max-plus, or K-best max-plus when K > 1
LOG_SUM_EXP = 1  # log-sum-exp at temperature mu


# ------------------------------------------------------------------------------------------
# Semiring products. Tables are (n_states, K) C arrays: row s is the list of the K best scores
# (sorted, non-increasing, -inf padded) for max-plus, or a single log-value for log-sum-exp.
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _matvec_max1(prev, trans, out, bp_lab, bp_rank):
    """``out[s] = max_{s'} prev[s'] + trans[s', s]`` (K = 1), argmax in ``bp_lab``.

    The loop runs over ``s'`` outside and ``s`` inside so that ``trans`` is read row by row and
    the inner loop is a branch-free compare/select. Initialising with ``s' = 0`` and updating on
    strict ``>`` gives the lowest-index argmax, and always a valid backpointer (even for -inf).
    """
    n_in = prev.shape[0]
    n_out = out.shape[0]
    a0 = prev[0, 0]
    for s in range(n_out):
        out[s, 0] = a0 + trans[0, s]
        bp_lab[s, 0] = 0
        bp_rank[s, 0] = 0
    for sp in range(1, n_in):
        a = prev[sp, 0]
        for s in range(n_out):
            v = a + trans[sp, s]
            better = v > out[s, 0]
            out[s, 0] = v if better else out[s, 0]
            bp_lab[s, 0] = sp if better else bp_lab[s, 0]


@njit(cache=True, nogil=True)
def _insert_sorted(vals, labs, ranks, K, v, lab, rank):
    """Insert ``v`` into the non-increasing length-``K`` list ``vals`` (drop the last).

    Ties keep the earlier entry first (strict ``>``), so candidates offered in lexicographic
    ``(lab, rank)`` order give a deterministic, lowest-index-first order. Returns False (and
    inserts nothing) when ``v`` does not beat the current K-th value.
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


@njit(cache=True, nogil=True)
def _matvec_kbest(prev, trans, out, bp_lab, bp_rank, K):
    """K-best max-plus: ``out[s, :]`` = the K best of ``{prev[s', l] + trans[s', s]}``.

    Each ``prev[s', :]`` is sorted, so scanning it stops at the first value that does not enter
    the output list; backpointers record ``(s', l)``. Entries never filled stay ``-inf`` / -1.
    """
    n_in = prev.shape[0]
    n_out = out.shape[0]
    for s in range(n_out):
        vals = out[s]
        labs = bp_lab[s]
        ranks = bp_rank[s]
        for k in range(K):
            vals[k] = -np.inf
            labs[k] = -1
            ranks[k] = -1
        for sp in range(n_in):
            w = trans[sp, s]
            for l in range(K):
                if not _insert_sorted(vals, labs, ranks, K, prev[sp, l] + w, sp, l):
                    break


@njit(cache=True, nogil=True)
def _matvec_lse(prev, trans, out, mu, scratch):
    """``out[s] = mu * log sum_{s'} exp((prev[s'] + trans[s', s]) / mu)``, max-shifted.

    Two sweeps over ``trans`` rows: the max (as in max-plus), then the shifted exponential sum in
    ``scratch``. A column whose max is ``-inf`` stays ``-inf`` (no ``-inf - -inf`` NaN).
    """
    n_in = prev.shape[0]
    n_out = out.shape[0]
    a0 = prev[0, 0]
    for s in range(n_out):
        out[s, 0] = a0 + trans[0, s]
        scratch[s] = 0.0
    for sp in range(1, n_in):
        a = prev[sp, 0]
        for s in range(n_out):
            v = a + trans[sp, s]
            out[s, 0] = v if v > out[s, 0] else out[s, 0]
    inv_mu = 1.0 / mu
    for sp in range(n_in):
        a = prev[sp, 0]
        if a == -np.inf:
            continue
        for s in range(n_out):
            m = out[s, 0]
            if m != -np.inf:
                scratch[s] += np.exp((a + trans[sp, s] - m) * inv_mu)
    for s in range(n_out):
        if out[s, 0] != -np.inf:
            out[s, 0] += mu * np.log(scratch[s])


@njit(cache=True, nogil=True)
def _semiring_matvec(semiring, K, mu, prev, trans, out, bp_lab, bp_rank, scratch):
    """``out[s] = (+)_{s'} prev[s'] (x) trans[s', s]`` in the chosen semiring.

    ``prev`` is ``(n_in, K)``, ``trans`` ``(n_in, n_out)``, ``out``/``bp_lab``/``bp_rank``
    ``(n_out, K)`` (backpointers unused for log-sum-exp), ``scratch`` at least ``n_out`` floats.
    """
    if semiring == LOG_SUM_EXP:
        _matvec_lse(prev, trans, out, mu, scratch)
    elif K == 1:
        _matvec_max1(prev, trans, out, bp_lab, bp_rank)
    else:
        _matvec_kbest(prev, trans, out, bp_lab, bp_rank, K)


@njit(cache=True, nogil=True)
def _init_table(values, table):
    """``table[s, :] = [values[s], -inf, ..., -inf]``: the semiring "one-element list"."""
    for s in range(table.shape[0]):
        table[s, 0] = values[s]
        for k in range(1, table.shape[1]):
            table[s, k] = -np.inf


@njit(cache=True, nogil=True)
def _chain_forward(semiring, K, mu, unary, trans, alpha, bp_lab, bp_rank, scratch):
    """The chain recursion, generic over the semiring; fills ``alpha`` (T, L, K) in place.

    ``alpha[t, s, :]`` is the semiring sum over prefixes ``y_0..y_t`` with ``y_t = s`` of their
    scores (sorted K best for max-plus, ``mu``-log-sum-exp for log-sum-exp). For max-plus,
    ``bp_lab[t, s, k], bp_rank[t, s, k]`` give the ``(y_{t-1}, rank)`` of entry ``k``.
    """
    T = unary.shape[0]
    L = unary.shape[1]
    _init_table(unary[0], alpha[0])
    for t in range(1, T):
        cur = alpha[t]
        _semiring_matvec(semiring, K, mu, alpha[t - 1], trans, cur, bp_lab[t], bp_rank[t],
                         scratch)
        # (x) unary[t, s]: adding a constant keeps each list sorted
        for s in range(L):
            u = unary[t, s]
            for k in range(K):
                cur[s, k] += u


@njit(cache=True, nogil=True)
def _backtrack(bp_lab, bp_rank, last_label, last_rank, y_out):
    """Follow ``(label, rank)`` backpointers from the last position into ``y_out``."""
    T = y_out.shape[0]
    s = last_label
    r = last_rank
    y_out[T - 1] = s
    for t in range(T - 1, 0, -1):
        s_prev = bp_lab[t, s, r]
        r = bp_rank[t, s, r]
        s = s_prev
        y_out[t - 1] = s


# ------------------------------------------------------------------------------------------
# Viterbi (K = 1 max-plus)
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def viterbi_work_size(T, L):
    """Length of the float64 ``work`` buffer that ``viterbi_into`` needs.

    Parameters
    ----------
    T, L : int
        Chain length and number of labels.

    Returns
    -------
    int
        ``T * L`` (the forward table).
    """
    return T * L


@njit(cache=True, nogil=True)
def viterbi_iwork_size(T, L):
    """Length of the int32 ``iwork`` buffer that ``viterbi_into`` needs.

    Parameters
    ----------
    T, L : int
        Chain length and number of labels.

    Returns
    -------
    int
        ``2 * T * L`` (label and rank backpointers).
    """
    return 2 * T * L


@njit(cache=True, nogil=True)
def viterbi_into(unary, trans, y_out, work, iwork):
    """Viterbi decoding without allocation, for hot loops.

    Parameters
    ----------
    unary : ndarray of shape (T, L), float64, C-contiguous
        Unary scores, ``T >= 1``.
    trans : ndarray of shape (L, L), float64, C-contiguous
        ``trans[a, b]`` scores the transition ``y_{t-1} = a -> y_t = b``.
    y_out : ndarray of shape (T,), integer
        Receives the argmax labeling.
    work : ndarray of float64, C-contiguous
        Scratch of at least ``viterbi_work_size(T, L)`` entries.
    iwork : ndarray of int32, C-contiguous
        Scratch of at least ``viterbi_iwork_size(T, L)`` entries.

    Returns
    -------
    score : float
        The maximal score (``-inf`` if every labeling is forbidden, in which case ``y_out`` is
        still a labeling: the lowest-index one among the ``-inf`` ones).

    Notes
    -----
    Ties are broken towards the lowest label index (at the last position, and for each
    backpointer).
    """
    T = unary.shape[0]
    L = unary.shape[1]
    n = T * L
    alpha = work[:n].reshape((T, L, 1))
    bp_lab = iwork[:n].reshape((T, L, 1))
    bp_rank = iwork[n:2 * n].reshape((T, L, 1))
    # scratch is only read by the log-sum-exp product: pass any float array
    _chain_forward(MAX_PLUS, 1, 1.0, unary, trans, alpha, bp_lab, bp_rank, work)
    best = 0
    last = alpha[T - 1]
    for s in range(1, L):
        if last[s, 0] > last[best, 0]:
            best = s
    _backtrack(bp_lab, bp_rank, best, 0, y_out)
    return last[best, 0]


@njit(cache=True, nogil=True)
def viterbi(unary, trans):
    """Maximum-score labeling of a chain (max-product / Viterbi, spec 000 Algo. 1).

    Parameters
    ----------
    unary : ndarray of shape (T, L), float64, C-contiguous
        Unary scores, ``T >= 1``.
    trans : ndarray of shape (L, L), float64
        ``trans[a, b]`` scores the transition ``y_{t-1} = a -> y_t = b``.

    Returns
    -------
    score : float
        ``max_y score(y)``.
    y : ndarray of shape (T,), int32
        An argmax; ties are broken towards the lowest label index.
    """
    T = unary.shape[0]
    L = unary.shape[1]
    work = np.empty(viterbi_work_size(T, L))
    iwork = np.empty(viterbi_iwork_size(T, L), dtype=np.int32)
    y = np.empty(T, dtype=np.int32)
    score = viterbi_into(unary, trans, y, work, iwork)
    return score, y


# ------------------------------------------------------------------------------------------
# Top-K Viterbi (K-best max-plus)
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def topk_viterbi(unary, trans, K):
    """The ``K`` best distinct labelings of a chain (top-K Viterbi, spec 000 Algo. 2).

    Parameters
    ----------
    unary : ndarray of shape (T, L), float64, C-contiguous
        Unary scores, ``T >= 1``.
    trans : ndarray of shape (L, L), float64
        Transition scores.
    K : int
        Number of labelings, ``K >= 1``.

    Returns
    -------
    scores : ndarray of shape (K,), float64
        Non-increasing scores. Entries beyond the number of feasible labelings (``L**T``, minus
        those scored ``-inf``) are ``-inf``.
    paths : ndarray of shape (K, T), int32
        ``paths[k]`` scores ``scores[k]``; the labelings are pairwise distinct. Padding rows
        are ``-1``.

    Notes
    -----
    Time ``O(T L^2 K)`` in the typical case (sorted lists are scanned with early stopping),
    memory ``O(T L K)``. Ties are broken lexicographically on ``(previous label, rank)``.
    """
    if K < 1:
        raise ValueError("K must be >= 1")
    T = unary.shape[0]
    L = unary.shape[1]
    alpha = np.empty((T, L, K))
    bp_lab = np.empty((T, L, K), dtype=np.int32)
    bp_rank = np.empty((T, L, K), dtype=np.int32)
    _chain_forward(MAX_PLUS, K, 1.0, unary, trans, alpha, bp_lab, bp_rank, alpha[0, 0])
    # final (+) over the last label: the same K-best insertion, over (label, rank)
    scores = np.full(K, -np.inf)
    fin_lab = np.full(K, -1, dtype=np.int32)
    fin_rank = np.full(K, -1, dtype=np.int32)
    last = alpha[T - 1]
    for s in range(L):
        for l in range(K):
            if not _insert_sorted(scores, fin_lab, fin_rank, K, last[s, l], s, l):
                break
    paths = np.full((K, T), -1, dtype=np.int32)
    for k in range(K):
        if scores[k] == -np.inf:
            break
        _backtrack(bp_lab, bp_rank, fin_lab[k], fin_rank[k], paths[k])
    return scores, paths


# ------------------------------------------------------------------------------------------
# Forward-backward (log-sum-exp at temperature mu)
# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _lse_forward(unary, trans, mu, alpha, scratch):
    """The log-sum-exp forward pass: ``_chain_forward`` without backpointers."""
    # this semiring never touches the backpointer tables: (T, 0, 0) placeholders
    no_bp = np.empty((unary.shape[0], 0, 0), dtype=np.int32)
    _chain_forward(LOG_SUM_EXP, 1, mu, unary, trans, alpha, no_bp, no_bp, scratch)


@njit(cache=True, nogil=True)
def forward_backward(unary, trans, mu):
    """Log-partition and marginals of the chain Gibbs distribution at temperature ``mu``.

    ``P(y) = exp(score(y) / mu) / Z`` (spec 000 Sec. 2.3, log-space forward-backward).

    Parameters
    ----------
    unary : ndarray of shape (T, L), float64, C-contiguous
        Unary scores, ``T >= 1``; ``-inf`` entries forbid a label (probability 0).
    trans : ndarray of shape (L, L), float64
        Transition scores (``-inf`` forbids a transition).
    mu : float
        Temperature, ``mu > 0``.

    Returns
    -------
    value : float
        ``mu * log sum_y exp(score(y) / mu)`` (the entropy-smoothed max).
    node_marginals : ndarray of shape (T, L)
        ``node_marginals[t, s] = P(y_t = s)``.
    edge_marginals : ndarray of shape (T - 1, L, L)
        ``edge_marginals[t, a, b] = P(y_t = a, y_{t+1} = b)``.

    Notes
    -----
    Everything is computed in log space with max-shifted log-sum-exp; raw scores are never
    exponentiated. If every labeling has score ``-inf``, ``value`` is ``-inf`` and the
    marginals are all zero.
    """
    if not mu > 0:
        raise ValueError("mu must be > 0")
    T = unary.shape[0]
    L = unary.shape[1]
    node = np.zeros((T, L))
    edge = np.zeros((max(T - 1, 0), L, L))
    scratch = np.empty(L)
    alpha = np.empty((T, L, 1))
    # backward messages = the same forward recursion on the reversed chain with trans.T:
    # beta_rev[T-1-t, s] is the log-sum over suffixes y_t..y_{T-1} with y_t = s (unary included)
    unary_rev = np.empty((T, L))
    for t in range(T):
        unary_rev[t] = unary[T - 1 - t]
    trans_t = np.ascontiguousarray(trans.T)
    beta_rev = np.empty((T, L, 1))
    _lse_forward(unary, trans, mu, alpha, scratch)
    _lse_forward(unary_rev, trans_t, mu, beta_rev, scratch)
    # value = (+)_s alpha[T-1, s]
    m = -np.inf
    for s in range(L):
        m = max(m, alpha[T - 1, s, 0])
    if m == -np.inf:
        return -np.inf, node, edge
    acc = 0.0
    for s in range(L):
        acc += np.exp((alpha[T - 1, s, 0] - m) / mu)
    value = m + mu * np.log(acc)
    inv_mu = 1.0 / mu
    for t in range(T):
        for s in range(L):
            a = alpha[t, s, 0]
            b = beta_rev[T - 1 - t, s, 0]
            # -inf guards: a forbidden state has probability 0, never NaN
            if a != -np.inf and b != -np.inf:
                node[t, s] = np.exp((a + b - unary[t, s] - value) * inv_mu)
    for t in range(T - 1):
        b_next = beta_rev[T - 2 - t]
        for a_ in range(L):
            a = alpha[t, a_, 0]
            if a == -np.inf:
                continue
            for b_ in range(L):
                v = a + trans[a_, b_] + b_next[b_, 0]
                if v != -np.inf:
                    edge[t, a_, b_] = np.exp((v - value) * inv_mu)
    return value, node, edge


# ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def score_labeling(unary, trans, y):
    """Score of one labeling.

    Parameters
    ----------
    unary : ndarray of shape (T, L)
    trans : ndarray of shape (L, L)
    y : ndarray of shape (T,), integer

    Returns
    -------
    float
        ``sum_t unary[t, y_t] + sum_{t >= 1} trans[y_{t-1}, y_t]``.
    """
    T = unary.shape[0]
    total = unary[0, y[0]]
    for t in range(1, T):
        total += unary[t, y[t]] + trans[y[t - 1], y[t]]
    return total
