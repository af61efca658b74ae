"""One pass of block-coordinate Frank-Wolfe in label space (spec 002 Alg. 1).

The block ``i`` of the dual is kept as expected label statistics ``M_i = E_{alpha_i} S(y)``
(rows ``tok_off[i]:tok_off[i+1]`` of ``M``) and ``Q_i = E_{alpha_i} q(y)``, plus
``ell_i = b_(i)^T alpha_(i)``. Then ``w_i = [phi(x_i, y_i) - (X_i^T M_i (+) Q_i)] / (lambda n)``:
memory is O(sum_i T_i C), never n dense d-vectors (ARCHITECTURE.md).
"""
import numpy as np
from numba import njit

from .batch import max_length
from .sampling import sum_tree, sum_tree_sample, sum_tree_total, sum_tree_update
from .labelings import add_stats, label_loss, oracle, oracle_iwork_size, oracle_work_size
from .sparse import add_outer_into, gram_quadratic, unary_scores_into


@njit(cache=True, nogil=True)
def bcfw_pass(kind, edges, parent, order, indptr, indices, data, tok_off, y, node_off, gram,
              gram_off, W, theta, M, Q, ell_blocks, lam, first_blocks, n_steps, uniforms,
              gap_sampling, exit_below, gap_estimates, step0, VM, VQ, Vell):
    """Up to ``n_steps`` Frank-Wolfe steps with exact line search, one block each.

    The blocks are ``first_blocks`` in order, then (``gap_sampling``) blocks drawn with
    probability proportional to their gap estimates (spec 002 Alg. 2) through a sum tree, using
    one number of ``uniforms`` per draw. Each visited block's gap ``g_i``, computed before its
    step (Alg. 1 line 6), is stored in ``gap_estimates`` (``+inf``: never visited). Once every
    block has an estimate, the pass stops early when their sum falls to ``exit_below`` or to 0
    (the heuristic exit of spec 002 §3.2: time for an exact gap). Updates ``W, theta, M, Q,
    ell_blocks`` in place and returns the number of steps made.

    Weighted averaging (Lacoste-Julien et al. 2013, iterates weighted by their step index k):
    when ``VM`` has rows, the change ``Delta_k`` of the dual state made at global step
    ``k = step0 + b + 1`` is accumulated as ``V += (k - 1) k / 2 * Delta_k``, so that the average
    ``sum_k k state_k / (K (K + 1) / 2)`` is ``state_K - V / (K (K + 1) / 2)`` at any time,
    for O(T_i C) work per step. The averaged dual point is feasible, so its gap is exact.
    """
    n = tok_off.shape[0] - 1
    C = W.shape[1]
    p = theta.shape[0]
    max_T = max_length(tok_off)
    U_buf = np.empty((max_T, C))
    D_buf = np.empty((max_T, C))
    dq = np.empty(p)
    y_buf = np.empty(max_length(node_off), dtype=np.int32)
    work = np.empty(oracle_work_size(kind, max_T, C))
    iwork = np.empty(oracle_iwork_size(kind, max_T, C), dtype=np.int32)
    lam_n = lam * n
    averaging = VM.shape[0] > 0
    weights = np.empty(n)
    n_unvisited = 0
    for j in range(n):
        if np.isinf(gap_estimates[j]):
            n_unvisited += 1
            weights[j] = 0.0
        else:
            weights[j] = max(gap_estimates[j], 0.0)
    tree = sum_tree(weights)
    for b in range(n_steps):
        if n_unvisited == 0 and sum_tree_total(tree) <= exit_below:
            return b
        if b < first_blocks.shape[0]:
            i = first_blocks[b]
        elif gap_sampling and sum_tree_total(tree) > 0.0:
            i = sum_tree_sample(tree, uniforms[b])
        else:
            return b
        t0 = tok_off[i]
        T = tok_off[i + 1] - t0
        U = U_buf[:T]
        D = D_buf[:T]
        unary_scores_into(indptr, indices, data, t0, t0 + T, W, U)
        yi = y[node_off[i]:node_off[i + 1]]
        ys = y_buf[:yi.shape[0]]
        oracle(kind, U, theta, yi, True, edges, parent, order, ys, work, iwork)
        ell_s = label_loss(kind, yi, ys) / n
        # D = S(y*) - M_i, dq = q(y*) - Q_i: the corner minus the current block, in label space
        for t in range(T):
            for c in range(C):
                D[t, c] = -M[t0 + t, c]
        for j in range(p):
            dq[j] = -Q[i, j]
        add_stats(kind, ys, 1.0, D, dq, edges)
        lin = 0.0
        for t in range(T):
            for c in range(C):
                lin += D[t, c] * U[t, c]
        for j in range(p):
            lin += dq[j] * theta[j]
        gap = lin / n + ell_s - ell_blocks[i]
        if np.isinf(gap_estimates[i]):
            n_unvisited -= 1
        gap_estimates[i] = gap
        sum_tree_update(tree, i, max(gap, 0.0))
        if gap <= 0.0:
            continue
        quad = gram_quadratic(gram, gram_off[i], T, D)
        for j in range(p):
            quad += dq[j] * dq[j]
        # gamma = g_i / (lam ||w_i - w_s||^2) with ||w_i - w_s||^2 = quad / (lam n)^2
        gamma = 1.0 if quad <= 0.0 else min(1.0, gap * lam_n * n / quad)
        for t in range(T):
            for c in range(C):
                M[t0 + t, c] += gamma * D[t, c]
        step = -gamma / lam_n
        for j in range(p):
            Q[i, j] += gamma * dq[j]
            theta[j] += step * dq[j]
        add_outer_into(indptr, indices, data, t0, t0 + T, D, step, W)
        d_ell = gamma * (ell_s - ell_blocks[i])
        ell_blocks[i] += d_ell
        if averaging:
            k = float(step0 + b + 1)
            weight = (k - 1.0) * k / 2.0
            for t in range(T):
                for c in range(C):
                    VM[t0 + t, c] += weight * gamma * D[t, c]
            for j in range(p):
                VQ[i, j] += weight * gamma * dq[j]
            Vell[i] += weight * d_ell
    return n_steps
