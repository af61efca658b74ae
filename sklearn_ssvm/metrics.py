"""Metrics for sequence labelling: token accuracy, conlleval-exact chunk F1, and the
calibration of per-token marginals."""

from collections import Counter

import numpy as np

__all__ = ["token_accuracy", "extract_chunks", "chunk_precision_recall_f1", "chunk_f1_score",
           "SCORERS", "get_scorer", "expected_calibration_error"]

_SCHEME_PREFIXES = {"iob": frozenset("BI"), "iobes": frozenset("BIES")}


def _check_sequences(Y_true, Y_pred):
    """Check two lists of sequences are aligned; return them as lists."""
    Y_true = list(Y_true)
    Y_pred = list(Y_pred)
    if len(Y_true) != len(Y_pred):
        raise ValueError("Y_true has %d sequences but Y_pred has %d" % (len(Y_true), len(Y_pred)))
    for i, (yt, yp) in enumerate(zip(Y_true, Y_pred)):
        if len(yt) != len(yp):
            raise ValueError("sequence %d has %d true labels but %d predicted labels"
                             % (i, len(yt), len(yp)))
    return Y_true, Y_pred


def token_accuracy(Y_true, Y_pred):
    """Compute the fraction of correctly labelled tokens over all tokens of all sequences.

    The tagging accuracy that conlleval reports beside the chunk F1 (Tjong Kim Sang & Buchholz
    2000).

    Parameters
    ----------
    Y_true : list of array-like of shape (n_tokens_i,)
        True labels of each sequence (ints or strings).
    Y_pred : list of array-like of shape (n_tokens_i,)
        Predicted labels, aligned with ``Y_true``.

    Returns
    -------
    float
        The accuracy: number of tokens whose predicted label equals the true one, divided
        by the total number of tokens (every token weighs the same, so long sequences weigh
        more than short ones).

    Raises
    ------
    ValueError
        If the numbers of sequences differ, if sequence ``i`` has different lengths in
        ``Y_true`` and ``Y_pred`` (the message names ``i``), or if there is no token at all.

    Examples
    --------
    >>> from sklearn_ssvm.metrics import token_accuracy
    >>> token_accuracy([[0, 1, 1], [2]], [[0, 1, 0], [2]])
    0.75
    """
    Y_true, Y_pred = _check_sequences(Y_true, Y_pred)
    n_tokens = sum(len(y) for y in Y_true)
    if n_tokens == 0:
        raise ValueError("token_accuracy needs at least one token")
    correct = 0
    for yt, yp in zip(Y_true, Y_pred):
        if len(yt):
            correct += int(np.count_nonzero(np.asarray(yt) == np.asarray(yp)))
    return correct / n_tokens


def _split_tag(tag, scheme, allowed, where):
    """Split 'B-NP' into ('B', 'NP'); 'O' into ('O', '')."""
    if not isinstance(tag, str):
        raise ValueError("chunk tags must be strings such as 'B-NP' or 'O', got %r %s"
                         % (tag, where))
    if tag == "O":
        return "O", ""
    prefix, sep, chunk_type = tag.partition("-")
    if not sep or prefix not in allowed or not chunk_type:
        raise ValueError("invalid tag %r %s for scheme=%r: expected 'O' or one of %s followed by "
                         "'-TYPE'" % (tag, where, scheme, "/".join(sorted(allowed))))
    return prefix, chunk_type


def _check_scheme(scheme):
    try:
        return _SCHEME_PREFIXES[scheme]
    except (KeyError, TypeError):
        raise ValueError("scheme must be one of %s, got %r"
                         % (sorted(_SCHEME_PREFIXES), scheme)) from None


def extract_chunks(tags, scheme="iob", *, _where=""):
    """Return the chunks of one tagged sentence, as conlleval delimits them.

    Chunks as conlleval reads them (Tjong Kim Sang & Buchholz 2000).

    A chunk of type ``X`` starts at a token tagged ``B-X`` or ``S-X``, or at an ``I-X`` /
    ``E-X`` token that does not continue a chunk of type ``X`` (first token of the sentence,
    after ``O``, after a chunk of another type, or after the end ``E-X`` / ``S-X`` of the
    previous chunk). A chunk ends before the next token that starts a chunk or is ``O``, after
    an ``E-X`` / ``S-X`` token, and at the end of the sentence. These are the rules of the CoNLL
    ``conlleval`` script, so IOB1 (``I-X`` opens a chunk after ``O``) and IOB2 (every chunk
    opens with ``B-X``) are both read correctly under ``scheme="iob"``, and IOBES under
    ``scheme="iobes"``.

    Parameters
    ----------
    tags : sequence of str
        The tags of one sentence, e.g. ``['B-NP', 'I-NP', 'O']``.
    scheme : {"iob", "iobes"}, default="iob"
        Allowed tag prefixes: B/I (and O) for "iob", B/I/E/S (and O) for "iobes". A tag
        outside the scheme raises ValueError.
    _where : str, default=""
        Private: text put before the token position in the error message of an invalid tag
        (:func:`chunk_precision_recall_f1` passes the sequence, e.g. ``"in Y_true[3] "``).
        Not part of the public API.

    Returns
    -------
    list of tuple (str, int, int)
        The chunks: ``(type, start, end)`` of each chunk in order, ``end`` exclusive
        (``tags[start:end]`` is the chunk).

    Examples
    --------
    >>> from sklearn_ssvm.metrics import extract_chunks
    >>> extract_chunks(['B-NP', 'I-NP', 'O', 'I-VP', 'B-VP', 'I-NP'])
    [('NP', 0, 2), ('VP', 3, 4), ('VP', 4, 5), ('NP', 5, 6)]
    """
    allowed = _check_scheme(scheme)
    chunks = []
    start = None  # start of the open chunk, None when outside any chunk
    open_type = ""
    closes_after = False  # the previous token was E- or S-: its chunk is over
    for t, tag in enumerate(tags):
        prefix, chunk_type = _split_tag(tag, scheme, allowed, _where + "at position %d" % t)
        continues = (start is not None and not closes_after and prefix in ("I", "E")
                     and chunk_type == open_type)
        if start is not None and not continues:
            chunks.append((open_type, start, t))
            start = None
        if prefix != "O" and not continues:
            start, open_type = t, chunk_type
        closes_after = prefix in ("E", "S")
    if start is not None:
        chunks.append((open_type, start, len(tags)))
    return chunks


#: prefix codes of the vectorised chunk reading
_O, _B, _I, _E, _S = range(5)


def _chunk_keys(P, T, first, n_types, longest):
    """The chunks of a corpus as integer keys ``(start, length, type)``, the rules of
    :func:`extract_chunks` on the arrays of every token's prefix code ``P``, type ``T`` and
    whether it opens a sentence (``first``): a token continues the chunk before it when it is
    ``I-X`` / ``E-X``, not first, and follows a token of type ``X`` that is neither ``O`` nor a
    chunk's end (``E``, ``S``); a chunk is a maximal run of a starting token and the tokens
    continuing it."""
    before_P, before_T = np.roll(P, 1), np.roll(T, 1)
    continues = (~first & (before_P != _O) & (before_P != _E) & (before_P != _S)
                 & ((P == _I) | (P == _E)) & (T == before_T))
    starts = np.flatnonzero((P != _O) & ~continues)
    members = np.flatnonzero(P != _O)  # every non-O token starts or continues a chunk
    last = np.r_[np.flatnonzero(np.diff(np.cumsum(~continues[members]))), members.size - 1]
    ends = members[last] + 1 if members.size else members
    return (starts * (longest + 1) + ends - starts) * n_types + T[starts]


def _chunk_counts(Y_true, Y_pred, scheme, allowed):
    """Per chunk type (sorted): true, predicted and correct chunk counts of the corpus, read at
    once with numpy; None when a tag is not a valid string of ``scheme`` (the per-sentence
    reading then names it)."""
    lengths = np.array([len(y) for y in Y_true], dtype=np.int64)
    flat = [tag for y in Y_true for tag in y] + [tag for y in Y_pred for tag in y]
    if not flat or not all(isinstance(tag, str) for tag in flat):
        return None
    tags, inverse = np.unique(np.array(flat, dtype=str), return_inverse=True)
    try:
        parts = [_split_tag(str(tag), scheme, allowed, "") for tag in tags]
    except ValueError:
        return None
    types = sorted({chunk_type for prefix, chunk_type in parts if prefix != "O"})
    code = {"O": _O, "B": _B, "I": _I, "E": _E, "S": _S}
    prefix = np.array([code[p] for p, _ in parts], dtype=np.int8)[inverse.ravel()]
    type_id = np.array([types.index(t) if p != "O" else -1 for p, t in parts])[inverse.ravel()]
    first = np.zeros(lengths.sum(), dtype=bool)
    first[np.cumsum(lengths)[:-1][lengths[1:] > 0]] = True
    first[0] = True
    half = lengths.sum()
    n_types = max(len(types), 1)
    keys = [_chunk_keys(prefix[k:k + half], type_id[k:k + half], first, n_types,
                        int(lengths.max())) for k in (0, half)]
    correct = np.intersect1d(*keys, assume_unique=True)
    return (types, *(np.bincount(k % n_types, minlength=n_types)
                     for k in (keys[0], keys[1], correct)))


def _prf(n_correct, n_pred, n_true):
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_true if n_true else 0.0
    denom = precision + recall
    f1 = 2.0 * precision * recall / denom if denom else 0.0
    return precision, recall, f1


def chunk_precision_recall_f1(Y_true, Y_pred, *, scheme="iob", average="micro"):
    """Chunk-level precision, recall and F1, counted exactly as ``conlleval``.

    The figures of conlleval, the CoNLL-2000 shared task's evaluation (Tjong Kim Sang & Buchholz
    2000).

    Chunks are delimited per sentence by :func:`extract_chunks` (they never cross sentence
    boundaries). A predicted chunk is correct when a true chunk has the same type, start and
    end.

    Parameters
    ----------
    Y_true : list of sequence of str
        True tags of each sentence, e.g. ``[['B-NP', 'I-NP', 'O'], ...]``.
    Y_pred : list of sequence of str
        Predicted tags, aligned with ``Y_true``.
    scheme : {"iob", "iobes"}, default="iob"
        Tagging scheme; "iob" reads both IOB1 and IOB2.
    average : {"micro"} or None, default="micro"
        "micro" pools the chunks of all types. None reports each type.

    Returns
    -------
    precision, recall, f1 : float
        If ``average="micro"``: correct / predicted chunks, correct / true chunks and their
        harmonic mean, all in [0, 1]. As in conlleval, a ratio whose denominator is 0 is 0 (no
        predicted chunk gives precision 0, no true chunk gives recall 0) and F1 is 0 when
        precision + recall is 0 -- in particular F1 is 0, not 1, when neither side has any
        chunk.
    per_type : dict
        If ``average=None``: maps each chunk type found in ``Y_true`` or ``Y_pred`` (sorted) to
        ``(precision, recall, f1, support)``, support being the number of true chunks of that
        type.

    Raises
    ------
    ValueError
        If the sequences are misaligned (the message names the sequence), a tag is invalid for
        the scheme, or ``average`` is unknown.

    Examples
    --------
    >>> from sklearn_ssvm.metrics import chunk_precision_recall_f1
    >>> y_true = [['B-NP', 'I-NP', 'O', 'B-VP']]
    >>> y_pred = [['B-NP', 'B-NP', 'O', 'B-VP']]
    >>> chunk_precision_recall_f1(y_true, y_pred)  # 1 of 3 predicted chunks right
    (0.3333333333333333, 0.5, 0.4)
    """
    if average not in ("micro", None):
        raise ValueError("average must be 'micro' or None, got %r" % (average,))
    allowed = _check_scheme(scheme)
    Y_true, Y_pred = _check_sequences(Y_true, Y_pred)
    counts = _chunk_counts(Y_true, Y_pred, scheme, allowed)
    if counts is not None:  # every tag valid: the corpus at once
        types, n_true, n_pred, n_correct = counts
        if average == "micro":
            return _prf(int(n_correct.sum()), int(n_pred.sum()), int(n_true.sum()))
        return {t: _prf(int(c), int(p), int(s)) + (int(s),)
                for t, c, p, s in zip(types, n_correct, n_pred, n_true) if p or s}
    n_true, n_pred, n_correct = Counter(), Counter(), Counter()
    for i, (yt, yp) in enumerate(zip(Y_true, Y_pred)):
        true_chunks = extract_chunks(yt, scheme, _where="in Y_true[%d] " % i)
        pred_chunks = extract_chunks(yp, scheme, _where="in Y_pred[%d] " % i)
        n_true.update(c[0] for c in true_chunks)
        n_pred.update(c[0] for c in pred_chunks)
        n_correct.update(c[0] for c in set(true_chunks).intersection(pred_chunks))
    if average == "micro":
        return _prf(sum(n_correct.values()), sum(n_pred.values()), sum(n_true.values()))
    return {t: _prf(n_correct[t], n_pred[t], n_true[t]) + (n_true[t],)
            for t in sorted(set(n_true) | set(n_pred))}


def chunk_f1_score(Y_true, Y_pred, *, scheme="iob"):
    """Compute the micro-averaged chunk F1 in [0, 1], exactly as the ``conlleval`` script.

    The score of conlleval, the CoNLL-2000 shared task's evaluation (Tjong Kim Sang & Buchholz
    2000).

    Multiply by 100 to compare with the "FB1" figure conlleval prints. See
    :func:`chunk_precision_recall_f1` for the chunk rules and the zero-denominator conventions
    (F1 is 0 when nothing is predicted or nothing is true).

    Parameters
    ----------
    Y_true : list of sequence of str
        True tags of each sentence.
    Y_pred : list of sequence of str
        Predicted tags, aligned with ``Y_true``.
    scheme : {"iob", "iobes"}, default="iob"
        Tagging scheme; "iob" reads both IOB1 and IOB2.

    Returns
    -------
    float
        Chunk F1, the harmonic mean of chunk precision and recall (the third value
        :func:`chunk_precision_recall_f1` returns with ``average="micro"``).

    Examples
    --------
    >>> from sklearn_ssvm.metrics import chunk_f1_score
    >>> chunk_f1_score([['B-NP', 'I-NP', 'O']], [['B-NP', 'I-NP', 'O']])
    1.0
    """
    return chunk_precision_recall_f1(Y_true, Y_pred, scheme=scheme)[2]


def _scorer(score_func):
    from sklearn.metrics import make_scorer

    return make_scorer(score_func)


def get_scorer(scoring):
    """Return a scorer ``scorer(estimator, X, Y)`` for lists of sequences.

    The chunk F1 is conlleval's (Tjong Kim Sang & Buchholz 2000).

    A scorer for ``scoring=`` of ``GridSearchCV``, ``cross_validate`` and the library's CV
    estimators.

    Parameters
    ----------
    scoring : str or callable
        ``"chunk_f1"`` (conlleval chunk F1, :func:`chunk_f1_score`), ``"token_accuracy"``
        (:func:`token_accuracy`), or any scikit-learn scorer name or callable (returned as
        scikit-learn's ``get_scorer`` gives it).

    Returns
    -------
    callable
        The scorer: a scikit-learn scorer built with ``make_scorer`` from
        :func:`chunk_f1_score` or :func:`token_accuracy` for the two names above, else
        what scikit-learn's ``get_scorer`` returns for ``scoring``.

    Examples
    --------
    >>> from sklearn_ssvm.metrics import get_scorer
    >>> scorer = get_scorer("chunk_f1")
    """
    if isinstance(scoring, str) and scoring in SCORERS:
        return _scorer(SCORERS[scoring])
    from sklearn.metrics import get_scorer as sklearn_get_scorer

    return sklearn_get_scorer(scoring)


#: the sequence metrics :func:`get_scorer` knows by name
SCORERS = {"chunk_f1": chunk_f1_score, "token_accuracy": token_accuracy}


def expected_calibration_error(Y_true, marginals, *, n_bins=10):
    """Compute the token-level expected calibration error of per-token marginals.

    Each token's prediction is its most probable label, its confidence that label's
    marginal; tokens are grouped into ``n_bins`` equal bins of confidence on [0, 1], and the
    error is ``sum_b (n_b / n) |accuracy_b - confidence_b|``, the bins' gaps between the
    fraction of right predictions and the mean confidence (Guo et al. 2017, ICML).

    Parameters
    ----------
    Y_true : list of array-like of int
        The true labels of each sequence, as column indices of its marginals (for an
        estimator's ``predict_marginals``: ``np.searchsorted(est.classes_, y)``).
    marginals : list of ndarray of shape (n_tokens, n_labels)
        Each sequence's marginals, rows summing to 1.
    n_bins : int, default=10
        Number of confidence bins.

    Returns
    -------
    float
        The error, in [0, 1]; 0 for perfectly calibrated confidences.
    """
    if len(Y_true) != len(marginals):
        raise ValueError(f"Y_true has {len(Y_true)} sequences and marginals {len(marginals)}.")
    n_bins = int(n_bins)
    if n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins}.")
    rows = [np.asarray(m, dtype=float).reshape(len(y), -1) for m, y in zip(marginals, Y_true)]
    if not rows or sum(len(r) for r in rows) == 0:
        raise ValueError("no tokens to score.")
    top = np.concatenate([r.max(axis=1) for r in rows])
    right = np.concatenate([r.argmax(axis=1) == np.asarray(y) for r, y in zip(rows, Y_true)])
    which = np.minimum((top * n_bins).astype(int), n_bins - 1)
    error = 0.0
    for b in range(n_bins):
        inside = which == b
        if inside.any():
            error += inside.mean() * abs(top[inside].mean() - right[inside].mean())
    return float(error)
