"""Tests of sklearn_ssvm.feature_extraction."""

import pickle
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction import DictVectorizer, FeatureHasher

from sklearn_ssvm.feature_extraction import SequenceVectorizer, chunking_token_features

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"

X_SMALL = [
    [{"w": "the", "bias": True, "len": 3}, {"w": "dog", "bias": 1, "cap": False}],
    [{"w": "ran", "bias": 1, "len": 2.5}],
    [{"w": "the"}, {"w": "cat", "x": np.float32(0.5)}, {"bias": True}],
]


def _flat(X):
    return [token for seq in X for token in seq]


# --------------------------------------------------------------------------- vectorizer


def test_matches_dict_vectorizer():
    vec = SequenceVectorizer()
    Xt = vec.fit_transform(X_SMALL)
    assert [x.shape for x in Xt] == [(2, 8), (1, 8), (3, 8)]
    assert all(isinstance(x, sp.csr_matrix) for x in Xt)
    assert vec.n_features_out_ == 8
    names = vec.get_feature_names_out()
    assert names.tolist() == ["bias", "cap", "len", "w=cat", "w=dog", "w=ran", "w=the", "x"]
    ref = DictVectorizer()
    M = ref.fit_transform(_flat(X_SMALL))
    np.testing.assert_array_equal(names, ref.get_feature_names_out())
    np.testing.assert_array_equal(sp.vstack(Xt).toarray(), M.toarray())
    assert vec.vocabulary_ == ref.vocabulary_


def test_values_and_names():
    vec = SequenceVectorizer().fit(X_SMALL)
    Xt = vec.transform(X_SMALL)
    col = vec.vocabulary_
    assert Xt[0][0, col["len"]] == 3.0
    assert Xt[1][0, col["len"]] == 2.5
    assert Xt[2][1, col["x"]] == 0.5
    # 'cap': False is in the vocabulary (as in DictVectorizer) but stores no entry
    assert Xt[0][1, col["cap"]] == 0.0 and Xt[0][1].nnz == 2
    assert Xt[0][0, col["w=the"]] == 1.0 and Xt[2][0, col["w=the"]] == 1.0


def test_unseen_features_are_ignored():
    vec = SequenceVectorizer().fit(X_SMALL)
    (x,) = vec.transform([[{"w": "the", "new": 1, "w2": "zzz"}, {"w": "unknown"}]])
    assert x.shape == (2, vec.n_features_out_)
    assert x.nnz == 1 and x[0, vec.vocabulary_["w=the"]] == 1.0


def test_fit_transform_equals_fit_then_transform():
    a = SequenceVectorizer().fit_transform(X_SMALL)
    b = SequenceVectorizer().fit(X_SMALL).transform(X_SMALL)
    for x, y in zip(a, b):
        assert (x != y).nnz == 0


def test_transform_packed():
    vec = SequenceVectorizer().fit(X_SMALL)
    Xp, offsets = vec.transform_packed(X_SMALL)
    assert offsets.tolist() == [0, 2, 3, 6]
    assert Xp.shape == (6, vec.n_features_out_) and Xp.has_canonical_format
    for i, x in enumerate(vec.transform(X_SMALL)):
        assert (Xp[offsets[i] : offsets[i + 1]] != x).nnz == 0


def test_min_df():
    X = [[{"a": "x", "b": 1}, {"a": "y", "b": 1}], [{"a": "x", "c": 1}]]
    vec = SequenceVectorizer(min_df=2)
    Xt = vec.fit_transform(X)
    # 'a=x' occurs in 2 tokens and 'b' in 2; 'a=y' and 'c' in 1
    assert vec.get_feature_names_out().tolist() == ["a=x", "b"]
    np.testing.assert_array_equal(Xt[0].toarray(), [[1, 1], [0, 1]])
    np.testing.assert_array_equal(Xt[1].toarray(), [[1, 0]])
    np.testing.assert_array_equal(vec.transform(X)[1].toarray(), [[1, 0]])
    with pytest.raises(ValueError, match="min_df=3 removes every feature"):
        SequenceVectorizer(min_df=3).fit(X)


def test_hashing_matches_feature_hasher():
    vec = SequenceVectorizer(hashing=True, n_features=64)
    Xt = vec.fit_transform(X_SMALL)
    assert vec.n_features_out_ == 64 and not hasattr(vec, "vocabulary_")
    ref = FeatureHasher(n_features=64, alternate_sign=False).transform(_flat(X_SMALL))
    np.testing.assert_array_equal(sp.vstack(Xt).toarray(), ref.toarray())
    # unseen features are hashed too
    assert vec.transform([[{"brand-new": 1}]])[0].nnz == 1
    with pytest.raises(AttributeError, match="hashing=True"):
        vec.get_feature_names_out()
    with pytest.raises(ValueError, match="token 0 in sequence 1"):
        vec.transform([[{"a": 1}], [{"a": [1, 2]}]])  # (a list of str is features: below)


def test_dtype():
    Xt = SequenceVectorizer(dtype=np.float32).fit_transform(X_SMALL)
    assert all(x.dtype == np.float32 for x in Xt)
    Xt = SequenceVectorizer(hashing=True, dtype=np.float32).fit_transform(X_SMALL)
    assert all(x.dtype == np.float32 for x in Xt)


@pytest.mark.parametrize("hashing", [False, True])
def test_input_validation(hashing):
    vec = SequenceVectorizer(hashing=hashing)
    with pytest.raises(ValueError, match="sequence 0 must be a list"):
        vec.fit([{"a": 1}])
    with pytest.raises(ValueError, match="X must be a list of sequences"):
        vec.fit({"a": 1})
    with pytest.raises(ValueError, match="no sequence"):
        vec.fit([])
    with pytest.raises(ValueError, match="token 1 of sequence 1 must be a dict"):
        vec.fit([[{"a": 1}], [{"a": 1}, "a"]])
    with pytest.raises(ValueError, match="value None for feature 'b' of token 0 in sequence 1"):
        vec.fit([[{"a": 1}], [{"b": None}]])
    with pytest.raises(ValueError, match="keys must be strings"):
        vec.fit([[{1: "a"}]])


def test_not_fitted_and_params():
    with pytest.raises(NotFittedError):
        SequenceVectorizer().transform(X_SMALL)
    with pytest.raises(ValueError, match="min_df"):
        SequenceVectorizer(min_df=0).fit(X_SMALL)
    with pytest.raises(ValueError, match="n_features"):
        SequenceVectorizer(hashing=True, n_features=0).fit(X_SMALL)


def test_clone_and_pickle():
    vec = SequenceVectorizer(min_df=1, dtype=np.float32)
    assert clone(vec).get_params() == vec.get_params()
    vec.fit(X_SMALL)
    restored = pickle.loads(pickle.dumps(vec))
    for x, y in zip(vec.transform(X_SMALL), restored.transform(X_SMALL)):
        assert (x != y).nnz == 0


def test_refit_replaces_vocabulary():
    vec = SequenceVectorizer().fit(X_SMALL)
    vec.fit([[{"z": "1"}]])
    assert vec.get_feature_names_out().tolist() == ["z=1"]
    assert vec.transform(X_SMALL)[0].nnz == 0


# --------------------------------------------------------------------------- template


def test_chunking_token_features_by_hand():
    sentence = [("The", "DT", "B-NP"), ("IBM", "NNP", "I-NP"), ("42", "CD", "I-NP")]
    feats = chunking_token_features(sentence)
    assert len(feats) == 3
    assert feats[1] == {
        "bias": True,
        "w.lower": "ibm", "w[-3:]": "IBM", "w[-2:]": "BM", "w.isupper": True,
        "pos": "NNP", "pos[:2]": "NN",
        "-1:w.lower": "the", "-1:w[-3:]": "The", "-1:w[-2:]": "he", "-1:w.istitle": True,
        "-1:pos": "DT", "-1:pos[:2]": "DT",
        "+1:w.lower": "42", "+1:w[-3:]": "42", "+1:w[-2:]": "42", "+1:w.isdigit": True,
        "+1:pos": "CD", "+1:pos[:2]": "CD",
    }
    assert feats[0]["BOS"] is True and "EOS" not in feats[0]
    assert feats[0]["+2:w.lower"] == "42" and "-1:pos" not in feats[0]
    assert feats[2]["EOS"] is True and feats[2]["-2:w.istitle"] is True
    assert "+1:pos" not in feats[2]
    # (word, pos) pairs work the same
    assert chunking_token_features([t[:2] for t in sentence]) == feats


def test_chunking_token_features_single_token_and_empty():
    (f,) = chunking_token_features([("Go", "VB")])
    assert f == {
        "bias": True, "w.lower": "go", "w[-3:]": "Go", "w[-2:]": "Go", "w.istitle": True,
        "pos": "VB", "pos[:2]": "VB", "BOS": True, "EOS": True,
    }
    assert chunking_token_features([]) == []


def test_chunking_template_on_conll2000():
    path = SHARED / "conll2000" / "train.txt.gz"
    if not path.exists():
        pytest.skip("CoNLL-2000 data not available")
    from sklearn_ssvm.datasets import read_conll

    sentences = read_conll(path)
    features = [chunking_token_features(s) for s in sentences]
    vec = SequenceVectorizer()
    Xt = vec.fit_transform(features)
    # the figures of shared/datasets/README.md
    assert vec.n_features_out_ == 104_725
    assert len(Xt) == 8936 and sum(x.shape[0] for x in Xt) == 211_727
    nnz = sum(x.nnz for x in Xt)
    assert nnz / 211_727 == pytest.approx(25.5145, abs=1e-4)
    assert all(x.shape[1] == 104_725 and (x.data == 1.0).all() for x in Xt[:100])


@pytest.mark.parametrize("hashing", [False, True])
def test_nested_and_list_values_are_spelled_out_as_python_crfsuite_reads_them(hashing):
    """A dict's keys prefixed by its key and ':', each string of a list a binary 'key=string'
    (counted): the features of the same tokens written flat; the hasher agrees."""
    nested = [[{"w": {"lower": "the", "len": 3, "shape": {"title": True}},
                "ctx": ["a", "b", "a"]},
               {"w": {"lower": "cat"}, "ctx": ("c",)}]]
    flat = [[{"w:lower": "the", "w:len": 3, "w:shape:title": True, "ctx=a": 2.0, "ctx=b": 1.0},
             {"w:lower": "cat", "ctx=c": 1.0}]]
    vec = SequenceVectorizer(hashing=hashing, n_features=256)
    Xn, Xf = vec.fit_transform(nested)[0], clone(vec).fit_transform(flat)[0]
    assert (Xn != Xf).nnz == 0
    assert (vec.transform(nested)[0] != Xn).nnz == 0
    if not hashing:
        assert vec.get_feature_names_out().tolist() == [
            "ctx=a", "ctx=b", "ctx=c", "w:len", "w:lower=cat", "w:lower=the", "w:shape:title"]
    with pytest.raises(ValueError, match="feature 'ctx' of token 0 in sequence 1"):
        vec.transform([[{"a": 1}], [{"ctx": [1, 2]}]])
    with pytest.raises(ValueError, match="feature 'w:x' of token 0 in sequence 0"):
        SequenceVectorizer(hashing=hashing).fit([[{"w": {"x": None}}]])


@pytest.mark.parametrize("hashing", [False, True])
def test_empty_sequences_are_matrices_of_no_rows(hashing):
    vec = SequenceVectorizer(hashing=hashing, n_features=32)
    Xt = vec.fit_transform([[{"a": 1}], [], [{"b": "x"}]])
    assert [x.shape for x in Xt] == [(1, vec.n_features_out_), (0, vec.n_features_out_),
                                     (1, vec.n_features_out_)]
    assert [x.shape[0] for x in vec.transform([[], [{"a": 2}]])] == [0, 1]
