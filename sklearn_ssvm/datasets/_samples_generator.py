"""Synthetic data generators for structured prediction."""

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_chain_data"]


def make_chain_data(
    n_samples=100,
    n_features=10,
    n_labels=3,
    length_range=(3, 8),
    noise=0.5,
    random_state=None,
):
    """Generate a random sequence labelling (chain) problem.

    Labels follow a first-order Markov chain with a random initial
    distribution and a random transition matrix (rows drawn from a
    Dirichlet distribution, so some transitions are much likelier than
    others). The features of a token are a one-hot encoding of its label
    plus Gaussian noise in the first ``n_labels`` columns, and pure Gaussian
    noise in the remaining ``n_features - n_labels`` columns. With small
    ``noise`` the problem is nearly separable token by token; with large
    ``noise`` the transitions carry a useful part of the signal.

    Parameters
    ----------
    n_samples : int, default=100
        Number of sequences.
    n_features : int, default=10
        Number of features per token; must be at least ``n_labels``.
    n_labels : int, default=3
        Number of labels (states of the chain), at least 2.
    length_range : tuple of two int, default=(3, 8)
        Minimum and maximum sequence length, both included; lengths are
        drawn uniformly in this range.
    noise : float, default=0.5
        Standard deviation of the Gaussian noise added to every feature.
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : list of ndarray of shape (n_tokens_i, n_features), dtype float64
        Token features of each sequence.
    Y : list of ndarray of shape (n_tokens_i,), dtype int64
        Labels ``0 .. n_labels - 1`` of each sequence. Rare labels may be
        absent from small samples.

    Examples
    --------
    >>> from sklearn_ssvm.datasets import make_chain_data
    >>> X, Y = make_chain_data(n_samples=5, n_features=4, n_labels=3, random_state=0)
    >>> len(X), X[0].shape[1], X[0].shape[0] == Y[0].shape[0]
    (5, 4, True)
    """
    for name, value, low in (
        ("n_samples", n_samples, 1),
        ("n_features", n_features, 1),
        ("n_labels", n_labels, 2),
    ):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError("%s must be an int >= %d, got %r" % (name, low, value))
    if n_features < n_labels:
        raise ValueError(
            "n_features=%d must be >= n_labels=%d (the first n_labels features "
            "encode the label)" % (n_features, n_labels)
        )
    try:
        min_len, max_len = length_range
    except (TypeError, ValueError):
        raise ValueError("length_range must be a pair (min, max), got %r" % (length_range,))
    if not all(isinstance(v, numbers.Integral) for v in (min_len, max_len)) or not (
        1 <= min_len <= max_len
    ):
        raise ValueError(
            "length_range must hold two ints with 1 <= min <= max, got %r" % (length_range,)
        )
    if not isinstance(noise, numbers.Real) or noise < 0:
        raise ValueError("noise must be a non-negative float, got %r" % (noise,))

    rng = check_random_state(random_state)
    start = rng.dirichlet(np.ones(n_labels))
    transitions = rng.dirichlet(np.full(n_labels, 0.5), size=n_labels)
    cum_start = np.cumsum(start)
    cum_trans = np.cumsum(transitions, axis=1)

    lengths = rng.randint(min_len, max_len + 1, size=n_samples)
    X, Y = [], []
    for length in lengths:
        u = rng.random_sample(length)
        y = np.empty(length, dtype=np.int64)
        y[0] = min(np.searchsorted(cum_start, u[0], side="right"), n_labels - 1)
        for t in range(1, length):
            row = cum_trans[y[t - 1]]
            y[t] = min(np.searchsorted(row, u[t], side="right"), n_labels - 1)
        x = noise * rng.standard_normal((length, n_features))
        x[np.arange(length), y] += 1.0
        X.append(x)
        Y.append(y)
    return X, Y
