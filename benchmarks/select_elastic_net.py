"""Choose the elastic net's ``alpha`` and ``l1_ratio`` on training data only.

    python benchmarks/select_elastic_net.py [--tasks chunking ner] [--folds 3]
        [--alphas 3e-4 1e-3 3e-3] [--l1-ratios 0 0.5 0.8 0.9] [--data ../shared/datasets]

K-fold cross-validation on the training set of each task of ``sequence_labelling.py``
(CoNLL-2000 ``train.txt.gz``, CoNLL-2003 ``eng.train.gz``): ``BCFWStructuredSVM`` with pairwise
steps at every grid point, scored by the chunk / entity F1 of the held-out fold. The evaluation
sets (CoNLL-2000 test, CoNLL-2003 testa) are never read. Prints the mean and standard deviation
of the fold scores and the best grid point of each task.
"""
import argparse
import itertools
import statistics
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm.feature_extraction import SequenceVectorizer
from sklearn_ssvm.metrics import chunk_f1_score

from sequence_labelling import DEFAULT_DATA, TASKS, load


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-4, 3e-4, 1e-3, 3e-3])
    parser.add_argument("--l1-ratios", nargs="+", type=float, default=[0.0])
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--count-loss", action="store_true",
                        help="ChainCRF(normalize_loss=False), the recommended loss")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    for task in args.tasks:
        F_train, Y_train, _, _ = load(task, args.data, evaluation=False)
        folds = list(KFold(args.folds, shuffle=True, random_state=0).split(F_train))
        results = {}
        for alpha, l1_ratio in itertools.product(args.alphas, args.l1_ratios):
            scores, cpu = [], time.process_time()
            for train, held in folds:
                vec = SequenceVectorizer()
                X_fit = vec.fit_transform([F_train[i] for i in train])
                X_held = vec.transform([F_train[i] for i in held])
                est = BCFWStructuredSVM(ChainCRF(normalize_loss=not args.count_loss),
                                        alpha=alpha, l1_ratio=l1_ratio, step="pairwise",
                                        tol=0.0, max_iter=args.max_iter, random_state=0)
                est.fit(X_fit, [Y_train[i] for i in train])
                scores.append(100 * chunk_f1_score([Y_train[i] for i in held],
                                                   est.predict(X_held)))
            results[alpha, l1_ratio] = scores
            print(f"{task} alpha={alpha:g} l1_ratio={l1_ratio:g}: F1 "
                  f"{statistics.mean(scores):.2f} +- {statistics.stdev(scores):.2f} "
                  f"({time.process_time() - cpu:.0f} CPU s)", flush=True)
        best = max(results, key=lambda key: np.mean(results[key]))
        print(f"{task}: best alpha={best[0]:g} l1_ratio={best[1]:g}, cross-validated F1 "
              f"{np.mean(results[best]):.2f}")


if __name__ == "__main__":
    main()
