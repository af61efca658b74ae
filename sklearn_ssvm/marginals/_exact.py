"""Exact log-partition functions and marginals, as references (spec 004 §5.1 item 1, §4.1).

``brute_force_marginals`` enumerates every assignment (small models); ``grid_marginals`` runs
the transfer-matrix (forward-backward over whole grid lines) recursion on a grid, exact in
``O(L S^(2 W))`` for ``W`` the shorter side.
"""
import numpy as np
from scipy.special import logsumexp

from .._kernels import mrf as K

__all__ = ["brute_force_marginals", "grid_marginals", "marginal_error"]


def _n_configurations(mrf):
    with np.errstate(over="ignore"):  # inf beyond float64: more than any limit, no warning
        return float(np.prod(mrf.n_states.astype(np.float64)))


def brute_force_marginals(mrf, max_configurations=2 ** 22):
    """Exact ``log Z`` and marginal vector by enumerating all assignments.

    The exact reference of Krishnan, Lacoste-Julien & Sontag (2015)'s experiments.

    Parameters
    ----------
    mrf : PairwiseMRF
        The model, with log-potentials ``mrf.theta``.
    max_configurations : int, default=2**22
        Refuse larger models (20 binary nodes are ``2**20``).

    Returns
    -------
    log_partition : float
        Exact ``log Z``.
    marginals : ndarray of shape (mrf.dim,)
        Exact node and edge marginals in the flat layout.

    Raises
    ------
    ValueError
        If the model has more than ``max_configurations`` assignments.
    """
    if _n_configurations(mrf) > max_configurations:
        raise ValueError(f"The model has {_n_configurations(mrf):.3g} assignments, more than "
                         f"max_configurations={max_configurations}.")
    args = (mrf.node_offsets, mrf.edges, mrf.edge_offsets, mrf.n_states, mrf._inc_ptr,
            mrf._inc_edge, mrf._inc_other, mrf._inc_first)
    shift, _ = K.brute_force_max(mrf.theta, *args)
    out = np.zeros(mrf.dim)
    log_z = K.brute_force_marginals(mrf.theta, *args, shift, out)
    return float(log_z), out


def grid_marginals(mrf, rows, cols):
    """Exact ``log Z`` and marginals of a model on (a subgraph of) a ``rows x cols`` grid.

    The exact reference on the grids of Krishnan, Lacoste-Julien & Sontag (2015)'s experiments.

    Node ``r * cols + c`` sits at row ``r``, column ``c``; every edge must join two 4-neighbours.
    The grid is cut into lines along its longer side; a line has ``S^W`` configurations
    (``W = min(rows, cols)``) and the lines form a chain, solved by forward-backward in the log
    domain (the transfer-matrix method).

    Parameters
    ----------
    mrf : PairwiseMRF
        The model; every node must have the same number of states ``S``.
    rows : int
        Number of rows of the grid (``rows * cols == mrf.n_nodes``).
    cols : int
        Number of columns of the grid.

    Returns
    -------
    log_partition : float
        Exact ``log Z``.
    marginals : ndarray of shape (mrf.dim,)
        Exact node and edge marginals in the flat layout.

    Raises
    ------
    ValueError
        If the nodes have different numbers of states, ``rows * cols != mrf.n_nodes``, a line
        has more than ``2**16`` configurations, or an edge does not join grid neighbours.
    """
    S = mrf.uniform_n_states
    if S is None:
        raise ValueError("grid_marginals needs the same number of states at every node.")
    if rows * cols != mrf.n_nodes:
        raise ValueError(f"rows * cols = {rows * cols} != n_nodes = {mrf.n_nodes}.")
    width = min(rows, cols)
    if float(S) ** width > 2 ** 16:
        raise ValueError(f"{S}^{width} line configurations are too many for the transfer matrix.")
    r_of, c_of = np.divmod(np.arange(mrf.n_nodes), cols)
    if rows > cols:  # lines are rows: line index r, position c
        line, pos, n_lines = r_of, c_of, rows
    else:
        line, pos, n_lines = c_of, r_of, cols
    cfg = np.stack(np.unravel_index(np.arange(S ** width), (S,) * width), axis=1)
    n_cfg = len(cfg)
    members = np.full((n_lines, width), -1)
    members[line, pos] = np.arange(mrf.n_nodes)
    node_t = mrf.node_blocks(mrf.theta)
    edge_t = mrf.edge_blocks(mrf.theta)
    unary = np.zeros((n_lines, n_cfg))
    for v in range(mrf.n_nodes):
        unary[line[v]] += node_t[v][cfg[:, pos[v]]]
    trans = np.zeros((max(n_lines - 1, 0), n_cfg, n_cfg))
    kinds = []
    for e, (a, b) in enumerate(mrf.edges):
        if line[a] == line[b] and abs(pos[a] - pos[b]) == 1:
            unary[line[a]] += edge_t[e][cfg[:, pos[a]], cfg[:, pos[b]]]
            kinds.append(0)
        elif pos[a] == pos[b] and abs(line[a] - line[b]) == 1:
            lo = min(line[a], line[b])
            if line[a] == lo:
                trans[lo] += edge_t[e][cfg[:, pos[a]][:, None], cfg[:, pos[b]][None, :]]
            else:
                trans[lo] += edge_t[e][cfg[:, pos[a]][None, :], cfg[:, pos[b]][:, None]]
            kinds.append(1)
        else:
            raise ValueError(f"Edge {e} ({a}, {b}) does not join grid neighbours.")
    alpha = np.zeros((n_lines, n_cfg))
    beta = np.zeros((n_lines, n_cfg))
    alpha[0] = unary[0]
    for t in range(1, n_lines):
        alpha[t] = unary[t] + logsumexp(alpha[t - 1][:, None] + trans[t - 1], axis=0)
    for t in range(n_lines - 2, -1, -1):
        beta[t] = logsumexp(trans[t] + (unary[t + 1] + beta[t + 1])[None, :], axis=1)
    log_z = float(logsumexp(alpha[-1]))
    p_line = np.exp(alpha + beta - log_z)
    mu = np.zeros(mrf.dim)
    for v in range(mrf.n_nodes):
        o = mrf.node_offsets[v]
        mu[o:o + S] = np.bincount(cfg[:, pos[v]], weights=p_line[line[v]], minlength=S)
    for e, (a, b) in enumerate(mrf.edges):
        o = mrf.edge_offsets[e]
        if kinds[e] == 0:
            idx = cfg[:, pos[a]] * S + cfg[:, pos[b]]
            mu[o:o + S * S] = np.bincount(idx, weights=p_line[line[a]], minlength=S * S)
        else:
            lo = min(line[a], line[b])
            joint = np.exp(alpha[lo][:, None] + trans[lo]
                           + (unary[lo + 1] + beta[lo + 1])[None, :] - log_z)
            xa = cfg[:, pos[a]]
            if line[a] == lo:
                idx = xa[:, None] * S + cfg[:, pos[b]][None, :]
            else:
                idx = cfg[:, pos[b]][:, None] + xa[None, :] * S
            mu[o:o + S * S] = np.bincount(idx.ravel(), weights=joint.ravel(), minlength=S * S)
    return log_z, mu


def marginal_error(mrf, marginals, exact):
    """``zeta_mu = (1/N) sum_i |mu_i(1) - mu*_i(1)|`` for binary models (spec 004 §3.1); for
    more states, half the mean l1 distance of the node marginals (the same for binary).

    Parameters
    ----------
    mrf : PairwiseMRF
        The model whose flat layout both vectors follow.
    marginals : array_like of shape (mrf.dim,)
        Approximate marginals; only the node entries are compared.
    exact : array_like of shape (mrf.dim,)
        Reference marginals; only the node entries are compared.

    Returns
    -------
    float
        ``0.5 * sum |marginals - exact| / n_nodes`` over the node entries.
    """
    a = np.asarray(marginals)[:mrf.node_offsets[-1]]
    b = np.asarray(exact)[:mrf.node_offsets[-1]]
    return float(0.5 * np.abs(a - b).sum() / mrf.n_nodes)
