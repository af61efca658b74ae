"""The general box-hyperplane projection of ``sklearn_ssvm._kernels.projection`` (spec 003 §2.5),
with the sort-based reference root finder the ``O(n)`` ``root_select`` is checked against. Not
cached: numba's cache would not see a change to the package kernels these compile in."""
import numpy as np
from numba import njit

from sklearn_ssvm._kernels.projection import _check_feasible, _fold, _solve_affine, root_select


@njit(nogil=True)
def box_eq_kinks_into(m, d, lo, hi, sigma, z, p, q, s):
    """Kinks ``p <= q`` and slopes ``s`` of ``g`` for the general problem; returns ``c``.

    ``s_i = 0`` marks a coordinate with ``sigma_i = 0``; its kinks are ``+-inf`` so that it
    never becomes active.
    """
    c = -z
    for i in range(m.shape[0]):
        sg = sigma[i]
        if sg == 0.0:
            p[i] = -np.inf
            q[i] = np.inf
            s[i] = 0.0
            continue
        c += sg * m[i]
        k_lo = (lo[i] - m[i]) * d[i] / sg
        k_hi = (hi[i] - m[i]) * d[i] / sg
        if sg > 0.0:
            p[i], q[i] = k_lo, k_hi
        else:
            p[i], q[i] = k_hi, k_lo
        s[i] = sg * sg / d[i]
    return c


@njit(nogil=True)
def _g(nu, p, q, s, c):
    total = c
    for i in range(p.shape[0]):
        total += s[i] * min(max(nu, p[i]), q[i])  # min/max, not branches: kinks come unsorted
    return total


@njit(nogil=True)
def root_sorted(p, q, s, c, work):
    """Root ``nu`` of ``g`` by sorting the finite kinks (the reference, ``O(n log n)``).

    ``work`` is scratch of length ``>= 2n``.
    """
    _check_feasible(p, q, s, c)
    n_k = 0
    for i in range(p.shape[0]):
        if s[i] == 0.0:
            continue
        if np.isfinite(p[i]):
            work[n_k] = p[i]
            n_k += 1
        if np.isfinite(q[i]):
            work[n_k] = q[i]
            n_k += 1
    kinks = np.sort(work[:n_k])
    # bracket: the last kink with g <= 0 and the first with g > 0 (either may be infinite)
    left, right = -np.inf, np.inf
    a, b = 0, n_k - 1
    while a <= b:
        mid = (a + b) // 2
        val = _g(kinks[mid], p, q, s, c)
        if val == 0.0:
            return kinks[mid]
        if val < 0.0:
            left = kinks[mid]
            a = mid + 1
        else:
            right = kinks[mid]
            b = mid - 1
    const, slope = c, 0.0
    for i in range(p.shape[0]):
        dc, ds, _ = _fold(p[i], q[i], s[i], left, right)
        const += dc
        slope += ds
    return _solve_affine(left, right, const, slope)


@njit(nogil=True)
def project_box_eq_into(m, d, lo, hi, sigma, z, out, p, q, s, work, method=1):
    """Solve the spec 003 §2.5 problem into ``out``; return the multiplier ``nu``.

    Parameters
    ----------
    m, d, lo, hi, sigma : ndarray of shape (n,), float64
        Target, diagonal weights (``d > 0``), bounds (``lo < hi``, infinite allowed) and
        hyperplane normal.
    z : float
        Hyperplane offset.
    out : ndarray of shape (n,)
        Receives the projection.
    p, q, s : ndarray of shape (n,), float64
        Scratch for the kinks and slopes.
    work : ndarray of shape (2n,), float64
        Scratch for ``method=0``.
    method : int
        0: sort-based reference (:func:`root_sorted`); 1: ``O(n)`` selection
        (:func:`root_select`).

    Returns
    -------
    nu : float
        Multiplier of the equality: ``out_i = clip(m_i + nu sigma_i / d_i, lo_i, hi_i)``.
    """
    c = box_eq_kinks_into(m, d, lo, hi, sigma, z, p, q, s)
    nu = root_sorted(p, q, s, c, work) if method == 0 else root_select(p, q, s, c)
    for i in range(m.shape[0]):
        out[i] = min(max(m[i] + nu * sigma[i] / d[i], lo[i]), hi[i])
    return nu
