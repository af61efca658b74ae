"""Non-linear scores of candidates for the prox-linear method (spec 000 §4, §5.3).

A feature map scores each candidate output from its feature vector ``x_y`` (one row of an
example's candidate matrix) with a parameter vector ``w``: ``score(x, y; w) = s(x_y; w)``. The
prox-linear method (``solvers/prox_linear.py``) needs the scores and their Jacobian in ``w``, row
``y`` being ``grad_w s(x_y; w)``. Any object with the methods of :class:`MLPFeatureMap`
(``n_params``, ``init_params``, ``scores``, ``jacobian``) can be used.
"""
import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state


def elu(z):
    """The ELU ``z`` for ``z >= 0``, ``exp(z) - 1`` for ``z < 0`` (spec 000 §5.3)."""
    return np.where(z >= 0.0, z, np.expm1(np.minimum(z, 0.0)))


def elu_derivative(z):
    """``1`` for ``z >= 0``, ``exp(z)`` below: continuous and 1-Lipschitz, so the scores of
    :class:`MLPFeatureMap` are smooth on bounded sets (Assumption 33, Lemma 34)."""
    return np.exp(np.minimum(z, 0.0))


class MLPFeatureMap(BaseEstimator):
    """One-hidden-layer ELU network on each candidate's features (spec 000 §5.3).

    ``score(x, y; w) = <ELU(x_y A), b>`` with ``x_y`` the ``(n_features,)`` features of
    candidate ``y``, ``A`` of shape ``(n_features, n_hidden)`` and ``b`` of shape
    ``(n_hidden,)``: the paper's non-linear VOC score ``<sigma(Phi(x, y) * w_1), w_2>`` with the
    1x1 convolution over one position. The parameter vector is ``w = [vec(A), b]`` (``A``
    row-major). There is no bias unit: append a constant feature to the candidates for one.

    Parameters
    ----------
    n_hidden : int, default=16
        Hidden units ``H`` (16 in the paper).
    random_state : int, RandomState instance or None, default=None
        Seeds :meth:`init_params`.
    """

    def __init__(self, n_hidden=16, random_state=None):
        self.n_hidden = n_hidden
        self.random_state = random_state

    def _check_n_hidden(self):
        if (isinstance(self.n_hidden, (bool, np.bool_))
                or not isinstance(self.n_hidden, numbers.Integral) or self.n_hidden < 1):
            raise ValueError(f"n_hidden must be an integer >= 1, got {self.n_hidden!r}.")
        return int(self.n_hidden)

    def n_params(self, n_features):
        """Length ``n_features * n_hidden + n_hidden`` of ``w``."""
        return (n_features + 1) * self._check_n_hidden()

    def init_params(self, n_features):
        """A random starting point (Glorot-scaled normal entries).

        ``w = 0`` is a stationary point of every objective built on this score (all scores and
        all Jacobian rows vanish there), so the prox-linear method must not start from it.

        Returns
        -------
        ndarray of shape (n_params(n_features),)
        """
        H = self._check_n_hidden()
        rng = check_random_state(self.random_state)
        A = rng.normal(scale=1.0 / np.sqrt(n_features), size=(n_features, H))
        b = rng.normal(scale=0.1 / np.sqrt(H), size=H)
        return np.concatenate([A.ravel(), b])

    def _layers(self, Xc, w):
        """Candidate matrix as floats, pre-activations ``Z = Xc A`` and output weights ``b``."""
        Xc = np.asarray(Xc, dtype=float)
        if Xc.ndim != 2:
            raise ValueError(f"Xc must be a 2-D (n_candidates, n_features) array, got "
                             f"{Xc.ndim} dimensions.")
        F = Xc.shape[1]
        w = np.asarray(w, dtype=float)
        if w.shape != (self.n_params(F),):
            raise ValueError(f"w must have shape ({self.n_params(F)},) for {F} features and "
                             f"{self.n_hidden} hidden units, got {w.shape}.")
        H = self.n_hidden
        return Xc, Xc @ w[:F * H].reshape(F, H), w[F * H:]

    def scores(self, Xc, w):
        """``score(x, y; w)`` of every candidate.

        Parameters
        ----------
        Xc : array-like of shape (n_candidates, n_features)
            Candidate features of one example (or of several, stacked: rows are independent).
        w : ndarray of shape (n_params(n_features),)

        Returns
        -------
        ndarray of shape (n_candidates,)
        """
        _, Z, b = self._layers(Xc, w)
        return elu(Z) @ b

    def jacobian(self, Xc, w):
        """Gradients in ``w`` of the scores, one row per candidate (the ``J_y`` of eq. (60)).

        ``d score / d A[f, h] = x_f b_h ELU'(z_h)`` and ``d score / d b_h = ELU(z_h)``, with
        ``z = x A``.

        Parameters
        ----------
        Xc : array-like of shape (n_candidates, n_features)
        w : ndarray of shape (n_params(n_features),)

        Returns
        -------
        ndarray of shape (n_candidates, n_params(n_features))
        """
        Xc, Z, b = self._layers(Xc, w)
        grad_A = Xc[:, :, None] * (elu_derivative(Z) * b)[:, None, :]
        return np.hstack([grad_A.reshape(Xc.shape[0], -1), elu(Z)])
