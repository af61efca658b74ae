"""Sums over the examples in one fixed order, whatever splits the work (``nogil``).

The exact-sum solvers (BMRM, AGM) need at every iterate a sum over the examples: a mean loss
and a gradient ``(1/n) sum_i w_i [X_i^T (M_i - S(y_i)), Q_i - q(y_i)]``. Floating-point
addition is not associative, so a sum split over threads or workers would change with their
number. Here the examples fall into fixed chunks of consecutive examples; each chunk's terms
are added in example order, and the chunks' sums are combined along the dyadic tree over the
chunk indices (``V(node) = V(left) + V(right)``, an empty subtree adding nothing). Any split of
the chunks into ranges of whole subtrees, on threads or on workers, then gives the same bits.

Each emission row ``W[j]`` of the gradient is computed whole by one thread, from the token
matrix by columns (tokens in order): the threads split the features, never a sum.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .labelings import add_stats, example_graph, expected_label_loss

#: how many entries of a column ahead its rows of ``D`` are asked for
PREFETCH = 16

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
def _push(stack, levels, depth, h):
    """Combine the pending nodes that join below level ``h`` (before a node that joins the last
    one at ``h``); returns the new depth, where that node goes."""
    while depth >= 2 and levels[depth - 1] < h:
        stack[depth - 2] += stack[depth - 1]
        depth -= 1
    levels[depth] = h
    return depth


@njit(cache=True, nogil=True)
def _collapse(stack, depth):
    """Combine the pending nodes (their levels rise towards the bottom) into row 0; returns 0,
    or -1 when nothing was pushed."""
    if depth == 0:
        return -1
    while depth >= 2:
        stack[depth - 2] += stack[depth - 1]
        depth -= 1
    return 0


@njit(cache=True, nogil=True)
def tree_rows(positions, rows, out):
    """``out = `` the tree sum of ``rows`` (one per node, at the increasing chunk indices
    ``positions`` of aligned tree nodes); zeros when there are none."""
    stack = np.zeros((MAX_LEVELS, rows.shape[1]))
    levels = np.zeros(MAX_LEVELS, dtype=np.int64)
    depth = 0
    for k in range(rows.shape[0]):
        h = MAX_LEVELS if k == 0 else join_level(positions[k - 1], positions[k])
        depth = _push(stack, levels, depth, h)
        stack[depth] = rows[k]
        depth += 1
    out[:] = 0.0
    if _collapse(stack, depth) == 0:
        out[:] = stack[0]


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
def tree_columns(colptr, tokens, values, chunk_tokens, first_chunk, active, D, W, lo, hi):
    """``W[j] = sum_t X[t, j] D[t]`` for the features ``lo..hi-1``, each row added chunk by
    chunk in token order and the chunks' rows combined along the tree.

    ``(colptr, tokens, values)`` is the token matrix by columns (tokens increasing in each);
    chunk ``c`` holds the tokens ``chunk_tokens[c]:chunk_tokens[c + 1]`` and is chunk
    ``first_chunk + c`` of the whole data set (so that a part of the data combines along the
    same tree). Tokens not ``active`` (zero rows of ``D``) add nothing.
    """
    C = D.shape[1]
    stack = np.zeros((MAX_LEVELS, C))
    levels = np.zeros(MAX_LEVELS, dtype=np.int64)
    acc = np.empty(C)
    for j in range(lo, hi):
        depth = 0
        k, end = colptr[j], colptr[j + 1]
        previous = -1
        c = 0
        while k < end:
            t = tokens[k]
            if chunk_tokens[c + 1] <= t:  # the chunk of the column's next token
                c = np.searchsorted(chunk_tokens, t, side="right") - 1
            h = MAX_LEVELS if previous < 0 else join_level(previous, first_chunk + c)
            acc[:] = 0.0
            while k < end and tokens[k] < chunk_tokens[c + 1]:
                t = tokens[k]
                if k + PREFETCH < end:  # the row's lines (8 doubles each)
                    for q in range(0, C, 8):
                        _prefetch(D, tokens[k + PREFETCH], q)
                    _prefetch(D, tokens[k + PREFETCH], C - 1)
                if active[t]:
                    v = values[k]
                    for q in range(C):
                        acc[q] += v * D[t, q]
                k += 1
            depth = _push(stack, levels, depth, h)
            stack[depth] = acc
            depth += 1
            previous = first_chunk + c
        W[j] = 0.0
        if _collapse(stack, depth) == 0:
            W[j] = stack[0]


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
    """``out[lo:hi] = sum_s coefs[s] A[s, lo:hi]``, the rows added in order (in blocks of
    entries that stay in the cache)."""
    for b in range(lo, hi, BLOCK):
        e = min(b + BLOCK, hi)
        out[b:e] = 0.0
        for s in range(coefs.shape[0]):
            c = coefs[s]
            a = A[s]
            for k in range(b, e):
                out[k] += c * a[k]


@intrinsic
def _prefetch(typingctx, ary, row, column):
    """Ask the cache for the line of ``ary[row, column]`` (2-D; LLVM's ``prefetch``: a hint,
    no effect on results)."""
    if not (isinstance(ary, types.Array) and ary.ndim == 2):
        return None

    def codegen(context, builder, signature, args):
        ary_type, row_type, column_type = signature.args
        array = context.make_array(ary_type)(context, builder, args[0])
        index = context.cast(builder, args[1], row_type, types.intp)
        column = context.cast(builder, args[2], column_type, types.intp)
        pointer = cgutils.get_item_pointer(context, builder, ary_type, array, [index, column])
        i8p = ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32),
                                                            ir.IntType(32)]), "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(pointer, i8p), ir.Constant(ir.IntType(32), 0),
                          ir.Constant(ir.IntType(32), 3), ir.Constant(ir.IntType(32), 1)])
        return context.get_dummy_value()
    return types.none(ary, row, column), codegen
