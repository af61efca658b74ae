"""scikit-learn conventions of the estimators, and clear errors on bad input."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_ssvm import BCFWStructuredSVM, BinarySVM, ChainCRF, MulticlassSVM, MultiLabel
from sklearn_ssvm.feature_extraction import SequenceVectorizer


def sequences(rng, n=30, n_features=4, labels=("B-NP", "I-NP", "O")):
    W = rng.normal(size=(n_features, len(labels)))
    X, Y = [], []
    for i in range(n):
        x = rng.normal(size=(2 + i % 4, n_features))
        X.append(x)
        Y.append(np.array(labels)[np.argmax(x @ W, axis=1)])
    return X, Y


@pytest.fixture
def data():
    return sequences(np.random.default_rng(0))


def test_public_api_and_fitted_attributes(data):
    X, Y = data
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=20, random_state=0).fit(X, Y)
    assert est.coef_.ndim == 1 and est.coef_.shape == (est.structure_.n_params,)
    # coef_ @ joint_feature is the score that predict maximises
    y_pred = est.predict(X[:1])[0]
    assert est.coef_ @ est.structure_.joint_feature(X[0], y_pred) >= \
        est.coef_ @ est.structure_.joint_feature(X[0], Y[0]) - 1e-12
    assert set(est.classes_) == {"B-NP", "I-NP", "O"}
    assert est.n_iter_ >= 1 and est.duality_gap_ >= 0
    assert est.structure_.loss(Y[0], Y[0]) == 0
    assert 0 <= est.score(X, Y) <= 1
    assert est.n_features_in_ == 4
    assert {"iter", "oracle_calls", "time"} <= set(est.history_[0])


def test_clone_pickle_params(data):
    X, Y = data
    est = BCFWStructuredSVM(ChainCRF(bias=False), alpha=0.1, max_iter=5, random_state=0)
    c = clone(est)
    assert c.get_params()["structure"].bias is False
    assert c.get_params()["structure__bias"] is False
    c.set_params(alpha=0.5, structure__bias=True)
    assert c.alpha == 0.5 and c.structure.bias
    est.fit(X, Y)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.coef_, est.coef_)
    assert [list(p) for p in restored.predict(X)] == [list(p) for p in est.predict(X)]
    assert not hasattr(clone(est), "coef_")


def test_unfitted_raises(data):
    X, _ = data
    with pytest.raises(NotFittedError):
        BCFWStructuredSVM(ChainCRF()).predict(X)


def test_grid_search_over_alpha(data):
    X, Y = data
    search = GridSearchCV(BCFWStructuredSVM(ChainCRF(), max_iter=5, random_state=0),
                          {"alpha": [0.01, 1.0]}, cv=3).fit(X, Y)
    assert search.best_params_["alpha"] in (0.01, 1.0)
    assert len(search.predict(X)) == len(X)


def test_pipeline_with_sequence_vectorizer():
    rng = np.random.default_rng(1)
    words = ["the", "cat", "sat", "on", "a", "mat"]
    tags = {"the": "DET", "a": "DET", "cat": "N", "mat": "N", "sat": "V", "on": "P"}
    X = [[{"w": w, "bias": 1} for w in rng.choice(words, size=4)] for _ in range(20)]
    Y = [[tags[t["w"]] for t in s] for s in X]
    pipe = make_pipeline(SequenceVectorizer(), BCFWStructuredSVM(ChainCRF(), alpha=0.01,
                                                                 max_iter=30, random_state=0))
    pipe.fit(X, Y)
    assert pipe.score(X, Y) == 1.0


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, message", [
    (lambda X, Y: (X, Y[:-1]), "different numbers of examples"),
    (lambda X, Y: (X[:3] + [np.zeros((0, 4))], Y[:3] + [np.array([])]), "Sequence 3 is empty"),
    (lambda X, Y: (X[:2] + [np.full((2, 4), np.nan)], Y[:3]), "Sequence 2 contains NaN"),
    (lambda X, Y: (X[:2] + [np.full((2, 4), np.inf)], Y[:3]), "Sequence 2 contains NaN or inf"),
    (lambda X, Y: (X[:2] + [X[2]], Y[:2] + [Y[2][:-1]]), "Sequence 2 has 4 tokens but 3"),
    (lambda X, Y: (X[:3], [np.array(["O"] * len(y)) for y in Y[:3]]), "at least 2 classes"),
    (lambda X, Y: (X[:2] + [X[2][:, :3]], Y[:3]), "Example 2 has 3 features"),
    (lambda X, Y: (X[0], Y[0]), "list of"),
])
def test_bad_fit_input_raises_and_keeps_previous_fit(data, bad, message):
    X, Y = data
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=3, random_state=0).fit(X, Y)
    coef = est.coef_.copy()
    Xb, Yb = bad(X, Y)
    with pytest.raises(ValueError, match=message):
        est.fit(Xb, Yb)
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.predict(X[:1])[0].shape == X[0].shape[:1]


def test_bad_predict_and_score_input(data):
    X, Y = data
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=3, random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match="Example 1 has 5 features.*fitted with 4"):
        est.predict([X[0], np.ones((3, 5))])
    Y_bad = [y.copy() for y in Y[:3]]
    Y_bad[2] = Y_bad[2].astype(object)
    Y_bad[2][0] = "B-XX"
    # an unseen label is a wrong prediction for score, an error where the loss needs its code
    wrong = [np.mean(p != y) for p, y in zip(est.predict(X[:3]), Y_bad)]
    assert est.score(X[:3], Y_bad) == pytest.approx(1 - np.mean(wrong))
    assert wrong[2] >= 1 / len(Y_bad[2])
    with pytest.raises(ValueError, match="Example 2 has label 'B-XX' not seen during fit"):
        est.primal_objective(X[:3], Y_bad)
    with pytest.raises(ValueError, match="Sequence 1 has .* tokens but"):
        est.score(X[:3], [Y[0], Y[1][:-1], Y[2]])
    with pytest.raises(ValueError, match="alpha"):
        BCFWStructuredSVM(ChainCRF(), alpha=-1.0).fit(X, Y)


def test_flat_structures_bad_input():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match="exactly 2 classes"):
        BCFWStructuredSVM(BinarySVM()).fit(X, np.arange(10) % 3)
    with pytest.raises(ValueError, match="at least 2 classes"):
        BCFWStructuredSVM(MulticlassSVM()).fit(X, np.zeros(10))
    Xn = X.copy()
    Xn[4, 1] = np.nan
    with pytest.raises(ValueError, match="example 4"):
        BCFWStructuredSVM(MulticlassSVM()).fit(Xn, np.arange(10) % 3)
    with pytest.raises(ValueError, match="example 4"):
        BCFWStructuredSVM(MulticlassSVM()).fit(sp.csr_matrix(Xn), np.arange(10) % 3)
    with pytest.raises(ValueError, match="one value only"):
        BCFWStructuredSVM(MultiLabel()).fit(X, np.full((10, 2), 2))
    est = BCFWStructuredSVM(MulticlassSVM(), max_iter=2).fit(X, np.arange(10) % 3)
    assert est.score(X[:2], np.array([est.predict(X[:1])[0], 7])) == 0.5  # 7 unseen: wrong
    with pytest.raises(ValueError, match="Example 1 has label 7"):
        est.primal_objective(X[:2], np.array([0, 7]))
    with pytest.raises(ValueError, match="y must be 1-D"):
        est.score(X[:2], np.zeros((2, 1)))
    with pytest.raises(ValueError, match="4 features"):
        est.predict(rng.normal(size=(2, 4)))


def test_verbose_shows_a_progress_bar_with_the_gap(data, capsys):
    X, Y = data
    BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=3, gap_check=1, verbose=2,
                      random_state=0).fit(X, Y)
    err = capsys.readouterr().err
    assert "BCFW" in err and "gap=" in err


@pytest.mark.parametrize("make", [
    lambda: BCFWStructuredSVM(ChainCRF(), alpha=0.05, l1_ratio=0.5, max_iter=30,
                              random_state=0),
    lambda: BCFWStructuredSVM(MulticlassSVM(), max_iter=30, random_state=0)])
def test_sparsify_keeps_every_prediction_and_shrinks_the_pickle(make):
    from sklearn_ssvm import SmoothSSVMClassifier
    rng = np.random.default_rng(0)
    X, Y = (sequences(rng, n=40, n_features=60) if isinstance(make().structure, ChainCRF)
            else (rng.normal(size=(60, 80)) * (rng.random((60, 80)) < 0.1),
                  rng.integers(0, 3, 60)))
    est = make().fit(X, Y)
    est.coef_[np.abs(est.coef_) < np.quantile(np.abs(est.coef_), 0.8)] = 0.0  # mostly zeros
    size = len(pickle.dumps(est.coef_))
    dense = {"predict": est.predict(X), "score": est.score(X, Y),
             "decision": est.decision_function(X), "objective": est.primal_objective(X, Y)}
    coef = est.coef_.copy()
    assert est.sparsify() is est and sp.issparse(est.coef_)
    assert len(pickle.dumps(est.coef_)) < 0.5 * size
    sparse = {"predict": est.predict(X), "score": est.score(X, Y),
              "decision": est.decision_function(X), "objective": est.primal_objective(X, Y)}
    for key in dense:
        if isinstance(dense[key], list):
            assert all(np.array_equal(a, b) for a, b in zip(dense[key], sparse[key]))
        else:
            np.testing.assert_array_equal(dense[key], sparse[key])
    warm = SmoothSSVMClassifier(est.structure, max_iter=1, warm_start=True, random_state=0)
    warm.fit(X, Y).sparsify().fit(X, Y)  # a warm start from a sparse coef_
    assert not sp.issparse(warm.coef_)
    np.testing.assert_array_equal(est.densify().coef_, coef)


def test_a_cluster_fit_without_a_dask_client_says_how_to_start_one():
    X, Y = sequences(np.random.default_rng(0))
    est = BCFWStructuredSVM(ChainCRF(), cluster=True)
    try:
        from distributed import Client
        Client.current()
        pytest.skip("a dask client of another test is still running")
    except ImportError:  # without distributed: the extra to install
        with pytest.raises(ImportError, match=r"sklearn_ssvm\[distributed\]"):
            est.fit(X, Y)
    except ValueError:  # no client
        with pytest.raises(ValueError, match=r"distributed\.Client\(\) for a local cluster"):
            est.fit(X, Y)
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("structure, kind", [
    ("ChainCRF", "chain"), ("MulticlassSVM", "flat"), ("BinarySVM", "flat"),
    ("MultiLabel", "multilabel"), ("CandidateSet", "candidates"), ("GraphCRF", "graph")])
@pytest.mark.parametrize("estimator", ["BCFWStructuredSVM", "BMRMStructuredSVM",
                                       "SmoothSSVMClassifier", "PragamStructuredSVM",
                                       "CRFClassifier"])
def test_dir_and_hasattr_work_on_every_fitted_estimator(estimator, structure, kind):
    """``dir()`` (scikit-learn's ``__dir__`` calls ``hasattr`` on every name) and ``hasattr``
    of the attributes that apply to some structures only: an AttributeError elsewhere, never
    a ValueError."""
    import warnings

    import sklearn_ssvm
    from _golden import _data

    X, Y = _data(kind)
    if structure == "BinarySVM":
        Y = np.asarray(Y) % 2
    est = getattr(sklearn_ssvm, estimator)(getattr(sklearn_ssvm, structure)(), max_iter=2)
    for name in ("intercept_", "transition_features_", "state_features_"):
        assert not hasattr(est, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X, Y)
        except ValueError as error:  # a combination the estimator declares it refuses
            assert "does not train" in str(error) or "refuse" in str(error)
            return
    names = dir(est)
    assert "coef_" in names
    flat = structure in ("MulticlassSVM", "BinarySVM", "MultiLabel")
    assert hasattr(est, "intercept_") == flat
    assert hasattr(est, "transition_features_") == hasattr(est, "state_features_") == (
        structure == "ChainCRF")


def test_empty_sequences_are_predicted_empty(data):
    """CRFsuite's answer for an empty sentence, without failing the batch; fit still refuses
    one (it has nothing to learn from)."""
    X, Y = data
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.1, max_iter=5, random_state=0).fit(X, Y)
    empty = np.zeros((0, X[0].shape[1]))
    batch = est.predict([X[0], empty, sp.csr_matrix(empty), X[1]])
    expected = est.predict([X[0], X[1]])
    assert [len(p) for p in batch] == [len(X[0]), 0, 0, len(X[1])]
    np.testing.assert_array_equal(batch[0], expected[0])
    np.testing.assert_array_equal(batch[3], expected[1])
    assert batch[1].dtype == est.classes_.dtype
    assert [len(p) for p in est.predict([empty, empty])] == [0, 0]
    marginals = est.predict_marginals([empty, X[2]])
    assert marginals[0].shape == (0, 3) and marginals[1].shape == (len(X[2]), 3)
    with pytest.raises(ValueError, match="empty"):
        BCFWStructuredSVM(ChainCRF(), max_iter=2).fit([X[0], empty], [Y[0], Y[0][:0]])
    with pytest.raises(ValueError, match="2-D"):
        est.predict([X[0], None])
    # through a Pipeline: the vectorizer makes the empty sentence a matrix of no rows
    sentences = [[{"w": w} for w in s.split()] for s in ("the cat sat", "a dog ran", "the dog")]
    tags = [["D", "N", "V"], ["D", "N", "V"], ["D", "N"]]
    pipe = make_pipeline(SequenceVectorizer(), BCFWStructuredSVM(ChainCRF(), max_iter=20))
    assert [len(p) for p in pipe.fit(sentences, tags).predict([sentences[0], []])] == [3, 0]


def test_token_feature_dicts_point_to_the_vectorizer():
    sentences = [[{"word": "the"}, {"word": "cat"}], [{"word": "sat"}]]
    with pytest.raises(ValueError, match="SequenceVectorizer"):
        BCFWStructuredSVM(ChainCRF()).fit(sentences, [["D", "N"], ["V"]])


def test_grid_graph_is_exported_beside_graph_crf():
    import sklearn_ssvm
    from sklearn_ssvm.structures import grid_graph

    assert sklearn_ssvm.grid_graph is grid_graph and "grid_graph" in sklearn_ssvm.__all__
