"""Smoothed structured hinge losses and their gradients, in label space (spec 000 §1.4-1.6, §2).

For example ``i`` the loss-augmented scores ``z_y = L(y_i, y) + score(y)`` are smoothed by
``h`` (entropy: ``mu log sum exp(z / mu)``; top-K: ``h_{mu,K}`` over the K best labelings), and
``f_i = h(z) - score(y_i)``. Its gradient is ``sum_y u_y phi(x_i, y) - phi(x_i, y_i)`` with ``u``
the smoothing weights (Lemma 7), i.e. ``X_i^T (M_i - S(y_i)) (+) (Q_i - q(y_i))`` where
``M_i = E_u S(y)`` and ``Q_i = E_u q(y)``: the same label-space form as BCFW's dual blocks, so
no dense per-example gradient is ever built.
"""
import numpy as np
from numba import njit, prange

from .batch import CHUNKS, max_length
from .chain import forward_backward, topk_viterbi
from .labelings import CHAIN, labeling_score
from .simplex import topk_weights_into
from .sparse import unary_scores_into

ENTROPY = 0
TOP_K = 1


@njit(cache=True, nogil=True, parallel=True)
def smoothed_losses(kind, indptr, indices, data, tok_off, y, node_off, W, theta, smoothing, K,
                    mu, values, M, Q):
    """Smoothed hinge ``f_i`` of every example (``values``) and its label-space gradient
    statistics (rows of ``M``, ``Q``). Chains only, for now.

    ``smoothing`` is ``ENTROPY`` (forward-backward at temperature ``mu``, Algo. 3) or ``TOP_K``
    (top-K Viterbi, then the simplex projection of eq. (11) with the exact value of §1.6).
    """
    if kind != CHAIN:
        raise ValueError("smoothed losses are implemented for chains only")
    n = tok_off.shape[0] - 1
    C = W.shape[1]
    trans = theta.reshape((C, C))
    no_edges = np.zeros((0, 2), dtype=np.int64)
    n_chunks = min(n, CHUNKS)
    for chunk in prange(n_chunks):
        lo = chunk * n // n_chunks
        hi = (chunk + 1) * n // n_chunks
        U_buf = np.empty((max_length(tok_off[lo:hi + 1]), C))
        weights = np.empty(K)
        work = np.empty(K)
        for i in range(lo, hi):
            t0 = tok_off[i]
            T = tok_off[i + 1] - t0
            U = U_buf[:T]
            unary_scores_into(indptr, indices, data, t0, t0 + T, W, U)
            yi = y[node_off[i]:node_off[i + 1]]
            gold = labeling_score(kind, U, theta, yi, no_edges)
            # loss augmentation: L = 1 - sum_t [y_t = y_i,t] / T, a shift of the true labels
            for t in range(T):
                U[t, yi[t]] -= 1.0 / T
            Mi = M[t0:t0 + T]
            Mi[:, :] = 0.0
            Q[i, :] = 0.0
            if smoothing == ENTROPY:
                value, node, edge = forward_backward(U, trans, mu)
                Mi[:, :] = node
                for t in range(T - 1):
                    for a in range(C):
                        for b in range(C):
                            Q[i, a * C + b] += edge[t, a, b]
            else:
                scores, paths = topk_viterbi(U, trans, K)
                value, _ = topk_weights_into(scores, mu, weights, work)
                for k in range(K):
                    u = weights[k]
                    if u == 0.0:  # padding and labelings outside the support
                        continue
                    for t in range(T):
                        Mi[t, paths[k, t]] += u
                        if t > 0:
                            Q[i, paths[k, t - 1] * C + paths[k, t]] += u
            values[i] = value + 1.0 - gold
