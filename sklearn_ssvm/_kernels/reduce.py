"""Sums over the examples in one fixed order, whatever splits the work (``nogil``).

The exact-sum solvers (BMRM, AGM) need at every iterate a sum over the examples: a mean loss
and a gradient ``(1/n) sum_i w_i [X_i^T (M_i - S(y_i)), Q_i - q(y_i)]``. Floating-point
addition is not associative, so a sum split over threads or workers would change with their
number. Here the examples fall into fixed chunks of consecutive examples; each chunk's terms
are added in token order (:func:`chunk_sums`, :func:`gradient_terms`, :func:`chunk_columns`),
and the chunks' sums are combined along the dyadic tree over the chunk indices
(``V(node) = V(left) + V(right)``, an empty subtree adding nothing: a sum that starts at
``+0.0`` is never ``-0.0``, so adding a zero changes no bit; :func:`tree_rows`,
:func:`add_sparse_rows`; or row by row, :func:`tree_columns`). However the chunks are split
over threads or workers, the same additions are made.
"""
import numpy as np
from numba import njit

from .labelings import add_stats, example_graph, expected_label_loss

#: entries of a vector per block of the products with the cuts (a multiple of 8)
BLOCK = 2048

#: deepest stack of pending tree nodes: one per level of the tree over the chunks
MAX_LEVELS = 64


@njit(cache=True, nogil=True)
def join_level(a, b):
    """The level of the lowest common ancestor of the aligned tree nodes starting at chunks
    ``a < b`` (1 for two leaves that are siblings)."""
    x = a ^ b
    h = 0
    while x:
        x >>= 1
        h += 1
    return h


@njit(cache=True, nogil=True)
def _add_row(stack, j, d, depth):
    """``stack[j, d] += stack[j, depth]``, entry by entry (no array views: the per-feature
    sums push hundreds of thousands of short rows)."""
    for q in range(stack.shape[2]):
        stack[j, d, q] += stack[j, depth, q]


@njit(cache=True, nogil=True)
def _push_row(stack, levels, j, depth, last, position, rows, r):
    """Push ``rows[r]``, the row of the aligned node at chunk index ``position``, onto stack
    ``j`` of pending nodes (``stack[j, :depth]``, their levels ``levels[j]``), whose last node
    is at ``last`` (negative: none): first the pending nodes that join below the new node's
    level with the last one are combined. Returns the new depth."""
    h = MAX_LEVELS if last < 0 else join_level(last, position)
    while depth >= 2 and levels[j, depth - 1] < h:
        _add_row(stack, j, depth - 2, depth - 1)
        depth -= 1
    levels[j, depth] = h
    for q in range(stack.shape[2]):
        stack[j, depth, q] = rows[r, q]
    return depth + 1


@njit(cache=True, nogil=True)
def _collapse_into(stack, j, depth, out):
    """``out = `` the pending nodes of stack ``j`` combined (their levels rise towards the
    bottom); zeros when nothing was pushed."""
    while depth >= 2:
        _add_row(stack, j, depth - 2, depth - 1)
        depth -= 1
    for q in range(out.shape[0]):
        out[q] = stack[j, 0, q] if depth else 0.0


@njit(cache=True, nogil=True)
def tree_rows(positions, rows, out):
    """``out = `` the tree sum of ``rows`` (one per node, at the increasing chunk indices
    ``positions`` of aligned tree nodes); zeros when there are none."""
    stack = np.empty((1, max(1, min(MAX_LEVELS, rows.shape[0])), rows.shape[1]))  # rows: wide
    levels = np.zeros((1, MAX_LEVELS), dtype=np.int64)
    depth = 0
    for k in range(rows.shape[0]):
        depth = _push_row(stack, levels, 0, depth, positions[k - 1] if k else -1, positions[k],
                          rows, k)
    _collapse_into(stack, 0, depth, out)


@njit(cache=True, nogil=True)
def tree_columns(features, starts, touched, rows, width, depth_max, c0, c1, out_rows, out,
                 lo, hi):
    """The tree sums of the features' rows over the chunks ``c0..c1-1`` (an aligned node of the
    tree, its first chunk ``c0``), for the features of the blocks ``lo..hi-1`` of ``width``
    features: ``out[out_rows[f]] = `` feature ``f``'s sum (``out_rows[f] < 0``: not wanted; a
    feature no chunk has: zeros). The additions of joining the chunks' nodes along the tree
    (:func:`add_sparse_rows`), with no node made.

    ``rows[r]`` is the emission row of feature ``features[r]`` in its chunk, the chunks' rows
    one after the other, each chunk's by increasing feature; a row not ``touched`` is zero and
    left out. ``starts[c, b]`` is chunk ``c``'s first row of a feature of block ``b`` or later,
    so a block reads one run of rows per chunk, chunk after chunk, and keeps a stack of
    ``depth_max`` pending nodes per feature (at least the tree's levels plus one).
    """
    stack = np.empty((width, depth_max, rows.shape[1]))
    levels = np.zeros((width, MAX_LEVELS), dtype=np.int64)
    depth = np.zeros(width, dtype=np.int64)
    last = np.empty(width, dtype=np.int64)
    for b in range(lo, hi):
        f0 = b * width
        depth[:] = 0
        last[:] = -1
        for c in range(c0, c1):
            for r in range(starts[c, b], starts[c, b + 1]):
                if touched[r]:
                    j = features[r] - f0
                    depth[j] = _push_row(stack, levels, j, depth[j], last[j], c - c0, rows, r)
                    last[j] = c - c0
        for j in range(min(width, out_rows.shape[0] - f0)):
            if out_rows[f0 + j] >= 0:
                _collapse_into(stack, j, depth[j], out[out_rows[f0 + j]])


@njit(cache=True, nogil=True)
def chunk_sums(x, weights, chunk, out):
    """``out[c] = sum_{i in chunk c} weights[i] * x[i]`` in example order (chunks of ``chunk``
    consecutive examples)."""
    for c in range(out.shape[0]):
        total = 0.0
        for i in range(c * chunk, min((c + 1) * chunk, x.shape[0])):
            total += weights[i] * x[i]
        out[c] = total


@njit(cache=True, nogil=True)
def gradient_terms(packed, M, Q, weights, scale, chunk, ell, active, pair_rows, lo, hi):
    """The per-example parts of the gradient, for the examples of chunks ``lo..hi-1``.

    Writes each example's expected loss ``E_u L(y_i, y)`` (from ``M``) to ``ell``, turns its rows
    of ``M`` into ``s_i (M_i - S(y_i))`` and ``Q[i]`` into ``Q_i - q(y_i)`` in place, with
    ``s_i = scale * weights[i]``, and flags the tokens whose row is not zero (``active``);
    ``pair_rows[c]`` is the chunk's ``sum_i s_i (Q_i - q(y_i))``, in example order.
    """
    kind, y, tok_off, node_off, tok_loss = packed.kind, packed.y, packed.tok_off, \
        packed.node_off, packed.tok_loss
    n = tok_off.shape[0] - 1
    C = M.shape[1]
    for c in range(lo, hi):
        row = pair_rows[c]
        row[:] = 0.0
        for i in range(c * chunk, min((c + 1) * chunk, n)):
            t0, t1 = tok_off[i], tok_off[i + 1]
            yi = y[node_off[i]:node_off[i + 1]]
            ell[i] = expected_label_loss(kind, yi, M[t0:t1], tok_loss[t0:t1])
            D = M[t0:t1]
            for t in range(t1 - t0):
                for k in range(C):
                    D[t, k] = -D[t, k]
            dq = Q[i]
            for k in range(dq.shape[0]):
                dq[k] = -dq[k]
            add_stats(kind, yi, 1.0, D, dq, example_graph(packed, i))
            s = scale * weights[i]
            for k in range(dq.shape[0]):
                row[k] += s * dq[k]
            for t in range(t1 - t0):
                nonzero = False
                for k in range(C):
                    if D[t, k] != 0.0:
                        nonzero = True
                    D[t, k] *= s
                active[t0 + t] = nonzero


@njit(cache=True, nogil=True)
def chunk_columns(indptr, data, slots, t0, t1, active, D, W, nonzero):
    """``W[slots[k]] = sum_t X[t, j] D[t]`` over the tokens ``t0..t1-1`` of one chunk, in token
    order: the emission rows of the chunk's features (``slots`` gives each non-zero of the
    token matrix its feature's row in ``W``). Tokens not ``active`` (zero rows of ``D``) add
    nothing; ``nonzero`` flags the rows that some active token touched (the others are zero)."""
    C = D.shape[1]
    W[:] = 0.0
    nonzero[:] = False
    for t in range(t0, t1):
        if not active[t]:
            continue
        for k in range(indptr[t], indptr[t + 1]):
            v = data[k]
            nonzero[slots[k]] = True
            row = W[slots[k]]
            for q in range(C):
                row[q] += v * D[t, q]


@njit(cache=True, nogil=True)
def dot_rows(A, x, out, lo, hi):
    """``out[s] = <A[s], x>`` for the rows ``lo..hi-1``, each in one fixed order: eight running
    sums (entry ``k`` into sum ``k % 8``, in increasing ``k``), added in order at the end. The
    entries go in blocks that stay in the cache, every row's sums carried across them."""
    d = x.shape[0]
    stop = d - d % 8
    lanes = np.zeros((hi - lo, 8))
    for b in range(0, stop, BLOCK):
        e = min(b + BLOCK, stop)
        for s in range(lo, hi):
            a = A[s]
            acc = lanes[s - lo]
            for k in range(b, e, 8):
                for m in range(8):
                    acc[m] += a[k + m] * x[k + m]
    for s in range(lo, hi):
        total = 0.0
        for m in range(8):
            total += lanes[s - lo, m]
        for k in range(stop, d):
            total += A[s, k] * x[k]
        out[s] = total


@njit(cache=True, nogil=True)
def combine_rows(A, coefs, out, lo, hi):
    """``out[lo:hi] += sum_s coefs[s] A[s, lo:hi]``, the rows added in order (in blocks of
    entries that stay in the cache)."""
    for b in range(lo, hi, BLOCK):
        e = min(b + BLOCK, hi)
        for s in range(coefs.shape[0]):
            c = coefs[s]
            a = A[s]
            for k in range(b, e):
                out[k] += c * a[k]


@njit(cache=True, nogil=True)
def add_sparse_rows(rows_a, values_a, rows_b, values_b):
    """``a + b`` for two matrices given by their non-zero rows (increasing indices): the union
    of the rows, each the sum of its two rows (one where the other matrix has none: an absent
    row is zero, which adds exactly)."""
    n_a, n_b = rows_a.shape[0], rows_b.shape[0]
    both = 0
    i = j = 0
    while i < n_a and j < n_b:  # the union's size first: the result is allocated once
        if rows_a[i] < rows_b[j]:
            i += 1
        elif rows_b[j] < rows_a[i]:
            j += 1
        else:
            both += 1
            i += 1
            j += 1
    rows = np.empty(n_a + n_b - both, dtype=rows_a.dtype)
    values = np.empty((rows.shape[0], values_a.shape[1]))
    i = j = m = 0
    while i < n_a or j < n_b:
        if j == n_b or (i < n_a and rows_a[i] < rows_b[j]):
            rows[m] = rows_a[i]
            values[m] = values_a[i]
            i += 1
        elif i == n_a or rows_b[j] < rows_a[i]:
            rows[m] = rows_b[j]
            values[m] = values_b[j]
            j += 1
        else:
            rows[m] = rows_a[i]
            values[m] = values_a[i] + values_b[j]
            i += 1
            j += 1
        m += 1
    return rows, values
