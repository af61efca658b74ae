"""Measure what ``alpha=None`` should mean: the estimators at their defaults across alphas.

    python benchmarks/select_default_alpha.py [--tasks ocr chunking ner]
        [--estimators bcfw smooth] [--alphas 1e-4 3e-4 1e-3 3e-3 1e-2 3e-2 1e-1]

Every estimator at its default settings with ``ChainCRF()`` (the normalised Hamming loss), one
score per ``alpha``, never on a test set:

- ``ocr``: 3-fold cross-validation on the training words of ``split_folds(test_fold=0)``, letter
  accuracy (``score``);
- ``chunking``: 3-fold cross-validation on CoNLL-2000 ``train.txt.gz``, chunk F1;
- ``ner``: CoNLL-2003 ``eng.train`` -> ``eng.testa`` (the development set), entity F1.

The scores come from ``BCFWStructuredSVMCV`` / ``SmoothSSVMClassifierCV`` (fits warm-started
along alpha, as the CV estimators run). Prints, per task and estimator, the score at each alpha
and the alpha ``1/n`` (the former default) for comparison.
"""
import argparse

import numpy as np
from sklearn.model_selection import PredefinedSplit

from sklearn_ssvm import BCFWStructuredSVMCV, ChainCRF, SmoothSSVMClassifierCV
from sklearn_ssvm.datasets import load_ocr_letters, split_folds
from sklearn_ssvm.feature_extraction import SequenceVectorizer

from sequence_labelling import DEFAULT_DATA, load

ESTIMATORS = {"bcfw": BCFWStructuredSVMCV, "smooth": SmoothSSVMClassifierCV}


def task_data(task):
    """Training inputs, labels, the CV splitter and the scoring of ``task``."""
    if task == "ocr":
        X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
        return X, Y, 3, None
    if task == "chunking":
        F, Y, _, _ = load("chunking", DEFAULT_DATA, evaluation=False)
        return SequenceVectorizer().fit_transform(F), Y, 3, "chunk_f1"
    F_train, Y_train, F_dev, Y_dev = load("ner", DEFAULT_DATA)
    vec = SequenceVectorizer().fit(F_train)
    X = vec.transform(F_train) + vec.transform(F_dev)
    fold = np.r_[np.full(len(F_train), -1), np.zeros(len(F_dev), int)]
    return X, Y_train + Y_dev, PredefinedSplit(fold), "chunk_f1"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["ocr", "chunking", "ner"])
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS))
    parser.add_argument("--alphas", nargs="+", type=float,
                        default=[1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1])
    args = parser.parse_args()
    for task in args.tasks:
        X, Y, cv, scoring = task_data(task)
        n = len(Y) if task != "ner" else int(np.sum(cv.test_fold == -1))
        for name in args.estimators:
            est = ESTIMATORS[name](ChainCRF(), alphas=args.alphas, cv=cv, scoring=scoring,
                                   refit=False, random_state=0).fit(X, Y)
            scores = dict(zip(est.cv_results_["param_alpha"], est.cv_results_["mean_test_score"]))
            row = " ".join(f"{a:g}:{100 * scores[a]:.2f}" for a in sorted(scores))
            print(f"{task} {name} (n={n}, 1/n={1 / n:.2g}) best alpha {est.alpha_:g}: {row}",
                  flush=True)


if __name__ == "__main__":
    main()
