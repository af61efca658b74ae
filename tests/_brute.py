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


def all_features(structure, x, y_true):
    """Every labeling ``ys`` of ``x``, their joint features (rows of ``Phi``), their losses and
    ``phi(x, y_true)`` (for candidate sets ``y_true`` is the loss vector, the true candidate its
    first zero)."""
    ys = all_labelings(structure, x)
    Phi = np.array([structure.joint_feature(x, y) for y in ys])
    losses = np.array([structure.loss(y_true, y) for y in ys])
    if isinstance(structure, CandidateSet):
        phi_true = Phi[np.flatnonzero(losses == 0)[0]]
    else:
        phi_true = structure.joint_feature(x, y_true)
    return ys, Phi, losses, phi_true


def all_values(structure, x, y_true, coef):
    """Every labeling and its ``L(y_true, y) + <coef, phi(x, y) - phi(x, y_true)>``."""
    ys, Phi, losses, phi_true = all_features(structure, x, y_true)
    return ys, losses + (Phi - phi_true) @ coef
