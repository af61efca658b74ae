"""Bundle methods for regularised risk minimisation: qp-bmrm and ls-bmrm (spec 003 §2.1-2.2).

Both minimise ``J(w) = alpha/2 ||w||^2 + R_emp(w)`` by replacing the empirical risk with its
cutting-plane model ``R_t^cp(w) = max_{i <= t} <a_i, w> + b_i`` (eq. (3)), one cut per call of
the risk's subgradient oracle. The dual value of the model problem is a lower bound on
``min J``, so the gap ``eps_t = min_{t' <= t} J(w_t') - J_t(w_t)`` (eq. (4)) certifies the best
iterate. The solvers work with any oracle ``w -> (R_emp(w), a, b)``; :func:`bmrm` builds it from
a structure's loss-augmented max oracle, :func:`bmrm_binary` from the binary hinge, and
:func:`pieces_oracle` from explicit affine pieces (the lower-bound instance of spec 003 §2.3).
"""
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from threadpoolctl import threadpool_limits

from .._kernels.bundle import simplex_qp
from .._kernels.reduce import combine_rows, dot_rows
from .._kernels.smoothed import NONE
from .._kernels.threads import run_chunks
from ..penalties import as_penalty
from . import capabilities
from .base import Solver
from ._common import Clock, ProgressBar, kernel_threads, stop_requested
from .result import SolverResult, history_record
from .smooth import Smoothing
from .sums import ThreadSums, open_sums

VARIANTS = ("qp", "ls")

#: cuts per block of qp-bmrm's storage (CoNLL-2000: 16 x 18.4 MB)
CUT_ROWS = 16


@dataclass(kw_only=True)
class BMRMResult(SolverResult):
    """A bundle method's :class:`~sklearn_ssvm.solvers.result.SolverResult`.

    ``coef`` is the best iterate found, ``argmin_t J(w_t)``, the one the gap certifies;
    ``objective`` is ``J(coef)``, ``dual_objective`` the last model's value ``J_t(w_t) <= min J``
    and ``duality_gap`` their difference; ``n_iter`` and ``n_oracle_calls`` count the cuts (one
    risk evaluation each). History records: ``objective`` is ``J(w_{t-1})``, where the cut was
    taken, ``dual_objective`` ``J_t(w_t)``, ``gap`` ``eps_t``. ``cuts`` (list of ndarray): the
    bundle's rows ``a_i`` in blocks of at most :data:`CUT_ROWS` rows each, as the model kept them
    (``np.vstack(cuts)`` is the matrix; joining them would copy every cut at the end of a fit);
    ls-bmrm keeps its aggregated cut only. ``offsets`` (ndarray): the offsets ``b_i``. Every cut
    lower-bounds ``R_emp`` whatever ``alpha``, so a later run on the same data can start from the
    bundle."""

    cuts: list
    offsets: np.ndarray


class _QPModel:
    """qp-bmrm's model: every cut, their Gram matrix, and the simplex QP (10) over them.

    The cuts are kept in blocks of :data:`CUT_ROWS` rows, so that a new block never copies the
    earlier ones, nor does the bundle a fit returns; a warm start adopts the full blocks of
    the earlier bundle, which no model writes again, and copies the rows of its last one. The
    products with the cuts (a new column of the Gram matrix, the combination ``v = A^T dual``)
    run on the threads of ``use_threads``, each entry added in one fixed order: the same bits
    on any number of threads.
    """

    def __init__(self, n_params, cuts, offsets, alpha):
        capacity = max(16, 2 * offsets.shape[0])
        self.n_params = n_params
        self.blocks = []
        self.b = np.zeros(capacity)
        self.K = np.zeros((capacity, capacity))
        self.dual = np.zeros(capacity)
        self.t = 0
        self.alpha = alpha
        for block in cuts:
            adopt = block.shape[0] == CUT_ROWS and self.t % CUT_ROWS == 0
            if adopt:
                self.blocks.append(block)
            for a in block:
                self._append(a, offsets[self.t], stored=adopt)
        if self.t:
            self.dual[:self.t] = 1.0 / self.t

    def _rows(self):
        """``(first cut, block of cuts)`` of every block, its filled rows only."""
        return [(k * CUT_ROWS, block[:self.t - k * CUT_ROWS])
                for k, block in enumerate(self.blocks)]

    def _append(self, a, b, stored=False):
        t = self.t
        if t == self.b.shape[0]:  # double the room of the small arrays
            grow = self.b.shape[0]
            self.b = np.concatenate([self.b, np.zeros(grow)])
            self.dual = np.concatenate([self.dual, np.zeros(grow)])
            K = np.zeros((2 * grow, 2 * grow))
            K[:grow, :grow] = self.K
            self.K = K
        if t == len(self.blocks) * CUT_ROWS:
            self.blocks.append(np.empty((CUT_ROWS, self.n_params)))
        if not stored:  # else ``a`` is already that row (of an adopted block)
            self.blocks[-1][t % CUT_ROWS] = a
        self.b[t] = b
        self.t = t + 1
        column = self.K[t, :t + 1]
        for first, rows in self._rows():
            run_chunks(dot_rows, rows.shape[0], rows, a, column[first:first + rows.shape[0]])
        self.K[:t + 1, t] = column

    def add(self, a, b, accuracy):
        """Add a cut and re-solve the model to ``accuracy`` (on the scale of ``J``); returns
        ``(w_t, J_t(w_t))``."""
        self._append(a, b)
        t = self.t
        if t == 1:
            self.dual[0] = 1.0
        dual = self.dual[:t]
        # warm start from the previous solution padded with 0 (spec 003 §2.1), so the lower
        # bound never decreases
        simplex_qp(self.K[:t, :t], self.b[:t], self.alpha, dual, np.empty(t),
                   self.alpha * accuracy, 100 * t + 1000)
        return self._solution()

    def _solution(self):
        t = self.t
        v = np.zeros(self.n_params)
        for first, rows in self._rows():  # each entry adds the cuts in order
            run_chunks(combine_rows, v.shape[0], rows, self.dual[first:first + rows.shape[0]], v)
        offset = self.dual[:t] @ self.b[:t]
        return -v / self.alpha, offset - v @ v / (2.0 * self.alpha)

    def bundle(self):
        return [rows for _, rows in self._rows()], self.b[:self.t].copy()


class _LineSearchModel:
    """ls-bmrm's model: the aggregated cut ``(v, beta)`` only, updated by the exact line search
    of spec 003 §2.2 between it and the new cut (O(d) memory)."""

    def __init__(self, n_params, cuts, offsets, alpha):
        self.alpha = alpha
        if offsets.shape[0]:  # a convex combination of valid cuts is a valid cut
            self.v = sum(block.sum(axis=0) for block in cuts) / offsets.shape[0]
            self.beta = float(offsets.mean())
        else:
            self.v, self.beta = None, 0.0

    def add(self, a, b, accuracy):
        if self.v is None:
            eta = 1.0
            self.v = np.zeros_like(a)
        else:
            d = a - self.v
            dd = d @ d
            eta = 1.0 if dd == 0.0 else float(np.clip(
                (self.alpha * (b - self.beta) - self.v @ d) / dd, 0.0, 1.0))
        self.v = (1.0 - eta) * self.v + eta * a
        self.beta = (1.0 - eta) * self.beta + eta * b
        return -self.v / self.alpha, self.beta - self.v @ self.v / (2.0 * self.alpha)

    def bundle(self):
        return [self.v[None].copy()], np.array([self.beta])


def bundle_method(oracle, coef0, alpha, *, variant="qp", tol=1e-3, max_iter=1000, cuts=None,
                  offsets=None, inner_tol=None, verbose=0, desc="BMRM"):
    """BMRM (spec 003 §2.1, eq. (3), (4), (10)) for any risk oracle.

    ``oracle(w) -> (R, a, b)``: the risk ``R = R_emp(w)``, a subgradient ``a`` and the offset ``b
    = R - <w, a>`` of the cut at ``w`` (given separately so it can be computed without
    cancellation, e.g. as a mean loss). ``coef0`` (n_params,): ``w_0``, where the first cut is
    taken. ``alpha``: regularisation ``lambda > 0``. ``variant``: ``"qp"``, qp-bmrm (the model QP
    over all cuts, solved to high accuracy), or ``"ls"``, ls-bmrm (the line search between the
    aggregated cut and the new one, spec 003 §2.2). Stops when ``eps_t = min_t' J(w_t') -
    J_t(w_t) <= tol`` or after ``max_iter`` oracle calls. ``cuts`` (list of ndarray, ndarray or
    None) and ``offsets`` (ndarray or None): the cuts of an earlier run on the same risk and their
    offsets (``BMRMResult.cuts``: blocks of rows, or one matrix of rows; ``BMRMResult.offsets``).
    ``inner_tol`` (float or None): accuracy (on the scale of ``J``) to which qp-bmrm solves its
    model QP; None: 1% of the current gap, at least ``tol / 1000``. The lower bound is valid at
    any accuracy. ``verbose > 0``: progress bar with the gap, labelled ``desc``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}.")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}.")
    w = np.array(coef0, dtype=float)
    n_params = w.shape[0]
    cuts = [] if cuts is None else [cuts] if isinstance(cuts, np.ndarray) else list(cuts)
    cuts = [np.ascontiguousarray(block, dtype=float).reshape(-1, n_params) for block in cuts]
    offsets = np.zeros(0) if offsets is None else np.asarray(offsets, dtype=float)
    if sum(block.shape[0] for block in cuts) != offsets.shape[0]:
        raise ValueError(f"the bundle has {sum(block.shape[0] for block in cuts)} cuts and "
                         f"{offsets.shape[0]} offsets.")
    model = (_QPModel(n_params, cuts, offsets, alpha) if variant == "qp"
             else _LineSearchModel(n_params, cuts, offsets, alpha))
    clock = Clock()
    history = []
    best_w, best_J, lower, gap = w, np.inf, -np.inf, np.inf
    converged = False
    with ProgressBar(max_iter, verbose, desc) as bar:
        for t in range(1, max_iter + 1):
            risk, a, b = oracle(w)
            J = risk + 0.5 * alpha * w @ w
            if J < best_J:
                best_w, best_J = w, J
            # the model QP is solved well below the current gap (and the target): its
            # inaccuracy only loosens the bound, and early iterations need little
            accuracy = inner_tol if inner_tol is not None else max(
                1e-2 * (best_J - lower) if t > 1 else 0.0, 1e-3 * tol,
                1e-13 * max(1.0, abs(best_J)))
            w, lower = model.add(np.asarray(a, dtype=float), float(b), accuracy)
            gap = best_J - lower
            history.append(history_record(iter=t, objective=J, dual_objective=lower, gap=gap,
                                          oracle_calls=t, time=clock.wall(),
                                          cpu_time=clock.cpu()))
            bar.set_postfix(gap=f"{gap:.2e}")
            bar.log(f"iteration {t}", objective=J, lower_bound=lower, gap=gap)
            bar.update()
            if gap <= tol:
                converged = True
                break
            if stop_requested():  # Ctrl-C: the best iterate so far, its bound
                break
    cuts, offsets = model.bundle()
    return BMRMResult(coef=best_w.copy(), objective=best_J, dual_objective=lower,
                      duality_gap=gap, n_iter=t, n_oracle_calls=t, converged=converged,
                      history=history, cuts=cuts, offsets=offsets)


def structured_oracle(problem, sums=None):
    """Risk oracle of the mean structured hinge of a packed problem, from its sums over the
    examples ``sums`` (a :class:`~sklearn_ssvm.solvers.sums.ExampleSums`; None: on this
    process's threads).

    One batched loss-augmented max-oracle pass at ``w`` gives the labelings ``y*_i``; the cut
    is ``a = (1/n) sum_i [phi(x_i, y*_i) - phi(x_i, y_i)]``, built in label space, and
    ``b = (1/n) sum_i L(y_i, y*_i)``.
    """
    hard_max = Smoothing(NONE, 1, 0.0)
    sums = ThreadSums(problem) if sums is None else sums
    return lambda coef: sums.smoothed(coef, hard_max)


def bmrm(problem, penalty, *, variant="qp", tol=1e-3, max_iter=1000, init=None, cuts=None,
         offsets=None, n_jobs=None, cluster=False, n_partitions=None, verbose=0):
    """qp-bmrm or ls-bmrm on ``alpha/2 ||w||^2 + mean_i H~_i(w)`` for any structure.

    ``problem``: packed training data (``structure.prepare(X, Y)``). ``penalty`` (ElasticNet or
    float): the L2 penalty ``alpha/2 ||w||^2`` (an elastic net with ``l1 = 0`` and no linear
    term), or its ``alpha``: the bundle's QP is the L2 penalty's. ``variant`` (``"qp"``, ``"ls"``):
    see :func:`bundle_method`; qp-bmrm stores every cut (``n_iter x n_params`` floats), ls-bmrm
    needs O(n_params) memory but converges more slowly. ``tol``: target BMRM gap (a certificate on
    the scale of the objective); ``max_iter``: maximum number of oracle passes over the data;
    ``init``: ``w_0`` (default 0). ``cuts``, ``offsets`` (list of ndarray, ndarray or None):
    bundle of an earlier run on the same data (``BMRMResult.cuts``, ``.offsets``; valid for any
    ``alpha``). ``n_jobs`` (int or None): threads of the sums over the examples and of the
    products with the cuts: the iterates are the same to the bit for any number. ``cluster``
    (bool or distributed.Client): compute the sums over the examples on a dask cluster (True: the
    current client), the bundle on this process: the same iterates to the bit as on one process
    (:class:`~sklearn_ssvm.solvers.sums.ClusterSums`); ``n_partitions``: with ``cluster``,
    partitions of the examples (None: one per worker). ``verbose`` (int)."""
    capabilities.check("bmrm-cluster" if cluster else "bmrm", problem,
                       ["sample_weight"] if problem.weighted else [])
    penalty = as_penalty(penalty)
    if penalty.l1 or penalty.p is not None:
        raise ValueError("bmrm takes the L2 penalty alpha/2 ||w||^2 (no l1 part, no linear "
                         "term).")
    w0 = np.zeros(problem.n_params) if init is None else init
    # BLAS on one thread: the threads are the kernels', and its products' order stays fixed
    with kernel_threads(n_jobs), threadpool_limits(1, user_api="blas"), \
            open_sums(problem, cluster, n_partitions) as sums:
        return bundle_method(structured_oracle(problem, sums), w0, penalty.c, variant=variant,
                             tol=tol, max_iter=max_iter, cuts=cuts, offsets=offsets,
                             verbose=verbose, desc=f"{variant}-BMRM")


_CAPABILITIES = capabilities.register("bmrm", capabilities.Capabilities(
    name="BMRMStructuredSVM", options=("sample_weight",), penalty_codes=("l2",),
    refused={("binary_graph", None): "its cutting-plane model keeps no constraint on coef, "
                                     "and the graph cuts need the pairwise table "
                                     "submodular; GraphCRF has no such constraint"},
    certificate="primal minus the bundle's lower bound", warm_start=True,
    path="grid (warm: cutting planes)"))
capabilities.register("bmrm-cluster", replace(
    _CAPABILITIES, name="BMRMStructuredSVM(cluster=True)",
    refused={("graph", None): capabilities.PYTHON_ORACLES,
             ("binary_graph", None): capabilities.PYTHON_ORACLES},
    certificate=_CAPABILITIES.certificate + ", the sums over the examples on the cluster (the "
    "same iterates to the bit as on one process)"))


class BMRM(Solver):
    """:func:`bmrm` behind the :class:`~sklearn_ssvm.solvers.base.Solver` protocol.

    ``**settings``: keyword arguments of :func:`bmrm` (``variant``, ``tol``, ``max_iter``,
    ``n_jobs``, ``cluster``, ``n_partitions``, ``verbose``): ``solve(..., warm=result)`` continues
    from a previous :class:`BMRMResult`'s ``coef`` and cutting planes (valid at any ``alpha`` on
    the same data)."""

    @property
    def capabilities(self):
        """``SOLVERS["bmrm"]``, or ``SOLVERS["bmrm-cluster"]`` with ``cluster``."""
        return capabilities.SOLVERS["bmrm-cluster" if self.settings.get("cluster") else "bmrm"]

    def _solve(self, problem, penalty, warm):
        if warm is None:
            return bmrm(problem, penalty, **self.settings)
        return bmrm(problem, penalty, init=warm.coef, cuts=warm.cuts, offsets=warm.offsets,
                    **self.settings)


def hinge_oracle(X, y):
    """Risk oracle of the mean binary hinge ``(1/n) sum_i [1 - y_i <x_i, w>]_+`` (no bias).

    With violators ``S = {i : y_i <x_i, w> < 1}``: ``a = -(1/n) sum_{i in S} y_i x_i`` and
    ``b = |S| / n`` (spec 003 §2.1).
    """
    n = X.shape[0]

    def oracle(w):
        margins = y * (X @ w)
        active = margins < 1.0
        a = -np.asarray(X.T @ (y * active)).ravel() / n
        return float(np.sum(1.0 - margins[active])) / n, a, active.sum() / n

    return oracle


def bmrm_binary(X, y, alpha, *, variant="qp", tol=1e-6, max_iter=1000, init=None, verbose=0):
    """BMRM for the binary linear SVM ``alpha/2 ||w||^2 + mean_i [1 - y_i <x_i, w>]_+``.

    ``X`` (n_samples, n_features), ndarray or sparse; ``y`` (n_samples,) in ``{-1, +1}``;
    ``alpha`` is ``lambda``: the problem is LinearSVC's (hinge, no intercept) with ``C = 1/(alpha
    n)``. ``variant``, ``tol``, ``max_iter``, ``init``, ``verbose`` as in :func:`bmrm`."""
    X = X.tocsr() if sp.issparse(X) else np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    w0 = np.zeros(X.shape[1]) if init is None else init
    return bundle_method(hinge_oracle(X, y), w0, alpha, variant=variant, tol=tol,
                         max_iter=max_iter, verbose=verbose, desc=f"{variant}-BMRM")


def pieces_oracle(pieces, offsets, tie_tol=1e-9):
    """Risk oracle of ``R(w) = max_k <p_k, w> + c_k`` with an explicit list of affine pieces.

    Among the pieces within ``tie_tol`` of the maximum the first one is returned, a legal
    subgradient choice: the worst-case rule of the lower-bound instance (spec 003 §2.3,
    :func:`sklearn_ssvm.datasets.make_hadamard_bmrm`).
    """
    pieces = np.asarray(pieces, dtype=float)
    offsets = np.asarray(offsets, dtype=float)

    def oracle(w):
        values = pieces @ w + offsets
        top = values.max()
        k = int(np.flatnonzero(values >= top - tie_tol)[0])
        return top, pieces[k], offsets[k]

    return oracle
