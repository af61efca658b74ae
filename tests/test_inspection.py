"""What a fitted chain offers a CRF user: marginals, scores, transition and state weights."""
import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.pipeline import make_pipeline

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, MultiLabel, SmoothSSVMClassifier
from sklearn_ssvm.feature_extraction import SequenceVectorizer
from sklearn_ssvm.inspection import (calibrate_temperature, predict_marginals, state_features,
                                     top_state_features, transition_features, transition_weights)

from _brute import all_labelings


def chains(rng, n=12, n_features=3, labels=("B", "I", "O")):
    W = rng.normal(size=(n_features, len(labels)))
    X = [rng.normal(size=(1 + i % 4, n_features)) for i in range(n)]
    Y = [np.array(labels)[np.argmax(x @ W + rng.normal(size=(x.shape[0], len(labels))), 1)]
         for x in X]
    return X, Y


@pytest.fixture(scope="module")
def fitted():
    X, Y = chains(np.random.default_rng(0))
    return X, Y, BCFWStructuredSVM(ChainCRF(), alpha=0.05, max_iter=20, random_state=0).fit(X, Y)


@pytest.mark.parametrize("temperature", [0.1, 1.0, 3.0])
def test_predict_marginals_equal_enumeration(fitted, temperature):
    X, _, est = fitted
    structure, coef = est.structure_, est.coef_
    marginals = est.predict_marginals(X, temperature=temperature)
    for x, m in zip(X, marginals):
        ys = all_labelings(structure, x)
        scores = np.array([coef @ structure.joint_feature(x, y) for y in ys]) / temperature
        p = np.exp(scores - logsumexp(scores))
        expected = np.zeros((x.shape[0], len(structure.classes_)))
        for y, py in zip(ys, p):
            expected[np.arange(x.shape[0]), np.searchsorted(structure.classes_, y)] += py
        np.testing.assert_allclose(m, expected, atol=1e-12)
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-12)
    cold = est.predict_marginals(X, temperature=1e-3)  # -> the Viterbi labeling
    for m, y in zip(cold, est.predict(X)):
        assert np.array_equal(est.classes_[m.argmax(axis=1)], y)


def test_decision_function_is_the_predicted_labeling_score(fitted):
    X, _, est = fitted
    scores = est.decision_function(X)
    expected = [est.coef_ @ est.structure_.joint_feature(x, y) for x, y in
                zip(X, est.predict(X))]
    np.testing.assert_allclose(scores, expected, atol=1e-12)


def test_transition_and_state_weights(fitted):
    X, _, est = fitted
    table, classes = transition_weights(est)
    assert classes.tolist() == ["B", "I", "O"]
    for (a, b), w in est.transition_features_.items():
        assert table[list(classes).index(a), list(classes).index(b)] == w
    W = est.coef_[:-9].reshape(-1, 3)
    features = est.state_features_
    assert len(features) == np.count_nonzero(W)
    assert features[("x1", "I")] == W[1, 1] and features[("bias:last", "O")] == W[5, 2]
    top = top_state_features(est, n=2)
    assert [name for name, _ in top["B"]] == [(["x0", "x1", "x2"] + ["bias", "bias:first",
                                                                      "bias:last"])[r]
                                              for r in np.argsort(-W[:, 0])[:2]]


def test_inspection_through_a_pipeline_names_the_features():
    rng = np.random.default_rng(1)
    words = ["the", "dog", "ran", "a", "cat", "sat"]
    F = [[{"w": words[k]} for k in rng.integers(6, size=2 + i % 3)] for i in range(20)]
    Y = [np.array(["DET" if f["w"] in ("the", "a") else "X" for f in s]) for s in F]
    pipe = make_pipeline(SequenceVectorizer(), SmoothSSVMClassifier(
        ChainCRF(), alpha=0.01, max_iter=5, random_state=0)).fit(F, Y)
    top = top_state_features(pipe, n=2)
    assert {name for name, _ in top["DET"]} == {"w=the", "w=a"}
    assert set(transition_features(pipe)) == {(a, b) for a in ("DET", "X") for b in ("DET", "X")}
    assert all(isinstance(name, str) for name, _ in state_features(pipe))
    marginals = pipe[-1].predict_marginals(pipe[:-1].transform(F[:3]))
    assert [m.shape for m in marginals] == [(len(s), 2) for s in F[:3]]


def test_inspection_errors(fitted):
    X, _, est = fitted
    with pytest.raises(ValueError, match="temperature"):
        est.predict_marginals(X, temperature=0.0)
    rng = np.random.default_rng(2)
    Xf, Yf = rng.normal(size=(20, 3)), (rng.random((20, 2)) > 0.5).astype(int)
    flat = BCFWStructuredSVM(MultiLabel(), max_iter=2).fit(Xf, Yf)
    with pytest.raises(ValueError, match="ChainCRF"):
        flat.predict_marginals(Xf)
    with pytest.raises(AttributeError, match="ChainCRF"):  # (hasattr and dir work)
        flat.transition_features_
    with pytest.raises(ValueError, match="ChainCRF"):  # the functions keep their ValueError
        transition_features(flat)


def test_predict_marginals_through_a_pipeline_and_as_dicts():
    sentences = [[{"w": w, "len": len(w)} for w in s.split()]
                 for s in ("the cat sat", "a dog ran", "the dog", "a cat sat down")]
    tags = [["D", "N", "V"], ["D", "N", "V"], ["D", "N"], ["D", "N", "V", "R"]]
    pipe = make_pipeline(SequenceVectorizer(), BCFWStructuredSVM(ChainCRF(), max_iter=20,
                                                                 random_state=0))
    pipe.fit(sentences, tags)
    est, Xt = pipe[-1], pipe[0].transform(sentences)
    for got, expected in zip(predict_marginals(pipe, sentences, temperature=0.5),
                             est.predict_marginals(Xt, temperature=0.5)):
        np.testing.assert_array_equal(got, expected)
    dicts = predict_marginals(pipe, sentences[:1], as_dicts=True)[0]
    assert len(dicts) == 3 and set(dicts[0]) == {"D", "N", "R", "V"}
    assert sum(dicts[1].values()) == pytest.approx(1.0)
    assert dicts[1]["N"] == pytest.approx(est.predict_marginals(Xt[:1])[0][1, 1])


def test_calibrate_temperature_minimises_the_true_labels_negative_log_marginal(fitted):
    X, Y, est = fitted

    def nll(t):
        rows = np.concatenate(est.predict_marginals(X, temperature=t))
        codes = np.searchsorted(est.classes_, np.concatenate(Y))
        return -np.mean(np.log(rows[np.arange(len(codes)), codes]))

    t = calibrate_temperature(est, X, Y)
    assert 1e-3 < t < 1e3
    assert nll(t) <= min(nll(t / 1.5), nll(t * 1.5), nll(1.0)) + 1e-9
    with pytest.raises(ValueError, match="bounds"):
        calibrate_temperature(est, X, Y, bounds=(0, 1))
    with pytest.raises(ValueError, match="different numbers"):
        calibrate_temperature(est, X, Y[:-1])
