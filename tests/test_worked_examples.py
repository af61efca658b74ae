"""The worked examples of ``doc/architecture.md`` ("Adding a penalty, a structure, a solver"):
one class each, plugged into the library unchanged, and checked as every piece of its axis is
(the penalty and solver protocols' contract tests run over every implementation here). The
documentation includes the code between the ``# [name]`` markers verbatim."""
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils import check_array

from _brute import brute_max, elastic_net_qp
from _golden import _data, _structures
from test_support import KIND_OF, _subclasses, check_cell, estimator_of
from sklearn_ssvm import (BCFWStructuredSVM, BMRMStructuredSVM, CandidateSet, ChainCRF,
                          MulticlassSVM, SmoothSSVMClassifier)
from sklearn_ssvm._kernels.labelings import CANDIDATES
from sklearn_ssvm._kernels.smoothed import ENTROPY, TOP_K
from sklearn_ssvm.estimators.base import StructuredEstimator
from sklearn_ssvm.feature_maps import MLPFeatureMap
from sklearn_ssvm.model_selection import (BCFWStructuredSVMCV, SmoothSSVMClassifierCV,
                                          cross_validated, grid_search_path)
from sklearn_ssvm.penalties import ElasticNet, Penalty
from sklearn_ssvm.smoothing import topk_smooth_max
from sklearn_ssvm.solvers import capabilities
from sklearn_ssvm.solvers.agm import AGM
from sklearn_ssvm.solvers.base import Solver
from sklearn_ssvm.solvers.bcfw import BCFW
from sklearn_ssvm.solvers.bcfw_cluster import BCFWCluster
from sklearn_ssvm.solvers.bmrm import BMRM, structured_oracle
from sklearn_ssvm.solvers.capabilities import Capabilities, register
from sklearn_ssvm.solvers.prox_linear import ProxLinear
from sklearn_ssvm.solvers.result import HISTORY_COLUMNS, SolverResult, history_record
from sklearn_ssvm.solvers.smooth import Smoothing, Stochastic
from sklearn_ssvm.structures import GraphStructure


# [penalty]
@dataclass(frozen=True)
class GroupLasso(Penalty):
    """``r(w) = (c/2) ||w||^2 + lam sum_g ||w_g||_2 - <p, w>``: whole groups of coefficients
    (by default every label's weight of one input feature) are zero together."""

    c: float
    lam: float
    groups: np.ndarray = None  # the group of each coefficient, 0 .. n_groups - 1
    p: np.ndarray = None

    def bind(self, problem):  # a fit's coefficients: group W's rows, each of theta alone
        if self.groups is not None:
            return self
        W, theta = problem.split_coef(np.arange(problem.n_params))
        groups = np.concatenate([np.repeat(np.arange(W.shape[0]), W.shape[1]),
                                 W.shape[0] + np.arange(theta.size)])
        return GroupLasso(self.c, self.lam, groups, self.p)

    def _shrink(self, v, t):
        """The group soft-threshold ``v_g max(1 - t / ||v_g||, 0)``."""
        norms = np.sqrt(np.bincount(self.groups, weights=v * v))
        scale = np.maximum(1.0 - t / np.where(norms > 0, norms, np.inf), 0.0)
        return v * scale[self.groups]

    def _linear(self, like):
        return np.zeros_like(like) if self.p is None else self.p

    def _shift(self, u, step=1.0):
        return u + step * self._linear(u)

    def value(self, w):
        norms = np.sqrt(np.bincount(self.groups, weights=w * w))
        return 0.5 * self.c * w @ w + self.lam * norms.sum() - self._linear(w) @ w

    def prox(self, v, step):
        return self._shrink(self._shift(v, step), step * self.lam) / (1.0 + step * self.c)

    def conjugate(self, u):
        s = self._shrink(self._shift(u), self.lam)
        return s @ s / (2.0 * self.c)

    def dual_map(self, u):
        return self._shrink(self._shift(u), self.lam) / self.c

    def model_min(self, q, c):
        return self._shrink(self._shift(q), self.lam) / (c + self.c)

    def plus_prox(self, kappa, center):
        p = kappa * np.asarray(center, dtype=float) + self._linear(center)
        return GroupLasso(self.c + kappa, self.lam, self.groups, p)

    def least_norm_subgradient(self, w, grad):
        g = grad + self.c * w - self._linear(w)
        norms = np.sqrt(np.bincount(self.groups, weights=w * w))[self.groups]
        return np.where(norms > 0, g + self.lam * w / np.where(norms > 0, norms, 1.0),
                        self._shrink(g, self.lam))
# [/penalty]


# [structure]
class OrdinalRegression(MulticlassSVM):
    """Ordered levels ``classes_``: a weight vector per level (``phi(x, k) = e_k (x) x``) and
    the loss ``|k - y| / (K - 1)``, the distance between levels. Each example's K levels are
    its candidates, so the compiled candidate-set oracles (max, top-K, smoothed) run it. With
    ``fit_intercept`` each level has its intercept (the constant feature joins ``x``)."""

    _kind = CANDIDATES
    _n_codes = 1  # one statistic per candidate: S(y) = e_y

    def _augment(self, X_all, tok_offsets):  # done in _pack, before the levels' blocks
        return X_all

    def _pack(self, X_all, lengths, Y):
        K = len(self.classes_)  # candidate k of example i: x_i in block k, feature-major
        X_all = super()._augment(X_all, None)
        return super()._pack(sp.kron(X_all, sp.identity(K), format="csr"), lengths * K, Y)

    def _token_losses(self, Y):
        K = len(self.classes_)
        levels = self._encode_labels(Y, np.ones(len(Y)))[0]
        return (np.abs(levels[:, None] - np.arange(K)) / (K - 1)).ravel()

    def loss(self, y_true, y):
        return abs(int(self._encode_one(y_true)[0]) - int(self._encode_one(y)[0])) / (
            len(self.classes_) - 1)

    def decision_function(self, X, coef):
        scores = self.pack(X).token_matrix() @ np.asarray(coef, dtype=float)
        return np.asarray(scores).reshape(-1, len(self.classes_))

    def prediction_scorer(self, X, Y):
        problem = self.pack(X)
        levels = self._encode_labels(Y, np.ones(len(Y)))[0]
        return problem, lambda y_pred: 1.0 - float(np.mean(np.abs(y_pred - levels))) / (
            len(self.classes_) - 1)
# [/structure]


# [graph-structure]
class Taxonomy(GraphStructure):
    """Classes are the leaves of a tree of categories (``parent[k]``: node ``k``'s parent, -1
    at the root). In label space the tree's nodes are binary (on the class's root path or
    not), each node's features are ``x`` in a block of its own and the tree's edges carry one
    constant feature, so a class scores its path's nodes; the loss is the tree distance, the
    nodes on one path only, over twice the depth. Its oracle enumerates the leaves, in
    Python."""

    def __init__(self, parent):
        self.parent = parent

    def examples(self, X, Y=None, fit=False):  # an example: (the node features, its path)
        X = check_array(X)
        if fit:
            parent = np.asarray(self.parent)
            paths = np.eye(len(parent), dtype=np.int64)  # paths[k, j]: j is on k's root path
            for k in range(len(parent)):
                j = parent[k]
                while j >= 0:
                    paths[k, j], j = 1, parent[j]
            children = np.flatnonzero(parent >= 0)
            self.edges_ = np.column_stack([parent[children], children])
            self.leaves_ = np.setdiff1d(np.arange(len(parent)), parent)
            self.paths_ = paths[self.leaves_]
            self.classes_, self.n_features_in_ = np.array([0, 1]), X.shape[1]
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, expected {self.n_features_in_}.")
        N = len(self.parent)
        rows = [sp.kron(sp.identity(N), x[None, :], format="csr") for x in X]
        leaves = [None] * len(X) if Y is None else np.searchsorted(self.leaves_, Y)
        return [(x, None if k is None else self.paths_[k]) for x, k in zip(rows, leaves)]

    @property
    def n_params(self):
        return 2 * len(self.parent) * self.n_features_in_ + 4

    def label_graph(self, example):
        return (example[0], self.edges_, np.ones((len(self.edges_), 1)),
                0.5 / (self.paths_.sum(axis=1).max() - 1))  # 1 / (2 depth)

    def labeling(self, example):
        return example[1]

    def label_oracle(self, example, unary, pairwise, augment):
        P, (s, t) = self.paths_, self.edges_.T  # the leaves' labelings
        scores = (unary[np.arange(P.shape[1]), P].sum(axis=1)
                  + pairwise[2 * P[:, s] + P[:, t]].sum(axis=1))
        if augment:
            scores += self.label_graph(example)[3] * (P != example[1]).sum(axis=1)
        return P[np.argmax(scores)], np.nan, ("leaves", True)

    def predict(self, X, coef):
        return [self.leaves_[np.flatnonzero((self.paths_ == y).all(axis=1))[0]]
                for y in super().predict(X, coef)]
# [/graph-structure]


# [solver]
@dataclass(kw_only=True)
class BatchFWResult(SolverResult):
    u: np.ndarray  # the dual point: w = u / alpha at any alpha (a warm start at another one)
    ell: float


class BatchFW(Solver):
    """Batch Frank-Wolfe on the SSVM dual (Lacoste-Julien et al. 2013, Alg. 1): one oracle pass
    over all examples per step, an exact line search, the duality gap (5) as certificate."""

    capabilities = register("batch-fw", Capabilities(
        name="BatchFWStructuredSVM", options=("sample_weight",), penalty_codes=("l2",),
        refused={("binary_graph", None): "its steps keep coef off the submodular cone"},
        certificate="exact duality gap (eq. (5))", warm_start=True,
        path="grid (warm: dual point)"))

    def _solve(self, problem, penalty, warm):
        max_iter, tol = self.settings.get("max_iter", 1000), self.settings.get("tol", 1e-3)
        lam, oracle = penalty.c, structured_oracle(problem)
        u, ell = (np.zeros(problem.n_params), 0.0) if warm is None else (warm.u, warm.ell)
        history = []
        for it in range(1, max_iter + 1):
            w = u / lam
            risk, a, loss = oracle(w)  # R(w), its subgradient, the corner's mean loss
            objective, gap = 0.5 * lam * w @ w + risk, lam * w @ w + a @ w + loss - ell
            history.append(history_record(iter=it, objective=objective, gap=gap,
                                          dual_objective=objective - gap,
                                          oracle_calls=it * problem.n_samples))
            if gap <= tol:
                break
            direction = -a - u  # towards the corner u_s = -a
            step = min(gap * lam / max(direction @ direction, 1e-300), 1.0)
            u, ell = u + step * direction, ell + step * (loss - ell)
        return BatchFWResult(coef=w, objective=objective, dual_objective=objective - gap,
                             duality_gap=gap, converged=gap <= tol, n_iter=it,
                             n_oracle_calls=it * problem.n_samples, history=history,
                             u=u, ell=ell)


class BatchFWStructuredSVM(StructuredEstimator):
    """The structured SVM trained by :class:`BatchFW`."""

    solver_params = {"batch-fw": {}}

    def __init__(self, structure, alpha=None, tol=1e-3, max_iter=1000, warm_start=False):
        self.structure = structure
        self.alpha = alpha
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start

    def _solver(self, problem, loss_scale):
        return BatchFW(max_iter=self.max_iter, tol=self.tol * loss_scale)
# [/solver]


def _ordinal_data(n=40, levels=(1, 2, 3, 5), seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    latent = X @ np.array([1.5, -1.0, 0.5]) + 0.3 * rng.normal(size=n)
    return X, np.asarray(levels)[np.digitize(latent, [-1.0, 0.0, 1.0])]


# -- the penalty ----------------------------------------------------------------------------

def _penalties(rng, d=6):
    groups = np.array([0, 0, 1, 1, 1, 2])
    center = rng.normal(size=d)
    enet = ElasticNet.from_alpha(0.3, 0.6)
    group = GroupLasso(0.12, 0.18, groups)
    return [enet, enet.plus_prox(0.5, center), ElasticNet.from_alpha(2.0), group,
            group.plus_prox(0.5, center), GroupLasso(0.5, 2.0, groups),
            group.scaled(2.5), group.scaled(0.3).plus_prox(0.5, center)]  # scaled


@pytest.mark.parametrize("index", range(8))
def test_penalty_contract(index):
    """Every :class:`Penalty`: ``prox`` and ``model_min`` minimise their models (no nearby
    point does better), ``conjugate`` and ``dual_map`` obey Fenchel-Young, ``plus_prox`` adds
    its term, and the least-norm subgradient vanishes at the minimiser of a quadratic model."""
    rng = np.random.default_rng(index)
    pen = _penalties(rng)[index]
    for _ in range(10):
        v, step, q, c = rng.normal(size=6) * 2, rng.choice([0.05, 1.0, 20.0]), \
            rng.normal(size=6) * 2, 0.7
        x, m = pen.prox(v, step), pen.model_min(q, c)
        u = rng.normal(size=6) * rng.choice([0.1, 1.0, 5.0])
        w = pen.dual_map(u)
        assert pen.conjugate(u) == pytest.approx(u @ w - pen.value(w), rel=1e-12, abs=1e-12)
        for _ in range(20):
            d = rng.normal(size=6) * rng.choice([1e-4, 1e-2, 1.0])
            assert (np.sum((x - v) ** 2) / (2 * step) + pen.value(x)
                    <= np.sum((x + d - v) ** 2) / (2 * step) + pen.value(x + d) + 1e-12)
            assert (0.5 * c * m @ m - q @ m + pen.value(m)
                    <= 0.5 * c * (m + d) @ (m + d) - q @ (m + d) + pen.value(m + d) + 1e-12)
            assert pen.conjugate(u) >= u @ (w + d) - pen.value(w + d) - 1e-12
        assert pen.subgradient_distance(m, c * m - q) <= 1e-10
        z, y = rng.normal(size=6), rng.normal(size=6)
        shifted = pen.plus_prox(0.4, z)
        drop = [shifted.value(t) - pen.value(t) - 0.2 * np.sum((t - z) ** 2) for t in (x, y)]
        assert drop[0] == pytest.approx(drop[1], abs=1e-10)


def test_group_lasso_trains_with_agm_and_zeroes_whole_features():
    """The group lasso through the solver protocol: AGM certifies its gap (the conjugate is the
    group lasso's own, checked above); singleton groups are the elastic net, whose solution
    the same solver reaches; large groups zero every label's weight of some input features."""
    X, y = _data("flat")
    structure = MulticlassSVM(fit_intercept=False)  # every coefficient a feature's
    problem = structure.prepare(X, y)
    K = len(structure.classes_)  # coef is feature-major: coefficient j*K + k is feature j
    agm = AGM(mu=1e-6, tol=1e-7, max_iter=5000)
    by_feature = GroupLasso(0.1, 0.3, np.repeat(np.arange(X.shape[1]), K))
    result = agm.solve(problem, by_feature)
    assert result.gap_certified and result.duality_gap <= 1e-6
    W = result.coef.reshape(X.shape[1], K)
    zero_rows = np.all(W == 0, axis=1)
    assert 0 < zero_rows.sum() < X.shape[1]
    singletons = GroupLasso(0.1, 0.05, np.arange(problem.n_params))
    enet = ElasticNet(0.1, 0.05)
    a, b = agm.solve(problem, singletons), agm.solve(problem, enet)
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-6)
    qp, _ = elastic_net_qp(structure, X, y, enet)
    assert qp - 1e-6 <= a.objective <= qp + 1e-6


def test_a_custom_penalty_reaches_the_estimator_its_cv_estimator_and_objectives():
    """``penalty=GroupLasso(...)``, bound to the coefficients' layout and scaled by ``alpha``:
    the estimator reaches the group lasso's optimum (a direct AGM solve) within the two
    certified gaps, its CV estimator chooses alpha with it, and both objectives are the group
    lasso's, never an elastic net rebuilt from ``l1_ratio``; a solver whose kernels run the
    elastic net refuses it with the declared message."""
    X, y = _data("flat")
    structure = MulticlassSVM(fit_intercept=False)
    unit = GroupLasso(1.0, 3.0)
    settings = dict(solver="agm", smoothing="entropy", top_k=None, penalty=unit)
    est = SmoothSSVMClassifier(structure, alpha=0.1, mu=1e-6, tol=1e-7, max_iter=5000,
                               **settings).fit(X, y)
    problem = est.structure_.pack(X, y)
    bound = unit.bind(problem)
    direct = AGM(mu=1e-6, tol=1e-7, max_iter=5000).solve(
        problem, GroupLasso(0.1, 0.3, bound.groups))
    assert est.gap_certified_ and direct.gap_certified
    radius = np.sqrt(2 * est.duality_gap_ / 0.1) + np.sqrt(2 * direct.duality_gap / 0.1)
    assert np.linalg.norm(est.coef_ - direct.coef) <= radius + 1e-9
    hinge = problem.hinge_losses(est.coef_).mean()
    assert est.primal_objective(X, y) == pytest.approx(0.1 * bound.value(est.coef_) + hinge,
                                                       rel=1e-12)
    assert 0 < np.all(est.coef_.reshape(X.shape[1], -1) == 0, axis=1).sum() < X.shape[1]
    cv = SmoothSSVMClassifierCV(structure, alphas=[0.2, 0.1], cv=2, mu=1e-4, tol=1e-5,
                                max_iter=300, **settings).fit(X, y)
    hinge = problem.hinge_losses(cv.coef_).mean()
    assert cv.primal_objective(X, y) == pytest.approx(
        cv.alpha_ * bound.value(cv.coef_) + hinge, rel=1e-12)
    assert abs(cv.primal_objective(X, y) - (0.5 * cv.alpha_ * cv.coef_ @ cv.coef_ + hinge)) > 1e-3
    with pytest.raises(ValueError) as error:
        BCFWStructuredSVM(structure, alpha=0.1, penalty=unit).fit(X, y)
    assert str(error.value).startswith("BCFWStructuredSVM takes the elastic net (ElasticNet), "
                                       "not 0.1 * GroupLasso(c=1.0, lam=3.0, groups=array(")


def test_solve_refuses_the_structure_kinds_a_solver_declares_it_refuses():
    make, data = _structures()["graph"]
    problem = make().prepare(*_data(data))
    with pytest.raises(ValueError) as error:
        AGM(mu=0.1, max_iter=2).solve(problem, 0.1)
    assert str(error.value) == capabilities.refusal("agm", "graph")


def test_solvers_with_compiled_soft_thresholds_refuse_the_group_lasso():
    problem = MulticlassSVM().prepare(*_data("flat"))
    penalty = GroupLasso(0.1, 0.1, np.zeros(problem.n_params, dtype=int))
    for solver in (BCFW(max_iter=2), BMRM(max_iter=2)):
        with pytest.raises(ValueError, match=f"{solver.capabilities.name} takes the "):
            solver.solve(problem, penalty)


# -- the structure --------------------------------------------------------------------------

def test_ordinal_oracle_matches_enumeration():
    X, y = _ordinal_data()
    structure = OrdinalRegression()
    structure.prepare(X, y)
    rng = np.random.default_rng(1)
    for i in range(10):
        coef = rng.normal(size=structure.n_params)
        level, value = structure.max_oracle(X[i], y[i], coef)
        best, _ = brute_max(structure, X[i], y[i], coef)
        assert value == pytest.approx(best, abs=1e-12)
        assert value == pytest.approx(structure.loss(y[i], level) + coef @ (
            structure.joint_feature(X[i], level) - structure.joint_feature(X[i], y[i])))
    assert structure.loss(1, 5) == 1.0 and structure.loss(2, 3) == pytest.approx(1 / 3)


def test_ordinal_regression_trains_with_every_estimator():
    """BCFW reaches the enumeration QP's optimum within its certified gap; BMRM and Smooth fit
    it unchanged; the score is 1 - mean level distance; GridSearchCV and clone work."""
    X, y = _ordinal_data()
    bcfw = BCFWStructuredSVM(OrdinalRegression(), alpha=0.1, tol=1e-6, max_iter=2000,
                             random_state=0).fit(X, y)
    qp, _ = elastic_net_qp(bcfw.structure_, X, y, ElasticNet.from_alpha(0.1))
    assert bcfw.converged_ and bcfw.primal_objective_ - 1e-6 <= qp <= bcfw.primal_objective_
    predicted = bcfw.predict(X)
    assert set(predicted) <= {1, 2, 3, 5}
    distance = np.abs(np.searchsorted([1, 2, 3, 5], predicted) - np.searchsorted([1, 2, 3, 5],
                                                                                   y)) / 3
    assert bcfw.score(X, y) == pytest.approx(1 - distance.mean())
    assert bcfw.score(X, y) > 0.9
    np.testing.assert_array_equal(np.asarray([1, 2, 3, 5])[bcfw.decision_function(X).argmax(1)],
                                  predicted)
    for other in (BMRMStructuredSVM(OrdinalRegression(), alpha=0.1, tol=1e-4),
                  SmoothSSVMClassifier(OrdinalRegression(), alpha=0.1, random_state=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert other.fit(X, y).score(X, y) > 0.85
    search = GridSearchCV(clone(bcfw).set_params(tol=1e-3), {"alpha": [0.01, 0.1]}, cv=2)
    assert search.fit(X, y).best_estimator_.score(X, y) > 0.85


# -- the structure with a Python oracle ----------------------------------------------------

PARENT = [-1, 0, 0, 1, 1, 2, 2]  # a root, two categories, four leaf classes


def _taxonomy_data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    scores = X @ (2.0 * rng.normal(size=(3, 4))) + 0.5 * rng.normal(size=(n, 4))
    return X, np.array([3, 4, 5, 6])[scores.argmax(axis=1)]


class _TaxonomyByHand:
    """The taxonomy's joint feature and loss written out (the enumeration's reference): node
    ``k``'s block ``e_k (x) x`` in the column of its state, the table of (parent, child)
    states, and the tree distance."""

    classes_ = [3, 4, 5, 6]
    path = {3: [0, 1, 3], 4: [0, 1, 4], 5: [0, 2, 5], 6: [0, 2, 6]}
    n_params = 2 * 7 * 3 + 4

    def state(self, leaf):
        return np.isin(np.arange(7), self.path[leaf]).astype(int)

    def joint_feature(self, x, leaf):
        on, W = self.state(leaf), np.zeros((7, 3, 2))
        W[np.arange(7), :, on] = x
        counts = [sum(on[PARENT[k]] == a and on[k] == b for k in range(1, 7))
                  for a in (0, 1) for b in (0, 1)]
        return np.concatenate([W.ravel(), counts])

    def loss(self, y_true, leaf):
        return np.sum(self.state(y_true) != self.state(leaf)) / 4.0


def test_taxonomy_oracle_matches_enumeration():
    """The Python oracle, through the protocol's derived hooks (``_decode``'s value and the
    true labeling's score), equals the enumeration of the written-out joint feature."""
    X, y = _taxonomy_data()
    structure, by_hand = Taxonomy(PARENT), _TaxonomyByHand()
    problem = structure.prepare(X, y)
    assert structure.n_params == by_hand.n_params
    rng = np.random.default_rng(1)
    for i in range(10):
        coef = rng.normal(size=structure.n_params)
        best, leaf = brute_max(by_hand, X[i], y[i], coef)
        labeling, value, gold, (_, exact) = structure._decode(problem.examples[i], coef, True)
        assert exact and value - gold == pytest.approx(best, abs=1e-12)
        np.testing.assert_array_equal(labeling, by_hand.state(leaf))
        np.testing.assert_allclose(structure._phi(problem.examples[i], labeling),
                                   by_hand.joint_feature(X[i], leaf))
        assert problem.loss(i, labeling) == by_hand.loss(y[i], leaf)


def test_taxonomy_top_k_matches_enumeration():
    """The derived top-K oracle (BMMF over the Python oracle, states priced out) returns the K
    best leaves of the enumeration with their loss-augmented scores, padding past the four
    leaves, and its smoothed hinge is eq. (11)'s over them."""
    X, y = _taxonomy_data()
    structure, by_hand = Taxonomy(PARENT), _TaxonomyByHand()
    problem = structure.prepare(X, y)
    rng = np.random.default_rng(2)
    for i in range(6):
        coef = rng.normal(size=structure.n_params)
        leaves = np.array(by_hand.classes_)
        augmented = np.array([coef @ by_hand.joint_feature(X[i], leaf) + by_hand.loss(y[i], leaf)
                              for leaf in leaves])
        order = np.argsort(-augmented, kind="stable")
        for K in (1, 3, 6):
            labelings, scores, gold, (_, exact) = structure._top_k(problem.examples[i], coef,
                                                                   K, True)
            found = min(K, len(leaves))
            assert exact and gold == pytest.approx(coef @ by_hand.joint_feature(X[i], y[i]))
            np.testing.assert_allclose(scores[:found], augmented[order[:found]], atol=1e-12)
            assert np.all(np.isneginf(scores[found:]))
            for k in range(found):
                np.testing.assert_array_equal(labelings[k], by_hand.state(leaves[order[k]]))
        value, gradient, expected_loss, _ = structure._smoothed(
            problem.examples[i], coef, Smoothing(TOP_K, 3, 0.5))
        reference, weights, _ = topk_smooth_max(augmented[order[:3]] - gold, 0.5)
        assert value == pytest.approx(reference, abs=1e-12)
        np.testing.assert_allclose(gradient, sum(
            w * by_hand.joint_feature(X[i], leaf) for w, leaf in zip(weights, leaves[order[:3]]))
            - by_hand.joint_feature(X[i], y[i]), atol=1e-12)
        assert expected_loss == pytest.approx(weights @ [by_hand.loss(y[i], leaf)
                                                         for leaf in leaves[order[:3]]])


def test_a_structure_with_a_python_oracle_trains_with_every_graph_solver():
    """BCFW (its compiled pass calling the oracle from Python) reaches the enumeration QP's
    optimum within its certified gap, BMRM within its own, SGD fits it; predictions are
    leaves, the score is one minus the tree distance; the CV estimator, the grid path,
    ``GridSearchCV`` and ``clone`` take it unchanged, and the solvers that refuse graphs
    refuse it with their declared message."""
    X, y = _taxonomy_data()
    qp, _ = elastic_net_qp(_TaxonomyByHand(), X, y, ElasticNet.from_alpha(0.1))
    for est in (BCFWStructuredSVM(Taxonomy(PARENT), alpha=0.1, tol=1e-6, max_iter=2000,
                                  random_state=0),
                BMRMStructuredSVM(Taxonomy(PARENT), alpha=0.1, tol=1e-6)):
        est.fit(X, y)
        assert est.converged_ and est.gap_certified_
        assert est.primal_objective_ - est.duality_gap_ - 1e-9 <= qp
        assert qp <= est.primal_objective_ + 1e-9
    predicted = est.predict(X)
    distance = [_TaxonomyByHand().loss(a, b) for a, b in zip(y, predicted)]
    assert set(predicted) <= {3, 4, 5, 6}
    assert est.score(X, y) == pytest.approx(1 - np.mean(distance)) and est.score(X, y) > 0.9
    sgd = SmoothSSVMClassifier(Taxonomy(PARENT), alpha=0.1, smoothing=None, solver="sgd",
                               max_iter=30, random_state=0)
    smooth = SmoothSSVMClassifier(Taxonomy(PARENT), alpha=0.1, random_state=0)  # top-K l2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sgd.fit(X, y).score(X, y) > 0.85
        assert smooth.fit(X, y).score(X, y) > 0.85
    assert qp - 1e-9 <= smooth.primal_objective(X, y) <= qp + smooth.duality_gap_ + 1e-9
    cv = BCFWStructuredSVMCV(Taxonomy(PARENT), alphas=[0.3, 0.1], cv=2, tol=1e-4).fit(X, y)
    assert cv.alpha_ in (0.3, 0.1) and cv.score(X, y) > 0.85
    path = grid_search_path(BCFWStructuredSVM(Taxonomy(PARENT)), X, y, alphas=[0.3, 0.1])
    assert path.converged_.all() and np.all(path.gaps_ <= 0.1)
    search = GridSearchCV(clone(est), {"alpha": [0.01, 0.1]}, cv=2).fit(X, y)
    assert search.best_estimator_.score(X, y) > 0.85
    with pytest.raises(ValueError) as error:
        SmoothSSVMClassifier(Taxonomy(PARENT), solver="agm").fit(X, y)
    assert str(error.value) == capabilities.refusal("agm", "graph")


# -- the solver -----------------------------------------------------------------------------

def test_batch_fw_reaches_the_optimum_within_its_certificate():
    X, Y = _data("chain")
    est = BatchFWStructuredSVM(ChainCRF(), alpha=0.1, tol=1e-4, max_iter=20000).fit(X, Y)
    qp, _ = elastic_net_qp(est.structure_, X, Y, ElasticNet.from_alpha(0.1))
    primal = est.primal_objective(X, Y)
    assert est.converged_ and qp - 1e-9 <= primal <= qp + est.duality_gap_ + 1e-9
    bcfw = BCFWStructuredSVM(ChainCRF(), alpha=0.1, tol=1e-6, max_iter=2000,
                             random_state=0).fit(X, Y)
    # strong convexity: ||w - w*||^2 <= 2 (P(w) - P*) / alpha for both
    bound = np.sqrt(2 * est.duality_gap_ / 0.1) + np.sqrt(2 * bcfw.duality_gap_ / 0.1)
    assert np.linalg.norm(est.coef_ - bcfw.coef_) <= bound
    assert set(est.history_[0]) >= set(HISTORY_COLUMNS)


def test_batch_fw_walks_a_warm_grid_and_refuses_what_it_declares():
    X, Y = _data("chain")
    alphas = [0.3, 0.2, 0.1]
    est = BatchFWStructuredSVM(ChainCRF(), tol=1e-3, max_iter=20000)
    warm = grid_search_path(est, X, Y, alphas=alphas, tol=1e-3)
    cold = grid_search_path(est, X, Y, alphas=alphas, tol=1e-3, warm_start=None)
    assert np.all(warm.gaps_ <= 1e-3)
    assert warm.n_oracle_calls_[-1] < cold.n_oracle_calls_[-1]
    make, data = _structures()["binary_graph"]
    with pytest.raises(ValueError) as error:
        BatchFWStructuredSVM(make()).fit(*_data(data))
    assert str(error.value) == capabilities.refusal(BatchFW.capabilities, "binary_graph")
    with pytest.raises(ValueError, match="takes the L2 penalty"):
        BatchFW().solve(ChainCRF().prepare(X, Y), ElasticNet.from_alpha(0.1, 0.5))


@pytest.mark.parametrize("structure", sorted(KIND_OF))
@pytest.mark.parametrize("option", [None, "sample_weight"])
def test_a_solver_registered_outside_the_package_joins_the_table_and_its_cells(structure,
                                                                               option):
    """``register`` beside the class, and ``solver_params`` beside its estimator's, is all it
    takes: the support table has its row, its refusals are known by name, and every structure x
    option cell fits or is refused as it declares (the contract of ``tests/test_support.py``,
    which finds the estimator by its declaration)."""
    assert capabilities.SOLVERS["batch-fw"] is BatchFW.capabilities
    assert "\n| `BatchFWStructuredSVM` | yes | yes | no | the L2 penalty" in \
        capabilities.support_table()
    check_cell(estimator_of("batch-fw"), "batch-fw", structure, option)


def test_the_cv_factory_wraps_an_estimator_written_outside_the_package():
    """``cross_validated`` needs no docstring of the wrapped class: the CV estimator of
    :class:`BatchFWStructuredSVM` chooses alpha on its folds, warm-started (its solver declares
    warm starts), and refits there to its certified tolerance."""
    X, Y = _data("chain")
    cv_class = cross_validated(BatchFWStructuredSVM)
    assert "max_iter" in cv_class.__doc__ and "l1_ratios" not in cv_class(ChainCRF()).get_params()
    cv = cv_class(ChainCRF(), alphas=[0.3, 0.1], cv=2, tol=1e-4, max_iter=20000).fit(X, Y)
    assert cv.alpha_ in (0.3, 0.1) and cv.converged_
    plain = BatchFWStructuredSVM(ChainCRF(), alpha=cv.alpha_, tol=1e-4, max_iter=20000)
    plain.fit(X, Y)
    assert abs(cv.primal_objective(X, Y) - plain.primal_objective(X, Y)) <= \
        cv.duality_gap_ + plain.duality_gap_ + 1e-12


# -- the solver protocol over every implementation ------------------------------------------

_SMOOTHING = Smoothing(ENTROPY, 1, 0.1)
#: the settings of the solver classes that need more than ``max_iter=3``, one solver per name
SETTINGS = {
    Stochastic: {method: dict(method=method, smoothing=_SMOOTHING, learning_rate=0.1,
                              max_iter=2, random_state=0)
                 for method in ("sgd", "svrg", "casimir-svrg")},
    AGM: {"AGM": dict(mu=0.1, max_iter=3)},
    ProxLinear: {"ProxLinear": dict(feature_map=MLPFeatureMap(n_hidden=2, random_state=0),
                                    smoothing=_SMOOTHING, eta=1.0, learning_rate=0.05,
                                    max_iter=2, init=None, random_state=0)}}


def _solvers():
    """Every :class:`Solver` class imported (the package's and this module's), by name."""
    return {name: cls(**settings) for cls in _subclasses(Solver)[1:]
            for name, settings in SETTINGS.get(cls, {cls.__name__: dict(max_iter=3)}).items()}


@pytest.mark.parametrize("name", sorted(_solvers()))
def test_solver_contract(name, request):
    """Every :class:`Solver`: a :class:`SolverResult` with finite coefficients, the common
    history columns and a labelled gap; a warm start from its own result; a penalty it does
    not take refused with the declared message before any work."""
    solver = _solvers()[name]
    if name == "BCFWCluster":  # it runs on the current dask client
        request.getfixturevalue("dask_client")
    declared = solver.capabilities.structures
    if name == "ProxLinear" or (declared and "ChainCRF" not in declared[0]):
        problem = CandidateSet().prepare(*_data("candidates"))
    else:
        problem = ChainCRF().prepare(*_data("chain"))
    n_params = (solver.settings["feature_map"].n_params(problem.n_features)
                if name == "ProxLinear" else problem.n_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = solver.solve(problem, 0.1)
        assert isinstance(result, SolverResult) and result.coef.shape == (n_params,)
        assert np.all(np.isfinite(result.coef)) and result.n_iter >= 1
        assert all(set(record) >= set(HISTORY_COLUMNS) for record in result.history)
        assert result.gap_certified or result.gap_reason
        if solver.capabilities.warm_start:
            again = solver.solve(problem, 0.05, warm=result)
            assert np.all(np.isfinite(again.coef))
    group = GroupLasso(0.1, 0.1, np.zeros(problem.n_params, dtype=int))
    if not solver.capabilities.penalty_methods:
        with pytest.raises(ValueError) as error:
            solver.solve(problem, group)
        assert str(error.value).startswith(f"{solver.capabilities.name} takes ")
