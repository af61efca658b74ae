"""Frank-Wolfe solvers for the TRW objective over the marginal polytope (spec 004 §2).

``f(mu) = -TRW(mu; theta, rho)`` is minimised over ``M`` (or its contraction
``M_delta = (1 - delta) M + delta u0``) with a MAP oracle as the linear minimisation oracle.
The iterate is always kept as a barycentre of visited vertices: atom 0 is ``u0`` and atom
``a >= 1`` stands for the contracted vertex ``(1 - delta) v_a + delta u0`` (spec §2.7), with
weights ``alpha``.

``TRWFrankWolfe`` holds that state and runs the inner loop (Algorithm 2's loop over ``k`` with
Algorithm 1 for delta, the MFW correction of Algorithms 3-5 and the ICM local search of
Algorithm 6); ``trw_barrier_fw`` adds the outer Frank-Wolfe loop over the spanning-tree polytope;
``trw_local_polytope`` is the tree-reweighted belief propagation baseline over the local polytope.
"""
import time

import numpy as np

from .._kernels import mrf as K
from ._oracles import check_map_oracle
from ._spanning import (edge_mutual_information, entropy_coefficients, initial_rho,
                        max_weight_spanning_tree, trw_objective)

__all__ = ["TRWFrankWolfe", "frank_wolfe_trw", "trw_barrier_fw", "trw_local_polytope",
           "update_delta", "rescale_weights"]

_DELTA_MODES = ("adaptive", "fixed", "none")


def update_delta(gap, gap_uniform, delta):
    """Algorithm 1 (spec 004 §2.4): the adaptive contraction after a MAP call.

    Parameters
    ----------
    gap : float
        FW gap over the full polytope ``g = <-grad f(x), s - x>``.
    gap_uniform : float
        ``g_u = <-grad f(x), u0 - x>``.
    delta : float
        Current contraction ``delta^(k-1)`` (``<= 1/4`` initially).

    Returns
    -------
    float
        The new contraction: ``min(g / (-4 g_u), delta / 2)`` if ``g_u < 0`` and the
        proposal is below ``delta``, else ``delta`` unchanged. Then ``g_(delta) >= g / 2``
        (Lemma D.2).
    """
    if gap_uniform < 0:
        proposal = gap / (-4.0 * gap_uniform)
        if proposal < delta:
            return max(min(proposal, 0.5 * delta), 0.0)
    return delta


def rescale_weights(alpha, delta, new_delta):
    """Barycentric weights of the same point after the contraction changes (spec 004 eq. (6)).

    ``alpha'_v = alpha_v (1 - delta) / (1 - delta')`` for ``v != u0`` (atom 0) and
    ``alpha'_0 = 1 - sum_{v != u0} alpha'_v``; valid for ``delta' <= delta``.

    Parameters
    ----------
    alpha : array_like of shape (n_atoms,)
        Barycentric weights under ``delta``; atom 0 is ``u0``.
    delta : float
        Current contraction.
    new_delta : float
        New contraction (``<= delta``).

    Returns
    -------
    ndarray of float64, shape (n_atoms,)
        The new weights (a new array; ``alpha'_0`` is clipped at 0).
    """
    out = np.array(alpha, dtype=np.float64, copy=True)
    out[1:] *= (1.0 - delta) / (1.0 - new_delta)
    out[0] = max(1.0 - out[1:].sum(), 0.0)
    return out


class TRWFrankWolfe:
    """State of Frank-Wolfe over (contractions of) the marginal polytope of ``mrf``.

    The Frank-Wolfe baseline of Krishnan, Lacoste-Julien & Sontag (2015) on the TRW objective
    (Wainwright, Jaakkola & Willsky 2005).

    Parameters
    ----------
    mrf : PairwiseMRF
        The model.
    map_oracle : str or callable
        A MAP oracle (see ``_oracles``) or its name (``"auto"``, ``"brute_force"``,
        ``"tree"``, ``"icm"``, ``"graphcut"``, ``"milp"``).
    delta_init : float, default=1e-3
        Initial contraction ``delta^(init) <= 1/4`` (unused when ``delta_mode="none"``).
    delta_mode : {"adaptive", "fixed", "none"}, default="adaptive"
        Algorithm 1, a fixed contraction, or plain FW over ``M`` (``delta = 0``).

    Attributes
    ----------
    x : ndarray of shape (mrf.dim,)
        Current iterate.
    alpha : ndarray
        Barycentric weights of the atoms (``alpha[:n_atoms]``).
    delta : float
    n_map_calls, n_icm_calls : int
    history : list of dict
        One record per MAP call.
    """

    def __init__(self, mrf, map_oracle, delta_init=1e-3, delta_mode="adaptive"):
        if delta_mode not in _DELTA_MODES:
            raise ValueError(f"delta_mode must be one of {_DELTA_MODES}, got {delta_mode!r}.")
        if delta_mode != "none" and not 0 < delta_init <= 0.25:
            raise ValueError(f"delta_init must be in (0, 1/4] (Lemma D.2), got {delta_init!r}.")
        self.mrf = mrf
        self.oracle = check_map_oracle(map_oracle)
        self.delta_mode = delta_mode
        self.delta = 0.0 if delta_mode == "none" else float(delta_init)
        self.u0 = mrf.uniform_marginals()
        self.x = self.u0.copy()
        width = mrf.n_nodes + mrf.n_edges
        self.atoms = np.zeros((16, width), dtype=np.int64)
        self.assignments = np.zeros((16, mrf.n_nodes), dtype=np.int64)
        self.alpha = np.zeros(16)
        self.alpha[0] = 1.0
        self.n_atoms = 1
        self._keys = {}
        self.n_map_calls = 0
        self.n_icm_calls = 0
        self.history = []
        self.last_assignment = None
        self._t0 = time.perf_counter()

    # -- atoms ---------------------------------------------------------------------------------
    def add_atom(self, assignment):
        """Index of the atom of ``assignment``, appended if new (vertices are deduplicated).

        Parameters
        ----------
        assignment : array_like of int, shape (mrf.n_nodes,)
            A full assignment (a vertex of the marginal polytope).

        Returns
        -------
        int
            The atom's index in ``alpha``; a new atom gets weight 0.
        """
        a = np.asarray(assignment, dtype=np.int64)
        key = a.tobytes()
        idx = self._keys.get(key)
        if idx is not None:
            return idx
        if self.n_atoms == len(self.alpha):
            cap = 2 * len(self.alpha)
            self.atoms = np.concatenate([self.atoms, np.zeros_like(self.atoms)])
            self.assignments = np.concatenate([self.assignments,
                                               np.zeros_like(self.assignments)])
            self.alpha = np.concatenate([self.alpha, np.zeros(cap - len(self.alpha))])
        idx = self.n_atoms
        self.atoms[idx] = self.mrf.vertex_index(a)
        self.assignments[idx] = a
        self.n_atoms += 1
        self._keys[key] = idx
        return idx

    def set_delta(self, new_delta):
        """Move to a smaller contraction, re-expressing ``x`` by eq. (6) (``x`` is unchanged).

        Parameters
        ----------
        new_delta : float
            The new contraction; ignored unless it is smaller than ``delta``.
        """
        if new_delta < self.delta:
            self.alpha[:self.n_atoms] = rescale_weights(self.alpha[:self.n_atoms], self.delta,
                                                        new_delta)
            self.delta = float(new_delta)

    def barycentre(self):
        """``sum_a alpha_a v_a(delta)`` (equals ``x`` up to rounding).

        Returns
        -------
        ndarray of shape (mrf.dim,)
            The barycentre of the contracted atoms.
        """
        out = np.empty(self.mrf.dim)
        K.barycentre(self.alpha, self.atoms, self.n_atoms, self.u0, self.delta, out)
        return out

    def _contracted_direction(self, idx):
        d = self.delta * self.u0 - self.x
        d[self.atoms[idx]] += 1.0 - self.delta
        return d

    # -- steps ---------------------------------------------------------------------------------
    def value_grad(self, kvec):
        """Value and gradient of ``f(x) = -TRW(x)`` at the current iterate ``x``.

        Parameters
        ----------
        kvec : ndarray of float64, shape (mrf.dim,)
            Per-coordinate entropy coefficients (``entropy_coefficients(mrf, rho)``).

        Returns
        -------
        f : float
            ``-TRW(x)``.
        grad : ndarray of shape (mrf.dim,)
            The gradient of ``f`` at ``x``.
        """
        grad = np.empty(self.mrf.dim)
        f = K.trw_value_grad(self.x, self.mrf.theta, kvec, grad)
        return f, grad

    def correct(self, kvec, tol=0.5, max_iter=100):
        """CORRECTION (Algorithm 5): MFW over ``conv(V_delta)`` from the current weights.

        ``x`` and ``alpha`` are updated in place.

        Parameters
        ----------
        kvec : ndarray of float64, shape (mrf.dim,)
            Per-coordinate entropy coefficients (``entropy_coefficients(mrf, rho)``).
        tol : float, default=0.5
            Stop when the pairwise gap (FW gap plus away gap) is ``<= tol``.
        max_iter : int, default=100
            Largest number of MFW steps.

        Returns
        -------
        float
            The FW gap over the correction polytope (``>= 0``).
        """
        _, gap = K.mfw(self.x, self.alpha, self.atoms, self.n_atoms, self.u0, self.mrf.theta,
                       kvec, self.delta, tol, max_iter)
        return gap

    def _step_to(self, idx, kvec, grad, away_steps):
        """A FW step towards atom ``idx`` (line search in ``[0, 1]``), or an away step when it
        makes more progress (MFW over M)."""
        d = self._contracted_direction(idx)
        if away_steps and self.n_atoms > 1:
            sc = np.empty(self.n_atoms)
            K.atom_scores(grad, self.atoms, self.n_atoms, sc)
            g_u0 = grad @ self.u0
            sc = (1.0 - self.delta) * sc + self.delta * g_u0
            sc[0] = g_u0
            act = self.alpha[:self.n_atoms] > 0
            sc[~act] = -np.inf
            w = int(np.argmax(sc))
            gx = grad @ self.x
            if w != idx and sc[w] - gx > -(grad @ d):
                aw = self.alpha[w]
                gmax = aw / (1.0 - aw) if aw < 1.0 else 1e300
                d_away = -self._contracted_direction(w)
                gamma = K.line_search(self.x, d_away, self.mrf.theta, kvec, gmax)
                self.x += gamma * d_away
                self.alpha[:self.n_atoms] *= 1.0 + gamma
                self.alpha[w] -= gamma
                if gamma >= gmax:
                    self.alpha[w] = 0.0
                self._renormalise()
                return gamma
        gamma = K.line_search(self.x, d, self.mrf.theta, kvec, 1.0)
        self.x += gamma * d
        self.alpha[:self.n_atoms] *= 1.0 - gamma
        self.alpha[idx] += gamma
        self._renormalise()
        return gamma

    def _renormalise(self):
        a = self.alpha[:self.n_atoms]
        a[a < 1e-15] = 0.0
        a /= a.sum()

    def local_search(self, kvec, assignment, max_iter=30, tol=0.5):
        """LOCALSEARCH (Algorithm 6): FW steps with ICM (warm-started at the last vertex) as an
        approximate oracle; finds cheap extra vertices for the correction polytope.

        Stops when ICM returns its starting assignment, after ``max_iter`` steps, or when the
        last five gaps are all below ``tol``.

        Parameters
        ----------
        kvec : ndarray of float64, shape (mrf.dim,)
            Per-coordinate entropy coefficients (``entropy_coefficients(mrf, rho)``).
        assignment : array_like of int, shape (mrf.n_nodes,)
            Start of the first ICM run (the last MAP assignment).
        max_iter : int, default=30
            Largest number of ICM calls.
        tol : float, default=0.5
            Tolerance on the FW gaps towards the ICM vertices.
        """
        mrf = self.mrf
        a = np.array(assignment, dtype=np.int64)
        gaps = []
        for _ in range(max_iter):
            _, grad = self.value_grad(kvec)
            b = a.copy()
            K.icm(-grad, b, mrf.node_offsets, mrf.edge_offsets, mrf.n_states, mrf._inc_ptr,
                  mrf._inc_edge, mrf._inc_other, mrf._inc_first, 100)
            self.n_icm_calls += 1
            idx = self.add_atom(b)
            d = self._contracted_direction(idx)
            gaps.append(-(grad @ d))
            if gaps[-1] > 0:
                self._step_to(idx, kvec, grad, False)
            if np.array_equal(a, b) or (len(gaps) >= 5 and max(gaps[-5:]) < tol):
                break
            a = b

    def run(self, rho, tol=0.5, max_iter=1000, away_steps=False, correction=True,
            correction_freq=1, correction_tol=0.5, correction_max_iter=100,
            local_search=False, local_search_max_iter=30, max_map_calls=None, rho_iter=0):
        """Inner loop of Algorithm 2 for fixed ``rho``: until the FW gap over ``M`` is ``<= tol``.

        Parameters
        ----------
        rho : array_like of shape (mrf.n_edges,)
            Edge appearance probabilities, fixed during the run.
        tol : float, default=0.5
            Tolerance on the FW gap over ``M``.
        max_iter : int, default=1000
            Largest number of FW iterations (one MAP call each).
        away_steps : bool, default=False
            Take an away step instead of the FW step when it makes more progress (MFW over M).
        correction : bool, default=True
            Run ``correct`` (Algorithm 5) every ``correction_freq`` iterations.
        correction_freq : int, default=1
            Iterations between two corrections.
        correction_tol : float, default=0.5
            Tolerance of the correction; a tenth of it once the FW gap is below 1.
        correction_max_iter : int, default=100
            Largest number of MFW steps per correction.
        local_search : bool, default=False
            Run ``local_search`` from the MAP assignment after each step (Algorithm 6).
        local_search_max_iter : int, default=30
            Largest number of ICM calls per local search.
        max_map_calls : int or None, default=None
            Stop once ``n_map_calls`` (counted over every run of this state) reaches it; None
            means no limit.
        rho_iter : int, default=0
            Index of the outer rho iteration, recorded in ``history``.

        Returns
        -------
        dict
            ``gap`` (last FW gap over M), ``trw`` (TRW at the point where it was computed),
            ``bound`` (certified ``TRW + gap``, eq. (24)/(25), or None with an inexact oracle),
            ``n_iter``, ``converged``.
        """
        mrf = self.mrf
        kvec = entropy_coefficients(mrf, rho)
        oracle = self.oracle
        last_corr_gap = 0.0
        info = {"gap": np.inf, "trw": None, "bound": None, "n_iter": 0, "converged": False}
        best_bound = None
        for k in range(max_iter):
            if max_map_calls is not None and self.n_map_calls >= max_map_calls:
                break
            f, grad = self.value_grad(kvec)
            res = oracle(mrf, -grad, self.last_assignment)
            self.n_map_calls += 1
            s = res.assignment
            self.last_assignment = s
            s_idx = mrf.vertex_index(s)
            gx = grad @ self.x
            gap = gx - grad[s_idx].sum()  # <-grad, s - x>
            bound = None
            if res.upper_bound is not None:
                # eq. (25); preferred to (24) because a solver's "optimal" may carry a tolerance
                bound = -f + res.upper_bound + gx
            elif res.exact:
                bound = -f + gap  # eq. (24)
            if bound is not None:
                best_bound = bound if best_bound is None else min(best_bound, bound)
            info.update(gap=gap, trw=-f, bound=best_bound, n_iter=k + 1)
            self.history.append({"rho_iter": rho_iter, "map_calls": self.n_map_calls,
                                 "gap": gap, "delta": self.delta, "trw": -f, "bound": bound,
                                 "time": time.perf_counter() - self._t0})
            if gap <= tol:
                info["converged"] = True
                break
            if self.delta_mode == "adaptive":
                g_delta = gap if gap >= 0 else last_corr_gap  # spec §2.10
                self.set_delta(update_delta(g_delta, gx - grad @ self.u0, self.delta))
            idx = self.add_atom(s)
            self._step_to(idx, kvec, grad, away_steps)
            if correction and (k + 1) % correction_freq == 0:
                ctol = correction_tol if gap >= 1 else 0.1 * correction_tol
                last_corr_gap = self.correct(kvec, ctol, correction_max_iter)
            if local_search:
                self.local_search(kvec, s, local_search_max_iter)
        return info


def _check_common(n_rho_iter, tol, correction_freq):
    if int(n_rho_iter) != n_rho_iter or n_rho_iter < 0:
        raise ValueError(f"n_rho_iter must be a non-negative int, got {n_rho_iter!r}.")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}.")
    if int(correction_freq) != correction_freq or correction_freq < 1:
        raise ValueError(f"correction_freq must be a positive int, got {correction_freq!r}.")


def frank_wolfe_trw(mrf, rho, map_oracle="auto", delta_init=1e-3, delta_mode="adaptive",
                    away_steps=False, correction=True, tol=0.5, max_iter=1000, **kwargs):
    """Maximise ``TRW(mu; theta, rho)`` over the marginal polytope for a fixed rho.

    The Frank-Wolfe baseline of Krishnan, Lacoste-Julien & Sontag (2015) on the TRW objective
    (Wainwright, Jaakkola & Willsky 2005).

    ``delta_mode="fixed"`` is FW over ``M_delta`` (Thm 3.4), ``"adaptive"`` Algorithm 1,
    ``"none"`` plain FW over ``M``; ``away_steps=True`` is MFW (Algorithm 3 with the MAP oracle),
    ``correction=True`` with adaptive delta is FCFW (Algorithm 4). Other keywords go to
    ``TRWFrankWolfe.run``.

    Parameters
    ----------
    mrf : PairwiseMRF
        The model.
    rho : array_like of shape (mrf.n_edges,)
        Edge appearance probabilities.
    map_oracle : str or callable, default="auto"
        A MAP oracle or its name (see ``TRWFrankWolfe``).
    delta_init : float, default=1e-3
        Initial contraction, ``<= 1/4``.
    delta_mode : {"adaptive", "fixed", "none"}, default="adaptive"
        Algorithm 1, a fixed contraction, or plain FW over ``M``.
    away_steps : bool, default=False
        Away steps in the FW over M (MFW).
    correction : bool, default=True
        Run the MFW correction (Algorithm 5) during the loop.
    tol : float, default=0.5
        Tolerance on the FW gap over ``M``.
    max_iter : int, default=1000
        Largest number of FW iterations.
    **kwargs
        Further keywords of ``TRWFrankWolfe.run``.

    Returns
    -------
    state : TRWFrankWolfe
        The solver state; ``state.x`` holds the final iterate.
    info : dict
        The summary returned by ``TRWFrankWolfe.run``.
    """
    state = TRWFrankWolfe(mrf, map_oracle, delta_init, delta_mode)
    info = state.run(np.asarray(rho, dtype=np.float64), tol=tol, max_iter=max_iter,
                     away_steps=away_steps, correction=correction, **kwargs)
    return state, info


def trw_barrier_fw(mrf, map_oracle="auto", rho0="matrix_tree", n_rho_iter=10, tol=0.5,
                   delta_init=1e-3, delta_mode="adaptive", away_steps=False, correction=True,
                   correction_freq=1, correction_tol=0.5, correction_max_iter=100,
                   local_search=False, local_search_max_iter=30, max_iter=1000,
                   max_map_calls=10000, callback=None):
    """TRW-Barrier-FW (spec 004 Algorithm 2): FW over rho in the spanning-tree polytope around
    the (contracted, corrected) FW over the marginal polytope.

    After each inner solve the rho vertex is the maximum-weight spanning tree on the edge mutual
    informations (``-I`` is the gradient of the TRW optimum in rho) and
    ``rho <- rho + 2/(i+3) (rho_v - rho)`` (erratum 1); the iterate is then corrected over the
    visited vertices under the new rho. The bound for a rho is ``TRW(x) + g(x)`` with the full
    polytope gap, certified when the oracle is exact.

    Parameters
    ----------
    mrf : PairwiseMRF
        The model.
    map_oracle : str or callable, default="auto"
        A MAP oracle or its name (see ``TRWFrankWolfe``).
    rho0 : {"matrix_tree", "uniform"} or array_like, default="matrix_tree"
        Initial rho (see ``initial_rho``).
    n_rho_iter : int, default=10
        Updates of rho (the inner problem is solved ``n_rho_iter + 1`` times, once for a
        model without edges).
    tol : float, default=0.5
        Inner tolerance on the FW gap over the full marginal polytope.
    delta_init : float, default=1e-3
        Initial contraction, ``<= 1/4``.
    delta_mode : {"adaptive", "fixed", "none"}, default="adaptive"
        Algorithm 1, a fixed contraction, or plain FW over ``M``.
    away_steps : bool, default=False
        Away steps in the FW over M (MFW).
    correction : bool, default=True
        Run the MFW correction inside the inner loop and after each rho update.
    correction_freq : int, default=1
        Inner iterations between two corrections.
    correction_tol : float, default=0.5
        Tolerance of the correction.
    correction_max_iter : int, default=100
        Largest number of MFW steps per correction.
    local_search : bool, default=False
        ICM local search after each step (Algorithm 6).
    local_search_max_iter : int, default=30
        Largest number of ICM calls per local search.
    max_iter : int, default=1000
        FW iterations per rho.
    max_map_calls : int, default=10000
        Budget of MAP calls over the whole run.
    callback : callable or None, default=None
        Called as ``callback(i, state, rho, info)`` after the inner solve of rho iteration
        ``i``.

    Returns
    -------
    dict
        ``state`` (TRWFrankWolfe), ``rho``, ``bounds`` (certified bound per rho iteration, None
        if not certified), ``log_partition_upper`` (smallest certified bound or None), ``trw``,
        ``gap``, ``rho_gaps``.
    """
    _check_common(n_rho_iter, tol, correction_freq)
    state = TRWFrankWolfe(mrf, map_oracle, delta_init, delta_mode)
    rho = initial_rho(mrf, rho0)
    bounds, rho_gaps = [], []
    info = None
    n_outer = n_rho_iter + 1 if mrf.n_edges else 1
    for i in range(n_outer):
        if i > 0 and correction:
            state.correct(entropy_coefficients(mrf, rho), correction_tol, correction_max_iter)
        info = state.run(rho, tol=tol, max_iter=max_iter, away_steps=away_steps,
                         correction=correction, correction_freq=correction_freq,
                         correction_tol=correction_tol, correction_max_iter=correction_max_iter,
                         local_search=local_search, local_search_max_iter=local_search_max_iter,
                         max_map_calls=max_map_calls, rho_iter=i)
        bounds.append(info["bound"])
        if callback is not None:
            callback(i, state, rho, info)
        if i == n_outer - 1 or state.n_map_calls >= max_map_calls:
            break
        mi = edge_mutual_information(mrf, state.x)
        vert = max_weight_spanning_tree(mrf.n_nodes, mrf.edges, mi)
        rho_gaps.append(float(mi @ (vert - rho)))
        rho = rho + 2.0 / (i + 3.0) * (vert - rho)
    certified = [b for b in bounds if b is not None]
    return {"state": state, "rho": rho, "bounds": bounds,
            "log_partition_upper": min(certified) if certified else None,
            "trw": trw_objective(mrf, state.x, rho), "gap": info["gap"], "rho_gaps": rho_gaps}


def trbp_log_partition(mrf, theta, rho, damping=0.5, tol=1e-8, max_iter=2000):
    """Compute TRW's upper bound on ``log Z(theta)`` over the local polytope at fixed ``rho``.

    Tree-reweighted belief propagation (Wainwright, Jaakkola & Willsky 2005; the TRBP baseline
    of spec 004), for potentials other than the model's own.

    At a fixed point the pseudo-marginals ``tau`` maximise ``TRW(tau; theta, rho)`` over the
    local polytope, the value is ``>= log Z(theta)`` and, as a function of ``theta``, convex with
    gradient ``tau``; on a forest with ``rho = 1`` it is ``log Z`` and ``tau`` the marginals.

    Parameters
    ----------
    mrf : PairwiseMRF
        The graph and state counts (its own ``theta`` is not used).
    theta : array_like of shape (mrf.dim,)
        Log-potentials in the layout of ``mrf``.
    rho : array_like of shape (mrf.n_edges,)
        Edge appearance probabilities (spanning-tree polytope).
    damping : float, default=0.5
        Weight of the old log message, in ``[0, 1)``.
    tol : float, default=1e-8
        Largest change of a log message at convergence.
    max_iter : int, default=2000
        Sweeps over the edges.

    Returns
    -------
    bound : float
        ``TRW(tau; theta, rho)``.
    tau : ndarray of shape (mrf.dim,)
        The pseudo-marginals.
    converged : bool
        Whether the messages reached ``tol``.
    """
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    logm = np.zeros((2 * mrf.n_edges, int(mrf.n_states.max())))
    tau = np.empty(mrf.dim)
    _, change = K.trbp(theta, np.maximum(rho, 1e-12), mrf.layout, logm,
                       (float(damping), float(tol), int(max_iter)), tau)
    return trw_objective(mrf, tau, rho, theta), tau, bool(change < tol)


def trw_local_polytope(mrf, rho0="matrix_tree", n_rho_iter=0, damping=0.5, tol=1e-8,
                       max_iter=2000):
    """TRW over the local polytope by tree-reweighted belief propagation (the baseline of the
    paper, "TRBP"), optionally with the same FW loop over rho.

    Parameters
    ----------
    mrf : PairwiseMRF
        The model.
    rho0 : {"matrix_tree", "uniform"} or array_like, default="matrix_tree"
        Initial rho (see ``initial_rho``).
    n_rho_iter : int, default=0
        Updates of rho (TRBP runs ``n_rho_iter + 1`` times, once for a model without edges;
        the messages are warm-started).
    damping : float, default=0.5
        Weight of the old log message, in ``[0, 1)``.
    tol : float, default=1e-8
        Largest change of a log message at convergence.
    max_iter : int, default=2000
        Sweeps per rho.

    Returns
    -------
    dict
        ``marginals`` (flat pseudo-marginals), ``trw`` (TRW at them: the local-polytope bound at
        a fixed point), ``rho``, ``converged`` (every TRBP run reached ``tol``), ``n_iter``.
    """
    if not 0 <= damping < 1:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}.")
    _check_common(n_rho_iter, 1.0, 1)
    rho = initial_rho(mrf, rho0)
    S = int(mrf.n_states.max())
    logm = np.zeros((2 * mrf.n_edges, S))
    mu = np.empty(mrf.dim)
    converged, n_iter = True, 0
    n_outer = n_rho_iter + 1 if mrf.n_edges else 1
    for i in range(n_outer):
        rho_safe = np.maximum(rho, 1e-12)
        it, change = K.trbp(mrf.theta, rho_safe, mrf.layout, logm,
                            (float(damping), float(tol), int(max_iter)), mu)
        n_iter += it
        converged &= bool(change < tol)
        if i == n_outer - 1:
            break
        mi = edge_mutual_information(mrf, mu)
        vert = max_weight_spanning_tree(mrf.n_nodes, mrf.edges, mi)
        rho = rho + 2.0 / (i + 3.0) * (vert - rho)
    return {"marginals": mu.copy(), "trw": trw_objective(mrf, mu, rho), "rho": rho,
            "converged": converged, "n_iter": n_iter}
