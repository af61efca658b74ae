"""Estimator-style front ends: ``TRWBarrierFW`` (marginal polytope) and ``TRWLocalPolytope``
(the TRBP baseline). ``fit(mrf)`` takes a ``PairwiseMRF``; parameters are stored untouched and
validated in ``fit``."""
import numbers

from sklearn.base import BaseEstimator

from ._mrf import PairwiseMRF
from ._oracles import check_map_oracle
from ._solvers import _DELTA_MODES, trw_barrier_fw, trw_local_polytope

__all__ = ["TRWBarrierFW", "TRWLocalPolytope"]


def _check_mrf(mrf):
    if not isinstance(mrf, PairwiseMRF):
        raise ValueError(f"fit expects a PairwiseMRF, got {type(mrf).__name__}.")
    return mrf


def _check_int(value, name, minimum):
    if not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}.")


class _MarginalsMixin:
    def _set_marginals(self, mrf, mu):
        self.marginals_ = mu
        self.node_marginals_ = mrf.node_blocks(mu)
        self.edge_marginals_ = mrf.edge_blocks(mu)
        self.n_nodes_ = mrf.n_nodes


class TRWBarrierFW(_MarginalsMixin, BaseEstimator):
    """Marginals and a certified log-partition upper bound of a pairwise MRF by TRW-Barrier-FW
    (Krishnan, Lacoste-Julien & Sontag 2015; spec 004 Algorithm 2).

    The TRW objective ``<theta, mu> + H(mu; rho)`` (eq. (2)) is maximised over the marginal
    polytope with Frank-Wolfe and MAP calls only, inside adaptively contracted polytopes
    ``M_delta`` (Algorithm 1), with MFW correction over the visited vertices (Algorithms 3-5),
    and the edge appearance probabilities rho are tightened by an outer Frank-Wolfe loop over
    the spanning-tree polytope (§2.9).

    Parameters
    ----------
    map_oracle : str or callable, default="auto"
        A MAP oracle (protocol in ``sklearn_ssvm.marginals._oracles``) or a name: ``"auto"``
        (exact: tree max-product on forests, brute force up to 2**16 assignments, else integer
        programming with HiGHS), ``"brute_force"``, ``"tree"``, ``"graphcut"``, ``"milp"``,
        ``"icm"`` (approximate: no certified bound).
    n_rho_iter : int, default=10
        Updates of rho (the inner problem is solved ``n_rho_iter + 1`` times).
    tol : float, default=0.5
        Inner tolerance on the FW gap over the full marginal polytope.
    rho0 : {"matrix_tree", "uniform"} or array, default="matrix_tree"
        Initial rho: the paper's weighted matrix-tree initialisation, the uniform
        distribution over spanning trees, or an array of shape ``(n_edges,)``.
    delta_init : float, default=1e-3
        Initial contraction, ``<= 1/4``.
    delta_mode : {"adaptive", "fixed", "none"}, default="adaptive"
        Algorithm 1, a fixed contraction, or plain FW over ``M`` (``delta = 0``).
    away_steps : bool, default=False
        Away steps in the outer FW over M (MFW).
    correction : bool, default=True
        MFW correction over the visited vertices (Algorithm 5), inside the loop and after
        each rho update.
    correction_freq : int, default=1
        FW iterations between two corrections.
    correction_tol : float, default=0.5
        Tolerance of the correction (a tenth of it once the FW gap is below 1).
    correction_max_iter : int, default=100
        Largest number of MFW steps per correction.
    local_search : bool, default=False
        ICM local search after each step (Algorithm 6).
    max_iter : int, default=1000
        FW iterations per rho.
    max_map_calls : int, default=10000
        Budget of MAP calls over the whole fit.

    Attributes
    ----------
    marginals_ : ndarray of shape (dim,)
        Final iterate in the flat layout (a point of the marginal polytope).
    node_marginals_ : ndarray of shape (n_nodes, n_states) (a list if the sizes differ)
    edge_marginals_ : ndarray of shape (n_edges, n_states, n_states) (or a list)
    log_partition_upper_ : float or None
        Smallest certified ``TRW(x) + g(x)`` over the run (eq. (24); eq. (25) with an oracle
        upper bound); None when no MAP call was exact.
    trw_objective_ : float
        TRW at the final iterate and rho (not a bound on its own).
    gap_ : float
        Last FW gap over the full polytope.
    rho_ : ndarray of shape (n_edges,)
    delta_ : float
    n_map_calls_ : int
    history_ : list of dict
        One record per MAP call: rho iteration, MAP calls, gap, delta, TRW, bound, time.
    bounds_ : list
        Certified bound (or None) per rho iteration.
    """

    def __init__(self, map_oracle="auto", n_rho_iter=10, tol=0.5, rho0="matrix_tree",
                 delta_init=1e-3, delta_mode="adaptive", away_steps=False, correction=True,
                 correction_freq=1, correction_tol=0.5, correction_max_iter=100,
                 local_search=False, max_iter=1000, max_map_calls=10000):
        self.map_oracle = map_oracle
        self.n_rho_iter = n_rho_iter
        self.tol = tol
        self.rho0 = rho0
        self.delta_init = delta_init
        self.delta_mode = delta_mode
        self.away_steps = away_steps
        self.correction = correction
        self.correction_freq = correction_freq
        self.correction_tol = correction_tol
        self.correction_max_iter = correction_max_iter
        self.local_search = local_search
        self.max_iter = max_iter
        self.max_map_calls = max_map_calls

    def fit(self, mrf, y=None):
        """Run TRW-Barrier-FW on ``mrf`` (a PairwiseMRF).

        Parameters
        ----------
        mrf : PairwiseMRF
            The model.
        y : None
            Ignored; present for API consistency.

        Returns
        -------
        TRWBarrierFW
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``mrf`` is not a ``PairwiseMRF`` or a parameter is invalid.
        """
        mrf = _check_mrf(mrf)
        oracle = check_map_oracle(self.map_oracle)
        _check_int(self.n_rho_iter, "n_rho_iter", 0)
        _check_int(self.max_iter, "max_iter", 1)
        _check_int(self.max_map_calls, "max_map_calls", 1)
        _check_int(self.correction_max_iter, "correction_max_iter", 0)
        if self.delta_mode not in _DELTA_MODES:
            raise ValueError(f"delta_mode must be one of {_DELTA_MODES}, got "
                             f"{self.delta_mode!r}.")
        if not self.correction_tol > 0:
            raise ValueError(f"correction_tol must be > 0, got {self.correction_tol!r}.")
        res = trw_barrier_fw(mrf, oracle, rho0=self.rho0, n_rho_iter=self.n_rho_iter,
                             tol=self.tol, delta_init=self.delta_init,
                             delta_mode=self.delta_mode, away_steps=bool(self.away_steps),
                             correction=bool(self.correction),
                             correction_freq=self.correction_freq,
                             correction_tol=self.correction_tol,
                             correction_max_iter=self.correction_max_iter,
                             local_search=bool(self.local_search), max_iter=self.max_iter,
                             max_map_calls=self.max_map_calls)
        state = res["state"]
        self._set_marginals(mrf, state.x.copy())
        self.log_partition_upper_ = res["log_partition_upper"]
        self.trw_objective_ = res["trw"]
        self.gap_ = res["gap"]
        self.rho_ = res["rho"]
        self.delta_ = state.delta
        self.n_map_calls_ = state.n_map_calls
        self.history_ = state.history
        self.bounds_ = res["bounds"]
        return self


class TRWLocalPolytope(_MarginalsMixin, BaseEstimator):
    """TRW over the local polytope by damped tree-reweighted belief propagation (the baseline the
    paper compares against; spec 004 §3.3), with optional rho optimisation.

    Parameters
    ----------
    n_rho_iter : int, default=0
        Updates of rho by Frank-Wolfe over the spanning-tree polytope (TRBP runs
        ``n_rho_iter + 1`` times).
    rho0 : {"matrix_tree", "uniform"} or array, default="matrix_tree"
        Initial rho: the paper's weighted matrix-tree initialisation, the uniform
        distribution over spanning trees, or an array of shape ``(n_edges,)``.
    damping : float, default=0.5
        Weight of the old log message.
    tol : float, default=1e-8
        Largest change of a log message at convergence.
    max_iter : int, default=2000
        Sweeps per rho.

    Attributes
    ----------
    marginals_, node_marginals_, edge_marginals_
        Pseudo-marginals (locally, not necessarily globally, consistent).
    trw_objective_ : float
        TRW at the pseudo-marginals; an upper bound on log Z at a fixed point.
    converged_ : bool
    rho_ : ndarray
    n_iter_ : int
    """

    def __init__(self, n_rho_iter=0, rho0="matrix_tree", damping=0.5, tol=1e-8, max_iter=2000):
        self.n_rho_iter = n_rho_iter
        self.rho0 = rho0
        self.damping = damping
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, mrf, y=None):
        """Run TRBP on ``mrf`` (a PairwiseMRF).

        Parameters
        ----------
        mrf : PairwiseMRF
            The model.
        y : None
            Ignored; present for API consistency.

        Returns
        -------
        TRWLocalPolytope
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``mrf`` is not a ``PairwiseMRF`` or a parameter is invalid.
        """
        mrf = _check_mrf(mrf)
        _check_int(self.n_rho_iter, "n_rho_iter", 0)
        _check_int(self.max_iter, "max_iter", 1)
        res = trw_local_polytope(mrf, rho0=self.rho0, n_rho_iter=self.n_rho_iter,
                                 damping=self.damping, tol=self.tol, max_iter=self.max_iter)
        self._set_marginals(mrf, res["marginals"])
        self.trw_objective_ = res["trw"]
        self.converged_ = res["converged"]
        self.rho_ = res["rho"]
        self.n_iter_ = res["n_iter"]
        return self
