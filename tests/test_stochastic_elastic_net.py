"""Elastic-net proximal steps of SGD, SVRG and Casimir-SVRG (lazy soft-thresholds) and their
certificate, against dense references and independent solutions."""
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from sklearn_ssvm import ChainCRF
from sklearn_ssvm.penalties import ElasticNet
from sklearn_ssvm.solvers import smooth
from sklearn_ssvm.structures.base import smoothing_code

from _brute import all_features, elastic_net_qp


def soft(v, t):
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def sparse_chain(rng, n=15, n_features=20, n_labels=3, max_len=3):
    """Chains whose tokens have one non-zero feature each (plus ChainCRF's three biases), so a
    feature row goes untouched for tens of steps."""
    W = rng.normal(size=(n_features, n_labels))
    X, Y = [], []
    for i in range(n):
        x = np.zeros((1 + i % max_len, n_features))
        x[np.arange(x.shape[0]), rng.integers(n_features, size=x.shape[0])] = \
            rng.normal(size=x.shape[0])
        X.append(x)
        Y.append(np.argmax(x @ W + rng.normal(size=(x.shape[0], n_labels)), axis=1))
    return X, Y


class DenseReference:
    """Plain numpy proximal steps, every coordinate stepped every step:
    ``w <- soft(a w - gamma (B + g_i(w) - gref_i), gamma l1)`` with ``g_i`` the dense gradient
    of example ``i`` (relative to its true labeling) from the smoothed oracle."""

    def __init__(self, problem, sm):
        self.singles = [problem.subset(np.array([i])) for i in range(problem.n_samples)]
        self.sm = sm
        self.F, self.C = problem.n_features, problem.n_codes

    def grad(self, i, w):
        return smooth.full_gradient(self.singles[i], w, self.sm).grad

    def run(self, w, samples, gammas, c, l1, weights, B=0.0, ref=None):
        """The last iterate, the weighted average of the iterates, and per step the iterate
        and which feature rows the step touched."""
        total, trace, touched = np.zeros_like(w), [w], []
        for i, gamma, omega in zip(samples, gammas, weights):
            g = self.grad(i, w) - (0.0 if ref is None else ref[i])
            rows = self.singles[i].indices
            touched.append(np.isin(np.arange(self.F), rows))
            w = soft((1.0 - gamma * c) * w - gamma * (B + g), gamma * l1)
            total += omega * w
            trace.append(w)
        return w, total / np.sum(weights), np.array(trace), np.array(touched)

    def sign_changes(self, trace, touched):
        """How untouched coordinates change sign within untouched stretches (pairs of signs:
        to 0, + to -, - to +), checking that some row goes untouched for 20 steps or more."""
        gaps = [np.diff(np.flatnonzero(np.r_[True, touched[:, j], True])).max()
                for j in range(self.F)]
        assert max(gaps) >= 20
        changes = set()
        for k in range(self.F * self.C):
            steps = np.flatnonzero(~touched[:, k // self.C])
            for run in np.split(steps, np.flatnonzero(np.diff(steps) > 1) + 1):
                if run.size:  # consecutive untouched steps, from iterate run[0] on
                    signs = np.sign(trace[run[0]:run[-1] + 2, k])
                    if signs[0] != 0 and np.any(signs == 0):
                        changes.add((signs[0], 0.0))
                    nonzero = signs[signs != 0]
                    changes.update(zip(nonzero[:-1], nonzero[1:]))
        return changes


def assert_mixed_thresholds(B, l1, problem):
    """Some untouched coordinates have ``|b_j| < l1`` (0 is their fixed point), some more."""
    FC = problem.n_features * problem.n_codes
    assert np.any(np.abs(B[:FC]) < l1) and np.any(np.abs(B[:FC]) > l1)


@pytest.fixture(scope="module")
def chain():
    rng = np.random.default_rng(0)
    X, Y = sparse_chain(rng)
    problem = ChainCRF(normalize_loss=True).prepare(X, Y)
    sm = smooth.Smoothing(*smoothing_code("l2", 3, problem.kind), 0.5)
    return problem, sm, DenseReference(problem, sm)


def test_lazy_svrg_prox_steps_equal_dense_steps(chain):
    """Two SVRG epochs (the second from the first's average, a fresh snapshot each) of
    proximal steps: the lazy iterate and its uniform average equal the dense reference; a
    300-step epoch at a = 0.95 also restarts the histories (a^300 < 1e-6)."""
    problem, sm, ref = chain
    rng = np.random.default_rng(1)
    c, l1, gamma, n_steps = 0.5, 0.1, 0.1, 300
    penalty = ElasticNet(c, l1, rng.normal(scale=0.2, size=problem.n_params))
    w_snap = rng.normal(scale=0.5, size=problem.n_params)
    w_snap[rng.random(problem.n_params) < 0.3] = 0.0
    changes = set()
    for epoch in range(2):
        snap = smooth.full_gradient(problem, w_snap, sm)
        B = snap.grad - penalty.linear(snap.grad)
        lazy = smooth.LazyIterate(problem, w_snap, B, l1)
        samples = rng.integers(problem.n_samples, size=n_steps)
        gammas = np.full(n_steps, gamma)
        lazy.steps(sm, snap.M, snap.Q, samples, gammas, 1.0 - gammas * c, np.ones(n_steps))
        G_snap = np.array([ref.grad(i, w_snap) for i in range(problem.n_samples)])
        w_ref, avg_ref, trace, touched = ref.run(w_snap, samples, gammas, c, l1,
                                                 np.ones(n_steps), G_snap.mean(axis=0)
                                                 - penalty.p, G_snap)
        changes |= ref.sign_changes(trace, touched)
        assert_mixed_thresholds(B, l1, problem)
        np.testing.assert_allclose(lazy.current(), w_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(lazy.average(), avg_ref, rtol=0, atol=1e-10)
        assert np.sum(w_ref == 0) > 0 and np.array_equal(lazy.current() == 0, w_ref == 0)
        w_snap = lazy.average()
    # untouched coordinates crossed zero both ways, and some stopped at 0
    assert {(1.0, -1.0), (-1.0, 1.0)} <= changes and {(1.0, 0.0), (-1.0, 0.0)} & changes
    # the solver's epoch: same samples from the same stream, B = mean gradient - p
    avg, _ = smooth.svrg_epoch(problem, w_snap, sm, gamma, penalty, n_steps,
                               np.random.default_rng(7))
    G_snap = np.array([ref.grad(i, w_snap) for i in range(problem.n_samples)])
    samples = np.random.default_rng(7).integers(problem.n_samples, size=n_steps)
    _, avg_ref, _, _ = ref.run(w_snap, samples, np.full(n_steps, gamma), c, l1,
                               np.ones(n_steps), G_snap.mean(axis=0) - penalty.p, G_snap)
    np.testing.assert_allclose(avg, avg_ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("with_prox", [False, True])
def test_lazy_sgd_prox_steps_equal_dense_steps(chain, with_prox):
    """SGD's proximal steps (decreasing steps, weights t, B = -p or none) over two calls, with
    histories restarted several times (S falls below 1e-6 about every 70 steps)."""
    problem, sm, ref = chain
    rng = np.random.default_rng(2)
    c, l1 = 1.0, 0.02
    p = rng.normal(scale=0.2, size=problem.n_params) if with_prox else None
    w0 = rng.normal(scale=0.5, size=problem.n_params)
    M_ref, Q_ref = problem.truth_stats()
    lazy = smooth.LazyIterate(problem, w0, None if p is None else -p, l1)
    t = np.arange(1.0, 401.0)
    gammas, weights = 0.4 / (1.0 + t / 100.0), t
    samples = rng.integers(problem.n_samples, size=400)
    for part in (slice(0, 250), slice(250, 400)):
        lazy.steps(sm, M_ref, Q_ref, samples[part], gammas[part], 1.0 - gammas[part] * c,
                   weights[part])
    w_ref, avg_ref, trace, touched = ref.run(w0, samples, gammas, c, l1, weights,
                                             0.0 if p is None else -p)
    changes = ref.sign_changes(trace, touched)
    assert {(1.0, 0.0), (-1.0, 0.0)} & changes
    if with_prox:
        assert {(1.0, -1.0), (-1.0, 1.0)} <= changes
        assert_mixed_thresholds(-p, l1, problem)
    else:  # without B an untouched coordinate only shrinks towards 0
        assert not {(1.0, -1.0), (-1.0, 1.0)} & changes
    assert np.sum(w_ref == 0) > 0
    np.testing.assert_allclose(lazy.current(), w_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(lazy.average(), avg_ref, rtol=0, atol=1e-10)


# iterates of the pre-elastic-net solvers (L2 kernel) on the data below, as float.hex
TINY_X = [[[2.0, -2.6]], [[0.4, -0.6], [-0.5, -0.2]], [[-2.0, -0.2], [-0.9, 3.3], [0.2, -0.4]],
          [[-0.3, -0.7]], [[-1.1, -0.4], [0.5, -0.2]], [[1.0, -0.2], [0.0, 1.5], [0.5, -0.5]]]
TINY_Y = [[0], [0, 1], [1, 1, 0], [1], [1, 0], [0, 1, 0]]
GOLDEN = {
    "sgd": ['0x1.3d0b5d76bd0d5p-1', '-0x1.3d0b5d76bd0d4p-1', '-0x1.d4e8deaf9fc7ep-3',
            '0x1.d4e8deaf9fc7ep-3', '-0x1.33352a0b85661p-4', '0x1.33352a0b8566ap-4',
            '-0x1.39ead21717991p-3', '0x1.39ead21717992p-3', '-0x1.8cfe262131b03p-3',
            '0x1.8cfe262131b04p-3', '-0x1.2b28250b4e7f2p-5', '0x1.3e2d9a5e429cdp-3',
            '0x1.d6348ca8510b8p-4', '-0x1.de7dd76f9782dp-3'],
    "svrg": ['0x1.36a48c6eb2643p-1', '-0x1.36a48c6eb2643p-1', '-0x1.ed31207ef3f43p-3',
             '0x1.ed31207ef3f43p-3', '0x1.04e368859b030p-7', '-0x1.04e368859b000p-7',
             '-0x1.1b28f8cac6601p-3', '0x1.1b28f8cac6603p-3', '-0x1.36ae52aafd245p-3',
             '0x1.36ae52aafd241p-3', '-0x1.0aa742110142fp-5', '0x1.89a659b797253p-3',
             '0x1.6e20ffd760610p-3', '-0x1.5a8ec4855b9abp-2'],
    "casimir": ['0x1.6040007d6057fp+0', '-0x1.6040007d60581p+0', '-0x1.de502c1e11365p-1',
                '0x1.de502c1e11365p-1', '-0x1.52e34a93e056ep-2', '0x1.52e34a93e056dp-2',
                '-0x1.bb122d2473640p-2', '0x1.bb122d2473640p-2', '0x1.85d2621b2e6f0p-3',
                '-0x1.85d2621b2e6f0p-3', '-0x1.44bf606874610p-2', '-0x1.a21a3672065a5p-3',
                '0x1.acee42f9076e5p-2', '0x1.a378e2a1c0804p-4'],
}


@pytest.mark.parametrize("solver", ["sgd", "svrg", "casimir"])
def test_l1_zero_reproduces_the_l2_iterates_exactly(solver):
    """``l1 = 0`` (a float alpha or an ElasticNet without l1 part) runs the L2 kernel: the
    iterates are those of the solvers before the elastic net, to the bit."""
    problem = ChainCRF(normalize_loss=True).prepare([np.array(x) for x in TINY_X],
                                                    [np.array(y) for y in TINY_Y])
    sm = smooth.Smoothing(*smoothing_code("l2", 2, problem.kind), 0.5)
    golden = np.array([float.fromhex(h) for h in GOLDEN[solver]])
    for alpha in (0.1, ElasticNet.from_alpha(0.1, 0.0)):
        if solver == "sgd":
            coef = smooth.sgd(problem, alpha, sm, learning_rate=0.3, max_iter=3,
                              random_state=0).coef
        elif solver == "svrg":
            coef = smooth.svrg(problem, alpha, sm, learning_rate=0.3, max_iter=3, warmup=1,
                               random_state=0).coef
        else:
            coef = smooth.casimir_svrg(problem, alpha, sm, learning_rate=0.3, max_iter=3,
                                       random_state=0).coef
        np.testing.assert_array_equal(coef, golden)


def tiny_chain():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(3, 2))
    X = [rng.normal(size=(1 + i % 3, 3)) for i in range(6)]
    Y = [np.argmax(x @ W + rng.normal(size=(x.shape[0], 2)), axis=1) for x in X]
    return X, Y


def enumerated(structure, X, Y):
    """Per example: the rows ``phi(x_i, y) - phi(x_i, y_i)`` and losses of every labeling."""
    out = []
    for x, y in zip(X, Y):
        _, Phi, losses, phi_true = all_features(structure, x, y)
        out.append((Phi - phi_true, losses))
    return out


def entropy_elastic_net(rows, penalty, mu):
    """Independent minimiser of ``r(w) + mean_i mu logsumexp((L + <w, psi>) / mu)`` (the
    entropy-smoothed hinge over the enumerated labelings) with ``w = w+ - w-``, by L-BFGS-B."""
    d = rows[0][0].shape[1]

    def fun(v):
        w = v[:d] - v[d:]
        value, grad = 0.5 * penalty.c * w @ w + penalty.l1 * v.sum(), penalty.c * w
        for A, L in rows:
            z = (L + A @ w) / mu
            value += mu * logsumexp(z) / len(rows)
            grad = grad + A.T @ np.exp(z - logsumexp(z)) / len(rows)
        return value, np.concatenate([grad + penalty.l1, penalty.l1 - grad])

    res = minimize(fun, np.zeros(2 * d), jac=True, method="L-BFGS-B", bounds=[(0, None)] * 2 * d,
                   options=dict(ftol=1e-15, gtol=1e-12, maxiter=10000))
    return res.x[:d] - res.x[d:], res.fun


@pytest.fixture(scope="module")
def tiny():
    X, Y = tiny_chain()
    structure = ChainCRF(normalize_loss=True)
    problem = structure.prepare(X, Y)
    penalty = ElasticNet.from_alpha(0.2, 0.5)
    p_star, w_qp = elastic_net_qp(structure, X, Y, penalty)
    return problem, penalty, enumerated(structure, X, Y), p_star, w_qp


@pytest.mark.parametrize("solver", ["svrg", "casimir"])
def test_solvers_reach_the_elastic_net_optimum(tiny, solver):
    """At a constant entropy smoothing F_mu + r is strongly convex: SVRG and Casimir-SVRG
    (proximal steps) reach its independent minimum to 1e-6, with its exact zeros, and satisfy
    its optimality condition: the smoothed loss is differentiable, so the least violation of
    ``0 in grad + c w + l1 d||w||_1`` vanishes at the minimiser (here up to the iterate's
    distance to it, times the gradient's Lipschitz constant). The certified gap of the
    non-smooth problem bounds objective - P* (P* from the QP) at every epoch."""
    problem, penalty, rows, p_star, _ = tiny
    mu = 0.5
    sm = smooth.Smoothing(*smoothing_code("entropy", None, problem.kind), mu)
    w_star, f_star = entropy_elastic_net(rows, penalty, mu)
    if solver == "svrg":
        res = smooth.svrg(problem, penalty, sm, learning_rate=0.05, max_iter=300,
                          random_state=0)
    else:
        res = smooth.casimir_svrg(problem, penalty, sm, learning_rate=0.05,
                                  mu_schedule="const", max_iter=300, random_state=0)
    fg = smooth.full_gradient(problem, res.coef, sm)
    assert fg.value + penalty.value(res.coef) - f_star < 1e-6
    np.testing.assert_allclose(res.coef, w_star, atol=1e-3)
    zeros = np.abs(w_star) < 1e-9
    assert 0 < zeros.sum() < zeros.size
    np.testing.assert_array_equal(res.coef == 0, zeros)
    assert penalty.subgradient_distance(res.coef, fg.grad) < 1e-4
    assert ElasticNet(penalty.c).subgradient_distance(res.coef, fg.grad) > 0.05  # l1 matters
    for record in res.history:
        assert record["objective"] - record["gap"] <= p_star + 1e-9
        assert record["objective"] >= p_star - 1e-9


def test_casimir_certifies_the_nonsmooth_elastic_net_optimum(tiny):
    """Casimir-SVRG with a decreasing top-K smoothing approaches the non-smooth optimum (the
    QP), with a certified gap that bounds objective - P* at every epoch and shrinks with it.
    Not to 1e-6: as mu_k -> 0 the steps follow mu_k down to their 1/k floor. The last iterate
    averages one epoch, which leaves tiny entries at the QP's zeros; the result zeros those
    whose removal raises the objective by at most 1e-3 of it (and the gap): zeros of the QP."""
    problem, penalty, _, p_star, w_qp = tiny
    sm = smooth.Smoothing(*smoothing_code("l2", 5, problem.kind), 0.5)
    res = smooth.casimir_svrg(problem, penalty, sm, learning_rate=0.5, max_iter=600,
                              random_state=0)
    for record in res.history:
        assert record["gap"] >= record["objective"] - p_star - 1e-9
    assert res.objective - p_star < 1e-3 and res.duality_gap < 1e-3
    assert res.duality_gap < 1e-4 * res.history[0]["gap"]
    last = res.history[-1]
    assert res.objective <= last["objective"] + min(last["gap"], 1e-3 * last["objective"])
    assert res.objective == pytest.approx(smooth.objective(problem, res.coef, penalty),
                                          rel=1e-12)
    optimal_zeros = np.abs(w_qp) < 1e-9
    assert np.count_nonzero(res.coef == 0) >= optimal_zeros.sum() // 2
    assert np.all(optimal_zeros[res.coef == 0])
    np.testing.assert_allclose(res.coef, w_qp, atol=0.05)


def test_dual_bound_merges_by_an_exact_line_search():
    """The merged dual value is the maximum of ``D = ell - r*(-g)`` on the segment (a dense
    grid never beats it), and never below either end."""
    rng = np.random.default_rng(3)
    d = 40
    penalty = ElasticNet(0.3, 0.2, rng.normal(scale=0.1, size=d))
    snaps = [smooth.FullGradient(0.0, rng.normal(scale=0.3, size=d), None, None,
                                 rng.uniform(0.5, 1.0)) for _ in range(4)]
    bound = smooth.DualBound(penalty)
    bound.update(snaps[0])
    for snap in snaps[1:]:
        g0, ell0, before = bound.g.copy(), bound.ell, bound.value
        grid = np.linspace(0.0, 1.0, 2001)
        values = [ell0 + s * (snap.dual_loss - ell0)
                  - penalty.conjugate(-(g0 + s * (snap.grad - g0))) for s in grid]
        after = bound.update(snap)
        assert after >= max(values) - 1e-12 and after >= before
        assert after <= max(values) + 1e-4  # the grid's resolution
        assert after == pytest.approx(bound.ell - penalty.conjugate(-bound.g), abs=1e-14)


def test_elastic_net_through_warmup_callbacks_learning_rate_and_inner_test(tiny):
    """The estimator's machinery takes an ElasticNet as it takes a float alpha: the SGD
    warm-up, callbacks that stop, the learning-rate search and Casimir's inner stopping test
    (with the least-norm subgradient)."""
    problem, penalty, _, p_star, _ = tiny
    sm = smooth.Smoothing(*smoothing_code("l2", 5, problem.kind), 0.5)
    seen = []
    res = smooth.svrg(problem, penalty, sm, learning_rate=0.1, max_iter=10, warmup=2,
                      random_state=0, callback=lambda epoch, coef: seen.append(epoch) or (
                          {"stop": True} if epoch == 4 else None))
    assert seen == [1, 2, 3, 4] and res.n_iter == 4
    assert np.isnan(res.history[1]["gap"]) and res.history[3]["gap"] >= res.objective - p_star
    rate = smooth.choose_learning_rate(
        problem, lambda sub, lr: smooth.casimir_svrg(sub, penalty, sm, learning_rate=lr,
                                                     max_iter=2, random_state=0).objective,
        sm, np.random.default_rng(0))
    assert rate > 0
    res = smooth.casimir_svrg(problem, penalty, sm, learning_rate=0.1, mu_schedule="const",
                              kappa=1.0, inner_epochs=30, inner_test=True, max_iter=15,
                              random_state=0)
    assert 1 < max(r["inner_epochs"] for r in res.history)
    assert min(r["inner_epochs"] for r in res.history) < 30  # the test ends some inner solves
    assert res.history[-1]["objective"] < res.history[0]["objective"]
