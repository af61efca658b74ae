"""The oracles of graph examples (``GRAPH``) as the compiled kernels call them: a compiled MAP
oracle over each example's own model, or the structure's oracle in Python.

``Packed.oracle`` is a :data:`GraphOracles` bundle; ``code[i]`` says how example ``i`` is
decoded:

- ``TRWS``: sequential tree-reweighted message passing (``trws.py``). Its messages stay in
  ``logm`` from call to call (a warm start: successive steps' potentials are close) and its
  upper bound on the maximum goes to ``bounds[i]``.
- ``GRAPH_CUT``: one minimum cut (``maxflow.py``), exact on binary models whose edge tables
  are submodular at this call's potentials; the other calls go to the Python oracle.
- ``EXPANSION``: alpha-expansion moves, each one cut (``maxflow.py``).
- ``ICM``: iterated conditional modes from each node's best state.
- ``PYTHON``: the oracle registered under ``key`` (``python_oracle``), in object mode.

The compiled calls are counted in ``counts[i]``, one column per name of :data:`COUNTED`
(TRW-S's: certified, answered by the bound alone, or a solver's step: see
:func:`graph_oracle`); the settings are :func:`pack_graph_oracles`'s.

Each example's model is a ``PairwiseMRF`` layout whose arrays are concatenated: node ``s`` of
example ``i`` (tokens ``t0:t0 + T``) has its offset in ``node_off[t0 + i + s]`` (``T + 1``
entries per example, local values) and its states in ``n_states[t0 + s]``; the model edges of
example ``i`` are ``edges[a:b]`` with ``a, b = edge_ptr[i], edge_ptr[i + 1]``, their
potentials' offsets ``edge_off[a + i:b + i + 1]`` and their incidences ``inc_*[2a:2b]``
(``inc_ptr[t0 + i:t0 + i + T + 1]``). Label-space edge ``e`` (``Packed.edges``) adds its table,
transposed where ``flipped[e]``, to model edge ``target[e]``: parallel and reversed edges are
merged as ``PairwiseMRF`` takes each pair once.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from .labelings import GRAPH, label_loss, labeling_score
from .maxflow import alpha_expansion, binary_cut_map
from .mrf import best_states, icm
from .python_oracle import python_graph_oracle
from .trws import CERTIFIED, trws, trws_steps

PYTHON, TRWS, GRAPH_CUT, EXPANSION, ICM = 0, 1, 2, 3, 4  # the codes

#: the names ``oracle_calls`` gives the compiled calls, by column of ``counts``
COUNTED = ("TRWSMAP", "TRWSMAP (bound)", "TRWSMAP (step)", "GraphCutMAP", "AlphaExpansionMAP",
           "ICMMAP")
#: the columns of the calls that neither are exact nor bound the maximum
INEXACT = (4, 5)

GraphOracles = namedtuple("GraphOracles", "key code max_iter step_iter tol node_off n_states edges "
                                          "edge_ptr edge_off inc_ptr inc_edge inc_other "
                                          "inc_first target flipped logm bounds counts")


def _none():
    i = np.zeros(0, dtype=np.int64)
    return GraphOracles(-1, i, 0, 0, 0.0, i, i, np.zeros((0, 2), dtype=np.int64),
                        np.zeros(1, dtype=np.int64), i, i, i, i, np.zeros(0, dtype=np.bool_), i,
                        np.zeros(0, dtype=np.bool_), np.zeros((0, 0)), np.zeros(0),
                        np.zeros((0, len(COUNTED)), dtype=np.int64))


#: the bundle of problems without graph examples (zero-size arrays of the same types, so that
#: the kernels compile once for every structure)
NO_GRAPH_ORACLES = _none()


def _edgeless(n_nodes, n_label_edges):
    """The room an example decoded from Python takes in the bundle: ``n_nodes`` nodes without
    edges, its label-space edges mapped nowhere."""
    zeros = np.zeros(n_nodes + 1, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    layout = (zeros, np.zeros((0, 2), dtype=np.int64), np.zeros(1, dtype=np.int64),
              np.ones(n_nodes, dtype=np.int64), zeros, none, none, np.zeros(0, dtype=np.bool_))
    return layout, np.zeros(n_label_edges, dtype=np.int64), np.zeros(n_label_edges, dtype=bool)


def pack_graph_oracles(key, n_nodes, n_label_edges, codes, models, max_iter, step_iter, tol):
    """Bundle the examples' models for :func:`graph_oracle`; returns a ``GraphOracles``.

    ``key`` (int) is the registered Python oracle (``python_oracle.register``). Per example, as
    lists: ``n_nodes`` and ``n_label_edges``, its numbers of nodes and of label-space edges
    (``Packed.edges``); ``codes``, its oracle (``PYTHON``, ``TRWS``, ...); ``models``, where it has
    a compiled oracle, ``(layout, target, flipped)`` (its ``PairwiseMRF.layout`` and, per
    label-space edge, the model edge its table adds to and whether transposed), None where it
    calls the Python oracle alone. ``max_iter``, ``step_iter`` (int), ``tol`` (float) are the
    compiled oracle's settings: TRW-S's (``TRWSMAP``: the iterations and ``bound_tol`` of a check's
    call, the iterations of a solver's step), or alpha-expansion's cycles or ICM's sweeps in
    ``max_iter``."""
    parts = [[] for _ in range(10)]
    for T, n_pairs, model in zip(n_nodes, n_label_edges, models):
        layout, target, flipped = _edgeless(T, n_pairs) if model is None else model
        for part, array in zip(parts, layout + (target, flipped)):
            part.append(array)
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first, target, \
        flipped = [np.concatenate(p) if p else np.zeros(0) for p in parts]
    sizes = np.array([len(e) for e in parts[1]], dtype=np.int64)
    S = int(n_states.max(initial=1))
    n = len(models)
    return GraphOracles(
        int(key), np.asarray(codes, dtype=np.int64).reshape(n),
        int(max_iter), int(step_iter), float(tol), node_off.astype(np.int64),
        n_states.astype(np.int64), edges.astype(np.int64).reshape(-1, 2),
        np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), edge_off.astype(np.int64),
        inc_ptr.astype(np.int64), inc_edge.astype(np.int64), inc_other.astype(np.int64),
        inc_first.astype(np.bool_), target.astype(np.int64), flipped.astype(np.bool_),
        np.zeros((2 * int(sizes.sum()), S)), np.full(n, np.nan),
        np.zeros((n, len(COUNTED)), dtype=np.int64))


@njit(cache=True, nogil=True)
def graph_oracle(oracles, i, t0, U, theta, y_true, losses, augment, graph, label_edge0, certify,
                 y_out):
    """The oracle of ``GRAPH`` example ``i`` (tokens from ``t0``, label-space edges from
    ``label_edge0``): writes its labeling to ``y_out`` and returns ``<U, S(y)> + <theta, q(y)>``
    (plus the loss with ``augment``), the value the compiled oracles return.

    Compiled TRW-S runs as ``TRWSMAP`` with ``certify`` (the batched checks, whose duality gaps
    take the bound): up to ``max_iter`` iterations, stopping when the labeling meets the bound.
    Without it (a solver's step, which needs a good labeling and no bound) it runs
    ``step_iter`` iterations from the messages of the last call and decodes once. The other
    compiled oracles run alike in both."""
    code = oracles.code[i]
    if code == PYTHON:
        return python_graph_oracle(oracles.key, i, U, theta, y_true, losses, augment, graph,
                                   y_out)
    T, S = U.shape
    a, b = oracles.edge_ptr[i], oracles.edge_ptr[i + 1]
    layout = (oracles.node_off[t0 + i:t0 + i + T + 1], oracles.edges[a:b],
              oracles.edge_off[a + i:b + i + 1], oracles.n_states[t0:t0 + T],
              oracles.inc_ptr[t0 + i:t0 + i + T + 1], oracles.inc_edge[2 * a:2 * b],
              oracles.inc_other[2 * a:2 * b], oracles.inc_first[2 * a:2 * b])
    potentials = np.zeros(T * S + (b - a) * S * S)
    for t in range(T):
        for c in range(S):
            potentials[t * S + c] = U[t, c]
            if augment and c != y_true[t]:
                potentials[t * S + c] += losses[t]
    edges, edge_data = graph
    for e in range(edges.shape[0]):
        base = T * S + oracles.target[label_edge0 + e] * S * S
        flip = oracles.flipped[label_edge0 + e]
        for f in range(edge_data.shape[1]):
            w = edge_data[e, f]
            if w == 0.0:
                continue
            for p in range(S):
                for q in range(S):
                    cell = base + (q * S + p if flip else p * S + q)
                    potentials[cell] += w * theta[f * S * S + p * S + q]
    assign = np.empty(T, dtype=np.int64)
    oracles.bounds[i] = np.nan
    if code == TRWS:
        logm = oracles.logm[2 * a:2 * b]
        if certify:
            value, bound, _ = trws(potentials, layout, logm, oracles.max_iter, oracles.tol,
                                   assign)
            oracles.bounds[i] = bound
            oracles.counts[i, 0 if value >= bound - CERTIFIED * (1.0 + abs(bound)) else 1] += 1
        else:
            trws_steps(potentials, layout, logm, oracles.step_iter, assign)
            oracles.counts[i, 2] += 1
    elif code == GRAPH_CUT:
        if not binary_cut_map(potentials, layout, assign):  # not submodular at this call
            return python_graph_oracle(oracles.key, i, U, theta, y_true, losses, augment, graph,
                                       y_out)
        oracles.counts[i, 3] += 1
    elif code == EXPANSION:
        alpha_expansion(potentials, layout, oracles.max_iter, assign)
        oracles.counts[i, 4] += 1
    else:
        best_states(potentials, layout[0], layout[3], assign)
        icm(potentials, assign, layout[0], layout[2], layout[3], layout[4], layout[5],
            layout[6], layout[7], oracles.max_iter)
        oracles.counts[i, 5] += 1
    for t in range(T):
        y_out[t] = assign[t]
    value = labeling_score(GRAPH, U, theta, y_out, graph)
    if augment:
        value += label_loss(GRAPH, y_true, y_out, losses)
    return value
