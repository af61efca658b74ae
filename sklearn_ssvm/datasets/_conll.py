"""Reader for CoNLL-style column files (one token a line, blank line between sentences)."""

import gzip
import io
import numbers
import os

__all__ = ["read_conll"]

_GZIP_MAGIC = b"\x1f\x8b"
_DOCSTART = "-DOCSTART-"


def _open_text(path_or_file, encoding):
    """Return ``(lines, to_close)`` for a path or a file object, gunzipping if needed.

    Streams this function opens are listed in ``to_close``; a file object given by the caller is
    never closed.
    """
    if isinstance(path_or_file, (str, bytes, os.PathLike)):
        raw = open(path_or_file, "rb")
        to_close = [raw]
    elif hasattr(path_or_file, "read"):
        raw, to_close = path_or_file, []
        if isinstance(raw.read(0), str):  # a text stream: no gzip possible
            return raw, to_close
    else:
        raise TypeError("read_conll expects a path or a file object, got %s"
                        % type(path_or_file).__name__)

    # Detect gzip from the magic bytes without consuming them.
    if hasattr(raw, "peek"):
        head = raw.peek(2)[:2]
    elif hasattr(raw, "seekable") and raw.seekable():
        pos = raw.tell()
        head = raw.read(2)
        raw.seek(pos)
    else:  # an unseekable stream without peek: buffer it
        raw = io.BytesIO(raw.read())
        to_close.append(raw)
        head = raw.getvalue()[:2]
    if head == _GZIP_MAGIC:
        # GzipFile never closes a fileobj it was given.
        raw = gzip.GzipFile(fileobj=raw, mode="rb")
        to_close.append(raw)
    text = io.TextIOWrapper(raw, encoding=encoding, newline=None)
    if raw is path_or_file:
        # Closing the wrapper would close the caller's file: detach it instead.
        to_close.append(_Detacher(text))
    else:
        to_close.append(text)
    return text, to_close


class _Detacher:
    """Close a TextIOWrapper by detaching it, leaving its buffer open."""

    def __init__(self, wrapper):
        self._wrapper = wrapper

    def close(self):
        self._wrapper.detach()


def read_conll(path_or_file, columns=None, *, encoding="utf-8"):
    """Read a CoNLL-format column file into a list of sentences.

    The format has one token per line, its columns separated by whitespace (spaces or tabs),
    and a blank line (possibly holding only whitespace) between sentences. Lines whose first
    column is ``-DOCSTART-`` are document separators: they are skipped and end the current
    sentence. Several blank lines in a row, blank lines at the start or end of the file and a
    missing final newline are all accepted. Gzip-compressed input is recognised from its magic
    bytes, whatever the file name.

    Parameters
    ----------
    path_or_file : path-like or file object
        A file name, or an open file object in binary mode (plain or gzip) or in text mode
        (plain).
    columns : int or sequence of int, default=None
        Which columns to keep (negative indices count from the end, as in Python). None keeps
        them all. If an int, each token is that single column's string instead of a tuple.
    encoding : str, default="utf-8"
        Text encoding of the file.

    Returns
    -------
    list of list of tuple of str
        The sentences: one list per sentence, one tuple of column strings per token (or one
        string per token when ``columns`` is an int). For CoNLL-2000 chunking files each token
        is ``(word, pos, chunk_tag)``.

    Raises
    ------
    ValueError
        If the lines of the file do not all have the same number of columns (when ``columns``
        is None) or a line lacks a requested column; the message gives the line number.

    Examples
    --------
    >>> import io
    >>> from sklearn_ssvm.datasets import read_conll
    >>> text = "He PRP B-NP\\nran VBD B-VP\\n\\nGo VB B-VP\\n"
    >>> sents = read_conll(io.StringIO(text))
    >>> sents[0]
    [('He', 'PRP', 'B-NP'), ('ran', 'VBD', 'B-VP')]
    >>> words = [[tok[0] for tok in s] for s in sents]
    >>> tags = [[tok[-1] for tok in s] for s in sents]
    >>> read_conll(io.StringIO(text), columns=-1)
    [['B-NP', 'B-VP'], ['B-VP']]
    """
    single = False
    if columns is not None:
        single = isinstance(columns, numbers.Integral)
        picks = [columns] if single else list(columns)
        if not picks:
            raise ValueError("columns must not be empty")
        for c in picks:
            if isinstance(c, bool) or not isinstance(c, numbers.Integral):
                raise TypeError("columns must be ints, got %r" % (c,))
        picks = [int(c) for c in picks]
        need = max(max(picks) + 1, -min(picks))

    stream, to_close = _open_text(path_or_file, encoding)
    sentences, current, n_cols = [], [], None
    try:
        for lineno, line in enumerate(stream, start=1):
            fields = line.split()
            if not fields:
                if current:
                    sentences.append(current)
                    current = []
                continue
            if fields[0] == _DOCSTART:
                if current:
                    sentences.append(current)
                    current = []
                continue
            if columns is None:
                if n_cols is None:
                    n_cols = len(fields)
                elif len(fields) != n_cols:
                    raise ValueError("line %d has %d columns, expected %d like the first token "
                                     "line" % (lineno, len(fields), n_cols))
                current.append(tuple(fields))
            else:
                if len(fields) < need:
                    raise ValueError("line %d has %d columns, fewer than the %d needed for "
                                     "columns=%r" % (lineno, len(fields), need, columns))
                if single:
                    current.append(fields[picks[0]])
                else:
                    current.append(tuple([fields[c] for c in picks]))
    finally:
        for f in reversed(to_close):
            f.close()
    if current:
        sentences.append(current)
    return sentences


def load_conll2000_chunking(directory):
    """Load CoNLL-2000 chunking with the CRFsuite tutorial's token features, vectorised.

    Reads ``train.txt.gz`` and ``test.txt.gz`` from ``directory`` (the files of
    ``shared/datasets/conll2000``; not bundled: 8,936 training and 2,012 test sentences), builds
    :func:`~sklearn_ssvm.feature_extraction.chunking_token_features` for every token and
    vectorises them with a :class:`~sklearn_ssvm.feature_extraction.SequenceVectorizer` fitted
    on the training sentences.

    Parameters
    ----------
    directory : path-like
        Directory holding ``train.txt.gz`` and ``test.txt.gz``.

    Returns
    -------
    sklearn.utils.Bunch
        Dictionary-like object with the attributes ``X_train``, ``X_test`` (lists of sparse
        ``(n_tokens, n_attributes)`` matrices), ``Y_train``, ``Y_test`` (lists of lists of
        chunk tags) and ``vectorizer`` (the
        :class:`~sklearn_ssvm.feature_extraction.SequenceVectorizer` fitted on the training
        sentences).
    """
    from sklearn.utils import Bunch

    from ..feature_extraction import SequenceVectorizer, chunking_token_features

    directory = os.fspath(directory)
    train = read_conll(os.path.join(directory, "train.txt.gz"))
    test = read_conll(os.path.join(directory, "test.txt.gz"))
    vectorizer = SequenceVectorizer()
    X_train = vectorizer.fit_transform([chunking_token_features(s) for s in train])
    X_test = vectorizer.transform([chunking_token_features(s) for s in test])
    return Bunch(X_train=X_train, X_test=X_test, Y_train=[[tok[2] for tok in s] for s in train],
                 Y_test=[[tok[2] for tok in s] for s in test], vectorizer=vectorizer)
