"""Smoothed solvers (SGD, SVRG, Casimir-SVRG) and SmoothSSVMClassifier, against dense references
and independent solutions."""
import numpy as np
import pytest
from scipy.optimize import minimize

from sklearn_ssvm import (BCFWStructuredSVM, BinarySVM, CandidateSet, ChainCRF, MulticlassSVM, MultiLabel,
                          SmoothSSVMClassifier)
from sklearn_ssvm.solvers import smooth
from sklearn_ssvm.penalties import ElasticNet
from sklearn_ssvm.structures.base import smoothing_code


def chain_data(rng, n=15, n_features=4, n_labels=3, max_len=5):
    W = rng.normal(size=(n_features, n_labels))
    X = [rng.normal(size=(1 + i % max_len, n_features)) for i in range(n)]
    Y = [np.argmax(x @ W + rng.normal(size=(x.shape[0], n_labels)), axis=1) for x in X]
    return X, Y


def data_for(structure, rng, n=15):
    if isinstance(structure, ChainCRF):
        return chain_data(rng, n=n)
    if isinstance(structure, MultiLabel):
        return rng.normal(size=(n, 4)), rng.integers(0, 2, size=(n, 3))
    if isinstance(structure, CandidateSet):
        X = [rng.normal(size=(2 + i % 4, 3)) for i in range(n)]
        Y = [np.abs(rng.normal(size=x.shape[0])) for x in X]
        for y in Y:
            y[rng.integers(y.shape[0])] = 0.0
        return X, Y
    return rng.normal(size=(n, 4)), rng.integers(0, 3, size=n)


def dense_gradient(structure, X, Y, coef, smoothing, mu, top_k):
    """Per-example dense gradients of the smoothed hinge, from the structure's single-example
    oracle (an independent code path from the batched label-space kernels)."""
    return np.array([structure.smoothed_oracle(x, y, coef, smoothing=smoothing, mu=mu,
                                               top_k=top_k)[1] for x, y in zip(X, Y)])


def reference_steps(structure, X, Y, w, w_snap, smoothing, mu, top_k, samples, gammas, c, p):
    """Dense SVRG steps ``w <- w - gamma (g_i(w) - g_i(w_snap) + mean g(w_snap) + c w - p)``
    and the uniform average of the iterates."""
    G_snap = dense_gradient(structure, X, Y, w_snap, smoothing, mu, top_k)
    g_mean = G_snap.mean(axis=0)
    total = np.zeros_like(w)
    for i, gamma in zip(samples, gammas):
        g = structure.smoothed_oracle(X[i], Y[i], w, smoothing=smoothing, mu=mu,
                                      top_k=top_k)[1]
        w = w - gamma * (g - G_snap[i] + g_mean + c * w - p)
        total += w
    return w, total / len(samples)


@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM(), MultiLabel(pairwise="tree"),
                                       CandidateSet()])
@pytest.mark.parametrize("smoothing, top_k", [("l2", 3), ("entropy", None)])
def test_lazy_svrg_steps_equal_dense_steps(structure, smoothing, top_k):
    """The lazy O(nnz) updates (w = s v + r B, lazily averaged) are exactly the dense ones."""
    rng = np.random.default_rng(1)
    X, Y = data_for(structure, rng)
    problem = structure.prepare(X, Y)
    mu, c = 0.3, 0.05
    w_snap = rng.normal(scale=0.3, size=problem.n_params)
    p = rng.normal(scale=0.1, size=problem.n_params)
    quad = ElasticNet(c, 0.0, p)
    sm = smooth.Smoothing(*smoothing_code(smoothing, top_k, problem.kind), mu)
    snap = smooth.full_gradient(problem, w_snap, sm)
    lazy = smooth.LazyIterate(problem, w_snap, snap.grad - quad.linear(snap.grad))
    samples = rng.integers(problem.n_samples, size=40)
    gammas = np.full(40, 0.2)
    lazy.steps(sm, snap.M, snap.Q, samples, gammas, 1.0 - gammas * c, np.ones(40))
    w_ref, avg_ref = reference_steps(structure, X, Y, w_snap.copy(), w_snap, smoothing, mu,
                                     top_k, samples, gammas, c, p)
    np.testing.assert_allclose(lazy.current(), w_ref, atol=1e-10)
    np.testing.assert_allclose(lazy.average(), avg_ref, atol=1e-10)


def test_lazy_rescaling_and_weighted_average():
    """Strong decay drives s below the rescaling threshold; varying steps and weights (SGD)."""
    rng = np.random.default_rng(2)
    structure = ChainCRF()
    X, Y = chain_data(rng)
    problem = structure.prepare(X, Y)
    sm = smooth.Smoothing(*smoothing_code(None, None, problem.kind), 0.0)
    from sklearn_ssvm._kernels.batch import stats_from_labels
    M_ref, Q_ref = stats_from_labels(problem.packed(), problem.y, problem.n_codes,
                                     problem.n_pair)
    w0 = rng.normal(size=problem.n_params)
    lazy = smooth.LazyIterate(problem, w0)
    n_steps = 400
    samples = rng.integers(problem.n_samples, size=n_steps)
    gammas = rng.uniform(0.1, 0.2, size=n_steps)
    c = 4.0  # decays 0.2 to 0.6: s underflows 1e-100 within the run
    weights = np.arange(1.0, n_steps + 1)
    lazy.steps(sm, M_ref, Q_ref, samples, gammas, 1.0 - gammas * c, weights)
    w, total = w0.copy(), np.zeros_like(w0)
    for i, gamma, omega in zip(samples, gammas, weights):
        g = structure.smoothed_oracle(X[i], Y[i], w, smoothing=None)[1]
        w = w - gamma * (g + c * w)
        total += omega * w
    np.testing.assert_allclose(lazy.current(), w, atol=1e-10)
    np.testing.assert_allclose(lazy.average(), total / weights.sum(), atol=1e-10)


def smoothed_minimum(problem, alpha, sm):
    """min F_mu by L-BFGS on the batched value and gradient (entropy: smooth)."""
    def fun(w):
        g = smooth.full_gradient(problem, w, sm)
        return g.value + 0.5 * alpha * w @ w, g.grad + alpha * w
    res = minimize(fun, np.zeros(problem.n_params), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-10, ftol=1e-14, maxiter=5000))
    return res.fun, res.x


@pytest.mark.parametrize("solver", ["svrg", "casimir", "casimir-inner-test"])
def test_svrg_solvers_reach_the_smoothed_minimum(solver):
    """With a constant mu and entropy smoothing F_mu is smooth and strongly convex: SVRG and
    Casimir-SVRG (one epoch per outer iteration, or inner solves stopped by the test of (26))
    reach its L-BFGS minimum (spec 000 §7 item 19)."""
    rng = np.random.default_rng(3)
    structure = MulticlassSVM()
    X, Y = data_for(structure, rng, n=30)
    problem = structure.prepare(X, Y)
    alpha = 0.1
    sm = smooth.Smoothing(*smoothing_code("entropy", None, problem.kind), 0.5)
    f_star, w_star = smoothed_minimum(problem, alpha, sm)
    if solver == "svrg":
        res = smooth.svrg(problem, alpha, sm, learning_rate=0.05, max_iter=150, random_state=0)
    elif solver == "casimir":
        res = smooth.casimir_svrg(problem, alpha, sm, learning_rate=0.05, mu_schedule="const",
                                  max_iter=150, random_state=0)
    else:
        res = smooth.casimir_svrg(problem, alpha, sm, learning_rate=0.05, mu_schedule="const",
                                  kappa=1.0, inner_epochs=50, inner_test=True, max_iter=40,
                                  random_state=0)
        epochs = [r["inner_epochs"] for r in res.history]
        assert 1 < max(epochs) < 50  # the test, not the cap, ends the inner solves
        assert res.n_oracle_calls == 2 * 30 * sum(epochs)
    value = smooth.full_gradient(problem, res.coef, sm).value + 0.5 * alpha * res.coef @ res.coef
    assert value - f_star < 1e-6
    np.testing.assert_allclose(res.coef, w_star, atol=1e-3)


@pytest.mark.parametrize("scale_steps, learning_rate", [(True, 0.05), (False, 0.005)])
@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM(), MultiLabel(pairwise="tree")])
def test_certified_gap_bounds_the_suboptimality(structure, scale_steps, learning_rate):
    """objective - gap <= F* (F* from BCFW to a tiny certified gap), on every epoch; the gap
    shrinks with mu (Casimir-SVRG-adapt, steps following mu or fixed)."""
    rng = np.random.default_rng(4)
    X, Y = data_for(structure, rng, n=25)
    alpha = 0.1
    bcfw = BCFWStructuredSVM(structure, alpha=alpha, max_iter=3000, tol=1e-9,
                             random_state=0).fit(X, Y)
    f_star = bcfw.primal_objective_ - bcfw.duality_gap_  # a lower bound: conservative
    problem = structure.prepare(X, Y)
    sm = smooth.Smoothing(*smoothing_code("l2", 5, problem.kind), 0.5)
    res = smooth.casimir_svrg(problem, alpha, sm, learning_rate=learning_rate, max_iter=60,
                              scale_steps=scale_steps, random_state=0)
    for record in res.history:
        assert record["gap"] >= record["objective"] - bcfw.primal_objective_ - 1e-9
        assert record["objective"] - record["gap"] <= bcfw.primal_objective_ + 1e-9
        assert record["objective"] >= f_star - 1e-9
    assert res.history[-1]["gap"] < 0.1 * res.history[0]["gap"]
    assert res.objective - bcfw.primal_objective_ < 0.05


def test_steps_following_mu_tolerate_a_large_learning_rate():
    """With the "expo" schedule a fixed step too large for small mu leaves the iterates on a
    noise floor; steps following mu_k (with the 1/k floor) keep converging. With a constant
    mu the two rules are the same."""
    rng = np.random.default_rng(4)
    structure = ChainCRF()
    X, Y = data_for(structure, rng, n=25)
    alpha = 0.1
    best = BCFWStructuredSVM(structure, alpha=alpha, max_iter=3000, tol=1e-9,
                             random_state=0).fit(X, Y).primal_objective_
    problem = structure.prepare(X, Y)
    sm = smooth.Smoothing(*smoothing_code("l2", 5, problem.kind), 0.5)
    scaled, fixed = (smooth.casimir_svrg(problem, alpha, sm, learning_rate=0.05, max_iter=60,
                                         scale_steps=scale, random_state=0).objective - best
                     for scale in (True, False))
    assert scaled < 0.01 < 0.03 < fixed
    const = [smooth.casimir_svrg(problem, alpha, sm, learning_rate=0.05, mu_schedule="const",
                                 max_iter=5, scale_steps=scale, random_state=0).coef
             for scale in (True, False)]
    np.testing.assert_array_equal(*const)


def test_sgd_pegasos_approaches_the_optimum():
    rng = np.random.default_rng(5)
    structure = MulticlassSVM(fit_intercept=False)
    X, Y = data_for(structure, rng, n=40)
    alpha = 0.1
    bcfw = BCFWStructuredSVM(structure, alpha=alpha, max_iter=2000, tol=1e-8,
                             random_state=0).fit(X, Y)
    problem = structure.prepare(X, Y)
    sm = smooth.Smoothing(*smoothing_code(None, None, problem.kind), 0.0)
    res = smooth.sgd(problem, alpha, sm, learning_rate=1.0, schedule="pegasos", max_iter=200,
                     random_state=0)
    assert res.objective - bcfw.primal_objective_ < 5e-3
    objectives = [r["objective"] for r in res.history]
    assert objectives[-1] < objectives[0]


def test_subproblem_packs_the_selected_examples():
    rng = np.random.default_rng(6)
    structure = ChainCRF()
    X, Y = chain_data(rng)
    problem = structure.prepare(X, Y)
    idx = np.array([1, 4, 5, 11])
    sub = problem.subset(idx)
    direct = structure.pack([X[i] for i in idx], [Y[i] for i in idx])
    for name in ("indptr", "indices", "data", "tok_offsets", "y", "node_offsets", "tok_loss"):
        np.testing.assert_array_equal(getattr(sub, name), getattr(direct, name))


@pytest.mark.parametrize("solver", ["casimir-svrg", "svrg", "sgd"])
def test_estimator_fits_and_scores(solver):
    rng = np.random.default_rng(7)
    X, Y = chain_data(rng, n=40)
    est = SmoothSSVMClassifier(ChainCRF(normalize_loss=True), alpha=0.05, solver=solver,
                               max_iter=20, smoothing=None if solver == "sgd" else "l2",
                               random_state=0).fit(X, Y)
    assert est.score(X, Y) > 0.7
    assert len(est.history_) == est.n_iter_
    assert est.learning_rate_ > 0
    assert est.objective(X, Y) == pytest.approx(est.objective_)
    if solver != "sgd":
        assert est.duality_gap_ >= 0
        assert est.smoothed_objective(X, Y, 0.5) >= est.objective(X, Y) - 1e-12
        assert est.smoothed_objective(X, Y, 0.5) <= est.objective(X, Y) + 0.25 + 1e-12
    again = SmoothSSVMClassifier(ChainCRF(normalize_loss=True), alpha=0.05, solver=solver,
                                 max_iter=20, smoothing=None if solver == "sgd" else "l2",
                                 random_state=0).fit(X, Y)
    np.testing.assert_array_equal(again.coef_, est.coef_)


def test_estimator_errors_keep_the_fitted_state():
    rng = np.random.default_rng(8)
    X, Y = chain_data(rng, n=20)
    est = SmoothSSVMClassifier(ChainCRF(), max_iter=3, random_state=0).fit(X, Y)
    coef = est.coef_.copy()
    with pytest.raises(ValueError, match="smooth objective"):
        est.set_params(smoothing=None).fit(X, Y)
    with pytest.raises(ValueError, match="NaN"):
        est.set_params(smoothing="l2").fit([np.full((2, 4), np.nan)], [np.array([0, 1])])
    with pytest.raises(ValueError, match="l2 smoothing over all"):
        est.set_params(top_k=None).fit(X, Y)
    with pytest.raises(ValueError, match="validation_fraction"):
        est.set_params(top_k=5, early_stopping=True, validation_fraction=0.01).fit(X, Y)
    with pytest.raises(ValueError, match="stochastic solver"):
        est.set_params(validation_fraction=0.1, solver="agm", smoothing="entropy",
                       top_k=None).fit(X, Y)
    np.testing.assert_array_equal(est.coef_, coef)


def test_warm_start_continues_from_the_previous_coef():
    rng = np.random.default_rng(9)
    X, Y = chain_data(rng, n=30)
    est = SmoothSSVMClassifier(ChainCRF(), alpha=0.05, max_iter=15, learning_rate=0.05,
                               random_state=0, warm_start=True).fit(X, Y)
    first = est.objective_
    est.set_params(max_iter=1).fit(X, Y)
    assert est.history_[0]["objective"] <= first + 0.05 * abs(first)


@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM(), MultiLabel(pairwise="tree"),
                                       CandidateSet(), BinarySVM()])
def test_expected_losses_are_linear_in_the_label_statistics(structure):
    """The dual bound's E_u L from M = E_u S(y) equals the loss averaged over the labelings."""
    from sklearn_ssvm._kernels.batch import expected_losses
    from sklearn_ssvm._kernels.labelings import add_stats
    from _brute import all_labelings
    rng = np.random.default_rng(10)
    if isinstance(structure, BinarySVM):
        X, Y = rng.normal(size=(6, 3)), np.array([0, 1, 1, 0, 1, 0])
    else:
        X, Y = data_for(structure, rng, n=6)
    problem = structure.prepare(X, Y)
    M = np.zeros((problem.tok_offsets[-1], problem.n_codes))
    expected = []
    for i in range(problem.n_samples):
        ys = all_labelings(structure, X[i])
        p = rng.dirichlet(np.ones(len(ys)))
        total = 0.0
        for prob, y in zip(p, ys):
            codes = structure._encode_one(y) if not isinstance(structure, CandidateSet) \
                else np.array([y], dtype=np.int32)
            add_stats(problem.kind, codes, prob,
                      M[problem.tok_offsets[i]:problem.tok_offsets[i + 1]],
                      np.zeros(problem.n_pair), problem.example_graph(i))
            total += prob * structure.loss(Y[i], y)
        expected.append(total)
    got = expected_losses(problem.kind, problem.tok_offsets, problem.y, problem.node_offsets,
                          problem.tok_loss, M)
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_estimator_with_a_feature_map_trains_by_prox_linear():
    """An ELU network on candidate features, trained by prox-linear + Casimir-SVRG: the
    non-linear objective decreases monotonically (acceptance step) and the fit predicts well."""
    from sklearn_ssvm.feature_maps import MLPFeatureMap
    rng = np.random.default_rng(11)
    teacher = MLPFeatureMap(n_hidden=4, random_state=1)
    w_true = 3 * teacher.init_params(3)
    X = [rng.normal(size=(4, 3)) for _ in range(40)]
    Y = []
    for x in X:
        losses = np.ones(4)
        losses[np.argmax(teacher.scores(x, w_true))] = 0.0
        Y.append(losses)
    est = SmoothSSVMClassifier(CandidateSet(), alpha=0.01, max_iter=8, eta=1.0,
                               feature_map=MLPFeatureMap(n_hidden=4, random_state=0),
                               random_state=0).fit(X, Y)
    objectives = [r["objective"] for r in est.history_]
    assert np.all(np.diff(objectives) <= 1e-12)
    assert objectives[-1] < 0.7 * objectives[0]
    assert est.objective(X, Y) == pytest.approx(objectives[-1])
    assert est.predict(X).shape == (40,)
    assert est.score(X, Y) > 0.6
    # the inexactness schedule (62): eps_k = eps_0 / k, certified by each inner solve
    est.set_params(inner_tol=0.3, inner_iter=100, max_iter=3).fit(X, Y)
    for k, record in enumerate(est.history_[1:], start=1):
        assert record["inner_tol"] == pytest.approx(0.3 / k)
        assert record["inner_gap"] <= record["inner_tol"] and record["inner_iter"] < 100
    with pytest.raises(ValueError, match="CandidateSet"):
        SmoothSSVMClassifier(ChainCRF(), feature_map=MLPFeatureMap()).fit(*chain_data(rng))


@pytest.mark.parametrize("smoothing", ["entropy", "l2"])
def test_smoothed_objective_gradient_is_lipschitz_with_the_papers_constant(smoothing):
    """||grad F_mu(w) - grad F_mu(w')|| <= (A/mu + alpha) ||w - w'|| (spec 000 §7 item 9, Lemma
    40) with A = max_i ||A_i||^2_{2,a}: the largest squared row norm of A_i (rows
    phi(x_i, y) - phi(x_i, y_i)) for entropy, its squared spectral norm for l2."""
    from _brute import all_labelings
    rng = np.random.default_rng(12)
    structure = MulticlassSVM()
    X, Y = data_for(structure, rng, n=12)
    problem = structure.prepare(X, Y)
    alpha, mu = 0.1, 0.4
    A = 0.0
    for x, y in zip(X, Y):
        rows = np.array([structure.joint_feature(x, z) - structure.joint_feature(x, y)
                         for z in all_labelings(structure, x)])
        A = max(A, np.max(np.sum(rows ** 2, axis=1)) if smoothing == "entropy"
                else np.linalg.norm(rows, 2) ** 2)
    sm = smooth.Smoothing(*smoothing_code(smoothing, None, problem.kind), mu)
    ratios = []
    for i in range(len(X)):  # one example at a time: the mean's constant is smaller
        single = structure.pack(X[i:i + 1], Y[i:i + 1])
        for _ in range(10):
            w = rng.normal(scale=0.1, size=problem.n_params)  # near ties: curvature is largest
            v = w + rng.normal(scale=0.01, size=w.shape)
            gw = smooth.full_gradient(single, w, sm).grad + alpha * w
            gv = smooth.full_gradient(single, v, sm).grad + alpha * v
            ratios.append(np.linalg.norm(gw - gv) / np.linalg.norm(w - v))
    assert max(ratios) <= A / mu + alpha + 1e-9
    assert max(ratios) > 0.05 * (A / mu + alpha)  # the check is not vacuous


@pytest.mark.parametrize("structure", [ChainCRF(), MulticlassSVM(), MultiLabel(pairwise="tree"),
                                       CandidateSet()])
def test_hinge_is_nonnegative_and_majorizes_the_task_loss(structure):
    """f_i(w) >= 0 and f_i(w) >= L(y_i, argmax_y <w, phi(x_i, y)>) (spec 000 §7 item 15)."""
    rng = np.random.default_rng(13)
    X, Y = data_for(structure, rng)
    problem = structure.prepare(X, Y)
    for _ in range(5):
        coef = rng.normal(size=problem.n_params)
        hinge = problem.hinge_losses(coef)
        y_pred, _, _, _ = problem.run_oracle(coef, False)
        assert np.all(hinge >= -1e-12)
        assert np.all(hinge >= problem.losses(y_pred) - 1e-12)


def test_casimir_with_one_outer_step_and_vanishing_kappa_is_one_svrg_epoch():
    """Spec 000 §7 item 20: one outer iteration, kappa -> 0, prox-center start = one SVRG epoch
    on F_mu (same samples), the difference shrinking with kappa."""
    rng = np.random.default_rng(14)
    structure = ChainCRF()
    X, Y = chain_data(rng)
    problem = structure.prepare(X, Y)
    sm = smooth.Smoothing(*smoothing_code("l2", 3, problem.kind), 0.5)
    w0 = rng.normal(scale=0.2, size=problem.n_params)
    plain = smooth.svrg(problem, 0.1, sm, learning_rate=0.05, max_iter=1, init=w0,
                        random_state=0).coef
    gaps = [np.linalg.norm(smooth.casimir_svrg(problem, 0.1, sm, learning_rate=0.05,
                                               mu_schedule="const", kappa=kappa, max_iter=1,
                                               init=w0, random_state=0).coef - plain)
            for kappa in (1e-2, 1e-4)]
    assert gaps[1] < 1e-2 * gaps[0] * 10
    assert gaps[1] < 1e-4


@pytest.mark.parametrize("solver", ["svrg", "casimir"])
def test_warmup_is_sgd_epochs_then_the_solver_from_their_point(solver):
    """``warmup=2``: two smoothed SGD epochs (linear schedule, weighted average) at the
    solver's learning rate, then the solver started there, on the same random stream."""
    rng = np.random.default_rng(15)
    structure = ChainCRF()
    X, Y = chain_data(rng, n=20)
    problem = structure.prepare(X, Y)
    n = problem.n_samples
    sm = smooth.Smoothing(*smoothing_code("l2", 3, problem.kind), 0.5)
    run = smooth.svrg if solver == "svrg" else smooth.casimir_svrg
    warm = run(problem, 0.1, sm, learning_rate=0.05, max_iter=5, warmup=2, random_state=0)
    stream = np.random.default_rng(0)
    first = smooth.sgd(problem, 0.1, sm, learning_rate=0.05, max_iter=2, random_state=stream)
    rest = run(problem, 0.1, sm, learning_rate=0.05, max_iter=3, init=first.coef,
               random_state=stream)
    np.testing.assert_allclose(warm.coef, rest.coef, rtol=1e-12, atol=1e-12)
    assert [r["iter"] for r in warm.history] == [1, 2, 3, 4, 5]
    assert [r["oracle_calls"] for r in warm.history] == [n, 2 * n, 4 * n, 6 * n, 8 * n]
    assert warm.n_oracle_calls == 8 * n and warm.n_iter == 5
    np.testing.assert_allclose([r["objective"] for r in warm.history],
                               [r["objective"] for r in first.history + rest.history])
    assert np.isnan(warm.history[1]["gap"]) and np.isfinite(warm.history[2]["gap"])
    only = run(problem, 0.1, sm, learning_rate=0.05, max_iter=1, warmup=3, random_state=0)
    assert only.n_iter == 1 and np.isnan(only.duality_gap)
    with pytest.raises(ValueError, match="warmup"):
        run(problem, 0.1, sm, learning_rate=0.05, max_iter=2, warmup=-1)


def test_early_stopping_keeps_the_best_validation_epoch():
    rng = np.random.default_rng(17)
    X, Y = chain_data(rng, n=60)
    seen = []
    est = SmoothSSVMClassifier(ChainCRF(), alpha=1e-4, max_iter=40, learning_rate=0.2,
                               early_stopping=True, validation_fraction=0.25,
                               n_iter_no_change=3, random_state=0)
    est.fit(X, Y, callback=lambda epoch, coef: seen.append(coef.copy()) or dict(mark=epoch))
    scores = est.validation_scores_
    assert len(scores) == est.n_iter_ == len(est.history_) == len(seen) < 40
    best = int(np.argmax(scores))  # the first best epoch, 0-based
    assert est.n_iter_ - 1 - best == 3  # stopped after 3 epochs without a better score
    assert est.best_validation_score_ == max(scores)
    np.testing.assert_array_equal(est.coef_, seen[best])
    assert est.objective_ == est.history_[best]["objective"]
    assert [r["validation_score"] for r in est.history_] == scores
    assert [r["mark"] for r in est.history_] == list(range(1, est.n_iter_ + 1))
    # 45 examples trained on: one warm-up epoch, then two oracle calls per SVRG step
    assert est.n_oracle_calls_ == 45 + 2 * 45 * (est.n_iter_ - 1)


def test_early_stopping_auto_is_off_for_small_data():
    rng = np.random.default_rng(18)
    X, Y = chain_data(rng, n=20)
    est = SmoothSSVMClassifier(ChainCRF(), max_iter=3, random_state=0).fit(X, Y)
    assert est.validation_scores_ is None and len(est.history_) == 3  # auto: off below 1000


def test_estimator_warms_up_from_zero_only():
    rng = np.random.default_rng(16)
    X, Y = chain_data(rng, n=20)
    est = SmoothSSVMClassifier(ChainCRF(), alpha=0.05, max_iter=3, learning_rate=0.05,
                               random_state=0, warm_start=True).fit(X, Y)
    assert np.isnan(est.history_[0]["gap"]) and np.isfinite(est.history_[1]["gap"])
    assert est.n_oracle_calls_ == 20 + 2 * 2 * 20
    est.fit(X, Y)  # continues from coef_: SVRG epochs only
    assert np.all(np.isfinite([r["gap"] for r in est.history_]))
    cold = SmoothSSVMClassifier(ChainCRF(), alpha=0.05, max_iter=3, learning_rate=0.05,
                                warmup=0, random_state=0).fit(X, Y)
    assert cold.n_oracle_calls_ == 3 * 2 * 20


@pytest.mark.parametrize("solver", ["agm", "agm-ef1"])
def test_agm_solver_certifies_the_bcfw_optimum(solver):
    """The AGM solvers (spec 001 on the entropy-smoothed structured objective; EF-inf and
    EF-1) bracket the BCFW optimum with their certified gaps."""
    rng = np.random.default_rng(15)
    X, Y = chain_data(rng, n=20)
    bcfw = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=2000, tol=1e-8,
                             random_state=0).fit(X, Y)
    est = SmoothSSVMClassifier(ChainCRF(), alpha=0.1, solver=solver, smoothing="entropy",
                               top_k=None, mu=0.01, max_iter=300, tol=0.05).fit(X, Y)
    assert est.objective(X, Y) == pytest.approx(est.objective_)
    assert est.objective_ - est.duality_gap_ <= bcfw.primal_objective_ + 1e-9
    assert est.objective_ >= bcfw.primal_objective_ - bcfw.duality_gap_ - 1e-9
    assert est.duality_gap_ <= 0.05 * est.loss_scale_
    with pytest.raises(ValueError, match=f"solver='{solver}' needs smoothing='entropy'"):
        SmoothSSVMClassifier(ChainCRF(), solver=solver).fit(X, Y)
    coef = est.coef_.copy()  # AGM declares no warm start: refused, the fit kept
    with pytest.raises(ValueError, match=r"continues the previous fit, but SmoothSSVMClassifier"
                                         r"\(solver='agm' or 'agm-ef1'\) declares no warm"):
        est.set_params(warm_start=True).fit(X, Y)
    np.testing.assert_array_equal(est.coef_, coef)


def test_agm_ef1_is_its_own_method():
    """solver='agm-ef1' runs AGM-EF-1, not EF-inf under another name: same certified optimum,
    other iterates."""
    rng = np.random.default_rng(15)
    X, Y = chain_data(rng, n=20)
    runs = [SmoothSSVMClassifier(ChainCRF(), alpha=0.1, solver=solver, smoothing="entropy",
                                 top_k=None, mu=0.01, max_iter=20, tol=0.0).fit(X, Y)
            for solver in ("agm", "agm-ef1")]
    assert runs[0].history_[-1]["objective"] != runs[1].history_[-1]["objective"]


def test_partial_fit_is_invariant_to_the_chunking_and_learns():
    import pickle

    from sklearn_ssvm import ChainCRF, SmoothSSVMClassifier
    from sklearn_ssvm.datasets import load_ocr_letters
    ocr = load_ocr_letters()
    words = np.random.default_rng(0).choice(len(ocr.data), 300, replace=False)  # mixed words
    X, Y = [ocr.data[i] for i in words], [ocr.target[i] for i in words]
    labels = np.arange(26)

    def stream(chunks, passes=2):
        est = SmoothSSVMClassifier(ChainCRF(labels=labels), solver="sgd", alpha=1e-3,
                                   learning_rate=0.05, random_state=0)
        for _ in range(passes):
            for a, b in chunks:
                est.partial_fit(X[a:b], Y[a:b])
        return est

    three = stream([(0, 100), (100, 200), (200, 300)])
    two = stream([(0, 100), (100, 300)])
    np.testing.assert_array_equal(three.coef_, two.coef_)  # same order, other boundaries
    assert three.n_oracle_calls_ == 600 and three.n_iter_ == 6
    # a pickled stream continues exactly
    half = stream([(0, 100), (100, 200), (200, 300)], passes=1)
    resumed = pickle.loads(pickle.dumps(half))
    for a, b in [(0, 100), (100, 200), (200, 300)]:
        resumed.partial_fit(X[a:b], Y[a:b])
    np.testing.assert_array_equal(resumed.coef_, three.coef_)
    # it learns: close to the in-memory SGD fit's training objective
    full = SmoothSSVMClassifier(ChainCRF(labels=labels), solver="sgd", alpha=1e-3,
                                learning_rate=0.05, max_iter=2, early_stopping=False,
                                random_state=0).fit(X, Y)
    assert three.primal_objective(X, Y) <= 1.1 * full.primal_objective(X, Y)
    assert three.score(X, Y) > 0.6
    # a chunk with another feature count or an unseen label is refused, the stream kept
    coef = three.coef_.copy()
    with pytest.raises(ValueError):
        three.partial_fit([x[:, :-1] for x in X[:10]], Y[:10])
    undeclared = SmoothSSVMClassifier(ChainCRF(), solver="sgd", alpha=1e-3,
                                      learning_rate=0.05).partial_fit(X[:5], Y[:5])
    unseen = next(i for i in range(5, 300) if not set(Y[i]) <= set(undeclared.classes_))
    with pytest.raises(ValueError):
        undeclared.partial_fit([X[unseen]], [Y[unseen]])
    np.testing.assert_array_equal(three.coef_, coef)
    assert not hasattr(SmoothSSVMClassifier(ChainCRF()), "partial_fit")  # not for Casimir
    with pytest.raises(AttributeError, match="partial_fit") as refused:
        SmoothSSVMClassifier(ChainCRF()).partial_fit(X[:10], Y[:10])
    assert "solver='sgd'" in str(refused.value.__cause__)  # the reason, in the traceback
