"""Sparse token-feature products shared by every structure.

All token features of a data set live in one CSR matrix (``indptr``, ``indices``, ``data``) whose
rows are tokens; example ``i`` owns rows ``tok_offsets[i]:tok_offsets[i + 1]``. The emission
weights are a dense ``(n_features, n_codes)`` matrix ``W`` so that the unary scores of a token are
one row of ``X W``.
"""
import numpy as np
from numba import njit

from .atomic import add_into
from .threads import run_chunks


@njit(cache=True, nogil=True)
def unary_scores_into(indptr, indices, data, t0, t1, W, U):
    """Write ``U[t - t0] = x_t @ W`` for the tokens ``t0 <= t < t1`` (rows of a CSR matrix).

    Four non-zeros are folded per sweep of the row ``U[t - t0]`` (a quarter of its loads and
    stores, and four rows of ``W`` in flight), adding in the order of the non-zeros as one at a
    time would: the result is the same to the bit.
    """
    C = W.shape[1]
    for t in range(t0, t1):
        r = t - t0
        for c in range(C):
            U[r, c] = 0.0
        k = indptr[t]
        end = indptr[t + 1]
        while k + 3 < end:
            v0 = data[k]
            v1 = data[k + 1]
            v2 = data[k + 2]
            v3 = data[k + 3]
            r0 = indices[k]
            r1 = indices[k + 1]
            r2 = indices[k + 2]
            r3 = indices[k + 3]
            for c in range(C):
                U[r, c] = (((U[r, c] + v0 * W[r0, c]) + v1 * W[r1, c]) + v2 * W[r2, c]
                           + v3 * W[r3, c])
            k += 4
        while k < end:
            v = data[k]
            row = indices[k]
            for c in range(C):
                U[r, c] += v * W[row, c]
            k += 1


@njit(cache=True, nogil=True)
def add_outer_into(indptr, indices, data, t0, t1, D, scale, W, atomic):
    """``W += scale * X_[t0:t1]^T D``: the emission part of a joint-feature difference, each
    entry added atomically with ``atomic`` (see ``atomic.add_into``).

    A row of ``D`` with few non-zeros (a Frank-Wolfe direction ``S(y*) - M_i`` has one per
    label the block's labelings ever gave the token) touches only those columns of ``W``.
    """
    C = W.shape[1]
    cols = np.empty(C, dtype=np.int64)
    for t in range(t0, t1):
        r = t - t0
        m = 0
        for c in range(C):
            if D[r, c] != 0.0:
                cols[m] = c
                m += 1
        if 4 * m >= C:
            for k in range(indptr[t], indptr[t + 1]):
                v = scale * data[k]
                row = indices[k]
                for c in range(C):
                    add_into(W, (row, c), v * D[r, c], atomic)
        else:
            for k in range(indptr[t], indptr[t + 1]):
                v = scale * data[k]
                row = indices[k]
                for j in range(m):
                    add_into(W, (row, cols[j]), v * D[r, cols[j]], atomic)


@njit(cache=True, nogil=True)
def gram_quadratic(gram, g0, T, D):
    """``||X_i^T D||_F^2 = sum_{t,s} G[t,s] <D_t, D_s>`` from the token Gram matrix of block i."""
    C = D.shape[1]
    total = 0.0
    for t in range(T):
        for s in range(t + 1):
            g = gram[g0 + t * T + s]
            if g == 0.0:
                continue
            dot = 0.0
            for c in range(C):
                dot += D[t, c] * D[s, c]
            total += g * dot if s == t else 2.0 * g * dot
    return total


@njit(cache=True, nogil=True)
def add_entries_outer(indptr, indices, data, t0, rows, cols, vals, n_entries, scale, W,
                      atomic):
    """``W += scale * X_i^T D`` for a sparse ``D`` given by entries ``(rows, cols, vals)``
    (``rows`` relative to the example's first token ``t0``): one CSR row per entry, each
    entry added atomically with ``atomic``."""
    for e in range(n_entries):
        t = t0 + rows[e]
        c = cols[e]
        v = scale * vals[e]
        for k in range(indptr[t], indptr[t + 1]):
            add_into(W, (indices[k], c), v * data[k], atomic)


@njit(cache=True, nogil=True)
def entries_quadratic(gram, g0, T, rows, cols, vals, n_entries, q_index, q_vals, n_q):
    """``||X_i^T D||_F^2 + ||dq||^2`` for sparse ``D`` (entries ``rows, cols, vals``; ``G`` the
    example's token Gram matrix at ``gram[g0:]``) and sparse ``dq`` (entries ``q_index,
    q_vals``): ``sum_{e,f} v_e v_f G[r_e, r_f] [c_e = c_f]`` plus the same for ``dq``."""
    total = 0.0
    for e in range(n_entries):
        for f in range(n_entries):
            if cols[e] == cols[f]:
                total += vals[e] * vals[f] * gram[g0 + rows[e] * T + rows[f]]
    for e in range(n_q):
        for f in range(n_q):
            if q_index[e] == q_index[f]:
                total += q_vals[e] * q_vals[f]
    return total


@njit(cache=True, nogil=True)
def direct_quadratic(indptr, indices, data, t0, T, D, V):
    """``||X_i^T D||_F^2`` by forming ``X_i^T D`` in the scratch ``V`` (``n_features x C``,
    zero on entry and on return) over example ``i``'s non-zeros: ``O(nnz(X_i) C)``, for the
    examples without a stored Gram matrix."""
    C = D.shape[1]
    for t in range(T):
        for k in range(indptr[t0 + t], indptr[t0 + t + 1]):
            for c in range(C):
                V[indices[k], c] += data[k] * D[t, c]
    total = 0.0
    for t in range(T):  # each touched row summed once, then zeroed
        for k in range(indptr[t0 + t], indptr[t0 + t + 1]):
            for c in range(C):
                total += V[indices[k], c] * V[indices[k], c]
                V[indices[k], c] = 0.0
    return total


@njit(cache=True, nogil=True)
def direct_entries_quadratic(indptr, indices, data, t0, rows, cols, vals, n_entries, q_index,
                             q_vals, n_q, V, Vq):
    """:func:`entries_quadratic` without a Gram matrix, in ``O(nnz + n_q)``: ``X_i^T D`` formed
    in the scratch ``V`` and ``dq`` in ``Vq`` (both zero on entry and on return)."""
    for e in range(n_entries):
        t = t0 + rows[e]
        for k in range(indptr[t], indptr[t + 1]):
            V[indices[k], cols[e]] += data[k] * vals[e]
    for e in range(n_q):
        Vq[q_index[e]] += q_vals[e]
    total = 0.0
    for e in range(n_entries):
        t = t0 + rows[e]
        for k in range(indptr[t], indptr[t + 1]):
            total += V[indices[k], cols[e]] * V[indices[k], cols[e]]
            V[indices[k], cols[e]] = 0.0
    for e in range(n_q):
        total += Vq[q_index[e]] * Vq[q_index[e]]
        Vq[q_index[e]] = 0.0
    return total


def token_gram(indptr, indices, data, tok_offsets, n_features, direct=False):
    """Per-example token Gram matrices ``X_i X_i^T`` packed flat, with their offsets (on the
    threads of ``threads.use_threads``).

    With ``direct`` (graphs: only their BCFW pass compiles the Gram-free line searches), an
    example whose Gram matrix would cost more than forming ``X_i^T D`` itself (``T (T + 1) / 2
    > 2 nnz(X_i) + n_features``: large graphs of few features) gets none (an empty span): its
    steps take :func:`direct_quadratic`, so memory stays linear in its tokens."""
    lengths = np.diff(tok_offsets).astype(np.int64)
    nnz = np.diff(indptr[tok_offsets]).astype(np.int64)
    stored = (lengths * (lengths + 1) // 2 <= 2 * nnz + n_features) | (not direct)
    offsets = np.concatenate([np.zeros(1, np.int64),
                              np.cumsum(np.where(stored, lengths * lengths, 0))])
    gram = np.zeros(offsets[-1])
    run_chunks(_token_gram_range, lengths.shape[0], indptr, indices, data, tok_offsets,
               n_features, offsets, gram)
    return gram, offsets


@njit(cache=True, nogil=True)
def _token_gram_range(indptr, indices, data, tok_offsets, n_features, offsets, gram, lo, hi):
    """``token_gram`` of examples ``lo .. hi - 1`` into ``gram``."""
    dense = np.zeros(n_features)
    for i in range(lo, hi):
        t0 = tok_offsets[i]
        T = tok_offsets[i + 1] - t0
        g0 = offsets[i]
        if offsets[i + 1] - g0 < T * T:  # not stored: see token_gram
            continue
        for t in range(T):
            row = t0 + t
            for k in range(indptr[row], indptr[row + 1]):
                dense[indices[k]] = data[k]
            for s in range(t + 1):
                other = t0 + s
                dot = 0.0
                for k in range(indptr[other], indptr[other + 1]):
                    dot += data[k] * dense[indices[k]]
                gram[g0 + t * T + s] = dot
                gram[g0 + s * T + t] = dot
            for k in range(indptr[row], indptr[row + 1]):
                dense[indices[k]] = 0.0


@njit(cache=True, nogil=True)
def clip_rows(indptr, indices, t0, t1, V, lower, upper, out):
    """``out[r] = clip(V[r], lower[r], upper[r])`` for the feature rows used by tokens t0..t1."""
    C = V.shape[1]
    for t in range(t0, t1):
        for k in range(indptr[t], indptr[t + 1]):
            r = indices[k]
            for c in range(C):
                out[r, c] = min(max(V[r, c], lower[r, c]), upper[r, c])
