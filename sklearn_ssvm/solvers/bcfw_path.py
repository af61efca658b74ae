"""The certified path's pieces on BCFW's dual (spec 002 §8; Osokin et al. 2016, §4): the block
gaps' change under Proposition 1 (eq. (12)) and the first breakpoint in closed form (Alg. 6,
eq. (11)). :mod:`sklearn_ssvm.model_selection` builds the paths on them. They read the dual
(:class:`~sklearn_ssvm.solvers.bcfw.DualState`) in label space, graphs included (their
``GraphProblem.label_space()``)."""
from dataclasses import dataclass

import numpy as np

from .._kernels.batch import stats_from_labels
from ..structures._problem import label_space
from .bcfw import DualState, weights

__all__ = ["PathStart", "block_deltas", "check_zero_loss", "initialize_path"]


# ----------------------------------------------------------------------------------------------
# label-space helpers
# ----------------------------------------------------------------------------------------------

def _block_scores(problem, coef, M, Q):
    """``<U, M_i> + <theta, Q_i>`` per block, ``U = X W``: the score of a (mixed) labeling.

    Linear in ``(M, Q)``; with a difference of label statistics it gives score differences
    without cancellation. No oracle call.
    """
    W, theta = problem.split_coef(coef)
    U = np.asarray(problem.token_matrix() @ W)
    per_token = np.einsum("tc,tc->t", U, M)
    owner = np.repeat(np.arange(problem.n_samples), np.diff(problem.tok_offsets))
    scores = np.bincount(owner, weights=per_token, minlength=problem.n_samples)
    if theta.shape[0]:
        scores += Q @ theta
    return scores


def block_deltas(problem, state, coef, vertex=None):
    """``delta_i = ell_i - alpha <w, w_i>`` of Prop. 1 (spec 002 §1.3, §8.3), one per block.

    ``alpha <w, w_i> = (<w, phi(x_i, y_i)> - E_{alpha_i} <w, phi(x_i, .)>) / n`` does not depend
    on ``alpha`` given ``w`` and needs no oracle call. Equivalently
    ``delta_i = (1/n) sum_y alpha_i(y) H_i(y; w) = H~_i(w) / n - g_i``. ``state`` (DualState) is
    the dual point ``alpha``, ``coef`` is ``w`` (normally ``w(alpha)``), ``vertex`` is
    ``DualState.at_labels(problem)`` if already computed, else None."""
    problem = label_space(problem)
    if vertex is None:
        vertex = DualState.at_labels(problem)
    pair = _block_scores(problem, coef, vertex.M - state.M, vertex.Q - state.Q)
    return state.ell_blocks - pair / problem.n_samples


def check_zero_loss(problem):
    """Prop. 1 and the zero initialisation need ``L(y_i, y_i) = 0`` (spec 002 §1.1, §10.3 #9)."""
    problem = label_space(problem)
    own = np.asarray(problem.losses(problem.y), dtype=float)
    bad = np.flatnonzero(np.abs(own) > 0)
    if bad.size:
        raise ValueError(f"The regularization path needs L(y_i, y_i) = 0 for every training "
                         f"example (Proposition 1); example {bad[0]} has "
                         f"L(y_i, y_i) = {own[bad[0]]!r}.")


# ----------------------------------------------------------------------------------------------
# initialisation: Alg. 6, eq. (11)
# ----------------------------------------------------------------------------------------------

@dataclass
class PathStart:
    """The first breakpoint of the path (Alg. 6).

    ``alpha`` (float): ``lambda^inf = (||psi~||^2 + mean_i theta_i) / (kappa eps)``, 0 when
    degenerate. ``state`` (DualState): ``alpha^inf``, block ``i`` the vertex ``y~_i = argmax_y
    L_i(y)``. ``coef``: ``w^inf = psi~ / lambda^inf`` (zeros when degenerate). ``gap_bounds``
    (n_samples,): ``g^_i = theta_i / (n lambda^inf) + lambda^inf <w_i, w>``, upper bounds on the
    block gaps at ``lambda^inf``, summing to ``kappa eps``. ``bound`` (float): ``||psi~||^2 +
    mean_i theta_i``: for every ``alpha >= lambda^inf`` the gap of ``alpha^inf`` with ``w =
    (lambda^inf / alpha) w^inf`` is at most ``bound / alpha`` (eq. (11)). ``psi_mean``: ``psi~ =
    (1/n) sum_i psi_i(y~_i)``. ``theta`` (n_samples,): ``theta_i = max_y -<psi~, psi_i(y)>`` (plain
    decoding at ``w = psi~``). ``n_oracle_calls`` (int). ``labels`` (int32): ``y~``, packed like
    ``problem.y``."""

    alpha: float
    state: DualState
    coef: np.ndarray
    gap_bounds: np.ndarray
    bound: float
    psi_mean: np.ndarray
    theta: np.ndarray
    n_oracle_calls: int
    labels: np.ndarray


def initialize_path(problem, eps, kappa, vertex=None):
    """Alg. 6: the largest breakpoint ``lambda^inf`` and its dual point (spec 002 §8.2).

    One loss-augmented oracle pass at ``w = 0`` gives ``y~_i = argmax_y L_i(y)``; the dual
    point ``alpha^inf`` puts block ``i`` on ``y~_i``. With ``psi~ = (1/n) sum_i psi_i(y~_i)``
    and ``theta_i = max_y -<psi~, psi_i(y)>`` (one plain decoding pass at ``w = psi~``),
    eq. (11) bounds the duality gap of ``(alpha^inf, alpha, w = psi~ / alpha)`` by
    ``(||psi~||^2 + mean theta) / alpha`` for every ``alpha``; ``lambda^inf`` makes it
    ``kappa eps`` (Alg. 6 line 12, errata 3: ``kappa eps``, not ``eps``; both floats).

    Degenerate case: when ``||psi~||^2 + mean theta`` vanishes (to rounding) ``w = 0`` is
    optimal for every ``alpha`` with a zero gap; ``alpha`` is then 0. ``vertex`` is
    ``DualState.at_labels(problem)`` if already computed, else None."""
    problem = label_space(problem)
    n = problem.n_samples
    if vertex is None:
        vertex = DualState.at_labels(problem)
    y_tilde, max_loss, _, _ = problem.run_oracle(np.zeros(problem.n_params), True)
    M, Q = _vertex_stats(problem, y_tilde)
    state = DualState(M, Q, max_loss / n)  # at w = 0 the oracle value is max_y L_i(y)
    psi = weights(problem, state, 1.0)  # (1/n) sum_i psi_i(y~_i): w at alpha = 1
    _, decoded, _, _ = problem.run_oracle(psi, False)
    theta = decoded - _block_scores(problem, psi, vertex.M, vertex.Q)
    pair = _block_scores(problem, psi, vertex.M - M, vertex.Q - Q)  # <psi~, psi_i(y~_i)>
    bound = float(psi @ psi + theta.mean())
    if bound <= 1e-13 * _cancelling_scale(problem):
        return PathStart(0.0, state, np.zeros(problem.n_params), np.zeros(n), 0.0,
                         np.zeros(problem.n_params), np.zeros(n), 2 * n, y_tilde)
    lam = bound / (kappa * eps)
    coef = weights(problem, state, lam)
    gap_bounds = (theta + pair) / (n * lam)
    return PathStart(lam, state, coef, gap_bounds, bound, psi, theta, 2 * n, y_tilde)


def _vertex_stats(problem, labelings):
    """The dual state's ``(M, Q)`` rows of one labeling per block."""
    return stats_from_labels(problem.packed(), labelings, problem.n_codes, problem.n_pair)


def _cancelling_scale(problem):
    """The size of what cancels in ``psi~``: rounding below ~1e-16 of it is no signal (spec
    §8.2)."""
    X = problem.token_matrix()
    lengths = np.diff(problem.tok_offsets)
    row_sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    owner = np.repeat(np.arange(problem.n_samples), lengths)
    return float(np.mean(2.0 * lengths * (np.bincount(owner, row_sq, minlength=problem.n_samples)
                                          + 1.0)))
