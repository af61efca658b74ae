"""The CV estimators against GridSearchCV over the same alphas and folds, one script.

    python benchmarks/cv_estimators.py [--n-words 2000] [--repeats 3] [--max-iter 200]

OCR words (bundled), ``ChainCRF(normalize_loss=True)``, BCFW with pairwise steps to a gap of
0.01, 5 folds, the alphas 1e-1 ... 1e-4: ``BCFWStructuredSVMCV`` over the whole grid
(``n_alphas_no_change=None``: each fold warm-started along the decreasing alphas) and with its
walk from the grid point nearest ``alpha=None`` stopped where the score turns down (the
default), against ``GridSearchCV(BCFWStructuredSVM(...))`` (a cold fit per alpha and fold), all
on one worker and all refitting at the chosen alpha. Reports the chosen alphas, CPU and wall
seconds (medians; numba compilation apart, by a first small fit) and the ratios.
"""
import argparse
import statistics
import time

import numpy as np
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_ssvm import BCFWStructuredSVM, BCFWStructuredSVMCV, ChainCRF
from sklearn_ssvm.datasets import load_ocr_letters, split_folds

ALPHAS = [1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4]
SETTINGS = dict(step="pairwise", tol=0.01, max_iter=200, random_state=0)


def timed(make, X, Y, repeats):
    cpus, walls = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fitted = make().fit(X, Y)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return fitted, statistics.median(cpus), statistics.median(walls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-words", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=SETTINGS["max_iter"],
                        help="pass budget of every fit (200: the small alphas stop at it)")
    args = parser.parse_args()
    settings = dict(SETTINGS, max_iter=args.max_iter)
    X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
    X, Y = X[:args.n_words], Y[:args.n_words]
    BCFWStructuredSVM(ChainCRF(), max_iter=1).fit(X[:20], Y[:20])  # compile / load
    folds = KFold(5)
    chain = ChainCRF(normalize_loss=True)
    cv, cv_cpu, cv_wall = timed(lambda: BCFWStructuredSVMCV(
        chain, alphas=ALPHAS, cv=folds, n_alphas_no_change=None, **settings), X, Y, args.repeats)
    walk, walk_cpu, walk_wall = timed(lambda: BCFWStructuredSVMCV(
        chain, alphas=ALPHAS, cv=folds, **settings), X, Y, args.repeats)
    gs, gs_cpu, gs_wall = timed(lambda: GridSearchCV(BCFWStructuredSVM(chain, **settings),
                                                     {"alpha": ALPHAS}, cv=folds), X, Y,
                                args.repeats)
    print(f"OCR, {len(X)} words, 5 folds, {len(ALPHAS)} alphas, max_iter={args.max_iter}")
    print("| method | chosen alpha | alphas fitted | CPU s | wall s | CPU / GridSearchCV |")
    print("|---|---|---|---|---|---|")
    for name, est, cpu, wall in [("BCFWStructuredSVMCV, every alpha", cv, cv_cpu, cv_wall),
                                 ("BCFWStructuredSVMCV, walk (default)", walk, walk_cpu,
                                  walk_wall)]:
        fitted = int(np.sum(~np.isnan(est.cv_results_["mean_test_score"])))
        print(f"| {name} | {est.alpha_:g} | {fitted} | {cpu:.1f} | {wall:.1f} | "
              f"{cpu / gs_cpu:.2f} |")
    print(f"| GridSearchCV | {gs.best_params_['alpha']:g} | {len(ALPHAS)} | {gs_cpu:.1f} | "
          f"{gs_wall:.1f} | 1.00 |")
    difference = np.abs(cv.cv_results_['mean_test_score'] - gs.cv_results_['mean_test_score'])
    print(f"max |mean score difference| over the grid: {np.max(difference):.4f}")


if __name__ == "__main__":
    main()
