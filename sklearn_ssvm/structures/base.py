"""The structure protocol: what is predicted, validated and packed into a ``Problem``.

A structure says what is predicted: its joint feature map, loss and oracles. All structures of the
package share one shape of joint feature (see ``_kernels/labelings.py``)::

    phi(x, y) = vec(X^T S(y)) (+) q(y)

so that one set of numba kernels (unary scores, oracles, BCFW steps) serves them all, and the
parameter vector is ``coef = [vec(W), theta]`` with ``W`` of shape ``(n_token_features, n_codes)``.
"""
import numbers
from abc import ABC, abstractmethod
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .._kernels import labelings, smoothed
from .._validation import Interval, Protocol, check_params
from ._problem import _EMPTY_EDGES, _EMPTY_INT, Problem


def smoothing_code(smoothing, top_k, kind):
    """Kernel code and ``K`` of a smoothing given as the estimators take it.

    Parameters
    ----------
    smoothing : {"entropy", "l2", None}
        ``"entropy"``: ``mu log sum exp(z / mu)`` (spec 000 §1.4). ``"l2"``: l2^2 smoothing,
        over all outputs (Prop. 3) or over the ``top_k`` best ones (eq. (11)). ``None``: the
        hard max (the max oracle).
    top_k : int or None
        ``K >= 1`` for the top-K strategy of ``"l2"``; must be None for ``"entropy"``; ignored
        for ``None``.
    kind : int
        Structure kind (``_kernels.labelings``).

    Returns
    -------
    code : int
        ``ENTROPY``, ``TOP_K``, ``L2`` or ``NONE`` of ``_kernels.smoothed``.
    K : int
        ``top_k`` for ``TOP_K``, else 1.

    Raises
    ------
    ValueError
        On an unknown ``smoothing``, an invalid ``top_k``, ``top_k`` with entropy smoothing, or
        l2 smoothing over all outputs for a structure whose outputs are not enumerated.
    """
    if smoothing not in ("entropy", "l2", None):
        raise ValueError(f"smoothing must be 'entropy', 'l2' or None, got {smoothing!r}.")
    if top_k is not None and (isinstance(top_k, (bool, np.bool_))
                              or not isinstance(top_k, numbers.Integral) or top_k < 1):
        raise ValueError(f"top_k must be None or an integer >= 1, got {top_k!r}.")
    if smoothing is None:
        return smoothed.NONE, 1
    if smoothing == "entropy":
        if top_k is not None:
            raise ValueError(f"entropy smoothing needs top_k=None, got top_k={top_k!r}: the "
                             f"top-K strategy smooths the K best outputs with l2 (use "
                             f"smoothing='l2').")
        return smoothed.ENTROPY, 1
    if top_k is not None:
        return smoothed.TOP_K, int(top_k)
    if not smoothed.enumerable_outputs(kind):
        raise ValueError("l2 smoothing over all outputs is only available for structures whose "
                         "outputs are enumerated (MulticlassSVM, BinarySVM, CandidateSet, "
                         "MultiLabel(pairwise='full')); set top_k for the top-K strategy.")
    return smoothed.L2, 1


def as_float_matrix(x, what):
    """``x`` as a float64 CSR matrix or array (no copy when it is one), refusing complex and
    non-numeric dtypes with a ValueError naming ``what``; the values are not checked."""
    dtype = x.dtype if sp.issparse(x) else np.asarray(x).dtype
    if dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {what} has dtype {dtype}.")
    if dtype.kind not in "biuf":
        raise ValueError(f"{what} must hold real numbers, got dtype {dtype}.")
    if sp.issparse(x):
        x = x.tocsr()
        return x if x.dtype == np.float64 else x.astype(np.float64)
    return np.asarray(x, dtype=np.float64)


def check_values(values, what):
    """Raise a ValueError naming ``what`` on NaN, infinity or values whose squares overflow."""
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} contains NaN or infinity.")
    _check_scale(values, what)


#: features beyond this magnitude overflow the squared norms and scores the solvers form
MAX_FEATURE = 1e150


def _check_scale(values, what):
    largest = np.max(np.abs(values)) if values.size else 0.0
    if largest > MAX_FEATURE:
        raise ValueError(f"{what} has values up to {largest:.3g}: beyond {MAX_FEATURE:g} their "
                         f"squares overflow; rescale the features.")


def stack_csr(blocks, n_features):
    """Concatenate per-example token matrices (dense or CSR) into one CSR matrix."""
    if all(not sp.issparse(b) for b in blocks):
        return sp.csr_matrix(np.vstack(blocks))
    blocks = [b if sp.issparse(b) and b.format == "csr" else sp.csr_matrix(b) for b in blocks]
    nnz = np.cumsum([0] + [b.indptr[-1] for b in blocks])
    indptr = np.concatenate([[0]] + [b.indptr[1:] + nnz[k] for k, b in enumerate(blocks)])
    return sp.csr_matrix((np.concatenate([b.data for b in blocks]),
                          np.concatenate([b.indices for b in blocks]), indptr),
                         shape=(indptr.shape[0] - 1, n_features))


class Structure(Protocol, BaseEstimator, ABC):
    """The structure protocol: what every estimator asks of what it predicts, the joint
    feature map, loss and oracles of the structured SVM (Tsochantaridis et al. 2005, JMLR).

    Two families implement it: :class:`StructuredModel` (the compiled structure kinds, whose
    oracles the solvers call in their numba loops) and
    :class:`~sklearn_ssvm.structures.GraphStructure` (labelings of a graph per example,
    whose oracle runs from Python: the graph structures, and a new structure before anyone
    compiles it).
    """

    @abstractmethod
    def prepare(self, X, Y):
        """Fit on ``(X, Y)`` and return them validated for the solvers.

        Parameters
        ----------
        X : list or array-like
            The examples.
        Y : list or array-like
            Their outputs.

        Returns
        -------
        Problem or GraphProblem
            The packed training examples.
        """

    @abstractmethod
    def pack(self, X, Y=None):
        """Validate new examples (outputs optional) against the fitted structure.

        Parameters
        ----------
        X : list or array-like
            The examples.
        Y : list, array-like or None, default=None
            Their outputs, or None.

        Returns
        -------
        Problem or GraphProblem
            The packed examples.
        """

    def prediction_scorer(self, X, Y):
        """The labelled examples and the estimators' ``score`` of the outputs they decode.

        Parameters
        ----------
        X : list or array-like
            The examples.
        Y : list or array-like
            Their outputs.

        Returns
        -------
        problem : Problem or GraphProblem
            The examples, whose ``run_oracle`` decodes them.
        score : callable
            ``score(y_pred)``: ``1 - mean`` task loss of the decoded outputs.
        """
        labelled = self.pack(X, Y)
        return labelled, labelled.score

    @abstractmethod
    def predict(self, X, coef):
        """The best output of each example under ``coef``.

        Parameters
        ----------
        X : list or array-like
            The examples.
        coef : array-like of shape (n_params,)
            Parameter vector.

        Returns
        -------
        list or ndarray
            One output per example.
        """

    @property
    @abstractmethod
    def n_params(self):
        """Length of the parameter vector ``coef``."""

    def _estimator_tags(self, tags):
        """The scikit-learn tags of an estimator that trains this structure, given the
        estimator's own (``__sklearn_tags__``): unchanged here; a structure that makes the
        estimator a classifier says so (``BinarySVM``), so that scikit-learn's checks feed it
        the targets it takes."""
        return tags


class StructuredModel(Structure):
    """Base class of the compiled structures: validation, label encoding, packing and oracles.

    The joint feature map, loss and oracles of the structured SVM (Tsochantaridis et al. 2005,
    JMLR).

    Subclasses define ``_kind``, ``_n_codes``, ``_token_matrix(X, fitting)`` (all token features
    as one validated CSR matrix and the number of tokens of each example), ``_fit_labels(Y)``,
    ``_encode_labels(Y, lengths)``, ``_decode_labels(y, offsets)`` and, for single examples,
    ``_encode_one`` / ``_decode_one``.
    """

    #: how ``score``-style summaries name the loss in messages
    loss_name = "0-1 loss"

    def prepare(self, X, Y):
        """Fit the label set and feature count on ``(X, Y)`` and pack them (spec: ``prepare``).

        Parameters
        ----------
        X : array-like, sparse matrix or list
            Examples: a ``(n_samples, n_features)`` array or sparse matrix for flat structures
            (``MulticlassSVM``, ``BinarySVM``, ``MultiLabel``), a list of
            ``(n_tokens, n_features)`` matrices, dense or sparse, for sequence structures
            (``ChainCRF``, ``CandidateSet``).
        Y : array-like or list
            Outputs, one per example: labels (``MulticlassSVM``, ``BinarySVM``), label
            sequences (``ChainCRF``), 0/1 indicator rows (``MultiLabel``) or per-candidate loss
            vectors (``CandidateSet``).

        Returns
        -------
        Problem
            The packed training data, for the solvers.

        Raises
        ------
        ValueError
            If ``X`` and ``Y`` have different numbers of examples, or either is invalid.
        """
        X_all, lengths = self._token_matrix(X, fitting=True)
        if Y is None or len(Y) != len(lengths):
            raise ValueError(f"X and Y have different numbers of examples: {len(lengths)} and "
                             f"{0 if Y is None else len(Y)}.")
        self._fit_labels(Y)
        problem = self._pack(X_all, lengths, Y)
        self._n_params = problem.n_params  # the one count: what the packing lays out
        return problem

    def _check_fitted(self):
        if not hasattr(self, "classes_"):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet: call "
                                 f"prepare(X, Y) or fit an estimator with it first.")

    def pack(self, X, Y=None):
        """Pack new data with the fitted label set (labels optional, e.g. for prediction).

        Parameters
        ----------
        X : array-like, sparse matrix or list
            Examples: a ``(n_samples, n_features)`` array or sparse matrix for flat structures
            (``MulticlassSVM``, ``BinarySVM``, ``MultiLabel``), a list of
            ``(n_tokens, n_features)`` matrices, dense or sparse, for sequence structures
            (``ChainCRF``, ``CandidateSet``).
        Y : array-like, list or None, default=None
            Outputs, one per example: labels (``MulticlassSVM``, ``BinarySVM``), label
            sequences (``ChainCRF``), 0/1 indicator rows (``MultiLabel``) or per-candidate loss
            vectors (``CandidateSet``). None packs no labels (the packed labels are then
            zeros).

        Returns
        -------
        Problem
            The packed data.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the structure is not fitted (``prepare`` not called).
        """
        self._check_fitted()
        X_all, lengths = self._token_matrix(X, fitting=False)
        if Y is not None and len(Y) != len(lengths):
            raise ValueError(f"X and Y have different numbers of examples: {len(lengths)} and "
                             f"{len(Y)}.")
        return self._pack(X_all, lengths, Y)

    def _pack(self, X_all, lengths, Y):
        tok_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        X_all = self._augment(X_all, tok_offsets)
        X_all.sort_indices()
        y, node_offsets = self._encode_labels(Y, lengths)
        tok_loss = None if Y is None else self._token_losses(Y)
        return Problem(kind=self._kind, indptr=X_all.indptr.astype(np.int64),
                       indices=X_all.indices.astype(np.int32), data=X_all.data,
                       n_features=X_all.shape[1], tok_offsets=tok_offsets, y=y,
                       node_offsets=node_offsets, n_codes=self._n_codes, tok_loss=tok_loss,
                       n_pair=labelings.n_pair_stats(self._kind, self._n_codes,
                                                     self._edges.shape[0]),
                       edges=self._edges, parent=self._parent, order=self._order)

    # hooks with defaults shared by most structures
    _edges = _EMPTY_EDGES
    _parent = _EMPTY_INT
    _order = _EMPTY_INT

    def _augment(self, X_all, tok_offsets):
        return X_all

    def _token_losses(self, Y):
        """Per-token losses packed like the tokens (chain costs, candidate losses), or None."""
        return None

    def _label_costs(self, n_labels):
        """The ``losses`` argument of ``label_loss`` for one labeling of ``n_labels``."""
        return np.zeros(0)

    def _check_n_features(self, n_features, i):
        if n_features == self.n_features_in_:
            return
        if i is None:  # scikit-learn's wording
            raise ValueError(f"X has {n_features} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        raise ValueError(f"Example {i} has {n_features} features, but the structure was fitted "
                         f"with {self.n_features_in_} features.")

    def _label_set(self, seen):
        """``classes_``: the declared ``labels`` (which must hold every label seen in ``Y``) or,
        without them, the labels seen."""
        labels = getattr(self, "labels", None)
        if labels is None:
            return seen
        check_label_types([labels], "labels", item=None)
        declared = np.asarray(labels)
        if declared.ndim != 1 or declared.shape[0] == 0:
            raise ValueError(f"labels must be a non-empty 1-D list of labels, got {labels!r}.")
        unique = np.unique(declared)
        if unique.shape[0] != declared.shape[0]:
            raise ValueError("labels has repeated values.")
        idx = np.clip(np.searchsorted(unique, seen), 0, unique.shape[0] - 1)
        outside = seen[unique[idx] != seen]
        if outside.shape[0]:
            raise ValueError(f"Y has label {_plain(outside[0])!r}, which is not in labels="
                             f"{[_plain(c) for c in unique[:20]]}.")
        return unique

    def _label_space_scorer(self, X, Y):
        # prediction_scorer against Y itself: a label unseen in fit is a wrong prediction
        problem = self.pack(X)
        offsets = problem.node_offsets
        n = offsets.shape[0] - 1
        if len(Y) != n:
            raise ValueError(f"X and Y have different numbers of examples: {n} and {len(Y)}.")
        lengths = np.diff(offsets)
        if self._sequence_input:
            truth = [np.asarray(y).ravel() for y in Y]
            for i, y in enumerate(truth):
                if y.shape[0] != lengths[i]:
                    raise ValueError(f"{self._item} {i} has {lengths[i]} {self._rows} but "
                                     f"{y.shape[0]} labels.")
            truth = np.concatenate(truth)
        else:
            truth = np.asarray(Y)
            if truth.ndim != 1:
                raise ValueError(f"y must be 1-D, got shape {truth.shape}.")
        owner = np.repeat(np.arange(n), lengths)

        def score(y_pred):
            wrong = self.classes_[y_pred] != truth
            return 1.0 - float(np.mean(np.bincount(owner, wrong, n) / lengths))
        return problem, score

    def _encode_values(self, values, i):
        """Map label values of example ``i`` to their index in ``classes_`` (clear errors)."""
        values = np.asarray(values)
        idx = np.searchsorted(self.classes_, values)
        idx = np.clip(idx, 0, len(self.classes_) - 1)
        bad = self.classes_[idx] != values
        if np.any(bad):
            unseen = _plain(values[bad][0])
            known = [_plain(c) for c in self.classes_[:20]]
            raise ValueError(f"Example {i} has label {unseen!r} not seen during fit "
                             f"(known labels: {known}{' ...' if len(self.classes_) > 20 else ''}).")
        return idx.astype(np.int32)

    # -- the protocol on single raw examples -----------------------------------------------

    @property
    def n_params(self):
        """Length of the parameter vector ``coef``: that of the examples ``prepare`` packed
        (``[vec(W), theta]``, see ``Problem.split_coef``)."""
        self._check_fitted()
        return self._n_params

    def _single(self, x, y=None):
        if self._sequence_input:
            return self.pack([x], None if y is None else [y])
        row = x.reshape(1, -1) if sp.issparse(x) else np.asarray(x).reshape(1, -1)
        return self.pack(row, None if y is None else np.asarray(y)[None] if np.ndim(y) >= 1
                         else [y])

    @staticmethod
    def _feature(problem, S, q):
        """``vec(X^T S) (+) q`` for the tokens ``X`` of a problem packed from one example."""
        return np.concatenate([np.asarray(problem.token_matrix().T @ S).ravel(), q])

    @classmethod
    def _joint_feature(cls, problem):
        """``phi(x, y)`` of a problem packed from one labelled example."""
        S = np.zeros((problem.tok_offsets[-1], problem.n_codes))
        q = np.zeros(problem.n_pair)
        labelings.add_stats(problem.kind, problem.y, 1.0, S, q, problem.example_graph(0))
        return cls._feature(problem, S, q)

    def joint_feature(self, x, y):
        """Return the dense joint feature ``phi(x, y)`` of one example.

        ``coef @ phi`` is its score.

        Parameters
        ----------
        x : array-like or sparse matrix
            One example: a feature vector of length ``n_features`` for flat structures, a
            ``(n_tokens, n_features)`` matrix for sequence structures.
        y : scalar or array-like
            An output, as ``Y`` holds one: a label, a label sequence or a 0/1 indicator vector.

        Returns
        -------
        ndarray of shape (n_params,)
            ``phi(x, y)``.
        """
        return self._joint_feature(self._single(x, y))

    def loss(self, y_true, y):
        """Return the task loss ``L(y_true, y) >= 0``, zero iff ``y == y_true``.

        Parameters
        ----------
        y_true : scalar or array-like
            The true output, as ``Y`` holds one: a label, a label sequence or a 0/1
            indicator vector.
        y : scalar or array-like
            Another output, as ``Y`` holds one: a label, a label sequence or a 0/1 indicator vector.

        Returns
        -------
        float
            ``L(y_true, y)``.

        Raises
        ------
        ValueError
            If the two labelings have different lengths.
        """
        a = self._encode_one(y_true)
        b = self._encode_one(y)
        if a.shape != b.shape:
            raise ValueError(f"Labelings have different lengths: {a.shape[0]} and {b.shape[0]}.")
        return labelings.label_loss(self._kind, a, b, self._label_costs(a.shape[0]))

    def max_oracle(self, x, y_true, coef):
        """Run loss-augmented decoding on one example: ``(y*, H(y*))``.

        With ``H(y) = L(y_true, y) + <coef, phi(x, y) - phi(x, y_true)>`` (spec 002 eq. (2)),
        ``y*`` maximises ``H``.

        Parameters
        ----------
        x : array-like or sparse matrix
            One example: a feature vector of length ``n_features`` for flat structures, a
            ``(n_tokens, n_features)`` matrix for sequence structures.
        y_true : scalar or array-like
            Its true output, as ``Y`` holds one: a label, a label sequence, a 0/1 indicator
            vector or a per-candidate loss vector.
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.

        Returns
        -------
        y_star : scalar or ndarray
            The maximiser ``y*``, decoded like an output of :meth:`decode`.
        value : float
            ``H(y*) >= 0``.
        """
        problem = self._single(x, y_true)
        y_out, values, true_scores, _ = problem.run_oracle(np.asarray(coef, float), True)
        return self._decode_one(y_out), values[0] - true_scores[0]

    def smoothed_oracle(self, x, y_true, coef, smoothing="l2", mu=1.0, top_k=5):
        """Smoothed loss-augmented oracle of one example (spec 000 §2.1, Lemma 7).

        With ``H(y) = L(y_true, y) + <coef, phi(x, y) - phi(x, y_true)>``, returns the smoothed
        max of ``H`` over the outputs and its gradient in ``coef``.

        Parameters
        ----------
        x : array-like or sparse matrix
            One raw example, as for ``max_oracle``.
        y_true : scalar or array-like
            Its true output, as for ``max_oracle``.
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.
        smoothing : {"l2", "entropy", None}, default="l2"
            ``"l2"`` with ``top_k=K``: the top-K strategy ``h_{mu,K}`` of eq. (11); with
            ``top_k=None``: l2^2 smoothing over all outputs (Prop. 3; multi-class, binary,
            candidate sets and ``MultiLabel(pairwise="full")`` only). ``"entropy"``:
            ``mu log sum_y exp(H(y) / mu)`` (needs ``top_k=None``). ``None``: the hard max,
            as ``max_oracle``.
        mu : float, default=1.0
            Smoothing parameter, ``mu >= 0``; ``0`` gives the hard max.
        top_k : int or None, default=5
            See ``smoothing``.

        Returns
        -------
        value : float
            The smoothed loss, exact (``max H <= value <= max H + mu/2`` for l2 and top-K,
            ``+ mu log |Y|`` for entropy).
        gradient : ndarray of shape (n_params,)
            ``sum_y u_y phi(x, y) - phi(x, y_true)`` with ``u`` the smoothing weights.
        """
        code, K = smoothing_code(smoothing, top_k, self._kind)
        problem = self._single(x, y_true)
        values, M, Q = problem.smoothed_losses(np.asarray(coef, float), code, mu, K)
        return values[0], self._feature(problem, M, Q[0]) - self._joint_feature(problem)

    def decode(self, x, coef):
        """Decode one example: ``argmax_y <coef, phi(x, y)>``.

        Parameters
        ----------
        x : array-like or sparse matrix
            One example: a feature vector of length ``n_features`` for flat structures, a
            ``(n_tokens, n_features)`` matrix for sequence structures.
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.

        Returns
        -------
        scalar or ndarray
            The best output: a label, a label sequence, a 0/1 indicator vector or a candidate
            index.
        """
        problem = self._single(x)
        y_out, _, _, _ = problem.run_oracle(np.asarray(coef, float), False)
        return self._decode_one(y_out)

    def decision_function(self, X, coef):
        """Return the score ``<coef, phi(x, y)>`` of each example's best output ``y``.

        Parameters
        ----------
        X : array-like, sparse matrix or list
            Examples: a ``(n_samples, n_features)`` array or sparse matrix for flat structures
            (``MulticlassSVM``, ``BinarySVM``, ``MultiLabel``), a list of
            ``(n_tokens, n_features)`` matrices, dense or sparse, for sequence structures
            (``ChainCRF``, ``CandidateSet``).
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``max_y <coef, phi(x_i, y)>`` of each example.
        """
        problem = self.pack(X)
        _, values, _, _ = problem.run_oracle(np.asarray(coef, float), False)
        return values

    def predict(self, X, coef):
        """Decode every example of ``X``.

        Parameters
        ----------
        X : array-like, sparse matrix or list
            Examples: a ``(n_samples, n_features)`` array or sparse matrix for flat structures
            (``MulticlassSVM``, ``BinarySVM``, ``MultiLabel``), a list of
            ``(n_tokens, n_features)`` matrices, dense or sparse, for sequence structures
            (``ChainCRF``, ``CandidateSet``).
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.

        Returns
        -------
        ndarray or list of ndarray
            The best output of each example: an array of labels (``MulticlassSVM``,
            ``BinarySVM``), of 0/1 indicator rows (``MultiLabel``) or of candidate indices
            (``CandidateSet``), or a list of label arrays (``ChainCRF``).
        """
        problem = self.pack(X)
        y_out, _, _, _ = problem.run_oracle(np.asarray(coef, float), False)
        return self._decode_labels(y_out, problem.node_offsets)


def check_label_types(groups, what="Y", item="sequence"):
    """Refuse labels that mix strings and numbers, in scikit-learn's words, before numpy turns
    the numbers into strings (``np.asarray([1, "a"])`` is ``["1", "a"]``, so a model would
    predict ``"1"`` for the label ``1``).

    Parameters
    ----------
    groups : iterable of array-like
        The labels in groups: one per sequence, or a single group of flat labels.
    what : str, default="Y"
        How the message names the labels.
    item : str or None, default="sequence"
        How the message names a group; None: the labels are flat, and the message names the
        first example whose type differs from the first example's.
    """
    seen = set()
    for i, group in enumerate(groups):
        seen |= _label_types(group)
        if len(seen) > 1:
            if item is None:
                kinds = [_label_types([v]) for v in np.asarray(group, dtype=object).ravel()]
                first = next(j for j, kind in enumerate(kinds) if kind and kind != kinds[0])
                where = f"example {first} is a {kinds[first].pop()}"
            else:
                where = f"{item} {i} brings the second type"
            raise ValueError(f"Mix of label input types (string and number): {what} holds "
                             f"strings and numbers ({where}); use one type, e.g. all str.")


def _label_types(values):
    """``{"string"}``, ``{"number"}`` or both: the kinds of the label values ``values``."""
    if isinstance(values, np.ndarray) and values.dtype != object:
        return {"string"} if values.dtype.kind in "US" else {"number"}
    items = np.asarray(values, dtype=object).ravel()
    return {"string" if isinstance(v, (str, bytes)) else "number" for v in items
            if v is not None}


def unique_labels(values):
    """The sorted distinct labels of ``values``, refusing None, NaN and unsortable mixtures with
    a ValueError that says so."""
    values = np.asarray(values)
    if values.dtype == object:
        if any(v is None for v in values):
            raise ValueError("Y contains None: every label must be a value.")
        if any(isinstance(v, float) and v != v for v in values):
            raise ValueError("Y contains NaN: every label must be a value.")
    elif values.dtype.kind == "f" and np.isnan(values).any():
        raise ValueError("Y contains NaN: every label must be a value.")
    try:
        return np.unique(values)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in values})
        raise ValueError(f"Y mixes label types that cannot be ordered ({', '.join(kinds)}): "
                         f"use one type, e.g. all str.") from None


def _plain(value):
    """A numpy scalar as the Python value it holds (readable in error messages)."""
    return value.item() if isinstance(value, np.generic) else value


class SequenceStructure(StructuredModel):
    """Structures whose examples are matrices of tokens: X is a list of 2-D arrays/sparse."""

    _sequence_input = True
    #: how messages name an example and its rows
    _item = "Sequence"
    _rows = "tokens"

    def _token_matrix(self, X, fitting):
        if isinstance(X, np.ndarray) and X.ndim == 3:
            X = list(X)
        if not isinstance(X, (list, tuple)):
            raise ValueError(f"X must be a list of (n_{self._rows}, n_features) arrays or sparse "
                             f"matrices, one per example.")
        if len(X) == 0:
            raise ValueError("X contains no examples.")
        blocks = []
        for i, x in enumerate(X):
            if not sp.issparse(x) and np.ndim(x) != 2:
                dicts = isinstance(x, (list, tuple)) and len(x) and isinstance(x[0], dict)
                raise ValueError(f"{self._item} {i} must be a 2-D (n_{self._rows}, n_features) "
                                 f"array, got {np.ndim(x)} dimensions." + (
                                     " It holds token feature dicts: turn them into matrices "
                                     "with sklearn_ssvm.feature_extraction.SequenceVectorizer "
                                     "(a Pipeline step before the estimator)." if dicts else ""))
            x = as_float_matrix(x, f"{self._item} {i}")
            if x.shape[0] == 0:
                raise ValueError(f"{self._item} {i} is empty (0 {self._rows}).")
            if fitting and i == 0:
                self.n_features_in_ = x.shape[1]
            self._check_n_features(x.shape[1], i)
            blocks.append(x)
        lengths = np.array([b.shape[0] for b in blocks], dtype=np.int64)
        X_all = stack_csr(blocks, self.n_features_in_)
        try:  # the values of all examples at once; a failure is named by its example
            check_values(X_all.data, "X")
        except ValueError:
            for i, x in enumerate(blocks):
                check_values(x.data if sp.issparse(x) else x, f"{self._item} {i}")
            raise
        return X_all, lengths


def as_real_array(values, what):
    """``values`` as a float64 array, or a TypeError naming ``what`` and the kinds of values
    found (numpy's own message is about its conversion, e.g. 'setting an array element with a
    sequence')."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        kinds = sorted({type(v).__name__ for v in np.ravel(np.asarray(values, dtype=object))})
        # a TypeError with numpy's words in the end, as scikit-learn's estimators raise it
        raise TypeError(f"{what} must hold real numbers; it holds {', '.join(kinds[:4])} "
                        f"values (float() argument must be a string or a real number)."
                        ) from exc


class FlatStructure(StructuredModel):
    """Structures whose examples are single feature vectors (X is a 2-D array or sparse).

    With ``fit_intercept`` every example gets one more feature, the constant
    ``intercept_scaling``, as liblinear (scikit-learn's ``LinearSVC``) adds it: each class's or
    label's intercept is its weight times ``intercept_scaling``, penalised with the other
    weights. Every solver and certificate then accounts for it as for any feature.
    """

    _sequence_input = False
    _parameter_constraints = {"fit_intercept": ["boolean"],
                              "intercept_scaling": [Interval(Real, 0, None, closed="neither")]}

    def _augment(self, X_all, tok_offsets):
        if not self.fit_intercept:
            return X_all
        constant = np.full((X_all.shape[0], 1), float(self.intercept_scaling))
        return sp.hstack([X_all, sp.csr_matrix(constant)], format="csr")

    def intercept(self, coef):
        """Return the intercepts of a parameter vector: the constant feature's weights times
        ``intercept_scaling``.

        Parameters
        ----------
        coef : array-like of shape (n_params,)
            Parameter vector.

        Returns
        -------
        ndarray of shape (n_codes,)
            One intercept per class (``MulticlassSVM``), per label (``MultiLabel``), or one
            (``BinarySVM``); zeros when ``fit_intercept=False``.
        """
        self._check_fitted()
        n_codes = self._n_codes
        if not self.fit_intercept:
            return np.zeros(n_codes)
        rows = self.n_features_in_ + 1
        W = np.asarray(coef, dtype=float)[:rows * n_codes].reshape(rows, n_codes)
        return self.intercept_scaling * W[-1]

    def _token_matrix(self, X, fitting):
        if fitting:
            check_params(self)
        if not sp.issparse(X):
            X = np.asarray(X)
            if X.dtype == object:  # numbers stored as objects convert; anything else raises
                X = as_real_array(X, "X")
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: X has dtype {X.dtype}.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must hold real numbers, got dtype {X.dtype}.")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got {X.ndim} dimensions. "
                             f"Reshape your data (X.reshape(-1, 1) for one feature, "
                             f"X.reshape(1, -1) for one sample).")
        if X.shape[0] == 0:
            raise ValueError("X contains no samples.")
        if X.shape[1] == 0:
            raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum "
                             f"of 1 is required.")
        if sp.issparse(X):
            X = X.tocsr()
            rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            bad = rows[~np.isfinite(X.data)]
        else:
            X = np.asarray(X, dtype=np.float64)
            bad = np.flatnonzero(~np.all(np.isfinite(X), axis=1))
        if len(bad):
            raise ValueError(f"X contains NaN or infinity (example {bad[0]}).")
        _check_scale(X.data if sp.issparse(X) else X, "X")
        if fitting:
            self.n_features_in_ = X.shape[1]
        self._check_n_features(X.shape[1], None)
        return sp.csr_matrix(X), np.ones(X.shape[0], dtype=np.int64)

    def _decode_one(self, y_codes):
        return self._decode_labels(y_codes, np.array([0, y_codes.shape[0]]))[0]
