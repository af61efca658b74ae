"""Multi-label classification: ``y in {0, 1}^K``, optional pairwise label interactions."""
import numpy as np
from scipy.sparse.csgraph import breadth_first_order, minimum_spanning_tree

from .._kernels.labelings import (MULTILABEL_FULL, MULTILABEL_INDEPENDENT, MULTILABEL_TREE)
from .base import FlatStructure

MAX_FULL_LABELS = 12


class MultiLabel(FlatStructure):
    """Multi-label classification with the Hamming loss normalised by the number of labels.

    The multi-label model of Finley & Joachims (2008, ICML), pairwise label terms optional, as a
    structure of Osokin et al. (2016).

    ``phi(x, y) = x (x) y`` (one weight vector per label) plus, when ``pairwise`` is set, a 2x2
    table of weights per interacting pair of labels: ``e_{(y_k, y_l)}`` for each edge ``(k, l)``.

    Parameters
    ----------
    pairwise : {None, "tree", "full"}, default=None
        ``None``: independent labels (the oracle decides each label alone). ``"tree"``: edges of
        the Chow-Liu tree of the training labels (maximum spanning tree of their pairwise mutual
        information), exact max-product oracle. ``"full"``: every pair of labels, exhaustive
        oracle (at most 12 labels).

    Attributes
    ----------
    classes_ : ndarray of shape (n_labels,)
        ``arange(n_labels)``, as in scikit-learn's multi-label estimators.
    edges_ : ndarray of shape (n_edges, 2)
        The label pairs with interaction weights (``(child, parent)`` for the tree).
    n_features_in_ : int
    """

    loss_name = "normalised Hamming loss"

    def __init__(self, pairwise=None):
        self.pairwise = pairwise

    @property
    def _kind(self):
        return {None: MULTILABEL_INDEPENDENT, "tree": MULTILABEL_TREE,
                "full": MULTILABEL_FULL}[self.pairwise]

    @property
    def _n_codes(self):
        return len(self.classes_)

    @property
    def _edges(self):
        return self.edges_

    def _check_Y(self, Y, n_labels=None):
        Y = np.asarray(Y)
        if Y.ndim != 2:
            raise ValueError(f"Y must be a 2-D 0/1 indicator matrix, got shape {Y.shape}.")
        if n_labels is not None and Y.shape[1] != n_labels:
            raise ValueError(f"Y has {Y.shape[1]} labels, but the structure was fitted with "
                             f"{n_labels} labels.")
        bad = np.flatnonzero(~np.all((Y == 0) | (Y == 1), axis=1))
        if len(bad):
            raise ValueError(f"Example {bad[0]} of Y has values other than 0 and 1: "
                             f"{Y[bad[0]]}.")
        return Y.astype(np.int32)

    def _fit_labels(self, Y):
        if self.pairwise not in (None, "tree", "full"):
            raise ValueError(f"pairwise must be None, 'tree' or 'full', got {self.pairwise!r}.")
        Y = self._check_Y(Y)
        K = Y.shape[1]
        if K == 0:
            raise ValueError("Y has no label columns: MultiLabel needs at least one label.")
        if self.pairwise == "full" and K > MAX_FULL_LABELS:
            raise ValueError(f"pairwise='full' uses an exhaustive oracle over 2**n_labels "
                             f"labelings; at most {MAX_FULL_LABELS} labels, got {K}. Use "
                             f"pairwise='tree'.")
        self.classes_ = np.arange(K)
        self._parent = np.full(K, -1, dtype=np.int64)
        self._order = np.arange(K, dtype=np.int64)
        if self.pairwise == "full":
            self.edges_ = np.array([(k, l) for k in range(K) for l in range(k + 1, K)],
                                   dtype=np.int64).reshape(-1, 2)
        elif self.pairwise == "tree" and K > 1:
            self.edges_ = self._chow_liu_tree(Y)
        else:
            self.edges_ = np.zeros((0, 2), dtype=np.int64)

    def _chow_liu_tree(self, Y):
        """Maximum spanning tree of the labels' pairwise mutual information (Chow & Liu 1968)."""
        K = Y.shape[1]
        mi = np.zeros((K, K))
        eps = 1e-12
        for a in range(2):
            for b in range(2):
                joint = ((Y[:, :, None] == a) & (Y[:, None, :] == b)).mean(axis=0)
                pa = (Y == a).mean(axis=0)
                pb = (Y == b).mean(axis=0)
                mi += joint * np.log((joint + eps) / (pa[:, None] * pb[None, :] + eps))
        # csgraph treats zeros as missing edges: turn "max MI" into "min positive weight"
        weights = mi.max() + 1.0 - mi
        np.fill_diagonal(weights, 0.0)
        tree = minimum_spanning_tree(np.triu(weights))
        tree = tree + tree.T
        order, pred = breadth_first_order(tree, 0, directed=False)
        self._parent = np.where(pred < 0, -1, pred).astype(np.int64)
        self._order = order.astype(np.int64)
        return np.array([(v, self._parent[v]) for v in order if self._parent[v] >= 0],
                        dtype=np.int64).reshape(-1, 2)

    def _encode_labels(self, Y, lengths):
        K = len(self.classes_)
        offsets = np.arange(len(lengths) + 1, dtype=np.int64) * K
        if Y is None:
            return np.zeros(len(lengths) * K, dtype=np.int32), offsets
        return self._check_Y(Y, K).ravel(), offsets

    def _encode_one(self, y):
        return self._check_Y(np.asarray(y).reshape(1, -1), len(self.classes_)).ravel()

    def _decode_labels(self, y, offsets):
        return y.reshape(-1, len(self.classes_)).copy()
