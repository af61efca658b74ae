"""Sequential tree-reweighted max-product message passing (TRW-S; Kolmogorov 2006, "Convergent
tree-reweighted message passing for energy minimization") with its upper bound on the MAP
score, compiled.

The model is a ``PairwiseMRF``'s flat layout, passed as ``layout = (node_off, edges, edge_off,
n_states, inc_ptr, inc_edge, inc_other, inc_first)``. Messages are kept as in
``_kernels.tree_reweighted_messages``: for edge ``e = (a, b)`` row ``2 e`` of ``logm`` is the
message into ``a``, row ``2 e + 1`` the message into ``b``.

The nodes are ordered by index. Node ``s`` has ``n_in`` neighbours before it and ``n_out``
after it and lies on ``n_s = max(n_in, n_out, 1)`` monotonic chains of a decomposition of the
graph into chains (each edge on one chain, the node's potential split evenly among its chains:
``gamma_s = 1 / n_s``). A forward sweep sends, node by node, the messages to the later
neighbours, a backward sweep those to the earlier ones; each message is

    m_{s->t}(x_t) = max_{x_s} [gamma_s theta^_s(x_s) - m_{t->s}(x_s) + theta_st(x_s, x_t)]

with ``theta^_s`` the node's potential plus every message into it, shifted to maximum 0. The
messages reparametrise the model (``theta^_s`` on the nodes, ``theta_st - m_{t->s} - m_{s->t}``
on the edges: the same score for every labeling), so the sum over the chains of each chain's
best score, computed by dynamic programming along the chains, bounds the MAP score from above
for any messages (:func:`chain_bound`). TRW-S never increases it, and on problems whose local
polytope relaxation is tight the decoded labeling meets it: that labeling is then a certified
maximum.
"""
import numpy as np
from numba import njit

from .mrf import icm, score


@njit(cache=True, nogil=True)
def _degrees(layout):
    """``n_in`` and ``n_out`` of every node (neighbours before and after it)."""
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    N = n_states.shape[0]
    n_in = np.zeros(N, dtype=np.int64)
    n_out = np.zeros(N, dtype=np.int64)
    for s in range(N):
        for k in range(inc_ptr[s], inc_ptr[s + 1]):
            if inc_other[k] < s:
                n_in[s] += 1
            else:
                n_out[s] += 1
    return n_in, n_out


@njit(cache=True, nogil=True)
def _chains(layout):
    """The chain decomposition: ``n_in``, ``n_out``, each node's share ``gamma`` of its
    potential, and two scratch rows of the most states."""
    n_states = layout[3]
    n_in, n_out = _degrees(layout)
    gamma = np.empty(n_states.shape[0])
    S = 0
    for s in range(n_states.shape[0]):
        gamma[s] = 1.0 / max(n_in[s], n_out[s], 1)
        S = max(S, n_states[s])
    return n_in, n_out, gamma, np.empty(S), np.empty(S)


@njit(cache=True, nogil=True)
def _belief(theta, layout, logm, s, out):
    """``theta_s`` plus every message into ``s``, written to ``out[:n_states[s]]``."""
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    for x in range(n_states[s]):
        out[x] = theta[node_off[s] + x]
    for k in range(inc_ptr[s], inc_ptr[s + 1]):
        row = 2 * inc_edge[k] + (0 if inc_first[k] else 1)
        for x in range(n_states[s]):
            out[x] += logm[row, x]


@njit(cache=True, nogil=True)
def _pair(theta, layout, k, xs, xt):
    """``theta_st(x_s, x_t)`` of incidence ``k`` of node ``s`` (its edge and other end ``t``)."""
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    e = inc_edge[k]
    if inc_first[k]:
        return theta[edge_off[e] + xs * n_states[edges[e, 1]] + xt]
    return theta[edge_off[e] + xt * n_states[edges[e, 1]] + xs]


@njit(cache=True, nogil=True)
def _sweep(theta, layout, logm, gamma, forward, hat, new):
    """One sweep: every node, in order (``forward``) or in reverse, sends its messages to its
    later (forward) or earlier neighbours."""
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    N = n_states.shape[0]
    own = np.empty(hat.shape[0])
    for i in range(N):
        s = i if forward else N - 1 - i
        _belief(theta, layout, logm, s, hat)
        Ss = n_states[s]
        for k in range(inc_ptr[s], inc_ptr[s + 1]):
            t = inc_other[k]
            if (t > s) != forward:
                continue
            e = inc_edge[k]
            back = 2 * e + (0 if inc_first[k] else 1)  # the message t -> s
            out = 2 * e + (1 if inc_first[k] else 0)  # the message s -> t
            St = n_states[t]
            # m(x_t) = max_{x_s} own(x_s) + theta_st(x_s, x_t), own = gamma_s hat - m_{t->s}:
            # the maxima over x_s in increasing order either way (the same ties), the edge's
            # table read along its rows
            for xs in range(Ss):
                own[xs] = gamma[s] * hat[xs] - logm[back, xs]
            base = edge_off[e]
            if inc_first[k]:  # table (x_s, x_t)
                for xt in range(St):
                    new[xt] = -np.inf
                for xs in range(Ss):
                    o = own[xs]
                    row = base + xs * St
                    for xt in range(St):
                        v = o + theta[row + xt]
                        new[xt] = v if v > new[xt] else new[xt]
            else:  # table (x_t, x_s)
                for xt in range(St):
                    row = base + xt * Ss
                    best = -np.inf
                    for xs in range(Ss):
                        v = own[xs] + theta[row + xs]
                        best = v if v > best else best
                    new[xt] = best
            top = -np.inf
            for xt in range(St):
                top = new[xt] if new[xt] > top else top
            for xt in range(St):
                logm[out, xt] = new[xt] - top


@njit(cache=True, nogil=True)
def chain_bound(theta, layout, logm, gamma, n_in, n_out, carry, hat):
    """The sum over the monotonic chains of their best scores in the reparametrised model: an
    upper bound on the MAP score whatever the messages (see the module). ``carry`` holds, per
    edge, the chain's dynamic-programming table at the edge's earlier end."""
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    N = n_states.shape[0]
    total = 0.0
    table = np.empty(hat.shape[0])
    for t in range(N):
        _belief(theta, layout, logm, t, hat)
        St = n_states[t]
        if n_in[t] == 0 and n_out[t] == 0:
            best = -np.inf
            for x in range(St):
                best = max(best, hat[x])
            total += best
            continue
        j_in = 0
        for k in range(inc_ptr[t], inc_ptr[t + 1]):
            s = inc_other[k]
            if s > t:
                continue
            e = inc_edge[k]
            into_s = 2 * e + (1 if inc_first[k] else 0)  # t is the other end: message t -> s
            into_t = 2 * e + (0 if inc_first[k] else 1)
            Ss = n_states[s]
            # the maxima over x_s in increasing order for every x_t at once (the same ties),
            # theta_ts(x_t, x_s) at base + x_t * step + x_s * jump
            step, jump = (Ss, 1) if inc_first[k] else (1, St)
            base = edge_off[e]
            for xt in range(St):
                table[xt] = -np.inf
            for xs in range(Ss):
                c = carry[e, xs]
                m = logm[into_s, xs]
                at = base + xs * jump
                if step == 1:  # contiguous in x_t
                    for xt in range(St):
                        v = c + theta[at + xt] - m - logm[into_t, xt]
                        table[xt] = v if v > table[xt] else table[xt]
                else:
                    for xt in range(St):
                        v = c + theta[at + xt * step] - m - logm[into_t, xt]
                        table[xt] = v if v > table[xt] else table[xt]
            for xt in range(St):
                table[xt] += gamma[t] * hat[xt]
            if j_in < n_out[t]:  # the chain goes on along t's j_in-th later edge
                _pass_on(layout, t, j_in, table, carry)
            else:  # it ends at t
                best = -np.inf
                for x in range(St):
                    best = max(best, table[x])
                total += best
            j_in += 1
        for x in range(St):
            table[x] = gamma[t] * hat[x]
        for j in range(n_in[t], n_out[t]):  # chains that start at t
            _pass_on(layout, t, j, table, carry)
    return total


@njit(cache=True, nogil=True)
def _pass_on(layout, t, j, table, carry):
    """Store ``table`` as the chain table of node ``t``'s ``j``-th edge to a later node."""
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    seen = 0
    for k in range(inc_ptr[t], inc_ptr[t + 1]):
        if inc_other[k] > t:
            if seen == j:
                for x in range(n_states[t]):
                    carry[inc_edge[k], x] = table[x]
                return
            seen += 1


@njit(cache=True, nogil=True)
def _decode(theta, layout, logm, assign, hat):
    """Nodes in order, each the state best for its potential, the edges to the nodes already
    decoded and the messages from the later ones (Kolmogorov 2006, §3.4)."""
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    for s in range(n_states.shape[0]):
        for x in range(n_states[s]):
            hat[x] = theta[node_off[s] + x]
        for k in range(inc_ptr[s], inc_ptr[s + 1]):
            t = inc_other[k]
            for x in range(n_states[s]):
                if t < s:
                    hat[x] += _pair(theta, layout, k, x, assign[t])
                else:
                    hat[x] += logm[2 * inc_edge[k] + (0 if inc_first[k] else 1), x]
        best = 0
        for x in range(1, n_states[s]):
            if hat[x] > hat[best]:
                best = x
        assign[s] = best


@njit(cache=True, nogil=True)
def _same(a, b):
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


#: relative slack within which a labeling's score meets the bound (rounding): a certified maximum
CERTIFIED = 1e-9


@njit(cache=True, nogil=True)
def trws(theta, layout, logm, max_iter, tol, assign):
    """TRW-S on the model ``theta`` (flat potentials) from the messages ``logm`` (updated in
    place: a warm start), up to ``max_iter`` forward-backward iterations.

    After each iteration the bound (:func:`chain_bound`) is computed and a labeling decoded and
    improved by ICM; the best labeling goes to ``assign``. Stops once the best labeling's score
    meets the lowest bound (within ``CERTIFIED (1 + |bound|)``: a certified maximum) or the
    bound improves by less than ``tol (1 + |bound|)`` in an iteration (where the relaxation is
    not tight it creeps down for long). Returns ``(value, bound, n_iter)``.
    """
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    n_in, n_out, gamma, hat, new = _chains(layout)
    carry = np.empty((edges.shape[0], hat.shape[0]))
    decoded = np.full(n_states.shape[0], -1, dtype=np.int64)
    trial = np.empty(n_states.shape[0], dtype=np.int64)
    value = -np.inf
    bound = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        _sweep(theta, layout, logm, gamma, True, hat, new)
        _sweep(theta, layout, logm, gamma, False, hat, new)
        previous = bound
        bound = min(bound, chain_bound(theta, layout, logm, gamma, n_in, n_out, carry, hat))
        _decode(theta, layout, logm, trial, hat)
        # the messages settle before the bound does: a labeling decoded again would give ICM's
        # labeling of the last time, which ``value`` already holds
        if not _same(trial, decoded):
            decoded[:] = trial
            icm(theta, trial, node_off, edge_off, n_states, inc_ptr, inc_edge, inc_other,
                inc_first, 10)
            v = score(theta, trial, node_off, edges, edge_off, n_states)
            if v > value:
                value = v
                assign[:] = trial
        scale = 1.0 + abs(bound)
        if value >= bound - CERTIFIED * scale or previous - bound < tol * scale:
            break
    return value, bound, it


@njit(cache=True, nogil=True)
def trws_steps(theta, layout, logm, n_iter, assign):
    """``n_iter`` forward-backward iterations of TRW-S from the messages ``logm`` (updated in
    place), then one labeling decoded and improved by ICM into ``assign``: a warm-started call
    that needs a good labeling and no bound (a solver's step; its certificate comes from
    :func:`trws` at the checks). Returns the labeling's score."""
    node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
    n_in, n_out, gamma, hat, new = _chains(layout)
    for _ in range(n_iter):
        _sweep(theta, layout, logm, gamma, True, hat, new)
        _sweep(theta, layout, logm, gamma, False, hat, new)
    _decode(theta, layout, logm, assign, hat)
    icm(theta, assign, node_off, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first, 10)
    return score(theta, assign, node_off, edges, edge_off, n_states)
