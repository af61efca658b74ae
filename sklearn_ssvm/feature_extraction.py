"""Token features for sequence labelling: dicts of attributes -> sparse matrices."""

import numbers
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction import FeatureHasher
from ._validation import Interval, check_params
from sklearn.utils.validation import check_is_fitted

__all__ = ["SequenceVectorizer", "chunking_token_features", "coef_from_crfsuite"]

_SEPARATOR = "="
# Value types taken as numbers without the (slower) abstract-class check.
_FAST_NUMBERS = frozenset([bool, int, float, np.float64, np.float32, np.int64, np.int32, np.bool_])


def _check_sequences(X):
    """Validate X (a list of lists of dicts); return it flattened with offsets. An empty
    sequence is a matrix of 0 rows (CRFsuite predicts ``[]`` for it)."""
    if isinstance(X, (Mapping, str, bytes)) or not hasattr(X, "__iter__"):
        raise ValueError("X must be a list of sequences, each a list of per-token feature dicts; "
                         "got %s" % type(X).__name__)
    tokens, lengths = [], []
    for i, seq in enumerate(X):
        if isinstance(seq, (Mapping, str, bytes)) or not hasattr(seq, "__len__"):
            raise ValueError("sequence %d must be a list of per-token feature dicts, got %s "
                             "(wrap a single sequence in a list)" % (i, type(seq).__name__))
        tokens.extend(seq)
        lengths.append(len(seq))
    if not lengths:
        raise ValueError("X holds no sequence")
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return tokens, offsets


def _locate(offsets, flat_index):
    """(sequence, position) of the token at ``flat_index`` of the flattened tokens."""
    seq = int(np.searchsorted(offsets, flat_index, side="right")) - 1
    return seq, int(flat_index - offsets[seq])


def _bad_token(offsets, flat_index, token):
    seq, pos = _locate(offsets, flat_index)
    return ValueError("token %d of sequence %d must be a dict of features, got %s"
                      % (pos, seq, type(token).__name__))


def _bad_value(offsets, flat_index, key, value):
    seq, pos = _locate(offsets, flat_index)
    return ValueError("unsupported value %r for feature %r of token %d in sequence %d: values "
                      "must be str, bool or real numbers, dicts of them or lists of str"
                      % (value, key, pos, seq))


class _NestedValue(Exception):
    """A token holds a dict or a list: the tokens are spelled out flat, then scanned again."""


def _nested(value):
    return isinstance(value, (Mapping, list, tuple, set, frozenset))


def _flattened(tokens, offsets):
    """The tokens with their nested values spelled out as flat features, as python-crfsuite
    reads them: a dict's keys prefixed by its key and ``":"``, each string of a list the
    binary feature ``"key=string"`` (repeated strings count)."""
    out = []
    for r, token in enumerate(tokens):
        if not isinstance(token, Mapping):
            raise _bad_token(offsets, r, token)
        if not any(map(_nested, token.values())):
            out.append(token)
            continue
        flat = {}
        _spell(flat, "", token, offsets, r)
        out.append(flat)
    return out


def _spell(flat, prefix, mapping, offsets, r):
    for key, value in mapping.items():
        name = "%s%s" % (prefix, key)
        if isinstance(value, Mapping):
            _spell(flat, name + ":", value, offsets, r)
        elif _nested(value):
            for item in value:
                if not isinstance(item, str):
                    raise _bad_value(offsets, r, name, value)
                feature = "%s=%s" % (name, item)
                flat[feature] = flat.get(feature, 0.0) + 1.0
        else:  # a str or a number, checked by the scan
            flat[name] = value


class _FeatureIndex:
    """Feature name -> column, with fast lookups that build no name string.

    A string value ``v`` of key ``k`` is the feature named ``"k=v"``, found through
    ``by_key[k][v]``; a numeric value of key ``k`` is the feature named ``k``, found through
    ``numeric[k]``. ``names`` maps every name to its column.
    """

    def __init__(self):
        self.names = {}
        self.by_key = {}
        self.numeric = {}

    def _column(self, name):
        j = self.names.get(name)
        if j is None:
            j = self.names[name] = len(self.names)
        return j

    def add_string(self, key, value):
        if not isinstance(key, str):
            raise ValueError("feature keys must be strings, got %r" % (key,))
        j = self._column(key + _SEPARATOR + value)
        self.by_key.setdefault(key, {})[value] = j
        return j

    def add_numeric(self, key):
        if not isinstance(key, str):
            raise ValueError("feature keys must be strings, got %r" % (key,))
        j = self._column(key)
        self.numeric[key] = j
        return j

    def remap(self, new_column):
        """Return a copy with column ``j`` renamed ``new_column[j]`` (dropped if < 0)."""
        out = _FeatureIndex()
        for name, j in self.names.items():
            if new_column[j] >= 0:
                out.names[name] = int(new_column[j])
        for key, sub in self.by_key.items():
            kept = {v: int(new_column[j]) for v, j in sub.items() if new_column[j] >= 0}
            if kept:
                out.by_key[key] = kept
        for key, j in self.numeric.items():
            if new_column[j] >= 0:
                out.numeric[key] = int(new_column[j])
        return out


class SequenceVectorizer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Turn sequences of per-token feature dicts into per-sequence sparse matrices.

    Hashing follows Weinberger et al. (2009, ICML); the attribute format is CRFsuite's (Okazaki
    2007).

    The sequence counterpart of :class:`~sklearn.feature_extraction.DictVectorizer` and
    :class:`~sklearn.feature_extraction.FeatureHasher`: each token is a dict of attributes,
    each sequence a list of tokens, and ``transform`` returns one CSR matrix of shape
    (n_tokens_i, `n_features_out_`) per sequence. As in DictVectorizer, a string value ``v`` of
    key ``k`` becomes the binary feature ``"k=v"``; ``True`` counts as 1 and numbers are kept
    as values. All tokens of all sequences are vectorized in one pass into one matrix whose
    rows are then split by sequence.

    Nested values are read as python-crfsuite reads them: a dict value's keys are prefixed by
    its key and ``":"`` (``{"w": {"lower": "the"}}`` is ``"w:lower=the"``), and each string of
    a list value is the binary feature ``"key=string"``, counted when repeated. An empty
    sequence is a matrix of no rows (an estimator predicts ``[]`` for it, as CRFsuite does).

    Parameters
    ----------
    hashing : bool, default=False
        If False, learn a vocabulary (sorted feature names) in ``fit``; features unseen in
        ``fit`` are ignored by ``transform``. If True, hash feature names into ``n_features``
        columns with :class:`~sklearn.feature_extraction.FeatureHasher` (signed hashing off,
        so binary features stay non-negative; colliding features add).
    n_features : int, default=2**20
        Number of columns when ``hashing=True``; ignored otherwise.
    dtype : dtype, default=np.float64
        Type of the matrix values.
    min_df : int, default=1
        Keep only features occurring in at least ``min_df`` tokens of the data passed to
        ``fit`` (like CRFsuite's ``feature.minfreq``). Ignored when ``hashing=True``.

    Attributes
    ----------
    vocabulary_ : dict
        Maps feature names to column indices (only when ``hashing=False``).
    n_features_out_ : int
        Number of output columns.

    See Also
    --------
    chunking_token_features : The CoNLL chunking feature template.

    Examples
    --------
    >>> from sklearn_ssvm.feature_extraction import SequenceVectorizer
    >>> X = [[{"w": "the", "bias": 1}, {"w": "dog", "bias": 1}], [{"w": "ran"}]]
    >>> vec = SequenceVectorizer()
    >>> Xt = vec.fit_transform(X)
    >>> [x.shape for x in Xt]
    [(2, 4), (1, 4)]
    >>> vec.get_feature_names_out()
    array(['bias', 'w=dog', 'w=ran', 'w=the'], dtype=object)
    >>> Xt[0].toarray()
    array([[1., 0., 0., 1.],
           [1., 1., 0., 0.]])
    """

    _parameter_constraints = {
        "hashing": ["boolean"],
        "n_features": [Interval(numbers.Integral, 1, np.iinfo(np.int32).max, closed="both")],
        "dtype": "no_validation",
        "min_df": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, hashing=False, n_features=2**20, dtype=np.float64, min_df=1):
        self.hashing = hashing
        self.n_features = n_features
        self.dtype = dtype
        self.min_df = min_df

    # -- fitting -------------------------------------------------------------------

    def fit(self, X, y=None):
        """Learn the vocabulary of the token features in X.

        Parameters
        ----------
        X : list of list of dict
            Sequences of per-token feature dicts (str -> str, bool, number, a dict of them or
            a list of str).
        y : None
            Ignored.

        Returns
        -------
        SequenceVectorizer
            The fitted vectorizer (``self``).
        """
        self._fit_flat(X, transform=False)
        return self

    def fit_transform(self, X, y=None):
        """Learn the vocabulary and return the per-sequence feature matrices.

        Parameters
        ----------
        X : list of list of dict
            Sequences of per-token feature dicts.
        y : None
            Ignored.

        Returns
        -------
        list of scipy.sparse.csr_matrix of shape (n_tokens_i, `n_features_out_`)
            One matrix per sequence.
        """
        return self._split(*self._fit_flat(X))

    def _fit_flat(self, X, transform=True):
        check_params(self)
        tokens, offsets = _check_sequences(X)
        if self.hashing:
            Xt = self._hash(tokens, offsets) if transform else None
            if not transform:
                self._check_tokens(_flattened(tokens, offsets), offsets)
            self._set_fitted(None, self.n_features)
            return Xt, offsets

        index = _FeatureIndex()
        try:
            indices, values, indptr = self._scan(tokens, offsets, index, grow=True)
        except _NestedValue:  # (rare: the flat tokens' pass stays a single one)
            tokens, index = _flattened(tokens, offsets), _FeatureIndex()
            indices, values, indptr = self._scan(tokens, offsets, index, grow=True)
        names = sorted(index.names)
        new_column = np.empty(len(names), dtype=np.int64)  # learned order -> sorted order
        new_column[[index.names[name] for name in names]] = np.arange(len(names))
        if self.min_df > 1:
            keep = np.bincount(indices, minlength=len(names)) >= self.min_df
            keep_sorted = keep[np.argsort(new_column)]  # keep flags in sorted order
            names = [name for name, k in zip(names, keep_sorted) if k]
            if not names:
                raise ValueError("min_df=%d removes every feature; use a lower min_df"
                                 % self.min_df)
            rank = np.cumsum(keep_sorted) - 1
            new_column = np.where(keep, rank[new_column], -1)
            kept = keep[indices]
            rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
            indptr = np.zeros_like(indptr)
            np.cumsum(np.bincount(rows[kept], minlength=len(indptr) - 1), out=indptr[1:])
            indices, values = indices[kept], values[kept]
        indices = new_column[indices]
        self._set_fitted(index.remap(new_column), len(names))
        return self._to_csr(indices, values, indptr), offsets

    def _set_fitted(self, index, n_out):
        if index is None:
            for attr in ("vocabulary_", "_index"):
                if hasattr(self, attr):
                    delattr(self, attr)
        else:
            self._index = index
            self.vocabulary_ = index.names
        self.n_features_out_ = n_out

    # -- transforming ----------------------------------------------------------------

    def transform(self, X):
        """Return the per-sequence feature matrices of X.

        Parameters
        ----------
        X : list of list of dict
            Sequences of per-token feature dicts. Features not seen in ``fit`` are ignored
            (unless ``hashing=True``).

        Returns
        -------
        list of scipy.sparse.csr_matrix of shape (n_tokens_i, `n_features_out_`)
            One matrix per sequence.
        """
        return self._split(*self.transform_packed(X))

    def transform_packed(self, X):
        """Return the features of all tokens as one matrix, with sequence offsets.

        The packed layout the structures use internally: rows ``offsets[i]:offsets[i + 1]`` of
        ``Xt`` are the tokens of sequence ``i``. Cheaper than :meth:`transform` when the caller
        packs anyway.

        Parameters
        ----------
        X : list of list of dict
            Sequences of per-token feature dicts.

        Returns
        -------
        Xt : scipy.sparse.csr_matrix of shape (n_tokens, `n_features_out_`)
            All tokens of all sequences, in order.
        offsets : ndarray of shape (n_sequences + 1,), dtype int64
            Row offsets of the sequences in ``Xt``.
        """
        check_is_fitted(self, "n_features_out_")
        tokens, offsets = _check_sequences(X)
        if self.hashing:
            return self._hash(tokens, offsets), offsets
        try:
            indices, values, indptr = self._scan(tokens, offsets, self._index, grow=False)
        except _NestedValue:
            indices, values, indptr = self._scan(_flattened(tokens, offsets), offsets,
                                                 self._index, grow=False)
        return self._to_csr(indices, values, indptr), offsets

    def get_feature_names_out(self, input_features=None):
        """Return the feature names, in column order.

        Parameters
        ----------
        input_features : None
            Ignored; present for API consistency.

        Returns
        -------
        ndarray of str objects
            The feature names in column order, such as ``"w.lower=the"``. Not available with
            ``hashing=True`` (hashed columns have no names).

        Raises
        ------
        AttributeError
            If ``hashing=True``.
        """
        check_is_fitted(self, "n_features_out_")
        if self.hashing:
            raise AttributeError("feature names are not available with hashing=True")
        names = np.empty(len(self.vocabulary_), dtype=object)
        for name, j in self.vocabulary_.items():
            names[j] = name
        return names

    # -- helpers ------------------------------------------------------------------------

    def _scan(self, tokens, offsets, index, grow):
        """Map every (key, value) of every token to (column, value) in one Python pass.

        ``index`` is a :class:`_FeatureIndex`; with ``grow`` it learns new features, otherwise
        unknown features are dropped. Returns the column indices, values and row pointer of the
        CSR matrix of all tokens.
        """
        bad = [r for r, t in enumerate(map(type, tokens)) if not issubclass(t, Mapping)]
        if bad:
            raise _bad_token(offsets, bad[0], tokens[bad[0]])
        if grow:
            new_string, new_numeric = index.add_string, index.add_numeric
        else:

            def new_string(key, value):
                return -1

            def new_numeric(key):
                return -1

        by_key, numeric, fast_numbers = index.by_key, index.numeric, _FAST_NUMBERS
        indices, values = [], []
        # The hot loop: one iteration per (token, feature) pair.
        for r, token in enumerate(tokens):
            for key, value in token.items():
                if value.__class__ is not str:
                    if value.__class__ not in fast_numbers:
                        if not isinstance(value, (str, numbers.Real)):
                            if _nested(value):
                                raise _NestedValue
                            raise _bad_value(offsets, r, key, value)
                        if isinstance(value, str):
                            value = str(value)  # a str subclass, such as numpy.str_
                    if value.__class__ is not str:
                        try:
                            j = numeric[key]
                        except KeyError:
                            j = new_numeric(key)
                        indices.append(j)
                        values.append(value)
                        continue
                try:
                    j = by_key[key][value]
                except KeyError:
                    j = new_string(key, value)
                indices.append(j)
                values.append(1.0)

        indices = np.array(indices, dtype=np.int64)
        values = np.array(values, dtype=self.dtype)
        row_lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        if not grow:
            known = indices >= 0
            if not known.all():
                rows = np.repeat(np.arange(len(tokens)), row_lengths)
                row_lengths = np.bincount(rows[known], minlength=len(tokens))
                indices, values = indices[known], values[known]
        indptr = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum(row_lengths, out=indptr[1:])
        return indices, values, indptr

    def _to_csr(self, indices, values, indptr):
        n_cols = self.n_features_out_
        index_dtype = np.int32 if max(n_cols, len(indices)) < 2**31 else np.int64
        X = sp.csr_matrix((values, indices.astype(index_dtype), indptr.astype(index_dtype)),
                          shape=(len(indptr) - 1, n_cols))
        X.sum_duplicates()
        X.eliminate_zeros()
        return X

    @staticmethod
    def _check_tokens(tokens, offsets):
        """Raise a ValueError locating the first malformed token or value."""
        for r, token in enumerate(tokens):
            if not isinstance(token, Mapping):
                raise _bad_token(offsets, r, token)
            for key, value in token.items():
                if not isinstance(key, str):
                    raise ValueError("feature keys must be strings, got %r" % (key,))
                if not isinstance(value, (str, numbers.Real)):
                    raise _bad_value(offsets, r, key, value)

    def _hash(self, tokens, offsets):
        hasher = FeatureHasher(n_features=self.n_features, input_type="dict", dtype=self.dtype,
                               alternate_sign=False)
        try:  # (the hasher spells a list of str out as ours does; a dict it refuses)
            X = hasher.transform(tokens).tocsr()
        except (TypeError, ValueError, AttributeError):
            tokens = _flattened(tokens, offsets)
            self._check_tokens(tokens, offsets)  # raises a located error
            X = hasher.transform(tokens).tocsr()
        X.sum_duplicates()
        X.eliminate_zeros()
        return X

    @staticmethod
    def _split(X, offsets):
        """Cut the rows of one CSR matrix into per-sequence CSR matrices (no copy)."""
        n_cols = X.shape[1]
        data, indices, indptr = X.data, X.indices, X.indptr
        out = []
        for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
            lo, hi = indptr[a], indptr[b]
            out.append(sp.csr_matrix((data[lo:hi], indices[lo:hi], indptr[a:b + 1] - lo),
                                     shape=(b - a, n_cols), copy=False))
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.requires_fit = True
        return tags


_OFFSET_PREFIXES = ((0, ""), (-1, "-1:"), (-2, "-2:"), (1, "+1:"), (2, "+2:"))


def _word_attributes(word, pos):
    """The attributes of one (word, POS) pair, before the offset prefix."""
    attrs = [("w.lower", word.lower()), ("w[-3:]", word[-3:]), ("w[-2:]", word[-2:])]
    if word.isupper():
        attrs.append(("w.isupper", True))
    if word.istitle():
        attrs.append(("w.istitle", True))
    if word.isdigit():
        attrs.append(("w.isdigit", True))
    return attrs + [("pos", pos), ("pos[:2]", pos[:2])]


def chunking_token_features(sentence):
    """Token feature dicts of the CoNLL chunking template, one dict per token.

    The template of ``shared/datasets/README.md`` ("Feature template for the CoNLL
    benchmarks"), used wherever results are compared with CRFsuite. For token ``i`` of a
    sentence of length ``n``:

    - ``bias``;
    - for each offset ``o`` in (0, -1, -2, +1, +2) with ``0 <= i + o < n``, with ``w``, ``p``
      the word and POS tag at ``i + o`` and the key prefix ``""``, ``"-1:"``, ``"-2:"``,
      ``"+1:"``, ``"+2:"``: ``w.lower`` (value ``w.lower()``), ``w[-3:]``, ``w[-2:]``
      (suffixes), ``w.isupper``, ``w.istitle``, ``w.isdigit`` (present, with value True, only
      when true), ``pos`` (value ``p``) and ``pos[:2]``;
    - ``BOS`` when ``i == 0``, ``EOS`` when ``i == n - 1``.

    String values become binary features named ``key=value`` in :class:`SequenceVectorizer`
    (e.g. ``-1:w.lower=the``). On the CoNLL-2000 training set this gives 104,725 distinct
    features and 25.5 active features per token.

    Parameters
    ----------
    sentence : sequence of tuple
        ``(word, pos)`` pairs, or longer tuples such as ``(word, pos, chunk_tag)`` as returned
        by :func:`sklearn_ssvm.datasets.read_conll`; columns after the second are ignored.

    Returns
    -------
    list of dict
        The features: one dict per token, mapping feature keys to str values or True.

    Examples
    --------
    >>> from sklearn_ssvm.feature_extraction import chunking_token_features
    >>> feats = chunking_token_features([("He", "PRP", "B-NP"), ("ran", "VBD", "B-VP")])
    >>> feats[0]["w.lower"], feats[0]["+1:pos"], "BOS" in feats[0], "EOS" in feats[1]
    ('he', 'VBD', True, True)
    """
    n = len(sentence)
    attrs = [_word_attributes(tok[0], tok[1]) for tok in sentence]
    features = []
    for i in range(n):
        feats = {"bias": True}
        for offset, prefix in _OFFSET_PREFIXES:
            j = i + offset
            if 0 <= j < n:
                if prefix:
                    for key, value in attrs[j]:
                        feats[prefix + key] = value
                else:
                    feats.update(attrs[j])
        if i == 0:
            feats["BOS"] = True
        if i == n - 1:
            feats["EOS"] = True
        features.append(feats)
    return features


def coef_from_crfsuite(crf, vectorizer, structure):
    """Read CRFsuite's weights into the parameter vector of a ``ChainCRF(bias=False)``.

    CRFsuite (Okazaki 2007) names a string-valued attribute ``key:value`` where
    :class:`SequenceVectorizer` names its feature ``key=value``; numeric attributes keep their
    key in both. State features become the emission weights of their feature's row and label's
    column, transitions the label-pair weights.

    Parameters
    ----------
    crf : sklearn_crfsuite.CRF
        A fitted CRF (``state_features_``, ``transition_features_``).
    vectorizer : SequenceVectorizer
        The vectorizer fitted (``hashing=False``) on the sequences CRFsuite was trained on.
    structure : ChainCRF
        A fitted ``ChainCRF(bias=False)`` (``structure_`` of an estimator) whose
        ``classes_`` hold CRFsuite's labels.

    Returns
    -------
    coef : ndarray of shape (n_params,)
        The weights, in the layout of ``structure``'s ``coef_``.
    n_unmapped : int
        CRFsuite's state features whose attribute has no column (0 when the vectorizer saw
        the same sequences).
    """
    if getattr(structure, "bias", False):
        raise ValueError("coef_from_crfsuite needs ChainCRF(bias=False): CRFsuite has no "
                         "position biases.")
    # our "key=value" is CRFsuite's "key:value" (keys hold no "="; values and keys may hold
    # ":", so the names are matched from our side)
    columns = {name.replace("=", ":", 1): column
               for name, column in vectorizer.vocabulary_.items()}
    labels = {label: k for k, label in enumerate(structure.classes_)}
    C, F = len(labels), structure.n_features_in_
    coef = np.zeros(F * C + C * C)
    n_unmapped = 0
    for (attribute, label), weight in crf.state_features_.items():
        column = columns.get(attribute)
        if column is None:
            n_unmapped += 1
            continue
        coef[column * C + labels[label]] = weight
    for (before, after), weight in crf.transition_features_.items():
        coef[F * C + labels[before] * C + labels[after]] = weight
    return coef, n_unmapped
