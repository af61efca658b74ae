"""Projection onto a box intersected with a hyperplane, for a diagonal quadratic (spec 003 §2.5).

Solves Appendix B's problem

    min_a  1/2 sum_i d_i (a_i - m_i)^2   s.t.  lo_i <= a_i <= hi_i,   sum_i sigma_i a_i = z

with ``d_i > 0`` (the paper's ``d_i^2``). Stationarity with a multiplier ``nu`` for the equality
gives ``a_i(nu) = clip(m_i + nu sigma_i / d_i, lo_i, hi_i)`` (eq. (27)-(30)), and ``nu`` is the
root of the non-decreasing, piecewise-linear

    g(nu) = sum_i sigma_i a_i(nu) - z = sum_i s_i clip(nu, p_i, q_i) + c,

written here through each coordinate's two kinks ``p_i <= q_i`` (where ``a_i`` reaches its
bounds), its slope ``s_i = sigma_i^2 / d_i`` and the constant ``c = sum_i sigma_i m_i - z``.
Coordinates with ``sigma_i = 0`` are plain clipping; infinite bounds give infinite kinks.

:func:`root_select` is the ``O(n)`` expected-time version of Algorithm 2: pivot on a random kink
strictly inside the current bracket and fold every coordinate whose kinks have left the bracket
into a running constant and slope, so ``g`` costs ``O(active)`` per round. All copies of a
duplicated pivot leave the bracket together, which is what makes it terminate where the printed
Algorithm 2 loops (erratum 3). The general problem's sort-based reference lives with the tests.

Every kernel is ``@njit(cache=True, nogil=True)``; none validates its input.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _fold(pi, qi, si, left, right):
    """Contribution of a coordinate with kinks ``pi <= qi`` on the open bracket ``(left, right)``.

    Returns ``(constant, slope, active)``: a coordinate with no kink strictly inside is affine
    there; ``active`` is True otherwise. Written with selects rather than branches, which
    mispredict on unsorted kinks.
    """
    below = qi <= left
    above = pi >= right
    spans = pi <= left and qi >= right
    const = si * qi if below else (si * pi if above else 0.0)
    return const, si if spans else 0.0, not (below or above or spans)


@njit(cache=True, nogil=True)
def _solve_affine(left, right, c, slope):
    """Root of ``c + slope * nu`` on ``[left, right]``, where ``g`` is affine.

    A flat segment (``slope == 0``) means ``g == 0`` on all of it (else the problem was
    infeasible, checked before): any point is a root; the finite end nearest 0 is returned.
    """
    if slope > 0.0:
        nu = -c / slope
    else:
        nu = 0.0
    return min(max(nu, left), right)


@njit(cache=True, nogil=True)
def _check_feasible(p, q, s, c):
    """Raise unless the inputs are numbers (NaN kinks or slopes would keep the root search
    from ever closing its bracket) and ``g(-inf) <= 0 <= g(+inf)`` (up to rounding)."""
    if not np.isfinite(c):
        raise ValueError("non-finite projection input (an overflow upstream: rescale the data)")
    for i in range(p.shape[0]):
        if not (np.isfinite(s[i]) and p[i] < np.inf and q[i] > -np.inf and p[i] <= q[i]):
            raise ValueError("non-finite projection input (an overflow upstream: rescale the "
                             "data)")
    low = c
    high = c
    scale = abs(c)
    low_inf = False
    high_inf = False
    for i in range(p.shape[0]):
        if s[i] == 0.0:
            continue
        if p[i] == -np.inf:
            low_inf = True
        else:
            low += s[i] * p[i]
            scale += abs(s[i] * p[i])
        if q[i] == np.inf:
            high_inf = True
        else:
            high += s[i] * q[i]
            scale += abs(s[i] * q[i])
    tol = 1e-12 * scale
    if (not low_inf and low > tol) or (not high_inf and high < -tol):
        raise ValueError("infeasible projection: the hyperplane misses the box")


@njit(cache=True, nogil=True)
def root_select(p, q, s, c, seed=12345):
    """Root ``nu`` of ``g`` in ``O(n)`` expected time (Algorithm 2 with aggregation).

    The pivot is a kink strictly inside the bracket, drawn at random (xorshift from ``seed``), so
    the bracket's kink count drops by a constant fraction in expectation and by at least one
    always. The still-active coordinates are compacted to the front of ``p, q, s`` (which are
    overwritten) so every round reads contiguous memory.
    """
    _check_feasible(p, q, s, c)
    left, right = -np.inf, np.inf
    const, slope = c, 0.0
    n_act = p.shape[0]
    state = np.uint64(seed) | np.uint64(1)
    while True:
        kept = 0
        for j in range(n_act):
            pj, qj, sj = p[j], q[j], s[j]
            dc, ds, act = _fold(pj, qj, sj, left, right)
            const += dc
            slope += ds
            p[kept], q[kept], s[kept] = pj, qj, sj  # branch-free compaction
            kept += act
        n_act = kept
        if n_act == 0:
            return _solve_affine(left, right, const, slope)
        state ^= state << np.uint64(13)
        state ^= state >> np.uint64(7)
        state ^= state << np.uint64(17)
        i = int(state % np.uint64(n_act))
        # an active coordinate has at least one kink strictly inside; take one of them
        p_in = left < p[i] < right
        q_in = left < q[i] < right
        pivot = p[i] if p_in and (not q_in or (state >> np.uint64(40)) & np.uint64(1)) else q[i]
        val = const + slope * pivot
        for j in range(n_act):
            val += s[j] * min(max(pivot, p[j]), q[j])
        if val != val:  # inf - inf: the bracket could never close
            raise ValueError("non-finite projection input (an overflow upstream: rescale the "
                             "data)")
        if val == 0.0:
            return pivot
        if val < 0.0:
            left = pivot
        else:
            right = pivot


@njit(cache=True, nogil=True)
def project_svm_into(m, y, upper, out, p, q, s):
    """Projection onto ``{a in [0, upper]^n : sum_i y_i a_i = 0}`` with ``y_i = +-1``.

    The SVM-with-bias feasible set ``Q2`` of spec 003 eq. (22) (``upper = 1/n``): unit weights,
    ``a_i = clip(m_i + nu y_i, 0, upper)``, kinks ``-y_i m_i`` and ``y_i (upper - m_i)``.
    ``O(n)`` expected time (:func:`root_select`); ``y`` must hold both signs.
    """
    c = 0.0
    for i in range(m.shape[0]):
        if y[i] > 0.0:
            p[i] = -m[i]
            q[i] = upper - m[i]
        else:
            p[i] = m[i] - upper
            q[i] = m[i]
        s[i] = 1.0
        c += y[i] * m[i]
    nu = root_select(p, q, s, c)
    for i in range(m.shape[0]):
        out[i] = min(max(m[i] + nu * y[i], 0.0), upper)
    return nu
