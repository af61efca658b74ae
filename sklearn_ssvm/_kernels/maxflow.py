"""Minimum s-t cuts, compiled, and the MAP oracles built on them: the exact MAP of binary
models with submodular edges and alpha-expansion on multi-state models.

A cut runs Boykov & Kolmogorov's search-tree max-flow (:func:`min_cut`) on the network of
a ``PairwiseMRF`` layout (``layout = (node_off, edges, edge_off, n_states, inc_ptr, inc_edge,
inc_other, inc_first)``, as in ``trws.py``): every edge ``(a, b)`` is one arc ``a -> b`` paired
with its reverse ``b -> a`` (capacity 0), and every node has one terminal arc, from the source
or to the sink (the difference of the two arcs it could have: the rest of both is cut whatever
the labeling). The nodes reachable from the source at the end are the source side of a minimum
cut (the smallest one, the same for every maximum flow).

Scores are maximised as elsewhere in the package; the cut minimises the energy ``-score`` built
as in ``marginals._graphcut`` (Kolmogorov & Zabih 2004): label 1 is the sink side.
"""
import numpy as np
from numba import njit

from .mrf import best_states, score

#: relative slack of the submodularity test (also ``marginals._graphcut``'s and ``GraphCRF``'s
#: ``"auto"``), so that tables on the cone's boundary are cut
SUBMODULAR_SLACK = 1e-9


@njit(cache=True, nogil=True)
def cut_network(n_nodes, edges):
    """The arcs of the network of a model: ``(arc_ptr, head, rev, edge_arc)``, arcs stored by
    tail, ``rev[k]`` the reverse of arc ``k`` and ``edge_arc[e]`` the arc ``a -> b`` of edge
    ``e = (a, b)``."""
    E = edges.shape[0]
    arc_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    for e in range(E):
        arc_ptr[edges[e, 0] + 1] += 1
        arc_ptr[edges[e, 1] + 1] += 1
    arc_ptr = np.cumsum(arc_ptr)
    fill = arc_ptr[:-1].copy()
    head = np.empty(2 * E, dtype=np.int64)
    rev = np.empty(2 * E, dtype=np.int64)
    edge_arc = np.empty(E, dtype=np.int64)
    for e in range(E):
        a, b = edges[e, 0], edges[e, 1]
        k, j = fill[a], fill[b]
        fill[a] += 1
        fill[b] += 1
        head[k], head[j] = b, a
        rev[k], rev[j] = j, k
        edge_arc[e] = k
    return arc_ptr, head, rev, edge_arc


FREE, SOURCE, SINK = 0, 1, 2  # the trees
TERMINAL, ORPHAN = -1, -2  # parent arcs that are not arcs


@njit(cache=True, nogil=True)
def _residual(cap, rev, arc, side):
    """The residual capacity that carries flow from the source tree's side: ``arc = p -> q``
    out of a ``side`` node ``p`` toward the terminal of its tree is ``q -> p`` in the source
    tree, ``p -> q`` in the sink tree."""
    return cap[rev[arc]] if side == SOURCE else cap[arc]


@njit(cache=True, nogil=True)
def _activate(v, active, queue, ends):
    if not active[v]:
        active[v] = True
        queue[ends[1] % queue.shape[0]] = v
        ends[1] += 1


@njit(cache=True, nogil=True)
def _origin(v, parent, head, stamp, dist, time):
    """The distance from ``v`` to its tree's terminal along parents, or -1 where the path
    ends in an orphan; nodes on a valid path get this round's ``stamp`` and their distance."""
    d = 0
    u = v
    while True:
        if stamp[u] == time:
            d += dist[u]
            break
        d += 1
        if parent[u] == TERMINAL:
            stamp[u] = time
            dist[u] = 1
            break
        if parent[u] == ORPHAN:
            return -1
        u = head[parent[u]]
    u, mark = v, d
    while stamp[u] != time:
        stamp[u] = time
        dist[u] = mark
        mark -= 1
        u = head[parent[u]]
    return d


@njit(cache=True, nogil=True)
def min_cut(network, cap, terminal, sink_side):
    """A maximum flow by Boykov & Kolmogorov's search trees (2004, "An experimental comparison
    of min-cut/max-flow algorithms for energy minimization in vision"), the algorithm of
    PyMaxflow, on the residual capacities ``cap`` of the arcs and ``terminal[v]`` of the
    terminal arcs (positive: from the source into ``v``; negative: from ``v`` to the sink),
    both updated in place. Two trees grow from the terminals, a path found where they meet is
    augmented, and the nodes it cut off are re-attached or freed. ``sink_side[v]`` becomes 1
    for the nodes not in the source tree at the end: the minimum cut whose source side is the
    set reachable from the source."""
    arc_ptr, head, rev = network[0], network[1], network[2]
    N = terminal.shape[0]
    tree = np.zeros(N, dtype=np.int8)
    parent = np.full(N, ORPHAN, dtype=np.int64)
    stamp = np.zeros(N, dtype=np.int64)
    dist = np.ones(N, dtype=np.int64)
    active = np.zeros(N, dtype=np.bool_)
    queue = np.empty(N, dtype=np.int64)
    orphans = np.empty(N, dtype=np.int64)
    ends = np.zeros(2, dtype=np.int64)  # the active queue's first and next positions
    for v in range(N):
        if terminal[v] != 0.0:
            tree[v] = SOURCE if terminal[v] > 0.0 else SINK
            parent[v] = TERMINAL
            _activate(v, active, queue, ends)
    time = 0
    while True:
        meet = -1  # an arc from the source tree into the sink tree with residual capacity
        while meet < 0 and ends[0] < ends[1]:
            p = queue[ends[0] % N]
            ends[0] += 1
            active[p] = False
            side = tree[p]
            if side == FREE:
                continue
            for a in range(arc_ptr[p], arc_ptr[p + 1]):
                q = head[a]
                if _residual(cap, rev, rev[a], side) <= 0.0:  # no flow from p's side to q
                    continue
                if tree[q] == FREE:
                    tree[q] = side
                    parent[q] = rev[a]
                    stamp[q] = stamp[p]
                    dist[q] = dist[p] + 1
                    _activate(q, active, queue, ends)
                elif tree[q] != side:
                    meet = a if side == SOURCE else rev[a]
                    _activate(p, active, queue, ends)  # p may meet the other tree again
                    break
                elif stamp[q] <= stamp[p] and dist[q] > dist[p]:  # a shorter way to q
                    parent[q] = rev[a]
                    stamp[q] = stamp[p]
                    dist[q] = dist[p] + 1
        if meet < 0:
            break
        time += 1
        n_orphans = _augment(meet, cap, terminal, head, rev, parent, orphans)
        while n_orphans > 0:  # adoption
            n_orphans -= 1
            p = orphans[n_orphans]
            side = tree[p]
            best, best_d = -1, -1
            for a in range(arc_ptr[p], arc_ptr[p + 1]):
                q = head[a]
                if tree[q] == side and _residual(cap, rev, a, side) > 0.0:
                    d = _origin(q, parent, head, stamp, dist, time)
                    if d >= 0 and (best < 0 or d < best_d):
                        best, best_d = a, d
            if best >= 0:
                parent[p] = best
                stamp[p] = time
                dist[p] = best_d + 1
                continue
            for a in range(arc_ptr[p], arc_ptr[p + 1]):
                q = head[a]
                if tree[q] != side:
                    continue
                if _residual(cap, rev, a, side) > 0.0:
                    _activate(q, active, queue, ends)  # q may grow into p again
                if parent[q] >= 0 and head[parent[q]] == p:
                    parent[q] = ORPHAN
                    orphans[n_orphans] = q
                    n_orphans += 1
            tree[p] = FREE
            parent[p] = ORPHAN
    for v in range(N):
        sink_side[v] = 0 if tree[v] == SOURCE else 1


@njit(cache=True, nogil=True)
def _augment(meet, cap, terminal, head, rev, parent, orphans):
    """Push the bottleneck along the path through ``meet``; the nodes whose parent arc (or
    terminal arc) it saturates become orphans. Returns their number."""
    s_end, t_end = head[rev[meet]], head[meet]
    push = cap[meet]
    v = s_end
    while parent[v] != TERMINAL:
        push = min(push, cap[rev[parent[v]]])
        v = head[parent[v]]
    push = min(push, terminal[v])
    v = t_end
    while parent[v] != TERMINAL:
        push = min(push, cap[parent[v]])
        v = head[parent[v]]
    push = min(push, -terminal[v])
    cap[meet] -= push
    cap[rev[meet]] += push
    n = 0
    for side_end, sign in ((s_end, 1.0), (t_end, -1.0)):
        v = side_end
        while True:
            a = parent[v]
            if a == TERMINAL:
                terminal[v] -= sign * push
                if terminal[v] == 0.0:
                    parent[v] = ORPHAN
                    orphans[n] = v
                    n += 1
                break
            into = rev[a] if sign > 0.0 else a  # the tree arc the flow crosses
            cap[into] -= push
            cap[rev[into]] += push
            if cap[into] <= 0.0:
                parent[v] = ORPHAN
                orphans[n] = v
                n += 1
            v = head[a]
    return n


@njit(cache=True, nogil=True)
def _add_table(network, cap, delta, e, a, b, p00, p01, p10, p11):
    """Edge ``e = (a, b)`` of a binary move with score table ``p``: its part of the node energy
    differences ``delta`` and its arc ``a -> b`` of capacity ``p00 + p11 - p01 - p10`` (clipped
    at 0: the slack the submodularity test allows)."""
    delta[a] += p00 - p10  # C - A with the energies A, B, C, D = -p00, -p01, -p10, -p11
    delta[b] += p10 - p11  # D - C
    k = network[3][e]
    cap[k] = max(p00 + p11 - p01 - p10, 0.0)
    cap[network[2][k]] = 0.0


@njit(cache=True, nogil=True)
def _cut_move(network, cap, delta, forced, sink_side):
    """Cut with terminal arcs from ``delta`` (energy of label 1 minus label 0; ``forced``
    nodes keep label 0 by a source arc no cut affords)."""
    N = delta.shape[0]
    big = 1.0
    for v in range(N):
        big += 2.0 * abs(delta[v])
    for e in range(network[3].shape[0]):
        big += 2.0 * cap[network[3][e]]
    terminal = np.empty(N)
    for v in range(N):
        terminal[v] = delta[v] + (big if forced[v] else 0.0)
    min_cut(network, cap, terminal, sink_side)


@njit(cache=True, nogil=True)
def binary_cut_map(pot, layout, assign):
    """The MAP labeling of a binary model (every ``n_states`` 2) into ``assign`` by one cut,
    where every edge table is submodular (``p00 + p11 >= p01 + p10`` up to
    ``SUBMODULAR_SLACK (1 + max |p|)``). Returns False, with ``assign`` untouched, where one
    is not: the caller's exact fallback then answers."""
    node_off, edges, edge_off = layout[0], layout[1], layout[2]
    N = node_off.shape[0] - 1
    E = edges.shape[0]
    for e in range(E):
        o = edge_off[e]
        p00, p01, p10, p11 = pot[o], pot[o + 1], pot[o + 2], pot[o + 3]
        largest = max(abs(p00), abs(p01), abs(p10), abs(p11))
        if p00 + p11 - p01 - p10 < -SUBMODULAR_SLACK * (1.0 + largest):
            return False
    network = cut_network(N, edges)
    cap = np.zeros(2 * E)
    delta = np.empty(N)
    for v in range(N):
        delta[v] = pot[node_off[v]] - pot[node_off[v] + 1]
    for e in range(E):
        o = edge_off[e]
        _add_table(network, cap, delta, e, edges[e, 0], edges[e, 1], pot[o], pot[o + 1],
                   pot[o + 2], pot[o + 3])
    _cut_move(network, cap, delta, np.zeros(N, dtype=np.bool_), assign)
    return True


@njit(cache=True, nogil=True)
def alpha_expansion(pot, layout, max_cycles, assign):
    """Alpha-expansion (Boykov, Veksler & Zabih 2001) as ``marginals.AlphaExpansionMAP`` runs
    it: from each node's best state, moves for labels ``0, 1, ...`` (every node keeps its label
    or switches to the move's), each one cut, a move kept when it raises the score by more than
    ``1e-12 max(1, |score|)``, until a cycle over the labels keeps none or ``max_cycles``. A
    move table that is not submodular has its mixed entries lowered until it is (the move then
    under-estimates every switch and scores the current labeling exactly). The labeling goes to
    ``assign``; returns its score."""
    node_off, edges, edge_off, n_states = layout[0], layout[1], layout[2], layout[3]
    N = n_states.shape[0]
    E = edges.shape[0]
    S = 0
    for v in range(N):
        S = max(S, n_states[v])
    network = cut_network(N, edges)
    cap = np.zeros(2 * E)
    delta = np.empty(N)
    forced = np.empty(N, dtype=np.bool_)
    move = np.empty(N, dtype=np.int64)
    candidate = np.empty(N, dtype=np.int64)
    best_states(pot, node_off, n_states, assign)
    value = score(pot, assign, node_off, edges, edge_off, n_states)
    for _ in range(max_cycles):
        improved = False
        for label in range(S):
            for v in range(N):
                keep = pot[node_off[v] + assign[v]]
                can = n_states[v] > label
                delta[v] = keep - (pot[node_off[v] + label] if can else keep)
                forced[v] = not can or assign[v] == label
            for e in range(E):
                a, b = edges[e, 0], edges[e, 1]
                xa, xb = assign[a], assign[b]
                ta = label if n_states[a] > label else xa
                tb = label if n_states[b] > label else xb
                row = n_states[b]
                o = edge_off[e]
                p00, p01 = pot[o + xa * row + xb], pot[o + xa * row + tb]
                p10, p11 = pot[o + ta * row + xb], pot[o + ta * row + tb]
                lower = max(p01 + p10 - p00 - p11, 0.0) / 2.0  # truncation
                _add_table(network, cap, delta, e, a, b, p00, p01 - lower, p10 - lower, p11)
            _cut_move(network, cap, delta, forced, move)
            for v in range(N):
                candidate[v] = label if move[v] == 1 else assign[v]
            new_value = score(pot, candidate, node_off, edges, edge_off, n_states)
            if new_value > value + 1e-12 * max(1.0, abs(value)):
                assign[:] = candidate
                value = new_value
                improved = True
        if not improved:
            break
    return value
