"""One BCFW fit on 1 and more threads: wall seconds to the same certified gap, and the F1.

    python benchmarks/parallel_bcfw.py [--tasks ocr chunking ner] [--threads 1 2]
        [--repeats 2] [--data ../shared/datasets] [--tol 3e-3]

``BCFWStructuredSVM(ChainCRF(), random_state=0)`` at its defaults (pairwise steps, tol 3e-3
relative, or ``--tol``), fitted with ``n_jobs`` in ``--threads``: ``n_jobs=1`` runs the
sequential steps, more threads the parallel passes (``solvers/bcfw.py:_Steps.parallel_pass``:
each thread steps its own blocks; the packing and the exact-gap passes are threaded too). The
fits alternate over the thread counts ``--repeats`` times, so that the shared machine's drift
falls on all of them; medians. A fit on 50 examples first compiles (or loads) the kernels,
reported apart.

Tasks: OCR letters (all 6,877 words, scored on the training words), CoNLL-2000 chunking
(train, scored on test) and CoNLL-2003 NER (eng.train, scored on the development set
eng.testa) with the sklearn-crfsuite template features. Columns: wall and CPU seconds of the
fit, passes, the certified relative gap (``duality_gap_ / loss_scale_``) and F1 (chunk or
entity F1; OCR: letter accuracy), medians over the repeats (F1 with its range: fits on several
threads differ from run to run), and the ratio of each wall time to one thread's.
"""
import argparse
import statistics
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def load(task, data):
    """Training inputs and labels, evaluation inputs and labels, and a scorer."""
    from sklearn_ssvm.metrics import chunk_f1_score
    if task == "ocr":
        import numpy as np

        from sklearn_ssvm.datasets import load_ocr_letters
        bunch = load_ocr_letters()

        def accuracy(Y, P):
            return 100 * np.mean(np.concatenate(Y) == np.concatenate(P))
        return bunch.data, bunch.target, bunch.data, bunch.target, accuracy
    import sequence_labelling
    from sklearn_ssvm.feature_extraction import SequenceVectorizer
    F_train, Y_train, F_eval, Y_eval = sequence_labelling.load(task, data)
    vec = SequenceVectorizer()
    X_train, X_eval = vec.fit_transform(F_train), vec.transform(F_eval)

    def f1(Y, P):
        return 100 * chunk_f1_score(Y, P, scheme="iob")
    return X_train, Y_train, X_eval, Y_eval, f1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["ocr", "chunking", "ner"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--tol", type=float, default=3e-3)
    args = parser.parse_args()
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from sklearn_ssvm import BCFWStructuredSVM, ChainCRF

    print("| task | threads | wall s | CPU s | passes | relative gap | F1 | wall / 1 thread |")
    print("|---|---|---|---|---|---|---|---|")
    for task in args.tasks:
        X, Y, X_eval, Y_eval, score = load(task, args.data)
        t = time.perf_counter()
        for n_jobs in args.threads:
            BCFWStructuredSVM(ChainCRF(), max_iter=1, n_jobs=n_jobs).fit(X[:50], Y[:50])
        compile_s = time.perf_counter() - t
        runs = {n_jobs: [] for n_jobs in args.threads}
        for _ in range(args.repeats):
            for n_jobs in args.threads:
                est = BCFWStructuredSVM(ChainCRF(), random_state=0, tol=args.tol,
                                        n_jobs=n_jobs)
                wall, cpu = time.perf_counter(), time.process_time()
                est.fit(X, Y)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                runs[n_jobs].append((wall, cpu, est.n_iter_, est.duality_gap_ / est.loss_scale_,
                                     score(Y_eval, est.predict(X_eval))))
        base = statistics.median(r[0] for r in runs[args.threads[0]])
        for n_jobs, rs in runs.items():
            wall, cpu, passes, gap, f1 = (statistics.median(r[k] for r in rs) for k in range(5))
            # several threads' fits are not reproducible: the F1 of each repeat differs
            spread = f" ({min(r[4] for r in rs):.2f}-{max(r[4] for r in rs):.2f})"
            print(f"| {task} | {n_jobs} | {wall:.2f} | {cpu:.2f} | {passes:g} | {gap:.2e} | "
                  f"{f1:.2f}{spread if len(rs) > 1 else ''} | {wall / base:.2f} |", flush=True)
        print(f"(compilation or cache load, {task}: {compile_s:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
