"""``GraphCRF``: the joint feature, every inference method and its loss-augmented and top-K
versions against enumeration on small graphs, and the three structured estimators training it
(spec 002 §7, spec 000 §2.4, spec 004 §2.2's oracles)."""
import itertools
import warnings

import numpy as np
import pytest

from sklearn.exceptions import ConvergenceWarning

from sklearn_ssvm import BCFWStructuredSVM, BMRMStructuredSVM, SmoothSSVMClassifier
from sklearn_ssvm.datasets import make_segmentation
from sklearn_ssvm.marginals import ICMMAP, TRWSMAP
from sklearn_ssvm.solvers.bcfw import pass_budget
from sklearn_ssvm.structures import ChainCRF, GraphCRF, MulticlassSVM, grid_graph

EXACT = ["auto", "brute_force", "milp"]
APPROXIMATE = ["icm", "max_product", "expansion"]
CERTIFYING = ["trws"]  # exact on the calls whose labeling meets the oracle's bound


def grid3(rng, n_features):
    return grid_graph(rng.normal(size=(3, 3, n_features)))


def random_graph(rng, n_nodes, n_features, n_chords=3):
    """A cycle plus chords, one of them repeated in reverse (merged into one model edge)."""
    cycle = [(v, (v + 1) % n_nodes) for v in range(n_nodes)]
    chords = [tuple(rng.choice(n_nodes, size=2, replace=False)) for _ in range(n_chords)]
    edges = np.array(cycle + chords + [chords[0][::-1]], dtype=np.int64)
    return rng.normal(size=(n_nodes, n_features)), edges


def random_tree(rng, n_nodes, n_features):
    edges = np.array([(v, rng.integers(v)) for v in range(1, n_nodes)], dtype=np.int64)
    return rng.normal(size=(n_nodes, n_features)), edges


def independent_score(crf, x, y, coef):
    """``<coef, phi(x, y)>`` edge by edge, from the documented layout (not ``_phi``)."""
    S, d = crf.n_states_, crf.n_features_in_
    W = coef[:d * S].reshape(d, S)
    tables = coef[d * S:].reshape(-1, S, S)
    features, edges = x[0], x[1]
    edge_features = x[2] if crf.edge_features else np.ones((len(edges), 1))
    total = sum(features[v] @ W[:, y[v]] for v in range(len(y)))
    for e, (a, b) in enumerate(edges):
        forward = edge_features[e] @ tables[:, y[a], y[b]]
        backward = edge_features[e] @ tables[:, y[b], y[a]]
        total += forward if crf.directed else 0.5 * (forward + backward)
    return total


def enumerated(crf, x, y_true, coef, augment):
    """All labelings and their (loss-augmented) scores, vectorised over the labelings."""
    S, d = crf.n_states_, crf.n_features_in_
    p = x[0].shape[0]
    Y = np.array(list(itertools.product(range(S), repeat=p)))
    values = (x[0] @ coef[:d * S].reshape(d, S))[np.arange(p), Y].sum(axis=1)
    tables = coef[d * S:].reshape(-1, S, S)
    edge_features = x[2] if crf.edge_features else np.ones((len(x[1]), 1))
    for e, (a, b) in enumerate(x[1]):
        table = np.tensordot(edge_features[e], tables, axes=1)
        values += table[Y[:, a], Y[:, b]] if crf.directed else \
            0.5 * (table[Y[:, a], Y[:, b]] + table[Y[:, b], Y[:, a]])
    if augment:
        values += task_losses(crf, Y, y_true)
    return Y, values


def task_losses(crf, Y, y_true):
    """The loss of each labeling (row of ``Y``): wrong nodes, over their number when
    normalised."""
    wrong = (Y != y_true).sum(axis=1)
    return wrong / Y.shape[1] if crf.normalize_loss else wrong


def fitted(rng, x, S, **params):
    y = rng.integers(S, size=x[0].shape[0])
    crf = GraphCRF(n_states=S, **params).fit([x], [y])
    return crf, y, rng.normal(size=crf.n_params) * 1.5


def models(rng):
    """Random 3x3 grids and loopy graphs of <= 10 nodes with 2-4 states (<= 4**9 labelings)."""
    for S in (2, 3, 4):
        yield "grid", S, grid3(rng, 2)
        n_nodes = {2: 10, 3: 7, 4: 6}[S]
        yield "loopy", S, random_graph(rng, n_nodes, 2)


@pytest.mark.parametrize("inference", EXACT + APPROXIMATE + CERTIFYING)
def test_oracles_against_enumeration(inference):
    """Exact oracles find the maximum of the plain and the loss-augmented scores; approximate
    ones return a labeling whose score they report and never beat the maximum; a call that
    says it is exact returns the maximum."""
    rng = np.random.default_rng(0)
    for _, S, x in models(rng):
        crf, y_true, coef = fitted(rng, x, S, inference=inference)
        problem = crf.pack([x], [crf.classes_[y_true]])
        for augment in (False, True):
            Y, values = enumerated(crf, x, y_true, coef, augment)
            y, value, gold, (name, exact) = crf._decode(problem.examples[0], coef, augment)
            own = independent_score(crf, x, y, coef)
            if augment:
                own += crf.loss(y_true, y)
                assert gold == pytest.approx(independent_score(crf, x, y_true, coef))
            assert value == pytest.approx(own, abs=1e-9)
            assert value <= values.max() + 1e-9
            if inference not in CERTIFYING:
                assert exact == (inference in EXACT)
            if exact:
                assert value == pytest.approx(values.max(), abs=1e-9)


def test_graph_cut_in_auto_for_binary_submodular_models():
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = random_graph(rng, 12, 2)  # 2**12 labelings: enumeration would be chosen otherwise
        crf, y_true, coef = fitted(rng, x, 2)
        coef[-4:] = [1.0, -0.5, -0.5, 0.8]  # submodular shared table
        y, value, _, (name, exact) = crf._decode(crf.pack([x], [y_true]).examples[0], coef,
                                                 True)
        Y, values = enumerated(crf, x, y_true, coef, True)
        assert name == "GraphCutMAP" and exact
        assert value == pytest.approx(values.max(), abs=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_auto_cache_is_off_where_every_oracle_is_a_graph_cut():
    """BCFW's ``cache="auto"``: no cache on binary grids (compiled graph cuts, about a step
    each): the fit is ``cache=False``'s to the bit; with three labels (TRW-S, integer programs)
    the cache stays on, as ``cache=True``."""
    rng = np.random.default_rng(2)
    for S, cached in ((2, False), (3, True)):
        X, Y = segmentation_data(rng, 6, S, shape=(5, 5))
        fits = [BCFWStructuredSVM(GraphCRF(), max_iter=6, random_state=0, cache=cache).fit(X, Y)
                for cache in ("auto", cached)]
        np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
        assert ("GraphCutMAP" in fits[0].oracle_calls_) == (S == 2)
        assert (fits[0].n_cache_hits_ > 0) == cached


@pytest.mark.parametrize("inference", ["auto", "max_product"])
def test_trees_are_exact(inference):
    """Forests go to max-product; TRW max-product is exact on them too (spec 004 §2.2)."""
    rng = np.random.default_rng(2)
    for S in (2, 3, 4):
        x = random_tree(rng, 7, 2)
        crf, y_true, coef = fitted(rng, x, S, inference=inference)
        y, value, _, (name, exact) = crf._decode(crf.pack([x], [y_true]).examples[0], coef,
                                                 True)
        assert value == pytest.approx(enumerated(crf, x, y_true, coef, True)[1].max(),
                                      abs=1e-9)
        assert exact == (inference == "auto")
        if inference == "auto":
            assert name == "TreeMAP"


@pytest.mark.parametrize("params", [dict(), dict(directed=True), dict(edge_features=True),
                                    dict(edge_features=True, directed=True),
                                    dict(normalize_loss=False)])
def test_joint_feature_and_parametrisations(params):
    """``coef @ joint_feature`` is the score edge by edge, for every parametrisation; the
    exact oracle is exact for each."""
    rng = np.random.default_rng(3)
    features, edges = random_graph(rng, 6, 3)
    x = (features, edges) + ((rng.random((len(edges), 2)),) if params.get("edge_features")
                             else ())
    crf, y_true, coef = fitted(rng, x, 3, **params)
    assert crf.n_params == 3 * 3 + (2 if params.get("edge_features") else 1) * 9
    for y in rng.integers(3, size=(5, 6)):
        assert coef @ crf.joint_feature(x, y) == pytest.approx(
            independent_score(crf, x, y, coef))
    value = crf._decode(crf.pack([x], [y_true]).examples[0], coef, True)[1]
    assert value == pytest.approx(enumerated(crf, x, y_true, coef, True)[1].max())


@pytest.mark.parametrize("inference", ["auto", "milp"])
def test_top_k_by_bmmf_against_enumeration(inference):
    """The smoothed oracle's top-K labelings are the K best of the enumeration (BMMF over
    constrained MAP calls, or graph-cut max-marginals on binary submodular models)."""
    from sklearn_ssvm._kernels.smoothed import TOP_K
    from sklearn_ssvm.smoothing import topk_smooth_max
    from sklearn_ssvm.solvers.smooth import Smoothing
    rng = np.random.default_rng(4)
    for S, x in [(3, grid_graph(rng.normal(size=(2, 3, 2)))), (2, random_graph(rng, 7, 2))]:
        crf, y_true, coef = fitted(rng, x, S, inference=inference)
        if S == 2:
            coef[-4:] = [0.7, -0.2, -0.3, 0.4]
        example = crf.pack([x], [y_true]).examples[0]
        Y, values = enumerated(crf, x, y_true, coef, True)
        gold = independent_score(crf, x, y_true, coef)
        K, mu = 6, 0.5
        value, gradient, expected_loss, _ = crf._smoothed(example, coef, Smoothing(TOP_K, K, mu))
        top = np.sort(values)[::-1][:K] - gold
        assert value == pytest.approx(topk_smooth_max(top, mu)[0], abs=1e-9)
        # the gradient is the smoothing weights' mean of phi(y) - phi(y_true)
        order = np.argsort(-values, kind="stable")[:K]
        weights = topk_smooth_max(values[order] - gold, mu)[1]
        if len(np.unique(np.round(values[order], 9))) == K:  # no ties: labelings unique
            phi = np.array([crf.joint_feature(x, y) for y in Y[order]])
            assert np.allclose(gradient, weights @ phi - crf.joint_feature(x, y_true))
            assert expected_loss == pytest.approx(
                weights @ task_losses(crf, Y[order], y_true))


@pytest.mark.parametrize("params", [dict(), dict(directed=True), dict(edge_features=True),
                                    dict(edge_features=True, directed=True, normalize_loss=True)])
def test_label_space_packs_the_joint_feature_and_the_oracle(params):
    """``GraphProblem.label_space()``: ``vec(X^T S(y)) (+) q(y)`` is ``joint_feature`` for every
    parametrisation (undirected edges both ways at half weight), the label-space loss is the
    structure's, and the batched compiled oracle, calling the structure's oracle from Python
    on two threads, returns the values and labelings of ``_decode``."""
    from sklearn_ssvm._kernels.labelings import add_stats
    from sklearn_ssvm.solvers._common import kernel_threads
    rng = np.random.default_rng(11)
    X, Y = [], []
    for n_nodes in (5, 6, 4):
        features, edges = random_graph(rng, n_nodes, 3, n_chords=2)
        X.append((features, edges) + ((rng.random((len(edges), 2)),)
                                      if params.get("edge_features") else ()))
        Y.append(rng.integers(3, size=n_nodes))
    crf = GraphCRF(n_states=3, **params)
    graphs = crf.prepare(X, Y)
    problem = graphs.label_space()
    assert problem.n_params == crf.n_params
    for i, x in enumerate(X):
        t0, t1 = problem.tok_offsets[i], problem.tok_offsets[i + 1]
        for y in rng.integers(3, size=(4, t1 - t0)):
            S, q = np.zeros((t1 - t0, 3)), np.zeros(problem.n_pair)
            add_stats(problem.kind, y.astype(np.int32), 1.0, S, q, problem.example_graph(i))
            phi = np.concatenate([(x[0].T @ S).ravel(), q])
            np.testing.assert_allclose(phi, crf.joint_feature(x, y), atol=1e-12)
            assert problem.losses(np.concatenate(
                [y if j == i else Y[j] for j in range(len(X))]).astype(np.int32))[i] == \
                pytest.approx(crf.loss(Y[i], y))
    coef = rng.normal(size=crf.n_params)
    for augment in (True, False):
        with kernel_threads(2):
            labelings, values, gold, _ = problem.run_oracle(coef, augment)
        for i in range(len(X)):
            y, value, true_score, _ = crf._decode(graphs.examples[i], coef, augment)
            assert values[i] == pytest.approx(value, abs=1e-9)
            np.testing.assert_array_equal(
                labelings[problem.node_offsets[i]:problem.node_offsets[i + 1]], y)
            if augment:
                assert gold[i] == pytest.approx(true_score, abs=1e-9)
    assert sum(graphs.oracle_calls.values()) == 2 * len(X)


def test_one_node_graphs_step_as_multiclass():
    """Multiclass data as one-node graphs: the pass makes the multiclass pass's steps (same
    blocks, same line searches), cache hits and weighted averages, so both reach the same
    point. (Pairwise steps only to within the certified gaps: near the optimum the active
    labelings tie, and the two oracles' rounding breaks the ties either way.)"""
    rng = np.random.default_rng(5)
    n, d, S = 30, 4, 3
    X = rng.normal(size=(n, d))
    y = rng.integers(S, size=n)
    X[np.arange(n), y] += 1.0
    graphs = [(X[i:i + 1], np.zeros((0, 2), dtype=np.int64)) for i in range(n)]
    for step, cache, averaging in [("fw", False, False), ("fw", True, False),
                                   ("fw", False, True), ("pairwise", False, False),
                                   ("away", True, False)]:
        params = dict(alpha=0.05, tol=1e-9, max_iter=30, step=step, cache=cache,
                      averaging=averaging, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = BCFWStructuredSVM(MulticlassSVM(fit_intercept=False), **params).fit(X, y)
            graph = BCFWStructuredSVM(GraphCRF(n_states=S), **params).fit(
                graphs, [y[i:i + 1] for i in range(n)])
        if step == "pairwise":
            assert abs(graph.primal_objective_ - compiled.primal_objective_) <= max(
                graph.duality_gap_, compiled.duality_gap_)
            continue
        assert np.allclose(graph.coef_[:d * S], compiled.coef_, atol=1e-10)
        assert graph.duality_gap_ == pytest.approx(compiled.duality_gap_, rel=1e-8)
        assert graph.n_cache_hits_ == compiled.n_cache_hits_


def segmentation_data(rng, n, S, shape=(3, 3), noise=0.9):
    X, Y = [], []
    for _ in range(n):
        y = rng.integers(S, size=shape)
        y[:, 1:] = np.where(rng.random((shape[0], shape[1] - 1)) < 0.6, y[:, :1], y[:, 1:])
        X.append(grid_graph(np.eye(S)[y] + noise * rng.normal(size=shape + (S,))))
        Y.append(y.ravel())
    return X, Y


def test_three_estimators_agree_within_their_certified_gaps():
    """BCFW (plain, pairwise, cached), BMRM and Casimir-SVRG (top-K) on one small GraphCRF
    problem with exact oracles: every certified interval ``[primal - gap, primal]`` holds
    BMRM's optimum."""
    rng = np.random.default_rng(6)
    X, Y = segmentation_data(rng, 8, 3, shape=(2, 3))
    alpha = 0.5
    reference = BMRMStructuredSVM(GraphCRF(), alpha=alpha, tol=1e-9).fit(X, Y)
    f_star = reference.primal_objective_
    assert reference.gap_certified_ and reference.oracle_calls_.keys() == {"BruteForceMAP"}
    fits = [BCFWStructuredSVM(GraphCRF(), alpha=alpha, tol=1e-3, max_iter=2000, step=step,
                              cache=cache, random_state=0) for step, cache in
            [("fw", False), ("pairwise", False), ("fw", True)]]
    fits.append(SmoothSSVMClassifier(GraphCRF(), alpha=alpha, top_k=5, max_iter=15,
                                     random_state=0))
    for est in fits:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, Y)
        assert est.gap_certified_
        primal = getattr(est, "primal_objective_", getattr(est, "objective_", None))
        assert primal == pytest.approx(est.primal_objective(X, Y), abs=1e-9)
        assert primal - est.duality_gap_ <= f_star + 1e-9 <= primal + 1e-9
    assert all(est.converged_ for est in fits[:3])


def test_default_alpha_follows_the_feature_scale():
    """``alpha=None`` on graphs is ``1e-4 R^2`` per unit of the loss scale, ``R^2`` the mean
    bound ``2 ||F||^2 + 2 ||sum_e E_e||^2`` on ``||phi(x, y) - phi(x, y')||^2``: features
    scaled by ``s`` scale it by ``s^2``, the same model (``P(w / s)`` on ``s X`` at ``s^2``
    alpha is ``P(w)``), as every estimator of the objective takes it."""
    rng = np.random.default_rng(11)
    X, Y = segmentation_data(rng, 6, 3, shape=(2, 3))
    X = [(f, e, np.abs(rng.normal(size=(len(e), 2)))) for f, e in X]
    radius = np.mean([2 * np.sum(f ** 2) + 2 * np.sum(ef.sum(axis=0) ** 2) for f, _, ef in X])
    crf = GraphCRF(edge_features=True)
    assert crf.prepare(X, Y).default_alpha() == pytest.approx(1e-4 * radius / 6)
    scaled = [(10 * f, e, 10 * ef) for f, e, ef in X]
    fits = [BMRMStructuredSVM(GraphCRF(edge_features=True), tol=1e-6).fit(data, Y)
            for data in (X, scaled)]
    assert fits[0].alpha_ == pytest.approx(1e-4 * radius / 6)
    assert fits[1].alpha_ == pytest.approx(100 * fits[0].alpha_)
    assert all(est.converged_ and est.gap_certified_ for est in fits)
    assert abs(fits[1].primal_objective_ - fits[0].primal_objective_) <= \
        fits[0].duality_gap_ + fits[1].duality_gap_ + 1e-9
    assert BCFWStructuredSVM(GraphCRF(edge_features=True), max_iter=2).fit(X, Y).alpha_ == \
        fits[0].alpha_


def test_default_budget_lets_few_graphs_stop_by_themselves():
    """``max_iter=None`` allows 200 passes or 100,000 block steps (``pass_budget``): three
    5 x 5 binary images need thousands of passes (some 20,000 steps) at the defaults, and
    stop by themselves with a certified gap, where 200 passes stop short with a
    ``ConvergenceWarning``; from 500 examples on the budget is 200 passes."""
    X, Y = make_segmentation(3, shape=(5, 5), n_states=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = BCFWStructuredSVM(GraphCRF(edge_features=True), random_state=0).fit(X, Y)
    assert est.max_iter_ == pass_budget(3) == 33334
    assert est.converged_ and est.gap_certified_ and 200 < est.n_iter_ < est.max_iter_
    assert est.duality_gap_ - est.relaxation_gap_ <= est.tol * est.loss_scale_
    with pytest.warns(ConvergenceWarning, match="max_iter=200"):
        short = BCFWStructuredSVM(GraphCRF(edge_features=True), random_state=0,
                                  max_iter=200).fit(X, Y)
    assert short.n_iter_ == short.max_iter_ == 200 and not short.converged_
    assert pass_budget(499) == 201 and pass_budget(500) == pass_budget(10 ** 5) == 200


def test_large_graphs_step_without_gram_matrices():
    """Trees of 30-40 nodes with 2 features store no node Gram matrix (it would hold T^2
    numbers for 2 T of features): BCFW's line searches form ``X_i^T D`` instead, on dense,
    pairwise and cached steps, also with active sets capped below their blocks' supports, and
    every fit's certified interval holds BMRM's optimum (whose steps need no Gram matrix); a
    small example beside them keeps its Gram matrix."""
    rng = np.random.default_rng(8)
    X = [random_tree(rng, n, 2) for n in (30, 40, 35, 4)]
    Y = [(x[0][:, 0] > 0).astype(int) + (x[0][:, 1] > 0.8) for x in X]
    problem = GraphCRF().prepare(X, Y).label_space()
    _, gram_off = problem.gram
    assert list(np.diff(gram_off)) == [0, 0, 0, 16]
    alpha = 0.05
    reference = BMRMStructuredSVM(GraphCRF(), alpha=alpha, tol=1e-9).fit(X, Y)
    f_star = reference.primal_objective_
    # pairwise steps without the cache at small caps: a corner meeting a full active set waits
    # while the set steps within itself (forcing the lightest atom's weight onto the corner
    # diverged here at caps 8 and 16: duality gaps of 30 and 17 after 3000 passes)
    for step, cache, cap in [("fw", False, 64), ("pairwise", False, None),
                             ("pairwise", False, 8), ("pairwise", False, 16),
                             ("pairwise", True, 64)]:
        est = BCFWStructuredSVM(GraphCRF(), alpha=alpha, tol=1e-3, max_iter=3000, step=step,
                                cache=cache, max_active=cap, random_state=0).fit(X, Y)
        assert est.converged_ and est.oracle_calls_.keys() <= {"TreeMAP", "BruteForceMAP"}
        primal = est.primal_objective_
        assert primal - est.duality_gap_ <= f_star + 1e-9 <= primal + 1e-9


def test_positive_pairwise_keeps_graph_cuts_exact_on_binary_grids():
    """``coef_bounds="positive_pairwise"``: the fitted tables reward agreement, so every
    binary oracle call is one exact graph cut and the gap is certified."""
    pytest.importorskip("maxflow")
    rng = np.random.default_rng(7)
    X, Y = segmentation_data(rng, 12, 2, shape=(5, 5), noise=1.2)  # 2**25: no enumeration
    # alpha on the scale of the normalised loss: 1 / 25 per pixel
    est = BCFWStructuredSVM(GraphCRF(), alpha=1.0, tol=1e-3, max_iter=1000,
                            coef_bounds="positive_pairwise", random_state=0).fit(X, Y)
    table = est.coef_[-4:].reshape(2, 2)
    assert table[0, 0] >= 0 and table[1, 1] >= 0 and table[0, 1] <= 0 and table[1, 0] <= 0
    assert est.oracle_calls_.keys() == {"GraphCutMAP"}
    assert est.gap_certified_ and est.converged_
    assert est.score(X, Y) > 0.7


def test_approximate_oracle_is_not_certified():
    rng = np.random.default_rng(8)
    X, Y = segmentation_data(rng, 6, 3)
    with pytest.warns(UserWarning, match="not a certificate"):
        est = BCFWStructuredSVM(GraphCRF(inference="icm"), alpha=0.1, max_iter=5,
                                tol=0.0, random_state=0).fit(X, Y)
    assert not est.gap_certified_ and est.oracle_calls_.keys() == {"ICMMAP"}
    with pytest.warns(UserWarning, match="not a certificate"):  # an oracle instance
        est = BMRMStructuredSVM(GraphCRF(inference=ICMMAP(max_sweeps=3)), alpha=0.1,
                                max_iter=3).fit(X, Y)
    assert not est.gap_certified_


def test_certificate_values_bound_the_maxima():
    """On frustrated models (neighbours pushed apart around odd cycles: the local polytope
    relaxation is loose) TRW-S's labelings fall short of the maxima; the values of a duality
    gap's pass are its bounds there, never below the enumerated maxima, and the calls are
    counted as answered by the bound."""
    from sklearn_ssvm.solvers.bcfw import DualState
    rng = np.random.default_rng(21)
    X = [random_graph(rng, 7, 2, n_chords=2) for _ in range(6)]
    Y = [rng.integers(2, size=7) for _ in range(6)]
    crf = GraphCRF(n_states=2, inference="trws")
    graphs = crf.prepare(X, Y)
    problem = graphs.label_space()
    state = DualState.at_labels(problem)
    coef = 0.3 * rng.normal(size=crf.n_params)
    coef[-4:] = [-3.0, 3.0, 3.0, -3.0]
    _, found, _, _ = problem.run_oracle(coef, True, state.M, state.Q)
    bounded = problem.upper_values(found)
    _, labelled, _, _ = problem.run_oracle(coef, True)
    maxima = np.array([enumerated(crf, x, y, coef, True)[1].max() for x, y in zip(X, Y)])
    assert np.all(bounded >= maxima - 1e-9) and np.all(labelled <= maxima + 1e-9)
    assert np.any(labelled < maxima - 1e-6)
    assert graphs.oracle_calls["TRWSMAP (bound)"] > 0 and graphs.certified


def test_bcfw_certifies_with_the_trws_bound():
    """BCFW with TRW-S alone: where a labeling does not meet TRW-S's bound the duality gap takes
    the bound instead of the labeling's score, so the reported gap is a certificate: it bounds
    the exact gap (the primal by enumeration minus BCFW's dual), and the reported primal bounds
    the exact one. Frustrated pairwise weights make some relaxations loose."""
    rng = np.random.default_rng(13)
    X, Y = segmentation_data(rng, 10, 3, noise=1.5)
    for inference in ("trws", "auto"):
        est = BCFWStructuredSVM(GraphCRF(inference=inference), alpha=0.02, max_iter=20, tol=0.0,
                                random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, Y)
        assert est.gap_certified_
        assert set(est.oracle_calls_) <= {"TRWSMAP", "TRWSMAP (bound)", "TRWSMAP (step)",
                                          "BruteForceMAP"}
        est.structure_.inference = "brute_force"
        exact = est.primal_objective(X, Y)
        assert exact <= est.primal_objective_ + 1e-9
        assert exact - est.dual_objective_ <= est.duality_gap_ + 1e-9


def odd_cycles(rng, n):
    """Cycles of 3, 5 or 7 nodes labelled alternately, their node features uninformative: the
    learned table pushes neighbours apart, which no labeling of an odd cycle can do on every
    edge, so the local polytope relaxation stays loose at the optimum."""
    X, Y = [], []
    for _ in range(n):
        m = int(rng.choice([3, 5, 7]))
        edges = np.array([(v, (v + 1) % m) for v in range(m)])
        X.append((np.c_[np.ones(m), 0.3 * rng.normal(size=(m, 2))], edges))
        Y.append(np.arange(m) % 2)
    return X, Y


def test_the_certificate_splits_at_the_best_labelings_known():
    """Block by block, the gap is the relaxation's part (TRW-S's bound over the best value known:
    the labeling found, the block's atoms, its mean) plus the closable part, both non-negative,
    and the exact block gap (enumerated maxima) lies between the closable part and the whole;
    the relaxation's part bounds how far the reported primal overstates the exact one."""
    from sklearn_ssvm.solvers.bcfw import certificate, weights
    X, Y = odd_cycles(np.random.default_rng(3), 12)
    est = BCFWStructuredSVM(GraphCRF(inference="trws"), alpha=0.05, max_iter=4, tol=0.0,
                            warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, Y)
    crf = est.structure_
    problem = crf.prepare(X, Y).label_space()
    state, atoms = est.dual_state_, est.active_sets_
    v = weights(problem, state, est.alpha_)
    cert = certificate(problem, state, v, est.alpha_, atoms=atoms)
    closable = cert.block_gaps - cert.relaxation_blocks
    assert cert.relaxation > 0 and cert.closable == pytest.approx(closable.sum())
    assert np.all(cert.relaxation_blocks >= 0) and np.all(closable >= -1e-12)
    n = len(X)
    exact, upper = np.empty(n), 0.0
    for i, (x, y) in enumerate(zip(X, Y)):
        labelings, values = enumerated(crf, x, y, cert.coef, True)
        rows = slice(problem.node_offsets[i], problem.node_offsets[i + 1])
        mean = 0.0
        for k in range(atoms.count[i]):  # E_alpha H_i over the block's atoms
            hit = np.flatnonzero((labelings == atoms.labels[rows, k]).all(axis=1))
            mean += atoms.weights[i, k] * values[hit[0]]
        exact[i] = (values.max() - mean) / n
        upper += cert.block_gaps[i] - exact[i]  # the bound's excess over the maximum, / n
    assert np.all(closable <= exact + 1e-9) and np.all(exact <= cert.block_gaps + 1e-9)
    assert np.any(exact < cert.block_gaps - 1e-6)  # a bound above its maximum
    assert upper <= cert.relaxation + 1e-9


def test_loopy_fits_stop_where_passes_cannot_close_the_gap():
    """On odd cycles the relaxation leaves a part of the gap above ``tol`` that no pass closes:
    the fit stops by itself once the rest is below ``tol`` (it used to run ``max_iter``), its
    true gap (enumerated) near the exact oracle's fit, and without a warning."""
    X, Y = odd_cycles(np.random.default_rng(0), 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = BCFWStructuredSVM(GraphCRF(inference="trws"), max_iter=300,
                                random_state=0).fit(X, Y)
    tol = est.tol * est.loss_scale_
    assert est.converged_ and est.n_iter_ < 100 and est.gap_certified_
    assert est.relaxation_gap_ > tol and est.duality_gap_ > 2 * tol
    assert est.duality_gap_ - est.relaxation_gap_ <= tol
    assert est.history_[-1]["relaxation_gap"] == est.relaxation_gap_
    est.structure_.set_params(inference="brute_force")
    exact_gap = est.primal_objective(X, Y) - est.dual_objective_
    assert est.duality_gap_ - est.relaxation_gap_ - 1e-9 <= exact_gap <= est.duality_gap_ + 1e-9
    assert exact_gap <= 2 * tol
    exact = BCFWStructuredSVM(GraphCRF(inference="brute_force"), random_state=0).fit(X, Y)
    assert exact.converged_ and exact.relaxation_gap_ == 0.0


def python_oracles(crf, graphs, problem, coef, y_out):
    """Per example of BCFW's label space: the compiled oracle's labeling (in ``y_out``) and
    ``label_oracle``'s labeling and bound from Python at the same weights."""
    W, theta = problem.split_coef(coef)
    U = problem.token_matrix() @ W
    for i, example in enumerate(graphs.examples):
        t0, t1 = problem.tok_offsets[i], problem.tok_offsets[i + 1]
        labeling, bound, _ = crf.label_oracle(example, U[t0:t1], theta, True)
        yield y_out[problem.node_offsets[i]:problem.node_offsets[i + 1]], labeling, bound


@pytest.mark.parametrize("directed", [False, True])
def test_compiled_trws_is_the_python_oracle(directed):
    """BCFW's label space decodes TRW-S examples in compiled code: from the same (fresh)
    messages it returns the labelings and bounds of ``TRWSMAP`` called from Python on the
    structure's own potentials (parallel and reversed edges merged, undirected tables
    symmetrised), values that score the labelings, bounds never below the enumerated maxima.
    The checks stop at ``bound_tol``, here the Python calls' ``tol``."""
    from sklearn_ssvm.solvers.bcfw import DualState
    rng = np.random.default_rng(31)
    X = []
    for _ in range(6):
        features, edges = random_graph(rng, 7, 2, n_chords=3)
        X.append((features, edges, rng.normal(size=(len(edges), 2))))
    Y = [rng.integers(3, size=7) for _ in range(6)]
    crf = GraphCRF(n_states=3, inference=TRWSMAP(bound_tol=1e-6), edge_features=True,
                   directed=directed)
    graphs = crf.prepare(X, Y)
    problem = graphs.label_space()
    assert np.all(graphs.compiled_oracles.code == 1)
    for scale in (0.3, 3.0):  # weak and frustrated couplings
        coef = scale * rng.normal(size=crf.n_params)
        for i, x in enumerate(X):
            graphs.examples[i].oracle = None  # fresh messages on both sides
        graphs.compiled_oracles.logm[:] = 0.0
        state = DualState.at_labels(problem)
        y_out, values, gold, _ = problem.run_oracle(coef, True, state.M, state.Q)
        bounds = graphs.compiled_oracles.bounds.copy()
        python = python_oracles(crf, graphs, problem, coef, y_out)
        for i, (x, y, (ours, labeling, bound)) in enumerate(zip(X, Y, python)):
            np.testing.assert_array_equal(ours, labeling)
            np.testing.assert_allclose(bounds[i], bound, rtol=1e-9, atol=1e-9)
            labelings, scores = enumerated(crf, x, y, coef, True)
            at = np.flatnonzero((labelings == ours).all(axis=1))[0]
            assert values[i] >= scores[at] - 1e-9  # the bound where the labeling falls short
            assert bounds[i] >= scores.max() - 1e-9 and scores[at] <= bounds[i] + 1e-9
            assert gold[i] == pytest.approx(independent_score(crf, x, y, coef))


def test_checks_bound_tolerance_loosens_the_bound_only():
    """The checks' TRW-S stops at ``bound_tol``: from the same fresh messages a looser one stops
    earlier, at a bound never below a tighter one's (TRW-S never raises its bound) nor below
    the enumerated maximum."""
    from sklearn_ssvm.solvers.bcfw import DualState
    rng = np.random.default_rng(32)
    X = [random_graph(rng, 8, 2, n_chords=6) for _ in range(6)]  # frustrated: not all tight
    Y = [rng.integers(3, size=8) for _ in range(6)]
    coef = 3.0 * rng.normal(size=GraphCRF(n_states=3).fit(X, Y).n_params)
    bounds = {}
    for bound_tol in (1e-2, 1e-6):
        crf = GraphCRF(n_states=3, inference=TRWSMAP(bound_tol=bound_tol))
        graphs = crf.prepare(X, Y)
        problem = graphs.label_space()
        state = DualState.at_labels(problem)
        problem.run_oracle(coef, True, state.M, state.Q)
        bounds[bound_tol] = graphs.compiled_oracles.bounds.copy()
    maxima = [enumerated(crf, x, y, coef, True)[1].max() for x, y in zip(X, Y)]
    assert np.all(bounds[1e-6] >= np.array(maxima) - 1e-9)
    assert np.all(bounds[1e-2] >= bounds[1e-6] - 1e-12)
    assert np.any(bounds[1e-2] > bounds[1e-6] + 1e-6)  # the tolerance is used


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("inference, S, code", [("expansion", 3, 3), ("icm", 3, 4),
                                                 ("auto", 2, 2)])
def test_compiled_cuts_and_moves_are_the_python_oracles(inference, S, code, directed):
    """BCFW's label space runs alpha-expansion, ICM and ``"auto"``'s binary graph cut in
    compiled code: the labelings of the structure's oracles called from Python, values that
    score them; the graph cut's are the enumerated maxima, and its calls whose tables are not
    submodular go to the Python oracle (the exact one ``"auto"`` chooses)."""
    pytest.importorskip("maxflow")  # "auto" cuts only where PyMaxflow cuts from Python
    rng = np.random.default_rng(34)
    X = []
    for _ in range(5):
        features, edges = random_graph(rng, 11 if S == 2 else 7, 2, n_chords=3)
        X.append((features, edges, np.abs(rng.normal(size=(len(edges), 2)))))
    Y = [rng.integers(S, size=len(x[0])) for x in X]
    crf = GraphCRF(n_states=S, inference=inference, edge_features=True, directed=directed)
    graphs = crf.prepare(X, Y)
    problem = graphs.label_space()
    np.testing.assert_array_equal(graphs.compiled_oracles.code, code)
    for attraction in (2.0, -2.0):  # submodular tables, then not (binary)
        coef = rng.normal(size=crf.n_params)
        coef[-2 * S * S:] += attraction * np.tile(np.eye(S).ravel(), 2)
        y_out, values, _, _ = problem.run_oracle(coef, True)
        python = python_oracles(crf, graphs, problem, coef, y_out)
        for i, (x, y, (ours, labeling, _)) in enumerate(zip(X, Y, python)):
            labelings, scores = enumerated(crf, x, y, coef, True)
            at = np.flatnonzero((labelings == ours).all(axis=1))[0]
            assert values[i] == pytest.approx(scores[at], abs=1e-9)
            if inference == "auto":
                assert values[i] == pytest.approx(scores.max(), abs=1e-9)
            else:
                np.testing.assert_array_equal(ours, labeling)
    calls = graphs.oracle_calls
    if inference == "auto":
        assert calls["GraphCutMAP"] == 5 and sum(calls.values()) == 10  # 5 back in Python
        assert graphs.certified
    else:
        assert calls == {{"expansion": "AlphaExpansionMAP", "icm": "ICMMAP"}[inference]: 10}
        assert not graphs.certified


def test_auto_compiles_trws_beside_python_oracles():
    """``"auto"`` decodes forests and small models from Python (tree max-product, enumeration)
    and large loopy ones by compiled TRW-S in the same fit: the steps' calls are counted
    apart, and the gap stays certified."""
    rng = np.random.default_rng(32)
    X, Y = segmentation_data(rng, 4, 3, shape=(4, 4))  # 3**16 labelings: TRW-S
    X += [random_tree(rng, 16, 3) for _ in range(2)]
    Y += [rng.integers(3, size=16) for _ in range(2)]
    crf = GraphCRF(n_states=3)
    graphs = crf.prepare(X, Y)
    np.testing.assert_array_equal(graphs.compiled_oracles.code, [1, 1, 1, 1, 0, 0])
    est = BCFWStructuredSVM(GraphCRF(n_states=3), alpha=0.05, max_iter=10,
                            random_state=0).fit(X, Y)
    calls = est.oracle_calls_
    assert {"TreeMAP", "TRWSMAP (step)"} <= set(calls) <= {
        "TreeMAP", "TRWSMAP", "TRWSMAP (bound)", "TRWSMAP (step)"}
    assert calls["TRWSMAP"] + calls.get("TRWSMAP (bound)", 0) > 0
    assert est.gap_certified_ and est.n_cache_hits_ > 0  # "auto" caches on graphs


def enumerated_marginals(crf, x, coef, temperature):
    labelings, scores = enumerated(crf, x, None, coef, False)
    p = np.exp((scores - scores.max()) / temperature)
    p /= p.sum()
    return np.stack([np.bincount(labelings[:, v], weights=p, minlength=crf.n_states_)
                     for v in range(labelings.shape[1])])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_predict_marginals_on_graphs():
    """``predict_marginals`` on ``GraphCRF``: TRW's marginals, exact on trees (against
    enumeration), on graphs with cycles locally consistent distributions close to the exact
    marginals at weak couplings; a temperature that is not a finite number > 0 is refused."""
    rng = np.random.default_rng(33)
    trees = [random_tree(rng, 6, 2) for _ in range(3)]
    loopy = [random_graph(rng, 6, 2, n_chords=2) for _ in range(3)]
    Y = [rng.integers(3, size=6) for _ in range(6)]
    est = BCFWStructuredSVM(GraphCRF(n_states=3), alpha=0.1, max_iter=5,
                            random_state=0).fit(trees + loopy, Y)
    crf = est.structure_
    for temperature in (1.0, 0.5):
        marginals = est.predict_marginals(trees + loopy, temperature=temperature)
        for k, (x, m) in enumerate(zip(trees + loopy, marginals)):
            exact = enumerated_marginals(crf, x, est.coef_, temperature)
            assert m.shape == (6, 3) and np.allclose(m.sum(axis=1), 1.0) and np.all(m >= 0)
            if k < 3:
                np.testing.assert_allclose(m, exact, atol=1e-6)
            else:
                assert np.abs(m - exact).max() < 0.1
    weak = 0.2 * est.coef_
    loopy_exact = [enumerated_marginals(crf, x, weak, 1.0) for x in loopy]
    loopy_trw = crf.marginals(loopy, weak)
    assert max(np.abs(a - b).max() for a, b in zip(loopy_exact, loopy_trw)) < 0.02
    for bad in (0.0, -1.0, np.inf, np.nan, None, "1"):
        with pytest.raises(ValueError, match="temperature"):
            est.predict_marginals(trees, temperature=bad)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_predictions_run_no_integer_program_and_say_which_are_exact(monkeypatch):
    """``"auto"`` predicts loopy models of many labelings with TRW-S alone (integer programs
    made predictions 20x slower on the snakes); ``decode_with_bounds`` and
    ``certify_predictions`` flag each labeling, checked against integer programming: an exact
    labeling scores the optimum, an inexact one's bound lies above it. Frustrated 3-label
    models of 8-neighbour grids (3**20 labelings), with weak node features on half of them (the
    relaxation is loose) and strong ones on the others (it is tight)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from sklearn_ssvm.inspection import certify_predictions
    from sklearn_ssvm.marginals import MILPMAP

    rng = np.random.default_rng(0)
    X = [grid_graph(rng.normal(size=(4, 5, 2)) * (8 if i % 2 else 0.2), neighborhood=8)
         for i in range(8)]
    Y = [rng.integers(3, size=20) for _ in X]
    coef = np.r_[rng.normal(size=6), (0.1 * rng.normal(size=(3, 3)) - np.eye(3)).ravel()]
    optimum = GraphCRF(n_states=3, inference="milp").fit(X, Y).decode_with_bounds(X, coef)
    assert optimum[3].all() and np.array_equal(optimum[1], optimum[2])

    def refused(self, *args, **kwargs):
        raise AssertionError("a prediction ran an integer program")

    monkeypatch.setattr(MILPMAP, "__call__", refused)
    crf = GraphCRF(n_states=3).fit(X, Y)
    labels, scores, bounds, exact = crf.decode_with_bounds(X, coef)
    assert 0 < exact.sum() < len(X)
    for x, y, score in zip(X, labels, scores):
        assert score == pytest.approx(independent_score(crf, x, y, coef))
    np.testing.assert_allclose(scores[exact], optimum[1][exact], rtol=1e-9)
    assert np.all(scores <= optimum[1] + 1e-9) and np.all(bounds >= optimum[1] - 1e-9)
    assert np.any(scores[~exact] < optimum[1][~exact] - 1e-6)
    assert all(np.array_equal(a, b) for a, b in zip(crf.predict(X, coef), labels))
    np.testing.assert_array_equal(crf.decision_function(X, coef), scores)

    model = make_pipeline(FunctionTransformer(), BCFWStructuredSVM(
        GraphCRF(inference=TRWSMAP()), max_iter=2, random_state=0)).fit(X, Y)
    model[-1].structure_.inference = "auto"
    report = certify_predictions(model, X)
    assert all(np.array_equal(a, b) for a, b in zip(report.labels, model.predict(X)))
    assert report.exact.dtype == bool and np.all(report.upper_bounds >= report.scores - 1e-9)
    chain = BCFWStructuredSVM(ChainCRF(), max_iter=2).fit([np.eye(3)], [np.arange(3)])
    with pytest.raises(ValueError, match="needs a GraphCRF"):
        certify_predictions(chain, [np.eye(3)])


def test_labels_prediction_and_score():
    rng = np.random.default_rng(9)
    X, Y = segmentation_data(rng, 10, 3)
    names = np.array(["sky", "grass", "road"])
    Y_named = [names[y] for y in Y]
    est = BMRMStructuredSVM(GraphCRF(), alpha=0.01).fit(X, Y_named)
    assert list(est.classes_) == sorted(names)
    pred = est.predict(X)
    assert all(p.dtype.kind == "U" and set(p) <= set(names) for p in pred)
    assert est.score(X, Y_named) == pytest.approx(
        np.mean([np.mean(p == y) for p, y in zip(pred, Y_named)]))
    unseen = [np.where(y == "sky", "sea", y) for y in Y_named]  # unseen labels count as wrong
    assert est.score(X, unseen) < est.score(X, Y_named)
    assert est.decision_function(X).shape == (10,)
    fixed = GraphCRF(labels=["road", "sky", "grass"]).fit(X, Y_named)
    assert list(fixed.classes_) == ["road", "sky", "grass"]


def test_grid_graph():
    features, edges = grid_graph(np.zeros((3, 4, 2)))
    assert features.shape == (12, 2) and len(edges) == 3 * 3 + 2 * 4
    assert len(grid_graph(np.zeros((3, 4)), neighborhood=8)[1]) == 17 + 2 * 2 * 3
    assert np.all(edges[:, 0] < edges[:, 1])
    with pytest.raises(ValueError, match="neighborhood"):
        grid_graph(np.zeros((2, 2)), neighborhood=6)


@pytest.mark.parametrize("X, Y, match", [
    ([(np.zeros((3, 2)), np.array([[0, 0]]))], [np.array([0, 1, 1])], "self loop"),
    ([(np.zeros((3, 2)), np.array([[0, 3]]))], [np.array([0, 1, 1])], "out of range"),
    ([(np.zeros((3, 2)), np.array([[0.0, 1.0]]))], [np.array([0, 1, 1])], "integer array"),
    ([(np.full((3, 2), np.nan), np.array([[0, 1]]))], [np.array([0, 1, 1])], "NaN"),
    ([(np.zeros((3, 2)), np.array([[0, 1]]))], [np.array([0, 1])], "one label per node"),
    ([(np.zeros((3, 2)),)], [np.array([0, 1, 1])], "tuple"),
    ([(np.zeros((3, 2)), np.array([[0, 1]]))], [np.zeros(3, int)], "single label"),
    ([(np.zeros((3, 2)) + 1j, np.array([[0, 1]]))], [np.array([0, 1, 1])], "complex data"),
])
def test_invalid_examples(X, Y, match):
    with pytest.raises(ValueError, match=match):
        GraphCRF().fit(X, Y)


def test_complex_features_are_refused_by_every_estimator():
    """Complex node or edge features were cast to their real parts with a warning only."""
    from sklearn_ssvm.structures.graph import BinaryGraphCRF

    x = grid3(np.random.default_rng(9), 2)
    y = np.array([0, 1] * 4 + [0])
    complex_nodes = (x[0] + 1j, x[1])
    complex_edges = (x[0], x[1], np.ones((len(x[1]), 1)) + 1j)
    for make in (BCFWStructuredSVM, BMRMStructuredSVM, SmoothSSVMClassifier):
        with pytest.raises(ValueError, match="complex data not supported in node_features"):
            make(GraphCRF(), max_iter=2).fit([complex_nodes], [y])
        with pytest.raises(ValueError, match="complex data not supported in edge_features"):
            make(GraphCRF(edge_features=True), max_iter=2).fit([complex_edges], [y])
    with pytest.raises(ValueError, match="complex data not supported in node_features"):
        SmoothSSVMClassifier(BinaryGraphCRF(), max_iter=2).fit([complex_nodes], [y])


def test_invalid_parameters():
    x = (np.zeros((3, 2)), np.array([[0, 1]]))
    with pytest.raises(ValueError, match="n_states"):
        GraphCRF(n_states=1).fit([x], [np.zeros(3, int)])
    with pytest.raises(ValueError, match="Unknown map_oracle"):
        GraphCRF(inference="magic").fit([x], [np.zeros(3, int)])
    with pytest.raises(ValueError, match="labels outside"):
        GraphCRF(n_states=2).fit([x], [np.array([0, 1, 2])])
    with pytest.raises(ValueError, match="edge_features"):
        GraphCRF(edge_features=True).fit([x + (np.zeros((2, 1)),)], [np.array([0, 1, 1])])
    crf = GraphCRF().fit([x], [np.array([0, 1, 1])])
    with pytest.raises(ValueError, match="node features"):
        crf.pack([(np.zeros((3, 4)), np.array([[0, 1]]))])


def test_scikit_learn_manners():
    """GridSearchCV, the CV estimator, warm starts (Prop. 1 rescaling on dense dual states) and
    pickling (the certified path on graphs: ``test_path.py``)."""
    import pickle

    from sklearn.model_selection import GridSearchCV

    from sklearn_ssvm import BCFWStructuredSVMCV
    rng = np.random.default_rng(10)
    X, Y = segmentation_data(rng, 12, 3)
    search = GridSearchCV(BMRMStructuredSVM(GraphCRF()), {"alpha": [1.0, 0.1]}, cv=3)
    assert search.fit(X, Y).best_params_["alpha"] in (1.0, 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = BCFWStructuredSVMCV(GraphCRF(), alphas=[1.0, 0.1], cv=3, max_iter=10).fit(X, Y)
        assert cv.alpha_ in (1.0, 0.1)
        est = BCFWStructuredSVM(GraphCRF(), alpha=0.5, max_iter=200, tol=1e-3,
                                warm_start=True, step="pairwise", random_state=0).fit(X, Y)
        cold = BCFWStructuredSVM(GraphCRF(), alpha=0.2, max_iter=200, tol=1e-3,
                                 step="pairwise", random_state=0).fit(X, Y)
        est.set_params(alpha=0.2).fit(X, Y)
    # the certified intervals of the warm and the cold fit overlap
    assert est.dual_objective_ <= cold.primal_objective_ + 1e-9
    assert cold.dual_objective_ <= est.primal_objective_ + 1e-9
    assert est.duality_gap_ < 0.05
    clone = pickle.loads(pickle.dumps(est))
    assert all(np.array_equal(a, b) for a, b in zip(clone.predict(X), est.predict(X)))


def test_entropy_smoothing_through_trw():
    """``smoothing="entropy"``: TRW's bound ``mu Phi_TRW(theta / mu)`` is the exact smoothed
    hinge on trees (value, gradient and expected loss against enumeration) and an upper bound
    on loopy graphs; only the forest calls count as exact."""
    from scipy.special import logsumexp

    from sklearn_ssvm._kernels.smoothed import ENTROPY
    from sklearn_ssvm.solvers.smooth import Smoothing
    rng = np.random.default_rng(11)
    mu = 0.7
    for tree in (True, False):
        for S in (2, 3):
            x = random_tree(rng, 6, 2) if tree else random_graph(rng, 6, 2)
            crf, y_true, coef = fitted(rng, x, S)
            example = crf.pack([x], [y_true]).examples[0]
            value, gradient, expected_loss, (name, exact) = crf._smoothed(
                example, coef, Smoothing(ENTROPY, 1, mu))
            Y, values = enumerated(crf, x, y_true, coef, True)
            gold = independent_score(crf, x, y_true, coef)
            smoothed = mu * logsumexp(values / mu) - gold
            assert name == "TRW" and exact == tree
            assert value >= smoothed - 1e-9
            if tree:
                q = np.exp((values - values.max()) / mu)
                q /= q.sum()
                phi = np.array([crf.joint_feature(x, y) for y in Y])
                assert value == pytest.approx(smoothed, abs=1e-7)
                assert np.allclose(gradient, q @ phi - crf.joint_feature(x, y_true), atol=1e-6)
                assert expected_loss == pytest.approx(q @ task_losses(crf, Y, y_true),
                                                      abs=1e-7)
    X, Y = segmentation_data(rng, 6, 3)
    with pytest.warns(UserWarning, match="not a certificate"):
        est = SmoothSSVMClassifier(GraphCRF(), smoothing="entropy", top_k=None, alpha=0.5,
                                   max_iter=3, random_state=0).fit(X, Y)
    assert not est.gap_certified_ and "TRW" in est.oracle_calls_
    assert est.objective_ == pytest.approx(est.primal_objective(X, Y))
    with pytest.raises(ValueError, match="top_k"):
        SmoothSSVMClassifier(GraphCRF(), top_k=None).fit(X, Y)


def test_threads_give_the_same_fit():
    """``n_jobs=2`` spreads the per-example oracles over threads (full gradients and
    certificate passes); the fit is the same, bit for bit, and so are the oracle counts."""
    rng = np.random.default_rng(12)
    X, Y = segmentation_data(rng, 10, 3)
    fits = {}
    for n_jobs in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[n_jobs] = [
                BMRMStructuredSVM(GraphCRF(), alpha=0.5, max_iter=10, n_jobs=n_jobs).fit(X, Y),
                BCFWStructuredSVM(GraphCRF(), alpha=0.5, max_iter=10, n_jobs=n_jobs,
                                  random_state=0).fit(X, Y)]
    for one, two in zip(fits[1], fits[2]):
        assert np.array_equal(one.coef_, two.coef_)
        assert one.duality_gap_ == two.duality_gap_ and one.oracle_calls_ == two.oracle_calls_


@pytest.mark.parametrize("settings, tol", [(dict(l1_ratio=0.5, step="pairwise"), 1e-4),
                                           (dict(l1_ratio=0.5, step="fw", cache=True), 3e-3),
                                           (dict(step="away"), 1e-5),
                                           (dict(step="fw", averaging=True), 1e-2)])
def test_bcfw_options_on_graphs_reach_the_independent_optimum(settings, tol):
    """The elastic net (the dense pass scores with the soft-threshold), away steps and
    averaging on GraphCRF: the certified gap closes on the optimum of an independent
    enumeration QP (``_brute.elastic_net_qp``), and the certificate brackets it."""
    from _brute import elastic_net_qp
    from _golden import _data
    from sklearn_ssvm import BCFWStructuredSVM
    from sklearn_ssvm.penalties import ElasticNet

    X, Y = _data("graph")
    est = BCFWStructuredSVM(GraphCRF(), alpha=0.1, tol=tol, max_iter=3000, random_state=0,
                            **settings).fit(X, Y)
    assert est.gap_certified_ and est.converged_
    p_star, _ = elastic_net_qp(est.structure_, X, Y,
                               ElasticNet.from_alpha(0.1, settings.get("l1_ratio", 0.0)))
    assert est.dual_objective_ <= p_star + 1e-8  # weak duality across solvers
    assert est.primal_objective(X, Y) - p_star <= est.duality_gap_ + 1e-8
    assert est.duality_gap_ <= tol * est.loss_scale_
    if settings.get("l1_ratio"):
        assert np.count_nonzero(est.coef_ == 0.0) > 0  # exact zeros from the soft-threshold
