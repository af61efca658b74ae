"""Every estimator x structure x option cell against its golden result (``_golden.py``,
recorded before a change of structure): the same fit on fixed data. A cell refused then (its
message is recorded) may be fitted now, a capability added. Two modes compare a fitted cell:

exact
    Every recorded key at ``rtol=1e-7``, ``n_iter`` exactly: room for nothing but another
    compiler's rounding, not for another algorithm. Identical results to the bit are what the
    environment that recorded them gives, so this is the safety net of a refactor there, and
    it is chosen automatically where this environment's numerical fingerprint (processor and
    the kernels numba compiles for, C library, numerical packages' versions, BLAS core type and
    threads, the overriding environment variables: ``_golden.fingerprint``) is the one stored
    with the recording; ``SKLEARN_SSVM_GOLDEN=exact`` asks for it anywhere.
portable
    What the mathematics fixes, chosen elsewhere (or with ``SKLEARN_SSVM_GOLDEN=portable``).
    Another processor, BLAS kernel or compiled instruction set sums in another order; a fit
    stopped after a fixed budget (every cell here but the converged ones) amplifies those
    last-bit differences in its iterates (BMRM on the chain cell: coefficients 1.7e-3 apart
    on an AVX-512 Xeon at a certified gap of 1.2e-5), so their coordinates are no result.
    What is one:

    - the certificate. Each certified cell's objective ``P`` is ``c``-strongly convex (``c``
      its ``alpha (1 - l1_ratio)``, ``_golden._check``), so ``||w - w*|| <= sqrt(2 g / c)``
      for any ``w`` with ``P(w) - P* <= g``, its duality gap; for two fits, now and then,
      ``||w_now - w_then|| <= sqrt(2 g_now / c) + sqrt(2 g_then / c)``. The objective of both
      coefficient vectors is evaluated now on the cell's data, so each side's ``g`` is the
      smaller of its own gap and its objective less the other's dual bound ``P - gap``. An
      unregularised intercept (``PragamSVC``) is not bounded by it: it is checked through the
      objective, which is at an optimal intercept for the coefficients.
    - the objectives: ``P(w_then) - P(w_now) <= g_then`` and ``P(w_now) - P(w_then) <=
      g_now`` (both are in ``[P*, P* + gap]``), and a recorded primal is the objective now of
      the recorded coefficients, to rounding (same data, same objective).
    - the iteration count where it is a budget: a fit that ran ``max_iter`` iterations
      unconverged runs them again, to the iteration (no floating-point tie decides it); a fit
      that stopped on its tolerance stops on it again (its gap within ``tol``, after at most
      ``max_iter``), the iteration at which it crossed ``tol`` being such a tie.
    - what has no certificate (SGD: no gap, ``NaN``), nothing beyond the shapes, finite
      coefficients and objective, and the epoch count, a budget.
    - the path cell: its largest breakpoint ``lambda^inf`` and its coefficients are closed
      forms (Alg. 6, eq. (11): two oracle passes) compared to rounding; the other breakpoints
      follow the iterates (each next one from the last gaps, eq. (13)), so their values and
      number are not fixed: the path must still be decreasing and stop where ``alpha_min``
      says. At each recorded breakpoint the recorded coefficients are compared with today's
      path there through the certificates above: today's gap bound (``gap_bound``, at most
      ``eps``) and the recorded path's contract, a gap of at most ``eps``.

    Every bound adds a rounding floor, ``ROUNDING`` relative to the objective (``1e-9``: a
    sum of a few hundred terms rounds at ``1e-13`` of its size): far below every recorded gap
    (the smallest ``5.7e-6``), far above any summation order's effect.

``python tests/_golden.py --fingerprint`` says which mode runs here, and why;
``doc/contributing.md`` how to check the suite in a second numerical environment.
"""
import json
import math
import os

import numpy as np
import pytest

import _golden

GOLDEN, MACHINE = _golden.load()
CELLS = _golden.cells()
RTOL = 1e-7
#: rounding allowed in the portable mode, relative to the objective's size
ROUNDING = 1e-9
MODE, MODE_REASON = _golden.mode(MACHINE)


def test_every_cell_has_a_golden_result():
    assert set(CELLS) == set(GOLDEN)


def test_mode_is_chosen_by_the_fingerprint():
    """Unset, the mode is exact exactly where the fingerprint is the recording's; the
    variable overrides it; another value is refused."""
    here = json.loads(json.dumps(_golden.fingerprint()))
    assert _golden.mode(here, {})[0] == "exact"
    assert _golden.mode({**here, "cpu": here["cpu"] + " (another)"}, {})[0] == "portable"
    if not os.environ.get(_golden.MODE_VARIABLE):
        assert (MODE == "exact") == (here == MACHINE)
    assert _golden.mode(None, {})[0] == "portable"
    for asked in ("exact", "portable"):
        assert _golden.mode(None, {_golden.MODE_VARIABLE: asked})[0] == asked
    with pytest.raises(ValueError, match=_golden.MODE_VARIABLE):
        _golden.mode(here, {_golden.MODE_VARIABLE: "bitwise"})


def close(now, then, name):
    now, then = np.asarray(now, dtype=float), np.asarray(then, dtype=float)
    scale = max(1.0, float(np.nanmax(np.abs(then), initial=0.0)))
    np.testing.assert_allclose(now, then, rtol=RTOL, atol=RTOL * scale, err_msg=name)


@pytest.mark.parametrize("name", sorted(k for k, v in GOLDEN.items() if "refused" not in v))
def test_cell_matches_its_golden_result(name):
    then = GOLDEN[name]
    now = CELLS[name]()
    assert "refused" not in now, f"{name} was fitted, now refused: {now.get('refused')}"
    if MODE == "portable":
        (_portable_path if name.startswith("path/") else _portable_fit)(now, then, name)
        return
    now = _golden._to_json(now)
    for key, value in then.items():
        if key == "n_iter" or value is None:
            assert now[key] == value, name
        elif isinstance(value, float) and math.isnan(value):
            assert math.isnan(now[key]), name
        else:
            close(now[key], value, f"{name}: {key}")


def _say(name, what):
    return f"{name} ({MODE} mode: {MODE_REASON}): {what}"


def _floor(*objectives):
    return ROUNDING * max([1.0] + [abs(p) for p in objectives if p is not None])


def _certificate_radii(p_now, gap_now, p_then, gap_then, floor):
    """The gaps each side's distance to the optimum is bounded by: its own gap, or its
    objective less the other side's dual bound, whichever is smaller, plus the floor."""
    g_now, g_then = gap_now, gap_then
    if p_now is not None and p_then is not None:
        g_now = min(g_now, p_now - (p_then - gap_then))
        g_then = min(g_then, p_then - (p_now - gap_now))
    return max(g_now, 0.0) + floor, max(g_then, 0.0) + floor


def _check_certified_pair(name, coef_now, gap_now, p_now, coef_then, gap_then, p_then, c):
    """Objectives and coefficients of two certified points of one ``c``-strongly convex
    objective (``p`` None: not evaluated)."""
    floor = _floor(p_now, p_then)
    if p_now is not None and p_then is not None:
        assert p_then - p_now <= gap_then + floor, _say(
            name, f"objective {p_then!r} of the recorded coefficients exceeds today's {p_now!r} "
                  f"by more than the recorded gap {gap_then!r}")
        assert p_now - p_then <= gap_now + floor, _say(
            name, f"objective {p_now!r} today exceeds the recorded coefficients' {p_then!r} by "
                  f"more than today's gap {gap_now!r}")
    g_now, g_then = _certificate_radii(p_now, gap_now, p_then, gap_then, floor)
    bound = math.sqrt(2.0 * g_now / c) + math.sqrt(2.0 * g_then / c)
    distance = float(np.linalg.norm(np.asarray(coef_now) - np.asarray(coef_then)))
    assert distance <= bound, _say(
        name, f"||coef - recorded coef|| = {distance:.3g} > {bound:.3g}, the bound of the gaps "
              f"{gap_now:.3g} (now) and {gap_then:.3g} (recorded) at strong convexity {c:.3g}")
    return distance, bound


def _portable_fit(now, then, name):
    info = now["_check"]
    recorded = {k for k in now if not k.startswith("_")}
    assert recorded == set(then), _say(name, f"keys {sorted(recorded)} != {sorted(then)}")
    for key in ("coef", "intercept"):
        assert np.shape(now[key]) == np.shape(then[key]), _say(name, f"{key} shape")
        assert np.all(np.isfinite(now[key])), _say(name, f"non-finite {key}")
    for key in ("gap", "primal"):  # a certificate or an objective where there was one
        assert (now[key] is None) == (then[key] is None), _say(name, f"{key} {now[key]!r}")
    gap_then, gap_now = then["gap"], now["gap"]
    certified = gap_then is not None and math.isfinite(gap_then)
    assert certified == (gap_now is not None and math.isfinite(gap_now)), _say(
        name, f"duality gap {gap_now!r}, recorded {gap_then!r}")
    certified = certified and info["certified"]

    # iterations: the budget exactly, a convergence again
    max_iter, tol = info["max_iter"], info["tol"]
    converged_then = certified and gap_then <= tol
    if then["n_iter"] >= max_iter and not converged_then:
        assert now["n_iter"] == then["n_iter"], _say(
            name, f"n_iter {now['n_iter']} != {then['n_iter']}, the budget max_iter={max_iter}")
    elif converged_then:
        assert gap_now <= tol and now["n_iter"] <= max_iter, _say(
            name, f"stopped at {now['n_iter']} iterations with gap {gap_now!r}; recorded: "
                  f"converged to tol * loss_scale_ = {tol!r} after {then['n_iter']}")
    else:  # stopped early unconverged (a stall, rounding): nothing the count is fixed by
        assert now["n_iter"] <= max_iter, _say(name, f"n_iter {now['n_iter']} > {max_iter}")

    objective = info["objective"]
    p_now = p_then = None
    if objective is not None:
        p_now = objective(now["coef"], now["intercept"])
        p_then = objective(then["coef"], then["intercept"])
        assert math.isfinite(p_now) and math.isfinite(p_then), _say(name, "objective")
        # the objective evaluated is the one the fit reports (and its gap certifies)
        assert abs(info["reported_objective"] - p_now) <= _floor(p_now), _say(
            name, f"the fit reports the objective {info['reported_objective']!r}, its "
                  f"coefficients' is {p_now!r}")
    if then["primal"] is not None and p_then is not None:
        assert abs(then["primal"] - p_then) <= _floor(p_now, p_then), _say(
            name, f"the recorded coefficients' objective is {p_then!r} now, "
                  f"{then['primal']!r} recorded: another objective or other data")
    if not certified:  # SGD: no certificate, no bound (shapes, finiteness, budget above)
        return
    assert gap_now >= -_floor(p_now), _say(name, f"negative duality gap {gap_now!r}")
    _check_certified_pair(name, now["coef"], gap_now, p_now, then["coef"], gap_then, p_then,
                          info["strong_convexity"])


def _portable_path(now, then, name):
    info = now["_check"]
    path, eps, alpha_min = info["path"], info["eps"], info["alpha_min"]
    alphas, then_alphas = np.asarray(now["alphas"]), np.asarray(then["alphas"])
    assert not path.heuristic and np.all(path.exact_), _say(name, "the path is not certified")
    # Alg. 6: lambda^inf and its coefficients are closed forms of the data
    np.testing.assert_allclose(alphas[0], then_alphas[0], rtol=ROUNDING,
                               err_msg=_say(name, "lambda^inf"))
    close_rows = np.asarray(now["coef"])[0], np.asarray(then["coef"])[0]
    np.testing.assert_allclose(*close_rows, rtol=ROUNDING,
                               atol=ROUNDING * max(1.0, np.abs(close_rows[1]).max()),
                               err_msg=_say(name, "coefficients at lambda^inf"))
    # Alg. 7: decreasing breakpoints, the last one the first at or below alpha_min
    assert np.all(np.diff(alphas) < 0), _say(name, "breakpoints not decreasing")
    assert path.stop_reason_ == "alpha_min" and alphas[-1] <= alpha_min < alphas[-2], _say(
        name, f"the path stopped at {alphas[-1]!r} ({path.stop_reason_})")
    objective = info["objective"]
    for alpha, coef_then in zip(then_alphas[_golden.path_rows(len(then_alphas))],
                                np.asarray(then["coef"])):
        at = f"{name} at alpha={alpha:.6g}"
        assert path.covers(alpha), _say(at, "not covered by today's path")
        coef_now, gap_now = path.coef_at(alpha), float(path.gap_bound(alpha))
        assert gap_now <= eps + _floor(), _say(at, f"gap bound {gap_now!r} > eps={eps}")
        _check_certified_pair(at, coef_now, gap_now, objective(alpha, coef_now), coef_then,
                              eps, objective(alpha, coef_then), alpha)
