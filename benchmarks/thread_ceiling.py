"""What two threads can gain on this machine, and what BCFW's parallel steps lose to sharing.

    python benchmarks/thread_ceiling.py [--tasks chunking ner] [--threads 2] [--passes 12]
        [--repeats 5] [--data ../shared/datasets]

Three measurements, each the same total work on one thread and on ``--threads`` threads
(medians of ``--repeats``; the wall-time ratio is the number to read):

1. The machine. Numba kernels without the GIL, each thread on its own arrays: independent
   multiply-adds (compute-bound), and reads of 9-double rows at random indices of a 20 MB
   matrix (the oracles' access pattern: a token's feature rows of the weights), from one matrix
   shared by the threads and from one matrix per thread.
2. The batched exact-gap pass (``problem.run_oracle``): the fit's oracles on the threads with no
   write to shared memory, the best a pass of the same oracles can do.
3. The step passes of ``BCFWStructuredSVM(ChainCRF(), n_jobs=k)`` over exactly ``--passes``
   passes (``tol=0``), the threads on the shared weights (the library's parallel passes)
   against each thread on a private copy of the weights (a wrong model, timing only: what the
   passes would cost if the threads shared nothing), one thread, and one thread adding into
   the weights atomically as the parallel passes do (the same fit to the bit: what the atomic
   operations cost). Wall and CPU microseconds per step: on k threads the CPU time per step
   over one thread's is how much slower each step runs when the threads run together, and the
   wall-time ratio cannot fall below it divided by k.
"""
import argparse
import statistics
import threading
import time
from pathlib import Path

import numpy as np
from numba import njit

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@njit(nogil=True, fastmath=True)
def multiply_adds(a, reps):
    """Independent accumulators: throughput-bound arithmetic."""
    acc = np.zeros(a.shape[0])
    for _ in range(reps):
        for k in range(a.shape[0]):
            acc[k] = acc[k] * 0.999999 + a[k]
    return acc.sum()


@njit(nogil=True)
def row_reads(W, rows, out):
    """Sum the rows ``W[rows]``: latency-bound random reads, as a token's unary scores."""
    for r in rows:
        for c in range(W.shape[1]):
            out[c] += W[r, c]
    return out.sum()


def on_threads(calls):
    """Run ``calls`` (function, args) on one thread each; the wall seconds until all end."""
    threads = [threading.Thread(target=f, args=a) for f, a in calls]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def ratio(one, many, repeats):
    """Median wall seconds of ``one`` and ``many`` (lists of calls), alternating, and ratio."""
    a, b = [], []
    for _ in range(repeats):
        a.append(on_threads(one))
        b.append(on_threads(many))
    a, b = statistics.median(a), statistics.median(b)
    return a, b, b / a


def machine(k, repeats):
    rng = np.random.default_rng(0)
    lanes = rng.random(32)
    reps = 40_000_000
    multiply_adds(lanes, 1)
    yield ("independent multiply-adds",
           *ratio([(multiply_adds, (lanes, reps))],
                  [(multiply_adds, (lanes.copy(), reps // k)) for _ in range(k)], repeats))
    mats = [rng.random((280_000, 9)) for _ in range(k)]  # 20 MB each
    rows = rng.integers(0, 280_000, size=4_000_000)
    outs = [np.zeros(9) for _ in range(k)]
    row_reads(mats[0], rows[:10], outs[0])
    shares = np.array_split(rows, k)
    yield ("random row reads, one shared 20 MB matrix",
           *ratio([(row_reads, (mats[0], rows, outs[0]))],
                  [(row_reads, (mats[0], s, o)) for s, o in zip(shares, outs)], repeats))
    yield ("random row reads, a 20 MB matrix per thread",
           *ratio([(row_reads, (mats[0], rows, outs[0]))],
                  [(row_reads, (m, s, o)) for m, s, o in zip(mats, shares, outs)], repeats))


def oracle_pass(problem, k, repeats):
    from sklearn_ssvm._kernels.threads import use_threads
    w = np.random.default_rng(0).normal(size=problem.n_params) * 0.01
    times = {1: [], k: []}
    for _ in range(repeats):
        for threads in (1, k):
            with use_threads(threads):
                start = time.perf_counter()
                problem.run_oracle(w, True)
                times[threads].append(time.perf_counter() - start)
    a, b = statistics.median(times[1]), statistics.median(times[k])
    return a, b, b / a


def step_passes(X, Y, k, passes, repeats):
    """Wall and CPU microseconds per step, ``{label: (wall, cpu)}``: one thread (plain or
    atomic additions), k threads on the shared weights, k threads each on a private copy of
    the weights."""
    from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
    from sklearn_ssvm.solvers import bcfw

    clock = {"steps": 0, "wall": 0.0, "cpu": 0.0}
    variant = {"on": None}
    timed_names = ("sequential_pass", "parallel_pass")
    originals = {name: getattr(bcfw._Steps, name) for name in timed_names}
    run = bcfw._Steps._run

    def timed(original):
        def wrapper(self, *args, **kwargs):
            start, cpu = time.perf_counter(), time.process_time()
            result = original(self, *args, **kwargs)
            clock["wall"] += time.perf_counter() - start
            clock["cpu"] += time.process_time() - cpu
            clock["steps"] += result[0]
            return result
        return wrapper

    def run_variant(self, schedule, store, step0, start, shared):
        if variant["on"] == "atomic":
            return run(self, schedule, store, step0, start, True)
        if not (shared and variant["on"] == "private"):
            return run(self, schedule, store, step0, start, shared)
        weights = self.bundles[3]
        W, theta = weights.W.copy(), weights.theta.copy()
        own = bcfw._Steps(self.bundles[:3] + (weights._replace(W=W, theta=theta, Wc=W,
                                                               theta_c=theta),
                                              self.bundles[4]),
                          self.atoms, self.room_limit, self.averages)
        return run(own, schedule, store, step0, start, False)

    for name in timed_names:
        setattr(bcfw._Steps, name, timed(originals[name]))
    bcfw._Steps._run = run_variant
    try:
        results = {}
        for _ in range(repeats):
            for label, threads, how in (("1 thread", 1, None),
                                        ("1 thread, atomic additions", 1, "atomic"),
                                        (f"{k} threads, shared weights", k, None),
                                        (f"{k} threads, private weights", k, "private")):
                clock.update(steps=0, wall=0.0, cpu=0.0)
                variant["on"] = how
                BCFWStructuredSVM(ChainCRF(), tol=0.0, max_iter=passes, random_state=0,
                                  n_jobs=threads).fit(X, Y)
                results.setdefault(label, []).append(
                    (1e6 * clock["wall"] / clock["steps"], 1e6 * clock["cpu"] / clock["steps"]))
        return {label: tuple(statistics.median(r[j] for r in v) for j in (0, 1))
                for label, v in results.items()}
    finally:
        for name in timed_names:
            setattr(bcfw._Steps, name, originals[name])
        bcfw._Steps._run = run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["chunking", "ner"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--passes", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    import sys
    import warnings
    sys.path.insert(0, str(Path(__file__).parent))
    from parallel_bcfw import load

    from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
    k = args.threads
    print(f"| measurement | 1 thread s | {k} threads s | ratio |")
    print("|---|---|---|---|")
    for name, a, b, r in machine(k, args.repeats):
        print(f"| {name} | {a:.3f} | {b:.3f} | {r:.2f} |", flush=True)
    for task in args.tasks:
        X, Y, _, _, _ = load(task, args.data)
        problem = ChainCRF().prepare(X, Y)
        a, b, r = oracle_pass(problem, k, args.repeats)
        print(f"| {task}: batched exact-gap pass | {a:.3f} | {b:.3f} | {r:.2f} |", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tol=0 stops at max_iter
            for threads in (1, k):  # compile or load the kernels
                BCFWStructuredSVM(ChainCRF(), max_iter=1, n_jobs=threads).fit(X[:600], Y[:600])
            per_step = step_passes(X, Y, k, args.passes, args.repeats)
        one, one_cpu = per_step["1 thread"]
        for label, (us, cpu) in per_step.items():
            print(f"| {task}: {args.passes} step passes, {label} | {us:.2f} us/step | "
                  f"CPU {cpu:.2f} us/step ({cpu / one_cpu:.2f}) | {us / one:.2f} |", flush=True)


if __name__ == "__main__":
    main()
