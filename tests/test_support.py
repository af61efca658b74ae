"""The support matrix cannot lie: every estimator x structure x option cell either fits, with a
finite coefficient vector and a gap that is a certificate or labelled as not one, or is refused
with the message :mod:`sklearn_ssvm.solvers.capabilities` declares for it; and the user guide's
table is the one generated from the same declarations."""
import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from _golden import _data, _structures
from sklearn_ssvm.estimators.base import StructuredEstimator
from sklearn_ssvm.feature_maps import MLPFeatureMap
from sklearn_ssvm.model_selection import grid_search_path
from sklearn_ssvm.solvers import capabilities
from sklearn_ssvm.solvers.capabilities import (DECLARED_IN, OPTIONS, SOLVERS, refusal,
                                               support_table)


def _subclasses(cls):
    """``cls`` and every class below it that is imported."""
    return [cls] + [sub for child in cls.__subclasses__() for sub in _subclasses(child)]


def declared_estimators():
    """``{solver: (estimator class, parameters)}``: what each estimator class declares it
    runs (its ``solver_params``), the package's and those defined outside it."""
    return {name: (cls, params) for cls in _subclasses(StructuredEstimator)
            for name, params in vars(cls).get("solver_params", {}).items()}


#: what keeps a cell quick, by solver, over the settings every cell starts from
QUICK = dict(alpha=0.1, max_iter=20, random_state=0)
QUICKER = {"bcfw": dict(step="pairwise"), "bcfw-cluster": dict(step="pairwise"),
           "bmrm": dict(max_iter=30), "bmrm-cluster": dict(max_iter=30),
           "stochastic": dict(max_iter=3, learning_rate=0.1),
           "agm": dict(max_iter=10), "agm-cluster": dict(max_iter=10),
           "pragam-structured": dict(max_iter=30), "quasi-newton": dict(max_iter=30),
           "prox-linear": dict(max_iter=2, learning_rate=0.1,
                               feature_map=MLPFeatureMap(n_hidden=3, random_state=0))}


def estimator_of(solver):
    """``make(structure, **settings)``: the declared estimator of ``solver``, quick."""
    cls, params = declared_estimators()[solver]
    names = inspect.signature(cls).parameters

    def make(structure, **settings):
        settings = {**QUICK, **params, **QUICKER.get(solver, {}), **settings}
        return cls(structure, **{name: clone(value) if hasattr(value, "get_params") else value
                                 for name, value in settings.items() if name in names})
    return make


#: how a cell asks for each option, and the options that asks for
ASK = {"elastic_net": (dict(l1_ratio=0.3), ("elastic_net",)),
       "away": (dict(step="away"), ("away",)),
       "averaging": (dict(step="fw", averaging=True), ("averaging",)),
       "bounds": (dict(coef_bounds="positive_pairwise"), ("bounds",)),
       "box": (dict(coef_bounds=(-1.0, 1.0)), ("bounds", "box")),
       "sample_weight": ({}, ("sample_weight",))}

KIND_OF = {"chain": "compiled", "multiclass": "compiled", "multilabel": "compiled",
           "candidates": "compiled", "graph": "graph", "binary_graph": "binary_graph"}
NAME_OF = {"chain": "ChainCRF", "multiclass": "MulticlassSVM", "multilabel": "MultiLabel",
           "candidates": "CandidateSet"}

#: the solvers the package declares (tests elsewhere register their own)
OWN = [name for name in SOLVERS if DECLARED_IN[name].startswith("sklearn_ssvm.")]

CELLS = [(solver, structure, option) for solver in OWN for structure in KIND_OF
         for option in (None, *SOLVERS[solver].options)
         if not (solver == "prox-linear" and structure in ("chain", "multiclass", "multilabel"))]


def test_every_solver_has_an_estimator_and_every_option_a_request():
    assert set(declared_estimators()) >= set(OWN)
    assert set(ASK) == set(OPTIONS)
    assert set(KIND_OF.values()) == set(capabilities.KINDS)


@pytest.mark.parametrize("solver, structure, option", CELLS)
def test_cell_fits_or_is_refused_as_declared(solver, structure, option, request):
    if solver.endswith("-cluster"):  # its fits run on the current dask client
        request.getfixturevalue("dask_client")
    check_cell(estimator_of(solver), solver, structure, option)


def check_cell(make_estimator, solver, structure, option):
    """The cell of the declared ``solver`` (a :data:`SOLVERS` name), ``structure`` (a key of
    ``KIND_OF``) and ``option`` (None or an :data:`OPTIONS` name) fits or is refused with its
    declared message; ``make_estimator(structure, **settings)`` builds the estimator."""
    make_structure, data = _structures()[structure]
    X, Y = _data(data)
    settings, asked = ASK.get(option, ({}, ()))
    estimator = make_estimator(make_structure(), **settings)
    weights = np.linspace(0.5, 1.5, len(Y)) if option == "sample_weight" else None
    declared = refusal(solver, KIND_OF[structure], asked, NAME_OF.get(structure))
    if declared is not None:
        with pytest.raises(ValueError) as error:
            estimator.fit(X, Y, sample_weight=weights)
        assert str(error.value) == declared
        assert not hasattr(estimator, "coef_")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, Y, sample_weight=weights)
    assert np.all(np.isfinite(estimator.coef_))
    if solver != "prox-linear":  # the others report a duality gap of the SSVM objective
        assert np.isfinite(estimator.duality_gap_) and estimator.duality_gap_ >= -1e-9
    assert isinstance(estimator.gap_certified_, bool)


@pytest.mark.parametrize("solver", sorted(OWN))
def test_grid_path_for_every_solver(solver, request):
    """Every solver walks a grid of alpha, warm-started where it declares warm starts."""
    if solver.endswith("-cluster"):
        request.getfixturevalue("dask_client")
    X, Y = _data("candidates")
    structure = _structures()["candidates"][0]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = grid_search_path(estimator_of(solver)(structure), X, Y, alphas=[0.2, 0.1])
    assert np.all(np.isfinite(path.coefs_)) and path.coefs_.shape[0] == 2


def test_an_undeclared_solver_name_is_refused_by_name():
    """A name outside ``SOLVERS`` gets a ``ValueError`` listing the declared ones (issue 48's
    newcomer met a bare ``KeyError``)."""
    from sklearn_ssvm.penalties import ElasticNet
    from sklearn_ssvm.solvers.capabilities import check_penalty, refusal

    for call in (lambda: refusal("ssg", "compiled"),
                 lambda: check_penalty("ssg", ElasticNet.from_alpha(0.1, 0.0))):
        with pytest.raises(ValueError, match="No solver is declared as 'ssg'.*bcfw"):
            call()


def test_user_guide_table_is_generated():
    guide = (Path(__file__).parents[1] / "doc" / "user_guide.md").read_text()
    table = re.search(r"<!-- support table -->\n(.*?)\n<!-- end support table -->", guide,
                      re.S)
    assert table is not None, "the user guide has no generated support table"
    assert table.group(1) == support_table(OWN), "regenerate: capabilities.support_table()"


def _solver_runs():
    """Every solver called directly on small data: ``{name: () -> result}``."""
    from sklearn_ssvm import ChainCRF, MulticlassSVM
    from sklearn_ssvm.solvers import (agm, bcfw, bcfw_cluster, bmrm, pragam, pragam_structured,
                                      quasi_newton, smooth)
    from sklearn_ssvm.structures.base import smoothing_code

    X, Y = _data("chain")
    problem = ChainCRF().prepare(X, Y)
    l2 = smooth.Smoothing(*smoothing_code("l2", 5, problem.kind), 0.1)
    rng = np.random.default_rng(0)
    Xb = rng.normal(size=(30, 3))
    yb = np.where(Xb[:, 0] + 0.3 * rng.normal(size=30) > 0, 1.0, -1.0)
    stochastic = dict(learning_rate=0.1, max_iter=3, random_state=0)
    return {
        "bcfw": lambda: bcfw.bcfw(problem, 0.1, max_iter=3, random_state=0),
        "bcfw-cluster": lambda: bcfw_cluster.bcfw_cluster(bcfw_cluster.current_client(), problem,
                                                          0.1, max_iter=3, random_state=0),
        "bmrm": lambda: bmrm.bmrm(problem, 0.1, max_iter=3),
        "bmrm-cluster": lambda: bmrm.bmrm(problem, 0.1, max_iter=3, cluster=True),
        "svrg": lambda: smooth.svrg(problem, 0.1, l2, **stochastic),
        "sgd": lambda: smooth.sgd(problem, 0.1, l2, **stochastic),
        "casimir-svrg": lambda: smooth.casimir_svrg(problem, 0.1, l2, **stochastic),
        "agm": lambda: agm.agm_structured(problem, 0.1, 0.1, max_iter=3),
        "agm-cluster": lambda: agm.agm_structured(problem, 0.1, 0.1, max_iter=3, cluster=True),
        "agm-binary": lambda: agm.agm(Xb, yb, 0.1, max_iter=5),
        "pragam": lambda: pragam.pragam(Xb, yb, 0.1, max_iter=5),
        "pragam-structured": lambda: pragam_structured.pragam_structured(
            MulticlassSVM().prepare(Xb, (Xb[:, 1] > 0) + (yb > 0)), 0.1, max_iter=5),
        "quasi-newton": lambda: quasi_newton.QuasiNewton(max_iter=3).solve(problem, 0.1),
    }


@pytest.mark.parametrize("name", sorted(_solver_runs()))
def test_every_solver_returns_one_shape(name, request):
    """One result shape: a ``SolverResult`` whose history has the common columns."""
    from sklearn_ssvm.solvers.result import HISTORY_COLUMNS, SolverResult

    if name.endswith("-cluster"):
        request.getfixturevalue("dask_client")

    result = _solver_runs()[name]()
    assert isinstance(result, SolverResult)
    assert np.all(np.isfinite(result.coef)) and result.n_iter >= 1
    assert result.gap_certified == (result.gap_reason == "")
    history = result.history
    columns = set(history) if isinstance(history, dict) else set(history[-1])
    assert set(HISTORY_COLUMNS) <= columns
    last = {k: np.asarray(v)[-1] for k, v in history.items()} if isinstance(history, dict) \
        else history[-1]
    assert last["iter"] == result.n_iter


def test_prox_linear_history_has_the_common_columns():
    from sklearn_ssvm.solvers.result import HISTORY_COLUMNS

    X, Y = _data("candidates")
    est = estimator_of("prox-linear")(_structures()["candidates"][0]())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, Y)
    assert all(set(HISTORY_COLUMNS) <= set(record) for record in est.history_)
    assert np.isnan(est.duality_gap_)
