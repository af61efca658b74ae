"""Numba kernels for the smoothed max: simplex projection, top-K and entropy weights.

These are the in-loop counterparts of :mod:`sklearn_ssvm.smoothing` (spec 000 Sec. 6.1). They do
**no input validation**: callers pass 1-D float64 arrays with at least one finite entry, no NaN
and no ``+inf`` (``-inf`` entries are allowed and receive weight exactly 0). The public, validated
API lives in :mod:`sklearn_ssvm.smoothing`; the tests check that both agree.

All kernels are ``@njit(cache=True, nogil=True)`` without explicit signatures, so nothing is
compiled at import time.

Math (Pillutla et al., "A Smoother Way to Train Structured Prediction Models"):

* Euclidean projection onto the simplex ``proj_Delta(v) = argmin_{u in Delta} ||u - v||^2`` by the
  sort-based rule (spec 000 Sec. 1.5): with ``v_(1) >= ... >= v_(m)``,
  ``k = max{j : v_(j) - (sum_{i<=j} v_(i) - 1)/j > 0}``, ``tau = (sum_{i<=k} v_(i) - 1)/k`` and
  ``u = max(v - tau, 0)``. This reproduces Prop. 3, eq. (8)-(10).
* The l2^2-smoothed max ``h_{mu l2^2}(z) = <z, u> - (mu/2)(||u||^2 - 1)``, ``u = proj_Delta(z/mu)``
  (Prop. 3); applied to the K best scores it is the top-K smoother ``h_{mu,K}`` of eq. (11).
* The entropy-smoothed max ``mu log sum_i exp(z_i/mu)`` with gradient ``softmax(z/mu)``.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def project_simplex_into(v, out, work):
    """Euclidean projection of ``v`` onto the probability simplex, written into ``out``.

    ``v`` (m,) float64: ``-inf`` entries are allowed (they get weight exactly 0); at least one
    entry must be finite; NaN / ``+inf`` give NaN output (not checked). ``out`` (m,) float64 may be
    the same array as ``v`` (the update is element-wise); ``work`` (>= m,) float64, scratch for the
    sort, must not alias ``v`` or ``out``. Returns the int size ``k`` of the support of the
    projection (number of strictly positive weights), i.e. the ``k`` of Prop. 3, eq. (8).

    Sort-based ``O(m log m)`` algorithm (spec 000 Sec. 1.5). Values are shifted by ``max v``
    before the threshold is computed (the projection is shift invariant up to the threshold),
    which keeps the first candidate ``j = 1`` always admissible even for huge magnitudes. Entries
    with ``v_i - tau <= 0`` are set to exactly ``0.0``."""
    n = v.shape[0]
    buf = work[:n]
    for i in range(n):
        buf[i] = v[i]
    buf.sort()  # ascending; -inf first
    vmax = buf[n - 1]
    csum = 0.0
    k = 0
    tau = 0.0  # threshold relative to vmax
    j = 0
    for r in range(n - 1, -1, -1):
        x = buf[r]
        if x == -np.inf:
            break
        x = x - vmax
        j += 1
        csum += x
        t = (csum - 1.0) / j
        if x - t > 0.0:
            k = j
            tau = t
    if k == 0:  # only reached on invalid input (all -inf, NaN, +inf)
        for i in range(n):
            out[i] = np.nan
        return 0
    for i in range(n):
        d = (v[i] - vmax) - tau
        out[i] = d if d > 0.0 else 0.0
    return k


@njit(cache=True, nogil=True)
def project_simplex(v):
    """Allocating version of :func:`project_simplex_into`: return ``proj_Delta(v)``."""
    n = v.shape[0]
    out = np.empty(n, dtype=np.float64)
    work = np.empty(n, dtype=np.float64)
    project_simplex_into(v, out, work)
    return out


@njit(cache=True, nogil=True)
def project_blocks_into(v, offsets, mass, out, work):
    """Project each block ``v[offsets[i]:offsets[i + 1]]`` onto ``mass[i]`` times the simplex
    (``mass[i] > 0``; a zero mass gives zeros), written into ``out``; ``work`` holds the
    largest block."""
    for i in range(offsets.shape[0] - 1):
        a, b = offsets[i], offsets[i + 1]
        m = mass[i]
        if m <= 0.0:
            out[a:b] = 0.0
            continue
        project_simplex_into(v[a:b] / m, out[a:b], work)
        out[a:b] *= m


@njit(cache=True, nogil=True)
def _hard_max_into(z, out):
    """``max z``, with ``out`` the one-hot of its first argmax: the weights at ``mu = 0``.

    ``out`` may be ``z``: the maximum is read before ``out`` is written.
    """
    imax = 0
    for i in range(1, z.shape[0]):
        if z[i] > z[imax]:
            imax = i
    zmax = z[imax]
    out[:] = 0.0
    out[imax] = 1.0
    return zmax


@njit(cache=True, nogil=True)
def topk_weights_into(scores, mu, out, work):
    """Top-K (l2^2) smoothed max of a score list; weights written into ``out``.

    Computes ``u* = proj_{Delta^{K-1}}(z / mu)`` and the exact smoothed value
    ``h_{mu,K} = <z, u*> - (mu/2)(||u*||^2 - 1)`` of eq. (11) (spec 000 Sec. 1.6), together with
    the paper's Algo. 6 value ``<z, u*>`` (errata item 2). Applied to the full score vector this
    is the l2^2 smoother ``h_{mu l2^2}`` of Prop. 3.

    ``scores`` (K,) float64: ``psi(y_(1)), ..., psi(y_(K))`` of the K best outputs (conventionally
    non-increasing; the math does not depend on the order); ``-inf`` padding is allowed and gets
    weight exactly 0; at least one value must be finite. ``mu >= 0``; ``mu == 0`` gives the hard
    max, a one-hot at the first argmax. ``out`` (K,) float64 receives ``u*`` (must not alias
    ``scores``); ``work`` (>= K,) float64 is scratch. Returns ``(value, linearized_value)``: the
    exact ``h_{mu,K}(z)`` and ``<z, u*>`` (Algo. 6 / reference-code value); ``value -
    linearized_value`` lies in ``[0, mu/2)``."""
    n = scores.shape[0]
    if mu <= 0.0:
        zmax = _hard_max_into(scores, out)
        return zmax, zmax
    zmax = np.max(scores)  # a finite shift: the projection is shift invariant
    for i in range(n):
        out[i] = (scores[i] - zmax) / mu
    project_simplex_into(out, out, work)
    lin = 0.0
    sq = 0.0
    for i in range(n):
        u = out[i]
        if u > 0.0:
            lin += u * (scores[i] - zmax)
            sq += u * u
    lin += zmax
    value = lin - 0.5 * mu * (sq - 1.0)
    return value, lin


@njit(cache=True, nogil=True)
def topk_smooth_max(scores, mu):
    """Allocating version of :func:`topk_weights_into`: ``(value, weights, linearized_value)``."""
    n = scores.shape[0]
    out = np.empty(n, dtype=np.float64)
    work = np.empty(n, dtype=np.float64)
    value, lin = topk_weights_into(scores, mu, out, work)
    return value, out, lin


@njit(cache=True, nogil=True)
def entropy_smooth_max_into(z, mu, out):
    """Entropy-smoothed max ``mu * logsumexp(z / mu)``, returned; ``softmax(z / mu)`` into ``out``.

    Max-shifted, so it never overflows; ``-inf`` entries get weight exactly 0. ``mu == 0`` gives
    the hard max with a one-hot at the first argmax (spec 000 Sec. 1.4, Lemma 7(ii)).
    ``out`` may alias ``z``.
    """
    n = z.shape[0]
    if mu <= 0.0:
        return _hard_max_into(z, out)
    zmax = np.max(z)
    s = 0.0
    for i in range(n):
        e = np.exp((z[i] - zmax) / mu)  # exp(-inf) = 0
        out[i] = e
        s += e
    for i in range(n):
        out[i] /= s
    return zmax + mu * np.log(s)
