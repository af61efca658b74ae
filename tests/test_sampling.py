"""Sum-tree sampling for gap sampling (spec 002 §11 items 12-13)."""
import numpy as np
import pytest
from scipy.stats import chisquare

from sklearn_ssvm._kernels.sampling import (sum_tree, sum_tree_sample, sum_tree_total,
                                            sum_tree_update)


def leaf_masses(tree, n):
    size = tree.shape[0] // 2
    return tree[size:size + n] / sum_tree_total(tree)


@pytest.mark.parametrize("n", [1, 5, 8, 13])
def test_equal_weights_are_exactly_uniform(n):
    tree = sum_tree(np.full(n, 0.37))
    np.testing.assert_allclose(leaf_masses(tree, n), np.full(n, 1.0 / n), rtol=1e-15)
    rng = np.random.default_rng(0)
    draws = np.array([sum_tree_sample(tree, u) for u in rng.random(20000)])
    counts = np.bincount(draws, minlength=n)
    assert n == 1 or chisquare(counts).pvalue > 1e-4


def test_frequencies_follow_weights_and_zero_weights_are_never_drawn():
    rng = np.random.default_rng(1)
    weights = rng.random(11) * (rng.random(11) > 0.3)
    weights[3] = 0.0
    tree = sum_tree(weights)
    m = 100000
    draws = np.array([sum_tree_sample(tree, u) for u in rng.random(m)])
    counts = np.bincount(draws, minlength=11)
    p = weights / weights.sum()
    assert np.all(counts[weights == 0] == 0)
    sigma = np.sqrt(m * p * (1 - p))
    assert np.all(np.abs(counts - m * p) <= 4 * sigma + 1e-9)
    # u at the very end of [0, 1) still lands on a positive weight
    assert weights[sum_tree_sample(tree, np.nextafter(1.0, 0.0))] > 0


def test_updates_keep_sums_exact():
    rng = np.random.default_rng(2)
    weights = rng.random(9)
    tree = sum_tree(weights)
    for _ in range(200):
        i = rng.integers(9)
        weights[i] = rng.random() * (rng.random() > 0.2)
        sum_tree_update(tree, i, weights[i])
    np.testing.assert_array_equal(tree, sum_tree(weights))
