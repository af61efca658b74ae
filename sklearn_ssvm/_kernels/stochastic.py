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
"""
import numpy as np
from numba import njit

from .batch import max_length
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
def stochastic_steps(kind, edges, parent, order, indptr, indices, data, tok_off, y, node_off,
                     tok_loss, smoothing, K, mu, M_ref, Q_ref, samples, step_sizes, decays,
                     avg_weights, v, B, lazy, acc, marks):
    """Run ``len(samples)`` stochastic steps; step ``t`` uses example ``samples[t]``, step size
    ``step_sizes[t]``, decay ``decays[t] = 1 - gamma_t c`` and averaging weight
    ``avg_weights[t]``.

    ``v`` (flat ``[vec(W), theta]``), ``B``, ``lazy`` (see ``lazy_state``), ``acc`` and ``marks``
    (one per feature row plus one for theta) are updated in place.
    """
    F = marks.shape[0] - 1
    C = M_ref.shape[1]
    n_pair = Q_ref.shape[1]
    max_T = max_length(tok_off)
    U_buf = np.empty((max_T, C))
    M_buf = np.empty((max_T, C))
    q_buf = np.empty(n_pair)
    theta = np.empty(n_pair)
    work = np.empty(smoothed_oracle_work_size(kind, max_T, C, K))
    has_B = B.shape[0] > 0  # else w = s v: no dense constant (plain SGD)
    for t in range(samples.shape[0]):
        i = samples[t]
        t0 = tok_off[i]
        T = tok_off[i + 1] - t0
        s = lazy[S]
        r = lazy[R]
        # unary scores and theta at w = s v + r B
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
        smoothed_oracle(kind, U, theta, yi, tok_loss[t0:t0 + T], edges, parent, order,
                        smoothing, K, mu, Mi, q_buf, work)
        for tt in range(T):
            for c in range(C):
                Mi[tt, c] -= M_ref[t0 + tt, c]
        for k in range(n_pair):
            q_buf[k] -= Q_ref[i, k]
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
