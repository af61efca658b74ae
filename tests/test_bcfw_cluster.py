"""One BCFW fit on a dask cluster (``solvers.bcfw_cluster``, ``BCFWStructuredSVM(cluster=True)``):
the same certified optimum as on one machine, an exact distributed gap, and a clear error when a
worker is lost mid-fit."""
import numpy as np
import pytest

from _cluster import fit_losing_a_worker

from sklearn_ssvm import BCFWStructuredSVM, BCFWStructuredSVMCV, ChainCRF
from sklearn_ssvm.datasets import make_chain_data
from sklearn_ssvm.model_selection import regularization_path
from sklearn_ssvm.solvers.bcfw import bcfw
from sklearn_ssvm.solvers.bcfw_cluster import bcfw_cluster

distributed = pytest.importorskip("distributed")

ALPHA = 0.05


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def problem():
    X, Y = make_chain_data(n_samples=200, n_features=6, n_labels=3, random_state=0)
    return ChainCRF(normalize_loss=False).prepare(X, Y)


def primal(problem, coef):
    """The objective at ``coef``, computed here: the certificate's primal, independently."""
    return ALPHA / 2 * coef @ coef + problem.hinge_losses(coef).mean()


def test_cluster_fit_reaches_the_local_optimum_with_an_exact_gap(client, problem):
    tol = 1e-3
    local = bcfw(problem, ALPHA, tol=1e-8, max_iter=2000, step="pairwise", random_state=0)
    fit = bcfw_cluster(client, problem, ALPHA, tol=tol, max_iter=300, random_state=0)
    assert fit.converged and fit.duality_gap <= tol
    # its primal is the objective at its coef, and the gap bounds the distance to the optimum
    np.testing.assert_allclose(fit.objective, primal(problem, fit.coef), rtol=1e-10)
    assert fit.objective - local.dual_objective <= fit.duality_gap + local.duality_gap + 1e-12
    assert fit.dual_objective <= local.objective + 1e-12
    # strong convexity: ||w - w*||^2 <= 2 gap / alpha
    bound = np.sqrt(2 * fit.duality_gap / ALPHA) + np.sqrt(2 * local.duality_gap / ALPHA)
    assert np.linalg.norm(fit.coef - local.coef) <= bound
    gaps = [r["gap"] for r in fit.history if np.isfinite(r["gap"])]
    assert len(gaps) == fit.n_iter


def test_cluster_fit_refuses_what_it_cannot_scale(client, problem):
    from sklearn_ssvm.penalties import ElasticNet
    # called directly, it refuses with the messages its capabilities declare
    with pytest.raises(ValueError, match=r"with an l1 part \(l1_ratio > 0\): CoCoA"):
        bcfw_cluster(client, problem, ElasticNet(ALPHA, 0.01))
    with pytest.raises(ValueError, match="takes the L2 penalty"):
        bcfw_cluster(client, problem, ElasticNet(ALPHA, p=np.zeros(problem.n_params)))
    with pytest.raises(ValueError, match="with sample_weight: its partitions"):
        bcfw_cluster(client, problem.with_sample_weight(np.arange(1.0, 201.0)), ALPHA)


def test_a_worker_lost_mid_fit_gives_a_clear_error_or_a_certified_fit(problem):
    # tol=0: the rounds go on until max_iter, or the loss stops them
    outcome = fit_losing_a_worker(lambda client: bcfw_cluster(
        client, problem, ALPHA, tol=0.0, max_iter=400, random_state=0), timeout=120)
    if "error" in outcome:
        assert isinstance(outcome["error"], RuntimeError)
        assert "worker was lost" in str(outcome["error"])
    else:  # dask recomputed the lost partitions: the result must still be certified exactly
        fit = outcome["fit"]
        np.testing.assert_allclose(fit.objective, primal(problem, fit.coef), rtol=1e-10)
        assert fit.duality_gap >= 0.0


# -- the estimator: BCFWStructuredSVM(cluster=True) on the current client --------------------

def chains():
    return make_chain_data(n_samples=200, n_features=6, n_labels=3, random_state=0)


def test_the_estimator_fits_on_the_cluster_within_the_gap_bound_of_the_local_fit(client):
    X, Y = chains()
    settings = dict(alpha=ALPHA, tol=1e-3, max_iter=300, random_state=0)
    local = BCFWStructuredSVM(ChainCRF(normalize_loss=False), **settings).fit(X, Y)
    with client.as_current():
        fit = BCFWStructuredSVM(ChainCRF(normalize_loss=False), cluster=True,
                                gap_check=1, **settings).fit(X, Y)
    # the same certified relative gap, the same fitted attributes
    assert fit.converged_ and fit.duality_gap_ <= 1e-3 * fit.loss_scale_
    assert fit.gap_certified_ and fit.dual_state_ is None and fit.n_cache_hits_ == 0
    np.testing.assert_allclose(fit.primal_objective_, fit.primal_objective(X, Y), rtol=1e-10)
    # strong convexity: both within sqrt(2 gap / alpha) of the optimum
    bound = np.sqrt(2 * fit.duality_gap_ / ALPHA) + np.sqrt(2 * local.duality_gap_ / ALPHA)
    assert np.linalg.norm(fit.coef_ - local.coef_) <= bound
    assert np.mean(np.concatenate(fit.predict(X)) == np.concatenate(local.predict(X))) > 0.95


def test_the_estimator_refuses_what_the_cluster_does_not_keep(client):
    X, Y = chains()
    with client.as_current():
        cases = [(dict(l1_ratio=0.5), "does not train the compiled structures with an l1 part"),
                 (dict(averaging=True, step="fw"), "averaging=True"),
                 (dict(warm_start=True), "warm_start=True"),
                 (dict(cache=True), "oracle cache")]
        for settings, message in cases:
            est = BCFWStructuredSVM(ChainCRF(), cluster=True, max_iter=2, **settings)
            with pytest.raises(ValueError, match=message):
                est.fit(X, Y)
            assert not hasattr(est, "coef_")
        with pytest.raises(ValueError, match="sample_weight"):
            BCFWStructuredSVM(ChainCRF(), cluster=True).fit(X, Y, sample_weight=np.arange(
                1.0, 201.0))
        # the CV's folds warm-start from each other: it has no cluster option
        assert "cluster" not in BCFWStructuredSVMCV(ChainCRF()).get_params()
        with pytest.raises(ValueError, match=r"declares certified_path.*cluster fits keep"):
            regularization_path(BCFWStructuredSVM(ChainCRF(), cluster=True), X, Y)
