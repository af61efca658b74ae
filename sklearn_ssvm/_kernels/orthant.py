"""OWL-QN's l1 pieces (Andrew & Gao 2007), one pass over the parameter vector each.

A CRF's parameter vector holds millions of weights, and numpy spends a temporary (and a page
fault per 4 kB of it) on every sign, mask and product of these formulas: in Python the three
took a quarter of an iteration's time on CoNLL-2000.
"""
from numba import njit


@njit(cache=True, nogil=True)
def pseudo_gradient_into(w, grad, l1, out):
    """``out`` = the pseudo-gradient of ``smooth + l1 ||w||_1`` (``grad``: the smooth part's):
    ``grad + l1 sign(w)`` where ``w != 0``; at 0 the one-sided derivative of least magnitude,
    0 where ``[grad - l1, grad + l1]`` holds 0."""
    for j in range(w.shape[0]):
        x = w[j]
        g = grad[j]
        if x > 0.0:
            out[j] = g + l1
        elif x < 0.0:
            out[j] = g - l1
        elif g + l1 < 0.0:
            out[j] = g + l1
        elif g - l1 > 0.0:
            out[j] = g - l1
        else:
            out[j] = 0.0


@njit(cache=True, nogil=True)
def clip_direction(d, pg):
    """Zero the coordinates of ``d`` that do not descend (``d_j pg_j >= 0``); returns
    ``<pg, d>`` after the clip."""
    slope = 0.0
    for j in range(d.shape[0]):
        v = d[j] * pg[j]
        if v >= 0.0:
            d[j] = 0.0
        else:
            slope += v
    return slope


@njit(cache=True, nogil=True)
def orthant_step(w, d, pg, step, project, out):
    """``out = w + step d``, with ``project`` set onto the orthant of ``w`` (of ``-pg`` where
    ``w`` is 0): a coordinate that would leave it, or that has no orthant, is 0. Returns
    ``<pg, out - w>``, the Armijo condition's decrease."""
    decrease = 0.0
    for j in range(w.shape[0]):
        x = w[j]
        v = x + step * d[j]
        if project:
            xi = x if x != 0.0 else -pg[j]
            if not v * xi > 0.0:
                v = 0.0
        out[j] = v
        decrease += pg[j] * (v - x)
    return decrease
