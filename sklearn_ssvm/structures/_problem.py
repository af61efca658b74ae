"""The packed problems every solver works on: ``Problem`` (every example's tokens, labels and
losses as flat arrays with offsets, for the compiled label-space kernels) and ``GraphProblem``
(validated graph examples whose oracles run per example, from Python), with the example weights
and scales both share."""
import copy
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .._kernels import batch, labelings, python_oracle, smoothed
from .._kernels.graph_oracle import (COUNTED, GRAPH_CUT, INEXACT, NO_GRAPH_ORACLES, PYTHON,
                                     pack_graph_oracles)
from .._kernels.sparse import token_gram
from .._kernels.threads import thread_map
from ..smoothing import _check_mu

#: ``alpha=None`` per unit of the largest loss for sequences (OCR folds, CoNLL-2003 train ->
#: testa)
LOSS_ALPHA = 0.01
#: ``alpha=None`` for multi-label data per unit of the largest loss and of ``R^2``, the mean
#: squared norm of an example's features (the constant one included): the same model for
#: features scaled by any factor (scene by 3-fold CV on train, raw and standardised;
#: benchmarks/select_defaults.py)
FEATURE_ALPHA = 1e-3
#: ``alpha=None`` for sequences is at least ``TOKEN_ALPHA`` per token of the counting loss (its
#: objective is the mean length times a per-token one regularised by ``alpha / mean length``):
#: long sentences need it (CoNLL-2000 by 3-fold CV on train); benchmarks/select_defaults.py
TOKEN_ALPHA = 4.5e-5
#: ``alpha=None`` for graphs per unit of the largest loss and of ``R^2``, the mean bound on
#: ``||phi(x, y) - phi(x, y')||^2`` (``GraphProblem.squared_radius``): the largest ``c`` whose
#: development accuracy is within half a point of the best fit that stopped by itself on
#: snakes, rectangles, superpixel graphs and grids (benchmarks/select_defaults.py --sections
#: graph-alpha); ``1 / n`` was 270 to 49,000 times smaller there
GRAPH_ALPHA = 1e-4

_EMPTY_EDGES = np.zeros((0, 2), dtype=np.int64)
_EMPTY_INT = np.zeros(0, dtype=np.int64)
_EMPTY_DATA = np.zeros((0, 0))


def example_rows(offsets, idx):
    """The rows ``offsets[i]:offsets[i + 1]`` (int64) of the examples ``idx``, concatenated
    in that order (tokens, labels or non-zeros of packed examples)."""
    idx = np.asarray(idx, dtype=np.int64)
    lengths = offsets[idx + 1] - offsets[idx]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return np.repeat(offsets[idx] - starts, lengths) + np.arange(lengths.sum(), dtype=np.int64)


def label_space(problem):
    """``problem`` packed for the label-space kernels: a :class:`GraphProblem`'s
    :meth:`~GraphProblem.label_space`, any other problem itself."""
    return problem.label_space() if isinstance(problem, GraphProblem) else problem


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
        data ``FEATURE_ALPHA R^2`` (1e-3 times the mean squared norm of an example's
        features, so that scaling the features scales ``alpha`` alike); for graphs
        ``GRAPH_ALPHA R^2`` (1e-4 times the mean bound on ``||phi(x, y) - phi(x, y')||^2``);
        otherwise ``1 / n_samples`` (binary and multi-class SVMs: ``LinearSVC``'s ``C = 1``).
        Measured in ``benchmarks/select_defaults.py``.

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
        Label-interaction graph (multi-label structures; graphs: every example's edges, between
        its own nodes), empty otherwise.
    edge_offsets : ndarray of int64, default=empty
        Graphs: example ``i`` owns ``edges[edge_offsets[i]:edge_offsets[i + 1]]``; empty when
        the examples share ``edges``.
    edge_data : ndarray of shape (n_edges, n_edge_features), default=empty
        Graphs: each edge's features, which weigh its label pair in ``q(y)``.
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
    edge_offsets: np.ndarray = field(default_factory=lambda: _EMPTY_INT)
    edge_data: np.ndarray = field(default_factory=lambda: _EMPTY_DATA)
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

    def packed(self):
        """Return the packed arrays bundled as the kernels take them.

        Returns
        -------
        Packed
            ``(kind, edges, parent, order, indptr, indices, data, tok_offsets, y,
            node_offsets, tok_loss, edge_offsets, edge_data, oracle)``, a named tuple
            (``_kernels.labelings.Packed``); ``oracle`` the graph examples' oracles
            (``_kernels.graph_oracle.GraphOracles``; none for the other structures, whose
            oracles are compiled in the kernels).
        """
        return labelings.Packed(self.kind, self.edges, self.parent, self.order, self.indptr,
                                self.indices, self.data, self.tok_offsets, self.y,
                                self.node_offsets, self.tok_loss, self.edge_offsets,
                                self.edge_data, self._graph_oracles())

    def _graph_oracles(self):
        return NO_GRAPH_ORACLES

    def example_graph(self, i):
        """``(edges, edge_data)`` of example ``i``, as the label-space kernels take it
        (``_kernels.labelings.example_graph``).

        Parameters
        ----------
        i : int
            The example.

        Returns
        -------
        tuple of ndarray
            Its edges (all the examples' when they share them) and their features.
        """
        return labelings.example_graph(self.packed(), i)

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
        return batch.stats_from_labels(self.packed(), self.y, self.n_codes, self.n_pair)

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
        batch.oracle_all(self.packed(), np.ascontiguousarray(W), theta, augment, M, Q, y_out,
                         values, true_scores, expected)
        return y_out, values, true_scores, expected

    def upper_values(self, values):
        """Upper bounds on the maxima of the last :meth:`run_oracle` with a dual state.

        The compiled oracles are exact, so the bounds are the labelings' values themselves;
        graph problems take the bounds of TRW-S (Kolmogorov 2006) where it reported one.

        Parameters
        ----------
        values : ndarray of shape (n_samples,)
            The values of the labelings that run returned.

        Returns
        -------
        ndarray of shape (n_samples,)
            An upper bound on each example's (loss-augmented) maximum.
        """
        return values

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
        smoothed.smoothed_losses(self.packed(), np.ascontiguousarray(W), theta, smoothing, K, mu,
                                 values, M, Q)
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
            rows = np.repeat(np.arange(self.n_samples), np.diff(self.indptr))  # one per example
            norms = np.bincount(rows, self.data ** 2, minlength=self.n_samples)
            return FEATURE_ALPHA * max(self.weighted_mean(norms), np.finfo(float).tiny)
        return super()._alpha_rule()

    def without_loss(self):
        """Return this problem without its task loss.

        The label costs are zero, so that the entropy-smoothed hinge at ``mu = 1`` is the
        negative conditional log-likelihood (``CRFClassifier``).

        Returns
        -------
        Problem
            A copy sharing the packed arrays, its ``tok_loss`` zero.
        """
        return replace(self, tok_loss=np.zeros_like(self.tok_loss), _largest=None)

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


@dataclass
class GraphLabels(Problem):
    """The examples of a :class:`GraphProblem` packed in label space (kind ``GRAPH``), for
    BCFW's compiled pass: tokens are the nodes, ``S(y)`` their one-hot labels and ``q(y)`` the
    edges' features times their label pairs, so ``phi(x, y) = vec(X^T S(y)) (+) q(y)`` is the
    structure's own. The kernels call the structure's oracle from Python per example (the
    key of ``_kernels.python_oracle``); the oracle counts, the exactness and the feasible set
    are the graph problem's.

    Parameters
    ----------
    graphs : GraphProblem
        The examples (see :class:`Problem` for the other parameters).
    """

    graphs: object = None

    def _graph_oracles(self):
        return self.graphs.compiled_oracles

    @property
    def gram(self):
        return self.graphs.label_gram

    @property
    def certified(self):
        return self.graphs.certified

    @property
    def oracle_calls(self):
        return self.graphs.oracle_calls

    @property
    def constrained(self):
        return self.graphs.constrained

    def project(self, coef):
        return self.graphs.project(coef)

    def pairwise_bounds(self):
        return self.graphs.pairwise_bounds()

    def training_parts(self, features=True):
        return self.graphs.training_parts(features)

    def largest_losses(self):
        return self.graphs.largest_losses()

    def subset(self, idx):
        return self.graphs.subset(idx).label_space()

    def run_oracle(self, coef, augment, M=None, Q=None):
        """``Problem.run_oracle`` through the structure's oracle; with a dual state (a duality
        gap's pass) TRW-S runs to its bound, which :meth:`upper_values` then reads."""
        self.graphs.compiled_oracles.bounds[:] = np.nan  # every call writes its example's bound
        return super().run_oracle(coef, augment, M, Q)

    def upper_values(self, values):
        """Upper bounds on the maxima: the bound of TRW-S (Kolmogorov 2006) where the last run
        reported one, so that a gap computed from them is a certificate whatever the
        labelings."""
        bounds = self.graphs.compiled_oracles.bounds
        return np.where(np.isnan(bounds), values, np.maximum(values, bounds))


class _GraphOracle:
    """The per-example oracle of a graph problem as the compiled kernels call it from Python
    (``_kernels.python_oracle``): it records each call in the problem's counters and its upper
    bound on the maximum in ``bounds[i]`` (NaN: none), as the compiled oracles do."""

    def __init__(self, structure, examples, oracle_calls, inexact_calls, bounds):
        self.structure = structure
        self.examples = examples
        self.oracle_calls = oracle_calls
        self.inexact_calls = inexact_calls
        self.bounds = bounds

    def __call__(self, i, U, theta, augment, y_out):
        labeling, bound, (name, certified) = self.structure.label_oracle(
            self.examples[i], U, theta, augment)
        y_out[:] = labeling
        self.bounds[i] = bound
        self.oracle_calls[name] += 1
        if not certified:
            self.inexact_calls[0] += 1


class GraphProblem(ExampleWeights):
    """Validated examples of a :class:`~sklearn_ssvm.structures.GraphStructure` (``GraphCRF``,
    ``BinaryGraphCRF``, or one written outside the package) for the solvers, whose oracles run
    from Python per example.

    BCFW packs them in label space (:meth:`label_space`) and steps in its compiled pass, which
    calls these oracles (graph cuts, integer programs, message passing) from Python. BMRM and
    the smoothed solvers take their dense-oracle paths, with dense per-example statistics
    (``coef`` is short: node features times states plus the pairwise tables) and, for
    ``BinaryGraphCRF``, a projection keeping the pairwise table submodular after every step.
    The structure supplies, per validated example, the hooks of ``GraphStructure``: the public
    ``label_graph``, ``labeling`` and ``label_oracle`` it writes, and ``_decode`` (the max
    oracle at ``coef``), ``_smoothed``, ``_loss``, ``_largest_loss`` and ``_squared_radius``
    that follow from them unless it writes its own. Every
    oracle call reports the oracle that ran and whether it was exact: ``oracle_calls`` counts
    them by name and ``certified`` says whether all were exact (only then are duality gaps
    certificates).
    """

    #: the smoothed solvers' and BMRM's switch to their dense-oracle path
    dense_oracles = True
    #: no compiled structure kind (``smoothing_code`` then refuses l2 over all outputs)
    kind = -1
    #: whether the smoothed oracles add the task loss (:meth:`without_loss`)
    augment = True

    def __init__(self, structure, examples):
        self.structure = structure
        self.examples = examples
        self.sample_weight = np.ones(len(examples))
        self._python_calls = Counter()
        self.inexact_calls = [0]  # shared by the weighted copies of the problem

    @property
    def n_samples(self):
        return len(self.examples)

    @property
    def n_params(self):
        return self.structure.n_params

    @property
    def certified(self):
        """Whether every oracle call so far was exact or bounded the maximum."""
        compiled = ("compiled_oracles" not in self.__dict__
                    or not self.compiled_oracles.counts[:, INEXACT].any())
        return self.inexact_calls[0] == 0 and compiled

    @property
    def oracle_calls(self):
        """The oracle calls so far by the name of the oracle that answered (a ``Counter``);
        the compiled calls of BCFW's label space under their oracle's name, TRW-S's as
        ``"TRWSMAP"`` where the labeling met the bound, ``"TRWSMAP (bound)"`` where the bound
        answered, and the steps' calls, which need no certificate, as ``"TRWSMAP (step)"``."""
        calls = Counter(self._python_calls)
        if "compiled_oracles" in self.__dict__:
            counts = self.compiled_oracles.counts.sum(axis=0)
            for name, count in zip(COUNTED, counts):
                if count:
                    calls[name] += int(count)
        return calls

    def _record(self, report):
        name, exact = report
        self._python_calls[name] += 1
        if not exact:
            self.inexact_calls[0] += 1

    def training_parts(self, features=True):
        """What a warm start's solver state depends on (``training_key``): the graphs, the
        labelings and the sample weights, and the features unless ``features=False``."""
        parts = [self.sample_weight]
        for example in self.examples:
            features_, edges, y = self.structure._example_arrays(example)
            parts += [edges, y] + (features_ if features else [])
        return parts

    def largest_losses(self):
        """Each example's largest loss ``max_y L(y_i, y)`` (every node wrong), from the
        structure's ``_largest_loss`` hook: no oracle call."""
        return np.array([self.structure._largest_loss(e) for e in self.examples])

    def subset(self, idx):
        """The examples ``idx`` (their sample weights normalised to mean 1 again)."""
        part = type(self)(self.structure, [self.examples[i] for i in idx])
        part.augment = self.augment
        return part.with_sample_weight(self.sample_weight[idx])

    def without_loss(self):
        """Return this problem with smoothed oracles that add no task loss.

        ``GraphCRF``'s entropy smoothing at ``mu = 1`` is then TRW's bound on the negative
        conditional log-likelihood (``CRFClassifier``).

        Returns
        -------
        GraphProblem
            A shallow copy sharing the examples.
        """
        problem = copy.copy(self)
        problem.augment = False
        return problem

    def _smoothed(self, i, coef, smoothing):
        if self.augment:
            return self.structure._smoothed(self.examples[i], coef, smoothing)
        return self.structure._smoothed(self.examples[i], coef, smoothing, augment=False)

    def smoothed(self, i, coef, smoothing):
        """Smoothed loss of example ``i`` at ``coef``, its gradient (``E[phi(y)] - phi(y_i)``
        under the smoothing's distribution) and expected loss; ``smoothing`` a
        ``solvers.smooth.Smoothing`` (the hard max, top-K l2, or entropy where the structure
        has it)."""
        value, gradient, expected_loss, report = self._smoothed(i, coef, smoothing)
        self._record(report)
        return value, gradient, expected_loss

    def smoothed_all(self, coef, smoothing):
        """:meth:`smoothed` of every example, on the ``n_jobs`` threads (``thread_map``; the
        oracle reports are gathered here, in the calling thread): lists of values, gradients
        and expected losses."""
        results = thread_map(lambda i: self._smoothed(i, coef, smoothing), self.n_samples)
        for r in results:
            self._record(r[3])
        return [r[0] for r in results], [r[1] for r in results], [r[2] for r in results]

    def check_smoothing(self, smoothing):
        """Refuse, before a fit starts, a smoothing the structure has no oracle for."""
        self.structure._check_smoothing(smoothing.code)

    def loss(self, i, y):
        """The task loss of labeling ``y`` of example ``i``."""
        return self.structure._loss(self.examples[i], y)

    def labeling(self, i):
        """The true labeling of example ``i`` (state indices)."""
        return self.structure.labeling(self.examples[i])

    def run_oracle(self, coef, augment):
        """Every example's oracle, as ``Problem.run_oracle`` without a dual state:
        ``(labelings, values, gold, None)``; ``labelings`` a list, ``values`` the best
        (loss-augmented) scores, ``gold`` the true labelings' scores."""
        results = thread_map(lambda i: self.structure._decode(self.examples[i], coef, augment),
                             self.n_samples)
        labelings = [r[0] for r in results]
        values = np.array([r[1] for r in results], dtype=np.float64)
        gold = np.array([r[2] for r in results], dtype=np.float64)
        for r in results:
            self._record(r[3])
        return labelings, values, gold, None

    def hinge_losses(self, coef):
        """Structured hinge ``max_y H_i(y)`` of every example (one oracle call each)."""
        _, values, gold, _ = self.run_oracle(coef, True)
        return values - gold

    def losses(self, y_pred):
        """Task loss of each predicted labeling."""
        return np.array([self.loss(i, yp) for i, yp in enumerate(y_pred)])

    def score(self, y_pred):
        """``1 - mean task loss`` (``Problem.score``)."""
        return 1.0 - float(np.mean(self.losses(y_pred)))

    def squared_radius(self):
        """Mean over examples of a bound on ``||phi(x, y) - phi(x, y')||^2``."""
        return float(np.mean(self._squared_radii()))

    def _squared_radii(self):
        return np.array([self.structure._squared_radius(example) for example in self.examples])

    def _alpha_rule(self):
        return GRAPH_ALPHA * max(self.weighted_mean(self._squared_radii()), np.finfo(float).tiny)

    def truth_stats(self):
        """The dual state at the true labelings, ``M_i = E[phi(y)] - phi(y_i) = 0`` (also SGD's
        reference gradients: the dense ones already subtract ``phi(x_i, y_i)``)."""
        return np.zeros((self.n_samples, self.n_params)), np.zeros((self.n_samples, 0))

    @cached_property
    def node_offsets(self):
        """Example ``i``'s nodes are ``node_offsets[i]:node_offsets[i + 1]`` of ``y`` (the
        layout of BCFW's stored labelings)."""
        sizes = [len(self.labeling(i)) for i in range(self.n_samples)]
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @cached_property
    def y(self):
        """The true labelings, concatenated (int32 state indices)."""
        return np.concatenate([self.labeling(i) for i in range(self.n_samples)]).astype(np.int32)

    def label_space(self):
        """The examples packed in label space for BCFW's compiled pass (:class:`GraphLabels`),
        with this problem's sample weights.

        Returns
        -------
        GraphLabels
            Views of arrays packed once per problem.
        """
        return GraphLabels(**self._label_arrays, sample_weight=self.sample_weight, graphs=self)

    @cached_property
    def _label_arrays(self):
        parts = [self.structure.label_graph(example) for example in self.examples]
        features = sp.vstack([sp.csr_matrix(f) for f, _, _, _ in parts], format="csr")
        n_edges = [len(e) for _, e, _, _ in parts]
        S = len(self.structure.classes_)
        return dict(kind=labelings.GRAPH, indptr=features.indptr.astype(np.int64),
                    indices=features.indices.astype(np.int64), data=features.data,
                    n_features=features.shape[1], tok_offsets=self.node_offsets,
                    y=self.y, node_offsets=self.node_offsets, n_codes=S,
                    n_pair=parts[0][2].shape[1] * S * S,
                    tok_loss=np.concatenate([np.full(f.shape[0], loss) for f, _, _, loss in parts]),
                    edges=np.vstack([e for _, e, _, _ in parts]).astype(np.int64),
                    edge_offsets=np.concatenate([[0], np.cumsum(n_edges)]).astype(np.int64),
                    edge_data=np.ascontiguousarray(np.vstack([d for _, _, d, _ in parts]),
                                                   dtype=np.float64))

    @cached_property
    def label_gram(self):
        """The node Gram matrices of :meth:`label_space` (``Problem.gram``), computed once."""
        arrays = self._label_arrays
        return token_gram(arrays["indptr"], arrays["indices"], arrays["data"],
                          arrays["tok_offsets"], arrays["n_features"], direct=True)

    @cached_property
    def compiled_oracles(self):
        """The examples' oracles as the kernels of :meth:`label_space` call them
        (``_kernels.graph_oracle.GraphOracles``): compiled where the structure's
        ``_compiled_oracle`` gives the example's oracle code, model and settings, else (and
        where a compiled graph cut meets tables that are not submodular) the structure's
        ``label_oracle`` from Python."""
        compiled = [self.structure._compiled_oracle(e) for e in self.examples]
        oracles = pack_graph_oracles(
            -1, np.diff(self.node_offsets), np.diff(self._label_arrays["edge_offsets"]),
            [PYTHON if c is None else c[0] for c in compiled],
            [None if c is None else c[1] for c in compiled],
            *next((c[2] for c in compiled if c is not None), (0, 0, 0.0)))
        if not np.isin(oracles.code, (PYTHON, GRAPH_CUT)).any():
            return oracles
        # the registry holds oracles weakly: the problem keeps its own alive
        self._oracle = _GraphOracle(self.structure, self.examples, self._python_calls,
                                    self.inexact_calls, oracles.bounds)
        return oracles._replace(key=python_oracle.register(self._oracle))

    @property
    def cuts_only(self):
        """Whether every example's oracle is a compiled graph cut (binary ``GraphCRF`` models
        off forests at ``"auto"``): one costs about a step, so BCFW's ``cache="auto"`` keeps no
        cache for them."""
        return bool(np.all(self.compiled_oracles.code == GRAPH_CUT))

    @property
    def constrained(self):
        """Whether the oracles accept only some coefficients (``project`` is not the
        identity)."""
        return self.structure.constrained_coef

    def project(self, coef):
        """The nearest coefficients the oracles accept (``BinaryGraphCRF``: the pairwise table
        projected onto the submodular cone; ``GraphCRF``: all)."""
        return self.structure.project_coef(coef)

    def pairwise_bounds(self):
        """``coef_bounds="positive_pairwise"``: the structure's box keeping the pairwise tables
        attractive."""
        return self.structure.pairwise_bounds()
