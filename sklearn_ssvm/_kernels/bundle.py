"""The inner problem of bundle methods: a concave quadratic over the probability simplex.

BMRM (spec 003 §2.1) maximises at every iteration the dual (10) of its cutting-plane model,

    D(alpha) = <b, alpha> - (1 / (2 lam)) alpha^T K alpha,   alpha in the simplex,

with ``K = A^T A`` the Gram matrix of the cuts. Written as the minimisation of
``q(alpha) = alpha^T K alpha / 2 - lam <b, alpha>`` (``q = -lam D``), it is solved here by
sequential minimal optimisation: each step moves mass between two coordinates along
``e_i - e_j`` with an exact line search, which keeps the iterate on the simplex and costs two
columns of ``K``.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def simplex_qp(K, b, lam, alpha, grad, tol, max_steps):
    """Minimise ``alpha^T K alpha / 2 - lam <b, alpha>`` over the simplex, in place.

    ``K`` (t, t) is the positive semi-definite Gram matrix of the cuts, ``b`` (t,) their offsets,
    ``lam > 0`` the regularisation. ``alpha`` (t,), a feasible start (non-negative, summing to one),
    is overwritten by the solution and ``grad`` (t,) by the gradient ``K alpha - lam b`` there.
    At most ``max_steps`` steps; stops when ``max_{alpha_j > 0} grad_j - min_i grad_i <= tol``
    (this bounds the Frank-Wolfe gap ``<grad, alpha> - min grad``, so ``D`` is within ``tol / lam``
    of its maximum) and returns that final violation (float). Working-set selection (Fan, Chen
    and Lin 2005): ``i`` has the smallest gradient (where mass goes), ``j`` the active coordinate
    of largest second-order decrease ``(grad_j - grad_i)^2 / (K_ii + K_jj - 2 K_ij)`` (where it
    comes from)."""
    t = b.shape[0]
    for r in range(t):
        s = 0.0
        for c in range(t):
            s += K[r, c] * alpha[c]
        grad[r] = s - lam * b[r]
    violation = np.inf
    for _ in range(max_steps):
        i = 0
        for r in range(1, t):
            if grad[r] < grad[i]:
                i = r
        top = -np.inf
        for r in range(t):
            if alpha[r] > 0.0 and grad[r] > top:
                top = grad[r]
        violation = top - grad[i]
        if violation <= tol:
            break
        j = -1
        best = -1.0
        for r in range(t):
            diff = grad[r] - grad[i]
            if alpha[r] > 0.0 and diff > 0.0:
                curv = K[i, i] + K[r, r] - 2.0 * K[i, r]
                gain = diff * diff / curv if curv > 1e-300 else np.inf
                if gain > best:
                    best = gain
                    j = r
        curv = K[i, i] + K[j, j] - 2.0 * K[i, j]
        diff = grad[j] - grad[i]
        step = alpha[j] if curv <= 1e-300 else min(alpha[j], diff / curv)
        alpha[i] += step
        alpha[j] -= step
        for r in range(t):
            grad[r] += step * (K[r, i] - K[r, j])
    return violation
