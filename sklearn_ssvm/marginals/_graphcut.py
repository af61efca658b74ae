"""Graph cuts on loopy binary pairwise models: the MAP labeling, max-marginals and BMMF top-K.

On a graph with cycles the max oracle of a binary pairwise model is a minimum s-t cut when the
pairwise terms are submodular, and the top-K oracle follows from max-marginals by Best
Max-Marginal First (spec 000 §2.4: Def. 13, Algo. 10 / Thm 46, Algo. 11 / Thm 47, Prop. 14(A)).

Scores are written ``psi(y) = sum_v unary[v, y_v] + sum_{e=(a,b)} pairwise_e[y_a, y_b]`` and are
maximised; a pairwise table is *submodular* (in the score sense) when
``p00 + p11 >= p01 + p10`` (eq. (72) for the energy ``-psi``).

PyMaxflow is an optional dependency, imported only when a graph cut is run; without it the MAP
cut runs on the package's own max-flow kernel (``_kernels.maxflow``), and only the max-marginals
(BMMF top-K), which reuse PyMaxflow's residual graph, need it.
"""
import numbers

import numpy as np

from .._kernels.maxflow import SUBMODULAR_SLACK, binary_cut_map
from ._mrf import PairwiseMRF

__all__ = ["bmmf_topk", "graphcut_map", "graphcut_max_marginals", "project_submodular"]

# a . vec(table) >= 0 is the submodularity condition on the 2x2 table [[p00, p01], [p10, p11]]
_SUBMODULAR_NORMAL = np.array([[1.0, -1.0], [-1.0, 1.0]])


def _import_maxflow():
    try:
        import maxflow
    except ImportError as exc:
        raise ImportError('Graph-cut oracles need PyMaxflow; install it with '
                          'pip install "sklearn_ssvm[graphcut]".') from exc
    return maxflow


def _check_count(value, name, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) \
            or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _check_edges(edges, p):
    """``edges`` as an ``(E, 2)`` int64 array of distinct in-range endpoints."""
    arr = np.asarray(edges)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"edges must have shape (n_edges, 2), got {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"edges must be an integer array, got dtype {arr.dtype}.")
    bad = np.flatnonzero(((arr < 0) | (arr >= p)).any(axis=1))
    if len(bad):
        raise ValueError(f"Edge {bad[0]} {arr[bad[0]].tolist()} has an endpoint out of range "
                         f"for {p} nodes.")
    loops = np.flatnonzero(arr[:, 0] == arr[:, 1])
    if len(loops):
        raise ValueError(f"Edge {loops[0]} {arr[loops[0]].tolist()} is a self loop.")
    return arr.astype(np.int64)


def _check_model(unary, edges, pairwise):
    """Validated ``(unary (p, 2), edges (E, 2), tables (E, 2, 2))``; tables must be submodular."""
    unary = np.asarray(unary, dtype=np.float64)
    if unary.ndim != 2 or unary.shape[1] != 2 or unary.shape[0] == 0:
        raise ValueError(f"unary must have shape (n_nodes, 2) with n_nodes >= 1, got "
                         f"{unary.shape}.")
    if not np.all(np.isfinite(unary)):
        raise ValueError("unary contains NaN or infinity; use constraints to forbid labels.")
    edges = _check_edges(edges, unary.shape[0])
    n_edges = edges.shape[0]
    tables = np.asarray(pairwise, dtype=np.float64)
    if tables.shape == (2, 2):
        tables = np.broadcast_to(tables, (n_edges, 2, 2))
    elif tables.shape != (n_edges, 2, 2):
        raise ValueError(f"pairwise must be a shared (2, 2) table or one (2, 2) table per edge "
                         f"({n_edges}, 2, 2), got {tables.shape}.")
    if not np.all(np.isfinite(tables)):
        raise ValueError("pairwise contains NaN or infinity.")
    margin = np.einsum("eij,ij->e", tables, _SUBMODULAR_NORMAL)
    # rounding slack, so that tables on the boundary (e.g. projected ones) are accepted
    slack = SUBMODULAR_SLACK * (1.0 + np.abs(tables).max(axis=(1, 2), initial=0.0))
    bad = np.flatnonzero(margin < -slack)
    if len(bad):
        raise ValueError(f"The pairwise table of edge {bad[0]} is not submodular: "
                         f"p00 + p11 - p01 - p10 = {margin[bad[0]]:.6g} < 0. Graph cuts need "
                         f"p00 + p11 >= p01 + p10 (project_submodular projects a table).")
    return unary, edges, tables


def _check_constraints(constraints, p):
    """Boolean ``(p, 2)`` mask of allowed labels from None, a dict, fixed values or a mask."""
    allowed = np.ones((p, 2), dtype=bool)
    if constraints is None:
        return allowed
    if isinstance(constraints, dict):
        fixed = np.full(p, -1, dtype=np.int64)
        for node, label in constraints.items():
            if not isinstance(node, numbers.Integral) or not 0 <= node < p:
                raise ValueError(f"Constraint on node {node!r}: nodes are 0..{p - 1}.")
            if label not in (-1, 0, 1):
                raise ValueError(f"Constraint y_{node} = {label!r}: labels are 0 and 1 "
                                 f"(-1 = free).")
            fixed[node] = label
        constraints = fixed
    arr = np.asarray(constraints)
    if arr.dtype == bool and arr.shape == (p, 2):
        return arr.copy()
    if arr.shape != (p,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"constraints must be a dict, an integer array of shape ({p},) "
                         f"(-1 = free) or a boolean ({p}, 2) mask, got shape {arr.shape} and "
                         f"dtype {arr.dtype}.")
    bad = np.flatnonzero((arr < -1) | (arr > 1))
    if len(bad):
        raise ValueError(f"Constraint y_{bad[0]} = {arr[bad[0]]}: labels are 0 and 1 "
                         f"(-1 = free).")
    allowed[arr == 0, 1] = False
    allowed[arr == 1, 0] = False
    return allowed


def _score(unary, edges, tables, y):
    """``psi(y)``, recomputed exactly from the labeling (no flow roundoff)."""
    return float(unary[np.arange(unary.shape[0]), y].sum()
                 + tables[np.arange(edges.shape[0]), y[edges[:, 0]], y[edges[:, 1]]].sum())


def _solved_cut(unary, edges, tables, allowed):
    """Build the Kolmogorov-Zabih graph of ``-psi`` under ``allowed`` and run max-flow.

    With ``A, B, C, D`` the energies ``-p00, -p01, -p10, -p11`` of an edge ``(a, b)``,
    ``E(y_a, y_b) = A + (C - A) y_a + (D - C) y_b + (B + C - A - D) [y_a = 0, y_b = 1]``, so each
    edge adds to the unary energies and gets one arc ``a -> b`` of capacity ``B + C - A - D``,
    non-negative exactly when the table is submodular. Node ``v`` ends on the sink side iff
    ``y_v = 1``, paying its source arc. This is the standard construction (Kolmogorov & Zabih
    2004) used instead of the printed edge list of Algo. 11 (spec §8, errata 14). Returns
    ``(graph, labeling, big)``: the maxflow graph (its residual graph after the flow), the
    labeling (p,) int64, and a float capacity larger than any cut that respects the
    constraints, used to force labels."""
    maxflow = _import_maxflow()
    p = unary.shape[0]
    energy = -tables
    A, B, C, D = energy[:, 0, 0], energy[:, 0, 1], energy[:, 1, 0], energy[:, 1, 1]
    delta = unary[:, 0] - unary[:, 1]  # energy of label 1 minus energy of label 0
    np.add.at(delta, edges[:, 0], C - A)
    np.add.at(delta, edges[:, 1], D - C)
    arcs = np.maximum(B + C - A - D, 0.0)  # clips the rounding slack allowed by _check_model
    big = 1.0 + 2.0 * (np.abs(delta).sum() + arcs.sum())
    cap_source = np.maximum(delta, 0.0) + big * ~allowed[:, 1]
    cap_sink = np.maximum(-delta, 0.0) + big * ~allowed[:, 0]
    graph = maxflow.Graph[float](p, edges.shape[0])
    nodes = graph.add_nodes(p)
    graph.add_grid_tedges(nodes, cap_source, cap_sink)
    if edges.shape[0]:
        graph.add_edges(edges[:, 0], edges[:, 1], arcs, np.zeros_like(arcs))
    graph.maxflow()
    return graph, graph.get_grid_segments(nodes).astype(np.int64), big


def graphcut_map(unary, edges, pairwise, constraints=None):
    """MAP labeling of a submodular binary pairwise model with one minimum cut.

    Solves ``max_y psi(y)`` subject to the constraints with a single max-flow on the
    Kolmogorov-Zabih graph of the energy ``-psi`` (spec 000 Algo. 11, Prop. 14(A)).

    Parameters
    ----------
    unary : array_like of shape (p, 2)
        Node scores ``unary[v, j]`` of ``y_v = j``; finite.
    edges : array_like of int, shape (E, 2)
        Edges ``(a, b)``, endpoints in ``0..p-1``, no self loops (cycles are fine).
    pairwise : array_like of shape (2, 2) or (E, 2, 2)
        A shared table or one table per edge; ``pairwise[e][y_a, y_b]`` scores edge ``e``. Each
        table must be submodular: ``p00 + p11 >= p01 + p10``.
    constraints : None, dict, array_like of shape (p,) or bool array of shape (p, 2), optional
        Fixed labels: ``{node: label}``, or an integer array with ``-1`` for free nodes, or a mask
        of the allowed labels of each node.

    Returns
    -------
    labeling : ndarray of int64, shape (p,)
        A maximiser of ``psi`` under the constraints.
    value : float
        ``psi(labeling)``, recomputed exactly from the labeling.

    Raises
    ------
    ValueError
        On invalid shapes, non-finite scores, non-submodular tables, invalid constraints or a
        node left without any allowed label.
    """
    unary, edges, tables = _check_model(unary, edges, pairwise)
    allowed = _check_constraints(constraints, unary.shape[0])
    empty = np.flatnonzero(~allowed.any(axis=1))
    if len(empty):
        raise ValueError(f"The constraints leave node {empty[0]} no allowed label.")
    try:
        _, labeling, _ = _solved_cut(unary, edges, tables, allowed)
    except ImportError:  # the plain install: the same cut by the compiled kernel
        labeling = _compiled_cut(unary, edges, tables, allowed)
    return labeling, _score(unary, edges, tables, labeling)


def _compiled_cut(unary, edges, tables, allowed):
    """A maximiser under ``allowed`` by ``_kernels.maxflow.binary_cut_map`` (Boykov &
    Kolmogorov 2004, compiled): parallel and reversed edges merged (their tables added, the
    reversed ones transposed: sums of submodular tables are submodular), a forbidden label
    priced out of reach."""
    big = 1.0 + 2.0 * (np.abs(unary).sum() + np.abs(tables).sum())
    flipped = edges[:, 0] > edges[:, 1]
    tables = np.where(flipped[:, None, None], tables.transpose(0, 2, 1), tables)
    p = unary.shape[0]
    codes, inverse = np.unique(edges.min(axis=1) * p + edges.max(axis=1), return_inverse=True)
    merged = np.zeros((len(codes), 2, 2))
    np.add.at(merged, inverse.ravel(), tables)
    pairs = np.stack([codes // p, codes % p], axis=1)
    mrf = PairwiseMRF(2, pairs, np.where(allowed, unary, unary - big), merged)
    labeling = np.zeros(unary.shape[0], dtype=np.int64)
    if not binary_cut_map(mrf.theta, mrf.layout, labeling):
        raise ValueError("The edge tables are not submodular: a graph cut cannot decode them.")
    return labeling


def graphcut_max_marginals(unary, edges, pairwise, constraints=None, return_map=False):
    """Compute the max-marginals ``max{psi(y) : y_v = j}`` of a submodular binary model.

    Def. 13 computed with minimum cuts (Algo. 11, Thm 47). Rather than one cut per entry (``2p``
    cuts), the routine runs one cut for the constrained MAP ``y*`` -- which gives every entry
    ``(v, y*_v)`` at once -- and one more per free node for ``(v, 1 - y*_v)``, so ``1 + #free``
    cuts. All of them run on one graph (dynamic graph cuts, as in Kohli & Torr, "Measuring
    uncertainty in graph cut solutions", 2006/2008): ``v`` is forced to the other side by adding a
    prohibitive terminal capacity to the *residual* graph of the previous flow, max-flow then
    only pushes the extra flow, and the capacity is subtracted again before the next node
    (terminal capacities may be changed between flows; the flow stays valid). On a 20x20 grid
    this is about 20 times faster than ``2p`` independent cuts. Every entry is the exact score
    of the labeling its cut returns, so flow roundoff can only matter between labelings whose
    scores tie to ~1e-15 relative.

    Parameters
    ----------
    unary : array_like of shape (p, 2)
        As in :func:`graphcut_map`.
    edges : array_like of int, shape (E, 2)
        As in :func:`graphcut_map`.
    pairwise : array_like of shape (2, 2) or (E, 2, 2)
        As in :func:`graphcut_map`.
    constraints : None, dict, array_like of shape (p,) or bool array of shape (p, 2), optional
        As in :func:`graphcut_map`; the max-marginals are taken under them. A node whose mask
        allows no label makes the problem infeasible: the table is then all ``-inf``.
    return_map : bool, default=False
        Also return the constrained MAP labeling (used by :func:`bmmf_topk` to stay exact when
        scores tie).

    Returns
    -------
    table : ndarray of shape (p, 2)
        ``table[v, j] = max{psi(y) : y_v = j, y satisfies the constraints}``, ``-inf`` where no
        such ``y`` exists.
    labeling : ndarray of int64, shape (p,)
        Only with ``return_map=True``: a maximiser of ``psi`` under the constraints (all ``-1``
        when infeasible).

    Raises
    ------
    ValueError, ImportError
        As in :func:`graphcut_map`.
    """
    unary, edges, tables = _check_model(unary, edges, pairwise)
    p = unary.shape[0]
    allowed = _check_constraints(constraints, p)
    table = np.full((p, 2), -np.inf)
    if not allowed.any(axis=1).all():
        return (table, np.full(p, -1, dtype=np.int64)) if return_map else table
    graph, labeling, big = _solved_cut(unary, edges, tables, allowed)
    table[np.arange(p), labeling] = _score(unary, edges, tables, labeling)
    nodes = np.arange(p)
    for v in np.flatnonzero(allowed.all(axis=1)):
        # y_v = 1 is the sink side: a huge sink arc forces y_v = 1, a huge source arc y_v = 0
        force = (0.0, big) if labeling[v] == 0 else (big, 0.0)
        graph.add_tedge(int(v), *force)
        graph.maxflow()
        table[v, 1 - labeling[v]] = _score(unary, edges, tables,
                                           graph.get_grid_segments(nodes).astype(np.int64))
        # remove the arc again: the residual flow stays valid for the next node
        graph.add_tedge(int(v), -force[0], -force[1])
    return (table, labeling) if return_map else table


def max_marginals_by_map(best, allowed):
    """BMMF's max-marginals from a constrained MAP oracle: ``best(mask) -> (labeling, value)``
    (``value`` -inf where the labeling breaks the mask), called once under ``allowed`` and once
    per (node, other allowed state) with the node forced to it. Returns ``(table, labeling)``
    as ``bmmf_topk``'s ``max_marginals_fn`` does (``-inf`` and -1 where a node has no state)."""
    table = np.full(allowed.shape, -np.inf)
    if not allowed.any(axis=1).all():
        return table, np.full(allowed.shape[0], -1, dtype=np.int64)
    labeling, value = best(allowed)
    table[np.arange(allowed.shape[0]), labeling] = value
    for v, s in zip(*np.nonzero(allowed)):
        if s != labeling[v]:
            forced = allowed.copy()
            forced[v] = False
            forced[v, s] = True
            table[v, s] = best(forced)[1]
    return table, labeling


def bmmf_topk(max_marginals_fn, p, K, n_labels=2):
    """The K best distinct labelings by Best Max-Marginal First (spec 000 Algo. 10, Thm 46).

    After Yanover & Weiss (2004). The labelings found so far each own a cell of the output space
    (a set of constraints ``C^(s)``) of which they are the best element; the next best labeling
    is the largest max-marginal ``phi^(s)(v, j)`` with ``j != y^(s)_v`` over all cells. That cell
    is split into ``C^(s) + {y_v = j}`` (the new labeling's cell) and ``C^(s) + {y_v != j}``
    (still led by ``y^(s)``), and both get their max-marginals recomputed: one call for the
    first labeling and two per further labeling, at most ``2K - 1`` calls in all.

    Parameters
    ----------
    max_marginals_fn : callable
        ``max_marginals_fn(allowed) -> table`` or ``-> (table, labeling)``. ``allowed`` is a
        boolean ``(p, n_labels)`` mask of the labels each node may take (a copy the function
        may keep); ``table[v, j]`` must be ``max{psi(y) : y_v = j, y allowed}`` (``-inf`` when
        empty). When the function also returns a maximising allowed labeling it is used as the
        cell's best labeling; otherwise the labeling is decoded as ``argmax_j table[v, j]``
        (Thm 45, lowest label on ties), which is exact only when the maximiser is unique.
    p : int
        Number of nodes, ``>= 1``.
    K : int
        Number of labelings wanted, ``>= 1``.
    n_labels : int, default=2
        Number of labels of every node, ``>= 2``.

    Returns
    -------
    labelings : ndarray of int64, shape (K, p)
        Distinct labelings by non-increasing score; rows past the number of labelings that
        exist (``n_labels ** p`` or fewer if the routine forbids some) are ``-1``.
    scores : ndarray of shape (K,)
        Their scores (the cells' maxima), ``-inf`` for padding rows.

    Notes
    -----
    The result is exact when the max-marginals are exact (Thm 46). Ties between candidate
    splits are broken by the lowest ``(cell, node, label)``, so the output is deterministic.
    """
    if not callable(max_marginals_fn):
        raise ValueError("max_marginals_fn must be callable.")
    p = _check_count(p, "p", 1)
    K = _check_count(K, "K", 1)
    n_labels = _check_count(n_labels, "n_labels", 2)
    rows = np.arange(p)

    def solve(allowed):
        out = max_marginals_fn(allowed.copy())
        table, y = out if isinstance(out, tuple) else (out, None)
        table = np.asarray(table, dtype=np.float64)
        if table.shape != (p, n_labels):
            raise ValueError(f"max_marginals_fn returned a table of shape {table.shape}, "
                             f"expected ({p}, {n_labels}).")
        if np.isnan(table).any() or (table == np.inf).any():
            raise ValueError("max_marginals_fn returned NaN or +inf.")
        if y is None:
            y = np.argmax(table, axis=1)
        elif np.isfinite(table.max()):
            y = np.asarray(y, dtype=np.int64)
            if y.shape != (p,) or not np.all((y >= 0) & (y < n_labels)) \
                    or not allowed[rows, y].all():
                raise ValueError("max_marginals_fn returned an invalid labeling or one that "
                                 "breaks the constraints it was given.")
        return table, y

    def best_split(table, y):
        """Best ``(value, v, j)`` of a cell with ``j != y_v`` (lowest ``v``, ``j`` on ties)."""
        others = table.copy()
        others[rows, y] = -np.inf
        v, j = np.unravel_index(np.argmax(others), others.shape)
        return others[v, j], v, j

    labelings = np.full((K, p), -1, dtype=np.int64)
    scores = np.full(K, -np.inf)
    masks, ys, splits = [], [], []
    allowed = np.ones((p, n_labels), dtype=bool)
    table, y = solve(allowed)
    for k in range(K):
        scores[k] = table.max()
        if not np.isfinite(scores[k]):
            break
        labelings[k] = y
        masks.append(allowed)
        ys.append(y)
        splits.append(best_split(table, y))
        if k == K - 1:
            break
        s = int(np.argmax([split[0] for split in splits]))  # first cell on ties
        value, v, j = splits[s]
        if not np.isfinite(value):
            break
        allowed = masks[s].copy()
        allowed[v] = False
        allowed[v, j] = True
        masks[s][v, j] = False
        # y^(s) stays the best of its shrunk cell; only its runner-up changes
        splits[s] = best_split(solve(masks[s])[0], ys[s])
        table, y = solve(allowed)
    return labelings, scores


def project_submodular(pairwise):
    """Project 2x2 tables onto the submodular cone ``p00 + p11 >= p01 + p10`` (Euclidean).

    The cone is the half-space ``<a, t> >= 0`` with ``a = (1, -1, -1, 1)`` on
    ``t = (p00, p01, p10, p11)``, so a violating table moves along ``a``:
    ``t - min(<a, t>, 0) a / 4``. Learning can leave the cone; projecting the pairwise weights
    after an update keeps the graph-cut oracles applicable (the condition of Kolmogorov &
    Zabih 2004, spec 000 eq. (72)).

    Parameters
    ----------
    pairwise : array_like of shape (..., 2, 2) or (4,)
        One or more tables (``(4,)`` is the flattened ``theta`` of :class:`BinaryGraphCRF`).

    Returns
    -------
    ndarray of the same shape, float64
        The projected tables, a new array; tables already in the cone are unchanged.
    """
    arr = np.asarray(pairwise, dtype=np.float64)
    flat = arr.shape == (4,)
    if not flat and (arr.ndim < 2 or arr.shape[-2:] != (2, 2)):
        raise ValueError(f"pairwise must have shape (4,) or (..., 2, 2), got {arr.shape}.")
    tables = arr.reshape(2, 2) if flat else arr
    margin = np.einsum("...ij,ij->...", tables, _SUBMODULAR_NORMAL)
    projected = tables - np.minimum(margin, 0.0)[..., None, None] * _SUBMODULAR_NORMAL / 4.0
    return projected.reshape(arr.shape)
