"""Tests of sklearn_ssvm.metrics; expected values are derived by hand or published."""

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ssvm.metrics import (
    chunk_f1_score,
    chunk_precision_recall_f1,
    extract_chunks,
    token_accuracy,
)

# --------------------------------------------------------------------------- token accuracy


def test_token_accuracy_pools_tokens():
    assert token_accuracy([[0, 1, 1], [2]], [[0, 1, 0], [2]]) == 0.75
    assert token_accuracy([["B-NP", "O"]], [["B-NP", "O"]]) == 1.0
    assert token_accuracy([np.array([1, 2, 3])], [np.array([0, 0, 0])]) == 0.0


def test_token_accuracy_validation():
    with pytest.raises(ValueError, match="sequence 1 has 2 true labels but 1 predicted"):
        token_accuracy([[0], [1, 1]], [[0], [1]])
    with pytest.raises(ValueError, match="2 sequences but Y_pred has 1"):
        token_accuracy([[0], [1]], [[0]])
    with pytest.raises(ValueError, match="at least one token"):
        token_accuracy([[]], [[]])


# --------------------------------------------------------------------------- chunks


@pytest.mark.parametrize(
    "tags, chunks",
    [
        # IOB2
        (["B-NP", "I-NP", "O", "B-VP", "I-VP"], [("NP", 0, 2), ("VP", 3, 5)]),
        # IOB1: I- opens a chunk at sentence start and after O; B- only splits
        (["I-NP", "I-NP", "B-NP", "O", "I-VP"], [("NP", 0, 2), ("NP", 2, 3), ("VP", 4, 5)]),
        # I- after O
        (["O", "I-NP", "I-NP"], [("NP", 1, 3)]),
        # a type change ends a chunk and starts another
        (["B-NP", "I-VP", "I-VP"], [("NP", 0, 1), ("VP", 1, 3)]),
        (["B-NP", "I-NP", "I-PP", "I-NP"], [("NP", 0, 2), ("PP", 2, 3), ("NP", 3, 4)]),
        # B- directly after B-: two one-token chunks
        (["B-NP", "B-NP"], [("NP", 0, 1), ("NP", 1, 2)]),
        # chunk running to the sentence end; one-token sentence
        (["O", "B-NP", "I-NP"], [("NP", 1, 3)]),
        (["I-ADJP"], [("ADJP", 0, 1)]),
        # no chunk at all
        (["O", "O"], []),
        ([], []),
        # types may contain hyphens: split at the first one
        (["B-A-B", "I-A-B"], [("A-B", 0, 2)]),
    ],
)
def test_extract_chunks_iob(tags, chunks):
    assert extract_chunks(tags) == chunks


@pytest.mark.parametrize(
    "tags, chunks",
    [
        (
            ["S-NP", "B-VP", "I-VP", "E-VP", "O", "B-NP", "E-NP"],
            [("NP", 0, 1), ("VP", 1, 4), ("NP", 5, 7)],
        ),
        # a chunk ends after E- and after S-, whatever follows
        (["E-NP", "E-NP"], [("NP", 0, 1), ("NP", 1, 2)]),
        (["B-NP", "E-NP", "I-NP"], [("NP", 0, 2), ("NP", 2, 3)]),
        (["S-NP", "I-NP", "E-NP"], [("NP", 0, 1), ("NP", 1, 3)]),
        (["S-NP", "S-NP"], [("NP", 0, 1), ("NP", 1, 2)]),
        # B- or S- inside a chunk closes it
        (["B-NP", "S-NP"], [("NP", 0, 1), ("NP", 1, 2)]),
        (["B-NP", "I-NP", "B-NP", "E-NP"], [("NP", 0, 2), ("NP", 2, 4)]),
        # E- after O opens (and closes) a chunk; an unfinished B- ends with the sentence
        (["O", "E-NP", "B-VP", "I-VP"], [("NP", 1, 2), ("VP", 2, 4)]),
        # type change inside
        (["B-NP", "E-VP"], [("NP", 0, 1), ("VP", 1, 2)]),
    ],
)
def test_extract_chunks_iobes(tags, chunks):
    assert extract_chunks(tags, scheme="iobes") == chunks


def test_iob1_and_iob2_give_the_same_scores():
    iob1 = [["I-NP", "I-NP", "B-NP", "I-NP", "O", "I-PP", "I-NP"], ["I-VP"]]
    iob2 = [["B-NP", "I-NP", "B-NP", "I-NP", "O", "B-PP", "B-NP"], ["B-VP"]]
    expected = [("NP", 0, 2), ("NP", 2, 4), ("PP", 5, 6), ("NP", 6, 7)]
    assert extract_chunks(iob1[0]) == extract_chunks(iob2[0]) == expected
    assert chunk_precision_recall_f1(iob1, iob2) == (1.0, 1.0, 1.0)
    assert chunk_f1_score(iob2, iob1) == 1.0


def test_iobes_scores_like_the_equivalent_iob():
    iob = [["B-NP", "I-NP", "I-NP", "B-VP", "O", "B-NP", "B-NP", "I-NP"]]
    iobes = [["B-NP", "I-NP", "E-NP", "S-VP", "O", "S-NP", "B-NP", "E-NP"]]
    assert extract_chunks(iob[0]) == extract_chunks(iobes[0], scheme="iobes")
    pred = [["B-NP", "I-NP", "O", "B-VP", "O", "B-NP", "I-NP", "I-NP"]]
    pred_iobes = [["B-NP", "E-NP", "O", "S-VP", "O", "B-NP", "I-NP", "E-NP"]]
    assert chunk_precision_recall_f1(iob, pred) == chunk_precision_recall_f1(
        iobes, pred_iobes, scheme="iobes"
    )


def test_chunk_scores_hand_computed():
    # true chunks: NP(0,2) VP(3,4) NP(4,5)                         -> 3
    # predicted:   NP(0,1) NP(1,2) VP(3,4) NP(4,5) (I-NP after B-VP) -> 4
    # correct:     VP(3,4) NP(4,5)                                  -> 2
    y_true = [["B-NP", "I-NP", "O", "B-VP", "B-NP"]]
    y_pred = [["B-NP", "B-NP", "O", "B-VP", "I-NP"]]
    p, r, f = chunk_precision_recall_f1(y_true, y_pred)
    assert p == pytest.approx(2 / 4)
    assert r == pytest.approx(2 / 3)
    assert f == pytest.approx(4 / 7)
    assert chunk_f1_score(y_true, y_pred) == pytest.approx(4 / 7)

    per_type = chunk_precision_recall_f1(y_true, y_pred, average=None)
    assert list(per_type) == ["NP", "VP"]
    # NP: 2 true, 3 predicted, 1 correct
    np.testing.assert_allclose(per_type["NP"], (1 / 3, 1 / 2, 0.4, 2))
    assert per_type["VP"] == (1.0, 1.0, 1.0, 1)


def test_chunk_needs_same_type_start_and_end():
    assert chunk_f1_score([["B-NP", "I-NP"]], [["B-VP", "I-VP"]]) == 0.0
    # same start, different end
    assert chunk_precision_recall_f1([["B-NP", "I-NP", "O"]], [["B-NP", "I-NP", "I-NP"]]) == (
        0.0,
        0.0,
        0.0,
    )
    # per type: a type only predicted has recall 0 and support 0
    per_type = chunk_precision_recall_f1([["B-NP", "O"]], [["B-NP", "B-PP"]], average=None)
    assert per_type == {"NP": (1.0, 1.0, 1.0, 1), "PP": (0.0, 0.0, 0.0, 0)}


def test_chunks_do_not_cross_sentences():
    # Within one sentence the last I-NP would continue the chunk; across a
    # sentence boundary it opens a new one, exactly like B-NP.
    y_true = [["B-NP", "I-NP"], ["I-NP"]]
    y_pred = [["B-NP", "I-NP"], ["B-NP"]]
    assert chunk_precision_recall_f1(y_true, y_pred) == (1.0, 1.0, 1.0)
    flat_true = [["B-NP", "I-NP", "I-NP"]]
    flat_pred = [["B-NP", "I-NP", "B-NP"]]
    assert chunk_f1_score(flat_true, flat_pred) == 0.0


def test_zero_denominators_follow_conlleval():
    # nothing on either side: precision = recall = F1 = 0 (not 1)
    assert chunk_precision_recall_f1([["O", "O"]], [["O", "O"]]) == (0.0, 0.0, 0.0)
    # nothing predicted: precision 0 by convention, recall 0
    assert chunk_precision_recall_f1([["B-NP", "O"]], [["O", "O"]]) == (0.0, 0.0, 0.0)
    # nothing true
    assert chunk_precision_recall_f1([["O", "O"]], [["B-NP", "O"]]) == (0.0, 0.0, 0.0)
    assert chunk_f1_score([[]], [[]]) == 0.0


def test_chunk_validation():
    with pytest.raises(ValueError, match="sequence 1 has 1 true labels but 2"):
        chunk_f1_score([["O"], ["O"]], [["O"], ["O", "O"]])
    with pytest.raises(ValueError, match="2 sequences but Y_pred has 1"):
        chunk_f1_score([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match=r"'E-NP' in Y_true\[0\] at position 1"):
        chunk_f1_score([["B-NP", "E-NP"]], [["B-NP", "I-NP"]])
    with pytest.raises(ValueError, match=r"'X-NP' in Y_pred\[0\]"):
        chunk_f1_score([["B-NP"]], [["X-NP"]], scheme="iobes")
    for bad in ("B", "B-", "NP", "o"):
        with pytest.raises(ValueError, match="invalid tag"):
            extract_chunks(["O", bad])
    with pytest.raises(ValueError, match="must be strings"):
        extract_chunks([0, 1])
    with pytest.raises(ValueError, match="scheme"):
        chunk_f1_score([["O"]], [["O"]], scheme="bilou")
    with pytest.raises(ValueError, match="average"):
        chunk_precision_recall_f1([["O"]], [["O"]], average="macro")


def test_conll2000_baseline_matches_published_figures():
    # The CoNLL-2000 shared task baseline tags each token with the chunk tag
    # most frequent for its POS in the training data; Tjong Kim Sang &
    # Buchholz (2000) report, with conlleval, precision 72.58%, recall
    # 82.14% and F 77.07 on the test set.
    conll = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "conll2000"
    if not (conll / "train.txt.gz").exists() or not (conll / "test.txt.gz").exists():
        pytest.skip("CoNLL-2000 data not available")
    from sklearn_ssvm.datasets import read_conll

    counts = defaultdict(Counter)
    for sentence in read_conll(conll / "train.txt.gz", columns=[1, 2]):
        for pos, tag in sentence:
            counts[pos][tag] += 1
    best = {pos: c.most_common(1)[0][0] for pos, c in counts.items()}
    test = read_conll(conll / "test.txt.gz", columns=[1, 2])
    y_true = [[tag for _, tag in s] for s in test]
    y_pred = [[best.get(pos, "O") for pos, _ in s] for s in test]
    p, r, f = chunk_precision_recall_f1(y_true, y_pred)
    assert round(100 * p, 2) == 72.58
    assert round(100 * r, 2) == 82.14
    assert round(100 * f, 2) == 77.07


# --------------------------------------------------------------------------- properties


def _reference_chunks(tags):
    """Chunks from pairwise start/end predicates on (previous, current) tags.

    An independent formulation of the conlleval rules: a chunk ends between
    two tokens when the previous tag closes one, and starts at a token when
    the current tag opens one; the sentence starts and ends with 'O'.
    """

    def split(tag):
        return ("O", "") if tag == "O" else tuple(tag.split("-", 1))

    def ends(prev, cur):
        (pp, pt), (cp, ct) = prev, cur
        if pp == "O":
            return False
        return pp in "ES" or cp in "BSO" or pt != ct

    def starts(prev, cur):
        (pp, pt), (cp, ct) = prev, cur
        if cp == "O":
            return False
        return cp in "BS" or pp in "OES" or pt != ct

    parsed = [("O", "")] + [split(t) for t in tags] + [("O", "")]
    chunks, begin = [], None
    for t in range(1, len(parsed)):
        prev, cur = parsed[t - 1], parsed[t]
        if begin is not None and ends(prev, cur):
            chunks.append((prev[1], begin, t - 1))
            begin = None
        if starts(prev, cur):
            begin = t - 1
    return chunks


_iob_tag = st.sampled_from(["O", "B-NP", "I-NP", "B-VP", "I-VP"])
_iobes_tag = st.sampled_from(["O", "B-NP", "I-NP", "E-NP", "S-NP", "B-VP", "I-VP", "E-VP", "S-VP"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_iobes_tag, max_size=12))
def test_extract_chunks_matches_predicate_formulation(tags):
    assert extract_chunks(tags, scheme="iobes") == _reference_chunks(tags)


def _scores_by_sentence(y_true, y_pred, scheme):
    """Per-type (correct, predicted, true) chunk counts, one sentence at a time through
    :func:`extract_chunks`: the reading the corpus-wide numpy one must equal."""
    counts = defaultdict(lambda: [0, 0, 0])
    for yt, yp in zip(y_true, y_pred):
        true, pred = set(extract_chunks(yt, scheme)), set(extract_chunks(yp, scheme))
        for kind, *_ in true & pred:
            counts[kind][0] += 1
        for kind, *_ in pred:
            counts[kind][1] += 1
        for kind, *_ in true:
            counts[kind][2] += 1
    return counts


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_iobes_tag, max_size=7), max_size=5), st.randoms(use_true_random=False),
       st.sampled_from(["iob", "iobes"]))
def test_corpus_counts_equal_the_sentence_by_sentence_reading(y_true, rnd, scheme):
    """chunk_precision_recall_f1 reads the whole corpus at once with numpy (empty sentences and
    chunks at sentence edges included); its counts are extract_chunks' per sentence."""
    if scheme == "iob":
        y_true = [[t.replace("E-", "I-").replace("S-", "B-") for t in s] for s in y_true]
    vocab = sorted({t for s in y_true for t in s} | {"O", "B-NP"})
    y_pred = [[rnd.choice(vocab) for _ in s] for s in y_true]
    counts = _scores_by_sentence(y_true, y_pred, scheme)
    micro = [sum(c[k] for c in counts.values()) for k in range(3)]
    expected = [c / p if p else 0.0 for c, p in ((micro[0], micro[1]), (micro[0], micro[2]))]
    p, r, f = chunk_precision_recall_f1(y_true, y_pred, scheme=scheme)
    assert (p, r) == pytest.approx(expected, abs=0) and 0.0 <= f <= 1.0
    per_type = chunk_precision_recall_f1(y_true, y_pred, scheme=scheme, average=None)
    assert sorted(per_type) == sorted(counts)
    for kind, (correct, predicted, true) in counts.items():
        assert per_type[kind][3] == true
        assert per_type[kind][0] == (correct / predicted if predicted else 0.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_iob_tag, max_size=8), max_size=4), st.randoms(use_true_random=False))
def test_chunk_score_properties(y_true, rnd):
    y_pred = [[rnd.choice(["O", "B-NP", "I-NP", "B-VP", "I-VP"]) for _ in s] for s in y_true]
    p, r, f = chunk_precision_recall_f1(y_true, y_pred)
    assert 0.0 <= min(p, r, f) and max(p, r, f) <= 1.0
    # swapping the roles swaps precision and recall
    p2, r2, f2 = chunk_precision_recall_f1(y_pred, y_true)
    assert (p2, r2) == (r, p) and f2 == pytest.approx(f)
    # a perfect prediction scores 1 whenever there is a chunk
    has_chunk = any(t != "O" for s in y_true for t in s)
    assert chunk_f1_score(y_true, y_true) == (1.0 if has_chunk else 0.0)
    # rewriting IOB1 as IOB2 (B- at every chunk start) changes nothing
    as_iob2 = []
    for s in y_true:
        out = ["O"] * len(s)
        for typ, a, b in extract_chunks(s):
            out[a:b] = ["B-" + typ] + ["I-" + typ] * (b - a - 1)
        as_iob2.append(out)
    assert chunk_precision_recall_f1(as_iob2, y_pred) == (p, r, f)


@pytest.mark.parametrize("name, metric", [("chunk_f1", "chunk_f1_score"),
                                          ("token_accuracy", "token_accuracy")])
def test_scorers_equal_the_metrics_and_work_in_grid_search(name, metric):
    from sklearn.model_selection import GridSearchCV

    from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
    from sklearn_ssvm import metrics
    from sklearn_ssvm.metrics import get_scorer

    rng = np.random.default_rng(0)
    tags = np.array(["B-NP", "I-NP", "O"])
    W = rng.normal(size=(4, 3))
    X = [rng.normal(size=(3 + i % 4, 4)) for i in range(30)]
    Y = [tags[np.argmax(x @ W, axis=1)] for x in X]
    est = BCFWStructuredSVM(ChainCRF(labels=tags), alpha=0.1, max_iter=3, random_state=0)
    est.fit(X, Y)
    scorer = get_scorer(name)
    assert scorer(est, X, Y) == getattr(metrics, metric)(Y, est.predict(X))
    search = GridSearchCV(est, {"alpha": [0.01, 1.0]}, scoring=scorer, cv=3).fit(X, Y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert get_scorer("accuracy") is not None  # scikit-learn's names pass through
