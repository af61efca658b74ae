"""Stochastic (SGD / SVRG) steps on the smoothed structured hinge with lazy dense updates.

Every step of SGD or SVRG on

    (1/n) sum_i f_i(w) + (c/2) ||w||^2 - <p, w>

(``c = lambda + kappa``, ``p = kappa z``: Casimir's proximal term, spec 000 §3) has the form

    w <- a w - gamma B - gamma X_i^T (M_i - Mref_i) (+) (Q_i - Qref_i),    a = 1 - gamma c,

with a dense part (the decay ``a`` and the constant ``B``: ``B = g_tilde - p`` for SVRG, ``-p``
for SGD, an empty ``B`` standing for 0) and a sparse part that touches only the feature rows of
example ``i``. ``M_i, Q_i`` are the label-space gradient statistics of the smoothed oracle at
``w`` and ``Mref_i, Qref_i`` those of the reference point (SVRG: the snapshot ``w_tilde``, stored once per epoch so one oracle call per
step suffices; SGD: the true labeling). Writing ``w = s v + r B`` makes the dense part O(1) per
step (``s <- a s``, ``r <- a r - gamma``) and the sparse part O(nnz_i C); the weighted average of
the iterates is kept lazily the same way: ``sum_t omega_t w_t = acc + (sum_t omega_t r_t) B``,
each feature row of ``acc`` catching up with ``v`` (constant between two touches) through the
running sum ``P = sum_t omega_t s_t``.

With an elastic net, ``+ l1 ||w||_1``, a step is proximal (``prox_steps``):

    w <- soft(a w - gamma B - gamma X_i^T (M_i - Mref_i) (+) ..., gamma l1),

no longer linear in ``w``. ``w`` is then kept explicitly, each feature row as it was when last
touched; between two touches a coordinate follows the 1-D map
``x -> soft(a_t x - gamma_t b, gamma_t l1)`` (``b`` its entry of ``B``), which ``_catch_up`` applies
in closed form when the row is touched again or flushed. On each stretch where the map's output
keeps one sign ``sigma`` it is affine, ``x_{t+1} = a_t x_t - gamma_t (b + sigma l1)``, so with
``S_t = prod_{k<t} a_k`` and ``R_t = sum_{k<t} gamma_k / S_{k+1}``

    x_t / S_t = x_u / S_u - (b + sigma l1) (R_t - R_u)                      (t >= u on the stretch)

and the stretch's weighted sum of iterates follows from ``P_t = sum_{k<t} omega_k S_{k+1}`` and
``Q_t = sum_{k<t} omega_k S_{k+1} R_{k+1}``. The output leaves a sign at most once (then to 0,
where it stays if ``|b| <= l1``, or to the other sign, which it keeps), so a catch-up is a few
stretches, each ended by a binary search on the monotone ``R`` history; this holds for varying
steps and weights (SGD) and constant ones (SVRG) alike.
"""
import numpy as np
from numba import njit

from .batch import max_length
from .labelings import example_graph
from .smoothed import smoothed_oracle, smoothed_oracle_work_size

# slots of the scalar state array
S, R, P, RSUM, WSUM = 0, 1, 2, 3, 4
#: ``v`` is rescaled (an O(d) pass) when ``s`` leaves [RESCALE, 1 / RESCALE]: the running sum
#: ``P`` must resolve the increments ``omega s`` of the smallest ``s`` since the last rescaling,
#: so the range of ``s`` it mixes is kept to 1e6 (about 1e-10 relative precision)
RESCALE = 1e-6


def lazy_state():
    """The scalars ``s, r, P, sum omega r, sum omega`` of ``w = s v + r B`` (fresh: ``w = v``)."""
    state = np.zeros(5)
    state[S] = 1.0
    return state


@njit(cache=True, nogil=True)
def _catch_up_row(j, v, acc, marks, P_now, F, C):
    """Add row ``j``'s contribution to the averaged iterate since it last changed."""
    delta = P_now - marks[j]
    if delta != 0.0:
        if j < F:
            for c in range(C):
                acc[j * C + c] += delta * v[j * C + c]
        else:  # the label-interaction weights theta: one shared mark
            for k in range(F * C, v.shape[0]):
                acc[k] += delta * v[k]
        marks[j] = P_now


@njit(cache=True, nogil=True)
def flush(v, acc, marks, lazy, F, C):
    """Bring every row of the average accumulator up to date (end of epoch, rescaling)."""
    for j in range(F + 1):
        _catch_up_row(j, v, acc, marks, lazy[P], F, C)


@njit(cache=True, nogil=True)
def _rescale(v, acc, marks, lazy, F, C):
    """``v <- s v``, ``s <- 1``; ``P`` restarts from 0 in the new units."""
    flush(v, acc, marks, lazy, F, C)
    s = lazy[S]
    for k in range(v.shape[0]):
        v[k] *= s
    lazy[S] = 1.0
    lazy[P] = 0.0
    marks[:] = 0.0


@njit(cache=True, nogil=True)
def _buffers(kind, tok_off, C, n_pair, K):
    """Scratch of the steps: unary scores, statistics, ``q``, ``theta`` and the oracle's."""
    max_T = max_length(tok_off)
    return (np.empty((max_T, C)), np.empty((max_T, C)), np.empty(n_pair), np.empty(n_pair),
            np.empty(smoothed_oracle_work_size(kind, max_T, C, K)))


@njit(cache=True, nogil=True)
def _label_gradient(packed, smoother, reference, i, v, B, s, r, has_B, buffers):
    """The step's label-space gradient at ``w = s v + r B`` (``B`` ignored unless ``has_B``):
    returns ``M_i - Mref_i`` (a view of ``M_buf``), with ``Q_i - Qref_i`` in ``q_buf``."""
    kind, _, parent, order, indptr, indices, data, tok_off, y, node_off, tok_loss, _, _, _ = \
        packed
    M_ref, Q_ref = reference
    U_buf, M_buf, q_buf, theta, work = buffers
    C = M_ref.shape[1]
    n_pair = Q_ref.shape[1]
    F = (v.shape[0] - n_pair) // C
    t0 = tok_off[i]
    T = tok_off[i + 1] - t0
    U = U_buf[:T]
    for tt in range(T):
        for c in range(C):
            U[tt, c] = 0.0
        for k in range(indptr[t0 + tt], indptr[t0 + tt + 1]):
            x = data[k]
            row = indices[k] * C
            if not has_B:
                for c in range(C):
                    U[tt, c] += x * s * v[row + c]
            else:
                for c in range(C):
                    U[tt, c] += x * (s * v[row + c] + r * B[row + c])
    for k in range(n_pair):
        theta[k] = s * v[F * C + k] + (r * B[F * C + k] if has_B else 0.0)
    Mi = M_buf[:T]
    yi = y[node_off[i]:node_off[i + 1]]
    smoothed_oracle(kind, U, theta, yi, tok_loss[t0:t0 + T], example_graph(packed, i), parent,
                    order, smoother, Mi, q_buf, work)
    for tt in range(T):
        for c in range(C):
            Mi[tt, c] -= M_ref[t0 + tt, c]
    for k in range(n_pair):
        q_buf[k] -= Q_ref[i, k]
    return Mi


@njit(cache=True, nogil=True)
def stochastic_steps(packed, smoother, reference, steps, v, B, lazy, acc, marks):
    """Run ``len(samples)`` stochastic steps; step ``t`` uses example ``samples[t]``, step size
    ``step_sizes[t]``, decay ``decays[t] = 1 - gamma_t c`` and averaging weight
    ``avg_weights[t]``.

    ``packed`` is ``labelings.Packed``, ``smoother`` the tuple ``(smoothing, K, mu)`` of
    ``smoothed_oracle``, ``reference`` the reference statistics ``(M_ref, Q_ref)`` and
    ``steps`` the tuple ``(samples, step_sizes, decays, avg_weights)``.

    ``v`` (flat ``[vec(W), theta]``), ``B``, ``lazy`` (see ``lazy_state``), ``acc`` and ``marks``
    (one per feature row plus one for theta) are updated in place.
    """
    kind, indptr, indices, data, tok_off = (packed.kind, packed.indptr, packed.indices,
                                            packed.data, packed.tok_off)
    samples, step_sizes, decays, avg_weights = steps
    F = marks.shape[0] - 1
    C = reference[0].shape[1]
    n_pair = reference[1].shape[1]
    buffers = _buffers(kind, tok_off, C, n_pair, smoother[1])
    q_buf = buffers[2]
    has_B = B.shape[0] > 0  # else w = s v: no dense constant (plain SGD)
    for t in range(samples.shape[0]):
        i = samples[t]
        t0 = tok_off[i]
        T = tok_off[i + 1] - t0
        s = lazy[S]
        r = lazy[R]
        Mi = _label_gradient(packed, smoother, reference, i, v, B, s, r, has_B, buffers)
        # dense part: s <- a s, r <- a r - gamma
        gamma = step_sizes[t]
        s_new = decays[t] * s
        lazy[S] = s_new
        if has_B:
            lazy[R] = decays[t] * r - gamma
        # sparse part on v: catch each touched row's average up first (its old value counted
        # until now), then move it
        scale = -gamma / s_new
        P_now = lazy[P]
        for tt in range(T):
            for k in range(indptr[t0 + tt], indptr[t0 + tt + 1]):
                j = indices[k]
                _catch_up_row(j, v, acc, marks, P_now, F, C)
                x = scale * data[k]
                for c in range(C):
                    v[j * C + c] += x * Mi[tt, c]
        if n_pair > 0:
            _catch_up_row(F, v, acc, marks, P_now, F, C)
            for k in range(n_pair):
                v[F * C + k] += scale * q_buf[k]
        omega = avg_weights[t]
        lazy[P] += omega * s_new
        lazy[RSUM] += omega * lazy[R]  # stays 0 without B
        lazy[WSUM] += omega
        if s_new < RESCALE or s_new > 1.0 / RESCALE:
            _rescale(v, acc, marks, lazy, F, C)


#: skipped steps that ``_catch_up`` applies one by one rather than as a stretch
SHORT_GAP = 4


@njit(cache=True, nogil=True, inline="always")
def _soft(z, t):
    return z - t if z > t else (z + t if z < -t else 0.0)


@njit(cache=True, nogil=True, inline="always")
def _catch_up(x, b, l1, u, end, start, steps, history):
    """Apply the skipped steps ``start + u .. start + end - 1`` to one untouched coordinate
    ``x`` (its ``B`` entry ``b``): returns its value at time ``end`` and the weighted sum of
    its iterates at times ``u + 1 .. end`` (see the module docstring; times count steps from
    ``start``, the last rescaling). ``history`` is ``(S, R, P, Q)`` per time."""
    _, step_sizes, decays, avg_weights = steps
    hist_S, hist_R, hist_P, hist_Q = history
    total = 0.0
    if x == 0.0 and abs(b) <= l1:  # the common case of rare features: 0 stays 0
        return x, total
    while u < end:
        # one step as it is: the sign of its output fixes the stretch that follows
        k = start + u
        x = _soft(decays[k] * x - step_sizes[k] * b, step_sizes[k] * l1)
        u += 1
        total += avg_weights[k] * x
        if x == 0.0:
            if abs(b) <= l1:  # 0 is the fixed point of every step
                break
            continue
        if end - u <= SHORT_GAP:  # frequent rows: plain steps are cheaper than a stretch
            continue
        sign = 1.0 if x > 0.0 else -1.0
        beta = b + sign * l1
        base = x / hist_S[u]
        # the stretch ends before the first time the affine formula leaves the sign: the
        # formula is monotone in R, so a binary search on it places the exit exactly as
        # evaluating the formula at every time would
        last = end
        if sign * beta > 0.0 and sign * (base - beta * (hist_R[end] - hist_R[u])) <= 0.0:
            lo, hi = u + 1, end  # the exit lies in (lo - 1, hi]
            while lo < hi:
                mid = (lo + hi) // 2
                if sign * (base - beta * (hist_R[mid] - hist_R[u])) <= 0.0:
                    hi = mid
                else:
                    lo = mid + 1
            last = lo - 1
        if last > u:
            total += (base + beta * hist_R[u]) * (hist_P[last] - hist_P[u]) \
                - beta * (hist_Q[last] - hist_Q[u])
            x = hist_S[last] * (base - beta * (hist_R[last] - hist_R[u]))
            u = last
    return x, total


@njit(cache=True, nogil=True)
def _catch_up_rows(rows, n_rows, time, w, B, acc, stamps, l1, C, start, steps, history):
    """Bring the first ``n_rows`` feature rows of ``rows`` (and their average) to ``time``."""
    has_B = B.shape[0] > 0
    for e in range(n_rows):
        j = rows[e]
        if stamps[j] == time:
            continue
        for c in range(C):
            idx = j * C + c
            w[idx], total = _catch_up(w[idx], B[idx] if has_B else 0.0, l1, stamps[j], time,
                                      start, steps, history)
            acc[idx] += total
        stamps[j] = time


@njit(cache=True, nogil=True)
def prox_steps(packed, smoother, reference, steps, l1, w, B, lazy, acc):
    """``stochastic_steps`` with the elastic net's proximal steps (``l1 > 0``).

    ``w`` is the explicit iterate (flat ``[vec(W), theta]``); on return it and ``acc`` (the
    weighted sum of the iterates) are up to date in every row, and ``lazy[WSUM]`` has the
    weights added (the other slots of ``lazy`` stay those of ``w = v``).
    """
    kind, indptr, indices, data, tok_off = (packed.kind, packed.indptr, packed.indices,
                                            packed.data, packed.tok_off)
    samples, step_sizes, decays, avg_weights = steps
    C = reference[0].shape[1]
    n_pair = reference[1].shape[1]
    F = (w.shape[0] - n_pair) // C
    buffers = _buffers(kind, tok_off, C, n_pair, smoother[1])
    q_buf = buffers[2]
    has_B = B.shape[0] > 0
    n_steps = samples.shape[0]
    # per time since the last rescaling: S, R, P and Q of the module docstring
    hist_S = np.empty(n_steps + 1)
    hist_R = np.empty(n_steps + 1)
    hist_P = np.empty(n_steps + 1)
    hist_Q = np.empty(n_steps + 1)
    hist_S[0], hist_R[0], hist_P[0], hist_Q[0] = 1.0, 0.0, 0.0, 0.0
    history = (hist_S, hist_R, hist_P, hist_Q)
    start = 0  # the step at time 0
    stamps = np.zeros(F, np.int64)  # time at which each row's value in w holds
    all_rows = np.arange(F)
    rows = np.empty(max_length(indptr[tok_off]), np.int64)
    for t in range(n_steps):
        time = t - start
        i = samples[t]
        lo, hi = indptr[tok_off[i]], indptr[tok_off[i + 1]]
        _catch_up_rows(indices[lo:hi], hi - lo, time, w, B, acc, stamps, l1, C, start, steps,
                       history)
        Mi = _label_gradient(packed, smoother, reference, i, w, B, 1.0, 0.0, False, buffers)
        gamma = step_sizes[t]
        a = decays[t]
        # the dense part once per touched row, the sparse part per token, then the threshold
        # once the row's sum is complete
        n_rows = 0
        t0 = tok_off[i]
        for tt in range(Mi.shape[0]):
            for k in range(indptr[t0 + tt], indptr[t0 + tt + 1]):
                j = indices[k]
                if stamps[j] == time:
                    stamps[j] = time + 1
                    rows[n_rows] = j
                    n_rows += 1
                    for c in range(C):
                        w[j * C + c] = a * w[j * C + c] - (gamma * B[j * C + c] if has_B
                                                           else 0.0)
                x = -gamma * data[k]
                for c in range(C):
                    w[j * C + c] += x * Mi[tt, c]
        omega = avg_weights[t]
        threshold = gamma * l1
        for e in range(n_rows):
            for c in range(C):
                idx = rows[e] * C + c
                w[idx] = _soft(w[idx], threshold)
                acc[idx] += omega * w[idx]
        for k in range(F * C, w.shape[0]):  # theta: touched by every step
            z = a * w[k] - gamma * ((B[k] if has_B else 0.0) + q_buf[k - F * C])
            w[k] = _soft(z, threshold)
            acc[k] += omega * w[k]
        lazy[WSUM] += omega
        s_new = hist_S[time] * a
        hist_S[time + 1] = s_new
        hist_R[time + 1] = hist_R[time] + gamma / s_new
        hist_P[time + 1] = hist_P[time] + omega * s_new
        hist_Q[time + 1] = hist_Q[time] + omega * s_new * hist_R[time + 1]
        if s_new < RESCALE:  # restart the histories: S, R and P mix scales up to 1e6
            _catch_up_rows(all_rows, F, time + 1, w, B, acc, stamps, l1, C, start, steps,
                           history)
            start = t + 1
            stamps[:] = 0
            hist_S[0], hist_R[0], hist_P[0], hist_Q[0] = 1.0, 0.0, 0.0, 0.0
    _catch_up_rows(all_rows, F, n_steps - start, w, B, acc, stamps, l1, C, start, steps,
                   history)
