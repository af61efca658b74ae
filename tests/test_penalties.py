"""The penalty axis: the elastic net's value, prox, conjugate and primal-dual map."""
import numpy as np
import pytest

from sklearn_ssvm._kernels.penalty import soft_line_search
from sklearn_ssvm.penalties import (ElasticNet, Penalty, _Scaled, as_penalty, check_l1_ratio,
                                   soft_threshold)


def penalties(rng, d=7):
    """The plain elastic net, with a proximal term, and pure L2."""
    center = rng.normal(size=d)
    enet = ElasticNet.from_alpha(0.3, 0.6)
    return [enet, enet.plus_prox(0.5, center), ElasticNet.from_alpha(2.0, 0.0),
            ElasticNet.from_alpha(0.1, 0.999)]


def test_prox_satisfies_its_optimality_condition():
    """x = prox(v, s) iff 0 in (x - v)/s + c x - p + l1 d|x|, coordinate by coordinate."""
    rng = np.random.default_rng(0)
    for pen in penalties(rng):
        for step in (0.01, 1.0, 30.0):
            v = rng.normal(size=7) * 3
            x = pen.prox(v, step)
            g = (x - v) / step + pen.c * x - pen.linear(x)
            nz = x != 0
            np.testing.assert_allclose(g[nz] + pen.l1 * np.sign(x[nz]), 0, atol=1e-12)
            assert np.all(np.abs(g[~nz]) <= pen.l1 + 1e-12)


def test_conjugate_and_dual_map_obey_fenchel_young():
    """r*(u) = <u, w(u)> - r(w(u)), and r*(u) >= <u, w'> - r(w') for any w'."""
    rng = np.random.default_rng(1)
    for pen in penalties(rng):
        for _ in range(20):
            u = rng.normal(size=7) * rng.choice([0.1, 1, 5])
            w = pen.dual_map(u)
            assert pen.conjugate(u) == pytest.approx(u @ w - pen.value(w), rel=1e-12, abs=1e-12)
            for _ in range(10):
                other = w + rng.normal(size=7) * 0.3
                assert pen.conjugate(u) >= u @ other - pen.value(other) - 1e-12 * (1 + abs(pen.conjugate(u)))


def test_model_min_is_the_argmin_of_the_model():
    rng = np.random.default_rng(2)
    for pen in penalties(rng):
        q, c = rng.normal(size=7) * 2, 0.7
        x = pen.model_min(q, c)
        g = c * x - q + pen.c * x - pen.linear(x)
        nz = x != 0
        np.testing.assert_allclose(g[nz] + pen.l1 * np.sign(x[nz]), 0, atol=1e-12)
        assert np.all(np.abs(g[~nz]) <= pen.l1 + 1e-12)
        assert pen.subgradient_distance(x, c * x - q) <= 1e-12


def test_l2_is_the_elastic_net_at_l1_ratio_zero_to_the_bit():
    rng = np.random.default_rng(3)
    u, alpha = rng.normal(size=9), 0.37
    pen = ElasticNet.from_alpha(alpha)
    assert pen.l1 == 0.0 and as_penalty(alpha) == pen
    assert soft_threshold(u, 0.0) is u
    assert np.array_equal(pen.dual_map(u), u / alpha)
    assert pen.conjugate(u) == u @ u / (2 * alpha)
    assert pen.value(u) == 0.5 * alpha * u @ u
    assert np.array_equal(pen.model_min(u, 0.5), u / (0.5 + alpha))


@pytest.mark.parametrize("bad", [1.0, 1, -0.1, "a", None, True, np.nan])
def test_l1_ratio_outside_zero_one_is_refused(bad):
    with pytest.raises(ValueError, match="l1_ratio"):
        check_l1_ratio(bad)


def test_soft_line_search_minimises_the_piecewise_quadratic():
    """Against a fine grid: f(gamma*) is the minimum of f on [0, gamma_max]."""
    rng = np.random.default_rng(4)
    for trial in range(300):
        n = int(rng.integers(1, 10))
        b = rng.normal(size=n) * rng.choice([0.1, 1.0, 3.0])
        d = rng.normal(size=n)
        d[rng.random(n) < 0.2] = 0.0
        t, c = rng.choice([0.0, 0.3, 1.0]), rng.choice([0.5, 2.0])
        if trial % 5 == 0:
            b[0] = t  # on a kink at the start
        rate, gmax = rng.normal() * 2, rng.choice([0.5, 1.0, 10.0])

        def f(g):
            return -rate * g + np.sum(np.maximum(np.abs(b + g * d) - t, 0) ** 2) / (2 * c)
        g = soft_line_search(rate, b, d, n, t, c, gmax, np.empty(2 * n),
                             np.empty(2 * n, np.int64))
        assert 0.0 <= g <= gmax
        assert f(g) <= min(f(x) for x in np.linspace(0, gmax, 4001)) + 1e-12


def test_soft_line_search_with_a_tiny_threshold_is_the_l2_step():
    """Kinks at +-1e-300 are where ``base + gamma d`` rounds to 0: the entering side comes
    from the edge, so the result is the L2 step."""
    b, d = np.array([1.0, -2.0, 0.5]), np.array([-3.0, 2.0, -1.0])
    args = (np.empty(6), np.empty(6, np.int64))
    tiny = soft_line_search(1.0, b, d, 3, 1e-300, 1.0, 10.0, *args)
    assert tiny == pytest.approx(soft_line_search(1.0, b, d, 3, 0.0, 1.0, 10.0, *args))


def test_scaled_maps_are_those_of_the_scaled_penalty():
    """``_Scaled(r, alpha)``'s maps, through ``r``'s, equal the maps of the elastic net that
    ``alpha`` times ``r`` is (``ElasticNet.scaled``), and it implements what ``r`` does."""
    rng = np.random.default_rng(5)
    for pen in penalties(rng):
        for alpha in (0.05, 1.0, 7.0):
            generic, direct = _Scaled(pen, alpha), pen.scaled(alpha)
            assert isinstance(direct, ElasticNet) and generic.methods() == pen.methods()
            v, q, z = rng.normal(size=(3, 7)) * 2
            assert generic.c == pytest.approx(direct.c, rel=1e-15)
            assert generic.value(v) == pytest.approx(direct.value(v), rel=1e-12)
            assert generic.conjugate(v) == pytest.approx(direct.conjugate(v), rel=1e-12)
            for a, b in [(generic.prox(v, 0.3), direct.prox(v, 0.3)),
                         (generic.dual_map(v), direct.dual_map(v)),
                         (generic.model_min(q, 0.7), direct.model_min(q, 0.7)),
                         (generic.least_norm_subgradient(v, q),
                          direct.least_norm_subgradient(v, q)),
                         (generic.plus_prox(0.4, z).dual_map(q),
                          direct.plus_prox(0.4, z).dual_map(q))]:
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        ElasticNet(1.0).scaled(0.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        _Scaled(ElasticNet(1.0), 2.0).scaled(-1.0)


class _ValueOnly(Penalty):
    """A penalty that writes only ``value`` and ``conjugate``."""

    c = 1.0

    def value(self, w):
        return 0.5 * w @ w

    def conjugate(self, u):
        return 0.5 * u @ u


def test_a_solver_refuses_a_penalty_without_the_methods_it_declares():
    """AGM declares ``value``, ``conjugate`` and ``model_min``: a penalty without
    ``model_min`` is refused before any work, naming what it lacks; a map it does not write
    raises ``NotImplementedError``."""
    from sklearn_ssvm import MulticlassSVM
    from sklearn_ssvm.solvers.agm import AGM

    pen = _ValueOnly()
    assert pen.methods() == {"value", "conjugate"} and pen.code is None
    problem = MulticlassSVM().prepare(np.eye(4), [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"takes any Penalty with value, conjugate, model_min, "
                                         r"not .*: _ValueOnly has no model_min\.$"):
        AGM(mu=0.1, max_iter=2).solve(problem, pen)
    with pytest.raises(NotImplementedError, match="_ValueOnly has no prox"):
        pen.prox(np.zeros(3), 1.0)
