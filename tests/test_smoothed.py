"""Batched smoothed hinge losses (entropy, top-K) against enumeration of all labelings."""
import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_ssvm import ChainCRF
from sklearn_ssvm._kernels.smoothed import ENTROPY, TOP_K, smoothed_losses
from sklearn_ssvm.smoothing import topk_smooth_max

from _brute import all_values


def gradients(problem, M, Q, W_shape):
    """Per-example gradients X_i^T (M_i - S(y_i)) (+) (Q_i - q(y_i)), densely, for checking."""
    from sklearn_ssvm.solvers.bcfw import DualState
    vertex = DualState.at_labels(problem)
    out = []
    for i in range(problem.n_samples):
        t0, t1 = problem.tok_offsets[i], problem.tok_offsets[i + 1]
        X = np.zeros((t1 - t0, problem.n_features))
        for t in range(t0, t1):
            cols = problem.indices[problem.indptr[t]:problem.indptr[t + 1]]
            X[t - t0, cols] = problem.data[problem.indptr[t]:problem.indptr[t + 1]]
        D = M[t0:t1] - vertex.M[t0:t1]
        out.append(np.concatenate([(X.T @ D).ravel(), Q[i] - vertex.Q[i]]))
    return out


@pytest.mark.parametrize("smoothing, K", [(ENTROPY, 1), (TOP_K, 1), (TOP_K, 2), (TOP_K, 5),
                                          (TOP_K, 100)])
@pytest.mark.parametrize("mu", [0.1, 1.0])
def test_smoothed_losses_match_enumeration(smoothing, K, mu):
    rng = np.random.default_rng(K)
    X = [rng.normal(size=(1 + i % 4, 3)) for i in range(6)]
    Y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
    Y[0][0], Y[1][0], Y[2][0] = 0, 1, 2
    structure = ChainCRF()
    problem = structure.prepare(X, Y)
    coef = rng.normal(size=problem.n_params)
    W, theta = problem.split_coef(coef)
    values = np.empty(problem.n_samples)
    M = np.empty((problem.tok_offsets[-1], problem.n_codes))
    Q = np.empty((problem.n_samples, problem.n_pair))
    smoothed_losses(problem.kind, problem.indptr, problem.indices, problem.data,
                    problem.tok_offsets, problem.y, problem.node_offsets,
                    np.ascontiguousarray(W), theta, smoothing, K, mu, values, M, Q)
    grads = gradients(problem, M, Q, W.shape)
    for i, (x, y) in enumerate(zip(X, Y)):
        ys, z = all_values(structure, x, y, coef)  # L(y_i, y) + <coef, phi(y) - phi(y_i)>
        if smoothing == ENTROPY:
            expected = mu * logsumexp(z / mu)
            u = np.exp(z / mu - logsumexp(z / mu))
        else:
            order = np.argsort(-z, kind="stable")[:K]
            expected, weights, _ = topk_smooth_max(z[order], mu)
            u = np.zeros(len(z))
            u[order] = weights
        assert values[i] == pytest.approx(expected, abs=1e-9)
        phi_true = structure.joint_feature(x, y)
        grad = sum(ui * structure.joint_feature(x, yy) for ui, yy in zip(u, ys)) - phi_true
        np.testing.assert_allclose(grads[i], grad, atol=1e-9)
