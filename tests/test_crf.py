"""CRFClassifier: the conditional log-likelihood against enumeration, its certified fit against
an independent solve, its marginals, and CRFsuite's objective at CRFsuite's weights."""
import copy
import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from sklearn_ssvm import CandidateSet, ChainCRF, CRFClassifier, GraphCRF, MulticlassSVM
from sklearn_ssvm.datasets import make_chain_data
from sklearn_ssvm.estimators.crf import _likelihood, _nll
from sklearn_ssvm.solvers.capabilities import refusal
from sklearn_ssvm.solvers.smooth import Smoothing, full_gradient
from sklearn_ssvm.structures import BinaryGraphCRF
from sklearn_ssvm.structures.base import smoothing_code


def tiny_chains(random_state=0, length=4):
    X, Y = make_chain_data(n_samples=6, n_features=3, n_labels=3, random_state=random_state)
    return [x[:length] for x in X], [y[:length] for y in Y]


def enumerated_nll(structure, X, Y, w):
    """Mean ``log Z - score(y_i)`` and its gradient, summing over every labeling."""
    value, grad = 0.0, np.zeros_like(w)
    for x, y in zip(X, Y):
        labelings = [np.array(lab) for lab in itertools.product(
            range(len(structure.classes_)), repeat=len(x))]
        phis = np.array([structure.joint_feature(x, lab) for lab in labelings])
        scores = phis @ w
        log_z = np.logaddexp.reduce(scores)
        p = np.exp(scores - log_z)
        truth = structure.joint_feature(x, np.searchsorted(structure.classes_, y))
        value += log_z - truth @ w
        grad += p @ phis - truth
    return value / len(X), grad / len(X)


def test_objective_and_gradient_equal_enumeration():
    X, Y = tiny_chains()
    crf = CRFClassifier(ChainCRF(), max_iter=1).fit(X, Y)
    problem = _likelihood(crf.structure_.prepare(X, Y))
    rng = np.random.default_rng(0)
    code, K = smoothing_code("entropy", None, problem.kind)
    for _ in range(3):
        w = rng.normal(size=problem.n_params)
        value, grad = enumerated_nll(crf.structure_, X, Y, w)
        fg = full_gradient(problem, w, Smoothing(code, K, 1.0))
        assert fg.value == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(fg.grad, grad, rtol=1e-10, atol=1e-12)
        crf.coef_ = w
        penalty = 2 * 1.0 / len(X) / 2 * (w @ w)  # c2 = 1 (CRFsuite's default): c2 ||w||^2 / n
        assert crf.primal_objective(X, Y) == pytest.approx(value + penalty, rel=1e-12)


def test_l2_fit_is_the_optimum_within_its_certified_gap():
    X, Y = tiny_chains(1)
    crf = CRFClassifier(ChainCRF(), c2=0.5, tol=1e-12, max_iter=500).fit(X, Y)
    assert crf.converged_ and 0 <= crf.duality_gap_ <= 1e-12 * crf.loss_scale_

    def F(w):
        value, grad = enumerated_nll(crf.structure_, X, Y, w)
        return value + 0.5 / len(X) * (w @ w), grad + 1.0 / len(X) * w

    ref = minimize(F, np.zeros_like(crf.coef_), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-16, maxiter=10000))
    assert crf.objective_ == pytest.approx(F(crf.coef_)[0], rel=1e-12)
    assert 0 <= crf.objective_ - ref.fun <= crf.duality_gap_ + 1e-12
    # strongly convex: ||w - w*||^2 <= 2 gap / c, with c = 2 c2 / n
    assert np.linalg.norm(crf.coef_ - ref.x) <= np.sqrt(2 * crf.duality_gap_ * len(X)) + 1e-5


def test_l1_fit_is_the_optimum_with_its_zeros():
    """OWL-QN against L-BFGS-B on the split variables w = u - v (u, v >= 0), an exact
    smooth reformulation of the l1 part."""
    X, Y = tiny_chains(2)
    c1, c2, n = 0.6, 0.2, len(X)
    crf = CRFClassifier(ChainCRF(), c1=c1, c2=c2, tol=1e-12, max_iter=1000).fit(X, Y)
    assert crf.converged_ and crf.l1_ratio_ == pytest.approx(c1 / (c1 + 2 * c2))
    d = crf.coef_.shape[0]

    def F(uv):
        w = uv[:d] - uv[d:]
        value, grad = enumerated_nll(crf.structure_, X, Y, w)
        g = grad + 2 * c2 / n * w
        return (value + c2 / n * (w @ w) + c1 / n * uv.sum(),
                np.concatenate([g + c1 / n, -g + c1 / n]))

    ref = minimize(F, np.zeros(2 * d), jac=True, method="L-BFGS-B", bounds=[(0, None)] * 2 * d,
                   options=dict(gtol=1e-13, ftol=1e-16, maxiter=20000))
    assert 0 <= crf.objective_ - ref.fun <= crf.duality_gap_ + 1e-10
    w_ref = ref.x[:d] - ref.x[d:]
    np.testing.assert_allclose(crf.coef_, w_ref, atol=1e-4)
    assert np.count_nonzero(crf.coef_ == 0) > 0
    assert np.all(crf.coef_[np.abs(w_ref) < 1e-7] == 0)


def test_marginals_sum_to_one_and_equal_enumeration():
    X, Y = tiny_chains(3)
    crf = CRFClassifier(ChainCRF(), c2=0.3, max_iter=50).fit(X, Y)
    structure, w = crf.structure_, crf.coef_
    for x, marginal in zip(X, crf.predict_marginals(X)):
        np.testing.assert_allclose(marginal.sum(axis=1), 1.0, rtol=1e-12)
        labelings = list(itertools.product(range(3), repeat=len(x)))
        scores = np.array([structure.joint_feature(x, np.array(lab)) @ w for lab in labelings])
        p = np.exp(scores - np.logaddexp.reduce(scores))
        expected = np.zeros_like(marginal)
        for prob, lab in zip(p, labelings):
            expected[np.arange(len(x)), lab] += prob
        np.testing.assert_allclose(marginal, expected, rtol=1e-9, atol=1e-12)


def test_candidate_sets_are_the_conditional_logit_of_the_zero_loss_candidate():
    rng = np.random.default_rng(4)
    X = [rng.normal(size=(int(m), 3)) for m in rng.integers(2, 5, size=12)]
    losses = [rng.uniform(0.5, 1.0, size=len(x)) for x in X]
    truth = [int(rng.integers(len(x))) for x in X]
    for loss, k in zip(losses, truth):
        loss[k] = 0.0
    crf = CRFClassifier(CandidateSet(), c2=0.5, tol=1e-12, max_iter=500).fit(X, losses)

    def F(w):
        return np.mean([np.logaddexp.reduce(x @ w) - x[k] @ w for x, k in zip(X, truth)]) \
            + 0.5 / len(X) * (w @ w)

    ref = minimize(F, np.zeros(3), method="BFGS", options=dict(gtol=1e-12))
    assert crf.converged_
    assert 0 <= crf.objective_ - ref.fun <= crf.duality_gap_ + 1e-12
    np.testing.assert_allclose(crf.coef_, ref.x, atol=1e-5)


def test_structures_whose_kernels_keep_the_loss_are_refused_as_declared():
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 3
    crf = CRFClassifier(MulticlassSVM())
    with pytest.raises(ValueError) as error:
        crf.fit(X, y)
    assert str(error.value) == refusal("quasi-newton", "compiled", (), "MulticlassSVM")
    assert not hasattr(crf, "coef_")


def as_paths(X):
    """Chains as graphs: each sequence a path of its tokens."""
    return [(np.asarray(x), np.array([[t, t + 1] for t in range(len(x) - 1)],
                                     dtype=np.int64).reshape(-1, 2)) for x in X]


def test_graph_crf_on_paths_is_the_chain_crf():
    """On forests TRW's bound is the log-partition function: the CRF of path graphs
    (``GraphCRF(directed=True)``: one transition table) is the chain's, the same optimum within
    both certified gaps, certified, with the chain's marginals."""
    X, Y = make_chain_data(n_samples=30, n_features=4, n_labels=3, random_state=0)
    X = [np.asarray(x) for x in X]
    chain = CRFClassifier(ChainCRF(bias=False), c2=0.5, tol=1e-10, max_iter=500).fit(X, Y)
    paths = as_paths(X)
    graph = CRFClassifier(GraphCRF(directed=True), c2=0.5, tol=1e-10, max_iter=500).fit(paths, Y)
    assert graph.converged_ and graph.gap_certified_
    # the gaps, and the rounding of TRW's message passing, converged on trees to about 1e-9
    assert abs(graph.objective_ - chain.objective_) <= (graph.duality_gap_ + chain.duality_gap_
                                                        + 1e-8)
    for ours, theirs in zip(graph.predict_marginals(paths[:5]), chain.predict_marginals(X[:5])):
        np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_loopy_graph_likelihood_is_trws_upper_bound():
    """On a graph with cycles the likelihood is TRW's bound: above the enumerated negative
    log-likelihood at any weights, and the fit says it is uncertified; BinaryGraphCRF, which
    has no log-partition bound, is refused as declared."""
    rng = np.random.default_rng(0)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])
    X = [(rng.normal(size=(4, 2)), edges) for _ in range(5)]
    Y = [rng.integers(0, 3, size=4) for _ in range(5)]
    Y[0][:] = [0, 1, 2, 0]
    crf = CRFClassifier(GraphCRF(n_states=3), max_iter=30).fit(X, Y)
    assert not crf.gap_certified_
    problem = _likelihood(crf.structure_.prepare(X, Y))
    structure = crf.structure_
    for _ in range(3):
        w = rng.normal(size=problem.n_params)
        exact = []
        for x, y in zip(X, Y):
            phis = np.array([structure.joint_feature(x, np.array(lab)) for lab in
                             itertools.product(range(3), repeat=4)])
            truth = structure.joint_feature(x, np.asarray(y))
            exact.append(np.logaddexp.reduce(phis @ w) - truth @ w)
        bound = _nll(problem, w)
        assert np.all(bound >= np.array(exact) - 1e-9)
        assert np.all(bound <= np.array(exact) + 2.0)  # a bound, not a different model
    with pytest.raises(ValueError) as error:
        CRFClassifier(BinaryGraphCRF()).fit([(rng.normal(size=(4, 2)), edges)],
                                            [np.array([0, 1, 1, 0])])
    assert str(error.value) == refusal("quasi-newton", "binary_graph", ())


def test_warm_start_continues_and_max_iter_warns():
    X, Y = tiny_chains(5)
    with pytest.warns(Warning, match="max_iter"):
        crf = CRFClassifier(ChainCRF(), max_iter=3, tol=1e-12, warm_start=True).fit(X, Y)
    first = crf.objective_
    crf.set_params(max_iter=200).fit(X, Y)
    assert crf.converged_ and crf.objective_ <= first
    cold = CRFClassifier(ChainCRF(), max_iter=200, tol=1e-12).fit(X, Y)
    assert abs(crf.objective_ - cold.objective_) <= crf.duality_gap_ + cold.duality_gap_


def test_crfsuite_objective_at_crfsuites_weights():
    """Ours at CRFsuite's weights is CRFsuite's logged loss: the same objective (sum of the
    negative log-likelihoods plus c2 ||w||^2 + c1 ||w||_1) on the same features."""
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    from sklearn_ssvm.feature_extraction import SequenceVectorizer, coef_from_crfsuite
    rng = np.random.default_rng(6)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]
    sentences = [list(rng.choice(words, size=int(rng.integers(2, 7)))) for _ in range(40)]
    F = [[{"bias": 1.0, "w": w, "prev": s[t - 1] if t else "<s>", "len": len(w) / 3.0}
          for t, w in enumerate(s)] for s in sentences]
    Y = [["N" if w in ("cat", "mat", "dog") else "V" if w in ("sat", "ran") else "O"
          for w in s] for s in sentences]
    Y[0][0] = "V"  # a label the words do not decide
    for c1 in (0.0, 0.2):
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=0.1, max_iterations=15)
        crf.fit(F, Y)
        vec = SequenceVectorizer()
        X = vec.fit_transform(F)
        ours = CRFClassifier(ChainCRF(bias=False), c1=c1, c2=0.1, max_iter=1).fit(X, Y)
        coef, n_unmapped = coef_from_crfsuite(crf, vec, ours.structure_)
        assert n_unmapped == 0
        at = copy.copy(ours)
        at.coef_ = coef
        logged = crf.training_log_.last_iteration["loss"]
        assert len(X) * at.primal_objective(X, Y) == pytest.approx(logged, rel=1e-6)


def test_expected_calibration_error_by_hand():
    from sklearn_ssvm.metrics import expected_calibration_error
    # confidences 0.9 (right), 0.9 (wrong), 0.6 (right): bins 9 and 6
    marginals = [np.array([[0.9, 0.1], [0.1, 0.9]]), np.array([[0.4, 0.6]])]
    Y = [np.array([0, 0]), np.array([1])]
    expected = 2 / 3 * abs(0.5 - 0.9) + 1 / 3 * abs(1.0 - 0.6)
    assert expected_calibration_error(Y, marginals) == pytest.approx(expected)
    assert expected_calibration_error([np.array([0])], [np.array([[1.0, 0.0]])]) == 0.0
    with pytest.raises(ValueError, match="sequences"):
        expected_calibration_error(Y, marginals[:1])


def test_the_fit_is_the_same_to_the_bit_on_any_number_of_threads():
    X, Y = make_chain_data(n_samples=600, n_features=5, n_labels=4, random_state=7)
    fits = [CRFClassifier(ChainCRF(), c1=0.2, c2=0.1, max_iter=15, n_jobs=n_jobs).fit(X, Y)
            for n_jobs in (1, 2, 4)]
    for fit in fits[1:]:
        np.testing.assert_array_equal(fit.coef_, fits[0].coef_)
        assert fit.history_[-1]["objective"] == fits[0].history_[-1]["objective"]
