"""Property tests for the smoothing primitives (spec 000 Sec. 1.3-1.7, 6.1; Sec. 7 items 1-9).

Paper: Pillutla et al., "A Smoother Way to Train Structured Prediction Models".
"""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

from sklearn_ssvm import smoothing
from sklearn_ssvm._kernels import simplex as ksimplex
from sklearn_ssvm.smoothing import (
    project_simplex,
    smooth_max,
    smoothing_bound,
    topk_smooth_max,
)

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TOL = 1e-9

finite = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False, allow_subnormal=False)
mus = st.floats(1e-2, 10.0, allow_nan=False, allow_infinity=False)
seeds = st.integers(0, 2**32 - 1)


def vectors(min_size=1, max_size=8, elements=finite):
    return hnp.arrays(np.float64, st.integers(min_size, max_size), elements=elements)


# finite entries mixed with -inf padding/holes, at least one finite entry
vectors_with_neginf = vectors(
    elements=st.one_of(finite, finite, st.just(-np.inf))
).filter(lambda v: np.isfinite(v).any())


def sorted_desc(z):
    return np.sort(z)[::-1]


def in_simplex(u, atol=1e-12):
    assert np.all(u >= 0.0)
    assert abs(u.sum() - 1.0) <= atol


def l2_value_ref(z, mu):
    """h_{mu l2^2}(z) straight from the definition, via the wrapper's projection."""
    u = project_simplex(z / mu)
    return float(z @ u - 0.5 * mu * (u @ u - 1.0))


# ---------------------------------------------------------------------------------------------
# Item 1: bounds
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(z=vectors(), mu=mus)
def test_bounds(z, mu):
    m = z.shape[0]
    zmax = z.max()
    he, _ = smooth_max(z, mu, "entropy")
    assert zmax - TOL <= he <= zmax + mu * np.log(m) + TOL
    hl, _ = smooth_max(z, mu, "l2")
    assert zmax - TOL <= hl <= zmax + mu / 2 + TOL
    assert hl == pytest.approx(l2_value_ref(z, mu), abs=TOL)
    zs = sorted_desc(z)
    for K in range(1, m + 1):
        hk, _, lin = topk_smooth_max(zs[:K], mu)
        assert zmax - TOL <= hk <= hl + TOL
        # Algo. 6's linearized value undershoots by (mu/2)(1 - ||u||^2) in [0, mu/2)
        assert 0.0 - TOL <= hk - lin < mu / 2 + TOL
    hh, _ = smooth_max(z, mu, None)
    assert hh == zmax


def test_smoothing_bound():
    assert smoothing_bound("entropy", 7) == pytest.approx(np.log(7))
    assert smoothing_bound("entropy", 1) == 0.0
    assert smoothing_bound("l2", 100) == 0.5
    assert smoothing_bound(None, 5) == 0.0
    with pytest.raises(ValueError):
        smoothing_bound("l1", 3)
    with pytest.raises(ValueError):
        smoothing_bound("entropy", 0)


# ---------------------------------------------------------------------------------------------
# Item 2: monotonicity in mu
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(z=vectors(), mu_a=st.one_of(st.just(0.0), mus), mu_b=mus)
def test_monotone_in_mu(z, mu_a, mu_b):
    mu1, mu2 = max(mu_a, mu_b), min(mu_a, mu_b)
    m = z.shape[0]
    for kind in ("entropy", "l2"):
        D = smoothing_bound(kind, m)
        h1, _ = smooth_max(z, mu1, kind)
        h2, _ = smooth_max(z, mu2, kind)
        assert -TOL <= h1 - h2 <= (mu1 - mu2) * D + TOL
    zs = sorted_desc(z)
    for K in range(1, m + 1):
        h1, _, _ = topk_smooth_max(zs[:K], mu1)
        h2, _, _ = topk_smooth_max(zs[:K], mu2)
        assert -TOL <= h1 - h2 <= (mu1 - mu2) * 0.5 + TOL


# ---------------------------------------------------------------------------------------------
# Item 3: gradients
# ---------------------------------------------------------------------------------------------
def _fd_grad(fun, z, eps=1e-7):
    g = np.empty_like(z)
    for i in range(z.shape[0]):
        e = np.zeros_like(z)
        e[i] = eps
        g[i] = (fun(z + e) - fun(z - e)) / (2 * eps)
    return g


@SETTINGS
@given(z=vectors(), mu=mus)
def test_gradients_finite_differences(z, mu):
    # h has a (1/mu)-Lipschitz gradient, so the central difference error is <= eps / (2 mu)
    atol = 1e-7 / (2 * mu) + 1e-6
    for kind in ("entropy", "l2"):
        value, w = smooth_max(z, mu, kind)
        in_simplex(w)
        fd = _fd_grad(lambda t: smooth_max(t, mu, kind)[0], z)
        assert_allclose(w, fd, atol=atol, rtol=0)
    _, w = smooth_max(z, mu, "entropy")
    assert_allclose(w, softmax(z / mu), rtol=1e-12, atol=1e-15)
    _, w = smooth_max(z, mu, "l2")
    assert_allclose(w, project_simplex(z / mu), atol=1e-10, rtol=0)
    # top-K: the weights are the gradient of h_{mu,K} with respect to the K scores
    zs = sorted_desc(z)
    K = max(1, zs.shape[0] // 2)
    _, w, _ = topk_smooth_max(zs[:K], mu)
    in_simplex(w)
    fd = _fd_grad(lambda t: topk_smooth_max(t, mu)[0], zs[:K])
    assert_allclose(w, fd, atol=atol, rtol=0)


# ---------------------------------------------------------------------------------------------
# Item 4: limits
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(z=vectors(), frac=st.floats(1e-6, 1.0))
def test_l2_exact_argmax_for_small_mu(z, frac):
    zs = sorted_desc(z)
    gap = zs[0] - zs[1] if z.shape[0] > 1 else 1.0
    assume(gap > 1e-6)
    mu = frac * gap  # mu <= z_(1) - z_(2): Prop. 3 with k = 1
    value, w = smooth_max(z, mu, "l2")
    expected = np.zeros_like(z)
    expected[np.argmax(z)] = 1.0
    assert_array_equal(w, expected)
    assert value == z.max()
    value_k, w_k, lin = topk_smooth_max(zs, mu)
    assert_array_equal(w_k, expected[np.argsort(-z, kind="stable")])
    assert value_k == lin == z.max()


@SETTINGS
@given(z=vectors(), n_ties=st.integers(1, 4))
def test_entropy_small_mu_uniform_on_argmax_set(z, n_ties):
    # put n_ties copies of the max, all other entries at least 1 below
    top = z.max() + 1.0
    z = np.concatenate([np.full(n_ties, top), z])
    value, w = smooth_max(z, 1e-3, "entropy")
    assert_allclose(w[:n_ties], 1.0 / n_ties, rtol=1e-12)
    assert_allclose(w[n_ties:], 0.0, atol=1e-300)
    assert top <= value <= top + 1e-3 * np.log(z.shape[0]) + TOL
    value0, w0 = smooth_max(z, 0.0, "entropy")  # mu == 0: hard max, first argmax
    assert value0 == top and w0[0] == 1.0 and w0.sum() == 1.0


@SETTINGS
@given(z=vectors())
def test_large_mu_uniform(z):
    m = z.shape[0]
    mu = 1e8
    for kind in ("entropy", "l2"):
        _, w = smooth_max(z, mu, kind)
        assert_allclose(w, 1.0 / m, atol=1e-6)
    zs = sorted_desc(z)
    for K in range(1, m + 1):
        _, w, _ = topk_smooth_max(zs[:K], mu)
        assert_allclose(w, 1.0 / K, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Item 5: sparsity, closed form, independent solvers
# ---------------------------------------------------------------------------------------------
def _prop3_bounds(zs, k):
    """Left and right side of eq. (8) for support size k (zs sorted non-increasingly)."""
    lower = np.sum(zs[:k] - zs[k - 1])
    nxt = zs[k] if k < zs.shape[0] else -np.inf
    upper = np.sum(zs[:k] - nxt)
    return lower, upper


@SETTINGS
@given(z=vectors(), mu=mus)
def test_sparsity_prop3(z, mu):
    zs = sorted_desc(z)
    m = z.shape[0]
    u = project_simplex(z / mu)
    k = int(np.count_nonzero(u))
    lower, upper = _prop3_bounds(zs, k)
    tol = 1e-9 * (1.0 + mu)
    assert lower < mu + tol
    assert mu <= upper + tol
    # independent k from (8): the largest k whose left-hand side is < mu
    k8 = max(j for j in range(1, m + 1) if _prop3_bounds(zs, j)[0] < mu)
    closed = np.maximum(0.0, (k8 * z - zs[:k8].sum()) / (k8 * mu) + 1.0 / k8)
    assert_allclose(u, closed, atol=1e-9, rtol=0)
    # eq. (9)-(10): u*_i = (z_i/mu + rho*)_+
    rho = 1.0 / k8 - zs[:k8].sum() / (k8 * mu)
    assert_allclose(u, np.maximum(z / mu + rho, 0.0), atol=1e-9, rtol=0)


def _bisection_projection(v):
    fin = v[np.isfinite(v)]
    lo, hi = fin.max() - 1.0, fin.max()  # sum(max(v - lo, 0)) >= 1 >= sum(max(v - hi, 0))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(fin - mid, 0.0).sum() > 1.0:
            lo = mid
        else:
            hi = mid
    return np.maximum(v - 0.5 * (lo + hi), 0.0)


@SETTINGS
@given(v=vectors_with_neginf)
def test_projection_matches_bisection(v):
    u = project_simplex(v)
    in_simplex(u)
    assert_allclose(u, _bisection_projection(v), atol=1e-10, rtol=0)
    assert np.all(u[v == -np.inf] == 0.0)


def test_projection_matches_slsqp():
    rng = np.random.default_rng(0)
    for _ in range(25):
        m = int(rng.integers(1, 8))
        v = rng.normal(scale=rng.choice([0.1, 1.0, 3.0]), size=m)
        res = minimize(
            lambda u: np.sum((u - v) ** 2),
            np.full(m, 1.0 / m),
            jac=lambda u: 2 * (u - v),
            method="SLSQP",
            bounds=[(0.0, None)] * m,
            constraints=[{"type": "eq", "fun": lambda u: u.sum() - 1.0,
                          "jac": lambda u: np.ones_like(u)}],
            options={"ftol": 1e-14, "maxiter": 500},
        )
        # SLSQP may end with "positive directional derivative" (status 8) at the optimum
        # when ftol is below what its line search resolves; the point is what is compared
        assert res.success or res.status == 8, res.message
        assert_allclose(project_simplex(v), res.x, atol=1e-6)


def test_projection_known_values():
    assert_array_equal(project_simplex([5.0]), [1.0])
    assert_array_equal(project_simplex([-np.inf, 2.0, -np.inf]), [0.0, 1.0, 0.0])
    assert_allclose(project_simplex([0.5, 0.5]), [0.5, 0.5])
    assert_allclose(project_simplex([1.0, 0.0, -1.0]), [1.0, 0.0, 0.0])
    assert_allclose(project_simplex([0.3, 0.2, -np.inf, -0.1]), [0.5, 0.4, 0.0, 0.1])
    # huge magnitudes: max-shift keeps the projection well defined
    assert_array_equal(project_simplex([1e300, -1e300]), [1.0, 0.0])
    assert_allclose(project_simplex([1e20, 1e20]), [0.5, 0.5])
    # exact zeros (not tiny negatives / denormals) off the support
    u = project_simplex([3.0, 2.5, 0.0, -1.0])
    assert u[2] == 0.0 and u[3] == 0.0 and not np.signbit(u[2:]).any()


# ---------------------------------------------------------------------------------------------
# Item 6: top-K
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(z=vectors(), mu=st.one_of(st.just(0.0), mus))
def test_topk_k1_is_max(z, mu):
    zs = sorted_desc(z)
    value, w, lin = topk_smooth_max(zs[:1], mu)
    assert value == lin == zs[0]
    assert_array_equal(w, [1.0])


@SETTINGS
@given(z=vectors(), mu=mus)
def test_topk_full_equals_l2(z, mu):
    order = np.argsort(-z, kind="stable")
    value, w = smooth_max(z, mu, "l2")
    value_k, w_k, _ = topk_smooth_max(z[order], mu)
    assert value_k == pytest.approx(value, abs=TOL)
    assert_allclose(w_k, w[order], atol=1e-12)


@SETTINGS
@given(z=vectors(min_size=2), data=st.data(), frac=st.floats(1e-6, 1.0))
def test_topk_prop4_exactness(z, data, frac):
    m = z.shape[0]
    K = data.draw(st.integers(1, m - 1))
    order = np.argsort(-z, kind="stable")
    zs = z[order]
    bound = np.sum(zs[:K] - zs[K])  # right-hand side of eq. (12)
    assume(bound > 1e-6)
    mu = frac * bound
    value, w = smooth_max(z, mu, "l2")
    value_k, w_k, _ = topk_smooth_max(zs[:K], mu)
    assert value_k == pytest.approx(value, abs=TOL)
    full_from_topk = np.zeros(m)
    full_from_topk[order[:K]] = w_k
    assert_allclose(full_from_topk, w, atol=1e-10)


@SETTINGS
@given(z=vectors(), mu=mus)
def test_topk_monotone_in_k(z, mu):
    zs = sorted_desc(z)
    values = [topk_smooth_max(zs[:K], mu)[0] for K in range(1, z.shape[0] + 1)]
    assert np.all(np.diff(values) >= -TOL)


@SETTINGS
@given(z=vectors(), n_pad=st.integers(1, 4), mu=st.one_of(st.just(0.0), mus))
def test_topk_neginf_padding(z, n_pad, mu):
    zs = sorted_desc(z)
    padded = np.concatenate([zs, np.full(n_pad, -np.inf)])
    v0, w0, l0 = topk_smooth_max(zs, mu)
    v1, w1, l1 = topk_smooth_max(padded, mu)
    assert v1 == pytest.approx(v0, abs=TOL) and l1 == pytest.approx(l0, abs=TOL)
    assert_allclose(w1[: zs.shape[0]], w0, atol=1e-14)
    assert np.all(w1[zs.shape[0]:] == 0.0)


@SETTINGS
@given(z=vectors_with_neginf, mu=mus)
def test_smooth_max_neginf_entries(z, mu):
    fin = np.isfinite(z)
    for kind in (None, "entropy", "l2"):
        v_all, w_all = smooth_max(z, mu, kind)
        v_fin, w_fin = smooth_max(z[fin], mu, kind)
        assert np.isfinite(v_all)
        assert v_all == pytest.approx(v_fin, abs=TOL)
        assert np.all(w_all[~fin] == 0.0)
        assert_allclose(w_all[fin], w_fin, atol=1e-14)


# ---------------------------------------------------------------------------------------------
# Item 7: shift invariance
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(z=vectors(), mu=mus, c=st.floats(-100.0, 100.0))
def test_shift_invariance(z, mu, c):
    tol = 1e-9 * (1.0 + abs(c))
    zs = sorted_desc(z)
    # the hard-max one-hot is discontinuous: rounding in z + c may flip a near-tie
    clear_max = z.shape[0] == 1 or zs[0] - zs[1] > 1e-6
    for kind in (None, "entropy", "l2"):
        v0, w0 = smooth_max(z, mu, kind)
        v1, w1 = smooth_max(z + c, mu, kind)
        assert v1 == pytest.approx(v0 + c, abs=tol)
        if kind is not None or clear_max:
            assert_allclose(w1, w0, atol=1e-9)
    v0, w0, l0 = topk_smooth_max(zs, mu)
    v1, w1, l1 = topk_smooth_max(zs + c, mu)
    assert v1 == pytest.approx(v0 + c, abs=tol)
    assert l1 == pytest.approx(l0 + c, abs=tol)
    assert_allclose(w1, w0, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# A tiny enumerated chain model for items 8 and 9 (linear case, eq. (14))
# ---------------------------------------------------------------------------------------------
class TinyChain:
    """Chain with p positions, S tags, dense unary features x_v in R^D (Ex. 5, no start/stop).

    ``w = (W_unary in R^{D x S}, W_pair in R^{S x S})`` raveled. ``Phi`` enumerates Phi(x, y) for
    all S**p outputs; ``psi(y; w) = <Phi(y) - Phi(y_true), w> + Hamming(y_true, y)`` (eq. (4)).
    """

    def __init__(self, rng, p=3, S=3, D=2):
        self.p, self.S, self.D = p, S, D
        self.x = rng.normal(size=(p, D))
        self.y_true = rng.integers(0, S, size=p)
        self.Y = np.array(list(itertools.product(range(S), repeat=p)))
        self.Phi = np.array([self.joint_feature(y) for y in self.Y])
        self.loss = (self.Y != self.y_true).sum(axis=1).astype(float)
        self.A = self.Phi - self.joint_feature(self.y_true)  # rows: grad_w psi(y; w)

    @property
    def d(self):
        return self.D * self.S + self.S * self.S

    def joint_feature(self, y):
        un = np.zeros((self.D, self.S))
        pw = np.zeros((self.S, self.S))
        for v in range(self.p):
            un[:, y[v]] += self.x[v]
            if v + 1 < self.p:
                pw[y[v], y[v + 1]] += 1.0
        return np.concatenate([un.ravel(), pw.ravel()])

    def psi(self, w):
        return self.A @ w + self.loss

    def log_partition_forward(self, w, mu):
        """log sum_y exp(psi(y; w)/mu) by the forward recursion (no enumeration)."""
        Wu = w[: self.D * self.S].reshape(self.D, self.S)
        Wp = w[self.D * self.S:].reshape(self.S, self.S)
        unary = self.x @ Wu + (np.arange(self.S)[None, :] != self.y_true[:, None])
        const = self.joint_feature(self.y_true) @ w
        alpha = unary[0] / mu
        for v in range(1, self.p):
            alpha = logsumexp(alpha[:, None] + Wp / mu, axis=0) + unary[v] / mu
        return logsumexp(alpha) - const / mu


# ---------------------------------------------------------------------------------------------
# Item 8: Prop. 9 -- entropy smoothing = mu * log-partition; gradient = E_P[grad psi]
# ---------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(seed=seeds, mu=st.floats(0.1, 5.0))
def test_prop9_entropy_is_log_partition(seed, mu):
    rng = np.random.default_rng(seed)
    model = TinyChain(rng)
    w = rng.normal(size=model.d)

    def f(w_):
        return smooth_max(model.psi(w_), mu, "entropy")[0]

    value, P = smooth_max(model.psi(w), mu, "entropy")
    assert value == pytest.approx(mu * logsumexp(model.psi(w) / mu), rel=1e-12, abs=1e-12)
    assert value == pytest.approx(mu * model.log_partition_forward(w, mu), rel=1e-10, abs=1e-10)
    # Lemma 7(ii): grad f_{-mu H}(w) = E_{y~P}[Phi(y)] - Phi(y_true)
    grad = model.Phi.T @ P - model.joint_feature(model.y_true)
    fd = np.array([(f(w + 1e-6 * e) - f(w - 1e-6 * e)) / 2e-6 for e in np.eye(model.d)])
    assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Item 9: smoothness constant A/mu + lambda (Lemma 40, Remark 28)
# ---------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(seed=seeds, mu=st.floats(0.05, 5.0), lam=st.floats(0.0, 1.0),
       scale=st.sampled_from([1e-3, 1e-1, 1.0, 10.0]))
def test_smoothness_constant(seed, mu, lam, scale):
    rng = np.random.default_rng(seed)
    models = [TinyChain(rng, p=int(rng.integers(2, 4)), S=2) for _ in range(3)]
    d = models[0].d

    def grad_F(w, kind):
        g = lam * w
        for mdl in models:
            _, u = smooth_max(mdl.psi(w), mu, kind)
            g = g + mdl.A.T @ u / len(models)
        return g

    A_entropy = max(np.max(np.sum(mdl.A ** 2, axis=1)) for mdl in models)  # ||A||_{2,1}^2
    A_l2 = max(np.linalg.norm(mdl.A, 2) ** 2 for mdl in models)  # ||A||_{2,2}^2
    assert A_l2 >= A_entropy - 1e-9
    for _ in range(5):
        w1 = rng.normal(size=d) * 3
        w2 = w1 + scale * rng.normal(size=d)
        dist = np.linalg.norm(w1 - w2)
        for kind, A in (("entropy", A_entropy), ("l2", A_l2)):
            lhs = np.linalg.norm(grad_F(w1, kind) - grad_F(w2, kind))
            assert lhs <= (A / mu + lam) * dist * (1 + 1e-9) + 1e-12


# ---------------------------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [[], [np.nan], [1.0, np.nan], [1.0, np.inf], [-np.inf], [-np.inf, -np.inf], [[1.0, 2.0]]],
)
def test_invalid_vectors_raise(bad):
    with pytest.raises(ValueError):
        project_simplex(bad)
    for kind in (None, "entropy", "l2"):
        with pytest.raises(ValueError):
            smooth_max(bad, 1.0, kind)
    with pytest.raises(ValueError):
        topk_smooth_max(bad, 1.0)


@pytest.mark.parametrize("mu", [-1.0, np.nan, np.inf, "1", None])
def test_invalid_mu_raises(mu):
    with pytest.raises(ValueError):
        smooth_max([1.0, 2.0], mu, "l2")
    with pytest.raises(ValueError):
        topk_smooth_max([2.0, 1.0], mu)


def test_invalid_kind_raises():
    with pytest.raises(ValueError):
        smooth_max([1.0, 2.0], 1.0, "l1")


def test_k1_and_hard_max():
    for kind in (None, "entropy", "l2"):
        for mu in (0.0, 0.5, 1e6):
            v, w = smooth_max([3.5], mu, kind)
            assert v == 3.5
            assert_array_equal(w, [1.0])
    v, w = smooth_max([1.0, 4.0, 4.0, 2.0], 0.0, "l2")  # first argmax under ties
    assert v == 4.0
    assert_array_equal(w, [0.0, 1.0, 0.0, 0.0])
    v, w = smooth_max([1.0, 4.0, 4.0, 2.0], 3.0, None)
    assert_array_equal(w, [0.0, 1.0, 0.0, 0.0])
    v, w, lin = topk_smooth_max([4.0, 4.0, -np.inf], 0.0)
    assert v == lin == 4.0
    assert_array_equal(w, [1.0, 0.0, 0.0])
    # ties share the weight equally for mu > 0
    _, w = smooth_max([4.0, 4.0, 1.0], 1e-3, "l2")
    assert_array_equal(w, [0.5, 0.5, 0.0])


def test_no_overflow_small_mu():
    z = np.array([1000.0, 999.0, -1000.0])
    v, w = smooth_max(z, 1e-4, "entropy")
    assert v == pytest.approx(1000.0) and np.all(np.isfinite(w))
    v, w = smooth_max(z, 1e-300, "l2")
    assert v == 1000.0
    assert_array_equal(w, [1.0, 0.0, 0.0])


# ---------------------------------------------------------------------------------------------
# numba kernels agree with the numpy wrappers
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(v=vectors_with_neginf)
def test_kernel_projection_matches_wrapper(v):
    u = project_simplex(v)
    u_nb = ksimplex.project_simplex(v)
    assert_allclose(u_nb, u, rtol=1e-12, atol=1e-15)
    assert_array_equal(u_nb == 0.0, u == 0.0)
    out = np.empty_like(v)
    work = np.empty(v.shape[0] + 3)
    k = ksimplex.project_simplex_into(v, out, work)
    assert k == np.count_nonzero(u)
    assert_array_equal(out, u_nb)
    alias = v.copy()  # out may alias v
    ksimplex.project_simplex_into(alias, alias, work)
    assert_array_equal(alias, u_nb)


@SETTINGS
@given(z=vectors_with_neginf, mu=st.one_of(st.just(0.0), mus))
def test_kernel_topk_matches_wrapper(z, mu):
    zs = sorted_desc(z)
    value, w, lin = topk_smooth_max(zs, mu)
    value_nb, w_nb, lin_nb = ksimplex.topk_smooth_max(zs, mu)
    assert value_nb == pytest.approx(value, rel=1e-12, abs=1e-12)
    assert lin_nb == pytest.approx(lin, rel=1e-12, abs=1e-12)
    assert_allclose(w_nb, w, rtol=1e-12, atol=1e-15)
    out = np.empty_like(zs)
    work = np.empty_like(zs)
    value_into, lin_into = ksimplex.topk_weights_into(zs, mu, out, work)
    assert value_into == value_nb and lin_into == lin_nb
    assert_array_equal(out, w_nb)
    # the same kernel on the full (unsorted) vector is the l2^2 smoother
    v_l2, w_l2 = smooth_max(z, mu, "l2")
    v_nb, w_full, _ = ksimplex.topk_smooth_max(z, mu)
    assert v_nb == pytest.approx(v_l2, rel=1e-12, abs=1e-12)
    assert_allclose(w_full, w_l2, rtol=1e-12, atol=1e-15)


@SETTINGS
@given(z=vectors_with_neginf, mu=st.one_of(st.just(0.0), mus))
def test_kernel_entropy_matches_wrapper(z, mu):
    value, w = smooth_max(z, mu, "entropy")
    out = np.empty_like(z)
    value_nb = ksimplex.entropy_smooth_max_into(z, mu, out)
    assert value_nb == pytest.approx(value, rel=1e-12, abs=1e-12)
    assert_allclose(out, w, rtol=1e-12, atol=1e-15)


def test_module_exports():
    assert set(smoothing.__all__) == {
        "project_simplex", "smooth_max", "topk_smooth_max", "smoothing_bound"
    }
