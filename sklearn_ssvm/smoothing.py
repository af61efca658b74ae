"""Smoothing primitives for the max function (spec 000 Sec. 1.3-1.7, 6.1).

The structured hinge loss is a composition ``f = h o g`` with ``h(z) = max_i z_i`` and
``g(w) = (psi(y; w))_y`` (Pillutla et al., "A Smoother Way to Train Structured Prediction Models",
Def. 1, Prop. 2). This module provides the smoothed versions of ``h`` and their gradients:

* :func:`project_simplex` -- Euclidean projection onto the probability simplex;
* :func:`smooth_max` -- hard max (``kind=None``), entropy smoothing (``"entropy"``) and
  l2^2 smoothing (``"l2"``), each returning ``(value, weights)`` where ``weights`` is the
  gradient ``nabla h_{mu omega}(z)``;
* :func:`topk_smooth_max` -- the top-K strategy of eq. (11) / Prop. 4;
* :func:`smoothing_bound` -- the constant ``D_omega`` in ``max z <= h_{mu omega} <= max z + mu D``.

Everything here is pure numpy with input validation. The numba counterparts used inside
inference kernels live in :mod:`sklearn_ssvm._kernels.simplex` and compute the same quantities.
"""
import numbers

import numpy as np

__all__ = ["project_simplex", "smooth_max", "topk_smooth_max", "smoothing_bound"]

_KINDS = (None, "entropy", "l2")


def _check_vector(v, name):
    """Return ``v`` as a 1-D float64 array with finite or ``-inf`` entries (>= 1 finite)."""
    arr = np.asarray(v, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must be non-empty.")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN.")
    if (arr == np.inf).any():
        raise ValueError(f"{name} contains +inf.")
    if not np.isfinite(arr).any():
        raise ValueError(f"{name} must contain at least one finite entry (all are -inf).")
    return arr


def _check_mu(mu):
    if isinstance(mu, (bool, np.bool_)) or not isinstance(mu, numbers.Real):
        raise ValueError(f"mu must be a real number >= 0, got {mu!r}.")
    mu = float(mu)
    if not np.isfinite(mu) or mu < 0.0:
        raise ValueError(f"mu must be finite and >= 0, got {mu!r}.")
    return mu


def _project_simplex_unchecked(v):
    """Sort-based projection; ``v`` is 1-D float64, finite or ``-inf``, with a finite entry."""
    vmax = np.max(v)
    shifted = v - vmax  # shift invariance; -inf stays -inf, max becomes exactly 0
    srt = np.sort(shifted)[::-1]
    srt = srt[np.isfinite(srt)]
    csum = np.cumsum(srt)
    j = np.arange(1, srt.shape[0] + 1, dtype=np.float64)
    thresh = (csum - 1.0) / j
    admissible = np.nonzero(srt - thresh > 0.0)[0]
    k = admissible[-1] + 1  # j = 1 is always admissible since srt[0] == 0
    tau = thresh[k - 1]
    u = shifted - tau
    u[~(u > 0.0)] = 0.0  # exact zeros where v_i - tau <= 0 (and for -inf entries)
    return u


def project_simplex(v):
    """Euclidean projection onto the probability simplex.

    Solves ``argmin_{u in Delta^{m-1}} ||u - v||_2^2`` with the sort-based ``O(m log m)``
    algorithm (spec 000 Sec. 1.5): sort ``v`` decreasingly, take
    ``k = max{j : v_(j) - (sum_{i<=j} v_(i) - 1)/j > 0}``, ``tau = (sum_{i<=k} v_(i) - 1)/k``
    and return ``u = max(v - tau, 0)``.

    With ``v = z / mu`` this is the gradient ``nabla h_{mu l2^2}(z)`` of Prop. 3; its support size
    ``k`` satisfies eq. (8) and ``u_i = (z_i/mu + rho*)_+`` with ``rho*`` from eq. (9)-(10).

    Parameters
    ----------
    v : array_like of shape (m,)
        Point to project, ``m >= 1``. Entries must be finite or ``-inf``; ``-inf`` entries get
        weight exactly 0. At least one entry must be finite.

    Returns
    -------
    ndarray of shape (m,), float64
        The projection ``u``: ``u >= 0``, ``sum(u) == 1`` up to rounding, with ``u_i == 0.0``
        exactly wherever ``v_i - tau <= 0``.

    Raises
    ------
    ValueError
        If ``v`` is not 1-D, is empty, contains NaN or ``+inf``, or has no finite entry.

    See Also
    --------
    sklearn_ssvm._kernels.simplex.project_simplex_into : Allocation-free numba kernel.
    """
    return _project_simplex_unchecked(_check_vector(v, "v"))


def _hard_max(z):
    i = int(np.argmax(z))
    weights = np.zeros_like(z)
    weights[i] = 1.0
    return float(z[i]), weights


def _l2_value(z, zmax, u, mu):
    """``<z, u> - (mu/2)(||u||^2 - 1)`` and ``<z, u>``, summing over the support only."""
    supp = u > 0.0
    us = u[supp]
    lin = zmax + float(np.dot(us, z[supp] - zmax))
    value = lin - 0.5 * mu * (float(np.dot(us, us)) - 1.0)
    return value, lin


def smooth_max(z, mu, kind="l2"):
    """Smoothed maximum ``h_{mu omega}(z)`` and its gradient.

    The smoothed max of Pillutla et al. (2018, spec 000 §2).

    ``h_{mu omega}(z) = max_{u in Delta} <u, z> - mu omega(u)`` (Def. 1, eq. (6)-(7)); the gradient
    is the maximizer ``u``, a point of the simplex.

    * ``kind=None`` or ``mu == 0``: the hard max ``max_i z_i`` with a one-hot at the first
      argmax (a subgradient, Lemma 7(i)).
    * ``kind="entropy"``: ``omega = -H``, ``h = mu log sum_i exp(z_i / mu)`` with gradient
      ``softmax(z / mu)`` (Sec. 2.3.1, Lemma 7(ii)); computed max-shifted, so no overflow for
      small ``mu``. Bounds: ``max z <= h <= max z + mu log m``.
    * ``kind="l2"``: ``omega(u) = (||u||^2 - 1)/2``, ``h = <z, u> - (mu/2)(||u||^2 - 1)`` with
      gradient ``u = proj_Delta(z / mu)`` (Prop. 3, eq. (8)-(10)). Bounds:
      ``max z <= h <= max z + mu/2``.

    Parameters
    ----------
    z : array_like of shape (m,)
        Scores; finite or ``-inf`` (``-inf`` entries get weight exactly 0), at least one finite.
    mu : float
        Smoothing parameter, ``mu >= 0``.
    kind : {"l2", "entropy", None}, default="l2"
        Smoothing function ``omega``.

    Returns
    -------
    value : float
        ``h_{mu omega}(z)``.
    weights : ndarray of shape (m,), float64
        ``nabla h_{mu omega}(z)``, a point of the simplex.

    Raises
    ------
    ValueError
        On an invalid ``z`` (see :func:`project_simplex`), a negative or non-finite ``mu``, or an
        unknown ``kind``.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}.")
    z = _check_vector(z, "z")
    mu = _check_mu(mu)
    if kind is None or mu == 0.0:
        return _hard_max(z)
    zmax = float(np.max(z))
    shifted = (z - zmax) / mu  # <= 0, max entry exactly 0; underflow to -inf is harmless
    if kind == "entropy":
        e = np.exp(shifted)
        s = float(np.sum(e))
        return zmax + mu * float(np.log(s)), e / s
    u = _project_simplex_unchecked(shifted)
    value, _ = _l2_value(z, zmax, u, mu)
    return value, u


def topk_smooth_max(scores_desc, mu):
    """Top-K smoothed max ``h_{mu,K}`` of eq. (11) from the scores of the K best outputs.

    With ``z = scores_desc`` (the K largest scores ``z_(1) >= ... >= z_(K)``),
    ``u* = proj_{Delta^{K-1}}(z / mu)`` and
    ``h_{mu,K}(z) = <z, u*> - (mu/2)(||u*||^2 - 1)`` (spec 000 Sec. 1.6). The surrogate gradient
    of the loss is ``sum_k u*_k nabla psi(y_(k); w)`` (eq. (11), Lemma 7(iii) with the ``/mu`` of
    errata item 1). By Prop. 4, eq. (12), ``h_{mu,K}`` and its gradient coincide with the full
    l2^2 smoother whenever ``mu <= sum_{i<=K} (z_(i) - z_(K+1))``.

    The paper's Algo. 6 (and the reference code) return ``<z, u*>`` without the quadratic term
    (errata item 2); it is exposed here as ``linearized_value``.

    Parameters
    ----------
    scores_desc : array_like of shape (K,)
        Scores of the K best outputs, conventionally in non-increasing order (the value and
        weights do not depend on the order; ``weights[k]`` belongs to ``scores_desc[k]``).
        ``-inf`` padding (fewer than K outputs exist) gets weight exactly 0. At least one entry
        must be finite.
    mu : float
        Smoothing parameter, ``mu >= 0``; ``mu == 0`` gives the hard max and a one-hot at the
        first argmax.

    Returns
    -------
    value : float
        Exact ``h_{mu,K}(z)``; ``max z <= value <= max z + mu/2``.
    weights : ndarray of shape (K,), float64
        ``u*``, a point of the simplex.
    linearized_value : float
        ``<z, u*>``; ``0 <= value - linearized_value < mu/2``.

    Raises
    ------
    ValueError
        On invalid ``scores_desc`` or ``mu``.

    See Also
    --------
    sklearn_ssvm._kernels.simplex.topk_weights_into : Allocation-free numba kernel.
    """
    z = _check_vector(scores_desc, "scores_desc")
    mu = _check_mu(mu)
    if mu == 0.0:
        value, weights = _hard_max(z)
        return value, weights, value
    zmax = float(np.max(z))
    u = _project_simplex_unchecked((z - zmax) / mu)
    value, lin = _l2_value(z, zmax, u, mu)
    return value, u, lin


def smoothing_bound(kind, m):
    """Constant ``D_omega`` with ``max z <= h_{mu omega}(z) <= max z + mu D_omega``.

    ``D = log m`` for entropy smoothing, ``D = 1/2`` for l2^2 smoothing (also valid for the top-K
    smoother) and ``D = 0`` for the hard max (spec 000 Sec. 1.3, Prop. 2, eq. (43)).

    Parameters
    ----------
    kind : {"l2", "entropy", None}
        Smoothing function ``omega``; None is the hard max.
    m : int
        Number of outputs ``|Y|`` (only used for entropy), ``m >= 1``.

    Returns
    -------
    float
        The constant ``D_omega``: ``log m``, ``0.5`` or ``0.0``.

    Raises
    ------
    ValueError
        If ``kind`` is unknown, or ``kind="entropy"`` and ``m < 1``.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}.")
    if kind is None:
        return 0.0
    if kind == "l2":
        return 0.5
    m = int(m)
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}.")
    return float(np.log(m))
