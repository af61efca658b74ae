"""Brute-force enumeration of labelings, the reference every oracle is tested against."""
import itertools

import numpy as np

from sklearn_ssvm import CandidateSet, ChainCRF, MultiLabel


def all_labelings(structure, x):
    """Every labeling of example ``x`` (in the structure's original label values)."""
    classes = structure.classes_
    if isinstance(structure, ChainCRF):
        T = x.shape[0]
        return [np.array(p) for p in itertools.product(classes, repeat=T)]
    if isinstance(structure, CandidateSet):
        return list(range(x.shape[0]))
    if isinstance(structure, MultiLabel):
        K = len(classes)
        return [np.array(p) for p in itertools.product([0, 1], repeat=K)]
    return list(classes)


def brute_max(structure, x, y_true, coef, augment=True):
    """``max_y [L(y_true, y)] + <coef, phi(x, y) - phi(x, y_true)>`` by enumeration."""
    gold = coef @ structure.joint_feature(x, y_true) if y_true is not None else 0.0
    best, best_y = -np.inf, None
    for y in all_labelings(structure, x):
        v = coef @ structure.joint_feature(x, y) - gold
        if augment:
            v += structure.loss(y_true, y)
        if v > best:
            best, best_y = v, y
    return best, best_y


def all_values(structure, x, y_true, coef):
    gold = coef @ structure.joint_feature(x, y_true)
    ys = all_labelings(structure, x)
    vals = np.array([structure.loss(y_true, y) + coef @ structure.joint_feature(x, y) - gold
                     for y in ys])
    return ys, vals
