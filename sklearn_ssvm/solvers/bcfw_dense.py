"""Block-coordinate Frank-Wolfe passes for problems whose oracles run from Python (graphs).

``GraphProblem`` examples are decoded one by one by MAP oracles (graph cuts, integer programs,
message passing), so the compiled pass of ``_kernels/bcfw.py`` cannot call them. This pass makes
the same steps (spec 002 Alg. 1-3 and 5, with the projection of §7) on a dense dual state: the
row ``M_i = E_{alpha_i}[phi(x_i, y)] - phi(x_i, y_i)`` of every block, its loss ``ell_i`` and
the weights ``v = -(1/c) sum_i M_i / block_n[i]``. It keeps the contract of ``bcfw_pass``:
``(steps_done, needs_room, cache_hits)``, the atoms in the same ``ActiveSets`` store, the gap
estimates and the heuristic exit, so that ``solvers.bcfw.bcfw`` runs either.

The weights the oracle scores with are ``w = project(v)``: the identity, a box (``coef_bounds``)
or ``BinaryGraphCRF``'s submodular cone. For a closed convex set the dual's gradient in ``v`` is
``c project(v)`` (Moreau), so every gap and line search below takes ``w`` where the unconstrained
method takes ``v``, and the curvature ``c ||Delta v||^2`` still bounds the dual's (the
projection is 1-Lipschitz): the steps never decrease the dual.
"""
import numpy as np

from .._kernels.bcfw import FW, PAIRWISE


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


def _move(state, v, i, direction, dloss, gamma, c, bn):
    """``M_i += gamma direction``, ``ell_i += gamma dloss / bn`` and ``v`` accordingly."""
    state.M[i] += gamma * direction
    state.ell_blocks[i] += gamma * dloss / bn
    v -= (gamma / (c * bn)) * direction


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
               capped):
    """Steps ``start .. n_steps - 1`` of a pass on a ``GraphProblem`` (see the module).

    ``state`` (``M``, ``ell_blocks``), ``v`` (unprojected weights), ``w = project(v)`` and
    ``estimates`` are updated in place; ``atoms`` (an ``ActiveSets``) with pairwise steps or the
    cache. Returns ``(steps_done, needs_room, cache_hits)`` as ``_kernels.bcfw.bcfw_pass``.
    """
    n = problem.n_samples
    block_n = problem.block_n
    corner = _Corners(problem)
    keep_atoms = step_type != FW or use_cache
    hits = 0
    for b in range(start, n_steps):
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
        if keep_atoms:
            k_s = hit if hit >= 0 else _find(problem, atoms, i, y_s)
            if k_s < 0:
                k_s = _free_slot(problem, atoms, i, step_type, capped)
                if k_s is None:
                    return b, True, hits
                if atoms.weights[i, k_s] > 0.0 and step_type != FW:
                    # the drop step: the lightest atom's weight moves to y_s, which takes its slot
                    D_l, L_l = corner(i, _labeling(problem, atoms, i, k_s))
                    _move(state, v, i, D_s - D_l, L_s - L_l, atoms.weights[i, k_s], c, bn)
                    _store(problem, atoms, i, k_s, y_s)
                    w[:] = project(v)
                    continue
                atoms.weights[i, k_s] = 0.0  # plain FW: its cache evicts (weights are records)
                _store(problem, atoms, i, k_s, y_s)
                atoms.count[i] = max(atoms.count[i], k_s + 1)
        if step_type == PAIRWISE:
            _pairwise_step(problem, state, v, w, i, k_s, D_s, L_s, atoms, corner, c, bn,
                           use_cache)
        else:
            gamma = _line_search(gap, D_s - state.M[i], c, bn, 1.0)
            dloss = L_s - state.ell_blocks[i] * bn
            _move(state, v, i, D_s - state.M[i], dloss, gamma, c, bn)
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


def _pairwise_step(problem, state, v, w, i, k_s, D_s, L_s, atoms, corner, c, bn, use_cache):
    """Mass from the block's worst active labeling to ``y_s`` (spec 002 Alg. 3)."""
    count = atoms.count[i]
    active = [k for k in range(count) if atoms.weights[i, k] > 0.0]
    scores = {k: (lambda D, L: L + w @ D)(*corner(i, _labeling(problem, atoms, i, k)))
              for k in active}
    k_a = min(active, key=scores.get)
    if k_a == k_s:
        return
    D_a, L_a = corner(i, _labeling(problem, atoms, i, k_a))
    direction = D_s - D_a
    gap = (L_s - L_a + w @ direction) / bn
    gamma = _line_search(gap, direction, c, bn, atoms.weights[i, k_a])
    if gamma <= 0.0:
        return
    _move(state, v, i, direction, L_s - L_a, gamma, c, bn)
    atoms.weights[i, k_s] += gamma
    atoms.weights[i, k_a] -= gamma
    if atoms.weights[i, k_a] <= 1e-15:
        atoms.weights[i, k_a] = 0.0
        if not use_cache:  # an emptied atom leaves the store (the last one takes its slot)
            last = atoms.count[i] - 1
            if k_a != last:
                _store(problem, atoms, i, k_a, _labeling(problem, atoms, i, last).copy())
                atoms.weights[i, k_a] = atoms.weights[i, last]
                atoms.weights[i, last] = 0.0
            atoms.count[i] = last


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
