"""Block-coordinate Frank-Wolfe passes for problems whose oracles run from Python (graphs).

``GraphProblem`` examples are decoded one by one by MAP oracles (graph cuts, integer programs,
message passing), so the compiled pass of ``_kernels/bcfw.py`` cannot call them. This pass makes
the same steps (spec 002 Alg. 1-5, with the projection of §7) on a dense dual state: the
row ``M_i = E_{alpha_i}[phi(x_i, y)] - phi(x_i, y_i)`` of every block, its loss ``ell_i`` and
the weights ``v = -(1/c) sum_i M_i / block_n[i]``. It keeps the contract of ``bcfw_pass``:
``(steps_done, needs_room, cache_hits)``, the atoms in the same ``ActiveSets`` store, the gap
estimates and the heuristic exit, so that ``solvers.bcfw.bcfw`` runs either.

The weights the oracle scores with are ``w = project(v)``: the identity, a box (``coef_bounds``),
``BinaryGraphCRF``'s submodular cone, or the elastic net's soft-threshold ``soft(v, l1 / c)``.
Each is the gradient of a convex function of ``v`` (Moreau: a projection, or the prox of the
l1 part), so the dual's gradient in ``v`` is ``c project(v)``: every gap and line search below
takes ``w`` where the plain L2 method takes ``v``, and the curvature ``c ||Delta v||^2`` still
bounds the dual's (the map is 1-Lipschitz), so the steps never decrease the dual. With
averaging, step ``k`` adds ``(k - 1) k / 2`` times its move to ``averages``, as the compiled pass
does, so that the average is ``state - averages / (K (K + 1) / 2)``.
"""
import numpy as np

from .._kernels.bcfw import AWAY, FW, PAIRWISE


class _Corners:
    """``(phi(x_i, y) - phi(x_i, y_i), L(y_i, y))`` of labelings, memoised for one pass (the
    atoms of a block are scored at every cache lookup and pairwise step)."""

    def __init__(self, problem):
        self.problem = problem
        self.memo = {}

    def __call__(self, i, y):
        key = (i, y.tobytes())
        if key not in self.memo:
            p = self.problem
            self.memo[key] = (p.phi(i, y) - p.truth_phi[i], p.loss(i, y))
        return self.memo[key]


def _labeling(problem, atoms, i, k):
    off = problem.node_offsets
    return atoms.labels[off[i]:off[i + 1], k]


def _store(problem, atoms, i, k, y):
    off = problem.node_offsets
    atoms.labels[off[i]:off[i + 1], k] = y


def _find(problem, atoms, i, y):
    """Slot of labeling ``y`` among block ``i``'s atoms, or -1."""
    for k in range(atoms.count[i]):
        if np.array_equal(_labeling(problem, atoms, i, k), y):
            return k
    return -1


class _Mover:
    """``M_i += gamma direction``, ``ell_i += gamma dloss / bn`` and ``v`` accordingly, and with
    averaging the move weighted by ``(k - 1) k / 2`` into ``averages`` (``k`` the step)."""

    def __init__(self, state, v, c, averages, step):
        self.state, self.v, self.c = state, v, c
        self.averages = averages if averages.M.shape[0] else None
        self.step = step

    def __call__(self, i, direction, dloss, gamma, bn):
        self.state.M[i] += gamma * direction
        self.state.ell_blocks[i] += gamma * dloss / bn
        self.v -= (gamma / (self.c * bn)) * direction
        if self.averages is not None:
            weight = (self.step - 1.0) * self.step / 2.0 * gamma
            self.averages.M[i] += weight * direction
            self.averages.ell_blocks[i] += weight * dloss / bn


def _line_search(gap, direction, c, bn, upper):
    """The step minimising the dual's quadratic bound along ``direction``, in ``[0, upper]``:
    ``gap`` is the linear decrease (per unit of step), ``||direction||^2 / (c bn^2)`` the
    curvature."""
    curvature = direction @ direction
    if curvature <= 0.0:
        return upper if gap > 0.0 else 0.0
    return float(np.clip(gap * c * bn * bn / curvature, 0.0, upper))


def dense_pass(problem, state, v, w, project, c, first, start, n_steps, uniforms, gap_sampling,
               exit_below, estimates, step_type, atoms, use_cache, cache_F, cache_min_gap,
               steps_before, averages, capped):
    """Steps ``start .. n_steps - 1`` of a pass on a ``GraphProblem`` (see the module).

    ``state`` (``M``, ``ell_blocks``), ``v`` (unprojected weights), ``w = project(v)``,
    ``estimates`` and ``averages`` (rows only with averaging; ``steps_before`` steps were made
    before this pass) are updated in place; ``atoms`` (an ``ActiveSets``) with pairwise or away
    steps or the cache. Returns ``(steps_done, needs_room, cache_hits)`` as
    ``_kernels.bcfw.bcfw_pass``.
    """
    n = problem.n_samples
    block_n = problem.block_n
    corner = _Corners(problem)
    keep_atoms = step_type != FW or use_cache
    hits = 0
    move = _Mover(state, v, c, averages, steps_before)
    for b in range(start, n_steps):
        move.step = steps_before + b + 1
        if b < len(first):
            i = int(first[b])
        else:  # gap sampling: a block drawn in proportion to its last gap
            weights = np.maximum(np.where(np.isinf(estimates), 0.0, estimates), 0.0)
            total = weights.sum()
            if total <= 0.0:
                return b, False, hits
            i = int(min(np.searchsorted(np.cumsum(weights), uniforms[b] * total, side="right"),
                        n - 1))
        bn = block_n[i]
        base = (w @ state.M[i]) / bn + state.ell_blocks[i]  # the block's current dual point

        def gap_of(D, L):
            return (L + w @ D) / bn - base

        hit = -1
        if use_cache and np.isfinite(estimates[i]):
            gaps = [gap_of(*corner(i, _labeling(problem, atoms, i, k)))
                    for k in range(atoms.count[i])]
            if gaps:
                k = int(np.argmax(gaps))
                if gaps[k] > 0.0 and gaps[k] >= cache_F * estimates[i] \
                        and gaps[k] >= cache_min_gap:
                    hit = k
        if hit >= 0:
            y_s = _labeling(problem, atoms, i, hit).copy()
            hits += 1
        else:
            y_s, _, _ = problem.decode(i, w)
            y_s = np.asarray(y_s, dtype=atoms.labels.dtype)
        D_s, L_s = corner(i, y_s)
        gap = gap_of(D_s, L_s)
        if hit < 0:
            estimates[i] = gap
        if step_type == AWAY and _away_step(problem, state, move, w, i, atoms, corner, bn, base,
                                            gap, use_cache):
            w[:] = project(v)
            continue
        if keep_atoms:
            k_s = hit if hit >= 0 else _find(problem, atoms, i, y_s)
            if k_s < 0:
                k_s = _free_slot(problem, atoms, i, step_type, capped)
                if k_s is None:
                    return b, True, hits
                if atoms.weights[i, k_s] > 0.0 and step_type != FW:
                    # the drop step: the lightest atom's weight moves to y_s, which takes its slot
                    D_l, L_l = corner(i, _labeling(problem, atoms, i, k_s))
                    move(i, D_s - D_l, L_s - L_l, atoms.weights[i, k_s], bn)
                    _store(problem, atoms, i, k_s, y_s)
                    w[:] = project(v)
                    continue
                atoms.weights[i, k_s] = 0.0  # plain FW: its cache evicts (weights are records)
                _store(problem, atoms, i, k_s, y_s)
                atoms.count[i] = max(atoms.count[i], k_s + 1)
        if step_type == PAIRWISE:
            _pairwise_step(problem, move, w, i, k_s, D_s, L_s, atoms, corner, c, bn, use_cache)
        else:
            gamma = _line_search(gap, D_s - state.M[i], c, bn, 1.0)
            dloss = L_s - state.ell_blocks[i] * bn
            move(i, D_s - state.M[i], dloss, gamma, bn)
            if keep_atoms:  # the cache's weights, as the compiled pass keeps them
                atoms.weights[i, :atoms.count[i]] *= 1.0 - gamma
                atoms.weights[i, k_s] += gamma
        w[:] = project(v)
        if not np.isinf(estimates).any() and estimates.sum() <= max(exit_below, 0.0):
            return b + 1, False, hits
    return n_steps, False, hits


def _free_slot(problem, atoms, i, step_type, capped):
    """A slot for a new labeling of block ``i``: a free column, an inactive (cached) labeling,
    or with the store at its cap the lightest atom (whose weight then moves to the new one);
    None when the store must grow first."""
    count = atoms.count[i]
    if count < atoms.room:
        atoms.weights[i, count] = 0.0
        return count
    weights = atoms.weights[i, :count]
    inactive = np.flatnonzero(weights == 0.0)
    if inactive.size:
        return int(inactive[0])
    if capped or step_type == FW:  # plain FW keeps its cache bounded by evicting
        return int(np.argmin(weights))
    return None


def _worst_active(problem, w, i, atoms, corner):
    """The block's active labeling of least ``H = L + <w, D>`` (the away atom), and its ``H``."""
    active = [k for k in range(atoms.count[i]) if atoms.weights[i, k] > 0.0]
    scores = {k: (lambda D, L: L + w @ D)(*corner(i, _labeling(problem, atoms, i, k)))
              for k in active}
    k_a = min(active, key=scores.get)
    return k_a, scores[k_a]


def _drop(problem, atoms, i, k, use_cache):
    """Atom ``k`` of block ``i`` at weight 0: kept as a cached corner with a cache, else it
    leaves the store (the last one takes its slot)."""
    atoms.weights[i, k] = 0.0
    if not use_cache:
        last = atoms.count[i] - 1
        if k != last:
            _store(problem, atoms, i, k, _labeling(problem, atoms, i, last).copy())
            atoms.weights[i, k] = atoms.weights[i, last]
            atoms.weights[i, last] = 0.0
        atoms.count[i] = last


def _away_step(problem, state, move, w, i, atoms, corner, bn, base, fw_gap, use_cache):
    """Away from the block's worst active labeling (spec 002 Alg. 4), ``alpha <- (1 + gamma)
    alpha - gamma e_{y_a}``, when it decreases the dual faster than the Frank-Wolfe step (ties:
    away); False, with nothing moved, otherwise."""
    k_a, H_a = _worst_active(problem, w, i, atoms, corner)
    w_a = atoms.weights[i, k_a]
    away_gap = base - H_a / bn
    if not (w_a < 1.0 and away_gap >= fw_gap):
        return False
    D_a, L_a = corner(i, _labeling(problem, atoms, i, k_a))
    gamma_max = w_a / (1.0 - w_a)
    direction = state.M[i] - D_a
    gamma = _line_search(away_gap, direction, move.c, bn, gamma_max)
    move(i, direction, state.ell_blocks[i] * bn - L_a, gamma, bn)
    atoms.weights[i, :atoms.count[i]] *= 1.0 + gamma
    atoms.weights[i, k_a] -= gamma
    if gamma >= gamma_max:
        _drop(problem, atoms, i, k_a, use_cache)
    return True


def _pairwise_step(problem, move, w, i, k_s, D_s, L_s, atoms, corner, c, bn, use_cache):
    """Mass from the block's worst active labeling to ``y_s`` (spec 002 Alg. 3)."""
    k_a, _ = _worst_active(problem, w, i, atoms, corner)
    if k_a == k_s:
        return
    D_a, L_a = corner(i, _labeling(problem, atoms, i, k_a))
    direction = D_s - D_a
    gap = (L_s - L_a + w @ direction) / bn
    gamma = _line_search(gap, direction, c, bn, atoms.weights[i, k_a])
    if gamma <= 0.0:
        return
    move(i, direction, L_s - L_a, gamma, bn)
    atoms.weights[i, k_s] += gamma
    atoms.weights[i, k_a] -= gamma
    if atoms.weights[i, k_a] <= 1e-15:
        _drop(problem, atoms, i, k_a, use_cache)


def dense_state_from_atoms(problem, atoms, state):
    """Recompute ``M_i`` and ``ell_i`` from the atoms (incremental updates drift)."""
    corner = _Corners(problem)
    state.M[:] = 0.0
    state.ell_blocks[:] = 0.0
    for i in range(problem.n_samples):
        for k in range(atoms.count[i]):
            weight = atoms.weights[i, k]
            if weight > 0.0:
                D, L = corner(i, _labeling(problem, atoms, i, k))
                state.M[i] += weight * D
                state.ell_blocks[i] += weight * L / problem.block_n[i]
