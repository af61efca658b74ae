"""PRAGAM's inner loop for the binary linear SVM (spec 003 §2.4, Algorithm 1), dense or CSR.

The data matrix ``X`` (``n x d``, rows are examples) is passed either dense (``indptr`` empty)
or as CSR arrays (``dense`` an empty ``(0, 0)`` array); :func:`matvec_into` and
:func:`rmatvec_into` dispatch on that. Dense products call BLAS through ``np.dot``.

Running the whole loop here rather than in Python matters: PRAGAM needs ``O(1/sqrt(eps))``
cheap iterations, and on small problems the interpreter's overhead per iteration would be ten
times the arithmetic.
"""
import numpy as np
from numba import njit

from .projection import project_svm_into

#: columns of the history rows written by :func:`pragam_chunk`
PRIMAL, DUAL, GAP, MU = 0, 1, 2, 3
N_HIST = 4
#: factors on the adaptive Lipschitz estimate: after a rejected step, after an accepted one
ADAPT_UP, ADAPT_DOWN = 2.0, 1.2


@njit(cache=True, nogil=True)
def matvec_into(dense, indptr, indices, data, v, out):
    """``out = X v``."""
    if indptr.shape[0] == 0:
        out[:] = np.dot(dense, v)
        return
    for i in range(out.shape[0]):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * v[indices[k]]
        out[i] = acc


@njit(cache=True, nogil=True)
def rmatvec_into(dense, indptr, indices, data, r, out):
    """``out = X^T r``."""
    if indptr.shape[0] == 0:
        out[:] = np.dot(r, dense)
        return
    out[:] = 0.0
    for i in range(r.shape[0]):
        ri = r[i]
        if ri != 0.0:
            for k in range(indptr[i], indptr[i + 1]):
                out[indices[k]] += data[k] * ri


@njit(cache=True, nogil=True)
def kth_smallest(buf, n, k, seed=88172645463325252):
    """The ``k``-th smallest (0-based) of ``buf[:n]`` by quickselect; permutes ``buf``.

    Three-way partitions (equal keys stop the search at once, so duplicates cost nothing) around
    random pivots. On return every ``buf[j]``, ``j > k``, is at least the result.
    """
    lo, hi = 0, n - 1
    state = np.uint64(seed)
    while lo < hi:
        state ^= state << np.uint64(13)
        state ^= state >> np.uint64(7)
        state ^= state << np.uint64(17)
        pivot = buf[lo + int(state % np.uint64(hi - lo + 1))]
        lt, i, gt = lo, lo, hi
        while i <= gt:
            x = buf[i]
            if x < pivot:
                buf[i], buf[lt] = buf[lt], x
                lt += 1
                i += 1
            elif x > pivot:
                buf[i], buf[gt] = buf[gt], x
                gt -= 1
            else:
                i += 1
        if k < lt:
            hi = lt - 1
        elif k > gt:
            lo = gt + 1
        else:
            return pivot
    return buf[lo]


@njit(cache=True, nogil=True)
def min_bias_interval(margins, y, work):
    """Interval of minimisers of ``phi(b) = (1/n) sum_i [1 - y_i (margins_i + b)]_+``.

    ``phi`` is piecewise linear with kinks ``y_i - margins_i``; its slope after the ``j``
    smallest kinks is ``(j - n_pos)/n``, so it is flat (and minimal) between the ``n_pos``-th
    and ``(n_pos + 1)``-th smallest kinks (spec 003 §2.6): two order statistics in ``O(n)``.
    ``y`` must hold both signs; ``work`` is scratch of length ``n``.
    """
    n = margins.shape[0]
    n_pos = 0
    for i in range(n):
        work[i] = y[i] - margins[i]
        n_pos += y[i] > 0.0
    low = kth_smallest(work, n, n_pos - 1)
    high = np.inf
    for j in range(n_pos, n):
        high = min(high, work[j])
    return low, high


@njit(cache=True, nogil=True)
def hinge_risk(margins, y, b):
    """``(1/n) sum_i [1 - y_i (margins_i + b)]_+``."""
    total = 0.0
    for i in range(margins.shape[0]):
        total += max(1.0 - y[i] * (margins[i] + b), 0.0)
    return total / margins.shape[0]


@njit(cache=True, nogil=True)
def hinge_objective(margins, y, sq_norm, alpha, fit_intercept, work):
    """``J(w)`` of spec 003 eq. (20) from ``margins = X w``, and the optimal bias.

    Without intercept the bias is 0; with it, the midpoint of :func:`min_bias_interval`.
    """
    b = 0.0
    if fit_intercept:
        low, high = min_bias_interval(margins, y, work)
        b = 0.5 * (low + high)
    return 0.5 * alpha * sq_norm + hinge_risk(margins, y, b), b


@njit(cache=True, nogil=True)
def project_q2_into(v, y, upper, fit_intercept, out, p, q, s):
    """Euclidean projection onto ``Q2`` (spec 003 eq. (22)): clipping, or box and hyperplane."""
    if fit_intercept:
        project_svm_into(v, y, upper, out, p, q, s)
    else:
        for i in range(v.shape[0]):
            out[i] = min(max(v[i], 0.0), upper)


@njit(cache=True, nogil=True)
def _dual_weights_into(dense, indptr, indices, data, y, a, alpha, r, out):
    """``out = w(a) = X^T (y * a) / lambda`` (spec 003 eq. (24))."""
    for i in range(y.shape[0]):
        r[i] = y[i] * a[i]
    rmatvec_into(dense, indptr, indices, data, r, out)
    for j in range(out.shape[0]):
        out[j] /= alpha


@njit(cache=True, nogil=True)
def pragam_start(dense, indptr, indices, data, y, alpha, L, center, fit_intercept, w, u, a):
    """Step 1 of Algorithm 1 from ``a_{-1} = center``: ``w_0 = w(a_{-1})``, ``a_0 = v(a_{-1})``.

    Fills ``w``, ``u = X w_0`` and ``a``; one pair of products serves both.
    """
    n = y.shape[0]
    r = np.empty(n)
    _dual_weights_into(dense, indptr, indices, data, y, center, alpha, r, w)
    matvec_into(dense, indptr, indices, data, w, u)
    for i in range(n):
        r[i] = center[i] + (1.0 - y[i] * u[i]) / L  # grad D(a_{-1}) = 1 - y * (X w_0)
    project_q2_into(r, y, 1.0 / n, fit_intercept, a, np.empty(n), np.empty(n), np.empty(n))


@njit(cache=True, nogil=True)
def pragam_chunk(dense, indptr, indices, data, y, alpha, L, center, fit_intercept, tol, k0, k1,
                 max_iter, gap_every, adaptive, state, w, u, a, hist):
    """Evaluate iterations ``k0..k1`` of Algorithm 1 and step after each; state in place.

    The state is ``(w_k, u_k = X w_k, a_k)``; ``u`` is maintained by linearity so the primal
    ``J(w_k)`` costs ``O(n)`` (spec 003 §2.4 bookkeeping). Row ``k - k0`` of ``hist``
    receives ``J(w_k)``, ``D(a_k)``, the gap (NaN where the dual was not evaluated: every
    ``gap_every`` iterations and at ``max_iter``) and ``mu_k``.

    Without ``adaptive``, ``mu_k = 4L/((k+1)(k+2))`` and ``tau_k = 2/(k+3)``, the closed form
    of ``mu_0 = 2L``, ``mu_{k+1} = (1 - tau_k) mu_k``. With it, ``state = [L_k, mu_k]`` carries
    an estimate ``L_k <= L`` of the dual gradient's Lipschitz constant along the steps and the
    smoothing: each step takes the largest ``tau`` with ``L_k tau^2 <= (1 - tau) mu_k`` (the
    condition under which the step keeps the excessive gap ``J_mu(w) <= D(a)``, met with
    equality by the closed form at ``L``) and is accepted when its gradient step obeys the
    descent inequality at ``L_k``, ``lambda ||w(v) - w(beta)||^2 <= L_k ||v - beta||^2`` (``D``
    is quadratic: the inequality is exact); otherwise ``L_k`` grows by ``ADAPT_UP``, up to
    ``L``, where it always holds. Each accepted step divides ``L_k`` by ``ADAPT_DOWN`` (spec
    001's adaptive rule, §2.4). The step's ``w(v)`` is the next iteration's dual weights, so
    an accepted step costs the products of a fixed one.

    Returns ``(k, status, intercept)``: the last iteration evaluated (``k1``, or earlier when
    stopped); 0 running, 1 converged (gap <= tol), 2 reached ``max_iter``; the optimal bias for
    ``w_k``."""
    n, d = y.shape[0], w.shape[0]
    upper = 1.0 / n
    r, v, a_mu, beta, z = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    p, q, s = np.empty(n), np.empty(n), np.empty(n)
    a_new = np.empty(n)
    w_beta, w_a, w_new = np.empty(d), np.empty(d), np.empty(d)
    known = False  # whether w_a holds w(a_k), from the last accepted adaptive step
    intercept = 0.0
    for k in range(k0, k1 + 1):
        mu = state[1] if adaptive else 4.0 * L / ((k + 1) * (k + 2))
        primal, intercept = hinge_objective(u, y, np.dot(w, w), alpha, fit_intercept, r)
        row = hist[k - k0]
        row[PRIMAL], row[DUAL], row[GAP], row[MU] = primal, np.nan, np.nan, mu
        if k % gap_every == 0 or k == max_iter:
            if not known:
                _dual_weights_into(dense, indptr, indices, data, y, a, alpha, r, w_a)
            row[DUAL] = np.sum(a) - 0.5 * alpha * np.dot(w_a, w_a)
            row[GAP] = primal - row[DUAL]
            if row[GAP] <= tol:
                return k, 1, intercept
        if k == max_iter:
            return k, 2, intercept
        # steps 3-4
        for i in range(n):
            v[i] = center[i] + (1.0 - y[i] * u[i]) / mu
        project_q2_into(v, y, upper, fit_intercept, a_mu, p, q, s)  # a_mu(w_k), eq. (23)
        Lk = state[0] if adaptive else L
        while True:
            if adaptive:  # the largest tau with Lk tau^2 <= (1 - tau) mu
                tau = 2.0 * mu / (mu + np.sqrt(mu * mu + 4.0 * Lk * mu))
            else:
                tau = 2.0 / (k + 3)
            for i in range(n):
                beta[i] = (1.0 - tau) * a[i] + tau * a_mu[i]
            _dual_weights_into(dense, indptr, indices, data, y, beta, alpha, r, w_beta)
            matvec_into(dense, indptr, indices, data, w_beta, z)
            for i in range(n):
                v[i] = beta[i] + (1.0 - y[i] * z[i]) / Lk  # grad D(beta) = 1 - y * X w(beta)
            project_q2_into(v, y, upper, fit_intercept, a_new, p, q, s)  # v(beta), eq. (25)
            if not adaptive:
                break
            _dual_weights_into(dense, indptr, indices, data, y, a_new, alpha, r, w_new)
            curvature = 0.0
            for j in range(d):
                curvature += (w_new[j] - w_beta[j]) ** 2
            step = 0.0
            for i in range(n):
                step += (a_new[i] - beta[i]) ** 2
            if alpha * curvature <= Lk * step * (1.0 + 1e-12) or Lk >= L:
                break
            Lk = min(Lk * ADAPT_UP, L)
        for j in range(d):
            w[j] = (1.0 - tau) * w[j] + tau * w_beta[j]
        for i in range(n):
            u[i] = (1.0 - tau) * u[i] + tau * z[i]
            a[i] = a_new[i]
        if adaptive:
            w_a[:] = w_new
            known = True
            state[0] = Lk / ADAPT_DOWN
            state[1] = (1.0 - tau) * mu
    return k1, 0, intercept
