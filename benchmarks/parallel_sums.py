"""BMRM and AGM on 1 and more threads: wall seconds over a fixed number of iterations.

    python benchmarks/parallel_sums.py [--tasks chunking ner] [--solvers bmrm agm]
        [--threads 1 2] [--repeats 5] [--iters-bmrm 40] [--iters-agm 6]
        [--data ../shared/datasets]

``BMRMStructuredSVM(ChainCRF())`` and ``SmoothSSVMClassifier(ChainCRF(), solver="agm",
smoothing="entropy", top_k=None)``, every other setting at its default but ``max_iter``
(``--iters-bmrm``, ``--iters-agm``), ``tol=0`` (no early stop: the ConvergenceWarning is
expected and silenced) and ``n_jobs`` in ``--threads``. Both take their sums over the examples
through ``solvers/sums.py`` (``ThreadSums``), added in one fixed order: the iterates are the same
to the bit for any ``n_jobs``, so the ratio of wall times over a fixed number of iterations is
the ratio to any gap. At the default ``alpha`` neither reaches its default tolerance in
reasonable time on CoNLL (gaps far from it after 150 BMRM or 40 AGM iterations), hence the
fixed count.

For each task and solver, a fit on 50 examples for each thread count first compiles (or loads)
the kernels, reported apart; then the fits alternate over the thread counts ``--repeats``
times, so that the shared machine's drift falls on all of them. Columns, medians over the
repeats: wall and CPU seconds of the fit (``time.process_time``: all threads of this process),
iterations, wall seconds per iteration (fit wall / ``n_iter_``, the packing included) and after
the first (from ``history_``: what each further iteration of a long fit costs), the final
certified relative gap (``duality_gap_ / loss_scale_``), the ratios of the wall time and of the
seconds per iteration after the first to the first thread count's, and whether ``coef_`` and
every iteration's objective and gap are identical to the bit (``np.array_equal``) to the first
fit's in every fit of that thread count.

Tasks: CoNLL-2000 chunking (train) and CoNLL-2003 NER (eng.train) with the sklearn-crfsuite
template features (``benchmarks/parallel_bcfw.py``'s ``load``).
"""
import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def make_estimator(solver, max_iter, n_jobs=1, cluster=False):
    """The benchmark's BMRM or AGM fit: every default but ``max_iter``, ``tol=0``."""
    from sklearn_ssvm import BMRMStructuredSVM, ChainCRF, SmoothSSVMClassifier
    if solver == "bmrm":
        return BMRMStructuredSVM(ChainCRF(), max_iter=max_iter, tol=0.0, n_jobs=n_jobs,
                                 cluster=cluster)
    return SmoothSSVMClassifier(ChainCRF(), solver="agm", smoothing="entropy", top_k=None,
                                max_iter=max_iter, tol=0.0, n_jobs=n_jobs, cluster=cluster)


def fingerprint(est):
    """``coef_`` and every iteration's objective and gap: the iterates, to compare to the bit
    (BMRM's ``coef_``, its best iterate, can be ``w_0`` for many iterations)."""
    return np.concatenate([est.coef_, [r["objective"] for r in est.history_],
                           [r["gap"] for r in est.history_]])


def steady_iteration(est):
    """Wall seconds per iteration after the first (``history_``'s clock): what a long fit
    pays per iteration, without the packing, the loss scale and the first iteration's
    allocations, which a fit pays once."""
    times = [record["time"] for record in est.history_]
    return (times[-1] - times[0]) / max(1, len(times) - 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["chunking"], choices=["chunking", "ner"])
    parser.add_argument("--solvers", nargs="+", default=["bmrm", "agm"],
                        choices=["bmrm", "agm"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iters-bmrm", type=int, default=40)
    parser.add_argument("--iters-agm", type=int, default=6)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    import os

    from sklearn.exceptions import ConvergenceWarning

    import parallel_bcfw
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    iters = {"bmrm": args.iters_bmrm, "agm": args.iters_agm}

    print("    python " + " ".join(sys.argv))
    print(f"({os.cpu_count()} cores)\n")
    print("| task | solver | threads | wall s | CPU s | iterations | wall s / iteration | "
          "s / iteration after the first | relative gap | wall / first | "
          "iteration / first | same coef_ to the bit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    compiled = []
    for task in args.tasks:
        X, Y, _, _, _ = parallel_bcfw.load(task, args.data)
        for solver in args.solvers:
            t = time.perf_counter()
            for n_jobs in args.threads:
                make_estimator(solver, 1, n_jobs).fit(X[:50], Y[:50])
            compile_s = time.perf_counter() - t
            runs = {n_jobs: [] for n_jobs in args.threads}
            reference = None
            for _ in range(args.repeats):
                for n_jobs in args.threads:
                    est = make_estimator(solver, iters[solver], n_jobs)
                    wall, cpu = time.perf_counter(), time.process_time()
                    est.fit(X, Y)
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    if reference is None:
                        reference = fingerprint(est)
                    runs[n_jobs].append((wall, cpu, est.n_iter_,
                                         est.duality_gap_ / est.loss_scale_,
                                         steady_iteration(est),
                                         np.array_equal(fingerprint(est), reference,
                                                        equal_nan=True)))
            base = statistics.median(r[0] for r in runs[args.threads[0]])
            base_iteration = statistics.median(r[4] for r in runs[args.threads[0]])
            for n_jobs, rs in runs.items():
                wall, cpu, n_iter, gap, steady = (statistics.median(r[k] for r in rs)
                                                  for k in range(5))
                same = "yes" if all(r[5] for r in rs) else "NO"
                print(f"| {task} | {solver} | {n_jobs} | {wall:.2f} | {cpu:.2f} | {n_iter:g} | "
                      f"{wall / n_iter:.3f} | {steady:.3f} | {gap:.3e} | {wall / base:.2f} | "
                      f"{steady / base_iteration:.2f} | {same} |", flush=True)
            compiled.append(f"{task} {solver} {compile_s:.1f} s")
    print(f"\n(compilation or cache load, 50 examples on each thread count: "
          f"{', '.join(compiled)})")


if __name__ == "__main__":
    main()
