"""Loopy binary pairwise graphs: graph-cut max-marginals, BMMF top-K and ``BinaryGraphCRF``.

On a graph with cycles the max oracle of a binary pairwise model is a minimum s-t cut when the
pairwise terms are submodular, and the top-K oracle follows from max-marginals by Best
Max-Marginal First (spec 000 §2.4: Def. 13, Algo. 10 / Thm 46, Algo. 11 / Thm 47, Prop. 14(A)).
The exp oracle (entropy smoothing) is #P-hard on these graphs and is not offered (spec §2.2).

Scores are written ``psi(y) = sum_v unary[v, y_v] + sum_{e=(a,b)} pairwise_e[y_a, y_b]`` and are
maximised; a pairwise table is *submodular* (in the score sense) when
``p00 + p11 >= p01 + p10`` (eq. (72) for the energy ``-psi``).

PyMaxflow is an optional dependency, imported only when a graph cut is run.
"""
import numbers
from collections import Counter
from functools import cached_property

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .._kernels.smoothed import NONE, TOP_K
from .._kernels.threads import thread_map
from ..smoothing import topk_smooth_max
from .base import ExampleWeights

__all__ = ["BinaryGraphCRF", "bmmf_topk", "graphcut_map", "graphcut_max_marginals",
           "project_submodular"]

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


def _check_matrix(value, name, i, min_rows=1, min_cols=0):
    """A finite 2-D float64 array of example ``i`` with at least ``min_rows`` rows and
    ``min_cols`` columns, or a ValueError naming ``name``."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 2 or arr.shape[0] < min_rows or arr.shape[1] < min_cols:
        raise ValueError(f"Example {i}: {name} must be a 2-D numeric array with at least "
                         f"{min_rows} row(s) and {min_cols} column(s), got shape "
                         f"{np.shape(value)}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Example {i}: {name} contains NaN or infinity.")
    return arr


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
    slack = 1e-9 * (1.0 + np.abs(tables).max(axis=(1, 2), initial=0.0))
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
    2004) used instead of the printed edge list of Algo. 11 (spec §8, errata 14).

    Returns
    -------
    graph : maxflow graph (its residual graph after the flow)
    labeling : ndarray of int64, shape (p,)
    big : float
        A capacity larger than any cut that respects the constraints, used to force labels.
    """
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
    value : float
        ``psi(labeling)``, recomputed exactly from the labeling.

    Raises
    ------
    ValueError
        On invalid shapes, non-finite scores, non-submodular tables, invalid constraints or a
        node left without any allowed label.
    ImportError
        If PyMaxflow is not installed.
    """
    unary, edges, tables = _check_model(unary, edges, pairwise)
    allowed = _check_constraints(constraints, unary.shape[0])
    empty = np.flatnonzero(~allowed.any(axis=1))
    if len(empty):
        raise ValueError(f"The constraints leave node {empty[0]} no allowed label.")
    _, labeling, _ = _solved_cut(unary, edges, tables, allowed)
    return labeling, _score(unary, edges, tables, labeling)


def graphcut_max_marginals(unary, edges, pairwise, constraints=None, return_map=False):
    """Max-marginals ``max{psi(y) : y_v = j, constraints}`` of a submodular binary model.

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
    unary, edges, pairwise, constraints
        As in :func:`graphcut_map`. A node whose mask allows no label makes the problem
        infeasible: the table is then all ``-inf``.
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
    """Euclidean projection of 2x2 tables onto the submodular cone ``p00 + p11 >= p01 + p10``.

    The cone is the half-space ``<a, t> >= 0`` with ``a = (1, -1, -1, 1)`` on
    ``t = (p00, p01, p10, p11)``, so a violating table moves along ``a``:
    ``t - min(<a, t>, 0) a / 4``. Learning can leave the cone; projecting the pairwise weights
    after an update keeps the graph-cut oracles applicable.

    Parameters
    ----------
    pairwise : array_like of shape (..., 2, 2) or (4,)
        One or more tables (``(4,)`` is the flattened ``theta`` of :class:`BinaryGraphCRF`).

    Returns
    -------
    projected : ndarray of the same shape, float64
        A new array; tables already in the cone are unchanged.
    """
    arr = np.asarray(pairwise, dtype=np.float64)
    flat = arr.shape == (4,)
    if not flat and (arr.ndim < 2 or arr.shape[-2:] != (2, 2)):
        raise ValueError(f"pairwise must have shape (4,) or (..., 2, 2), got {arr.shape}.")
    tables = arr.reshape(2, 2) if flat else arr
    margin = np.einsum("...ij,ij->...", tables, _SUBMODULAR_NORMAL)
    projected = tables - np.minimum(margin, 0.0)[..., None, None] * _SUBMODULAR_NORMAL / 4.0
    return projected.reshape(arr.shape)


class BinaryGraphCRF(BaseEstimator):
    """Binary labelling of the nodes of a (loopy) graph with submodular pairwise weights.

    An example is ``x = (node_features, edges)`` with ``node_features`` a dense
    ``(p, n_features)`` array and ``edges`` an ``(E, 2)`` integer array (any graph: grids,
    cycles; each example has its own); a labeling ``y`` is a 0/1 array of length ``p``. The
    joint feature follows the package's shape ``phi(x, y) = vec(X^T S(y)) (+) q(y)``:

    - ``vec(X^T onehot(y))`` (``n_features x 2``, row-major),
    - the 2x2 table of pairwise label counts ``q(y)[a, b] = #{(u, v) in edges : y_u = a,
      y_v = b}`` (4 values),

    so ``coef = [vec(W), theta]`` with ``W`` of shape ``(n_features, 2)`` and ``theta`` a
    shared 2x2 table (row-major). The loss is the Hamming loss normalised by ``p``.

    Oracles (spec 000 §2.4, Table 2): the max oracle and decoding are one graph cut (Algo. 11,
    Prop. 14(A)); the top-K oracle is BMMF (Algo. 10) on graph-cut max-marginals, ``O(pK)``
    cuts. They need ``theta`` submodular (``theta_00 + theta_11 >= theta_01 + theta_10``): keep
    it so with :meth:`project_coef`. Entropy smoothing is not available (#P-hard, spec §2.2).

    Attributes
    ----------
    classes_ : ndarray
        ``array([0, 1])``, set by :meth:`fit`.
    n_features_in_ : int
        Number of node features, set by :meth:`fit`; examples are checked against it after.
    """

    loss_name = "normalised Hamming loss"
    #: the graph cuts need the pairwise table submodular (``project_coef``)
    constrained_coef = True

    def fit(self, X, Y):
        """Validate a data set of graphs and learn the number of node features.

        Parameters
        ----------
        X : list of (node_features, edges) pairs
            Examples: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array (each example has its own graph).
        Y : list of 0/1 arrays, one per example
            Labelings, one label per node.

        Returns
        -------
        BinaryGraphCRF
            The structure itself, fitted.
        """
        self.prepare(X, Y)
        return self

    def prepare(self, X, Y):
        """Fit on ``(X, Y)`` and return them validated for the solvers.

        :meth:`fit` on ``(X, Y)``, returning them validated for the solvers (a
        :class:`GraphProblem`).

        Parameters
        ----------
        X : list of (node_features, edges) pairs
            Examples: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array (each example has its own graph).
        Y : list of 0/1 arrays, one per example
            Labelings, one label per node.

        Returns
        -------
        GraphProblem
            The validated examples.

        Raises
        ------
        ValueError
            If ``Y`` is None or the examples are invalid.
        """
        if Y is None:
            raise ValueError("Y is required: one 0/1 labeling per example.")
        examples = self._examples(X, Y, None)
        self.n_features_in_ = examples[0][0].shape[1]
        self.classes_ = np.array([0, 1])
        return GraphProblem(self, examples)

    def pack(self, X, Y=None):
        """Validate examples (and labelings, when given) against the fitted structure.

        Parameters
        ----------
        X : list of (node_features, edges) pairs
            Examples: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array (each example has its own graph).
        Y : list of 0/1 arrays or None, default=None
            Labelings, one label per node, or None for unlabelled examples.

        Returns
        -------
        GraphProblem
            The validated examples.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the structure is not fitted.
        """
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet: call "
                                 f"fit(X, Y) first.")
        return GraphProblem(self, self._examples(X, Y, self.n_features_in_))

    def prediction_scorer(self, X, Y):
        """Return the labelled examples and their ``score`` of predicted labelings.

        The estimators' ``score``; labels are 0/1, none can be unseen.

        Parameters
        ----------
        X : list of (node_features, edges) pairs
            Examples: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array (each example has its own graph).
        Y : list of 0/1 arrays, one per example
            Labelings, one label per node.

        Returns
        -------
        problem : GraphProblem
            The validated labelled examples.
        score : callable
            ``score(y_pred)``: ``1 - mean`` normalised Hamming loss (a float) of a list of
            predicted labelings.
        """
        labelled = self.pack(X, Y)
        return labelled, labelled.score

    def predict(self, X, coef):
        """Decode every example of ``X`` (one graph cut each).

        Parameters
        ----------
        X : list of (node_features, edges) pairs
            Examples: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array (each example has its own graph).
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.

        Returns
        -------
        list of ndarray
            The best 0/1 labeling (int64) of each example.
        """
        problem = self.pack(X)
        return problem.run_oracle(np.asarray(coef, dtype=np.float64), False)[0]

    def _examples(self, X, Y, n_features):
        """Validated ``(features, edges, y or None)`` of every example; ``n_features``: the
        expected number of node features, or None to take the first example's."""
        if not isinstance(X, (list, tuple)) or len(X) == 0:
            raise ValueError("X must be a non-empty list of (node_features, edges) pairs.")
        if Y is not None and len(Y) != len(X):
            raise ValueError(f"X and Y have different numbers of examples: {len(X)} and "
                             f"{len(Y)}.")
        examples = []
        for i, x in enumerate(X):
            features, edges = self._check_x(x, n_features, i)
            y = None if Y is None else self._check_y(Y[i], features.shape[0], i)
            examples.append((features, edges, y))
            n_features = features.shape[1]
        return examples

    @property
    def n_params(self):
        """Length of ``coef``: ``2 n_features + 4``."""
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet: call "
                                 f"fit(X, Y) first.")
        return 2 * self.n_features_in_ + 4

    # -- validation ------------------------------------------------------------------------

    @staticmethod
    def _check_x(x, n_features, i=0):
        """``(node_features, edges)`` of example ``i``, validated (``n_features``: expected
        number of node features, or None)."""
        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise ValueError(f"Example {i} must be a pair (node_features, edges).")
        features = _check_matrix(x[0], "node_features", i)
        if n_features is not None and features.shape[1] != n_features:
            raise ValueError(f"Example {i} has {features.shape[1]} node features, expected "
                             f"{n_features}.")
        try:
            edges = _check_edges(x[1], features.shape[0])
        except ValueError as exc:
            raise ValueError(f"Example {i}: {exc}") from None
        return features, edges

    @staticmethod
    def _check_y(y, p=None, i=0):
        """A 0/1 labeling as int64, of length ``p`` when given."""
        y = np.asarray(y)
        if y.ndim != 1 or (p is not None and y.shape[0] != p):
            raise ValueError(f"Labeling of example {i} must be 1-D with one label per node"
                             f"{'' if p is None else f' ({p})'}, got shape {y.shape}.")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError(f"Labeling of example {i} has values other than 0 and 1: "
                             f"{np.unique(y[(y != 0) & (y != 1)])[:5]}.")
        return y.astype(np.int64)

    def _example(self, x, y=None):
        """Validated features, edges and (optional) labeling of one example."""
        features, edges = self._check_x(x, getattr(self, "n_features_in_", None))
        return features, edges, None if y is None else self._check_y(y, features.shape[0])

    # -- joint feature, loss, potentials ---------------------------------------------------

    @staticmethod
    def _phi_of(features, edges, y):
        emission = np.stack([features[y == 0].sum(axis=0), features[y == 1].sum(axis=0)],
                            axis=1)
        counts = np.bincount(2 * y[edges[:, 0]] + y[edges[:, 1]], minlength=4)
        return np.concatenate([emission.ravel(), counts.astype(np.float64)])

    def joint_feature(self, x, y):
        """Return the dense ``phi(x, y)`` of one example (``coef @ phi`` is its score).

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        y : array-like of shape (p,)
            A 0/1 labeling of its nodes.

        Returns
        -------
        ndarray of shape (2 n_features + 4,)
            ``phi(x, y)``.
        """
        return self._phi_of(*self._example(x, y))

    def loss(self, y_true, y):
        """Return the normalised Hamming loss ``mean(y_true != y)``.

        Parameters
        ----------
        y_true : array-like of shape (p,)
            The true 0/1 labeling.
        y : array-like of shape (p,)
            Another 0/1 labeling.

        Returns
        -------
        float
            The fraction of nodes whose labels differ.
        """
        y_true = self._check_y(y_true)
        return float(np.mean(y_true != self._check_y(y, y_true.shape[0])))

    def _potentials(self, x, y_true, coef):
        """Unary scores (loss-augmented when ``y_true`` is given), theta, the gold score and the
        validated example ``(features, edges, y_true)``."""
        example = features, _, _ = self._example(x, y_true)
        n_features = features.shape[1]
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (2 * n_features + 4,):
            raise ValueError(f"coef must have shape ({2 * n_features + 4},) = 2 * n_features "
                             f"+ 4, got {coef.shape}.")
        return self._scores(example, coef)

    @staticmethod
    def _scores(example, coef):
        """:meth:`_potentials` of a validated example and ``coef``."""
        features, edges, y = example
        n_features = features.shape[1]
        unary = features @ coef[:2 * n_features].reshape(n_features, 2)
        theta = coef[2 * n_features:].reshape(2, 2)
        if y is None:
            return unary, theta, 0.0, example
        p = features.shape[0]
        gold = _score(unary, edges, np.broadcast_to(theta, (edges.shape[0], 2, 2)), y)
        # the normalised Hamming loss is a unary term: 1/p on every label but the true one
        augmented = unary + 1.0 / p
        augmented[np.arange(p), y] -= 1.0 / p
        return augmented, theta, gold, example

    @staticmethod
    def _bmmf(unary, edges, theta, K):
        return bmmf_topk(lambda allowed: graphcut_max_marginals(unary, edges, theta, allowed,
                                                                return_map=True),
                         unary.shape[0], K)

    # -- oracles ---------------------------------------------------------------------------

    def decode(self, x, coef):
        """Decode one example, ``argmax_y <coef, phi(x, y)>``, with one graph cut.

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.

        Returns
        -------
        ndarray of int64, shape (p,)
            The best 0/1 labeling.
        """
        unary, theta, _, (_, edges, _) = self._potentials(x, None, coef)
        return graphcut_map(unary, edges, theta)[0]

    def max_oracle(self, x, y_true, coef):
        """Run loss-augmented decoding ``(y*, H(y*))`` with one graph cut.

        With ``H(y) = L(y_true, y) + <coef, phi(x, y) - phi(x, y_true)>`` (spec 002 eq. (2)),
        ``y*`` maximises ``H``.

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        y_true : array-like of shape (p,)
            Its true 0/1 labeling.
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.

        Returns
        -------
        y_star : ndarray of int64, shape (p,)
            The maximiser ``y*``.
        value : float
            ``H(y*)``.
        """
        unary, theta, gold, (_, edges, _) = self._potentials(x, y_true, coef)
        y_star, score = graphcut_map(unary, edges, theta)
        return y_star, score - gold

    def topk_oracle(self, x, y_true, coef, K):
        """Return the ``K`` largest values of ``H(y)`` with their distinct labelings.

        BMMF on graph-cut max-marginals, spec 000 Algo. 10-11, ``O(pK)`` cuts.

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        y_true : array-like of shape (p,)
            Its true 0/1 labeling.
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.
        K : int
            Number of labelings wanted, ``>= 1``.

        Returns
        -------
        labelings : list of length K
            0/1 arrays by non-increasing ``H``; ``None`` past the ``2**p`` labelings that exist.
        values : ndarray of shape (K,)
            ``H`` of each labeling, ``-inf`` padded.
        """
        K = _check_count(K, "K", 1)
        unary, theta, gold, (_, edges, _) = self._potentials(x, y_true, coef)
        labelings, scores = self._bmmf(unary, edges, theta, K)
        return [y if y[0] >= 0 else None for y in labelings], scores - gold

    def smoothed_oracle(self, x, y_true, coef, smoothing="l2", mu=1.0, top_k=5):
        """Smoothed structured hinge loss of one example and its gradient in ``coef``.

        - ``smoothing="l2"``: the top-K strategy (eq. (11), Algo. 6): with ``z`` the top-K
          values of ``H``, the value is the exact ``h_{mu,K}(z) = <z, u> - (mu/2)(||u||^2 - 1)``,
          ``u = proj_Delta(z / mu)`` (``-inf`` padding gets weight 0), and the gradient
          ``sum_k u_k phi(x, y_k) - phi(x, y_true)``.
        - ``smoothing=None``: the max oracle, ``(H(y*), phi(x, y*) - phi(x, y_true))``.
        - ``smoothing="entropy"`` raises: the exp oracle is #P-hard on loopy graphs (spec
          §2.2, pitfall 11).

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        y_true : array-like of shape (p,)
            Its true 0/1 labeling.
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.
        smoothing : {"l2", None}, default="l2"
            ``"l2"``: the top-K strategy; ``None``: the max oracle. ``"entropy"`` raises.
        mu : float, default=1.0
            Smoothing parameter of the top-K strategy, ``mu >= 0``.
        top_k : int, default=5
            Number ``K >= 1`` of best labelings smoothed over; ignored with
            ``smoothing=None``.

        Returns
        -------
        value : float
            The smoothed loss.
        gradient : ndarray of shape (2 n_features + 4,)
            Its gradient in ``coef``.

        Raises
        ------
        ValueError
            If ``smoothing`` is ``"entropy"`` or unknown, or ``top_k`` is not an integer
            ``>= 1`` with ``smoothing="l2"``.
        """
        if smoothing == "entropy":
            raise ValueError("Entropy smoothing needs the log-partition function, which is "
                             "#P-hard on loopy graphs; use smoothing='l2' (top-K) or None.")
        if smoothing not in ("l2", None):
            raise ValueError(f"smoothing must be 'l2' or None, got {smoothing!r}.")
        top_k = None if smoothing is None else _check_count(top_k, "top_k", 1)
        value, gradient, _ = self._smoothed_potentials(self._potentials(x, y_true, coef), top_k,
                                                       mu)
        return value, gradient

    @classmethod
    def _smoothed_potentials(cls, potentials, top_k, mu):
        """Smoothed loss, its gradient and the expected loss ``E_u L(y_true, y)`` of one example
        from :meth:`_potentials`; ``top_k=None`` is the hard max."""
        unary, theta, gold, (features, edges, y) = potentials
        if top_k is None:
            y_star, score = graphcut_map(unary, edges, theta)
            value, labelings, weights = score - gold, [y_star], np.ones(1)
        else:
            labelings, scores = cls._bmmf(unary, edges, theta, top_k)
            value, weights, _ = topk_smooth_max(scores - gold, mu)
        gradient = -cls._phi_of(features, edges, y)
        expected_loss = 0.0
        for k in np.flatnonzero(weights > 0.0):  # skips the -inf padding
            gradient += weights[k] * cls._phi_of(features, edges, labelings[k])
            expected_loss += weights[k] * np.mean(labelings[k] != y)
        return float(value), gradient, expected_loss

    # -- per-example hooks of GraphProblem -------------------------------------------------

    def _decode(self, example, coef, augment):
        features, edges, y = example
        unary, theta, gold, _ = self._scores((features, edges, y if augment else None), coef)
        y_best, value = graphcut_map(unary, edges, theta)
        return y_best, value, gold, ("graphcut", True)

    def _smoothed(self, example, coef, smoothing):
        top_k = None if smoothing.code == NONE else smoothing.K
        return (*self._smoothed_potentials(self._scores(example, coef), top_k, smoothing.mu),
                ("graphcut", True))

    @staticmethod
    def _check_smoothing(code):
        if code not in (NONE, TOP_K):
            raise ValueError("Entropy smoothing and l2 smoothing over all outputs are not "
                             "available for BinaryGraphCRF (the log-partition function is "
                             "#P-hard on loopy graphs, the outputs are not enumerated): use "
                             "smoothing='l2' with top_k, or GraphCRF, whose entropy smoothing "
                             "is TRW's bound.")

    def _phi(self, example, y):
        return self._phi_of(example[0], example[1], np.asarray(y))

    @staticmethod
    def _loss(example, y):
        return float(np.mean(np.asarray(y) != example[2]))

    @staticmethod
    def _largest_loss(example):
        return 1.0  # every node wrong

    @staticmethod
    def _squared_radius(example):
        """``2 ||X||_F^2 + 2 E^2`` (emission and pairwise-count parts)."""
        features, edges, _ = example
        return float(2.0 * np.sum(features ** 2) + 2.0 * edges.shape[0] ** 2)

    @staticmethod
    def _example_arrays(example):
        features, edges, y = example
        return [features], edges, y

    def pairwise_bounds(self):
        """The box of ``coef_bounds="positive_pairwise"``: ``theta_00, theta_11 >= 0 >=
        theta_01, theta_10``, inside the submodular cone (graph cuts stay exact).

        Returns
        -------
        lower : ndarray of shape (n_params,)
            Lower bounds (``-inf``: none).
        upper : ndarray of shape (n_params,)
            Upper bounds (``inf``: none).
        """
        lower = np.full(self.n_params, -np.inf)
        upper = np.full(self.n_params, np.inf)
        lower[-4:] = [0.0, -np.inf, -np.inf, 0.0]
        upper[-4:] = [np.inf, 0.0, 0.0, np.inf]
        return lower, upper

    def project_coef(self, coef):
        """Project the pairwise table of ``coef`` onto the submodular cone (a copy).

        Parameters
        ----------
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector; its last 4 entries are the pairwise table ``theta``.

        Returns
        -------
        ndarray of shape (2 n_features + 4,)
            A float64 copy of ``coef`` whose pairwise table is submodular.
        """
        coef = np.array(coef, dtype=np.float64)
        coef[-4:] = project_submodular(coef[-4:])
        return coef


class GraphProblem(ExampleWeights):
    """Validated examples of a graph structure (:class:`BinaryGraphCRF`, ``GraphCRF``) for the
    solvers, whose oracles run from Python per example.

    The solvers cannot call these oracles (graph cuts, integer programs, message passing) from
    their compiled loops: they take their dense-oracle paths, with dense per-example
    statistics (``coef`` is short: node features times states plus the pairwise tables) and,
    for ``BinaryGraphCRF``, a projection keeping the pairwise table submodular after every step.
    The structure supplies, per validated example, ``_decode`` (the max oracle), ``_smoothed``
    (the top-K oracle), ``_phi``, ``_loss``, ``_largest_loss`` and ``_squared_radius``. Every
    oracle call reports the oracle that ran and whether it was exact: ``oracle_calls`` counts
    them by name and ``certified`` says whether all were exact (only then are duality gaps
    certificates).
    """

    #: the solvers' switch to their dense-oracle path
    dense_oracles = True
    #: no compiled structure kind (``smoothing_code`` then refuses l2 over all outputs)
    kind = -1

    def __init__(self, structure, examples):
        self.structure = structure
        self.examples = examples
        self.sample_weight = np.ones(len(examples))
        self.oracle_calls = Counter()
        self.inexact_calls = [0]  # shared by the weighted copies of the problem

    @property
    def n_samples(self):
        return len(self.examples)

    @property
    def n_params(self):
        return self.structure.n_params

    @property
    def certified(self):
        """Whether every oracle call so far was exact."""
        return self.inexact_calls[0] == 0

    def _record(self, report):
        name, exact = report
        self.oracle_calls[name] += 1
        if not exact:
            self.inexact_calls[0] += 1

    def training_parts(self, features=True):
        """What a warm start's solver state depends on (``training_key``): the graphs, the
        labelings and the sample weights, and the features unless ``features=False``."""
        parts = [self.sample_weight]
        for example in self.examples:
            features_, edges, y = self.structure._example_arrays(example)
            parts += [edges, y] + (features_ if features else [])
        return parts

    def largest_losses(self):
        """Each example's largest loss ``max_y L(y_i, y)`` (every node wrong), from the
        structure's ``_largest_loss`` hook: no oracle call."""
        return np.array([self.structure._largest_loss(e) for e in self.examples])

    def subset(self, idx):
        """The examples ``idx`` (their sample weights normalised to mean 1 again)."""
        return type(self)(self.structure, [self.examples[i] for i in idx]).with_sample_weight(
            self.sample_weight[idx])

    def smoothed(self, i, coef, smoothing):
        """Smoothed loss of example ``i`` at ``coef``, its gradient (``E[phi(y)] - phi(y_i)``
        under the smoothing's distribution) and expected loss; ``smoothing`` a
        ``solvers.smooth.Smoothing`` (the hard max, top-K l2, or entropy where the structure
        has it)."""
        value, gradient, expected_loss, report = self.structure._smoothed(self.examples[i],
                                                                          coef, smoothing)
        self._record(report)
        return value, gradient, expected_loss

    def smoothed_all(self, coef, smoothing):
        """:meth:`smoothed` of every example, on the ``n_jobs`` threads (``thread_map``; the
        oracle reports are gathered here, in the calling thread): lists of values, gradients
        and expected losses."""
        results = thread_map(lambda i: self.structure._smoothed(self.examples[i], coef,
                                                                smoothing), self.n_samples)
        for r in results:
            self._record(r[3])
        return [r[0] for r in results], [r[1] for r in results], [r[2] for r in results]

    def check_smoothing(self, smoothing):
        """Refuse, before a fit starts, a smoothing the structure has no oracle for."""
        self.structure._check_smoothing(smoothing.code)

    def phi(self, i, y):
        """``phi(x_i, y)``, dense."""
        return self.structure._phi(self.examples[i], y)

    def loss(self, i, y):
        """The task loss of labeling ``y`` of example ``i``."""
        return self.structure._loss(self.examples[i], y)

    def labeling(self, i):
        """The true labeling of example ``i`` (state indices)."""
        return self.structure._example_arrays(self.examples[i])[2]

    def decode(self, i, coef, augment=True):
        """The (loss-augmented) oracle on example ``i``: ``(labeling, value, gold)`` with
        ``value`` its score plus loss and ``gold`` the true labeling's score."""
        y, value, gold, report = self.structure._decode(self.examples[i], coef, augment)
        self._record(report)
        return y, value, gold

    def run_oracle(self, coef, augment, M=None, Q=None):
        """Every example's oracle, as ``Problem.run_oracle``: ``(labelings, values, gold,
        expected)``; ``values`` the best (loss-augmented) scores, ``gold`` the true labelings'
        scores and, with a dense dual state ``M`` (rows ``E[phi(y)] - phi(y_i)``), ``expected
        = gold + M @ coef``, the expected scores under the dual point."""
        results = thread_map(lambda i: self.structure._decode(self.examples[i], coef, augment),
                             self.n_samples)
        labelings = [r[0] for r in results]
        values = np.array([r[1] for r in results], dtype=np.float64)
        gold = np.array([r[2] for r in results], dtype=np.float64)
        for r in results:
            self._record(r[3])
        expected = None if M is None else gold + M @ coef
        return labelings, values, gold, expected

    def hinge_losses(self, coef):
        """Structured hinge ``max_y H_i(y)`` of every example (one oracle call each)."""
        _, values, gold, _ = self.run_oracle(coef, True)
        return values - gold

    def losses(self, y_pred):
        """Task loss of each predicted labeling."""
        return np.array([self.loss(i, yp) for i, yp in enumerate(y_pred)])

    def score(self, y_pred):
        """``1 - mean task loss`` (``Problem.score``)."""
        return 1.0 - float(np.mean(self.losses(y_pred)))

    def squared_radius(self):
        """Mean over examples of a bound on ``||phi(x, y) - phi(x, y')||^2``."""
        return float(np.mean([self.structure._squared_radius(example)
                              for example in self.examples]))

    def truth_stats(self):
        """The dual state at the true labelings, ``M_i = E[phi(y)] - phi(y_i) = 0`` (also SGD's
        reference gradients: the dense ones already subtract ``phi(x_i, y_i)``)."""
        return np.zeros((self.n_samples, self.n_params)), np.zeros((self.n_samples, 0))

    @cached_property
    def truth_phi(self):
        """``phi(x_i, y_i)`` of every example, ``(n_samples, n_params)`` (computed once)."""
        return np.array([self.phi(i, self.labeling(i)) for i in range(self.n_samples)])

    @cached_property
    def node_offsets(self):
        """Example ``i``'s nodes are ``node_offsets[i]:node_offsets[i + 1]`` of ``y`` (the
        layout of BCFW's stored labelings)."""
        sizes = [len(self.labeling(i)) for i in range(self.n_samples)]
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @cached_property
    def y(self):
        """The true labelings, concatenated (int32 state indices)."""
        return np.concatenate([self.labeling(i) for i in range(self.n_samples)]).astype(np.int32)

    @property
    def constrained(self):
        """Whether the oracles accept only some coefficients (``project`` is not the
        identity)."""
        return self.structure.constrained_coef

    def project(self, coef):
        """The nearest coefficients the oracles accept (``BinaryGraphCRF``: the pairwise table
        projected onto the submodular cone; ``GraphCRF``: all)."""
        return self.structure.project_coef(coef)

    def pairwise_bounds(self):
        """``coef_bounds="positive_pairwise"``: the structure's box keeping the pairwise tables
        attractive."""
        return self.structure.pairwise_bounds()
