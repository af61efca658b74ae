"""Sum tree: draw an index with probability proportional to its weight in O(log n).

Gap sampling (spec 002 §3, pitfall 5) draws block ``i`` with probability ``g_i / sum_j g_j`` and
updates ``g_i`` after every step; naive sampling would make a pass O(n^2). The tree is an array of
``2 * size`` floats (``size`` the next power of two >= n): leaf ``i`` is ``tree[size + i]`` and
every internal node holds the sum of its two children, recomputed (not incremented) on update so
sums never drift.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def sum_tree(weights):
    """Build the tree over non-negative finite ``weights``."""
    n = weights.shape[0]
    size = 1
    while size < n:
        size *= 2
    tree = np.zeros(2 * size)
    for i in range(n):
        tree[size + i] = weights[i]
    for node in range(size - 1, 0, -1):
        tree[node] = tree[2 * node] + tree[2 * node + 1]
    return tree


@njit(cache=True, nogil=True)
def sum_tree_update(tree, i, weight):
    """Set the weight of index ``i`` and refresh the sums on its path to the root."""
    node = tree.shape[0] // 2 + i
    tree[node] = weight
    node //= 2
    while node >= 1:
        tree[node] = tree[2 * node] + tree[2 * node + 1]
        node //= 2


@njit(cache=True, nogil=True)
def sum_tree_total(tree):
    return tree[1]


@njit(cache=True, nogil=True)
def sum_tree_sample(tree, uniform):
    """Index drawn with probability ``weight / total`` from ``uniform`` in [0, 1).

    Never returns an index of weight 0 while the total is positive, whatever the rounding: a
    branch is entered only if its sum is positive.
    """
    size = tree.shape[0] // 2
    u = uniform * tree[1]
    node = 1
    while node < size:
        left = tree[2 * node]
        right = tree[2 * node + 1]
        if (u < left or right <= 0.0) and left > 0.0:
            node = 2 * node
        else:
            u -= left
            node = 2 * node + 1
    return node - size
