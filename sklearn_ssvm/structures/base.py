"""The structure protocol and the packed problem every solver works on.

A structure says what is predicted: its joint feature map, loss and oracles. All structures of the
package share one shape of joint feature (see ``_kernels/labelings.py``)::

    phi(x, y) = vec(X^T S(y)) (+) q(y)

so that one set of numba kernels (unary scores, oracles, BCFW steps) serves them all, and the
parameter vector is ``coef = [vec(W), theta]`` with ``W`` of shape ``(n_token_features, n_codes)``.
"""
import copy
import numbers
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from .._kernels import batch, labelings, smoothed
from .._kernels.sparse import token_gram
from ..smoothing import _check_mu

#: ``alpha=None`` per unit of the largest loss (chains, multi-label data): the sequences' and
#: the multi-label rule (OCR folds, CoNLL-2003 train -> testa, scene by 3-fold CV on train)
LOSS_ALPHA = 0.01
#: ``alpha=None`` for sequences is at least ``TOKEN_ALPHA`` per token of the counting loss (its
#: objective is the mean length times a per-token one regularised by ``alpha / mean length``):
#: long sentences need it (CoNLL-2000 by 3-fold CV on train); benchmarks/select_defaults.py
TOKEN_ALPHA = 4.5e-5

_EMPTY_EDGES = np.zeros((0, 2), dtype=np.int64)
_EMPTY_INT = np.zeros(0, dtype=np.int64)


def example_rows(offsets, idx):
    """The rows ``offsets[i]:offsets[i + 1]`` of the examples ``idx``, concatenated in that
    order (tokens, labels or non-zeros of packed examples).

    Parameters
    ----------
    offsets : ndarray of int64, shape (n_samples + 1,)
        Example ``i`` owns rows ``offsets[i]:offsets[i + 1]``.
    idx : ndarray of int
        The examples.

    Returns
    -------
    ndarray of int64
        Their rows.
    """
    idx = np.asarray(idx, dtype=np.int64)
    lengths = offsets[idx + 1] - offsets[idx]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return np.repeat(offsets[idx] - starts, lengths) + np.arange(lengths.sum(), dtype=np.int64)


class ExampleWeights:
    """Per-example loss weights of a packed problem (``sample_weight``, mean 1): the loss term
    of the objective is ``mean_i w_i H_i(w)``."""

    def with_sample_weight(self, sample_weight):
        """The same problem with per-example loss weights, normalised to mean 1.

        Parameters
        ----------
        sample_weight : ndarray of shape (n_samples,)
            Positive finite weights (zero-weight examples are dropped before packing: they
            would only dilute the mean).

        Returns
        -------
        Problem
            A shallow copy sharing the packed arrays, with ``sample_weight = w / mean(w)``.
        """
        w = np.asarray(sample_weight, dtype=float)
        weighted = copy.copy(self)
        weighted.sample_weight = w * (w.shape[0] / w.sum())
        return weighted

    def draw(self, rng, size):
        """Draw ``size`` examples with replacement, example ``i`` with probability ``w_i / n``
        (uniformly, by ``rng.integers``, when unweighted): a stochastic gradient of one drawn
        example is then unbiased for the weighted mean loss.

        Parameters
        ----------
        rng : numpy.random.Generator
            Random numbers.
        size : int
            Number of draws.

        Returns
        -------
        ndarray of int64, shape (size,)
            The indices drawn.
        """
        n = self.n_samples
        if not self.weighted:
            return rng.integers(n, size=size)
        return rng.choice(n, size=size, p=self.sample_weight / n)

    def weighted_mean(self, values):
        """The sample-weighted mean over examples.

        Parameters
        ----------
        values : ndarray of shape (n_samples,)
            One value per example.

        Returns
        -------
        float
            ``mean_i w_i values[i]``.
        """
        return float(np.mean(self.sample_weight * values))

    def loss_scale(self):
        """The objective of the zero model, ``P(0) = mean_i w_i max_y L(y_i, y)``: the mean
        largest loss, the scale on which the estimators' ``tol`` (and the smoothing ``mu``)
        are relative, so that they mean the same with a normalised or a counting loss.

        Returns
        -------
        float
            The sample-weighted mean of :meth:`largest_losses`; 1 when every loss is 0 (the
            optimum is then ``w = 0``, on any scale).
        """
        scale = self.weighted_mean(self.largest_losses())
        return scale if scale > 0 else 1.0

    def default_alpha(self):
        """The regularisation of ``alpha=None``, scale-free: the same model with a normalised
        or a counting loss (scaling every loss by ``s`` scales the optimal ``w`` by ``s`` and
        the equivalent ``alpha`` by ``1 / s``).

        Per unit of the zero model's objective :meth:`loss_scale`: for sequences
        ``max(LOSS_ALPHA, TOKEN_ALPHA T^2)`` with ``T`` the mean length (0.01 per unit of the
        largest loss, and at least 4.5e-5 per token of the counting loss); for multi-label
        data ``LOSS_ALPHA``; otherwise ``1 / n_samples`` (binary and multi-class SVMs:
        ``LinearSVC``'s ``C = 1``). Measured in ``benchmarks/select_defaults.py``.

        Returns
        -------
        float
            ``alpha``, positive.
        """
        return self._alpha_rule() / self.loss_scale()

    def _alpha_rule(self):
        """``alpha`` per unit of the loss scale."""
        return 1.0 / self.n_samples

    @property
    def weighted(self):
        """Whether any example's weight differs from 1."""
        return bool(np.any(self.sample_weight != 1.0))

    @property
    def block_n(self):
        """``n / w_i``: example ``i`` carries the share ``1 / block_n[i]`` of the mean loss."""
        return self.n_samples / self.sample_weight


@dataclass
class Problem(ExampleWeights):
    """Packed data of one data set: flat arrays + offsets, ready for the kernels.

    The joint feature map of the structured SVM (Tsochantaridis et al. 2005, JMLR), packed for the
    kernels.

    Structures build it with ``prepare`` or ``pack``; every parameter is kept as the attribute
    of the same name.

    Parameters
    ----------
    kind : int
        Structure kind (``_kernels.labelings``).
    indptr, indices, data : ndarray
        CSR matrix of all token features, one row per token (bias columns included).
    n_features : int
        Number of columns of the token matrix (bias columns included).
    tok_offsets : ndarray of int64, shape (n_samples + 1,)
        Example ``i`` owns token rows ``tok_offsets[i]:tok_offsets[i + 1]``.
    y : ndarray of int32
        Encoded labelings, packed; example ``i`` owns ``y[node_offsets[i]:node_offsets[i + 1]]``.
        Zeros when the problem was packed without labels.
    node_offsets : ndarray of int64, shape (n_samples + 1,)
        Offsets of each example's labels in ``y``.
    n_codes, n_pair : int
        Columns of ``S(y)`` and length of ``q(y)``.
    tok_loss : ndarray of shape (n_tokens,) or None, default=None
        Per-token losses packed like the tokens (chain label costs, candidate losses). None
        gives zeros.
    edges, parent, order : ndarray of int64, default=empty
        Label-interaction graph (multi-label structures), empty otherwise.
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        Per-example weights of the loss, normalised to mean 1 (``with_sample_weight``): the
        objective's loss term is ``mean_i w_i H_i(w)``. None gives ones.
    _gram : tuple or None, default=None
        Cache of :attr:`gram`, filled on first access.
    _largest : ndarray or None, default=None
        Cache of :meth:`largest_losses`, filled on first call.
    """

    kind: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_features: int
    tok_offsets: np.ndarray
    y: np.ndarray
    node_offsets: np.ndarray
    n_codes: int
    n_pair: int
    tok_loss: np.ndarray = None
    edges: np.ndarray = field(default_factory=lambda: _EMPTY_EDGES)
    parent: np.ndarray = field(default_factory=lambda: _EMPTY_INT)
    order: np.ndarray = field(default_factory=lambda: _EMPTY_INT)
    sample_weight: np.ndarray = None
    _gram: tuple = None
    _largest: np.ndarray = None

    def __post_init__(self):
        if self.tok_loss is None:  # only candidate sets have losses attached to tokens
            self.tok_loss = np.zeros(self.tok_offsets[-1])
        if self.sample_weight is None:
            self.sample_weight = np.ones(self.n_samples)

    @property
    def n_samples(self):
        """Number of examples."""
        return self.tok_offsets.shape[0] - 1

    @property
    def n_params(self):
        """Length of the parameter vector ``coef = [vec(W), theta]``."""
        return self.n_features * self.n_codes + self.n_pair

    @property
    def gram(self):
        """Per-example token Gram matrices (flat) and their offsets, computed once."""
        if self._gram is None:
            self._gram = token_gram(self.indptr, self.indices, self.data, self.tok_offsets,
                                    self.n_features)
        return self._gram

    def token_matrix(self):
        """Return all token features as one scipy CSR matrix (rows are tokens).

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_tokens, n_features)
            The token features, built on the packed arrays (no copy).
        """
        return sp.csr_matrix((self.data, self.indices, self.indptr),
                             shape=(self.tok_offsets[-1], self.n_features))

    def graph_args(self):
        """Return the structure arguments the kernels take first.

        Returns
        -------
        tuple
            ``(kind, edges, parent, order)``.
        """
        return self.kind, self.edges, self.parent, self.order

    def data_args(self):
        """Return the packed data arguments the kernels take after :meth:`graph_args`.

        Returns
        -------
        tuple
            ``(indptr, indices, data, tok_offsets, y, node_offsets, tok_loss)``.
        """
        return (self.indptr, self.indices, self.data, self.tok_offsets, self.y,
                self.node_offsets, self.tok_loss)

    def split_coef(self, coef):
        """Split a parameter vector into views ``(W, theta)``.

        Parameters
        ----------
        coef : ndarray of shape (n_params,)
            Parameter vector ``[vec(W), theta]``.

        Returns
        -------
        W : ndarray of shape (n_features, n_codes)
            View of the first ``n_features * n_codes`` entries.
        theta : ndarray of shape (n_pair,)
            View of the remaining entries.
        """
        F, C = self.n_features, self.n_codes
        return coef[:F * C].reshape(F, C), coef[F * C:]

    def subset(self, idx):
        """Return the examples ``idx`` (sorted indices), packed alike.

        Parameters
        ----------
        idx : ndarray of int
            Sorted indices of the examples to keep.

        Returns
        -------
        Problem
            A new problem holding only those examples (Gram cache reset), their sample weights
            normalised to mean 1 again.
        """
        tok, node = self.tok_offsets, self.node_offsets
        lengths = tok[idx + 1] - tok[idx]
        tokens = example_rows(tok, idx)
        nnz = example_rows(self.indptr, tokens)
        indptr = np.concatenate([[0], np.cumsum(self.indptr[tokens + 1] - self.indptr[tokens])]
                                ).astype(np.int64)
        nodes = example_rows(node, idx)
        return replace(self, indptr=indptr, indices=self.indices[nnz], data=self.data[nnz],
                       tok_offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                       y=self.y[nodes], tok_loss=self.tok_loss[tokens],
                       node_offsets=np.concatenate([[0], np.cumsum(node[idx + 1] - node[idx])])
                       .astype(np.int64), _gram=None, _largest=None
                       ).with_sample_weight(self.sample_weight[idx])

    def truth_stats(self):
        """Return the label statistics of the true labelings.

        ``S(y_i)`` (rows of ``M``) and ``q(y_i)`` (rows of ``Q``): the dual vertex
        ``alpha_i = e_{y_i}``, SGD's reference point.

        Returns
        -------
        M : ndarray of shape (n_tokens, n_codes)
            ``S(y_i)``; example ``i`` owns rows ``tok_offsets[i]:tok_offsets[i + 1]``.
        Q : ndarray of shape (n_samples, n_pair)
            ``q(y_i)``, one row per example.
        """
        return batch.stats_from_labels(self.kind, self.edges, self.tok_offsets, self.y,
                                       self.node_offsets, self.n_codes, self.n_pair)

    def squared_radius(self):
        """Return the mean over examples of ``2 ||X_i||_F^2 + 2 T_i``.

        It bounds ``||phi(x_i, y) - phi(x_i, y')||^2`` (emission and interaction parts).

        Returns
        -------
        float
            The mean bound, with ``T_i`` the number of tokens of example ``i``.
        """
        cum = np.concatenate([[0.0], np.cumsum(self.data ** 2)])
        bounds = self.indptr[self.tok_offsets]
        return 2.0 * np.mean(cum[bounds[1:]] - cum[bounds[:-1]]) + 2.0 * np.mean(
            np.diff(self.tok_offsets))

    def training_parts(self, features=True):
        """What a warm start's solver state depends on (``training_key``).

        Parameters
        ----------
        features : bool, default=True
            Whether the features count too (BCFW's dual state depends only on the lengths
            and labels).

        Returns
        -------
        tuple of ndarray
            The examples' lengths, labels and sample weights, and their features.
        """
        parts = (self.tok_offsets, self.node_offsets, self.y, self.sample_weight)
        if features:
            parts += (self.indptr, self.indices, self.data)
        return parts

    def pairwise_bounds(self):
        """The box of ``coef_bounds="positive_pairwise"``: label-interaction weights
        (transitions, label-pair tables) non-negative.

        Returns
        -------
        lower : ndarray of shape (n_params,)
            Lower bounds (``-inf``: none).
        upper : ndarray of shape (n_params,)
            Upper bounds (``inf``: none).
        """
        lower = np.full(self.n_params, -np.inf)
        lower[self.n_features * self.n_codes:] = 0.0
        return lower, np.full(self.n_params, np.inf)

    def project(self, coef):
        """Return the nearest feasible coefficients: all are feasible here (see ``GraphProblem``).

        Parameters
        ----------
        coef : ndarray of shape (n_params,)
            Parameter vector.

        Returns
        -------
        ndarray of shape (n_params,)
            ``coef`` itself.
        """
        return coef

    def run_oracle(self, coef, augment, M=None, Q=None):
        """Run the batched (loss-augmented) oracle at ``coef``; see ``_kernels.batch.oracle_all``.

        Parameters
        ----------
        coef : ndarray of shape (n_params,)
            Parameter vector.
        augment : bool
            Add the task loss to the scores (the max oracle); False decodes.
        M : ndarray of shape (n_tokens, n_codes), default=None
            Label-space dual state; with ``augment``, the expected score of each example under
            it is computed as well. None: no dual state.
        Q : ndarray of shape (n_samples, n_pair), default=None
            Pairwise part of the dual state, given with ``M``.

        Returns
        -------
        y_out : ndarray of int32
            The argmax labelings, packed like ``y``.
        values : ndarray of shape (n_samples,)
            Their (loss-augmented with ``augment``) scores.
        true_scores : ndarray of shape (n_samples,)
            With ``augment``, the scores of the true labelings; zeros otherwise.
        expected : ndarray of shape (n_samples,)
            With ``augment`` and a dual state, the expected scores under it; zeros otherwise.
        """
        W, theta = self.split_coef(coef)
        n = self.n_samples
        y_out = np.zeros_like(self.y)
        values = np.empty(n)
        true_scores = np.zeros(n)
        expected = np.zeros(n)
        if M is None:
            M, Q = np.zeros((0, self.n_codes)), np.zeros((0, self.n_pair))
        batch.oracle_all(*self.graph_args(), *self.data_args(), np.ascontiguousarray(W), theta,
                         augment, M, Q, y_out, values, true_scores, expected)
        return y_out, values, true_scores, expected

    def smoothed_losses(self, coef, smoothing, mu, K):
        """Smoothed hinge losses at ``coef`` and their label-space gradient statistics.

        Parameters
        ----------
        coef : ndarray of shape (n_params,)
            Parameter vector.
        smoothing : int
            Kernel smoothing code, as returned by ``smoothing_code``.
        mu : float
            Smoothing parameter, ``mu >= 0`` (``0``: the hard max).
        K : int
            Number of best outputs, as returned by ``smoothing_code``.

        Returns
        -------
        values : ndarray of shape (n_samples,)
            ``f_i = h(z_i) - <coef, phi(x_i, y_i)> >= 0`` with ``z_i`` the loss-augmented scores
            and ``h`` the smoothed max (spec 000 §1.4-1.6).
        M : ndarray of shape (n_tokens, n_codes)
            ``E_u S(y)`` under the smoothing weights ``u`` (rows of example ``i``:
            ``tok_offsets[i]:tok_offsets[i + 1]``).
        Q : ndarray of shape (n_samples, n_pair)
            ``E_u q(y)`` under the smoothing weights ``u``; the gradient of ``f_i`` is
            ``X_i^T (M_i - S(y_i)) (+) (Q_i - q(y_i))`` (Lemma 7). See
            ``_kernels.smoothed.smoothed_losses``.
        """
        mu = _check_mu(mu)
        W, theta = self.split_coef(coef)
        n = self.n_samples
        values = np.empty(n)
        M = np.empty((self.tok_offsets[-1], self.n_codes))
        Q = np.empty((n, self.n_pair))
        smoothed.smoothed_losses(*self.graph_args(), *self.data_args(), np.ascontiguousarray(W),
                                 theta, smoothing, K, mu, values, M, Q)
        return values, M, Q

    def hinge_losses(self, coef):
        """Return the structured hinge loss of every example.

        ``H~_i(w) = max_y [L(y_i, y) + <w, phi(x_i, y)>] - <w, phi(x_i, y_i)>``, per example.

        Parameters
        ----------
        coef : ndarray of shape (n_params,)
            Parameter vector ``w``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``H~_i(coef)`` of each example, ``>= 0``.
        """
        _, values, true_scores, _ = self.run_oracle(coef, True)
        return values - true_scores

    def _alpha_rule(self):
        if self.kind == labelings.CHAIN:
            # with the count loss (scale T) alpha / T regularises each token: at least
            # TOKEN_ALPHA when alpha = TOKEN_ALPHA T^2 / T
            return max(LOSS_ALPHA,
                       TOKEN_ALPHA * self.weighted_mean(np.diff(self.node_offsets)) ** 2)
        if self.kind in (labelings.MULTILABEL_INDEPENDENT, labelings.MULTILABEL_TREE,
                         labelings.MULTILABEL_FULL):
            return LOSS_ALPHA
        return super()._alpha_rule()

    def largest_losses(self):
        """Return each example's largest loss ``max_y L(y_i, y)``.

        The structured hinge at ``coef = 0``, where every labeling scores 0 and the
        loss-augmented oracle returns the largest loss (one batched oracle pass, once).

        Returns
        -------
        ndarray of shape (n_samples,)
            ``max_y L(y_i, y)`` of each example.
        """
        if self._largest is None:
            self._largest = self.hinge_losses(np.zeros(self.n_params))
        return self._largest

    def losses(self, y_pred):
        """Return the task loss of each example for the packed predictions ``y_pred``.

        Parameters
        ----------
        y_pred : ndarray of int32
            Predicted encoded labelings, packed like ``y``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``L(y_i, y_pred_i)`` of each example.
        """
        off, tok = self.node_offsets, self.tok_offsets
        return np.array([labelings.label_loss(self.kind, self.y[off[i]:off[i + 1]],
                                              y_pred[off[i]:off[i + 1]],
                                              self.tok_loss[tok[i]:tok[i + 1]])
                         for i in range(self.n_samples)])

    def chain_costs(self):
        """Return each chain's total token cost, its largest loss (1 with the normalised loss).

        Returns
        -------
        ndarray of shape (n_samples,)
            The sum of ``tok_loss`` over the tokens of each example.
        """
        return np.add.reduceat(self.tok_loss, self.tok_offsets[:-1])

    def score(self, y_pred):
        """Return ``1 - mean task loss`` of the packed predictions ``y_pred``.

        Each example's loss is scaled to [0, 1] first: for chains the weighted Hamming loss over
        its total cost (the fraction of wrong labels, whether the training loss is normalised or
        counts), for candidate sets the loss over the example's largest; the estimators'
        ``score``.

        Parameters
        ----------
        y_pred : ndarray of int32
            Predicted encoded labelings, packed like ``y``.

        Returns
        -------
        float
            The score, in [0, 1].
        """
        losses = self.losses(y_pred)
        if self.kind == labelings.CHAIN:
            losses = losses / self.chain_costs()
        elif self.kind == labelings.CANDIDATES:  # each example's losses scaled by its largest
            largest = np.maximum.reduceat(self.tok_loss, self.tok_offsets[:-1])
            losses = np.divide(losses, largest, out=np.zeros_like(losses), where=largest > 0)
        return 1.0 - float(np.mean(losses))


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


def check_finite_matrix(x, what):
    """Return ``x`` as CSR float64, raising a ValueError naming ``what`` on NaN or inf, and on
    complex or non-numeric values (numpy would drop imaginary parts with only a warning)."""
    x = as_float_matrix(x, what)
    check_values(x.data if sp.issparse(x) else x, what)
    return x


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


class StructuredModel(BaseEstimator):
    """Base class of the structures: validation, label encoding, packing and oracles.

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
        return self._pack(X_all, lengths, Y)

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

    def prediction_scorer(self, X, Y):
        """Pack ``X`` for prediction and return a scorer of its predictions against ``Y``.

        The examples of ``X`` packed for prediction, and a function of their predicted codes
        returning ``1 - mean task loss`` against ``Y``, each example's loss scaled to [0, 1] (for
        chains the fraction of wrong labels, whether the training loss is normalised or counts):
        the estimators' ``score``.

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
        problem : Problem
            The examples of ``X`` packed for prediction.
        score : callable
            ``score(y_pred)``: the score (a float) of the predicted codes ``y_pred``, packed
            like ``problem.y``.
        """
        labelled = self.pack(X, Y)
        return labelled, labelled.score

    def _label_space_scorer(self, X, Y):
        """Pack ``X`` for prediction and return a scorer of its predictions against ``Y``.

        ``prediction_scorer`` comparing decoded labels with ``Y`` itself, so a label never
        seen in fit is a wrong prediction (as ``accuracy_score`` counts it), not an error.
        The score is ``1 - mean`` over examples of the fraction of wrong labels.

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
        problem : Problem
            The examples of ``X`` packed without labels.
        score : callable
            ``score(y_pred)``: the score (a float) of the predicted codes ``y_pred``, packed
            like ``problem.y``.
        """
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
        """Length of the parameter vector ``coef``."""
        self._check_fitted()
        extra = self._augment_width()
        n_edges = self._edges.shape[0]
        return ((self.n_features_in_ + extra) * self._n_codes
                + labelings.n_pair_stats(self._kind, self._n_codes, n_edges))

    def _augment_width(self):
        return 0

    def _single(self, x, y=None):
        return self.pack([x] if self._sequence_input else _one_row(x),
                         None if y is None else [y] if self._sequence_input else _one_label(y))

    @staticmethod
    def _feature(problem, S, q):
        """``vec(X^T S) (+) q`` for the tokens ``X`` of a problem packed from one example."""
        return np.concatenate([np.asarray(problem.token_matrix().T @ S).ravel(), q])

    @classmethod
    def _joint_feature(cls, problem):
        """``phi(x, y)`` of a problem packed from one labelled example."""
        S = np.zeros((problem.tok_offsets[-1], problem.n_codes))
        q = np.zeros(problem.n_pair)
        labelings.add_stats(problem.kind, problem.y, 1.0, S, q, problem.edges)
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


def _one_row(x):
    return x.reshape(1, -1) if sp.issparse(x) else np.asarray(x).reshape(1, -1)


def _one_label(y):
    return np.asarray(y)[None] if np.ndim(y) >= 1 else [y]


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
                raise ValueError(f"{self._item} {i} must be a 2-D (n_{self._rows}, n_features) "
                                 f"array, got {np.ndim(x)} dimensions.")
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
    """Structures whose examples are single feature vectors (X is a 2-D array or sparse)."""

    _sequence_input = False

    def _token_matrix(self, X, fitting):
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
