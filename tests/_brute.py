"""Brute-force enumeration of labelings, the reference every oracle is tested against."""
import itertools

import numpy as np

from sklearn_ssvm import CandidateSet, ChainCRF, GraphCRF, MultiLabel


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
    if isinstance(structure, GraphCRF):
        return [np.array(p) for p in itertools.product(classes, repeat=len(x[0]))]
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


def elastic_net_qp(structure, X, Y, penalty):
    """``min_w r(w) + mean_i max_y [L(y_i, y) + <w, phi(x_i, y) - phi(x_i, y_i)>]`` for the
    elastic net ``r`` (``penalties.ElasticNet``, no linear term) on tiny data, independently of
    the solvers: the n-slack QP over every labeling with ``w = w+ - w-``, ``w+, w- >= 0``, by
    SLSQP. Returns ``(P, w)``: SLSQP's ``w`` and its exact primal value ``P >= P*`` (the
    hinges by enumeration), which bounds every certificate from above as ``P*`` does."""
    from scipy.optimize import minimize

    n, d = len(X), structure.n_params
    rows, losses, owner = [], [], []
    for i, (x, y) in enumerate(zip(X, Y)):
        ys, Phi, L, phi_true = all_features(structure, x, y)
        rows.append(Phi - phi_true)
        losses.append(L)
        owner.append(np.full(len(ys), i))
    A, b, owner = np.vstack(rows), np.concatenate(losses), np.concatenate(owner)
    c, t = penalty.c, penalty.l1

    def split(z):
        return z[:d] - z[d:2 * d], z[2 * d:]

    def objective(z):
        w, xi = split(z)
        return 0.5 * c * w @ w + t * z[:2 * d].sum() + xi.mean()

    def gradient(z):
        w, _ = split(z)
        return np.concatenate([c * w + t, -c * w + t, np.full(n, 1.0 / n)])

    # xi_i >= L_i(y) + <w, phi(x_i, y) - phi(x_i, y_i)> for every labeling y
    constraint = {"type": "ineq", "fun": lambda z: split(z)[1][owner] - A @ split(z)[0] - b,
                  "jac": lambda z: np.hstack([-A, A, np.eye(n)[owner]])}
    start = np.concatenate([np.zeros(2 * d), np.full(n, b.max())])
    res = minimize(objective, start, jac=gradient, constraints=[constraint],
                   bounds=[(0, None)] * (2 * d) + [(None, None)] * n, method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success, res.message
    w = split(res.x)[0]
    hinges = [max(A[owner == i] @ w + b[owner == i]) for i in range(n)]
    return 0.5 * c * w @ w + t * np.abs(w).sum() + np.mean(hinges), w
