"""CoNLL-2000 chunking: SGD, SVRG, Casimir-SVRG (const, adapt) and BCFW vs CRFsuite.

    python benchmarks/casimir.py [--epochs 20] [--alpha 1/n] [--solvers sgd,svrg,...]
                                 [--crfsuite] [--json results.json]

All solvers train ``alpha/2 ||w||^2 + mean structured hinge`` (normalised Hamming loss) on the
CRFsuite tutorial's token features (``load_conll2000_chunking``) from ``w = 0`` with their
default settings (learning rates picked automatically, the pick's time included in the fit),
for ``--epochs`` epochs on all training sentences (no early stopping). The ``defaults`` row is
``SmoothSSVMClassifier(ChainCRF(), alpha=alpha)`` as a user got it before 0.1: the normalised
loss and early stopping on a held-out tenth of the training sentences (every run here keeps the
normalised loss of the figures in the user guide).
Reported per solver: the learning rate, seconds per epoch (wall and CPU, evaluation excluded),
the non-smooth train objective after 1/5/10/20 epochs, the certified duality gap, and the test
chunk F1 (conlleval) of the final model and of the model after each epoch. With ``--crfsuite``
(``pip install sklearn-crfsuite``) CRFsuite's L-BFGS (c1 = c2 = 0.1, 100 iterations) trains on the
very same token features in the same process. The first fit of the process includes numba's
compilation or cache load: a warm-up fit on 50 sentences runs first and is reported apart.
"""
import argparse
import json
from pathlib import Path

import numpy as np

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, SmoothSSVMClassifier
from sklearn_ssvm.datasets import load_conll2000_chunking
from sklearn_ssvm.metrics import chunk_f1_score

from _timing import Stopwatch

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "conll2000"
SOLVERS = {
    "sgd": dict(solver="sgd", smoothing=None),
    "svrg": dict(solver="svrg", mu_schedule="const"),
    "casimir-const": dict(solver="casimir-svrg", mu_schedule="const"),
    "casimir-adapt": dict(solver="casimir-svrg", mu_schedule="expo"),
}
#: ``SmoothSSVMClassifier(ChainCRF(), alpha=alpha)`` with the defaults before 0.1 (early
#: stopping on a held-out tenth included); the others run ``--epochs`` on all examples
DEFAULTS = "defaults"
CHECKPOINTS = (1, 5, 10, 20)


def crfsuite_items(vectorizer, X):
    """The same token features as CRFsuite attribute dicts."""
    names = vectorizer.get_feature_names_out()
    return [[{names[j]: v for j, v in zip(x.indices[x.indptr[t]:x.indptr[t + 1]],
                                          x.data[x.indptr[t]:x.indptr[t + 1]])}
             for t in range(x.shape[0])] for x in X]


def run_smooth(name, data, alpha, epochs, seed):
    if name == DEFAULTS:
        est = SmoothSSVMClassifier(ChainCRF(normalize_loss=True), alpha=alpha,
                                   early_stopping="auto", random_state=seed)
    else:
        est = SmoothSSVMClassifier(ChainCRF(normalize_loss=True), alpha=alpha, max_iter=epochs,
                                   tol=0.0, early_stopping=False, random_state=seed,
                                   **SOLVERS[name])
    reference = ChainCRF()  # fitted to the same labels as the estimator's copy, to predict
    reference.prepare(data.X_train, data.Y_train)

    def test_f1(epoch, coef):
        return dict(test_f1=chunk_f1_score(data.Y_test, reference.predict(data.X_test, coef)))

    with Stopwatch() as fit:
        est.fit(data.X_train, data.Y_train, callback=test_f1)
    return est, fit


def run_bcfw(data, alpha, epochs, seed):
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=alpha, step="fw",
                            max_iter=epochs, tol=0.0, gap_check=5,
                            averaging=True, random_state=seed)
    with Stopwatch() as fit:
        est.fit(data.X_train, data.Y_train)
    return est, fit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--alpha", type=float, default=None, help="default 1/n")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--solvers",
                        default="sgd,svrg,casimir-const,casimir-adapt,bcfw," + DEFAULTS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--crfsuite", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    with Stopwatch() as load:
        data = load_conll2000_chunking(args.data)
    n = len(data.X_train)
    alpha = 1.0 / n if args.alpha is None else args.alpha
    print(f"CoNLL-2000: {n} train / {len(data.X_test)} test sentences, "
          f"{len(data.vectorizer.vocabulary_)} attributes; features in {load.wall:.1f} s; "
          f"alpha = {alpha:.3g}")
    with Stopwatch() as warm:
        SmoothSSVMClassifier(ChainCRF(), max_iter=1).fit(data.X_train[:50], data.Y_train[:50])
    print(f"warm-up (numba compile or cache load): {warm.wall:.1f} s wall")

    results = {}
    for name in args.solvers.split(","):
        if name == "bcfw":
            est, fit = run_bcfw(data, alpha, args.epochs, args.seed)
            history = [dict(epoch=h["iter"], time=h["time"], objective=h["objective"],
                            gap=h["gap"]) for h in est.history_ if np.isfinite(h["gap"])]
            extra = "averaged, exact gap every 5 passes (included in the time)"
        else:
            est, fit = run_smooth(name, data, alpha, args.epochs, args.seed)
            history = est.history_
            extra = f"learning rate {est.learning_rate_:.3g}"
            if est.validation_scores_ is not None:
                best = 1 + max(range(est.n_iter_), key=est.validation_scores_.__getitem__)
                extra += f"; early stopping kept epoch {best} of {est.n_iter_}"
        f1 = chunk_f1_score(data.Y_test, est.predict(data.X_test))
        per_epoch = history[-1]["time"] / history[-1]["epoch"]
        results[name] = dict(fit_wall=fit.wall, fit_cpu=fit.cpu, f1=f1, history=history,
                             seconds_per_epoch=per_epoch)
        print(f"{name:14s} fit {fit.wall:6.1f} s wall {fit.cpu:6.1f} s CPU "
              f"({per_epoch:.2f} s/epoch), test F1 {100 * f1:.2f}; {extra}")
        marks = {h["epoch"]: h for h in history}
        print("    objective after " + ", ".join(
            f"{k}: {marks[k]['objective']:.5f}" for k in CHECKPOINTS if k in marks)
            + f"; final gap {history[-1]['gap']:.3g}")

    if args.crfsuite:
        import sklearn_crfsuite
        train = crfsuite_items(data.vectorizer, data.X_train)
        test = crfsuite_items(data.vectorizer, data.X_test)
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100)
        with Stopwatch() as fit:
            crf.fit(train, data.Y_train)
        f1 = chunk_f1_score(data.Y_test, crf.predict(test))
        results["crfsuite"] = dict(fit_wall=fit.wall, fit_cpu=fit.cpu, f1=f1)
        print(f"{'CRFsuite':14s} fit {fit.wall:6.1f} s wall {fit.cpu:6.1f} s CPU, "
              f"test F1 {100 * f1:.2f}")
        for name, r in results.items():
            if name != "crfsuite":
                print(f"    {name}: F1 {100 * (r['f1'] - f1):+.2f} vs CRFsuite, wall ratio "
                      f"{r['fit_wall'] / fit.wall:.2f}, CPU ratio {r['fit_cpu'] / fit.cpu:.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float))


if __name__ == "__main__":
    main()
