"""Graph data sets of the benchmarks that the package does not generate."""
import numpy as np


def rectangles(n, seed):
    """``n`` noisy 16 x 16 images of one rectangle each, as ``grid_graph`` examples."""
    from sklearn_ssvm.structures import grid_graph

    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        top, left = rng.integers(1, 7, size=2)
        bottom, right = top + rng.integers(5, 9), left + rng.integers(5, 9)
        y = np.zeros((16, 16), dtype=np.int64)
        y[top:bottom, left:right] = 1
        intensity = y + rng.normal(size=y.shape)
        features, edges = grid_graph(np.dstack([intensity, np.ones_like(intensity)]))
        X.append((features, edges))
        Y.append(y.ravel())
    return X, Y
