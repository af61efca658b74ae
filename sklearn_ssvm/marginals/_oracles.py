"""MAP oracles: the only access the Frank-Wolfe solvers have to the marginal polytope.

Every oracle follows one protocol (spec 004 §2.2)::

    oracle(mrf, potentials, init=None) -> MAPResult(assignment, value, upper_bound, exact)

maximising ``<potentials, vertex(x)>`` over full assignments ``x``, where ``potentials`` is a flat
vector in the layout of ``mrf``. ``exact`` says whether the assignment is certified optimal (only
then is the Frank-Wolfe gap, hence the log-partition bound, certified); ``upper_bound`` is a
certified bound ``kappa >= max_x <potentials, vertex(x)>`` when the solver has one.

Exact: ``BruteForceMAP`` (small models), ``TreeMAP`` (forests), ``GraphCutMAP`` (binary submodular
models; PyMaxflow, or the compiled cut without it), ``MILPMAP`` (integer programming with
HiGHS), ``TRWSThenMILPMAP`` (TRW-S, integer programming only for the calls its bound does not
certify), ``AutoMAP`` (picks one of these). Approximate: ``ICMMAP``, ``MaxProductMAP`` (TRW or
loopy max-product), ``TRWSMAP`` (TRW-S, with its bound: exact where the bound is met),
``AlphaExpansionMAP`` (graph-cut moves, the same cuts). ``BestOfMAP`` keeps the best of several.
"""
from collections import namedtuple

import numpy as np

from .._kernels import mrf as K
from ._exact import _n_configurations
from ._graphcut import graphcut_map
from ._spanning import initial_rho
from .._kernels.trws import CERTIFIED, trws

__all__ = ["MAPResult", "BruteForceMAP", "TreeMAP", "ICMMAP", "MaxProductMAP", "TRWSMAP",
           "TRWSThenMILPMAP", "AlphaExpansionMAP", "GraphCutMAP", "MILPMAP", "BestOfMAP", "AutoMAP", "check_map_oracle"]

MAPResult = namedtuple("MAPResult", ["assignment", "value", "upper_bound", "exact"])
MAPResult.__doc__ = """Result of a MAP call.

The result of the MAP oracles of Krishnan, Lacoste-Julien & Sontag (2015, spec 004 §2.2).

Parameters
----------
assignment : ndarray of int64, shape (n_nodes,)
    The labels of the nodes.
value : float
    ``<potentials, vertex(assignment)>``.
upper_bound : float or None
    A certified upper bound on the maximum, or None if unknown.
exact : bool
    Whether ``assignment`` is certified to be a maximiser.
"""


def _check_potentials(mrf, potentials):
    pot = np.ascontiguousarray(potentials, dtype=np.float64)
    if pot.shape != (mrf.dim,):
        raise ValueError(f"potentials must have shape ({mrf.dim},), got {pot.shape}.")
    if not np.all(np.isfinite(pot)):
        raise ValueError("potentials must be finite.")
    return pot


def _best_states(mrf, vec):
    """Each node's highest-scoring state in the node blocks of a flat vector (the first on
    ties)."""
    states = np.empty(mrf.n_nodes, dtype=np.int64)
    K.best_states(np.ascontiguousarray(vec, dtype=np.float64), mrf.node_offsets, mrf.n_states,
                  states)
    return states


class _Oracle:
    """Shared helpers; subclasses implement ``__call__``."""

    #: whether the oracle is exact on the models it accepts
    exact = False
    #: ``(model, value)`` of ``_per_model``'s last call
    _cache = (None, None)

    def _per_model(self, mrf, build):
        """``build(mrf)``, computed once for the last model seen (compared by identity)."""
        if self._cache[0] is not mrf:
            self._cache = (mrf, build(mrf))
        return self._cache[1]

    def _result(self, mrf, pot, assignment, exact, upper_bound=None):
        a = np.asarray(assignment, dtype=np.int64)
        return MAPResult(a, mrf.score(a, pot), upper_bound, exact)

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"


class BruteForceMAP(_Oracle):
    """Exact MAP by enumerating all assignments (numba, incremental scores).

    A MAP oracle of the Frank-Wolfe marginal solvers (Krishnan, Lacoste-Julien & Sontag 2015, spec
    004 §2.2).

    Parameters
    ----------
    max_configurations : int, default=2**22
        Refuse larger models with a ValueError (``2**20`` takes about 20 ms).
    """

    exact = True

    def __init__(self, max_configurations=2 ** 22):
        self.max_configurations = max_configurations

    def __call__(self, mrf, potentials, init=None):
        pot = _check_potentials(mrf, potentials)
        n = _n_configurations(mrf)
        if n > self.max_configurations:
            raise ValueError(f"BruteForceMAP: {n:.3g} assignments exceed "
                             f"max_configurations={self.max_configurations}.")
        _, best = K.brute_force_max(pot, mrf.node_offsets, mrf.edges, mrf.edge_offsets,
                                    mrf.n_states, mrf._inc_ptr, mrf._inc_edge, mrf._inc_other,
                                    mrf._inc_first)
        return self._result(mrf, pot, best, True)


def _forest(mrf):
    """``(parent, parent_edge, order)`` of a BFS forest (``order`` by ``tree_order``); raises
    if there is a cycle."""
    from .._kernels.tree import tree_order
    if not mrf.is_forest():
        raise ValueError("TreeMAP needs a forest (the graph has a cycle).")
    parent = np.full(mrf.n_nodes, -1, dtype=np.int64)
    pedge = np.full(mrf.n_nodes, -1, dtype=np.int64)
    seen = np.zeros(mrf.n_nodes, bool)
    for root in range(mrf.n_nodes):
        if seen[root]:
            continue
        seen[root] = True
        stack = [root]
        while stack:
            v = stack.pop()
            for k in range(mrf._inc_ptr[v], mrf._inc_ptr[v + 1]):
                o = mrf._inc_other[k]
                if not seen[o]:
                    seen[o] = True
                    parent[o] = v
                    pedge[o] = mrf._inc_edge[k]
                    stack.append(o)
    return parent, pedge, tree_order(parent)


class TreeMAP(_Oracle):
    """Exact MAP on forests by max-product (``sklearn_ssvm._kernels.tree.tree_max``).

    A MAP oracle of the Frank-Wolfe marginal solvers (Krishnan, Lacoste-Julien & Sontag 2015, spec
    004 §2.2).

    Raises a ValueError on a graph with a cycle.
    """

    exact = True

    def __call__(self, mrf, potentials, init=None):
        from .._kernels.tree import tree_max
        pot = _check_potentials(mrf, potentials)
        parent, pedge, order = self._per_model(mrf, _forest)
        unary, pair_e = mrf.padded_tables(pot, fill=-1e300)
        S = unary.shape[1]
        pair = np.zeros((mrf.n_nodes, S, S))
        child = np.flatnonzero(parent >= 0)
        e = pedge[child]
        # pair[v, a, b] scores (x_v = a, x_parent = b)
        is_first = mrf.edges[e, 0] == child
        pair[child[is_first]] = pair_e[e[is_first]]
        pair[child[~is_first]] = np.transpose(pair_e[e[~is_first]], (0, 2, 1))
        _, y = tree_max(np.ascontiguousarray(unary), np.ascontiguousarray(pair), parent, order)
        return self._result(mrf, pot, y, True)


class ICMMAP(_Oracle):
    """Approximate MAP by iterated conditional modes (a local optimum for single flips).

    Starts from ``init`` when given (warm start, spec 004 §2.8) else from the best state of
    each node's own potential; with ``n_restarts > 0`` also from random assignments, keeping the
    best.

    Parameters
    ----------
    max_sweeps : int, default=100
        Largest number of sweeps over the nodes from each start.
    n_restarts : int, default=0
        Number of extra starts from uniformly random assignments.
    random_state : int, Generator or None, default=None
        Seed of the generator of the random starts (``numpy.random.default_rng``), created at
        the first call that needs it and kept across calls.
    """

    exact = False

    def __init__(self, max_sweeps=100, n_restarts=0, random_state=None):
        self.max_sweeps = max_sweeps
        self.n_restarts = n_restarts
        self.random_state = random_state
        self._rng = None

    def __call__(self, mrf, potentials, init=None):
        pot = _check_potentials(mrf, potentials)
        if init is None:
            starts = [_best_states(mrf, pot)]
        else:
            starts = [mrf.check_assignment(init).copy()]
        if self.n_restarts:
            if self._rng is None:
                self._rng = np.random.default_rng(self.random_state)
            for _ in range(self.n_restarts):
                starts.append((self._rng.random(mrf.n_nodes) * mrf.n_states).astype(np.int64))
        best, best_val = None, -np.inf
        for x in starts:
            K.icm(pot, x, mrf.node_offsets, mrf.edge_offsets, mrf.n_states, mrf._inc_ptr,
                  mrf._inc_edge, mrf._inc_other, mrf._inc_first, self.max_sweeps)
            v = mrf.score(x, pot)
            if v > best_val:
                best, best_val = x, v
        return self._result(mrf, pot, best, False)


class MaxProductMAP(_Oracle):
    """Approximate MAP by tree-reweighted max-product message passing (Wainwright, Jaakkola &
    Willsky 2005), decoded from the max-beliefs and polished by ICM; a MAP oracle of spec 004
    §2.2.

    With ``rho="loopy"`` (every edge weight 1) it is loopy max-product, exact on forests (the
    max-beliefs are then the max-marginals; ties aside). The default weights are the edge
    appearance probabilities of the uniform distribution over spanning trees (TRW
    max-product). The decoded labeling is improved by ICM and by the ``init`` labeling when
    one is given; ``exact`` is False (no certificate).

    Parameters
    ----------
    rho : {"uniform", "loopy"} or array_like of shape (n_edges,), default="uniform"
        Edge weights: spanning-tree appearance probabilities, ones, or given ones in (0, 1].
    damping : float, default=0.5
        Weight of the old log message, in ``[0, 1)``.
    max_iter : int, default=200
        Sweeps over the edges.
    tol : float, default=1e-9
        Largest change of a log message at convergence.
    """

    def __init__(self, rho="uniform", damping=0.5, max_iter=200, tol=1e-9):
        self.rho = rho
        self.damping = damping
        self.max_iter = max_iter
        self.tol = tol

    def _weights(self, mrf):
        """The edge weights (the spanning-tree probabilities invert the graph's Laplacian)."""
        if isinstance(self.rho, str) and self.rho == "loopy":
            return np.ones(mrf.n_edges)
        return np.maximum(initial_rho(mrf, self.rho), 1e-12)

    def __call__(self, mrf, potentials, init=None):
        pot = _check_potentials(mrf, potentials)
        if not 0 <= self.damping < 1:
            raise ValueError(f"damping must be in [0, 1), got {self.damping!r}.")
        logm = np.zeros((2 * mrf.n_edges, int(mrf.n_states.max())))
        beliefs = np.empty(mrf.dim)
        K.trw_max_product(pot, self._per_model(mrf, self._weights), mrf.layout, logm,
                          (float(self.damping), float(self.tol), int(self.max_iter)), beliefs)
        starts = [_best_states(mrf, beliefs)] + ([] if init is None else [init])
        best = max((ICMMAP()(mrf, pot, init=x) for x in starts), key=lambda r: r.value)
        return self._result(mrf, pot, best.assignment, False)


class TRWSMAP(_Oracle):
    """MAP by sequential tree-reweighted message passing (TRW-S, Kolmogorov 2006), compiled,
    with its upper bound on the maximum (``_kernels/trws.py``).

    The decoded labeling, improved by ICM, is certified optimal (``exact=True``) when its
    score meets the bound (to rounding, 1e-9 relative), which happens where the local polytope
    relaxation is tight; otherwise it is an approximation with a certified ``upper_bound``.
    The messages of the last call on a model (compared by identity) start the next one, as
    the potentials of successive solver steps are close.

    Parameters
    ----------
    max_iter : int, default=30
        Forward-backward iterations.
    tol : float, default=1e-6
        The relative improvement of the bound in an iteration below which the iterations stop
        (where the relaxation is not tight the bound creeps down for long). Small, so that a
        call ends certified where the relaxation is tight: ``"auto"`` runs integer programming
        for the calls that do not (predicting the 100 test snakes of
        ``benchmarks/graph_defaults.py``: 11 of 100 calls at ``1e-6``, 56 at ``1e-3``, 4 times
        slower).
    step_iter : int, default=3
        Iterations of a call that needs a labeling and no bound, from the messages of the
        example's last call: a step of BCFW in ``GraphCRF``'s compiled label space (its
        duality gaps take the bounds of the ``max_iter`` calls of its checks).
    bound_tol : float, default=1e-3
        ``tol`` of the calls that need an upper bound and no certified labeling: BCFW's gap
        checks in ``GraphCRF``'s compiled label space, where the bound of an uncertified call
        enters the duality gap. Every bound is valid; a looser one is cheaper. On the 200
        snakes of ``benchmarks/graph_defaults.py`` BCFW's 200 passes reach a certified
        relative gap of 0.020 in 7.9 s with ``1e-3``, 0.020 in 23 s with ``1e-6``; the gap's
        floor is the relaxation's, about 0.012, whatever the iterations (checked from 10 to
        300).
    """

    def __init__(self, max_iter=30, tol=1e-6, step_iter=3, bound_tol=1e-3):
        self.max_iter = max_iter
        self.tol = tol
        self.step_iter = step_iter
        self.bound_tol = bound_tol

    def __call__(self, mrf, potentials, init=None):
        pot = _check_potentials(mrf, potentials)
        logm = self._per_model(mrf, lambda m: np.zeros((2 * m.n_edges, int(m.n_states.max()))))
        assign = np.zeros(mrf.n_nodes, dtype=np.int64)
        value, bound, _ = trws(pot, mrf.layout, logm, int(self.max_iter), float(self.tol),
                               assign)
        if init is not None:  # the caller's labeling, when better
            start = ICMMAP()(mrf, pot, init=init)
            if start.value > value:
                assign, value = start.assignment, start.value
        exact = value >= bound - CERTIFIED * (1.0 + abs(bound))
        return MAPResult(assign, float(value), float(bound), bool(exact))


class AlphaExpansionMAP(_Oracle):
    """Approximate MAP of multi-state models by alpha-expansion moves, each one minimum cut
    (Boykov, Veksler & Zabih 2001, "Fast approximate energy minimization via graph cuts"; a MAP
    oracle of spec 004 §2.2; each cut by ``graphcut_map``).

    A move for label ``a`` lets every node keep its label or switch to ``a``: a binary model
    whose edge tables are solved by ``graphcut_map``. The moves cycle over the
    labels until none improves the score. For Potts-like models (edge scores rewarding equal
    labels, the negated energies of a metric) every move is submodular and the result is
    within the known bound: with energies ``E = -score`` split into non-negative node and
    Potts edge terms, ``E(result) <= 2 E(optimum)``. A move table that is not submodular is
    truncated by lowering its mixed entries (``p01``, ``p10``) until it is: the truncated move
    then under-estimates every switch and scores the current labeling exactly, so no accepted
    move lowers the true score. ``exact`` is False (two labels and submodular edges:
    ``GraphCutMAP`` is exact).

    Parameters
    ----------
    max_cycles : int, default=20
        Largest number of passes over the labels.
    """

    def __init__(self, max_cycles=20):
        self.max_cycles = max_cycles

    def __call__(self, mrf, potentials, init=None):
        pot = _check_potentials(mrf, potentials)
        unary, pair = mrf.padded_tables(pot, fill=-np.inf)
        n_states = mrf.n_states
        nodes = np.arange(mrf.n_nodes)
        x = _best_states(mrf, pot) if init is None else mrf.check_assignment(init).copy()
        a_end, b_end = mrf.edges[:, 0], mrf.edges[:, 1]
        value = mrf.score(x, pot)
        for _ in range(self.max_cycles):
            improved = False
            for label in range(int(n_states.max())):
                can = n_states > label  # nodes that have the label
                move_unary = np.stack([unary[nodes, x], np.where(can, unary[:, label],
                                                                 unary[nodes, x])], axis=1)
                target_a = np.where(can[a_end], label, x[a_end])
                target_b = np.where(can[b_end], label, x[b_end])
                tables = np.empty((mrf.n_edges, 2, 2))
                tables[:, 0, 0] = pair[np.arange(mrf.n_edges), x[a_end], x[b_end]]
                tables[:, 0, 1] = pair[np.arange(mrf.n_edges), x[a_end], target_b]
                tables[:, 1, 0] = pair[np.arange(mrf.n_edges), target_a, x[b_end]]
                tables[:, 1, 1] = pair[np.arange(mrf.n_edges), target_a, target_b]
                excess = tables[:, 0, 1] + tables[:, 1, 0] - tables[:, 0, 0] - tables[:, 1, 1]
                cut = np.maximum(excess, 0.0) / 2.0  # truncation: lower the mixed entries
                tables[:, 0, 1] -= cut
                tables[:, 1, 0] -= cut
                allowed = np.ones((mrf.n_nodes, 2), dtype=bool)
                allowed[:, 1] = can & (x != label)
                move, _ = graphcut_map(move_unary, mrf.edges, tables, allowed)
                candidate = np.where(move == 1, label, x)
                new_value = mrf.score(candidate, pot)
                if new_value > value + 1e-12 * max(1.0, abs(value)):
                    x, value, improved = candidate, new_value, True
            if not improved:
                break
        return self._result(mrf, pot, x, False)


class GraphCutMAP(_Oracle):
    """Exact MAP of binary models with submodular edges (``p00 + p11 >= p01 + p10``) by one
    minimum cut (``sklearn_ssvm.marginals.graphcut_map``: PyMaxflow where installed, else the
    package's compiled max-flow).

    A MAP oracle of the Frank-Wolfe marginal solvers (Krishnan, Lacoste-Julien & Sontag 2015, spec
    004 §2.2), by max-flow (Boykov & Kolmogorov 2004).

    A ValueError is raised for non-binary models or non-submodular edge potentials. Note that
    the perturbed potentials ``theta - K (1 + log mu)`` of TRW need not stay submodular when
    ``theta`` is; wrap the oracle in ``BestOfMAP`` with an exact fallback in that case.
    """

    exact = True

    def __call__(self, mrf, potentials, init=None):
        pot = _check_potentials(mrf, potentials)
        if np.any(mrf.n_states != 2):
            raise ValueError("GraphCutMAP needs binary variables.")
        unary = mrf.node_blocks(pot)
        pair = mrf.edge_blocks(pot) if mrf.n_edges else np.zeros((0, 2, 2))
        y, _ = graphcut_map(unary, mrf.edges, pair)
        return self._result(mrf, pot, y, True)


class MILPMAP(_Oracle):
    """Exact MAP as an integer program over the local polytope, solved by HiGHS
    (``scipy.optimize.milp``; the paper's ILP route, spec 004 §2.2).

    Variables: the flat marginal vector; node entries integral in {0, 1}, edge entries in
    [0, 1] (integral once the nodes are, by the marginalisation constraints).

    Parameters
    ----------
    time_limit : float or None
        Seconds per call; a call stopped early returns the incumbent with ``exact=False``.
    mip_rel_gap : float, default=1e-9
        HiGHS's relative optimality tolerance. The solver's dual bound is always returned as
        ``upper_bound``, so the certificate (eq. (25)) stays valid whatever the tolerance.
    """

    exact = True

    def __init__(self, time_limit=None, mip_rel_gap=1e-9):
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap

    def _constraints(self, mrf):
        from scipy.optimize import LinearConstraint
        from scipy.sparse import coo_matrix
        rows, cols, vals = [], [], []
        r = 0
        for i in range(mrf.n_nodes):  # sum_x mu_i(x) = 1
            o = mrf.node_offsets[i]
            for s in range(mrf.n_states[i]):
                rows.append(r), cols.append(o + s), vals.append(1.0)
            r += 1
        for e, (a, b) in enumerate(mrf.edges):
            Sa, Sb = mrf.n_states[a], mrf.n_states[b]
            o = mrf.edge_offsets[e]
            for xa in range(Sa):  # sum_xb mu_ab(xa, xb) - mu_a(xa) = 0
                for xb in range(Sb):
                    rows.append(r), cols.append(o + xa * Sb + xb), vals.append(1.0)
                rows.append(r), cols.append(mrf.node_offsets[a] + xa), vals.append(-1.0)
                r += 1
            for xb in range(Sb):
                for xa in range(Sa):
                    rows.append(r), cols.append(o + xa * Sb + xb), vals.append(1.0)
                rows.append(r), cols.append(mrf.node_offsets[b] + xb), vals.append(-1.0)
                r += 1
        A = coo_matrix((vals, (rows, cols)), shape=(r, mrf.dim)).tocsr()
        lb = np.zeros(r)
        lb[:mrf.n_nodes] = 1.0
        integrality = np.zeros(mrf.dim)
        integrality[:mrf.node_offsets[-1]] = 1
        return LinearConstraint(A, lb, lb), integrality

    def __call__(self, mrf, potentials, init=None):
        from scipy.optimize import Bounds, milp
        pot = _check_potentials(mrf, potentials)
        cons, integrality = self._per_model(mrf, self._constraints)
        options = {"mip_rel_gap": float(self.mip_rel_gap)}
        if self.time_limit is not None:
            options["time_limit"] = float(self.time_limit)
        res = milp(-pot, constraints=cons, integrality=integrality, bounds=Bounds(0.0, 1.0),
                   options=options)
        if res.x is None:
            raise RuntimeError(f"MILPMAP: HiGHS found no solution ({res.message}).")
        y = _best_states(mrf, res.x)
        optimal = res.status == 0
        result = self._result(mrf, pot, y, bool(optimal))
        dual = getattr(res, "mip_dual_bound", None)
        if dual is not None and np.isfinite(dual):
            result = result._replace(upper_bound=max(float(-dual), result.value))
        return result


class BestOfMAP(_Oracle):
    """Run several oracles and keep the highest-scoring assignment (spec 004 §2.2: the paper
    runs QPBO, TRW-S and ICM "in parallel" and keeps the best).

    The result is exact if any exact oracle ran (its maximum is then the best value); its
    ``upper_bound`` is the smallest one reported. Oracles that raise a ValueError (a model they
    do not accept) are skipped, unless all do.

    Parameters
    ----------
    oracles : list of callable
        MAP oracles following the protocol above, run in order (at least one is needed; on
        equal values the earlier oracle's assignment is kept).
    """

    def __init__(self, oracles):
        self.oracles = oracles

    @property
    def exact(self):
        """Whether any of the oracles is exact."""
        return any(getattr(o, "exact", False) for o in self.oracles)

    def __call__(self, mrf, potentials, init=None):
        if not self.oracles:
            raise ValueError("BestOfMAP needs at least one oracle.")
        best, exact, bound, errors = None, False, None, []
        for o in self.oracles:
            try:
                r = o(mrf, potentials, init)
            except ValueError as err:
                errors.append(err)
                continue
            exact = exact or r.exact
            if r.upper_bound is not None:
                bound = r.upper_bound if bound is None else min(bound, r.upper_bound)
            if best is None or r.value > best.value:
                best = r
        if best is None:
            raise ValueError(f"BestOfMAP: no oracle accepted the model: {errors}")
        return MAPResult(best.assignment, best.value, bound, exact)


class TRWSThenMILPMAP(_Oracle):
    """Exact MAP that pays for integer programming only where the relaxation is not tight:
    TRW-S (``TRWSMAP``, Kolmogorov 2006) first, whose labeling is certified when it meets
    TRW-S's bound, and ``MILPMAP`` (spec 004 §2.2's integer program) for the calls it leaves
    uncertified.

    ``answered`` names the oracle that answered the last call (``"TRWSMAP"`` or ``"MILPMAP"``),
    so that callers can report the share of calls that needed integer programming.
    ``approximate`` is the TRW-S oracle alone, for callers that certify with its bound instead
    (BCFW's duality gap takes an upper bound on each maximum as well as the maximum).

    Parameters
    ----------
    max_iter : int, default=30
        TRW-S's forward-backward iterations per call.
    max_variables : int, default=20000
        The largest integer program run: models of more variables (node states plus edge
        state pairs) keep TRW-S's labeling, uncertified (the snakes' 8 x 8 grids of 11 states
        have 14,256 and take HiGHS 0.2-0.4 s a call; a 32 x 32 grid of 8 states has 135,168,
        and a 128 x 128 image did not finish in minutes).
    """

    exact = True

    def __init__(self, max_iter=30, max_variables=20000):
        self.max_iter = max_iter
        self.max_variables = max_variables
        self._trws = None
        self._milp = MILPMAP()
        self.answered = None

    @property
    def approximate(self):
        """The TRW-S oracle (its messages warm-start both)."""
        if self._trws is None:
            self._trws = TRWSMAP(max_iter=self.max_iter)
        return self._trws

    def __call__(self, mrf, potentials, init=None):
        first = self.approximate(mrf, potentials, init)
        if first.exact or mrf.dim > self.max_variables:
            self.answered = "TRWSMAP"
            return first
        self.answered = "MILPMAP"
        exact = self._milp(mrf, potentials)
        return exact._replace(upper_bound=min(first.upper_bound, exact.upper_bound)
                              if exact.upper_bound is not None else first.upper_bound)


#: the largest model with a cycle that ``"auto"`` enumerates: beyond it HiGHS is faster (one
#: MAP call on a binary grid, 2**16 assignments: enumeration 14 ms, HiGHS 18 ms; 2**18: 53 and
#: 18 ms)
BRUTE_FORCE_LIMIT = 2 ** 16


class AutoMAP(_Oracle):
    """The default exact oracle: tree max-product on forests, brute force up to
    ``max_configurations`` assignments, otherwise TRW-S, certified by its bound where the
    relaxation is tight, and integer programming (HiGHS) for the other calls
    (``TRWSThenMILPMAP``).

    A MAP oracle of the Frank-Wolfe marginal solvers (Krishnan, Lacoste-Julien & Sontag 2015, spec
    004 §2.2).

    Parameters
    ----------
    max_configurations : int, default=2**16
        Largest number of assignments of a model with a cycle that is solved by brute force
        (``BruteForceMAP``); larger models go to ``MILPMAP``, faster beyond it.
    """

    exact = True

    def __init__(self, max_configurations=BRUTE_FORCE_LIMIT):
        self.max_configurations = max_configurations

    def choose(self, mrf):
        """The oracle used for ``mrf``.

        The choice is cached for the last model seen (compared by identity).

        Parameters
        ----------
        mrf : PairwiseMRF
            The model.

        Returns
        -------
        TreeMAP, BruteForceMAP or TRWSThenMILPMAP
            ``TreeMAP`` if the graph is a forest, else ``BruteForceMAP`` if the model has at
            most ``max_configurations`` assignments, else ``TRWSThenMILPMAP``.
        """
        return self._per_model(mrf, self._choose)

    def _choose(self, mrf):
        if mrf.is_forest():
            return TreeMAP()
        if _n_configurations(mrf) <= self.max_configurations:
            return BruteForceMAP(self.max_configurations)
        return TRWSThenMILPMAP()

    def __call__(self, mrf, potentials, init=None):
        return self.choose(mrf)(mrf, potentials, init)


_NAMES = {"auto": AutoMAP, "brute_force": BruteForceMAP, "tree": TreeMAP, "icm": ICMMAP,
          "max_product": MaxProductMAP, "trws": TRWSMAP, "expansion": AlphaExpansionMAP,
          "graphcut": GraphCutMAP, "milp": MILPMAP}


def check_map_oracle(map_oracle):
    """An oracle from a name (``"auto"``, ``"brute_force"``, ``"tree"``, ``"icm"``,
    ``"max_product"``, ``"trws"``, ``"expansion"``, ``"graphcut"``, ``"milp"``) or a callable
    following the protocol."""
    if isinstance(map_oracle, str):
        if map_oracle not in _NAMES:
            raise ValueError(f"Unknown map_oracle {map_oracle!r}; expected one of "
                             f"{sorted(_NAMES)} or a callable.")
        return _NAMES[map_oracle]()
    if not callable(map_oracle):
        raise ValueError(f"map_oracle must be a name or a callable, got {map_oracle!r}.")
    return map_oracle
