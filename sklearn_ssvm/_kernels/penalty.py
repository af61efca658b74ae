"""The elastic net's exact line search: a 1-D piecewise quadratic, breakpoints sorted.

Along a direction ``d`` from a dual point, every solver that moves an elastic-net dual (BCFW's
block steps, the SVRG solvers' merged dual bound) minimises

    f(gamma) = -rate * gamma + (1 / (2c)) sum_j (|b_j + gamma d_j| - t)_+^2,   gamma in [0, gmax]

(``b`` the unthresholded weights ``u``, ``t`` the l1 weight, ``c`` the l2 modulus: the conjugate
``r*`` of ``penalties.ElasticNet`` along the segment, minus the linear gain). ``f`` is convex and
piecewise quadratic: ``f'(gamma) = -rate + (1/c) sum_j d_j soft(b_j + gamma d_j, t)`` is
non-decreasing and piecewise linear, with a kink where ``b_j + gamma d_j = +-t``. Only the
coordinates the direction touches count, so a sparse step costs O(k log k) in its ``k`` entries.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def soft_line_search(rate, base, direction, n, threshold, c, gamma_max, breaks, owner):
    """Exact minimiser of ``f`` above over ``[0, gamma_max]``, from the first ``n`` entries of
    ``base`` and ``direction``.

    ``breaks`` (float) and ``owner`` (int64) are scratch arrays of at least ``2 n`` entries.
    With ``threshold = 0`` this is the L2 line search ``rate c / ||d||^2`` clipped.
    """
    if gamma_max <= 0.0:
        return 0.0
    # slope of f' on the first segment, f'(0+), and the kinks inside (0, gamma_max)
    slope = 0.0
    deriv = -rate
    m = 0
    for j in range(n):
        d = direction[j]
        if d == 0.0:
            continue
        b = base[j]
        if threshold == 0.0:  # no kinks: every coordinate counts
            deriv += d * b / c
            slope += d * d / c
            continue
        if b > threshold or (b == threshold and d > 0.0):
            deriv += d * (b - threshold) / c
            slope += d * d / c
        elif b < -threshold or (b == -threshold and d < 0.0):
            deriv += d * (b + threshold) / c
            slope += d * d / c
        for edge in (threshold, -threshold):
            g = (edge - b) / d
            if 0.0 < g < gamma_max:
                breaks[m] = g
                # the coordinate and the edge it reaches (sign +1 for +t), in one integer
                owner[m] = 2 * j + (1 if edge > 0.0 else 0)
                m += 1
    if deriv >= 0.0:
        return 0.0
    order = np.argsort(breaks[:m])
    at = 0.0
    for k in range(m):
        g = breaks[order[k]]
        # f' is linear on [at, g]: its root lies there if f'(g) >= 0
        if slope > 0.0 and deriv + slope * (g - at) >= 0.0:
            return at - deriv / slope
        deriv += slope * (g - at)
        at = g
        j = owner[order[k]] // 2
        d = direction[j]
        # at +-t the coordinate enters when it moves outwards, else leaves (the edge's sign,
        # not that of base + g d, which rounding loses for tiny thresholds)
        entering = (owner[order[k]] % 2 == 1) == (d > 0.0)
        slope += d * d / c if entering else -d * d / c
        if slope < 0.0:  # rounding of entries and exits
            slope = 0.0
    if slope > 0.0 and deriv + slope * (gamma_max - at) >= 0.0:
        return at - deriv / slope
    return gamma_max
