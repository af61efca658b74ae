"""Every structure's oracles against brute-force enumeration on small instances."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from sklearn_ssvm import BinarySVM, ChainCRF, MulticlassSVM, MultiLabel

from _brute import all_labelings, all_values, brute_max


def random_chain_data(rng, n, n_features, labels, max_len=6, sparse=False):
    X, Y = [], []
    for i in range(n):
        T = 1 + i % max_len
        x = rng.normal(size=(T, n_features))
        X.append(sp.csr_matrix(x) if sparse and i % 2 else x)
        Y.append(rng.choice(labels, size=T))
    for k, label in enumerate(labels):  # make sure every label is seen
        Y[-1 - k % len(Y)][0] = label
    return X, Y


def flat_data(rng, structure, n=12, n_features=3):
    X = rng.normal(size=(n, n_features))
    if isinstance(structure, MultiLabel):
        Y = rng.integers(0, 2, size=(n, 4))
    elif isinstance(structure, BinarySVM):
        Y = np.array(["neg", "pos"] * (n // 2))
    else:
        Y = np.arange(n) % 3
    return X, Y


@pytest.mark.parametrize("n_labels", [2, 3, 4])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("normalize_loss", [True, False])
def test_chain_max_oracle_and_decode_match_enumeration(n_labels, bias, normalize_loss):
    rng = np.random.default_rng(n_labels)
    labels = np.array(["B-NP", "I-NP", "O", "B-VP"][:n_labels])
    X, Y = random_chain_data(rng, 6, 3, labels, sparse=True)
    s = ChainCRF(bias=bias, normalize_loss=normalize_loss)
    s.prepare(X, Y)
    assert list(s.classes_) == sorted(labels)
    for x, y in zip(X, Y):
        coef = rng.normal(size=s.n_params)
        assert s.joint_feature(x, y).shape == (s.n_params,)
        y_star, value = s.max_oracle(x, y, coef)
        best, _ = brute_max(s, x, y, coef)
        assert value == pytest.approx(best, abs=1e-10)
        # the returned labeling attains the value
        gold = coef @ s.joint_feature(x, y)
        assert s.loss(y, y_star) + coef @ s.joint_feature(x, y_star) - gold == \
            pytest.approx(best, abs=1e-10)
        _, y_dec = brute_max(s, x, None, coef, augment=False)
        np.testing.assert_array_equal(s.decode(x, coef), y_dec)


def test_chain_loss_counts_by_default_or_is_normalised_hamming():
    for s, wrong in [(ChainCRF(), 2), (ChainCRF(normalize_loss=True), 2 / 3)]:
        s.prepare([np.ones((3, 1))], [np.array([0, 1, 1])])
        assert s.loss([0, 1, 1], [0, 1, 1]) == 0.0
        assert s.loss([0, 1, 1], [1, 1, 0]) == pytest.approx(wrong)


def test_chain_loss_counts_wrong_labels_unnormalised():
    rng = np.random.default_rng(3)
    X, Y = random_chain_data(rng, 8, 2, np.array([0, 1, 2]), max_len=7)
    s = ChainCRF(normalize_loss=False)
    problem = s.prepare(X, Y)
    for y in Y:
        y_other = rng.integers(0, 3, size=len(y))
        assert s.loss(y, y_other) == np.sum(y != y_other)
    # the packed per-token costs give the same losses as the structure
    y_pred = problem.y[::-1].copy()
    expected = [np.sum(a != b) for a, b in zip(np.split(problem.y, problem.node_offsets[1:-1]),
                                                 np.split(y_pred, problem.node_offsets[1:-1]))]
    np.testing.assert_array_equal(problem.losses(y_pred), expected)


@pytest.mark.parametrize("k", [1, 2, 5, 40])
@pytest.mark.parametrize("normalize_loss", [True, False])
def test_chain_topk_oracle_matches_enumeration(k, normalize_loss):
    rng = np.random.default_rng(k)
    X, Y = random_chain_data(rng, 5, 2, np.array([0, 1, 2]), max_len=4)
    s = ChainCRF(normalize_loss=normalize_loss)
    s.prepare(X, Y)
    for x, y in zip(X, Y):
        coef = rng.normal(size=s.n_params)
        ys, vals = all_values(s, x, y, coef)
        order = np.argsort(-vals, kind="stable")
        paths, scores = s.topk_oracle(x, y, coef, k)
        m = min(k, len(ys))
        np.testing.assert_allclose(scores[:m], vals[order[:m]], atol=1e-10)
        assert np.all(np.isneginf(scores[m:]))
        seen = {tuple(p) for p in paths[:m]}
        assert len(seen) == m
        gold = coef @ s.joint_feature(x, y)
        for p, v in zip(paths[:m], scores[:m]):
            assert s.loss(y, p) + coef @ s.joint_feature(x, p) - gold == pytest.approx(v)


@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("normalize_loss", [True, False])
def test_chain_exp_oracle_matches_enumeration(mu, normalize_loss):
    rng = np.random.default_rng(7)
    X, Y = random_chain_data(rng, 5, 2, np.array([0, 1, 2]), max_len=4)
    s = ChainCRF(normalize_loss=normalize_loss)
    s.prepare(X, Y)
    for x, y in zip(X, Y):
        coef = rng.normal(size=s.n_params)
        ys, vals = all_values(s, x, y, coef)
        value, grad = s.exp_oracle(x, y, coef, mu)
        assert value == pytest.approx(mu * logsumexp(vals / mu), abs=1e-10)
        p = np.exp(vals / mu - logsumexp(vals / mu))
        expected = sum(pi * s.joint_feature(x, yy) for pi, yy in zip(p, ys))
        np.testing.assert_allclose(grad, expected - s.joint_feature(x, y), atol=1e-10)


@pytest.mark.parametrize("structure", [BinarySVM(), MulticlassSVM(), MultiLabel(),
                                       MultiLabel(pairwise="tree"), MultiLabel(pairwise="full")])
def test_flat_oracles_match_enumeration(structure):
    rng = np.random.default_rng(3)
    X, Y = flat_data(rng, structure)
    structure.prepare(X, Y)
    for x, y in zip(X, Y):
        coef = rng.normal(size=structure.n_params)
        assert structure.joint_feature(x, y).shape == (structure.n_params,)
        assert structure.loss(y, y) == 0.0
        y_star, value = structure.max_oracle(x, y, coef)
        best, _ = brute_max(structure, x, y, coef)
        assert value == pytest.approx(best, abs=1e-10)
        gold = coef @ structure.joint_feature(x, y)
        assert (structure.loss(y, y_star) + coef @ structure.joint_feature(x, y_star) - gold
                == pytest.approx(best, abs=1e-10))
        _, y_dec = brute_max(structure, x, None, coef, augment=False)
        np.testing.assert_array_equal(structure.decode(x, coef), y_dec)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_binary_hinge_is_the_svm_hinge(fit_intercept):
    """``max(0, 1 - y (<w, x> + b))``, ``b`` the constant feature's weight times
    ``intercept_scaling``."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3))
    y = np.array([-1, 1] * 4)
    s = BinarySVM(fit_intercept=fit_intercept, intercept_scaling=2.5)
    problem = s.prepare(X, y)
    w = rng.normal(size=s.n_params)
    b = 2.5 * w[3] if fit_intercept else 0.0
    assert s.n_params == 3 + fit_intercept
    np.testing.assert_allclose(problem.hinge_losses(w), np.maximum(0, 1 - y * (X @ w[:3] + b)))
    np.testing.assert_allclose(s.decision_function(X, w), X @ w[:3] + b)
    np.testing.assert_allclose(s.intercept(w), [b])


@pytest.mark.parametrize("pairwise", [None, "tree", "full"])
def test_multilabel_decision_function_is_the_max_marginal_margin(pairwise):
    """Each label's ``max_{y_k = 1} score - max_{y_k = 0} score``, against enumeration, and
    positive exactly where the best labeling sets the label."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 3))
    Y = rng.integers(0, 2, size=(12, 5))
    structure = MultiLabel(pairwise=pairwise)
    structure.prepare(X, Y)
    coef = rng.normal(size=structure.n_params)
    margins = structure.decision_function(X, coef)
    assert margins.shape == (12, 5) and margins.dtype == np.float64
    for x, row in zip(X, margins):
        ys = np.array(all_labelings(structure, x))
        scores = np.array([coef @ structure.joint_feature(x, y) for y in ys])
        expected = [scores[ys[:, k] == 1].max() - scores[ys[:, k] == 0].max()
                    for k in range(5)]
        np.testing.assert_allclose(row, expected, atol=1e-12)
    np.testing.assert_array_equal(structure.predict(X, coef), margins > 0)


def test_multilabel_takes_any_two_indicator_values():
    """``{-1, 1}`` (or any two values) train the model of ``{0, 1}``; predictions come back in
    them, in ``Y``'s dtype; anything else is refused in scikit-learn's words."""
    from sklearn_ssvm import BCFWStructuredSVM

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    Y = rng.integers(0, 2, size=(20, 4))
    ref = BCFWStructuredSVM(MultiLabel(), max_iter=5, random_state=0).fit(X, Y)
    signed = BCFWStructuredSVM(MultiLabel(), max_iter=5, random_state=0).fit(X, 2 * Y - 1)
    np.testing.assert_array_equal(signed.coef_, ref.coef_)
    np.testing.assert_array_equal(signed.structure_.indicator_values_, [-1, 1])
    np.testing.assert_array_equal(signed.predict(X), 2 * ref.predict(X) - 1)
    assert signed.score(X, 2 * Y - 1) == ref.score(X, Y)
    boolean = BCFWStructuredSVM(MultiLabel(), max_iter=5, random_state=0).fit(X, Y == 1)
    assert boolean.predict(X).dtype == bool
    with pytest.raises(ValueError, match="values other than the fitted -1"):
        signed.score(X, Y)
    refusals = {"Only binary classification is supported": Y + np.arange(4) % 3,
                "one value only": np.full((20, 4), 2),
                "Unknown label type: continuous": Y + 0.5,
                "2-D indicator matrix": Y[:, 0],
                "NaN": np.where(Y == 1, np.nan, 0.0)}
    for message, bad in refusals.items():
        with pytest.raises(ValueError, match=message):
            BCFWStructuredSVM(MultiLabel()).fit(X, bad)
    # all off or all on: the 0/1 convention
    np.testing.assert_array_equal(
        BCFWStructuredSVM(MultiLabel(), max_iter=2).fit(X, np.ones((20, 4), int))
        .structure_.indicator_values_, [0, 1])


def test_multilabel_tree_is_a_spanning_tree():
    rng = np.random.default_rng(1)
    Y = rng.integers(0, 2, size=(50, 6))
    Y[:, 1] = Y[:, 0]  # strongly dependent pair must be an edge
    s = MultiLabel(pairwise="tree")
    s.prepare(rng.normal(size=(50, 2)), Y)
    assert s.edges_.shape == (5, 2)
    assert {0, 1} in [set(e) for e in s.edges_]
    assert len(all_labelings(s, np.zeros(2))) == 64


def test_candidate_set_oracles_match_enumeration():
    from sklearn_ssvm import CandidateSet
    rng = np.random.default_rng(4)
    X = [rng.normal(size=(1 + i % 5, 3)) for i in range(8)]
    Y = []
    for x in X:
        loss = rng.random(x.shape[0])
        loss[rng.integers(x.shape[0])] = 0.0
        Y.append(loss)
    s = CandidateSet()
    s.prepare(X, Y)
    for x, y in zip(X, Y):
        coef = rng.normal(size=s.n_params)
        true = int(np.flatnonzero(y == 0)[0])
        np.testing.assert_array_equal(s.joint_feature(x, 1 % x.shape[0]), x[1 % x.shape[0]])
        y_star, value = s.max_oracle(x, y, coef)
        best = max(y[k] + coef @ (x[k] - x[true]) for k in range(x.shape[0]))
        assert value == pytest.approx(best, abs=1e-12)
        assert s.decode(x, coef) == int(np.argmax(x @ coef))
    with pytest.raises(ValueError, match="0 at the true candidate"):
        CandidateSet().prepare(X[:1], [np.ones(X[0].shape[0])])
    with pytest.raises(ValueError, match="Example 0 has 1 candidates but 2 losses"):
        CandidateSet().prepare(X[:1], [np.zeros(2)])
