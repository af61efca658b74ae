"""``PairwiseMRF``: a discrete pairwise Markov random field with its flat marginal layout.

``p(x) ∝ exp(sum_i theta_i(x_i) + sum_{ij in E} theta_ij(x_i, x_j))`` (spec 004 §1.1). Marginal
and potential vectors share one flat layout: node blocks first (node ``i`` has ``n_states[i]``
entries), then edge blocks in edge order, each table row-major in ``(x_a, x_b)`` for the edge
``(a, b)`` (for binary edges ``00, 01, 10, 11``).
"""
import numbers

import numpy as np

from .._kernels import mrf as K

__all__ = ["PairwiseMRF", "random_complete_graph", "random_grid", "random_rbm", "grid_edges"]


class PairwiseMRF:
    """A pairwise Markov random field over discrete variables, given by log-potential tables.

    The pairwise models of Krishnan, Lacoste-Julien & Sontag (2015, spec 004 §1).

    Parameters
    ----------
    n_states : int or array_like of int, shape (n_nodes,)
        Number of states of each variable (``>= 1``). An int is only accepted together with
        ``node_potentials`` given as an ``(n_nodes, n_states)`` array.
    edges : array_like of int, shape (n_edges, 2)
        Undirected edges ``(a, b)``, ``a != b``, each pair at most once.
    node_potentials : array_like of shape (n_nodes, S) or list of arrays
        ``theta_i(x_i)``; ``node_potentials[i]`` has ``n_states[i]`` finite entries.
    edge_potentials : array_like of shape (n_edges, S, S) or list of arrays
        ``theta_ab(x_a, x_b)``; ``edge_potentials[e]`` has shape ``(n_states[a], n_states[b])``.

    Attributes
    ----------
    n_nodes, n_edges : int
    n_states : ndarray of int64, shape (n_nodes,)
    edges : ndarray of int64, shape (n_edges, 2)
    node_offsets : ndarray of int64, shape (n_nodes + 1,)
        Node ``i`` occupies ``node_offsets[i]:node_offsets[i + 1]`` of a flat vector.
    edge_offsets : ndarray of int64, shape (n_edges + 1,)
        Edge ``e`` occupies ``edge_offsets[e]:edge_offsets[e + 1]``.
    dim : int
        Length of a flat marginal vector.
    theta : ndarray of shape (dim,)
        The log-potentials ``theta⃗`` in the flat layout.
    """

    def __init__(self, n_states, edges, node_potentials, edge_potentials):
        edges = np.asarray(edges, dtype=np.int64)
        if edges.size == 0:
            edges = edges.reshape(0, 2)
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise ValueError(f"edges must have shape (n_edges, 2), got {edges.shape}.")
        # arrays are checked whole (a grid of 256 pixels took 5 ms per model when checked row
        # by row); lists of tables, which may differ in size, one by one
        node_arr = edge_arr = None
        if isinstance(node_potentials, np.ndarray) or not isinstance(node_potentials, list):
            node_arr = np.asarray(node_potentials, dtype=np.float64)
            if node_arr.ndim != 2:
                raise ValueError("node_potentials must be a 2-d array (n_nodes, S) or a list of "
                                 "1-d arrays.")
            node_list = list(node_arr)
        else:
            node_list = [np.asarray(t, dtype=np.float64) for t in node_potentials]
        n_nodes = len(node_list)
        if n_nodes == 0:
            raise ValueError("A PairwiseMRF needs at least one node.")
        if isinstance(n_states, numbers.Integral):
            n_states = np.full(n_nodes, int(n_states))
        n_states = np.asarray(n_states)
        if n_states.shape != (n_nodes,) or not np.issubdtype(n_states.dtype, np.integer):
            raise ValueError(f"n_states must be {n_nodes} integers (one per node), got "
                             f"{n_states!r}.")
        n_states = n_states.astype(np.int64)
        if np.any(n_states < 1):
            raise ValueError("Every variable needs n_states >= 1.")
        whole_nodes = node_arr is not None and np.all(n_states == node_arr.shape[1])
        for i in (np.flatnonzero(~np.isfinite(node_arr).all(axis=1))[:1] if whole_nodes
                  else range(n_nodes)):  # whole: every shape holds, the first non-finite row
            t = node_list[i]
            if t.shape != (n_states[i],):
                raise ValueError(f"node_potentials[{i}] must have shape ({n_states[i]},), got "
                                 f"{t.shape}.")
            if not np.all(np.isfinite(t)):
                raise ValueError(f"node_potentials[{i}] has non-finite entries (zero "
                                 f"probabilities are not supported).")
        if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
            raise ValueError(f"edges must have endpoints in 0..{n_nodes - 1}.")
        if np.any(edges[:, 0] == edges[:, 1]):
            raise ValueError("edges must not contain self loops.")
        key = np.sort(edges.min(axis=1) * n_nodes + edges.max(axis=1))  # one int per pair
        if np.any(key[1:] == key[:-1]):
            raise ValueError("edges must not contain the same pair twice; add the tables.")
        if isinstance(edge_potentials, list):
            edge_list = [np.asarray(t, dtype=np.float64) for t in edge_potentials]
        else:
            arr = np.asarray(edge_potentials, dtype=np.float64)
            if arr.size == 0 and len(edges) == 0:
                edge_list = []
            elif arr.ndim != 3:
                raise ValueError("edge_potentials must be a 3-d array (n_edges, S, S) or a list "
                                 "of 2-d arrays.")
            else:
                edge_arr = arr
                edge_list = list(arr)
        if len(edge_list) != len(edges):
            raise ValueError(f"edge_potentials must have one table per edge ({len(edges)}), got "
                             f"{len(edge_list)}.")
        whole_edges = edge_arr is not None and np.all(n_states[edges] == edge_arr.shape[1:])
        for e in (np.flatnonzero(~np.isfinite(edge_arr).all(axis=(1, 2)))[:1] if whole_edges
                  else range(len(edges))):
            t = edge_list[e]
            shape = (n_states[edges[e, 0]], n_states[edges[e, 1]])
            if t.shape != shape:
                raise ValueError(f"edge_potentials[{e}] must have shape {shape}, got {t.shape}.")
            if not np.all(np.isfinite(t)):
                raise ValueError(f"edge_potentials[{e}] has non-finite entries.")
        self.n_nodes = n_nodes
        self.n_edges = len(edges)
        self.n_states = n_states
        self.edges = edges
        self.node_offsets = np.concatenate([[0], np.cumsum(n_states)]).astype(np.int64)
        sizes = n_states[edges[:, 0]] * n_states[edges[:, 1]]
        self.edge_offsets = (self.node_offsets[-1]
                             + np.concatenate([[0], np.cumsum(sizes)])).astype(np.int64)
        self.dim = int(self.edge_offsets[-1])
        self.theta = (np.concatenate([node_arr.ravel(), edge_arr.ravel()])
                      if whole_nodes and whole_edges else
                      np.concatenate([t.ravel() for t in node_list + edge_list]
                                     + [np.zeros(0)]).astype(np.float64))
        # incidence lists (CSR) used by the kernels
        deg = np.bincount(edges.ravel(), minlength=n_nodes)
        self._inc_ptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
        ends = np.concatenate([edges[:, 0], edges[:, 1]])
        order = np.argsort(ends, kind="stable")
        eid = np.concatenate([np.arange(self.n_edges)] * 2)
        other = np.concatenate([edges[:, 1], edges[:, 0]])
        first = np.concatenate([np.ones(self.n_edges, bool), np.zeros(self.n_edges, bool)])
        self._inc_edge = eid[order].astype(np.int64)
        self._inc_other = other[order].astype(np.int64)
        self._inc_first = first[order]
        #: the graph as the compiled message passing takes it (``_kernels.mrf``, ``_kernels.trws``)
        self.layout = (self.node_offsets, self.edges, self.edge_offsets, self.n_states,
                       self._inc_ptr, self._inc_edge, self._inc_other, self._inc_first)
        # clique index of each flat coordinate (nodes 0..N-1, edges N..N+E-1)
        self._coord_clique = np.repeat(np.arange(n_nodes + self.n_edges),
                                       np.diff(np.concatenate([self.node_offsets,
                                                               self.edge_offsets[1:]])))

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def ising(cls, n_nodes, edges, field, coupling):
        """Binary spin model ``sum_i field_i s_i + sum_ij coupling_ij s_i s_j``, ``s in {-1, +1}``.

        Spec 004 §3.2: node table ``(-field_i, field_i)``, edge table
        ``[[c, -c], [-c, c]]``; state index 1 means ``s = +1``.

        Parameters
        ----------
        n_nodes : int
            Number of spins (``>= 1``).
        edges : array_like of int, shape (n_edges, 2)
            Undirected edges ``(a, b)``.
        field : float or array_like of shape (n_nodes,)
            Field of each spin; a scalar is broadcast to every node.
        coupling : float or array_like of shape (n_edges,)
            Coupling of each edge; a scalar is broadcast to every edge.

        Returns
        -------
        PairwiseMRF
            The binary model (two states per node).
        """
        if not isinstance(n_nodes, numbers.Integral) or n_nodes < 1:
            raise ValueError(f"n_nodes must be a positive int, got {n_nodes!r}.")
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        field = np.broadcast_to(np.asarray(field, dtype=np.float64), (n_nodes,))
        coupling = np.broadcast_to(np.asarray(coupling, dtype=np.float64), (len(edges),))
        node = np.stack([-field, field], axis=1)
        sign = np.array([[1.0, -1.0], [-1.0, 1.0]])
        edge = coupling[:, None, None] * sign
        return cls(np.full(n_nodes, 2), edges, node, edge)

    @classmethod
    def from_uai(cls, path):
        """Read a pairwise model in the UAI ``MARKOV`` format.

        Factors over one variable become node potentials, over two variables edge potentials
        (tables of the same scope are multiplied, a reversed scope is transposed); the log of
        each table is taken. Constant factors are dropped (they only shift log Z).

        Parameters
        ----------
        path : str or path-like
            The ``.uai`` file to read.

        Returns
        -------
        PairwiseMRF
            The model, its edges sorted with ``a < b`` in each pair.

        Raises
        ------
        ValueError
            On a ``BAYES`` file, a factor over more than two variables, a zero or negative table
            entry, or a malformed file.
        """
        with open(path) as fh:
            tokens = fh.read().split()
        pos = 0

        def nxt():
            nonlocal pos
            if pos >= len(tokens):
                raise ValueError(f"{path}: unexpected end of file.")
            pos += 1
            return tokens[pos - 1]

        kind = nxt().upper()
        if kind != "MARKOV":
            raise ValueError(f"{path}: only the MARKOV format is supported, got {kind!r}.")
        n = int(nxt())
        card = np.array([int(nxt()) for _ in range(n)], dtype=np.int64)
        n_factors = int(nxt())
        scopes = []
        for _ in range(n_factors):
            k = int(nxt())
            scopes.append([int(nxt()) for _ in range(k)])
        node = [np.zeros(c) for c in card]
        edge_tables = {}
        for scope in scopes:
            size = int(nxt())
            values = np.array([float(nxt()) for _ in range(size)])
            shape = tuple(card[v] for v in scope)
            if size != int(np.prod(shape, dtype=np.int64)):
                raise ValueError(f"{path}: a table over {scope} has {size} entries, expected "
                                 f"{int(np.prod(shape))}.")
            if len(scope) > 2:
                raise ValueError(f"{path}: factor over {scope} is not pairwise.")
            if np.any(values <= 0):
                raise ValueError(f"{path}: factor over {scope} has zero or negative entries; "
                                 f"only strictly positive models are supported.")
            logt = np.log(values).reshape(shape)  # last variable of the scope changes fastest
            if len(scope) == 1:
                node[scope[0]] += logt
            elif len(scope) == 2:
                a, b = scope
                if a == b:
                    raise ValueError(f"{path}: factor over {scope} repeats a variable.")
                if a > b:
                    a, b, logt = b, a, logt.T
                edge_tables[(a, b)] = edge_tables.get((a, b), 0.0) + logt
        if pos != len(tokens):
            raise ValueError(f"{path}: {len(tokens) - pos} trailing tokens.")
        keys = sorted(edge_tables)
        return cls(card, np.array(keys, dtype=np.int64).reshape(-1, 2), node,
                   [edge_tables[k] for k in keys])

    # -- layout helpers ----------------------------------------------------------------------
    @property
    def uniform_n_states(self):
        """The common number of states, or None when the variables differ."""
        s = self.n_states
        return int(s[0]) if np.all(s == s[0]) else None

    def node_blocks(self, vec):
        """Node blocks of a flat vector: ``(n_nodes, S)`` array, or a list if the sizes differ.

        Parameters
        ----------
        vec : array_like of shape (dim,)
            A flat marginal or potential vector; only its node part (the first
            ``node_offsets[-1]`` entries) is read.

        Returns
        -------
        ndarray of shape (n_nodes, S) or list of ndarray
            Row (or list item) ``i`` holds the ``n_states[i]`` entries of node ``i``; a list
            when the nodes have different numbers of states.
        """
        vec = np.asarray(vec)
        S = self.uniform_n_states
        if S is not None:
            return vec[:self.node_offsets[-1]].reshape(self.n_nodes, S)
        o = self.node_offsets
        return [vec[o[i]:o[i + 1]] for i in range(self.n_nodes)]

    def edge_blocks(self, vec):
        """Edge tables of a flat vector: ``(n_edges, S, S)`` array, or a list if sizes differ.

        Parameters
        ----------
        vec : array_like of shape (dim,)
            A flat marginal or potential vector.

        Returns
        -------
        ndarray of shape (n_edges, S, S) or list of ndarray
            Item ``e`` is the table of edge ``e = (a, b)``, of shape
            ``(n_states[a], n_states[b])`` and indexed by ``(x_a, x_b)``; a list when the nodes
            have different numbers of states.
        """
        vec = np.asarray(vec)
        S = self.uniform_n_states
        if S is not None:
            return vec[self.node_offsets[-1]:].reshape(self.n_edges, S, S)
        o = self.edge_offsets
        ns = self.n_states
        return [vec[o[e]:o[e + 1]].reshape(ns[a], ns[b])
                for e, (a, b) in enumerate(self.edges)]

    def padded_tables(self, vec, fill=-np.inf):
        """``(unary (N, S_max), pair (E, S_max, S_max))`` with ``fill`` in absent states.

        Parameters
        ----------
        vec : array_like of shape (dim,)
            A flat marginal or potential vector.
        fill : float, default=-np.inf
            Value of the entries of states a variable does not have (``S_max`` is the largest
            number of states).

        Returns
        -------
        unary : ndarray of shape (n_nodes, S_max)
            Node blocks, padded with ``fill``.
        pair : ndarray of shape (n_edges, S_max, S_max)
            Edge tables indexed by ``(x_a, x_b)``, padded with ``fill``.
        """
        S = int(self.n_states.max())
        unary = np.full((self.n_nodes, S), fill)
        pair = np.full((self.n_edges, S, S), fill)
        for i, t in enumerate(self.node_blocks(vec)):
            unary[i, :len(t)] = t
        for e, t in enumerate(self.edge_blocks(vec)):
            pair[e, :t.shape[0], :t.shape[1]] = t
        return unary, pair

    def uniform_marginals(self):
        """``u_0``: the marginal vector of the uniform distribution (spec 004 §2.3).

        Returns
        -------
        ndarray of float64, shape (dim,)
            Every entry of a clique block is ``1 / n_c``, ``n_c`` the size of the block.
        """
        sizes = np.diff(np.concatenate([self.node_offsets, self.edge_offsets[1:]]))
        return 1.0 / np.repeat(sizes, sizes).astype(np.float64)

    def check_assignment(self, assignment):
        """Validate a full assignment and return it as int64.

        Parameters
        ----------
        assignment : array_like of int, shape (n_nodes,)
            A state of every node.

        Returns
        -------
        ndarray of int64, shape (n_nodes,)
            A copy of ``assignment``.

        Raises
        ------
        ValueError
            If the shape is not ``(n_nodes,)``, the dtype is not an integer dtype, or a state is
            outside ``0..n_states[i] - 1``.
        """
        x = np.asarray(assignment)
        if x.shape != (self.n_nodes,) or not np.issubdtype(x.dtype, np.integer):
            raise ValueError(f"An assignment must be {self.n_nodes} integers.")
        if np.any(x < 0) or np.any(x >= self.n_states):
            raise ValueError("An assignment has a state out of range.")
        return x.astype(np.int64)

    def vertex_index(self, assignment):
        """Flat indices of the ``n_nodes + n_edges`` ones of ``vertex(assignment)``.

        Parameters
        ----------
        assignment : array_like of int, shape (n_nodes,)
            A state of every node.

        Returns
        -------
        ndarray of int64, shape (n_nodes + n_edges,)
            The node entries first, then the edge entries, in node and edge order.
        """
        x = self.check_assignment(assignment)
        out = np.empty(self.n_nodes + self.n_edges, dtype=np.int64)
        K.vertex_index(x, self.node_offsets, self.edges, self.edge_offsets, self.n_states, out)
        return out

    def vertex(self, assignment):
        """The 0/1 marginal vector of a full assignment (a vertex of the marginal polytope).

        Parameters
        ----------
        assignment : array_like of int, shape (n_nodes,)
            A state of every node.

        Returns
        -------
        ndarray of float64, shape (dim,)
            One in the entry of each node's state and of each edge's pair of states, zero
            elsewhere.
        """
        v = np.zeros(self.dim)
        v[self.vertex_index(assignment)] = 1.0
        return v

    def score(self, assignment, potentials=None):
        """``<potentials, vertex(assignment)>`` (default: the model's ``theta``).

        Parameters
        ----------
        assignment : array_like of int, shape (n_nodes,)
            A state of every node.
        potentials : array_like of shape (dim,) or None, default=None
            A flat potential vector; None means ``theta``.

        Returns
        -------
        float
            The score of the assignment.
        """
        pot = self.theta if potentials is None else np.asarray(potentials, dtype=np.float64)
        return float(K.score(pot, self.check_assignment(assignment), self.node_offsets,
                             self.edges, self.edge_offsets, self.n_states))

    def is_forest(self):
        """Whether the graph has no cycle.

        Returns
        -------
        bool
            True if the graph is a forest (an empty edge set included).
        """
        return self.n_edges == self.n_nodes - self.n_components()  # every edge joins two trees

    def n_components(self):
        """Number of connected components of the graph (isolated nodes count as components).

        Returns
        -------
        int
            The number of connected components.
        """
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components
        adj = coo_matrix((np.ones(self.n_edges), (self.edges[:, 0], self.edges[:, 1])),
                         shape=(self.n_nodes, self.n_nodes))
        return connected_components(adj, directed=False)[0]

    def __repr__(self):
        return (f"PairwiseMRF(n_nodes={self.n_nodes}, n_edges={self.n_edges}, "
                f"max_states={int(self.n_states.max())})")


# -- generators (spec 004 §3.2) ----------------------------------------------------------------

def grid_edges(rows, cols):
    """4-neighbour grid edges, node ``r * cols + c``: horizontal edges first, then vertical.

    The grid models of Krishnan, Lacoste-Julien & Sontag (2015)'s experiments.

    Parameters
    ----------
    rows : int
        Number of rows of the grid.
    cols : int
        Number of columns of the grid.

    Returns
    -------
    ndarray of int64, shape (rows * (cols - 1) + (rows - 1) * cols, 2)
        The edges ``(a, b)``, each with ``a < b``.
    """
    idx = np.arange(rows * cols).reshape(rows, cols)
    return np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1),
                           np.stack([idx[:-1].ravel(), idx[1:].ravel()], axis=1)]).astype(np.int64)


def random_complete_graph(n_nodes=10, coupling=1.0, field=1.0, random_state=None):
    """Spin model on the complete graph: ``theta_i ~ U[-field, field]``,
    ``theta_ij ~ U[-coupling, coupling]`` (spec 004 §3.2 item 1; the paper's K_10 setup).

    Parameters
    ----------
    n_nodes : int, default=10
        Number of spins.
    coupling : float, default=1.0
        Edge couplings are drawn uniformly from ``[-coupling, coupling]``.
    field : float, default=1.0
        Node fields are drawn uniformly from ``[-field, field]``.
    random_state : int, numpy.random.Generator or None, default=None
        A Generator is used as is; an int seed or None is passed to
        ``numpy.random.default_rng``.

    Returns
    -------
    PairwiseMRF
        A binary model (``PairwiseMRF.ising``) with the ``n_nodes * (n_nodes - 1) / 2``
        edges ``(a, b)``, ``a < b``, in row-major order.
    """
    rng = np.random.default_rng(random_state)
    iu = np.triu_indices(n_nodes, 1)
    edges = np.stack(iu, axis=1)
    return PairwiseMRF.ising(n_nodes, edges, rng.uniform(-field, field, n_nodes),
                             rng.uniform(-coupling, coupling, len(edges)))


def random_grid(rows=5, cols=5, coupling=4.0, field=1.0, random_state=None):
    """Spin model on a ``rows x cols`` 4-neighbour grid (spec 004 §3.2 item 2).

    Parameters
    ----------
    rows : int, default=5
        Number of rows of the grid.
    cols : int, default=5
        Number of columns of the grid.
    coupling : float, default=4.0
        Edge couplings are drawn uniformly from ``[-coupling, coupling]``.
    field : float, default=1.0
        Node fields are drawn uniformly from ``[-field, field]``.
    random_state : int, numpy.random.Generator or None, default=None
        A Generator is used as is; an int seed or None is passed to
        ``numpy.random.default_rng``.

    Returns
    -------
    PairwiseMRF
        A binary model (``PairwiseMRF.ising``) on the edges of ``grid_edges(rows, cols)``;
        node ``r * cols + c`` sits at row ``r``, column ``c``.
    """
    rng = np.random.default_rng(random_state)
    edges = grid_edges(rows, cols)
    n = rows * cols
    return PairwiseMRF.ising(n, edges, rng.uniform(-field, field, n),
                             rng.uniform(-coupling, coupling, len(edges)))


def random_rbm(n_visible=20, n_hidden=20, coupling=1.0, field=1.0, random_state=None):
    """Spin model on the complete bipartite graph (a restricted Boltzmann machine, spec §3.2
    item 3): visible nodes ``0..n_visible-1``, hidden nodes after them.

    The RBM models of Krishnan, Lacoste-Julien & Sontag (2015)'s experiments.

    Parameters
    ----------
    n_visible : int, default=20
        Number of visible nodes.
    n_hidden : int, default=20
        Number of hidden nodes.
    coupling : float, default=1.0
        Edge couplings are drawn uniformly from ``[-coupling, coupling]``.
    field : float, default=1.0
        Node fields are drawn uniformly from ``[-field, field]``.
    random_state : int, numpy.random.Generator or None, default=None
        A Generator is used as is; an int seed or None is passed to
        ``numpy.random.default_rng``.

    Returns
    -------
    PairwiseMRF
        A binary model (``PairwiseMRF.ising``) with an edge between every visible and
        every hidden node.
    """
    rng = np.random.default_rng(random_state)
    v, h = np.meshgrid(np.arange(n_visible), n_visible + np.arange(n_hidden), indexing="ij")
    edges = np.stack([v.ravel(), h.ravel()], axis=1)
    n = n_visible + n_hidden
    return PairwiseMRF.ising(n, edges, rng.uniform(-field, field, n),
                             rng.uniform(-coupling, coupling, len(edges)))
