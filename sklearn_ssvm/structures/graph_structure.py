"""``GraphStructure``: the protocol of structures whose oracle runs from Python per example.

An output is a labeling of the nodes of a graph each example has (pixels, superpixels, the
nodes of a label taxonomy), in the package's shape of joint feature::

    phi(x, y) = vec(X^T onehot(y)) (+) sum_{(s, t) in edges} d_st (x) e_{y_s, y_t}

with ``X`` the example's node features (rows: nodes) and ``d_st`` the features of edge
``(s, t)``, so ``coef = [vec(W), theta]``: ``W`` of shape ``(n_node_features, n_states)``
(row-major) and ``theta`` one ``n_states x n_states`` table per edge feature. A structure
writes its validation (:meth:`GraphStructure.examples`), the example in label space
(:meth:`GraphStructure.label_graph`), its true labeling (:meth:`GraphStructure.labeling`) and
its max oracle at given scores (:meth:`GraphStructure.label_oracle`), in Python: everything
else the solvers ask of it (the joint feature, the loss, the oracle at ``coef``, the hard-max
smoothed oracle, the scales) follows here from those four. Every solver that trains graphs
(BCFW, whose compiled pass calls the oracle from Python; BMRM and the smoothed solvers on
their dense-oracle paths; the paths and CV estimators above them) then trains it, before
anyone compiles an oracle for it.
"""
from abc import abstractmethod

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from .._kernels.smoothed import NONE, TOP_K
from ..marginals._graphcut import bmmf_topk, max_marginals_by_map
from ..smoothing import topk_smooth_max
from ._problem import GraphProblem
from .base import Structure

__all__ = ["GraphStructure"]


class GraphStructure(Structure):
    """Base class of the structures whose examples are labelled graphs and whose oracle runs
    from Python (``GraphCRF``, ``BinaryGraphCRF``, and structures written outside the package):
    the pairwise Markov networks of Taskar et al. (2003), trained in label space as BCFW's
    dual (Lacoste-Julien et al. 2013) keeps them.

    Subclasses write :meth:`examples`, :meth:`label_graph`, :meth:`labeling`,
    :meth:`label_oracle` and :attr:`n_params`, and set ``classes_`` (the states) when fitted.
    They may override the derived hooks where they know better: ``_decode`` (the oracle at
    ``coef``), ``_top_k`` (the ``K`` best labelings; here BMMF over :meth:`label_oracle`),
    ``_smoothed`` (here the hard max and top-K l2 smoothing, entropy refused by
    ``_check_smoothing``), ``_loss``, ``_largest_loss``, ``_squared_radius``,
    ``_compiled_oracle`` (examples that BCFW's pass decodes in compiled code),
    :meth:`project_coef` with ``constrained_coef``, and :meth:`pairwise_bounds` (none here).
    """

    #: whether the oracles accept only some coefficients (:meth:`project_coef`)
    constrained_coef = False
    loss_name = "Hamming loss"

    # -- the hooks a structure writes --------------------------------------------------------

    @abstractmethod
    def examples(self, X, Y=None, fit=False):
        """Validate examples (and their labelings, when given).

        Parameters
        ----------
        X : list
            The examples, in the structure's format.
        Y : list or None, default=None
            Their outputs, or None for unlabelled examples.
        fit : bool, default=False
            Whether to learn the fitted attributes (``classes_``, feature counts) from them;
            otherwise they are checked against those.

        Returns
        -------
        list
            One validated example each, in whatever form the other hooks take.
        """

    @abstractmethod
    def label_graph(self, example):
        """The example in label space.

        Parameters
        ----------
        example : object
            A validated example (:meth:`examples`).

        Returns
        -------
        features : ndarray or sparse matrix of shape (n_nodes, n_node_features)
            The node features ``X``.
        edges : ndarray of shape (n_edges, 2)
            The edges ``(s, t)`` (an integer array; none is ``np.zeros((0, 2))``).
        edge_features : ndarray of shape (n_edges, n_edge_features)
            The edges' features ``d_st``.
        node_loss : float
            The loss of one wrong node: the loss is Hamming's, ``node_loss`` per node.
        """

    @abstractmethod
    def labeling(self, example):
        """The example's true labeling.

        Parameters
        ----------
        example : object
            A validated example (:meth:`examples`).

        Returns
        -------
        ndarray of int or None
            State indices, one per node; None for an unlabelled example.
        """

    @abstractmethod
    def label_oracle(self, example, unary, pairwise, augment):
        """The max oracle at given scores: a best labeling of
        ``sum_t unary[t, y_t] + sum_st <d_st, theta[:, y_s, y_t]>`` (plus the loss with
        ``augment``).

        Parameters
        ----------
        example : object
            A validated example.
        unary : ndarray of shape (n_nodes, n_states)
            The unary scores ``X W``.
        pairwise : ndarray of shape (n_edge_features * n_states**2,)
            ``theta``, the pairwise part of ``coef``.
        augment : bool
            Whether to add the task loss against the true labeling (the loss-augmented max).

        Returns
        -------
        labeling : ndarray of int
            The labeling found.
        bound : float
            An upper bound on the maximum, or NaN where the labeling is exact or none is
            known.
        report : tuple
            ``(oracle name, exact)``: whether the labeling is a certified maximum (or the bound
            known); duality gaps are certificates only when every call was.
        """

    # -- what follows from them --------------------------------------------------------------

    def fit(self, X, Y):
        """Validate a data set and learn the fitted attributes.

        Parameters
        ----------
        X : list
            The examples.
        Y : list
            Their labelings.

        Returns
        -------
        GraphStructure
            The structure itself, fitted.
        """
        self.prepare(X, Y)
        return self

    def prepare(self, X, Y):
        if Y is None:
            raise ValueError("Y is required: one labeling per example.")
        return GraphProblem(self, self.examples(X, Y, fit=True))

    def pack(self, X, Y=None):
        self._check_fitted()
        return GraphProblem(self, self.examples(X, Y))

    def predict(self, X, coef):
        return self.pack(X).run_oracle(np.asarray(coef, dtype=np.float64), False)[0]

    def project_coef(self, coef):
        """The nearest coefficients the oracles accept: here all (a float64 copy).

        Parameters
        ----------
        coef : array-like of shape (n_params,)
            Parameter vector.

        Returns
        -------
        ndarray of shape (n_params,)
            The projected coefficients.
        """
        return np.array(coef, dtype=np.float64)

    def pairwise_bounds(self):
        """The box ``coef_bounds="positive_pairwise"`` stands for, where the structure defines
        one (``GraphCRF``: attractive pairwise tables).

        Raises
        ------
        ValueError
            Here: the structure defines none.
        """
        raise ValueError(f"coef_bounds='positive_pairwise' is not defined for "
                         f"{type(self).__name__}: give the bounds as (lower, upper).")

    def _check_fitted(self):
        if not hasattr(self, "classes_"):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet: call "
                                 f"fit(X, Y) first.")

    def _phi(self, example, y):
        features, edges, edge_features, _ = self.label_graph(example)
        S = len(self.classes_)
        y = np.asarray(y)
        onehot = np.zeros((features.shape[0], S))
        onehot[np.arange(features.shape[0]), y] = 1.0
        pairs = np.zeros((len(edges), S * S))
        pairs[np.arange(len(edges)), y[edges[:, 0]] * S + y[edges[:, 1]]] = 1.0
        return np.concatenate([np.asarray(features.T @ onehot).ravel(),
                               (edge_features.T @ pairs).ravel()])

    def _loss(self, example, y):
        return self.label_graph(example)[3] * float(
            np.count_nonzero(np.asarray(y) != self.labeling(example)))

    def _largest_loss(self, example):
        features, _, _, node_loss = self.label_graph(example)
        return node_loss * features.shape[0]  # every node wrong: the loss scale

    def _squared_radius(self, example):
        """A bound on ``||phi(x, y) - phi(x, y')||^2``."""
        features, _, edge_features, _ = self.label_graph(example)
        squares = features.multiply(features).sum() if sp.issparse(features) \
            else np.sum(features ** 2)
        return float(2.0 * squares + 2.0 * np.sum(edge_features.sum(axis=0) ** 2))

    def _example_arrays(self, example):
        """What a warm start depends on: ``(feature arrays, edges, true labeling)``."""
        features, edges, edge_features, _ = self.label_graph(example)
        return [features, edge_features], edges, self.labeling(example)

    def _compiled_oracle(self, example):
        """The compiled oracle BCFW's pass decodes ``example`` with: none, the structure's
        :meth:`label_oracle` runs from Python."""
        return None

    def _label_scores(self, example, coef):
        """``(unary, pairwise)``: the label-space scores :meth:`label_oracle` takes at ``coef``."""
        features = self.label_graph(example)[0]
        F, S = features.shape[1], len(self.classes_)
        return np.asarray(features @ coef[:F * S].reshape(F, S)), coef[F * S:]

    def _score(self, example, coef, labeling, augment):
        """A labeling's score at ``coef``, plus its loss with ``augment``."""
        value = float(self._phi(example, labeling) @ coef)
        return value + self._loss(example, labeling) if augment else value

    def _decode(self, example, coef, augment):
        """``(labeling, value, gold, report)``: :meth:`label_oracle` at ``coef``, the
        labeling's score (plus its loss with ``augment``) and the true labeling's score."""
        y = self.labeling(example)
        labeling, _, report = self.label_oracle(example, *self._label_scores(example, coef),
                                                augment)
        gold = 0.0 if y is None else float(self._phi(example, y) @ coef)
        return labeling, self._score(example, coef, labeling, augment), gold, report

    def _top_k(self, example, coef, K, augment):
        """``(labelings, scores, gold, report)``: the ``K`` best labelings by BMMF (spec 000
        Algo. 10) over max-marginals from :meth:`label_oracle`, one call per (node, other state)
        with the states outside BMMF's mask priced out of reach; exact when every call was."""
        unary, pairwise = self._label_scores(example, coef)
        edge_features = self.label_graph(example)[2]
        # more than twice any labeling's score and loss: a priced-out state never wins
        far = 1.0 + 2.0 * (np.abs(unary).sum() + self._largest_loss(example) + np.abs(
            edge_features).sum(axis=0) @ np.abs(pairwise).reshape(edge_features.shape[1],
                                                                   -1).max(axis=1))
        reports = []
        nodes = np.arange(len(unary))

        def best(allowed):
            labeling, _, report = self.label_oracle(example, unary - far * ~allowed, pairwise,
                                                    augment)
            reports.append(report)
            return labeling, (self._score(example, coef, labeling, augment)
                              if allowed[nodes, labeling].all() else -np.inf)

        labelings, scores = bmmf_topk(lambda allowed: max_marginals_by_map(best, allowed),
                                      len(unary), K, len(self.classes_))
        gold = float(self._phi(example, self.labeling(example)) @ coef)
        return labelings, scores, gold, (reports[0][0], all(exact for _, exact in reports))

    def _smoothed(self, example, coef, smoothing, augment=True):
        """The smoothed hinge of one example, its gradient, the expected loss and the oracle's
        report: the hard max (gradient ``phi(y*) - phi(y_i)``), or top-K l2 smoothing over
        :meth:`_top_k`'s labelings (spec 000 eq. (11))."""
        if smoothing.code == NONE:
            y_star, value, gold, report = self._decode(example, coef, augment)
            labelings, weights, value = [y_star], np.ones(1), value - gold
        else:
            labelings, scores, gold, report = self._top_k(example, coef, smoothing.K, augment)
            value, weights, _ = topk_smooth_max(scores - gold, smoothing.mu)
        gradient = -self._phi(example, self.labeling(example))
        expected_loss = 0.0
        for k in np.flatnonzero(weights > 0.0):  # skips the -inf padding
            gradient += weights[k] * self._phi(example, labelings[k])
            expected_loss += weights[k] * self._loss(example, labelings[k])
        return float(value), gradient, expected_loss, report

    def _check_smoothing(self, code):
        if code not in (NONE, TOP_K):
            raise ValueError(f"{type(self).__name__} has a max oracle only: use "
                             f"smoothing='l2' with top_k (BMMF over its oracle) or "
                             f"smoothing=None, or write its entropy oracle in _smoothed.")
