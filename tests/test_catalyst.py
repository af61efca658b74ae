"""Catalyst / Casimir outer loop: alpha-beta sequences, schedules, stopping rule, convergence
(spec 000 §3 and §7 items 16-20)."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from sklearn_ssvm.solvers.catalyst import (
    GOLDEN_ALPHA0, catalyst, delta_schedule, extrapolation_beta, initial_alpha,
    kappa_from_smoothness, kappa_schedule, next_alpha, smoothing_schedule, stopping_test)


def alphas(alpha0, kappas, lam):
    """``alpha_0..alpha_{K-1}`` from ``kappas = [kappa_1, ..., kappa_K]`` by (27)."""
    out = [alpha0]
    for kappa, kappa_next in zip(kappas[:-1], kappas[1:]):
        out.append(next_alpha(out[-1], kappa, kappa_next, lam))
    return np.array(out)


def ridge(rng, n=40, d=6, lam=0.05):
    """Ridge least squares ``F(w) = ||A w - b||^2 / (2n) + lam/2 ||w||^2``: F, gradient, w*.

    Columns are scaled over two decades so that the loss is ill-conditioned relative to lam."""
    A, b = rng.normal(size=(n, d)) * np.logspace(0, -2, d), rng.normal(size=n)
    H, g = A.T @ A / n, A.T @ b / n

    def F(w):
        return 0.5 * np.sum((A @ w - b) ** 2) / n + 0.5 * lam * w @ w

    def grad(w):
        return H @ w - g + lam * w

    return F, grad, H, g, np.linalg.solve(H + lam * np.eye(d), g)


# -- item 16: alpha / beta sequences ---------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_lemma21_random_nondecreasing_kappa(seed):
    """0 < alpha_k <= alpha_{k-1} < 1 and alpha_k^2 >= lam / (lam + kappa_{k+1}) (Lemma 21)."""
    rng = np.random.default_rng(seed)
    for lam in (0.0, 10.0 ** rng.uniform(-4, 1)):
        kappas = np.cumsum(rng.exponential(size=300) * (rng.uniform(size=300) < 0.3)) + 0.5
        floor = math.sqrt(lam / (lam + kappas[0]))
        a = alphas(rng.uniform(floor, 1.0), kappas, lam)
        assert np.all(a > 0) and np.all(a < 1) and np.all(np.diff(a) <= 1e-15)
        assert np.all(a[1:] ** 2 >= lam / (lam + kappas[1:]) * (1 - 1e-12))


@pytest.mark.parametrize("lam, kappa", [(0.1, 0.1), (1e-3, 0.5), (2.0, 0.01)])
def test_constant_kappa_is_a_fixed_point(lam, kappa):
    """alpha_0 = sqrt(q) gives alpha_k = sqrt(q) and beta_k = (1 - sqrt q)/(1 + sqrt q)."""
    root_q = math.sqrt(lam / (lam + kappa))
    a = alphas(initial_alpha(lam, kappa), [kappa] * 50, lam)
    np.testing.assert_allclose(a, root_q, rtol=1e-13)
    beta = extrapolation_beta(a[-2], a[-1], kappa, kappa, lam)
    assert beta == pytest.approx((1 - root_q) / (1 + root_q), rel=1e-12)
    if lam == kappa:
        assert root_q == pytest.approx(0.70711, abs=5e-6)
        assert beta == pytest.approx(0.17157, abs=5e-6)


def test_lam_zero_constant_kappa_lemma52():
    """lam = 0, alpha_0 = (sqrt5 - 1)/2: sqrt2/(k+3) <= alpha_k <= 2/(k+3) (Lemma 52)."""
    assert initial_alpha(0.0, 3.0) == GOLDEN_ALPHA0
    a = alphas(GOLDEN_ALPHA0, [3.0] * 1001, 0.0)
    k = np.arange(a.size)
    assert np.all(math.sqrt(2) / (k + 3) <= a) and np.all(a <= 2 / (k + 3))
    assert a[1] == pytest.approx(0.45589, abs=5e-6)
    assert a[2] == pytest.approx(0.36366, abs=5e-6)


def test_lam_zero_linear_kappa_lemma53():
    """kappa_k = kappa k, lam = 0: (1 - 1/sqrt2)/(k+1) <= prod_{i<=k}(1 - alpha_i) <= 1/(k+2)."""
    kappas = [kappa_schedule("linear", 0.7, k) for k in range(1, 2002)]
    A = np.cumprod(1 - alphas(GOLDEN_ALPHA0, kappas, 0.0))
    k = np.arange(A.size)
    assert A.size == 2001
    assert np.all((1 - 1 / math.sqrt(2)) / (k + 1) <= A) and np.all(A <= 1 / (k + 2))


def test_closed_form_solves_27():
    """(74) is the root in (0, 1) of (27), to machine precision, for both signs of b."""
    rng = np.random.default_rng(0)
    for _ in range(2000):
        lam = 0.0 if rng.uniform() < 0.2 else 10.0 ** rng.uniform(-6, 2)
        kappa = 10.0 ** rng.uniform(-4, 2)
        kappa_next = kappa * (1 + rng.exponential())
        alpha_prev = rng.uniform(math.sqrt(lam / (lam + kappa)), 1.0)
        a = next_alpha(alpha_prev, kappa, kappa_next, lam)
        lhs = a * a * (kappa_next + lam)
        rhs = (1 - a) * alpha_prev ** 2 * (kappa + lam) + a * lam
        assert 0 < a < 1
        assert abs(lhs - rhs) <= 1e-15 * max(lhs, alpha_prev ** 2 * (kappa + lam))


# -- schedules ---------------------------------------------------------------------------------

def test_schedules():
    q = 0.5  # the adapt variant, kappa = lam
    expo = [smoothing_schedule("expo", 2.0, k, q) for k in range(1, 6)]
    np.testing.assert_allclose(np.array(expo[1:]) / expo[:-1], 0.80402, atol=5e-6)
    assert expo[0] == pytest.approx(2.0 * (1 - math.sqrt(q) / 2) ** 0.5)
    assert smoothing_schedule("expo", 2.0, 7, 0.0) == 2.0
    assert smoothing_schedule("const", 2.0, 7, q) == 2.0
    assert smoothing_schedule("linear", 2.0, 4, q) == 0.5
    assert kappa_schedule("const", 0.3, 5) == 0.3
    assert kappa_schedule("linear", 0.3, 5) == pytest.approx(1.5)
    assert delta_schedule(0.2, 0.2, 9) == pytest.approx(0.5469, abs=5e-5)
    assert delta_schedule(0.0, 0.2, 3) == 1 / 16
    assert kappa_from_smoothness(100.0, 0.01, 50) == pytest.approx(2.0 - 0.01)
    assert kappa_from_smoothness(100.0, 0.5, 50) == 0.5
    assert kappa_from_smoothness(100.0, 0.0, 50) == 2.0
    with pytest.raises(ValueError, match="mu_schedule"):
        smoothing_schedule("cosine", 1.0, 1, q)
    with pytest.raises(ValueError, match="kappa_schedule"):
        kappa_schedule("expo", 1.0, 1)


def test_smoothing_never_underflows():
    """The "expo" schedule underflowed to 0 after 4,000 outer iterations and the smoothed
    oracles' ``z / mu`` overflowed into non-finite coefficients: the schedules stop at 1e-12
    of ``mu0``."""
    for k in (100, 4000, 10 ** 6):
        mu = smoothing_schedule("expo", 0.3, k, 0.5)
        assert mu >= 0.3e-12 and mu == max(0.3 * (1 - math.sqrt(0.5) / 2) ** (k / 2), 0.3e-12)
    assert smoothing_schedule("linear", 0.3, 10 ** 15, 0.5) == pytest.approx(0.3e-12)


# -- item 17: Claim 23 -------------------------------------------------------------------------

@pytest.mark.parametrize("lam, kind", [(0.3, "const"), (0.3, "linear"), (0.0, "linear")])
def test_claim23_z_is_a_combination_of_v_and_w(lam, kind):
    """z_k = eta_k v_k + (1 - eta_k) w_k (41) with v, gamma, eta of (32)-(36), any w_k."""
    rng = np.random.default_rng(1)
    kappa, K = 0.8, 12
    w0 = rng.normal(size=4)
    ws, zs = [w0], [w0]

    def record(k, w, z, mu, kappa_k):
        ws.append(w)
        zs.append(z)

    catalyst(lambda z, w_start, mu, kappa_k, k: rng.normal(size=4), w0, lam, kappa=kappa,
             kappa_schedule=kind, max_iter=K, callback=record)
    kappas = np.array([kappa_schedule(kind, kappa, k) for k in range(1, K + 2)])
    a = alphas(initial_alpha(lam, kappa), kappas, lam)  # alpha_0..alpha_K
    gamma = np.empty(K + 2)
    gamma[0] = ((kappas[0] + lam) * a[0] ** 2 - lam * a[0]) / (1 - a[0])  # (34)
    gamma[1:] = (kappas + lam) * a ** 2  # (35): gamma_k = (kappa_k + lam) alpha_{k-1}^2
    for k in range(K + 1):
        v = ws[0] if k == 0 else ws[k - 1] + (ws[k] - ws[k - 1]) / a[k - 1]  # (32)-(33)
        eta = a[k] * gamma[k] / (gamma[k + 1] + a[k] * gamma[k])  # (36)
        np.testing.assert_allclose(zs[k], eta * v + (1 - eta) * ws[k], rtol=1e-11, atol=1e-12)


# -- item 18: stopping rule --------------------------------------------------------------------

def test_gradient_test_implies_26_on_a_quadratic():
    """Every w passing ||grad||^2 <= (lam+kappa) delta kappa ||w - z||^2 meets (26)."""
    rng = np.random.default_rng(2)
    d, lam, kappa = 8, 0.05, 0.4
    B = rng.normal(size=(d, d))
    H = B @ B.T / d + lam * np.eye(d)  # Hessian of F, lam included
    g = rng.normal(size=d)
    passed = 0
    for _ in range(3000):
        z = rng.normal(size=d)
        w_hat = np.linalg.solve(H + kappa * np.eye(d), g + kappa * z)  # exact inner minimiser
        w = w_hat + 10.0 ** rng.uniform(-3, 0.5) * rng.normal(size=d)
        delta = rng.uniform(0.05, 0.95)
        gap = 0.5 * (w - w_hat) @ (H + kappa * np.eye(d)) @ (w - w_hat)
        grad = (H + kappa * np.eye(d)) @ w - g - kappa * z
        if stopping_test(grad @ grad, lam, kappa, delta, np.sum((w - z) ** 2)):
            passed += 1
            assert gap <= 0.5 * delta * kappa * np.sum((w - z) ** 2)
    assert passed > 100


# -- item 19: convergence ----------------------------------------------------------------------

def test_exact_inner_solves_reach_the_logistic_optimum():
    """mu = None and inner problems solved by L-BFGS: F(w_K) reaches F* of plain L-BFGS."""
    rng = np.random.default_rng(3)
    n, d, lam = 60, 5, 0.02
    X = rng.normal(size=(n, d))
    y = np.sign(X @ rng.normal(size=d) + rng.normal(size=n))

    def F(w):
        return np.mean(np.logaddexp(0, -y * (X @ w))) + 0.5 * lam * w @ w

    def grad(w):
        return -X.T @ (y / (1 + np.exp(y * (X @ w)))) / n + lam * w

    def inner(z, w_start, mu, kappa, k):
        assert mu is None
        return minimize(lambda w: F(w) + 0.5 * kappa * np.sum((w - z) ** 2), w_start,
                        jac=lambda w: grad(w) + kappa * (w - z), method="L-BFGS-B",
                        options={"gtol": 1e-12, "ftol": 1e-16}).x

    F_star = minimize(F, np.zeros(d), jac=grad, method="L-BFGS-B",
                      options={"gtol": 1e-12, "ftol": 1e-16}).fun
    w, n_iter = catalyst(inner, np.zeros(d), lam, kappa=0.25, max_iter=60)
    assert n_iter == 60
    assert F(w) - F_star <= 1e-10


def test_fixed_mu_reaches_the_smoothed_minimiser():
    """Huber-smoothed least absolute deviations, constant mu: w_K minimises F_mu."""
    rng = np.random.default_rng(4)
    n, d, lam, mu = 50, 4, 0.05, 0.3
    A, b = rng.normal(size=(n, d)), rng.normal(size=n)

    def F_mu(w, mu_k):
        r = A @ w - b
        huber = np.where(np.abs(r) <= mu_k, r * r / (2 * mu_k), np.abs(r) - mu_k / 2)
        return np.mean(huber) + 0.5 * lam * w @ w

    def grad_mu(w, mu_k):
        return A.T @ np.clip((A @ w - b) / mu_k, -1, 1) / n + lam * w

    def inner(z, w_start, mu_k, kappa, k):
        assert mu_k == mu
        return minimize(lambda w: F_mu(w, mu_k) + 0.5 * kappa * np.sum((w - z) ** 2), w_start,
                        jac=lambda w: grad_mu(w, mu_k) + kappa * (w - z), method="L-BFGS-B",
                        options={"gtol": 1e-12, "ftol": 1e-16}).x

    w_mu = minimize(F_mu, np.zeros(d), args=(mu,), jac=grad_mu, method="L-BFGS-B",
                    options={"gtol": 1e-12, "ftol": 1e-16}).x
    w, _ = catalyst(inner, np.zeros(d), lam, kappa=0.5, mu0=mu, max_iter=60)
    np.testing.assert_allclose(w, w_mu, atol=1e-6)


@pytest.mark.parametrize("warm_start", ["prox-center", "extrapolation", "prev-iterate"])
def test_cor17_bound_with_inner_problems_meeting_26(warm_start):
    """Inner gradient descent stopped by the test of §3.2 meets (26), so Cor. 17 (mu = 0) holds:
    F(w_k) - F* <= 2 (1 - sqrt(q)/2)^k (F(w0) - F*)."""
    rng = np.random.default_rng(5)
    lam, kappa = 0.01, 0.1
    F, grad, H, g, w_star = ridge(rng, lam=lam)
    step = 1 / (np.linalg.eigvalsh(H)[-1] + lam + kappa)
    q = lam / (lam + kappa)

    def inner(z, w, mu, kappa_k, k):
        delta = delta_schedule(lam, kappa_k, k)
        for _ in range(10000):
            gk = grad(w) + kappa_k * (w - z)
            if stopping_test(gk @ gk, lam, kappa_k, delta, np.sum((w - z) ** 2)):
                return w
            w = w - step * gk
        raise AssertionError("inner gradient descent did not meet the stopping test")

    w0 = 10 * rng.normal(size=w_star.size)
    gaps = []
    catalyst(inner, w0, lam, kappa=kappa, warm_start=warm_start, max_iter=40,
             callback=lambda k, w, z, mu, kappa_k: gaps.append(F(w) - F(w_star)))
    k = np.arange(1, 41)
    assert np.all(np.array(gaps) <= 2 * (1 - math.sqrt(q) / 2) ** k * (F(w0) - F(w_star)))
    assert gaps[-1] < 1e-5 * gaps[0]


# -- item 20 and the loop's bookkeeping ---------------------------------------------------------

def test_one_iteration_with_vanishing_kappa_is_one_inner_epoch():
    """K = 1, prox-center, kappa -> 0: w_1 -> one SVRG epoch on F itself, started at w_0."""
    rng = np.random.default_rng(6)
    n, d, lam = 30, 5, 0.1
    A, b = rng.normal(size=(n, d)), rng.normal(size=n)
    w0 = rng.normal(size=d)

    def svrg_epoch(w, kappa, z, seed=7):
        """n SVRG steps on (A_i w - b_i)^2 / 2 + lam/2 ||w||^2 + kappa/2 ||w - z||^2."""
        draw = np.random.default_rng(seed)
        snapshot = w.copy()
        full = A.T @ (A @ snapshot - b) / n
        for i in draw.integers(n, size=n):
            corr = A[i] * (A[i] @ (w - snapshot)) + full
            w = w - 0.02 * (corr + lam * w + kappa * (w - z))
        return w

    def inner(z, w_start, mu, kappa, k):
        assert k == 1 and mu is None
        np.testing.assert_array_equal(z, w0)
        np.testing.assert_array_equal(w_start, w0)
        return svrg_epoch(w_start, kappa, z)

    target = svrg_epoch(w0, 0.0, w0)
    errors = [np.linalg.norm(catalyst(inner, w0, lam, kappa=kappa, max_iter=1)[0] - target)
              for kappa in (1e-2, 1e-4, 1e-6)]
    # the gap shrinks like kappa: the limit is the epoch on F
    assert errors[1] < 2e-2 * errors[0] and errors[2] < 2e-4 * errors[0]


def test_warm_starts_schedules_and_early_stop():
    """w_start of §3.3, mu_k / kappa_k passed as scheduled, callback stops the loop."""
    rng = np.random.default_rng(8)
    lam, kappa, mu = 0.2, 0.5, 3.0
    w0 = rng.normal(size=3)
    for warm_start in ("prox-center", "extrapolation", "prev-iterate"):
        calls, ws, zs = [], [w0], [w0]

        def inner(z, w_start, mu_k, kappa_k, k):
            calls.append((z.copy(), w_start.copy(), mu_k, kappa_k, k))
            w_start += rng.normal(size=3)  # the solver may overwrite its start
            return w_start

        def record(k, w, z, mu_k, kappa_k):
            ws.append(w)
            zs.append(z)
            return k == 5

        w, n_iter = catalyst(inner, w0, lam, kappa=kappa, kappa_schedule="linear", mu0=mu,
                             mu_schedule="linear", warm_start=warm_start, max_iter=9,
                             callback=record)
        assert n_iter == 5 and len(calls) == 5
        np.testing.assert_array_equal(w, ws[-1])
        for k, (z, w_start, mu_k, kappa_k, k_seen) in enumerate(calls, start=1):
            assert (k_seen, mu_k, kappa_k) == (k, mu / k, kappa * k)
            np.testing.assert_array_equal(z, zs[k - 1])
            expected = {"prox-center": zs[k - 1], "prev-iterate": ws[k - 1],
                        "extrapolation": ws[k - 1] + kappa_k / (kappa_k + lam)
                        * (zs[k - 1] - zs[max(k - 2, 0)])}[warm_start]
            np.testing.assert_allclose(w_start, expected, rtol=1e-14, atol=1e-14)


def test_invalid_arguments():
    def inner(z, w_start, mu, kappa, k):
        raise AssertionError("no inner call on invalid arguments")

    w0 = np.zeros(2)
    for kwargs, match in [({"warm_start": "restart"}, "warm_start"),
                          ({"kappa": 0.0}, "kappa"),
                          ({"kappa_schedule": "expo"}, "kappa_schedule"),
                          ({"mu_schedule": "cosine"}, "mu_schedule"),
                          ({"alpha0": 1.0}, "alpha0"),
                          ({"alpha0": 0.1}, "alpha0")]:  # below sqrt(q) = 0.7071
        with pytest.raises(ValueError, match=match):
            catalyst(inner, w0, 0.5, **{"kappa": 0.5, "max_iter": 3, **kwargs})
    w, n_iter = catalyst(inner, w0, 0.5, kappa=0.5, max_iter=0)
    assert n_iter == 0 and np.array_equal(w, w0)
