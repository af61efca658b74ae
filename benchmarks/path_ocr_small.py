"""Regularization path against 31-point grid search on OCR-small (spec 002 §8, §9.3, Fig. 4/8).

    python benchmarks/path_ocr_small.py [--what path grid] [--time-budget 600] [--step fw]

OCR-small = fold 0 of the OCR letters (626 words) as training set. Reports, for the eps = 0.1
exact path (kappa = 0.9, alpha_min = 1e-5) and for the grid 2^15 .. 2^-15 solved to gap 0.1
(cold and warm started): breakpoints or grid points, smallest alpha reached, oracle calls,
effective passes (oracle calls / n) and seconds.
"""
import argparse
import time
import warnings

import numpy as np

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm.datasets import load_ocr_letters
from sklearn_ssvm.model_selection import grid_search_path, regularization_path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--what", nargs="+", default=["path", "grid"])
    parser.add_argument("--time-budget", type=float, default=600.0)
    parser.add_argument("--step", default="fw")
    parser.add_argument("--max-iter", type=int, default=2000)
    parser.add_argument("--heuristic", action="store_true")
    parser.add_argument("--warm-starts", nargs="+", default=["keep_primal", "keep_dual", "none"])
    parser.add_argument("--n-jobs", type=int, default=None)
    args = parser.parse_args()
    ocr = load_ocr_letters()
    idx = np.flatnonzero(np.asarray(ocr.folds) == 0)
    X = [ocr.data[i] for i in idx]
    Y = [ocr.target[i] for i in idx]
    n = len(X)
    print(f"OCR-small: n = {n} words, {sum(len(y) for y in Y)} letters", flush=True)
    BCFWStructuredSVM(ChainCRF(), max_iter=2).fit(X[:20], Y[:20])  # compile / load the cache
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), random_state=0,
                            max_iter=args.max_iter, step=args.step)
    warnings.simplefilter("always")
    if "path" in args.what:
        t = time.perf_counter()
        path = regularization_path(est, X, Y, eps=0.1, alpha_min=1e-5, heuristic=args.heuristic,
                                   time_budget=args.time_budget, n_jobs=args.n_jobs, verbose=1)
        secs = time.perf_counter() - t
        print(f"path ({'heuristic' if args.heuristic else 'exact'}, step={args.step}): {path}")
        print(f"  breakpoints {len(path.alphas_)}, alpha from {path.alphas_[0]:.4g} down to "
              f"{path.alphas_[-1]:.4g} (covered down to {path.alpha_lower_:.4g}), "
              f"oracle calls {path.n_oracle_calls_[-1]}, effective passes "
              f"{path.effective_passes_[-1]:.1f}, {secs:.1f} s; max gap {path.gaps_.max():.4f}")
        for a in 2.0 ** np.arange(15, -17, -1):
            if a <= path.alphas_[0] and a >= path.alphas_[-1]:
                j = int(np.count_nonzero(path.alphas_ >= a)) - 1
                print(f"    reached alpha <= 2^{int(np.log2(a)):d} after breakpoint {j}: "
                      f"{path.effective_passes_[j]:.1f} eff. passes, {path.times_[j]:.1f} s",
                      flush=True)
    if "grid" in args.what:
        for ws in args.warm_starts:
            ws = None if ws == "none" else ws
            t = time.perf_counter()
            grid = grid_search_path(est, X, Y, tol=0.1, warm_start=ws, n_jobs=args.n_jobs)
            secs = time.perf_counter() - t
            print(f"grid warm_start={ws}: {len(grid.alphas_)} points, all converged "
                  f"{bool(grid.converged_.all())}, oracle calls {grid.n_oracle_calls_[-1]}, "
                  f"effective passes {grid.effective_passes_[-1]:.1f}, wall {secs:.1f} s, "
                  f"solve seconds {grid.times_[-1]:.1f}", flush=True)
            for j in range(0, len(grid.alphas_), 5):
                print(f"    alpha=2^{int(np.round(np.log2(grid.alphas_[j]))):d}: cumulative "
                      f"{grid.effective_passes_[j]:.1f} eff. passes, {grid.times_[j]:.1f} s, "
                      f"gap {grid.gaps_[j]:.4f}", flush=True)


if __name__ == "__main__":
    main()
