"""The F1-score structured loss of spec 001 (§1.3 row 3, §3.6), compiled: its largest
loss-augmented score and its entropy-smoothed value with the marginals.

Labels are ``+-1``; a labeling ``y'`` is scored ``z(y') = Delta(y', y) + (1/n) sum_i (y'_i -
y_i) s_i`` with ``Delta = 1 - F1`` a function of the numbers ``b`` of false negatives and ``c``
of false positives alone. Both kernels run over the positives and the negatives apart and
join the two counts at the end: ``O(n_pos n_neg)`` after sorting for the maximum (Joachims
2005), ``O(n^2)`` time for the smoothed value (spec 001 Algorithms 5-6, in log space), with the forward
messages kept as triangles (row ``k`` holds ``k + 1`` counts) in ``n_pos^2 / 2 + n_neg^2 / 2``
floats.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def f1_loss(b, c, n_pos):
    """``Delta(b, c) = (b + c) / (2 (n_pos - b) + b + c)``: ``1 - F1`` with ``b`` false
    negatives and ``c`` false positives (spec 001 erratum: the loss, not the score), 0 for the
    perfect labeling of an all-negative sample."""
    denominator = 2.0 * (n_pos - b) + b + c
    return (b + c) / denominator if denominator > 0 else 0.0


@njit(cache=True, nogil=True)
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(cache=True, nogil=True)
def _row(k):
    """Offset of row ``k`` of a triangle."""
    return k * (k + 1) // 2


@njit(cache=True, nogil=True)
def _count_forward(keep):
    """Log-space forward messages of one class: each example keeps its label with log-weight
    ``keep[k]`` or flips it (one more error) with ``-keep[k]``. Row ``k`` of the triangle
    holds, for ``v = 0..k``, the log of the total weight of the first ``k`` examples'
    labelings with ``v`` flips."""
    m = keep.shape[0]
    F = np.empty(_row(m + 1))
    F[0] = 0.0
    for k in range(m):
        here, there = _row(k), _row(k + 1)
        for v in range(k + 2):
            stay = F[here + v] + keep[k] if v <= k else -np.inf
            flip = F[here + v - 1] - keep[k] if v >= 1 else -np.inf
            F[there + v] = _logaddexp(stay, flip)
    return F


@njit(cache=True, nogil=True)
def _flip_probabilities(keep, F, eta, log_z, flips, index):
    """``P(example k flips)`` into ``flips[index[k]]``, from the forward messages and the
    backward recursion ``xi_{k-1}(v) = logaddexp(keep_k + xi_k(v), -keep_k + xi_k(v + 1))``
    from ``xi_m = eta`` (spec 001 Algorithm 6)."""
    m = keep.shape[0]
    xi = eta.copy()
    for k in range(m - 1, -1, -1):
        here = _row(k)
        total = -np.inf
        for v in range(k + 1):
            total = _logaddexp(total, F[here + v] - keep[k] + xi[v + 1])
        flips[index[k]] = np.exp(total - log_z)
        for v in range(k + 1):
            xi[v] = _logaddexp(keep[k] + xi[v], -keep[k] + xi[v + 1])


@njit(cache=True, nogil=True)
def f1_smoothed_kernel(scores, y, mu, flips):
    """Entropy-smoothed F1 loss ``mu log sum_{y'} exp(z(y') / mu)`` over the ``2^n``
    labelings, with ``P(y'_i != y_i)`` under ``softmax(z / mu)`` written to ``flips``.
    Returns ``(value, expected loss)``."""
    n = y.shape[0]
    n_pos = 0
    for i in range(n):
        if y[i] > 0:
            n_pos += 1
    n_neg = n - n_pos
    pos = np.empty(n_pos, dtype=np.int64)
    neg = np.empty(n_neg, dtype=np.int64)
    keep_pos = np.empty(n_pos)
    keep_neg = np.empty(n_neg)
    true_score = 0.0
    p = q = 0
    for i in range(n):
        h = scores[i] / (n * mu)
        true_score += y[i] * h
        if y[i] > 0:
            pos[p], keep_pos[p] = i, h
            p += 1
        else:
            neg[q], keep_neg[q] = i, -h
            q += 1
    F_pos, F_neg = _count_forward(keep_pos), _count_forward(keep_neg)
    last_pos, last_neg = _row(n_pos), _row(n_neg)
    # log-weight of (b false negatives, c false positives), the true labeling's score removed
    joint = np.empty((n_pos + 1, n_neg + 1))
    log_z = -np.inf
    for b in range(n_pos + 1):
        for c in range(n_neg + 1):
            joint[b, c] = (f1_loss(b, c, n_pos) / mu + F_pos[last_pos + b] + F_neg[last_neg + c]
                           - true_score)
            log_z = _logaddexp(log_z, joint[b, c])
    eta_pos = np.full(n_pos + 1, -np.inf)
    eta_neg = np.full(n_neg + 1, -np.inf)
    expected = 0.0
    for b in range(n_pos + 1):
        for c in range(n_neg + 1):
            eta_pos[b] = _logaddexp(eta_pos[b], joint[b, c] - F_pos[last_pos + b])
            eta_neg[c] = _logaddexp(eta_neg[c], joint[b, c] - F_neg[last_neg + c])
            expected += np.exp(joint[b, c] - log_z) * f1_loss(b, c, n_pos)
    _flip_probabilities(keep_pos, F_pos, eta_pos, log_z, flips, pos)
    _flip_probabilities(keep_neg, F_neg, eta_neg, log_z, flips, neg)
    return mu * log_z, expected


@njit(cache=True, nogil=True)
def f1_max_kernel(scores, y):
    """``max_{y'} z(y')``: for ``b`` false negatives the lowest-scored positives flip, for
    ``c`` false positives the highest-scored negatives (Joachims 2005)."""
    n = y.shape[0]
    positive = y > 0
    pos = np.sort(scores[positive])
    neg = -np.sort(-scores[~positive])
    n_pos, n_neg = pos.shape[0], neg.shape[0]
    best = -np.inf
    lose = 0.0
    for b in range(n_pos + 1):
        if b > 0:
            lose -= 2.0 * pos[b - 1]
        gain = 0.0
        for c in range(n_neg + 1):
            if c > 0:
                gain += 2.0 * neg[c - 1]
            best = max(best, f1_loss(b, c, n_pos) + (lose + gain) / n)
    return best
