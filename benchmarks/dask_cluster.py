"""Model selection on one process, two local processes and a two-worker dask cluster.

    python benchmarks/dask_cluster.py [--n-words 1500] [--repeats 3]

OCR words (bundled), ``ChainCRF()``, BCFW with pairwise steps: ``BCFWStructuredSVMCV`` (5 folds,
5 alphas, refit) and ``cross_validate_path`` (5 folds, eps 0.1), each run with ``n_jobs=1``,
with ``n_jobs=2`` on joblib's process backend (loky), and with ``n_jobs=2`` under
``joblib.parallel_config(backend="dask", scatter=[X, Y])`` on a ``LocalCluster`` of 2 worker
processes (one thread each). Reports median wall seconds (compilation apart: every process
loads the cached kernels before timing) and checks that the results are the same everywhere.
Needs the ``distributed`` extra.
"""
import argparse
import statistics
import time
import warnings

import joblib
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_ssvm import BCFWStructuredSVM, BCFWStructuredSVMCV, ChainCRF, cross_validate_path
from sklearn_ssvm.datasets import load_ocr_letters, split_folds

SETTINGS = dict(step="pairwise", tol=0.01, max_iter=200, random_state=0)


def cv_estimator(X, Y, n_jobs):
    return BCFWStructuredSVMCV(ChainCRF(), alphas=[1e-1, 3e-2, 1e-2, 3e-3, 1e-3], cv=5,
                               n_jobs=n_jobs, **SETTINGS).fit(X, Y).cv_results_["mean_test_score"]


def path_cv(X, Y, n_jobs):
    return cross_validate_path(BCFWStructuredSVM(ChainCRF(), **SETTINGS), X, Y, cv=5, eps=0.1,
                               n_jobs=n_jobs).scores_


def timed(run, repeats):
    walls, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = run()
        walls.append(time.perf_counter() - t)
    return statistics.median(walls), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-words", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    warnings.simplefilter("ignore", ConvergenceWarning)
    X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
    X, Y = X[:args.n_words], Y[:args.n_words]
    BCFWStructuredSVM(ChainCRF(), max_iter=1).fit(X[:20], Y[:20])  # compile / load
    rows = []
    for name, task in (("BCFWStructuredSVMCV", cv_estimator), ("cross_validate_path", path_cv)):
        one, r1 = timed(lambda: task(X, Y, 1), args.repeats)
        with joblib.parallel_config(backend="loky"):
            task(X[:40], Y[:40], 2)  # start the workers, load the kernels
            loky, r2 = timed(lambda: task(X, Y, 2), args.repeats)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster), \
                joblib.parallel_config(backend="dask", scatter=[X, Y]):
            task(X[:40], Y[:40], 2)
            dask, r3 = timed(lambda: task(X, Y, 2), args.repeats)
        same = np.array_equal(r1, r2) and np.array_equal(r1, r3)
        rows.append((name, one, loky, dask, same))
    print(f"OCR, {len(X)} words, 5 folds; median wall seconds of {args.repeats}")
    print("| task | n_jobs=1 | 2 local processes | 2-worker dask cluster | same results |")
    print("|---|---|---|---|---|")
    for name, one, loky, dask, same in rows:
        print(f"| {name} | {one:.1f} | {loky:.1f} ({one / loky:.2f}x) | {dask:.1f} "
              f"({one / dask:.2f}x) | {same} |")


if __name__ == "__main__":
    main()
