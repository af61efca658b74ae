"""``python -m sklearn_ssvm``: watch a structured SVM learn to read handwritten words.

Trains ``BCFWStructuredSVM(ChainCRF())`` at its defaults on the bundled OCR letters (folds 1-9,
6,251 words), tests on fold 0, and prints the certified duality gap, the test error and the
time.

``python -m sklearn_ssvm --compile [FIT ...]`` instead compiles the kernels of the common
estimators and structures into numba's cache (``FIT``: some of them, e.g. ``bcfw/chain``), so
that the fits of a job that follows, on this machine or its copies, start without compiling.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import BCFWStructuredSVM, ChainCRF
from ._compile import COMMON, FITS, compile_fits
from .datasets import load_ocr_letters, split_folds


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sklearn_ssvm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alpha", type=float, default=None,
                        help="regularisation (lambda); default: the estimator's alpha=None")
    parser.add_argument("--max-iter", type=int, default=100, help="maximum passes")
    parser.add_argument("--tol", type=float, default=3e-3,
                        help="target duality gap, relative to the zero model's objective")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--compile", nargs="*", metavar="FIT", choices=FITS,
                        help="compile the kernels of these fits into the cache, then exit; "
                             f"none named: {' '.join(COMMON)}; any of: {' '.join(FITS)}")
    args = parser.parse_args(argv)
    if args.compile is not None:
        compile_fits(args.compile or COMMON)
        return

    ocr = load_ocr_letters()
    X_train, X_test, Y_train, Y_test = split_folds(ocr, test_fold=0)
    print(f"OCR letters (Taskar et al. 2003): {len(X_train)} training words, "
          f"{len(X_test)} test words, 26 letters, 16x8 pixels.")

    t = time.perf_counter()
    with warnings.catch_warnings():  # one pass on 20 words, to compile: not a fit to judge
        warnings.simplefilter("ignore", ConvergenceWarning)
        BCFWStructuredSVM(ChainCRF(), max_iter=1).fit(X_train[:20], Y_train[:20])
    print(f"numba kernels ready in {time.perf_counter() - t:.1f} s "
          f"(compiled once, then cached)")

    est = BCFWStructuredSVM(ChainCRF(), alpha=args.alpha, max_iter=args.max_iter, tol=args.tol,
                            random_state=0, verbose=0 if args.quiet else 1)
    wall, cpu = time.perf_counter(), time.process_time()
    est.fit(X_train, Y_train)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu

    Y_pred = est.predict(X_test)
    letter_error = 1 - est.score(X_test, Y_test)
    word_error = np.mean([np.any(p != y) for p, y in zip(Y_pred, Y_test)])
    print(f"\nBCFW, alpha = {est.alpha_:.3g}: {est.n_iter_} passes in {wall:.1f} s "
          f"({cpu:.1f} s CPU, {1000 * wall / est.n_iter_:.0f} ms per pass incl. gap checks)")
    relative = est.duality_gap_ / est.loss_scale_
    print(f"certified duality gap  {est.duality_gap_:.2e}, {relative:.1e} of the zero model's "
          f"objective (primal {est.primal_objective_:.4f} >= optimum >= dual "
          f"{est.dual_objective_:.4f})")
    print(f"test letter error      {100 * letter_error:.1f}%")
    print(f"test word error        {100 * word_error:.1f}%")
    letters = np.array(ocr.target_names)
    print("\nsome test words, truth -> prediction (the data set drops each word's first, "
          "capital letter):")
    for k in range(0, len(Y_test), len(Y_test) // 8)[:8]:
        truth = "".join(letters[Y_test[k]])
        pred = "".join(letters[Y_pred[k]])
        print(f"  {truth:>14} -> {pred}")


if __name__ == "__main__":
    main()
