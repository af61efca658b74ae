"""Structured PRAGAM (spec 003 App. E.1) against BCFW and BMRM on flat multi-class data: OCR's
letters as independent examples (26 classes, 128 binary pixels plus a bias), one thread each.

Reports each solver's CPU seconds (``time.process_time``) and iterations to the same relative
certified gaps, read from its history (the estimators' ``tol`` set below the smallest; numba
compiled beforehand on a small fit).

    python benchmarks/multiclass_pragam.py [--n 2000] [--alpha 1e-3] [--budget 120]
"""
import argparse
import time
import warnings

import numpy as np

from sklearn_ssvm import (BCFWStructuredSVM, BMRMStructuredSVM, MulticlassSVM,
                          PragamStructuredSVM)
from sklearn_ssvm.datasets import load_ocr_letters

GAPS = (1e-2, 1e-3, 1e-4)


def letters(n):
    X, Y = load_ocr_letters(return_X_y=True)
    X = np.vstack(X)[:n]
    return np.hstack([X, np.ones((len(X), 1))]), np.concatenate(Y)[:n]


def solvers(alpha, budget):
    tol = min(GAPS) / 10
    return {
        "PRAGAM": PragamStructuredSVM(MulticlassSVM(), alpha=alpha, tol=tol, max_iter=budget),
        "BCFW": BCFWStructuredSVM(MulticlassSVM(), alpha=alpha, tol=tol, max_iter=budget,
                                  random_state=0),
        "BMRM (qp)": BMRMStructuredSVM(MulticlassSVM(), alpha=alpha, tol=tol, max_iter=budget),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--alpha", type=float, default=1e-3)
    parser.add_argument("--budget", type=int, default=3000, help="iterations or passes")
    args = parser.parse_args()
    X, y = letters(args.n)
    warnings.simplefilter("ignore")
    for est in solvers(args.alpha, 3).values():  # compile
        est.fit(X[:100], y[:100])
    print(f"OCR letters as flat examples: n={len(y)}, d={X.shape[1]}, alpha={args.alpha}")
    print("| solver | " + " | ".join(f"gap {g:g}: CPU s (iterations)" for g in GAPS) + " |")
    print("|---" * (len(GAPS) + 1) + "|")
    for name, est in solvers(args.alpha, args.budget).items():
        cpu = time.process_time()
        est.fit(X, y)
        total = time.process_time() - cpu
        history = est.history_
        cells = []
        for g in GAPS:
            hit = [r for r in history if r["gap"] <= g * est.loss_scale_]
            cells.append(f"{hit[0]['cpu_time']:.2f} ({hit[0]['iter']})" if hit else "-")
        print(f"| {name} | " + " | ".join(cells) + f" |  total {total:.1f} s")


if __name__ == "__main__":
    main()
