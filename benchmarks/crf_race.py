"""CRFsuite's own objective, raced: ``CRFClassifier`` against CRFsuite's L-BFGS, one script.

    python benchmarks/crf_race.py [--tasks chunking ner] [--data ../shared/datasets]
        [--c1 0.1] [--c2 0.1] [--crfsuite-iter 100] [--max-iter 300]

Both models see the features of ``sequence_labelling.py`` (the sklearn-crfsuite tutorial
template; ours through ``SequenceVectorizer``, ``ChainCRF(bias=False)``: the template has its
own bias attribute) and minimise the same objective, CRFsuite's ``sum_i NLL_i + c2 ||w||^2 +
c1 ||w||_1``, on one thread each (numba's kernels and numpy's BLAS), in this one process.
CRFsuite runs its L-BFGS (OWL-QN for ``c1``) for ``--crfsuite-iter`` iterations, as the
benchmarks do; its weights are read back into our parameter vector (attribute ``k:v`` is our
feature ``k=v``; labels by name) and our code evaluates the objective there, the *target*. Its log's final loss is printed beside it
(the two must agree to 1e-6 relative: the same objective on the same features). Ours then runs
up to ``--max-iter`` iterations, after a small fit that compiles the kernels (reported apart);
the race's figure is the CPU seconds (``time.process_time``) of our first iterate at or below
the target, against CRFsuite's whole fit.

Scores on the evaluation set (chunking: CoNLL-2000 test; NER: CoNLL-2003 testa), conlleval
chunk F1: CRFsuite's, ours at the iterate that reached the target (a second fit stopped
there: the same iterates), ours at the end. Calibration: the token-level expected calibration
error (10 equal bins of the top marginal; the gap between a bin's mean top marginal and the
accuracy of its argmax labels, weighted by the bin's tokens) of CRFsuite's marginals, of ours,
and of ``BCFWStructuredSVM(ChainCRF())`` at its defaults with the temperature of
``inspection.calibrate_temperature`` chosen on the last tenth of the training sentences (the
SSVM fitted on the other nine tenths).
"""
import argparse
import copy
import time
from pathlib import Path

import numpy as np

from sequence_labelling import DEFAULT_DATA, TASKS, load


def race(task, data, c1, c2, crfsuite_iter, max_iter):
    import sklearn_crfsuite
    from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, CRFClassifier
    from sklearn_ssvm.feature_extraction import SequenceVectorizer, coef_from_crfsuite
    from sklearn_ssvm.inspection import calibrate_temperature
    from sklearn_ssvm.metrics import chunk_f1_score, expected_calibration_error

    F_train, Y_train, F_eval, Y_eval = load(task, data)
    n = len(F_train)
    out = {"task": task, "sentences": n}

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=crfsuite_iter)
    cpu = time.process_time()
    crf.fit(F_train, Y_train)
    out["crfsuite_cpu"] = time.process_time() - cpu
    out["crfsuite_iter"] = crf.training_log_.last_iteration["num"]
    out["crfsuite_logged"] = crf.training_log_.last_iteration["loss"]
    out["crfsuite_f1"] = 100 * chunk_f1_score(Y_eval, crf.predict(F_eval), scheme="iob")

    vec = SequenceVectorizer()
    X_train, X_eval = vec.fit_transform(F_train), vec.transform(F_eval)
    t = time.perf_counter()
    CRFClassifier(ChainCRF(bias=False), max_iter=2).fit(X_train[:50], Y_train[:50])
    out["compile_s"] = time.perf_counter() - t

    ours = CRFClassifier(ChainCRF(bias=False), c1=c1, c2=c2, max_iter=max_iter, tol=0.0)
    cpu = time.process_time()
    ours.fit(X_train, Y_train)
    out["ours_cpu_total"] = time.process_time() - cpu
    classes = ours.classes_
    coef, out["unmapped"] = coef_from_crfsuite(crf, vec, ours.structure_)
    at_crfsuite = copy.copy(ours)
    at_crfsuite.coef_ = coef
    target = at_crfsuite.primal_objective(X_train, Y_train)
    out["target"] = n * target
    out["target_vs_log"] = abs(n * target - out["crfsuite_logged"]) / out["crfsuite_logged"]
    reached = [h for h in ours.history_ if h["objective"] <= target]
    out["ours_final"] = n * ours.objective_
    out["ours_iter_total"] = ours.n_iter_
    out["ours_gap"] = ours.duality_gap_ / ours.loss_scale_
    out["ours_f1_final"] = 100 * chunk_f1_score(Y_eval, ours.predict(X_eval), scheme="iob")
    out["ours_ece"] = expected_calibration_error(
        [np.searchsorted(classes, y) for y in Y_eval], ours.predict_marginals(X_eval))
    if reached:
        first = reached[0]
        out["ours_cpu"], out["ours_iter"] = first["cpu_time"], first["iter"]
        out["ratio"] = first["cpu_time"] / out["crfsuite_cpu"]
        at = CRFClassifier(ChainCRF(bias=False), c1=c1, c2=c2, max_iter=first["iter"], tol=0.0)
        at.fit(X_train, Y_train)
        out["ours_f1"] = 100 * chunk_f1_score(Y_eval, at.predict(X_eval), scheme="iob")

    assert sorted(crf.classes_) == list(classes)
    out["crfsuite_ece"] = expected_calibration_error(
        [np.searchsorted(classes, y) for y in Y_eval],
        [np.array([[token[label] for label in classes] for token in sentence])
         for sentence in crf.predict_marginals(F_eval)])
    cut = n - n // 10
    ssvm = BCFWStructuredSVM(ChainCRF(), random_state=0).fit(X_train[:cut], Y_train[:cut])
    temperature = calibrate_temperature(ssvm, X_train[cut:], Y_train[cut:])
    out["ssvm_temperature"] = temperature
    out["ssvm_f1"] = 100 * chunk_f1_score(Y_eval, ssvm.predict(X_eval), scheme="iob")
    out["ssvm_ece"] = expected_calibration_error(
        [np.searchsorted(ssvm.classes_, y) for y in Y_eval],
        ssvm.predict_marginals(X_eval, temperature=temperature))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["chunking", "ner"],
                        choices=["chunking", "ner"])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--c1", type=float, default=0.1)
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--crfsuite-iter", type=int, default=100)
    parser.add_argument("--max-iter", type=int, default=300)
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    from sklearn_ssvm.solvers._common import kernel_threads
    rows = []
    # one thread each: numba's kernels and the BLAS of numpy's dot products (OpenBLAS's
    # threads spin, and their CPU seconds count)
    with kernel_threads(1), threadpool_limits(1):
        for task in args.tasks:
            rows.append(race(task, args.data, args.c1, args.c2, args.crfsuite_iter,
                             args.max_iter))
            print(rows[-1], flush=True)
    print(f"\nc1 = {args.c1}, c2 = {args.c2}; CRFsuite {args.crfsuite_iter} iterations\n")
    print("| task | CRFsuite CPU s | its objective (ours at its weights / its log) | ours: CPU s "
          "to it (iterations) | CPU / CRFsuite | F1 CRFsuite / ours there / ours at the end "
          "| ECE CRFsuite / ours / SSVM (T) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        there = (f"{r['ours_cpu']:.1f} ({r['ours_iter']})", f"{r['ratio']:.2f}",
                 f"{r['ours_f1']:.2f}") if "ratio" in r else ("not reached", "", "")
        print(f"| {TASKS[r['task']][3]} {r['task']} | {r['crfsuite_cpu']:.1f} "
              f"({r['crfsuite_iter']} it.) | {r['target']:.6g} / {r['crfsuite_logged']:.6g} "
              f"(rel. {r['target_vs_log']:.1e}) | {there[0]} | {there[1]} "
              f"| {r['crfsuite_f1']:.2f} / {there[2]} / {r['ours_f1_final']:.2f} "
              f"| {r['crfsuite_ece']:.4f} / {r['ours_ece']:.4f} / {r['ssvm_ece']:.4f} "
              f"({r['ssvm_temperature']:.3g}) |")


if __name__ == "__main__":
    main()
