"""Loopy binary pairwise graphs: ``BinaryGraphCRF``, the binary graph structure whose problem
is a ``GraphProblem`` (its oracles run per example, from Python).

The max and top-K oracles of ``BinaryGraphCRF`` are graph cuts and BMMF
(``marginals._graphcut``); the exp oracle (entropy smoothing) is #P-hard on these graphs and is
not offered (spec 000 §2.2).
"""
import numpy as np

from .._kernels.smoothed import NONE, TOP_K
from ..marginals._graphcut import (_check_count, _check_edges, _score, bmmf_topk, graphcut_map,
                                   graphcut_max_marginals, project_submodular)
from ..smoothing import topk_smooth_max
from .graph_structure import GraphStructure

__all__ = ["BinaryGraphCRF"]


def _check_matrix(value, name, i, min_rows=1, min_cols=0):
    """A finite 2-D float64 array of example ``i`` with at least ``min_rows`` rows and
    ``min_cols`` columns, or a ValueError naming ``name``."""
    if np.iscomplexobj(value):  # float64 would drop the imaginary parts with a warning only
        raise ValueError(f"Example {i}: complex data not supported in {name} (dtype "
                         f"{np.asarray(value).dtype}).")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 2 or arr.shape[0] < min_rows or arr.shape[1] < min_cols:
        raise ValueError(f"Example {i}: {name} must be a 2-D numeric array with at least "
                         f"{min_rows} row(s) and {min_cols} column(s), got shape "
                         f"{np.shape(value)}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Example {i}: {name} contains NaN or infinity.")
    return arr



class BinaryGraphCRF(GraphStructure):
    """Binary labelling of the nodes of a (loopy) graph with submodular pairwise weights.

    An example is ``x = (node_features, edges)`` with ``node_features`` a dense
    ``(p, n_features)`` array and ``edges`` an ``(E, 2)`` integer array (any graph: grids,
    cycles; each example has its own); a labeling ``y`` is a 0/1 array of length ``p``. The
    joint feature follows the package's shape ``phi(x, y) = vec(X^T S(y)) (+) q(y)``:

    - ``vec(X^T onehot(y))`` (``n_features x 2``, row-major),
    - the 2x2 table of pairwise label counts ``q(y)[a, b] = #{(u, v) in edges : y_u = a,
      y_v = b}`` (4 values),

    so ``coef = [vec(W), theta]`` with ``W`` of shape ``(n_features, 2)`` and ``theta`` a
    shared 2x2 table (row-major). The loss is the Hamming loss normalised by ``p``.

    Oracles (spec 000 §2.4, Table 2): the max oracle and decoding are one graph cut (Algo. 11,
    Prop. 14(A)); the top-K oracle is BMMF (Algo. 10) on graph-cut max-marginals, ``O(pK)``
    cuts. They need ``theta`` submodular (``theta_00 + theta_11 >= theta_01 + theta_10``): keep
    it so with :meth:`project_coef`. Entropy smoothing is not available (#P-hard, spec §2.2).

    Attributes
    ----------
    classes_ : ndarray
        ``array([0, 1])``, set by :meth:`fit`.
    n_features_in_ : int
        Number of node features, set by :meth:`fit`; examples are checked against it after.
    """

    loss_name = "normalised Hamming loss"
    #: the graph cuts need the pairwise table submodular (``project_coef``)
    constrained_coef = True

    def examples(self, X, Y=None, fit=False):
        """Validate examples (and labelings, when given); learn the number of node features
        with ``fit``.

        Parameters
        ----------
        X : list of (node_features, edges) pairs
            Examples: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array (each example has its own graph).
        Y : list of 0/1 arrays or None, default=None
            Labelings, one label per node, or None for unlabelled examples.
        fit : bool, default=False
            Whether to learn ``n_features_in_`` and ``classes_``.

        Returns
        -------
        list of tuple
            ``(features, edges, y or None)`` of every example.
        """
        if not fit:
            self._check_fitted()
        n_features = None if fit else self.n_features_in_
        if not isinstance(X, (list, tuple)) or len(X) == 0:
            raise ValueError("X must be a non-empty list of (node_features, edges) pairs.")
        if Y is not None and len(Y) != len(X):
            raise ValueError(f"X and Y have different numbers of examples: {len(X)} and "
                             f"{len(Y)}.")
        examples = []
        for i, x in enumerate(X):
            features, edges = self._check_x(x, n_features, i)
            y = None if Y is None else self._check_y(Y[i], features.shape[0], i)
            examples.append((features, edges, y))
            n_features = features.shape[1]
        if fit:
            self.n_features_in_ = n_features
            self.classes_ = np.array([0, 1])
        return examples

    @property
    def n_params(self):
        """Length of ``coef``: ``2 n_features + 4``."""
        self._check_fitted()
        return 2 * self.n_features_in_ + 4

    # -- validation ------------------------------------------------------------------------

    @staticmethod
    def _check_x(x, n_features, i=0):
        """``(node_features, edges)`` of example ``i``, validated (``n_features``: expected
        number of node features, or None)."""
        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise ValueError(f"Example {i} must be a pair (node_features, edges).")
        features = _check_matrix(x[0], "node_features", i)
        if n_features is not None and features.shape[1] != n_features:
            raise ValueError(f"Example {i} has {features.shape[1]} node features, expected "
                             f"{n_features}.")
        try:
            edges = _check_edges(x[1], features.shape[0])
        except ValueError as exc:
            raise ValueError(f"Example {i}: {exc}") from None
        return features, edges

    @staticmethod
    def _check_y(y, p=None, i=0):
        """A 0/1 labeling as int64, of length ``p`` when given."""
        y = np.asarray(y)
        if y.ndim != 1 or (p is not None and y.shape[0] != p):
            raise ValueError(f"Labeling of example {i} must be 1-D with one label per node"
                             f"{'' if p is None else f' ({p})'}, got shape {y.shape}.")
        if not np.all((y == 0) | (y == 1)):
            raise ValueError(f"Labeling of example {i} has values other than 0 and 1: "
                             f"{np.unique(y[(y != 0) & (y != 1)])[:5]}.")
        return y.astype(np.int64)

    def _example(self, x, y=None):
        """Validated features, edges and (optional) labeling of one example."""
        features, edges = self._check_x(x, getattr(self, "n_features_in_", None))
        return features, edges, None if y is None else self._check_y(y, features.shape[0])

    # -- joint feature, loss, potentials ---------------------------------------------------

    @staticmethod
    def _phi_of(features, edges, y):
        emission = np.stack([features[y == 0].sum(axis=0), features[y == 1].sum(axis=0)],
                            axis=1)
        counts = np.bincount(2 * y[edges[:, 0]] + y[edges[:, 1]], minlength=4)
        return np.concatenate([emission.ravel(), counts.astype(np.float64)])

    def joint_feature(self, x, y):
        """Return the dense ``phi(x, y)`` of one example (``coef @ phi`` is its score).

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        y : array-like of shape (p,)
            A 0/1 labeling of its nodes.

        Returns
        -------
        ndarray of shape (2 n_features + 4,)
            ``phi(x, y)``.
        """
        return self._phi_of(*self._example(x, y))

    def loss(self, y_true, y):
        """Return the normalised Hamming loss ``mean(y_true != y)``.

        Parameters
        ----------
        y_true : array-like of shape (p,)
            The true 0/1 labeling.
        y : array-like of shape (p,)
            Another 0/1 labeling.

        Returns
        -------
        float
            The fraction of nodes whose labels differ.
        """
        y_true = self._check_y(y_true)
        return float(np.mean(y_true != self._check_y(y, y_true.shape[0])))

    def _potentials(self, x, y_true, coef):
        """Unary scores (loss-augmented when ``y_true`` is given), theta, the gold score and the
        validated example ``(features, edges, y_true)``."""
        example = features, _, _ = self._example(x, y_true)
        n_features = features.shape[1]
        coef = np.asarray(coef, dtype=np.float64)
        if coef.shape != (2 * n_features + 4,):
            raise ValueError(f"coef must have shape ({2 * n_features + 4},) = 2 * n_features "
                             f"+ 4, got {coef.shape}.")
        return self._scores(example, coef)

    @staticmethod
    def _scores(example, coef):
        """:meth:`_potentials` of a validated example and ``coef``."""
        features, edges, y = example
        n_features = features.shape[1]
        unary = features @ coef[:2 * n_features].reshape(n_features, 2)
        theta = coef[2 * n_features:].reshape(2, 2)
        if y is None:
            return unary, theta, 0.0, example
        p = features.shape[0]
        gold = _score(unary, edges, np.broadcast_to(theta, (edges.shape[0], 2, 2)), y)
        # the normalised Hamming loss is a unary term: 1/p on every label but the true one
        augmented = unary + 1.0 / p
        augmented[np.arange(p), y] -= 1.0 / p
        return augmented, theta, gold, example

    @staticmethod
    def _bmmf(unary, edges, theta, K):
        return bmmf_topk(lambda allowed: graphcut_max_marginals(unary, edges, theta, allowed,
                                                                return_map=True),
                         unary.shape[0], K)

    # -- oracles ---------------------------------------------------------------------------

    def decode(self, x, coef):
        """Decode one example, ``argmax_y <coef, phi(x, y)>``, with one graph cut.

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.

        Returns
        -------
        ndarray of int64, shape (p,)
            The best 0/1 labeling.
        """
        unary, theta, _, (_, edges, _) = self._potentials(x, None, coef)
        return graphcut_map(unary, edges, theta)[0]

    def max_oracle(self, x, y_true, coef):
        """Run loss-augmented decoding ``(y*, H(y*))`` with one graph cut.

        With ``H(y) = L(y_true, y) + <coef, phi(x, y) - phi(x, y_true)>`` (spec 002 eq. (2)),
        ``y*`` maximises ``H``.

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        y_true : array-like of shape (p,)
            Its true 0/1 labeling.
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.

        Returns
        -------
        y_star : ndarray of int64, shape (p,)
            The maximiser ``y*``.
        value : float
            ``H(y*)``.
        """
        unary, theta, gold, (_, edges, _) = self._potentials(x, y_true, coef)
        y_star, score = graphcut_map(unary, edges, theta)
        return y_star, score - gold

    def topk_oracle(self, x, y_true, coef, K):
        """Return the ``K`` largest values of ``H(y)`` with their distinct labelings.

        BMMF on graph-cut max-marginals, spec 000 Algo. 10-11, ``O(pK)`` cuts.

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        y_true : array-like of shape (p,)
            Its true 0/1 labeling.
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.
        K : int
            Number of labelings wanted, ``>= 1``.

        Returns
        -------
        labelings : list of length K
            0/1 arrays by non-increasing ``H``; ``None`` past the ``2**p`` labelings that exist.
        values : ndarray of shape (K,)
            ``H`` of each labeling, ``-inf`` padded.
        """
        K = _check_count(K, "K", 1)
        unary, theta, gold, (_, edges, _) = self._potentials(x, y_true, coef)
        labelings, scores = self._bmmf(unary, edges, theta, K)
        return [y if y[0] >= 0 else None for y in labelings], scores - gold

    def smoothed_oracle(self, x, y_true, coef, smoothing="l2", mu=1.0, top_k=5):
        """Smoothed structured hinge loss of one example and its gradient in ``coef``.

        - ``smoothing="l2"``: the top-K strategy (eq. (11), Algo. 6): with ``z`` the top-K
          values of ``H``, the value is the exact ``h_{mu,K}(z) = <z, u> - (mu/2)(||u||^2 - 1)``,
          ``u = proj_Delta(z / mu)`` (``-inf`` padding gets weight 0), and the gradient
          ``sum_k u_k phi(x, y_k) - phi(x, y_true)``.
        - ``smoothing=None``: the max oracle, ``(H(y*), phi(x, y*) - phi(x, y_true))``.
        - ``smoothing="entropy"`` raises: the exp oracle is #P-hard on loopy graphs (spec
          §2.2, pitfall 11).

        Parameters
        ----------
        x : tuple of (node_features, edges)
            One example: ``node_features`` a ``(p, n_features)`` array, ``edges`` an ``(E, 2)``
            integer array.
        y_true : array-like of shape (p,)
            Its true 0/1 labeling.
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector ``[vec(W), theta]``.
        smoothing : {"l2", None}, default="l2"
            ``"l2"``: the top-K strategy; ``None``: the max oracle. ``"entropy"`` raises.
        mu : float, default=1.0
            Smoothing parameter of the top-K strategy, ``mu >= 0``.
        top_k : int, default=5
            Number ``K >= 1`` of best labelings smoothed over; ignored with
            ``smoothing=None``.

        Returns
        -------
        value : float
            The smoothed loss.
        gradient : ndarray of shape (2 n_features + 4,)
            Its gradient in ``coef``.

        Raises
        ------
        ValueError
            If ``smoothing`` is ``"entropy"`` or unknown, or ``top_k`` is not an integer
            ``>= 1`` with ``smoothing="l2"``.
        """
        if smoothing == "entropy":
            raise ValueError("Entropy smoothing needs the log-partition function, which is "
                             "#P-hard on loopy graphs; use smoothing='l2' (top-K) or None.")
        if smoothing not in ("l2", None):
            raise ValueError(f"smoothing must be 'l2' or None, got {smoothing!r}.")
        top_k = None if smoothing is None else _check_count(top_k, "top_k", 1)
        value, gradient, _ = self._smoothed_potentials(self._potentials(x, y_true, coef), top_k,
                                                       mu)
        return value, gradient

    @classmethod
    def _smoothed_potentials(cls, potentials, top_k, mu):
        """Smoothed loss, its gradient and the expected loss ``E_u L(y_true, y)`` of one example
        from :meth:`_potentials`; ``top_k=None`` is the hard max."""
        unary, theta, gold, (features, edges, y) = potentials
        if top_k is None:
            y_star, score = graphcut_map(unary, edges, theta)
            value, labelings, weights = score - gold, [y_star], np.ones(1)
        else:
            labelings, scores = cls._bmmf(unary, edges, theta, top_k)
            value, weights, _ = topk_smooth_max(scores - gold, mu)
        gradient = -cls._phi_of(features, edges, y)
        expected_loss = 0.0
        for k in np.flatnonzero(weights > 0.0):  # skips the -inf padding
            gradient += weights[k] * cls._phi_of(features, edges, labelings[k])
            expected_loss += weights[k] * np.mean(labelings[k] != y)
        return float(value), gradient, expected_loss

    # -- GraphStructure's hooks -------------------------------------------------

    def _decode(self, example, coef, augment):
        features, edges, y = example
        unary, theta, gold, _ = self._scores((features, edges, y if augment else None), coef)
        y_best, value = graphcut_map(unary, edges, theta)
        return y_best, value, gold, ("graphcut", True)

    def label_oracle(self, example, unary, pairwise, augment):
        # the graph cut of _decode at the label-space scores: exact, no bound
        features, edges, y = example
        if augment:
            unary = unary + 1.0 / features.shape[0]
            unary[np.arange(features.shape[0]), y] -= 1.0 / features.shape[0]
        return (graphcut_map(unary, edges, pairwise.reshape(2, 2))[0], np.nan,
                ("graphcut", True))

    @staticmethod
    def labeling(example):
        return example[2]

    @staticmethod
    def label_graph(example):  # each edge counts its label pair once
        features, edges, _ = example
        return features, edges, np.ones((edges.shape[0], 1)), 1.0 / features.shape[0]

    def _smoothed(self, example, coef, smoothing):
        top_k = None if smoothing.code == NONE else smoothing.K
        return (*self._smoothed_potentials(self._scores(example, coef), top_k, smoothing.mu),
                ("graphcut", True))

    @staticmethod
    def _check_smoothing(code):
        if code not in (NONE, TOP_K):
            raise ValueError("Entropy smoothing and l2 smoothing over all outputs are not "
                             "available for BinaryGraphCRF (the log-partition function is "
                             "#P-hard on loopy graphs, the outputs are not enumerated): use "
                             "smoothing='l2' with top_k, or GraphCRF, whose entropy smoothing "
                             "is TRW's bound.")

    def _phi(self, example, y):
        return self._phi_of(example[0], example[1], np.asarray(y))

    @staticmethod
    def _loss(example, y):
        return float(np.mean(np.asarray(y) != example[2]))

    @staticmethod
    def _largest_loss(example):
        return 1.0  # every node wrong

    def pairwise_bounds(self):
        """The box of ``coef_bounds="positive_pairwise"``: ``theta_00, theta_11 >= 0 >=
        theta_01, theta_10``, inside the submodular cone (graph cuts stay exact).

        Returns
        -------
        lower : ndarray of shape (n_params,)
            Lower bounds (``-inf``: none).
        upper : ndarray of shape (n_params,)
            Upper bounds (``inf``: none).
        """
        lower = np.full(self.n_params, -np.inf)
        upper = np.full(self.n_params, np.inf)
        lower[-4:] = [0.0, -np.inf, -np.inf, 0.0]
        upper[-4:] = [np.inf, 0.0, 0.0, np.inf]
        return lower, upper

    def project_coef(self, coef):
        """Project the pairwise table of ``coef`` onto the submodular cone (a copy).

        Parameters
        ----------
        coef : array-like of shape (2 n_features + 4,)
            Parameter vector; its last 4 entries are the pairwise table ``theta``.

        Returns
        -------
        ndarray of shape (2 n_features + 4,)
            A float64 copy of ``coef`` whose pairwise table is submodular.
        """
        coef = np.array(coef, dtype=np.float64)
        coef[-4:] = project_submodular(coef[-4:])
        return coef
