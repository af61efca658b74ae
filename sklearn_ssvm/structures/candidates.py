"""Candidate sets: each example is a finite list of candidate outputs, each with features and a
loss (object localisation with proposals, re-ranking, the toy problem of spec 002 App. C)."""
import numpy as np

from .._kernels.labelings import CANDIDATES
from .base import SequenceStructure


class CandidateSet(SequenceStructure):
    """Pick one candidate per example: ``phi(x, y) = x[y]``, the features of candidate ``y``.

    ``X`` is a list of ``(n_candidates_i, n_features)`` matrices (dense or sparse), and ``Y`` a
    list of per-candidate loss vectors: ``Y[i][k] = L(y_i, k) >= 0``, zero at the true candidate
    (the first zero if several). The oracles are exhaustive over the candidates (spec 000
    §2.4, "explicit candidate sets"). ``predict`` returns candidate indices; the estimators'
    ``score`` is ``1 - mean`` over the examples of the predicted candidate's loss divided by
    the example's largest loss (each in [0, 1], as the other structures' scores).

    Attributes
    ----------
    classes_ : ndarray
        ``arange(max n_candidates)``: the candidate indices.
    n_features_in_ : int
        Number of candidate features.
    """

    _kind = CANDIDATES
    _n_codes = 1
    _item = "Example"
    _rows = "candidates"
    loss_name = "candidate loss"

    def __init__(self):
        pass

    def _check_losses(self, y, i, n_candidates=None):
        y = np.asarray(y, dtype=float)
        if y.ndim != 1:
            raise ValueError(f"Example {i}: the losses must be a 1-D vector, one per candidate.")
        if n_candidates is not None and y.shape[0] != n_candidates:
            raise ValueError(f"Example {i} has {n_candidates} candidates but {y.shape[0]} "
                             f"losses.")
        if not np.all(np.isfinite(y)) or np.any(y < 0) or not np.any(y == 0):
            raise ValueError(f"Example {i}: candidate losses must be finite and >= 0, with 0 at "
                             f"the true candidate.")
        return y

    def _fit_labels(self, Y):
        lengths = [len(self._check_losses(y, i)) for i, y in enumerate(Y)]
        self.classes_ = np.arange(max(lengths))

    def _encode_labels(self, Y, lengths):
        offsets = np.arange(len(lengths) + 1, dtype=np.int64)
        if Y is None:
            return np.zeros(len(lengths), dtype=np.int32), offsets
        true = [np.flatnonzero(self._check_losses(y, i, T) == 0)[0]
                for i, (y, T) in enumerate(zip(Y, lengths))]
        return np.array(true, dtype=np.int32), offsets

    def _token_losses(self, Y):
        return np.concatenate([np.asarray(y, dtype=float) for y in Y])

    def _decode_labels(self, y, offsets):
        return y.astype(np.int64)

    def _decode_one(self, y_codes):
        return int(y_codes[0])

    def joint_feature(self, x, y):
        """Return ``phi(x, y)``: the features of candidate ``y`` (an index).

        Parameters
        ----------
        x : array-like or sparse matrix of shape (n_candidates, n_features)
            The candidates of one example, one feature vector per row.
        y : int
            Index of a candidate.

        Returns
        -------
        ndarray of shape (n_features,)
            ``x[y]`` as a dense vector.
        """
        losses = np.ones(np.shape(x)[0])
        losses[y] = 0.0  # packs y as the true candidate
        return self._joint_feature(self._single(x, losses))

    def loss(self, y_true, y):
        """Return the task loss ``L(y_true, y) = y_true[y]``.

        Parameters
        ----------
        y_true : array-like of shape (n_candidates,)
            The example's loss vector, one loss per candidate.
        y : int
            Index of a candidate.

        Returns
        -------
        float
            ``y_true[y]``.
        """
        return float(np.asarray(y_true, dtype=float)[y])
