"""numba kernels of the marginal-inference tool (``sklearn_ssvm.marginals``), on the flat
marginal layout of ``PairwiseMRF``.

A marginal (or potential) vector has one block per clique: node ``i`` occupies
``node_off[i]:node_off[i + 1]`` (``n_states[i]`` entries), edge ``e = (a, b)`` occupies
``edge_off[e]:edge_off[e + 1]``, its table row-major in ``(x_a, x_b)`` (spec 004 §1.1). A vertex
of the marginal polytope (an assignment ``x``) is stored as the ``N + E`` flat indices of its
ones (``vertex_index``), so ``<g, vertex(x)>`` is a sum of ``N + E`` lookups.

In the kernel layer since TRW-S (``trws.py``) and the graph oracles of BCFW's compiled pass
(``graph_oracle.py``) compile ICM and the scores in: the package's digest of the kernel sources
then invalidates every cached kernel that does.
"""
import numpy as np
from numba import njit

_TINY = 1e-300
_LOG_TINY = np.log(_TINY)


@njit(cache=True, nogil=True)
def trw_value_grad(x, theta, kvec, grad):
    """``f(x) = -TRW(x)`` and its gradient (spec 004 §1.2, App. E (15)-(16)).

    ``f(x) = sum_j kvec_j x_j log x_j - theta_j x_j``, ``grad_j = -theta_j + kvec_j (1 + log x_j)``,
    with ``0 log 0 = 0`` and ``log 0`` clamped to ``log 1e-300`` in the gradient (finite MAP
    potentials, spec §4.2). ``x``, ``theta``, ``kvec`` (D,): marginal vector, log-potentials and
    per-coordinate entropy coefficients ``K_c``; ``grad`` (D,) receives the gradient; ``f`` is
    returned."""
    f = 0.0
    for j in range(x.shape[0]):
        xj = x[j]
        if xj > _TINY:
            lx = np.log(xj)
            f += kvec[j] * xj * lx - theta[j] * xj
        else:
            lx = _LOG_TINY
            f -= theta[j] * xj
        grad[j] = -theta[j] + kvec[j] * (1.0 + lx)
    return f


@njit(cache=True, nogil=True)
def _dphi(x, d, theta, kvec, gamma):
    """``phi'(gamma)`` and ``phi''(gamma)`` of ``phi(gamma) = f(x + gamma d)``."""
    d1 = 0.0
    d2 = 0.0
    for j in range(x.shape[0]):
        dj = d[j]
        if dj == 0.0:
            continue
        v = x[j] + gamma * dj
        if v < _TINY:
            v = _TINY
        d1 += dj * (-theta[j] + kvec[j] * np.log(v))
        d2 += kvec[j] * dj * dj / v
    return d1, d2


@njit(cache=True, nogil=True)
def line_search(x, d, theta, kvec, gamma_max):
    """Exact line search ``argmin_{0 <= gamma <= gamma_max} f(x + gamma d)`` (spec 004 §2.5).

    ``phi'(gamma) = sum_j d_j (-theta_j + K_j log(x_j + gamma d_j))`` (the ``+1`` cancels because
    every clique block of a direction between two points of the polytope sums to zero) is
    non-decreasing on segments of the local polytope when rho is in the spanning-tree polytope;
    its root is found by Newton steps safeguarded by bisection. Returns ``gamma``.
    """
    if gamma_max <= 0.0:
        return 0.0
    lo = 0.0
    hi = gamma_max
    d_lo, _ = _dphi(x, d, theta, kvec, 0.0)
    if d_lo >= 0.0:
        return 0.0
    d_hi, _ = _dphi(x, d, theta, kvec, hi)
    if d_hi <= 0.0:
        return hi
    g = 0.5 * hi
    for _ in range(100):
        d1, d2 = _dphi(x, d, theta, kvec, g)
        if d1 > 0.0:
            hi = g
        else:
            lo = g
        if abs(d1) < 1e-13 or hi - lo < 1e-15 * gamma_max:
            break
        if d2 > 0.0:
            gn = g - d1 / d2
        else:
            gn = -1.0
        if not (lo < gn < hi):
            gn = 0.5 * (lo + hi)
        g = gn
    return g


@njit(cache=True, nogil=True)
def atom_scores(g, atoms, n_atoms, out):
    """``out[a] = sum_k g[atoms[a, k]]`` (the inner product with the vertex) for ``a < n_atoms``."""
    for a in range(n_atoms):
        s = 0.0
        for k in range(atoms.shape[1]):
            s += g[atoms[a, k]]
        out[a] = s


@njit(cache=True, nogil=True)
def barycentre(alpha, atoms, n_atoms, u0, delta, x):
    """``x = alpha_0 u0 + sum_{a >= 1} alpha_a ((1 - delta) v_a + delta u0)`` (spec 004 §2.7).

    Atom 0 is ``u0`` itself (its row of ``atoms`` is unused).
    """
    w_u0 = alpha[0]
    for a in range(1, n_atoms):
        w_u0 += delta * alpha[a]
    for j in range(x.shape[0]):
        x[j] = w_u0 * u0[j]
    for a in range(1, n_atoms):
        w = (1.0 - delta) * alpha[a]
        if w != 0.0:
            for k in range(atoms.shape[1]):
                x[atoms[a, k]] += w


@njit(cache=True, nogil=True)
def _direction_to_atom(x, atoms, a, u0, delta, sign, d):
    """``d = sign * (v_delta(a) - x)``; atom 0 is ``u0``."""
    if a == 0:
        for j in range(x.shape[0]):
            d[j] = sign * (u0[j] - x[j])
    else:
        for j in range(x.shape[0]):
            d[j] = sign * (delta * u0[j] - x[j])
        for k in range(atoms.shape[1]):
            d[atoms[a, k]] += sign * (1.0 - delta)


@njit(cache=True, nogil=True)
def mfw(x, alpha, atoms, n_atoms, u0, theta, kvec, delta, tol, max_iter):
    """Frank-Wolfe with away steps over ``conv(V_delta)`` (spec 004 Algorithm 3, the correction).

    The atoms are the contracted vertices ``(1 - delta) v_a + delta u0`` (atom 0 is ``u0``); the
    iterate is their barycentre with weights ``alpha``. Stops when the pairwise gap
    ``<-grad f, s - v>`` (FW atom ``s``, away atom ``v``) is ``<= tol``. ``x`` and ``alpha`` are
    updated in place and ``x`` is recomputed from ``alpha`` at the end. Returns ``(n_iter, gap)``,
    ``gap`` the FW gap over ``conv(V_delta)`` at the returned point (``>= 0``)."""
    D = x.shape[0]
    grad = np.empty(D)
    d = np.empty(D)
    sc = np.empty(n_atoms)
    gap_fw = 0.0
    it = 0
    for it in range(max_iter + 1):
        trw_value_grad(x, theta, kvec, grad)
        atom_scores(grad, atoms, n_atoms, sc)
        g_u0 = 0.0
        g_x = 0.0
        for j in range(D):
            g_u0 += grad[j] * u0[j]
            g_x += grad[j] * x[j]
        # scores of the contracted atoms
        best = 0
        worst = -1
        s_best = g_u0
        s_worst = -np.inf
        for a in range(n_atoms):
            s = g_u0 if a == 0 else (1.0 - delta) * sc[a] + delta * g_u0
            sc[a] = s
            if s < s_best:
                s_best = s
                best = a
            if alpha[a] > 0.0 and s > s_worst:
                s_worst = s
                worst = a
        gap_fw = g_x - s_best
        gap_away = s_worst - g_x
        if gap_fw + gap_away <= tol or it == max_iter:
            break
        if gap_fw >= gap_away or worst == best:
            _direction_to_atom(x, atoms, best, u0, delta, 1.0, d)
            gamma = line_search(x, d, theta, kvec, 1.0)
            for a in range(n_atoms):
                alpha[a] *= 1.0 - gamma
            alpha[best] += gamma
        else:
            aw = alpha[worst]
            gmax = aw / (1.0 - aw) if aw < 1.0 else 1e300
            _direction_to_atom(x, atoms, worst, u0, delta, -1.0, d)
            gamma = line_search(x, d, theta, kvec, gmax)
            for a in range(n_atoms):
                alpha[a] *= 1.0 + gamma
            alpha[worst] -= gamma
            if gamma >= gmax:
                alpha[worst] = 0.0  # drop step
        for j in range(D):
            x[j] += gamma * d[j]
        tot = 0.0
        for a in range(n_atoms):
            if alpha[a] < 1e-15:
                alpha[a] = 0.0
            tot += alpha[a]
        for a in range(n_atoms):
            alpha[a] /= tot
    barycentre(alpha, atoms, n_atoms, u0, delta, x)
    return it, max(gap_fw, 0.0)


# -- assignments: scores, enumeration, ICM -----------------------------------------------------

@njit(cache=True, nogil=True)
def vertex_index(assign, node_off, edges, edge_off, n_states, out):
    """Flat indices of the ones of ``vertex(assign)``: ``N`` node entries then ``E`` edge entries."""
    N = assign.shape[0]
    for i in range(N):
        out[i] = node_off[i] + assign[i]
    for e in range(edges.shape[0]):
        a = edges[e, 0]
        b = edges[e, 1]
        out[N + e] = edge_off[e] + assign[a] * n_states[b] + assign[b]


@njit(cache=True, nogil=True)
def _local_table(pot, i, xi_states, assign, node_off, edge_off, n_states, inc_ptr, inc_edge,
                 inc_other, inc_first, out):
    """``out[s] = pot_i(s) + sum_{e incident} pot_e(s, x_other)`` for the states of node ``i``."""
    for s in range(xi_states):
        v = pot[node_off[i] + s]
        for k in range(inc_ptr[i], inc_ptr[i + 1]):
            e = inc_edge[k]
            o = inc_other[k]
            if inc_first[k]:
                v += pot[edge_off[e] + s * n_states[o] + assign[o]]
            else:
                v += pot[edge_off[e] + assign[o] * n_states[i] + s]
        out[s] = v


@njit(cache=True, nogil=True)
def best_states(pot, node_off, n_states, assign):
    """Each node's highest-scoring state of its own potential (the first on ties)."""
    for v in range(n_states.shape[0]):
        best = 0
        for s in range(1, n_states[v]):
            if pot[node_off[v] + s] > pot[node_off[v] + best]:
                best = s
        assign[v] = best


@njit(cache=True, nogil=True)
def icm(pot, assign, node_off, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first,
        max_sweeps):
    """Iterated conditional modes (Besag 1986; spec 004 §2.8), in place on ``assign``.

    Sweeps the nodes in order, moving each to a state of strictly larger conditional score, until
    a sweep changes nothing (a local optimum for single-variable flips) or ``max_sweeps``;
    returns the number of sweeps.
    """
    N = assign.shape[0]
    S = 0
    for i in range(N):
        S = max(S, n_states[i])
    tab = np.empty(S)
    sweeps = 0
    for sweeps in range(1, max_sweeps + 1):
        changed = False
        for i in range(N):
            _local_table(pot, i, n_states[i], assign, node_off, edge_off, n_states, inc_ptr,
                         inc_edge, inc_other, inc_first, tab)
            cur = assign[i]
            best = cur
            for s in range(n_states[i]):
                if tab[s] > tab[best] + 1e-12 * (1.0 + abs(tab[best])):
                    best = s
            if best != cur:
                assign[i] = best
                changed = True
        if not changed:
            break
    return sweeps


@njit(cache=True, nogil=True)
def score(pot, assign, node_off, edges, edge_off, n_states):
    """``<pot, vertex(assign)>``."""
    v = 0.0
    for i in range(assign.shape[0]):
        v += pot[node_off[i] + assign[i]]
    for e in range(edges.shape[0]):
        v += pot[edge_off[e] + assign[edges[e, 0]] * n_states[edges[e, 1]] + assign[edges[e, 1]]]
    return v


@njit(cache=True, nogil=True)
def _flip_delta(pot, i, old, new, assign, node_off, edge_off, n_states, inc_ptr, inc_edge,
                inc_other, inc_first):
    dv = pot[node_off[i] + new] - pot[node_off[i] + old]
    for k in range(inc_ptr[i], inc_ptr[i + 1]):
        e = inc_edge[k]
        o = inc_other[k]
        if inc_first[k]:
            base = edge_off[e] + assign[o]
            dv += pot[base + new * n_states[o]] - pot[base + old * n_states[o]]
        else:
            base = edge_off[e] + assign[o] * n_states[i]
            dv += pot[base + new] - pot[base + old]
    return dv


@njit(cache=True, nogil=True)
def _next_assignment(pot, assign, node_off, edge_off, n_states, inc_ptr, inc_edge, inc_other,
                     inc_first):
    """Step ``assign`` to the next joint state (an odometer, node 0 fastest); returns the score
    change and whether every state has been visited (``assign`` back at all zeros)."""
    delta = 0.0
    for i in range(n_states.shape[0]):
        old = assign[i]
        new = old + 1
        if new == n_states[i]:
            new = 0
        delta += _flip_delta(pot, i, old, new, assign, node_off, edge_off, n_states, inc_ptr,
                             inc_edge, inc_other, inc_first)
        assign[i] = new
        if new != 0:
            return delta, False
    return delta, True


@njit(cache=True, nogil=True)
def brute_force_max(pot, node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other,
                    inc_first):
    """Exhaustive MAP: enumerate all assignments (mixed-radix odometer, incremental scores).

    Each step changes ``~1 + 1/S`` digits on average, each update costs the degree of the node.
    Ties keep the first assignment in odometer order (node 0 fastest). Returns ``(value, best)``,
    ``best`` of shape (N,), int64.
    """
    N = n_states.shape[0]
    assign = np.zeros(N, dtype=np.int64)
    best = assign.copy()
    cur = score(pot, assign, node_off, edges, edge_off, n_states)
    best_val = cur
    while True:
        delta, done = _next_assignment(pot, assign, node_off, edge_off, n_states, inc_ptr,
                                       inc_edge, inc_other, inc_first)
        if done:
            break
        cur += delta
        if cur > best_val:
            best_val = cur
            best[:] = assign
    # exact value, free of the accumulated rounding of the incremental updates
    return score(pot, best, node_off, edges, edge_off, n_states), best


@njit(cache=True, nogil=True)
def brute_force_marginals(theta, node_off, edges, edge_off, n_states, inc_ptr, inc_edge,
                          inc_other, inc_first, shift, out):
    """``log sum_x exp(<theta, vertex(x)> - shift)`` and the marginal vector (in ``out``).

    ``shift`` should be the MAP value so that every exponent is ``<= 0``.
    """
    N = n_states.shape[0]
    E = edges.shape[0]
    assign = np.zeros(N, dtype=np.int64)
    idx = np.empty(N + E, dtype=np.int64)
    out[:] = 0.0
    cur = score(theta, assign, node_off, edges, edge_off, n_states)
    total = 0.0
    while True:
        p = np.exp(cur - shift)
        total += p
        vertex_index(assign, node_off, edges, edge_off, n_states, idx)
        for k in range(N + E):
            out[idx[k]] += p
        delta, done = _next_assignment(theta, assign, node_off, edge_off, n_states, inc_ptr,
                                       inc_edge, inc_other, inc_first)
        if done:
            break
        cur += delta
    for j in range(out.shape[0]):
        out[j] /= total
    return np.log(total) + shift


# -- tree-reweighted belief propagation (local-polytope baseline) ------------------------------

@njit(cache=True, nogil=True)
def _lse_normalise(v, n):
    m = -np.inf
    for s in range(n):
        if v[s] > m:
            m = v[s]
    t = 0.0
    for s in range(n):
        t += np.exp(v[s] - m)
    c = m + np.log(t)
    for s in range(n):
        v[s] -= c


@njit(cache=True, nogil=True)
def _normalise(v, n, max_product):
    """Shift log values to maximum 0 (max-product) or log-sum 0 (sum-product)."""
    if not max_product:
        _lse_normalise(v, n)
        return
    m = -np.inf
    for s in range(n):
        if v[s] > m:
            m = v[s]
    for s in range(n):
        v[s] -= m


def tree_reweighted_messages(max_product):
    """Tree-reweighted message passing (Wainwright, Jaakkola & Willsky 2005), log domain,
    compiled for one semiring: sum-product (``max_product=False``: TRBP, pseudo-marginals) or
    max-product (TRW max-product; loopy max-product when every ``rho`` is 1), the semiring a
    closure constant as in ``sklearn_ssvm._kernels.chain.chain_recursion``.

    The returned kernel ``run(theta, rho, layout, logm, settings, mu)``, ``layout`` the model's
    ``PairwiseMRF.layout`` and ``settings`` the ``(damping, tol, max_iter)``, keeps log messages
    in ``logm`` of
    shape ``(2 E, S_max)``: for edge ``e = (a, b)`` row ``2 e`` is the message ``b -> a`` and
    row ``2 e + 1`` the message ``a -> b``; updated in place (warm start). Update (log domain,
    then normalised and damped; ``(+)`` is log-sum-exp or max)::

        log m_{t->s}(x_s) = (+)_{x_t} [theta_st(x_s, x_t) / rho_st + theta_t(x_t)
                                      + sum_{v in N(t)} rho_vt log m_{v->t}(x_t)
                                      - log m_{s->t}(x_t)]

    Sum-product writes the pseudo-marginals to ``mu`` (flat layout): at a fixed point they
    maximise TRW over the local polytope. Max-product writes the log max-beliefs instead, each
    block shifted to maximum 0 (a node's best state has belief 0). Returns ``(n_iter, delta)``,
    the sweeps made and the largest change of a log message in the last one.
    """
    @njit(cache=True, nogil=True)
    def run(theta, rho, layout, logm, settings, mu):
        node_off, edges, edge_off, n_states, inc_ptr, inc_edge, inc_other, inc_first = layout
        damping, tol, max_iter = settings
        N = n_states.shape[0]
        E = edges.shape[0]
        S = 0
        for i in range(N):
            S = max(S, n_states[i])
        tot = np.empty((N, S))  # theta_t + sum_v rho_vt log m_{v->t}
        tmp = np.empty(S)
        new = np.empty(S)
        for t in range(N):
            for s in range(n_states[t]):
                tot[t, s] = theta[node_off[t] + s]
            for k in range(inc_ptr[t], inc_ptr[t + 1]):
                e = inc_edge[k]
                side = 0 if inc_first[k] else 1
                for s in range(n_states[t]):
                    tot[t, s] += rho[e] * logm[2 * e + side, s]
        change = 0.0
        it = 0
        for it in range(1, max_iter + 1):
            change = 0.0
            for e in range(E):
                for side in range(2):
                    # side 1: message a -> b (into b); side 0: b -> a (into a)
                    if side == 1:
                        t = edges[e, 0]
                        s_ = edges[e, 1]
                    else:
                        t = edges[e, 1]
                        s_ = edges[e, 0]
                    rback = 1 - side  # index of the message s -> t
                    St = n_states[t]
                    Ss = n_states[s_]
                    for xs in range(Ss):
                        m = -np.inf
                        for xt in range(St):
                            if side == 1:
                                pe = theta[edge_off[e] + xt * Ss + xs]
                            else:
                                pe = theta[edge_off[e] + xs * St + xt]
                            tmp[xt] = pe / rho[e] + tot[t, xt] - logm[2 * e + rback, xt]
                            if tmp[xt] > m:
                                m = tmp[xt]
                        if max_product:
                            new[xs] = m
                        else:
                            acc = 0.0
                            for xt in range(St):
                                acc += np.exp(tmp[xt] - m)
                            new[xs] = m + np.log(acc)
                    _normalise(new, Ss, max_product)
                    for xs in range(Ss):
                        val = (1.0 - damping) * new[xs] + damping * logm[2 * e + side, xs]
                        diff = val - logm[2 * e + side, xs]
                        if abs(diff) > change:
                            change = abs(diff)
                        tot[s_, xs] += rho[e] * diff
                        logm[2 * e + side, xs] = val
            if change < tol:
                break
        # beliefs
        for t in range(N):
            for s in range(n_states[t]):
                tmp[s] = tot[t, s]
            _normalise(tmp, n_states[t], max_product)
            for s in range(n_states[t]):
                mu[node_off[t] + s] = tmp[s] if max_product else np.exp(tmp[s])
        for e in range(E):
            a = edges[e, 0]
            b = edges[e, 1]
            Sa = n_states[a]
            Sb = n_states[b]
            m = -np.inf
            for xa in range(Sa):
                for xb in range(Sb):
                    v = (theta[edge_off[e] + xa * Sb + xb] / rho[e]
                         + tot[a, xa] - logm[2 * e + 0, xa] + tot[b, xb] - logm[2 * e + 1, xb])
                    mu[edge_off[e] + xa * Sb + xb] = v
                    if v > m:
                        m = v
            if max_product:
                for k in range(Sa * Sb):
                    mu[edge_off[e] + k] -= m
            else:
                acc = 0.0
                for k in range(Sa * Sb):
                    acc += np.exp(mu[edge_off[e] + k] - m)
                c = m + np.log(acc)
                for k in range(Sa * Sb):
                    mu[edge_off[e] + k] = np.exp(mu[edge_off[e] + k] - c)
        return it, change

    return run


trbp = tree_reweighted_messages(False)
trw_max_product = tree_reweighted_messages(True)
