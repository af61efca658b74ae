"""The penalty axis: the regulariser every solver shares (skglm's penalty pieces).

Every estimator minimises ``P(w) = r(w) + (1/n) sum_i H_i(w)`` with the elastic net of
scikit-learn's ``SGDClassifier``,

    r(w) = alpha * ((1 - l1_ratio)/2 ||w||^2 + l1_ratio ||w||_1),

``l1_ratio = 0`` being the plain L2 penalty of spec 002 eq. (1). Solvers also add proximal terms
``(kappa/2) ||w - z||^2`` to it (Catalyst, the prox-linear method), so the piece they receive is
the general form

    r(w) = (c/2) ||w||^2 + l1 ||w||_1 - <p, w>       (constants dropped),

with ``c > 0`` (the l2 part keeps the dual smooth and the certificates exact). A solver needs
four things of it (the :class:`Penalty` protocol, which adds AGM's model step and the
subgradient test), and branches on nothing else:

- ``value(w)``;
- ``prox(v, step) = argmin_x ||x - v||^2 / (2 step) + r(x)``, a soft-threshold and a shrink;
- the conjugate ``r*(u) = ||soft(u + p, l1)||^2 / (2c)``, which gives the dual objective
  ``D(a) = ell(a) - r*(-g(a))`` of any feasible dual point (``g`` the mean loss gradient,
  ``ell`` the mean expected loss): the duality gap ``P(w) - D(a)`` bounds ``P(w) - min P``;
- the primal-dual map ``w(u) = grad r*(u) = soft(u + p, l1) / c``, the primal point of a dual
  point (BCFW's weights, the AGM model step).

``soft(v, t) = sign(v) max(|v| - t, 0)`` is the soft-threshold; with ``l1 = 0`` every map is the
L2 one to the bit (``soft(v, 0)`` returns ``v`` itself).
"""
from abc import ABC, abstractmethod
from dataclasses import dataclass
from numbers import Real

import numpy as np

from . import _validation

#: the protocol's methods: ``value``, which every penalty writes, and the maps, which a penalty
#: may implement or leave out
METHODS = ("value", "prox", "conjugate", "dual_map", "model_min", "plus_prox",
           "least_norm_subgradient")


def soft_threshold(v, t):
    """Apply the soft-threshold ``sign(v) max(|v| - t, 0)`` entry by entry.

    The proximal map of the l1 norm, the elastic net's (Zou & Hastie 2005) sparse part.

    Returns ``v`` itself (not a copy) when ``t == 0``.

    Parameters
    ----------
    v : ndarray
        Values to threshold.
    t : float
        Threshold, ``t >= 0``.

    Returns
    -------
    ndarray
        ``sign(v) max(|v| - t, 0)``, of the shape of ``v``; ``v`` itself when ``t == 0``.
    """
    if t == 0.0:
        return v
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def check_l1_ratio(l1_ratio):
    """Return ``l1_ratio`` as a float in ``[0, 1)``, or raise a ValueError that says why.

    The elastic net of Zou & Hastie (2005).

    Parameters
    ----------
    l1_ratio : float
        Elastic net mixing parameter; a real number (not a bool) with
        ``0 <= l1_ratio < 1``.

    Returns
    -------
    float
        ``l1_ratio`` converted to a float.

    Raises
    ------
    ValueError
        If ``l1_ratio`` is not a real number in ``[0, 1)``.
    """
    if isinstance(l1_ratio, bool) or not isinstance(l1_ratio, Real) \
            or not 0.0 <= l1_ratio < 1.0:
        raise ValueError(f"l1_ratio must be a number in [0, 1), got {l1_ratio!r}: the l2 part "
                         f"(1 - l1_ratio) keeps the dual smooth and the duality gaps exact "
                         f"(use l1_ratio < 1, e.g. 0.99, for a nearly pure l1 penalty).")
    return float(l1_ratio)


class Penalty(_validation.Protocol, ABC):
    """The penalty protocol: a ``c``-strongly convex regulariser ``r`` (``c > 0``).

    The proximal and conjugate maps of convex analysis (Beck 2017, ch. 4-6) that the solvers
    of spec 000, 001 and 002 use.

    A solver asks a penalty for some of the methods below and nothing else (the module
    docstring says what each is for). Only :meth:`value` must be written: a penalty implements
    the maps it has, and every solver whose capabilities list those methods
    (``Capabilities.penalty_methods``: AGM's are ``value``, ``conjugate`` and ``model_min``)
    takes it. The solvers whose compiled steps are a known penalty's (BCFW, the stochastic
    solvers: the elastic net's soft-threshold) take the penalties whose :attr:`code` their
    kernels run, and refuse the others, with the declared message, before any work.
    ``tests/test_worked_examples.py`` checks the contract (the optimality of ``prox`` and
    ``model_min``, Fenchel-Young for ``conjugate`` and ``dual_map``) over every
    implementation, a group lasso among them.

    An estimator's ``penalty`` is the regulariser at ``alpha = 1``: a fit binds it to the
    packed examples (:meth:`bind`, where it needs their layout) and scales it by the
    estimator's ``alpha`` (:meth:`scaled`), so ``alpha=None``, the CV estimators and the
    paths walk its strength as they walk the elastic net's.

    Attributes
    ----------
    c : float
        The modulus of strong convexity: ``r(w) - (c/2) ||w||^2`` is convex.
    """

    #: the compiled penalty this one is, by the name the compiled solvers' kernels run it
    #: under (``Capabilities.penalty_codes``); None: none, only solvers that ask the methods
    #: take it
    code = None

    def methods(self):
        """Return the names of the protocol's maps this penalty implements.

        Returns
        -------
        frozenset of str
            The methods among :data:`METHODS` that its class writes (the others raise
            ``NotImplementedError``).
        """
        return frozenset(name for name in METHODS
                         if getattr(type(self), name) is not getattr(Penalty, name))

    def bind(self, problem):
        """Return this penalty for the coefficients of ``problem``.

        A fit calls it once on the packed examples, before :meth:`scaled`: a penalty that
        depends on the coefficients' layout (``[vec(W), theta]``, ``W`` of shape
        ``(problem.n_features, problem.n_codes)`` on the compiled structures, see
        ``problem.split_coef``) builds itself here. By default this penalty itself.

        Parameters
        ----------
        problem : Problem
            The packed training examples (``problem.n_params`` coefficients).

        Returns
        -------
        Penalty
            The penalty of these coefficients.
        """
        return self

    def scaled(self, alpha):
        """Return ``alpha`` times this penalty.

        The estimators' regulariser at their ``alpha``: an :class:`ElasticNet` scales to an
        elastic net (what the compiled solvers run), any other penalty to one whose maps
        (those it implements) are its own, scaled.

        Parameters
        ----------
        alpha : float
            Regularisation strength, ``alpha > 0``.

        Returns
        -------
        Penalty
            ``alpha`` times this penalty.
        """
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha!r}.")
        return self._times(float(alpha))

    def _times(self, alpha):
        return _Scaled(self, alpha)

    @abstractmethod
    def value(self, w):
        """Return the penalty value ``r(w)``.

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            Point at which to evaluate the penalty.

        Returns
        -------
        float
            ``r(w)``.
        """

    def prox(self, v, step):
        """Return the proximal operator ``argmin_x ||x - v||^2 / (2 step) + r(x)``.

        Parameters
        ----------
        v : ndarray of shape (n_params,)
            Point to which the proximal operator is applied.
        step : float
            Step size, ``step > 0``.

        Returns
        -------
        ndarray of shape (n_params,)
            The minimiser ``x``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no prox.")

    def conjugate(self, u):
        """Return the convex conjugate ``r*(u) = max_w <u, w> - r(w)``.

        Parameters
        ----------
        u : ndarray of shape (n_params,)
            Dual point at which to evaluate the conjugate.

        Returns
        -------
        float
            ``r*(u)``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no conjugate.")

    def dual_map(self, u):
        """Return the primal point of a dual point, ``grad r*(u) = argmax_w <u, w> - r(w)``.

        Parameters
        ----------
        u : ndarray of shape (n_params,)
            Dual point.

        Returns
        -------
        ndarray of shape (n_params,)
            ``w(u)``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no dual_map.")

    def model_min(self, q, c):
        """Return the minimiser of the model ``(c/2) ||x||^2 - <q, x> + r(x)``.

        AGM's model step (spec 001 Assumption 2).

        Parameters
        ----------
        q : ndarray of shape (n_params,)
            Linear coefficient of the model.
        c : float
            Curvature added to the penalty's own.

        Returns
        -------
        ndarray of shape (n_params,)
            The minimiser.
        """
        raise NotImplementedError(f"{type(self).__name__} has no model_min.")

    def plus_prox(self, kappa, center):
        """Return this penalty plus ``(kappa/2) ||w - center||^2`` (constant dropped).

        Parameters
        ----------
        kappa : float
            Weight of the proximal term.
        center : array-like of shape (n_params,)
            Centre of the proximal term.

        Returns
        -------
        Penalty
            A new penalty, ``kappa`` more strongly convex; this one is left unchanged.
        """
        raise NotImplementedError(f"{type(self).__name__} has no plus_prox.")

    def least_norm_subgradient(self, w, grad):
        """Return the least-norm element of ``grad + d r(w)``.

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            Current point.
        grad : ndarray of shape (n_params,)
            A (sub)gradient of the loss part at ``w``.

        Returns
        -------
        ndarray of shape (n_params,)
            The least-norm subgradient of ``loss + r`` at ``w``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no least_norm_subgradient.")

    def subgradient_distance(self, w, grad):
        """Return the largest violation of the optimality condition of ``loss + r``.

        The largest entry of :meth:`least_norm_subgradient`: 0 at the minimiser of
        ``loss + r`` when the loss is differentiable there.

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            Current point.
        grad : ndarray of shape (n_params,)
            A (sub)gradient of the loss part at ``w``.

        Returns
        -------
        float
            The largest absolute entry of :meth:`least_norm_subgradient` (0.0 when ``w`` is
            empty).
        """
        return float(np.max(np.abs(self.least_norm_subgradient(w, grad)), initial=0.0))


@dataclass(frozen=True)
class ElasticNet(Penalty):
    """``r(w) = (c/2) ||w||^2 + l1 ||w||_1 - <p, w>`` (see the module docstring).

    The elastic net of Zou & Hastie (2005), in the convention of scikit-learn's SGDClassifier.

    Build it with :meth:`from_alpha`; solvers add proximal terms with :meth:`plus_prox`.

    Parameters
    ----------
    c : float
        Modulus of strong convexity, ``alpha (1 - l1_ratio)`` plus any proximal weights.
    l1 : float, default=0.0
        Weight of ``||w||_1``, ``alpha l1_ratio``.
    p : ndarray of shape (n_params,), default=None
        Linear term of the proximal centres (None: 0).

    Attributes
    ----------
    c : float
        Modulus of strong convexity, ``alpha (1 - l1_ratio)`` plus any proximal weights.
    l1 : float
        Weight of ``||w||_1``, ``alpha l1_ratio``.
    p : ndarray or None
        Linear term of the proximal centres (None: 0).
    """

    c: float
    l1: float = 0.0
    p: np.ndarray = None

    @classmethod
    def from_alpha(cls, alpha, l1_ratio=0.0):
        """Build the penalty ``alpha ((1 - l1_ratio)/2 ||w||^2 + l1_ratio ||w||_1)``.

        Parameters
        ----------
        alpha : float
            Regularisation strength, ``alpha > 0``.
        l1_ratio : float, default=0.0
            Elastic net mixing parameter in ``[0, 1)`` (see :func:`check_l1_ratio`).

        Returns
        -------
        ElasticNet
            The penalty with ``c = alpha (1 - l1_ratio)``, ``l1 = alpha l1_ratio`` and no
            linear term.

        Raises
        ------
        ValueError
            If ``alpha`` is not positive or ``l1_ratio`` is not in ``[0, 1)``.
        """
        l1_ratio = check_l1_ratio(l1_ratio)
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha!r}.")
        return cls(float(alpha) * (1.0 - l1_ratio), float(alpha) * l1_ratio)

    @property
    def code(self):
        """``"l2"`` (no l1 part, no linear term) or ``"elastic_net"``: what the compiled
        solvers' kernels run."""
        return "l2" if self.l1 == 0 and self.p is None else "elastic_net"

    def _times(self, alpha):  # an elastic net again, for the compiled solvers
        return ElasticNet(alpha * self.c, alpha * self.l1, None if self.p is None
                          else alpha * self.p)

    def plus_prox(self, kappa, center):  # c + kappa, p + kappa center
        p = kappa * np.asarray(center, dtype=float)
        return ElasticNet(self.c + kappa, self.l1, p if self.p is None else self.p + p)

    def linear(self, like):
        """Return the linear term ``p`` (zeros shaped like ``like`` when there is none).

        Parameters
        ----------
        like : ndarray of shape (n_params,)
            Array whose shape and dtype the zeros take when ``p`` is None.

        Returns
        -------
        ndarray of shape (n_params,)
            ``p``, or ``np.zeros_like(like)`` when ``p`` is None.
        """
        return np.zeros_like(like) if self.p is None else self.p

    def value(self, w):
        value = 0.5 * self.c * w @ w - (0.0 if self.p is None else self.p @ w)
        return value + self.l1 * np.abs(w).sum() if self.l1 else value

    def prox(self, v, step):  # soft(v + step p, step l1) / (1 + step c)
        shifted = v if self.p is None else v + step * self.p
        return soft_threshold(shifted, step * self.l1) / (1.0 + step * self.c)

    def conjugate(self, u):
        s = soft_threshold(u if self.p is None else u + self.p, self.l1)
        return s @ s / (2.0 * self.c)

    def dual_map(self, u):
        return soft_threshold(u if self.p is None else u + self.p, self.l1) / self.c

    def model_min(self, q, c):  # the dual map with c more curvature
        return soft_threshold(q if self.p is None else q + self.p, self.l1) / (c + self.c)

    def least_norm_subgradient(self, w, grad):  # of grad + c w - p + l1 d||w||_1
        g = grad + self.c * w - self.linear(w)
        if not self.l1 > 0:
            return g
        return np.where(w != 0, g + self.l1 * np.sign(w), soft_threshold(g, self.l1))


@dataclass(frozen=True)
class _Scaled(Penalty):
    """``alpha r(w)``, ``r`` any :class:`Penalty`: its maps through ``r``'s.

    The maps of a scaled function (Beck 2017, ch. 4 and 6): ``prox`` at ``step`` is ``r``'s at
    ``alpha step``; ``conjugate(u) = alpha r*(u / alpha)``,
    ``dual_map(u) = grad r*(u / alpha)``; ``model_min(q, c)`` is ``r``'s at ``(q / alpha, c /
    alpha)``; ``plus_prox`` scales ``r``'s by ``kappa / alpha``. Only the maps ``r`` implements
    are implemented. ``base`` is the penalty ``r``, ``alpha > 0`` its weight."""

    base: Penalty
    alpha: float

    def __repr__(self):
        return f"{self.alpha!r} * {self.base!r}"

    @property
    def c(self):
        """The modulus of strong convexity, ``alpha`` times ``base``'s."""
        return self.alpha * self.base.c

    def methods(self):
        return self.base.methods()

    def value(self, w):
        return self.alpha * self.base.value(w)

    def prox(self, v, step):
        return self.base.prox(v, self.alpha * step)

    def conjugate(self, u):
        return self.alpha * self.base.conjugate(u / self.alpha)

    def dual_map(self, u):
        return self.base.dual_map(u / self.alpha)

    def model_min(self, q, c):
        return self.base.model_min(q / self.alpha, c / self.alpha)

    def plus_prox(self, kappa, center):
        return _Scaled(self.base.plus_prox(kappa / self.alpha, center), self.alpha)

    def least_norm_subgradient(self, w, grad):
        return self.alpha * self.base.least_norm_subgradient(w, grad / self.alpha)

    def _times(self, alpha):
        return self.base.scaled(self.alpha * alpha)


def as_penalty(penalty):
    """Convert a solver's penalty argument to a :class:`Penalty`.

    A penalty as it is, a number ``alpha`` as the L2 penalty ``alpha/2 ||w||^2`` (the elastic
    net of Zou & Hastie (2005) with ``l1_ratio=0``).

    Parameters
    ----------
    penalty : Penalty or float
        A penalty, or the regularisation strength ``alpha > 0`` of the L2 penalty.

    Returns
    -------
    Penalty
        ``penalty`` itself if it is a :class:`Penalty`, else ``ElasticNet.from_alpha(penalty)``.
    """
    return penalty if isinstance(penalty, Penalty) else ElasticNet.from_alpha(penalty)
