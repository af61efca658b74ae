"""Reliability: clear errors for bad input; warm starts refuse incompatible data before touching
the fitted model (a BCFW warm refit with another label set corrupted memory; a rejected
Smooth/BMRM warm fit broke predict)."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssvm import (BCFWStructuredSVM, BinarySVM, BMRMStructuredSVM, ChainCRF,
                          CRFClassifier, MulticlassSVM, MultiLabel, PragamStructuredSVM,
                          SmoothSSVMClassifier)

ESTIMATORS = [lambda: BCFWStructuredSVM(ChainCRF(), warm_start=True, max_iter=10, step="fw",
                                        random_state=0),
              lambda: BCFWStructuredSVM(ChainCRF(), warm_start=True, max_iter=10,
                                        step="pairwise", random_state=0),
              lambda: SmoothSSVMClassifier(ChainCRF(), warm_start=True, max_iter=3,
                                           random_state=0),
              lambda: BMRMStructuredSVM(ChainCRF(), warm_start=True, max_iter=10),
              lambda: CRFClassifier(ChainCRF(), warm_start=True, max_iter=10)]


def data(seed=0):
    rng = np.random.default_rng(seed)
    return ([rng.normal(size=(4, 3)) for _ in range(10)],
            [rng.integers(0, 3, 4) for _ in range(10)])


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize("change, message", [
    ("new label", "label set .* differs"),
    ("features", "number of features .* differs"),
    ("structure", "structure .* differs"),
])
def test_incompatible_warm_fit_raises_and_keeps_the_model(make, change, message):
    X, Y = data()
    est = make().fit(X, Y)
    coef, pred = est.coef_.copy(), est.predict(X)
    if change == "new label":
        Y = [y.copy() for y in Y]
        Y[0][0] = 3  # same token count, another label set
    elif change == "features":
        X = [np.hstack([x, x[:, :1]]) for x in X]
    else:
        est.set_params(structure=ChainCRF(normalize_loss=True))
    with pytest.raises(ValueError, match=message):
        est.fit(X, Y)
    np.testing.assert_array_equal(est.coef_, coef)
    assert all(np.array_equal(a, b) for a, b in zip(est.predict(data()[0]), pred))


@pytest.mark.parametrize("make", [ESTIMATORS[0], ESTIMATORS[3]])
def test_warm_fit_on_other_examples_raises(make):
    """BCFW's dual blocks and BMRM's cuts belong to the training examples: other lengths or
    labels (BMRM: also features) are refused; BCFW takes new features of the same examples."""
    X, Y = data()
    est = make().fit(X, Y)
    Y2 = [y.copy() for y in Y]
    Y2[1][0] = (Y2[1][0] + 1) % 3
    with pytest.raises(ValueError, match="same"):
        est.fit(X, Y2)
    with pytest.raises(ValueError, match="same"):
        est.fit(X[:9] + [X[9][:3]], Y[:9] + [Y[9][:3]])
    X2 = [x + 0.1 for x in X]
    if isinstance(est, BCFWStructuredSVM):
        assert est.fit(X2, Y).duality_gap_ >= 0
    else:
        with pytest.raises(ValueError, match="same training data"):
            est.fit(X2, Y)


def test_projection_refuses_non_finite_input_instead_of_looping():
    """``root_select`` looped for ever (ignoring Ctrl-C) on NaN kinks; now a ValueError. PragamSVC
    solves huge features at unit scale (alpha / s^2: the same model up to the scale) or refuses
    them when alpha becomes negligible; run in a subprocess so a regression cannot hang the
    test session."""
    import subprocess
    import sys

    from sklearn_ssvm._kernels.projection import root_select

    p, q, s = np.array([0.0, np.nan]), np.array([1.0, 2.0]), np.array([1.0, 1.0])
    with pytest.raises(ValueError, match="non-finite projection input"):
        root_select(p, q, s, -1.0)
    with pytest.raises(ValueError, match="non-finite projection input"):
        root_select(np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([np.inf, 1.0]), -1.0)
    code = ("import numpy as np\nfrom sklearn_ssvm import PragamSVC\n"
            "rng = np.random.default_rng(0)\nX = rng.normal(size=(40, 3))\n"
            "y = (X[:, 0] > 0).astype(int)\n"
            "for solver in ('pragam', 'agm-primal', 'agm-dual'):\n"
            "    ref = PragamSVC(solver=solver, max_iter=300).fit(X, y)\n"
            "    big = PragamSVC(solver=solver, max_iter=300, alpha=1e-4 * 1e300).fit(X * 1e150, y)\n"
            "    assert np.abs(big.coef_ * 1e150 - ref.coef_).max() <= 1e-6 * np.abs(ref.coef_).max()\n"
            "    try:\n"
            "        PragamSVC(solver=solver, fit_intercept=True).fit(X * 1e300, y)\n"
            "    except ValueError as e:\n"
            "        assert 'negligible' in str(e), e\n"
            "    else:\n"
            "        raise AssertionError('accepted')\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_validation_gaps():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match="no label columns"):
        BCFWStructuredSVM(MultiLabel(), max_iter=2).fit(X, np.zeros((10, 0), int))
    with pytest.raises(ValueError, match="Complex data not supported"):
        BCFWStructuredSVM(MulticlassSVM(), max_iter=2).fit(X + 1j, np.arange(10) % 2)
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        BCFWStructuredSVM(MulticlassSVM(), max_iter=2).fit(np.zeros((10, 0)), np.arange(10) % 2)
    Xs, Ys = data()
    with pytest.raises(ValueError, match="Complex data not supported"):
        BCFWStructuredSVM(ChainCRF(), max_iter=2).fit([x + 1j for x in Xs], Ys)


def test_classes_not_real_values():
    """Real-valued targets are refused with scikit-learn's words; integral floats are classes,
    and a column vector is taken with scikit-learn's DataConversionWarning."""
    from sklearn.exceptions import DataConversionWarning

    rng = np.random.default_rng(6)
    X = rng.normal(size=(12, 2))
    for structure in (MulticlassSVM(), BinarySVM()):
        with pytest.raises(ValueError, match="Unknown label type: continuous"):
            BCFWStructuredSVM(structure, max_iter=2).fit(X, rng.normal(size=12))
        y = np.arange(12) % 2 + 1.0
        est = BCFWStructuredSVM(structure, max_iter=5, random_state=0).fit(X, y)
        assert est.classes_.tolist() == [1.0, 2.0]
        with pytest.warns(DataConversionWarning, match="column-vector y"):
            column = BCFWStructuredSVM(structure, max_iter=5, random_state=0).fit(X, y[:, None])
        np.testing.assert_array_equal(column.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        BCFWStructuredSVM(BinarySVM(), max_iter=2).fit(X, np.arange(12) % 3)


def test_fit_takes_y_by_keyword():
    """``fit(X, y=...)``, as scikit-learn's tools call it, for every estimator (positional
    ``fit(X, Y)`` unchanged)."""
    from sklearn_ssvm import BCFWStructuredSVMCV

    X, Y = data()
    cv = BCFWStructuredSVMCV(ChainCRF(), alphas=[0.1], cv=2, max_iter=5, random_state=0)
    for est in [make() for make in ESTIMATORS] + [cv]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            keyword = clone(est).fit(X, y=Y).predict(X)
            positional = clone(est).fit(X, Y).predict(X)
        for a, b in zip(keyword, positional):
            np.testing.assert_array_equal(a, b)
    est = SmoothSSVMClassifier(ChainCRF(), solver="sgd", random_state=0)
    assert est.partial_fit(X, y=Y).n_iter_ == 1


@pytest.mark.parametrize("make", ESTIMATORS)
def test_none_scalars_and_infinite_parameters_are_refused_and_keep_the_model(make):
    """None or a scalar in place of ``X`` or ``Y``, and infinite or complex hyper-parameters,
    get a ValueError that names them, before the fitted model changes."""
    X, Y = data()
    est = make().fit(X, Y)
    coef = est.coef_.copy()
    for bad_X, bad_Y, name in [(None, Y, "X"), (2.5, Y, "X"), ("tokens", Y, "X"),
                               (X, None, "y"), (X, 3, "y")]:
        with pytest.raises(ValueError, match=f"^{name} must hold one item per example"):
            est.fit(bad_X, bad_Y)
        np.testing.assert_array_equal(est.coef_, coef)
    for value in (np.inf, -np.inf, 1e-2 + 1j):
        with pytest.raises(ValueError, match="'alpha' parameter"):
            est.set_params(alpha=value).fit(X, Y)
        np.testing.assert_array_equal(est.coef_, coef)
    with pytest.raises(ValueError, match="'tol' parameter"):
        est.set_params(alpha=None, tol=np.inf).fit(X, Y)
    np.testing.assert_array_equal(est.coef_, coef)


def test_parameter_validation():
    X, Y = data()
    with pytest.raises(ValueError, match="bias must be True or False"):
        BCFWStructuredSVM(ChainCRF(bias="yes"), max_iter=2).fit(X, Y)
    with pytest.raises(ValueError, match="n_jobs"):
        BCFWStructuredSVM(ChainCRF(), n_jobs=0, max_iter=2).fit(X, Y)


@pytest.mark.parametrize("bad, message", [(None, "contains None"), (np.nan, "contains NaN"),
                                          ("a", r"Mix of label input types \(string and "
                                                r"number\)")])
def test_label_values_are_checked(bad, message):
    X, Y = data()
    Y = [y.astype(object) for y in Y]
    Y[2][1] = bad
    with pytest.raises(ValueError, match=message):
        BCFWStructuredSVM(ChainCRF(), max_iter=2).fit(X, Y)
    y = np.array([0, 1] * 5, dtype=object)
    y[3] = bad
    with pytest.raises(ValueError, match=message):
        BCFWStructuredSVM(MulticlassSVM(), max_iter=2).fit(np.ones((10, 2)), y)


def test_candidate_set_score_stays_in_zero_one():
    from sklearn_ssvm import CandidateSet

    rng = np.random.default_rng(5)
    X = [rng.normal(size=(4, 3)) for _ in range(12)]
    Y = [np.r_[0.0, rng.uniform(1, 9, size=3)] for _ in range(12)]
    est = BCFWStructuredSVM(CandidateSet(), alpha=100.0, max_iter=2).fit(X, Y)
    pred = est.predict(X)
    expected = 1 - np.mean([y[k] / y.max() for y, k in zip(Y, pred)])
    assert est.score(X, Y) == pytest.approx(expected)
    assert 0.0 <= est.score(X, Y) <= 1.0
    assert 0.0 <= est.score(X, [np.r_[9.0, 9.0, 9.0, 0.0]] * 12) <= 1.0


def test_overflowing_features_are_refused_before_fitting():
    """Features of 1e154 gave NaN/inf duality gaps: their squares overflow."""
    X, Y = data()
    for make in ESTIMATORS:
        with pytest.raises(ValueError, match="squares overflow"):
            make().fit([x * 1e154 for x in X], Y)
    with pytest.raises(ValueError, match="squares overflow"):
        BCFWStructuredSVM(MulticlassSVM(), max_iter=2).fit(np.full((4, 2), 1e160), [0, 1, 0, 1])


@pytest.mark.parametrize("estimator, structure", [
    *((estimator, structure) for estimator in (BCFWStructuredSVM, BMRMStructuredSVM,
                                               SmoothSSVMClassifier)
      for structure in (MulticlassSVM, BinarySVM, MultiLabel)),
    (PragamStructuredSVM, MulticlassSVM)])
def test_scikit_learn_common_checks(estimator, structure):
    """scikit-learn's estimator checks pass with the flat structures (none skipped but for
    missing optional packages; with ``BinarySVM`` the estimator is a binary-only classifier,
    with ``MultiLabel`` a multi-label one, as their tags say), but for those that contradict
    the estimator: two compare a weighted fit with repeated examples to 1e-7, where our solvers
    stop at a certified gap of ``tol``, so the two fits agree within it, not to rounding, as
    scikit-learn's own iterative estimators declare (``SGDClassifier``, ``LinearSVC``;
    test_sample_weight.py makes that comparison against the solvers' certificates). With
    ``MultiLabel``, two more assume 1-D targets although its tags declare 2-D ones only: one
    fits 1-D string labels, and one fits a one-column indicator matrix and asks for 1-D
    predictions (scikit-learn runs none of its own multi-output-only classifiers through
    them: ``MultiOutputClassifier`` passes one check)."""
    from sklearn.utils.estimator_checks import check_estimator

    within_tol = "weighted and repeated fits agree within the certified gap, not to 1e-7"
    expected = {f"check_sample_weight_equivalence_on_{kind}_data": within_tol
                for kind in ("dense", "sparse")}
    if structure is MultiLabel:
        expected.update(
            check_classifiers_classes="fits 1-D class labels: MultiLabel takes 2-D ones only",
            check_classifiers_train="asks 1-D predictions of a one-column indicator matrix")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator(structure()), on_fail=None,
                                  expected_failed_checks=expected)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results
              if r["status"] == "failed"]
    assert not failed
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == set(expected)
    skipped = {r["check_name"]: str(r["exception"]) for r in results
               if r["status"] == "skipped"}
    assert all("not installed" in why or "not set" in why or "predict_proba" in why
               for why in skipped.values()), skipped
    assert sum(r["status"] == "passed" for r in results) >= 35


@pytest.mark.parametrize("solver", ["pragam", "agm-primal", "agm-dual"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_pragam_on_all_zero_features(solver, fit_intercept):
    """A zero Lipschitz constant (all-zero or underflowing X) divided by zero before."""
    from sklearn_ssvm import PragamSVC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    for scale in (0.0, 1e-300):  # finite, not converged: a few iterations show it
        est = PragamSVC(solver=solver, fit_intercept=fit_intercept, max_iter=500)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X * scale, y)
        assert np.all(np.isfinite(est.coef_)) and 0 <= est.score(X * scale, y) <= 1


def test_agm_dual_with_a_tiny_alpha():
    """alpha = 1e-300 overflowed the AGM step-size root ((s + 2 lam)^2 with s ~ L ~ 1e300)."""
    from sklearn_ssvm import PragamSVC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():  # a ConvergenceWarning at this alpha is expected
        warnings.simplefilter("ignore")
        est = PragamSVC(solver="agm-dual", alpha=1e-300, max_iter=50).fit(X, y)
    assert np.all(np.isfinite(est.coef_)) and est.score(X, y) >= 0.9


@pytest.mark.parametrize("make", [
    lambda: BCFWStructuredSVM(ChainCRF(), max_iter=2, tol=1e-12),
    lambda: BMRMStructuredSVM(ChainCRF(), max_iter=2, tol=1e-12),
    lambda: SmoothSSVMClassifier(ChainCRF(), max_iter=2, tol=1e-12, random_state=0)])
def test_stopping_at_max_iter_warns(make):
    X, Y = data()
    with pytest.warns(ConvergenceWarning, match="stopped at max_iter=2"):
        est = make().fit(X, Y)
    assert not est.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        make().set_params(max_iter=500, tol=1.0).fit(X, Y)  # converges: silent


def test_cv_estimator_warns_once_for_its_fold_fits():
    from sklearn_ssvm import BCFWStructuredSVMCV
    X, Y = data()
    with pytest.warns(ConvergenceWarning) as caught:
        BCFWStructuredSVMCV(ChainCRF(), alphas=[1e-1, 1e-3], cv=2, max_iter=1, tol=1e-12,
                            refit=False).fit(X, Y)
    assert [str(w.message) for w in caught if "fold fits" in str(w.message)] == [
        "4 of 4 fold fits stopped at max_iter=1 before their duality gap reached tol=1e-12 "
        "(relative); increase max_iter for certified scores."]


def test_n_jobs_none_is_one_thread_unless_joblib_says_otherwise():
    import joblib

    from sklearn_ssvm._kernels.threads import n_threads
    from sklearn_ssvm.solvers._common import kernel_threads
    with kernel_threads(None):
        assert n_threads() == 1
    with joblib.parallel_config(n_jobs=2), kernel_threads(None):
        assert n_threads() == 2
    with kernel_threads(-1):
        assert n_threads() == joblib.cpu_count()
    with kernel_threads(3):
        assert n_threads() == 3
    assert n_threads() == 1


def test_threaded_batch_equals_one_thread():
    """The oracle and smoothed passes give the same results on 1 and on 3 threads (chunks of
    examples write disjoint rows)."""
    from sklearn_ssvm._kernels.threads import use_threads
    rng = np.random.default_rng(3)
    X = [rng.normal(size=(int(rng.integers(1, 8)), 5)) for _ in range(40)]
    Y = [rng.integers(0, 4, len(x)) for x in X]
    problem = ChainCRF().prepare(X, Y)
    coef = np.random.default_rng(0).normal(size=problem.n_params)
    one = problem.run_oracle(coef, True), problem.smoothed_losses(coef, 1, 0.5, 1)
    with use_threads(3):
        three = problem.run_oracle(coef, True), problem.smoothed_losses(coef, 1, 0.5, 1)
    for a, b in zip(one, three):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


def test_parameter_validation_uses_public_scikit_learn_only():
    import re
    from pathlib import Path

    import sklearn_ssvm
    private = re.compile(r"(from|import)\s+sklearn(\.\w+)*\._\w+|sklearn\.base\s+import\s+.*\b_\w+")
    offenders = [str(p) for p in Path(sklearn_ssvm.__file__).parent.rglob("*.py")
                 if private.search(p.read_text())]
    assert offenders == []


def test_check_params_wording_and_edges():
    from numbers import Integral, Real

    from sklearn_ssvm._validation import Interval, InvalidParameterError, Options

    positive = Interval(Real, 0, None, closed="neither")
    assert positive.is_satisfied_by(1e-300) and not positive.is_satisfied_by(0.0)
    assert not positive.is_satisfied_by(np.nan) and not positive.is_satisfied_by(True)
    assert not positive.is_satisfied_by(np.inf)  # (0, inf) is open at inf
    assert not Interval(Real, None, 0, closed="both").is_satisfied_by(-np.inf)
    count = Interval(Integral, 1, 10, closed="both")
    assert count.is_satisfied_by(10) and not count.is_satisfied_by(2.0)
    assert str(count) == "an int in the range [1, 10]"
    assert Options({"a"}).is_satisfied_by("a") and not Options({"a"}).is_satisfied_by(["a"])
    with pytest.raises(InvalidParameterError, match=r"The 'alpha' parameter of "
                       r"BCFWStructuredSVM must be a float in the range \(0, inf\) or None\. "
                       r"Got -1\.0 instead\."):
        BCFWStructuredSVM(ChainCRF(), alpha=-1.0).fit(*data())
    with pytest.raises(ValueError, match="'step' parameter"):
        BCFWStructuredSVM(ChainCRF(), step="newton").fit(*data())
    with pytest.raises(TypeError, match="'warm_start' parameter"):
        BMRMStructuredSVM(ChainCRF(), warm_start="yes").fit(*data())


def test_verbose_two_logs_one_line_per_check(capsys):
    from sklearn_ssvm import PragamSVC
    X, Y = data()
    BCFWStructuredSVM(ChainCRF(), max_iter=20, gap_check=5, tol=0.0, verbose=2).fit(X, Y)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("BCFW")]
    assert len(lines) == 4 and "gap" in lines[0] and lines[0].endswith(" s")
    BCFWStructuredSVM(ChainCRF(), max_iter=20, tol=0.0, verbose=1).fit(X, Y)
    assert "BCFW pass" not in capsys.readouterr().out  # the bar only (on stderr)
    rng = np.random.default_rng(0)
    Xf = rng.normal(size=(30, 3))
    PragamSVC(max_iter=50, verbose=2).fit(Xf, Xf[:, 0] > 0)
    assert "PRAGAM iteration" in capsys.readouterr().out


def test_stale_kernel_cache_is_cleared_where_numba_caches(tmp_path):
    """A cache made from other kernel sources is cleared at import, also in a cache directory
    of the user's (NUMBA_CACHE_DIR; numba's user-wide directory for read-only installs follows
    the same path)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    load = [sys.executable, "-c", "import sklearn_ssvm._kernels as k; print(k._cache_dir())"]
    cache = Path(subprocess.run(load, env=env, capture_output=True, text=True,
                                check=True).stdout.strip())
    assert cache.parent == tmp_path and (cache / "kernel-sources.sha256").exists()
    (cache / "labelings.oracle-1.py311.nbi").write_bytes(b"compiled from other sources")
    subprocess.run(load, env=env, check=True, capture_output=True)
    assert (cache / "labelings.oracle-1.py311.nbi").exists()  # same sources: kept
    (cache / "kernel-sources.sha256").write_text("other sources")
    subprocess.run(load, env=env, check=True, capture_output=True)
    assert not (cache / "labelings.oracle-1.py311.nbi").exists()
    assert (cache / "kernel-sources.sha256").read_text() != "other sources"
