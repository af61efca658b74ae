"""Beyond one machine: hyper-parameter search, the CV estimators and the path functions run
unchanged under ``joblib.parallel_config(backend="dask")`` on a ``dask.distributed`` cluster of
2 worker processes, the data scattered once, with the local run's results bit for bit."""
import warnings

import joblib
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

from sklearn_ssvm import (BCFWStructuredSVM, BCFWStructuredSVMCV, ChainCRF, cross_validate_path,
                          grid_search_path)
from sklearn_ssvm.datasets import load_ocr_letters, split_folds

distributed = pytest.importorskip("distributed")


def searches(X, Y):
    est = BCFWStructuredSVM(ChainCRF(), max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv = BCFWStructuredSVMCV(ChainCRF(), alphas=[1e-1, 1e-2, 1e-3], cv=3, max_iter=20,
                                 random_state=0, n_jobs=2).fit(X, Y)
        grid = GridSearchCV(est, {"alpha": [1e-1, 1e-2]}, cv=3, n_jobs=2).fit(X, Y)
        cold = grid_search_path(est, X, Y, alphas=[1e-1, 1e-2, 1e-3], warm_start=None,
                                n_jobs=2)
        path_cv = cross_validate_path(est, X, Y, cv=3, n_alphas=5, n_jobs=2)
    return {"cv scores": cv.cv_results_["mean_test_score"], "cv coef": cv.coef_,
            "grid scores": grid.cv_results_["mean_test_score"], "grid path": cold.coefs_,
            "path cv scores": path_cv.scores_, "path cv alpha": path_cv.best_alpha_}


def test_dask_cluster_gives_the_local_results_bit_for_bit():
    X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
    X, Y = X[:60], Y[:60]
    local = searches(X, Y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with joblib.parallel_config(backend="dask", scatter=[X, Y]):  # the data sent once
            remote = searches(X, Y)
    for key in local:
        np.testing.assert_array_equal(local[key], remote[key], err_msg=key)
