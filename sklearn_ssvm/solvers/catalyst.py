"""Catalyst with smoothing (Casimir): the outer loop of spec 000 §3, paper Algo. 4.

Pure functions over numpy vectors: no estimator, no scikit-learn, no oracle. The inner solver is a
callable, so the same loop drives Catalyst (no smoothing) and Casimir (smoothing ``mu_k``).

Naming. The package calls the regularization parameter ``alpha`` in its public estimators; here it
is always ``lam`` (the paper's lambda, a float ``lam >= 0`` wherever a function takes it, and not
listed again below). Every ``alpha`` in this module (``alpha0``, ``alpha_prev``, ``next_alpha``...)
is the paper's Catalyst sequence ``alpha_k`` of eq. (27), the weights that set the extrapolation
``beta_k`` of eq. (29). It is never a regularization.

Index convention. Outer iterations are numbered ``k = 1, 2, ...`` as in Algo. 4: iteration ``k``
uses ``kappa_k``, ``mu_k`` and ``delta_k`` and produces ``w_k``, ``alpha_k`` and ``z_k``;
``w_0 = z_0`` is the starting point and ``alpha_0`` the initial weight.
"""
import math

import numpy as np

WARM_STARTS = ("prox-center", "extrapolation", "prev-iterate")
KAPPA_SCHEDULES = ("const", "linear")
MU_SCHEDULES = ("const", "expo", "linear")

#: (sqrt(5) - 1) / 2, the initial weight of Cor. 19-20 (lam = 0): it solves a^2 = 1 - a
GOLDEN_ALPHA0 = (math.sqrt(5.0) - 1.0) / 2.0


def next_alpha(alpha_prev, kappa, kappa_next, lam):
    """The weight ``alpha_k`` in (0, 1) solving eq. (27).

    ``alpha_k^2 (kappa_{k+1} + lam) = (1 - alpha_k) alpha_{k-1}^2 (kappa_k + lam) + alpha_k lam``
    is solved by the closed form (74): with ``c = (lam + kappa_k) / (lam + kappa_{k+1})``,
    ``d = lam / (lam + kappa_{k+1})`` and ``b = c alpha_{k-1}^2 - d``, ``alpha_k`` is the positive
    root ``(-b + sqrt(b^2 + 4 c alpha_{k-1}^2)) / 2`` of ``x^2 + b x - c alpha_{k-1}^2``. When
    ``b > 0`` the same root is evaluated as ``2 c alpha_{k-1}^2 / (b + sqrt(...))``, which avoids
    the cancellation of the two terms of (74). ``alpha_prev`` is ``alpha_{k-1}`` in (0, 1),
    ``kappa``, ``kappa_next`` are ``kappa_k`` and ``kappa_{k+1}`` (the schedule is needed one step
    ahead). Lemma 21: ``alpha_k <= alpha_{k-1}`` and ``alpha_k^2 >= lam / (lam + kappa_{k+1})``
    when ``kappa`` is non-decreasing and ``alpha_0^2 >= lam / (lam + kappa_1)``."""
    c_sq = (lam + kappa) / (lam + kappa_next) * alpha_prev * alpha_prev
    b = c_sq - lam / (lam + kappa_next)
    root = math.sqrt(b * b + 4.0 * c_sq)
    return 0.5 * (root - b) if b < 0.0 else 2.0 * c_sq / (b + root)


def extrapolation_beta(alpha_prev, alpha, kappa, kappa_next, lam):
    """The extrapolation coefficient ``beta_k`` of eq. (29).

    ``beta_k = alpha_{k-1} (1 - alpha_{k-1}) (kappa_k + lam)
    / (alpha_{k-1}^2 (kappa_k + lam) + alpha_k (kappa_{k+1} + lam))``, used in
    ``z_k = w_k + beta_k (w_k - w_{k-1})`` (28); ``alpha_prev``, ``alpha`` are ``alpha_{k-1}`` and
    ``alpha_k`` (from :func:`next_alpha`), ``kappa``, ``kappa_next`` are ``kappa_k`` and
    ``kappa_{k+1}``."""
    scaled = alpha_prev * (kappa + lam)
    return scaled * (1.0 - alpha_prev) / (scaled * alpha_prev + alpha * (kappa_next + lam))


def initial_alpha(lam, kappa):
    """The initial weight ``alpha_0`` of Cor. 17-20, for ``kappa = kappa_1 > 0``.

    ``sqrt(q)`` with ``q = lam / (lam + kappa)`` when ``lam > 0`` (Cor. 17-18; then
    ``alpha_k = sqrt(q)`` for every k under a constant ``kappa``), and ``(sqrt(5) - 1) / 2`` when
    ``lam == 0`` (Cor. 19-20)."""
    return math.sqrt(lam / (lam + kappa)) if lam > 0 else GOLDEN_ALPHA0


#: the least ``mu_k / mu0``: "expo" reaches 1e-300 after about 3,400 outer iterations
#: (``q = 1/2``) and 0 after 4,000, where the smoothed oracles' ``z / mu`` overflowed into
#: non-finite coefficients; at 1e-12 of ``mu0`` the smoothing's bias ``mu D`` is below the
#: rounding of any objective the solvers certify
SMOOTHING_FLOOR = 1e-12


def smoothing_schedule(kind, mu0, k, q):
    """The smoothing parameter ``mu_k`` of outer iteration ``k >= 1`` (§3.5).

    - ``"const"``: ``mu0`` (Cor. 17, 19);
    - ``"expo"``: ``mu0 (1 - sqrt(q) / 2)^(k / 2)`` (Cor. 18), with the paper's
      ``q = lam / (lam + kappa)``. The reference code uses ``q = kappa / (kappa + lam)`` and
      starts at ``k = 0`` (spec §8 erratum 11); this follows the paper. With ``q = 0``
      (``lam = 0``) the schedule is constant;
    - ``"linear"``: ``mu0 / k`` (Cor. 20);

    neither below ``SMOOTHING_FLOOR mu0``. ``mu0`` is ``mu``, the scale of the schedule (``mu_1``
    for "const" and "linear"); ``k`` the outer iteration, starting at 1; ``q = lam / (lam +
    kappa)``, used by "expo" only."""
    if kind == "const":
        return mu0
    if kind == "expo":
        return mu0 * max((1.0 - math.sqrt(q) / 2.0) ** (k / 2.0), SMOOTHING_FLOOR)
    if kind == "linear":
        return mu0 / min(k, 1.0 / SMOOTHING_FLOOR)
    raise ValueError(f"mu_schedule must be one of {MU_SCHEDULES}, got {kind!r}.")


def kappa_schedule(kind, kappa0, k):
    """The proximal weight ``kappa_k`` of outer iteration ``k >= 1`` (§3.5).

    ``"const"``: ``kappa0`` (Cor. 17-19); ``"linear"``: ``kappa0 k`` (Cor. 20). ``kappa0`` is
    ``kappa > 0``, which is ``kappa_1`` for both kinds; ``k`` starts at 1."""
    if kind == "const":
        return kappa0
    if kind == "linear":
        return kappa0 * k
    raise ValueError(f"kappa_schedule must be one of {KAPPA_SCHEDULES}, got {kind!r}.")


def delta_schedule(lam, kappa, k):
    """The relative accuracy ``delta_k`` in [0, 1) of the inner problem ``k >= 1`` (§3.5).

    ``sqrt(q) / (2 - sqrt(q))`` with ``q = lam / (lam + kappa)`` when ``lam > 0`` (Cor. 17-18),
    and ``1 / (k + 1)^2`` when ``lam == 0`` (Cor. 19-20); ``kappa`` is ``kappa_k``, ``k`` starts
    at 1."""
    if lam > 0:
        root_q = math.sqrt(lam / (lam + kappa))
        return root_q / (2.0 - root_q)
    return 1.0 / (k + 1) ** 2


def stopping_test(grad_norm_sq, lam, kappa, delta, dist_sq):
    """Sufficient check that ``w`` solves the inner problem to the accuracy (26) (§3.2).

    ``F_{mu,kappa}(.; z)`` is ``(lam + kappa)``-strongly convex, so
    ``F_{mu,kappa}(w; z) - min F_{mu,kappa}(.; z) <= ||grad||^2 / (2 (lam + kappa))``, and
    ``||grad||^2 <= (lam + kappa) delta kappa ||w - z||^2`` implies
    ``F_{mu,kappa}(w; z) - min <= (delta kappa / 2) ||w - z||^2``, which is (26). ``grad_norm_sq``
    is ``||grad F_{mu_k, kappa_k}(w; z_{k-1})||^2``, ``kappa`` ``kappa_k``, ``delta`` ``delta_k``
    (:func:`delta_schedule`), ``dist_sq`` ``||w - z_{k-1}||^2``."""
    return grad_norm_sq <= (lam + kappa) * delta * kappa * dist_sq


def kappa_from_smoothness(L, lam, n):
    """The constant ``kappa`` of Casimir-SVRG-const (§3.6): Prop. 29's rule with ``A / mu = L``.

    ``kappa = L / n - lam`` if ``L / n > 4 lam``, else ``kappa = lam``; ``L`` is the smoothness
    estimate of the loss part of ``F_mu`` (``A / mu`` in Prop. 29), ``n`` the number of training
    examples. The reference code uses ``L / (n + 1) - lam`` if ``L / (n + 1) > lam``, else ``L /
    (n + 1)`` (spec §8 erratum 10); this follows the paper."""
    ratio = L / n
    return ratio - lam if ratio > 4.0 * lam else lam


def catalyst(inner, w0, lam, *, kappa, kappa_schedule="const", mu0=None, mu_schedule="const",
             alpha0=None, warm_start="prox-center", max_iter, callback=None):
    """Catalyst / Casimir outer loop (paper Algo. 4, spec §3.1).

    For ``k = 1..max_iter`` (``K`` outer iterations): ``w_k = inner(z_{k-1}, w_start, mu_k,
    kappa_k, k)`` approximately minimises ``F_{mu_k, kappa_k}(w; z_{k-1}) = F_{mu_k}(w) + (kappa_k
    / 2)||w - z_{k-1}||^2``; then ``alpha_k`` solves (27) (with ``kappa_{k+1}``), ``beta_k`` is
    (29) and ``z_k = w_k + beta_k (w_k - w_{k-1})`` (28), with ``z_0 = w_0`` (``w0`` of shape
    (d,)).

    ``inner(z, w_start, mu_k, kappa_k, k) -> w_k`` is an approximate minimiser of ``F_{mu_k,
    kappa_k}(.; z)`` started at ``w_start``, e.g. a fixed budget of SVRG steps or a run until
    :func:`stopping_test` holds (accuracy (26)); ``w_start`` is a fresh array the solver may
    overwrite; ``z`` must not be modified; ``mu_k`` is None without smoothing. ``kappa > 0`` is
    ``kappa_1``, the scale of the proximal weights; ``kappa_schedule`` (default "const"):
    ``kappa_k = kappa`` or ``kappa k`` ("linear", :func:`kappa_schedule`). ``mu0`` (default
    None): scale of the smoothing schedule; None means no smoothing (plain Catalyst), ``inner``
    then receives ``mu_k = None``. ``mu_schedule`` ("const" default, "expo", "linear"):
    :func:`smoothing_schedule`, with ``q = lam / (lam + kappa)`` for "expo". ``alpha0`` (default
    None, :func:`initial_alpha`): ``alpha_0`` in (0, 1) with ``alpha_0^2 >= lam / (lam +
    kappa_1)``; the Catalyst weight, not a regularization. ``warm_start``, ``w_start`` of inner
    problem ``k`` (§3.3): ``"prox-center"`` (default) ``z_{k-1}``; ``"extrapolation"`` ``w_{k-1} +
    kappa_k / (kappa_k + lam) (z_{k-1} - z_{k-2})`` with ``z_{-1} = z_0``; ``"prev-iterate"``
    ``w_{k-1}``; at ``k = 1`` all three are ``w_0``. ``callback(k, w_k, z_k, mu_k, kappa_k)``
    (default None) runs after each outer iteration; a True return stops the loop at ``w_k``.

    Returns ``(w, n_iter)``: the last outer iterate ``w_K``, shape (d,) (Algo. 4 returns ``w_K``,
    not ``z_K``), and the number of outer iterations run."""
    if warm_start not in WARM_STARTS:
        raise ValueError(f"warm_start must be one of {WARM_STARTS}, got {warm_start!r}.")
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got {lam!r}.")
    if not kappa > 0:
        raise ValueError(f"kappa must be > 0, got {kappa!r}.")
    kappa_at, mu_at = _schedules(kappa_schedule, kappa, mu_schedule, mu0, lam)
    kappa_k = kappa_at(1)
    alpha_prev = initial_alpha(lam, kappa_k) if alpha0 is None else alpha0
    # Lemma 21's hypothesis, with slack for an alpha0 = sqrt(q) rounded by the caller
    if not (0.0 < alpha_prev < 1.0
            and alpha_prev >= math.sqrt(lam / (lam + kappa_k)) * (1.0 - 1e-12)):
        raise ValueError("alpha0 must lie in (0, 1) with alpha0**2 >= lam / (lam + kappa_1), "
                         f"got {alpha_prev!r}.")

    w_prev = np.array(w0, dtype=float)
    z_prev = z_prev2 = w_prev
    for k in range(1, max_iter + 1):
        mu_k = mu_at(k)
        if warm_start == "prox-center":
            w_start = z_prev.copy()
        elif warm_start == "prev-iterate":
            w_start = w_prev.copy()
        else:
            w_start = w_prev + kappa_k / (kappa_k + lam) * (z_prev - z_prev2)
        w_k = np.array(inner(z_prev, w_start, mu_k, kappa_k, k), dtype=float)
        kappa_next = kappa_at(k + 1)
        alpha_k = next_alpha(alpha_prev, kappa_k, kappa_next, lam)
        z_k = w_k + extrapolation_beta(alpha_prev, alpha_k, kappa_k, kappa_next, lam) * (
            w_k - w_prev)
        if callback is not None and callback(k, w_k, z_k, mu_k, kappa_k):
            return w_k, k
        w_prev, z_prev2, z_prev = w_k, z_prev, z_k
        alpha_prev, kappa_k = alpha_k, kappa_next
    return w_prev, max_iter


def _schedules(kappa_kind, kappa0, mu_kind, mu0, lam):
    """``kappa_k`` and ``mu_k`` as functions of ``k``; a bad kind raises before any inner call."""
    q = lam / (lam + kappa0)

    def kappa_at(k):
        return kappa_schedule(kappa_kind, kappa0, k)

    def mu_at(k):
        return None if mu0 is None else smoothing_schedule(mu_kind, mu0, k, q)

    smoothing_schedule(mu_kind, 1.0, 1, q)  # reject a bad kind even when mu0 is None
    return kappa_at, mu_at
