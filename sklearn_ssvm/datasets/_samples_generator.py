"""Synthetic data generators for structured prediction."""

import numbers

import numpy as np
from scipy.linalg import hadamard
from sklearn.utils import check_random_state

__all__ = ["make_chain_data", "make_hadamard_bmrm"]


def make_chain_data(
    n_samples=100,
    n_features=10,
    n_labels=3,
    length_range=(3, 8),
    noise=0.5,
    random_state=None,
):
    """Generate a random sequence labelling (chain) problem.

    A synthetic problem for the chain oracles and solvers (the tests of Osokin et al. 2016, spec 002
    §11).

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


def make_hadamard_bmrm(n_features=16, variant="fixed"):
    """Affine pieces of the worst-case risk for bundle methods (BMRM's Omega(1/eps) bound).

    The worst-case construction of Saha, Zhang & Vishwanathan (2011), spec 003 §2.3.

    The risk is ``R(w) = max_k <pieces[k], w> + offsets[k]`` and the objective
    ``J(w) = R(w) + (lambda/2) ||w||^2``, with ``J(0) = 0 = min J``. In the ``"fixed"``
    variant (the reproducible instance of Saha, Zhang and Vishwanathan's lower bound, with the
    erratum of their construction corrected) the pieces are the ``d`` orthonormal columns
    ``h_1, ..., h_d`` of ``H_d / sqrt(d)`` (``H_d`` the Sylvester Hadamard matrix) followed by
    the zero piece. BMRM started at ``w_0 = 0`` that picks, among the maximising pieces, the
    first one in this order (a legal subgradient choice) takes ``h_t`` at iteration ``t`` and
    then, for every ``t <= d``,

        w_t = -(1 / (lambda t)) sum_{j <= t} h_j,   J_t(w_t) = -1 / (2 lambda t),
        J(w_t) = 1 / (2 lambda t),

    so it needs ``1 / (2 lambda eps)`` iterations to reach accuracy ``eps`` (while that is at
    most ``d``). The ``"paper"`` variant is the construction as printed: the columns of
    ``[[H, -H], [-H, H]] / sqrt(d)`` with ``H = H_{d/2}``, which come in antipodal pairs, so
    BMRM stops after two iterations on it.

    Parameters
    ----------
    n_features : int, default=16
        ``d``, a power of 2 (at least 2).
    variant : {"fixed", "paper"}, default="fixed"
        The corrected construction (``"fixed"``) or the construction as printed
        (``"paper"``).

    Returns
    -------
    pieces : ndarray of shape (n_features + 1, n_features) or (n_features, n_features)
        One affine piece per row (``"fixed"``: ``h_1 .. h_d`` then the zero piece).
    offsets : ndarray of shape (n_pieces,)
        All zero.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ssvm.datasets import make_hadamard_bmrm
    >>> pieces, offsets = make_hadamard_bmrm(8)
    >>> pieces.shape, bool(np.allclose(pieces[:8] @ pieces[:8].T, np.eye(8)))
    ((9, 8), True)
    """
    if (isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral)
            or n_features < 2 or n_features & (n_features - 1)):
        raise ValueError("n_features must be a power of 2, at least 2, got %r" % (n_features,))
    if variant == "fixed":
        columns = hadamard(n_features) / np.sqrt(n_features)
        pieces = np.vstack([columns.T, np.zeros(n_features)])
    elif variant == "paper":
        half = hadamard(n_features // 2)
        pieces = (np.block([[half, -half], [-half, half]]) / np.sqrt(n_features)).T
    else:
        raise ValueError("variant must be 'fixed' or 'paper', got %r" % (variant,))
    return pieces, np.zeros(pieces.shape[0])
