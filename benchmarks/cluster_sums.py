"""BMRM and AGM on a local dask cluster against one process: seconds per iteration and memory.

    python benchmarks/cluster_sums.py [--task chunking|ner] [--replicas 1 10] [--workers 2]
        [--solvers bmrm agm] [--iters-bmrm 10] [--iters-agm 3] [--repeats 3] [--seed 0]
        [--data ../shared/datasets]

``BMRMStructuredSVM(ChainCRF())`` and ``SmoothSSVMClassifier(ChainCRF(), solver="agm",
smoothing="entropy", top_k=None)`` at every default but ``max_iter`` (``--iters-bmrm``,
``--iters-agm``), ``tol=0`` (no early stop: the ConvergenceWarning is expected and silenced) and
``n_jobs=1``, fitted in this process (``ThreadSums`` on one thread) and with ``cluster=True`` on
a ``distributed.LocalCluster`` of ``--workers`` worker processes of one thread each
(``ClusterSums``: one partition per worker, the bundle or the AGM state on this process). Both
add the sums in one fixed order: the iterates are the same to the bit, so the ratio of seconds
per iteration is the ratio to any gap.

The training set (CoNLL-2000 chunking train, or CoNLL-2003 NER eng.train, through
``benchmarks/parallel_bcfw.py``'s ``load``) is replicated ``R`` times for each ``R`` in
``--replicas``; so that the work is real, replica ``r > 0`` multiplies the feature values of each
of its sentences by a factor drawn uniformly in [0.9, 1.1] (``numpy.random.default_rng(seed +
r)``), labels kept. Each replica count gets a fresh cluster; fits on 50 examples first compile
(or load) the kernels in this process and on the workers, reported apart. Then for each solver
the one-process and the cluster fits alternate ``--repeats`` times (the shared machine's drift
falls on both); medians.

Columns: iterations; seconds per iteration, the median of the differences of ``history_``'s
``time`` after the first iteration (AGM's continuation stages restart that clock: a stage's
first record counts from its start); the first iteration's seconds apart (on the cluster it
waits for the partitions to be packed on the workers); the setup, fit wall minus the sum of the
iterations (packing, sending the partitions, the AGM constants, the estimator's own work); the
fit's wall seconds and this process's CPU seconds (``time.process_time``: on the cluster the
driver's share); the ratio cluster / one process of seconds per iteration; whether ``coef_`` and
every iteration's objective and gap are identical to the bit to the first one-process fit's in
every fit; and memory, sampled every 20 ms during each fit with psutil (the largest over the
repeats): this process's RSS before the fit (it holds the data) and its peak, and the largest
peak RSS of a worker process. After each replica count, the workers' own ``ru_maxrss`` (their
lifetime peaks) checks the sampling.
"""
import argparse
import os
import resource
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from parallel_sums import fingerprint, make_estimator  # noqa: E402  (the same fits)

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
MB = 2.0 ** 20


def replicate(X, Y, replicas, seed):
    """``X`` and ``Y`` repeated ``replicas`` times, the copies' sentences scaled by factors in
    [0.9, 1.1] (one per sentence and copy)."""
    X_out, Y_out = list(X), list(Y)
    for r in range(1, replicas):
        factors = np.random.default_rng(seed + r).uniform(0.9, 1.1, size=len(X))
        for x, factor in zip(X, factors):
            x = x.copy()
            x.data *= factor
            X_out.append(x)
        Y_out.extend(Y)
    return X_out, Y_out


class PeakRSS:
    """The largest resident set size of each of ``pids`` while in the ``with`` block, sampled
    every ``interval`` seconds from a thread (``.peak``: pid -> bytes)."""

    def __init__(self, pids, interval=0.02):
        import psutil
        self.processes = {pid: psutil.Process(pid) for pid in pids}
        self.interval = interval
        self.peak = {pid: 0 for pid in pids}
        self._stop = threading.Event()

    def _sample(self):
        for pid, process in self.processes.items():
            try:
                self.peak[pid] = max(self.peak[pid], process.memory_info().rss)
            except Exception:  # a process gone: keep what was seen
                pass

    def _run(self):
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self):
        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def iteration_seconds(history):
    """Seconds of each iteration from the cumulative ``time`` of the records (a clock that
    restarts with each AGM continuation stage: a new ``mu``, or a time that goes back)."""
    out, previous, stage = [], 0.0, None
    for record in history:
        mu = record.get("mu")
        if mu != stage or record["time"] < previous:
            previous, stage = 0.0, mu
        out.append(record["time"] - previous)
        previous = record["time"]
    return out


def timed_fit(solver, max_iter, X, Y, pids, cluster):
    est = make_estimator(solver, max_iter, cluster=cluster)
    with PeakRSS(pids) as memory:
        before = memory.peak[os.getpid()]
        wall, cpu = time.perf_counter(), time.process_time()
        est.fit(X, Y)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    seconds = iteration_seconds(est.history_)
    per_iter = statistics.median(seconds[1:] if len(seconds) > 1 else seconds)
    workers = [peak for pid, peak in memory.peak.items() if pid != os.getpid()]
    return dict(n_iter=est.n_iter_, per_iter=per_iter, first=seconds[0],
                setup=wall - sum(seconds), wall=wall, cpu=cpu, coef=fingerprint(est),
                before=before, driver=memory.peak[os.getpid()],
                worker=max(workers) if workers else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="chunking", choices=["chunking", "ner"])
    parser.add_argument("--replicas", nargs="+", type=int, default=[1, 10])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--solvers", nargs="+", default=["bmrm", "agm"],
                        choices=["bmrm", "agm"])
    parser.add_argument("--iters-bmrm", type=int, default=10)
    parser.add_argument("--iters-agm", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    import distributed
    from sklearn.exceptions import ConvergenceWarning

    import parallel_bcfw
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    iters = {"bmrm": args.iters_bmrm, "agm": args.iters_agm}

    print("    python " + " ".join(sys.argv))
    print(f"({os.cpu_count()} cores; {args.workers} worker processes of 1 thread against "
          f"1 process of 1 thread)\n")
    X0, Y0, _, _, _ = parallel_bcfw.load(args.task, args.data)
    header = ("| replicas | examples | solver | where | iterations | s / iteration | "
              "first iteration s | setup s | fit wall s | CPU s (this process) | "
              "s / iteration vs one process | same coef_ to the bit | this process MB "
              "before / peak | worker peak MB |")
    notes = []
    print(header)
    print("|" + "---|" * header.count(" | ") + "---|")
    for replicas in args.replicas:
        X, Y = replicate(X0, Y0, replicas, args.seed)
        n_tokens = sum(x.shape[0] for x in X)
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                      processes=True, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            pids = [os.getpid(), *client.run(os.getpid).values()]
            t = time.perf_counter()
            for solver in args.solvers:
                make_estimator(solver, 1).fit(X[:50], Y[:50])
                make_estimator(solver, 1, cluster=True).fit(X[:50], Y[:50])
            compile_s = time.perf_counter() - t
            for solver in args.solvers:
                runs = {"one process": [], "cluster": []}
                for _ in range(args.repeats):
                    for where in runs:
                        runs[where].append(timed_fit(solver, iters[solver], X, Y, pids,
                                                     where == "cluster"))
                reference = runs["one process"][0]["coef"]
                base = statistics.median(r["per_iter"] for r in runs["one process"])
                for where, rs in runs.items():
                    med = {key: statistics.median(r[key] for r in rs)
                           for key in ("n_iter", "per_iter", "first", "setup", "wall", "cpu")}
                    same = "yes" if all(np.array_equal(r["coef"], reference, equal_nan=True)
                                        for r in rs) else "NO"
                    before = max(r["before"] for r in rs) / MB
                    driver = max(r["driver"] for r in rs) / MB
                    worker = (f"{max(r['worker'] for r in rs) / MB:.0f}" if where == "cluster"
                              else "-")
                    print(f"| {replicas} | {len(X)} | {solver} | {where} | {med['n_iter']:g} | "
                          f"{med['per_iter']:.3f} | {med['first']:.3f} | {med['setup']:.2f} | "
                          f"{med['wall']:.2f} | {med['cpu']:.2f} | "
                          f"{med['per_iter'] / base:.2f} | {same} | {before:.0f} / "
                          f"{driver:.0f} | {worker} |", flush=True)
            maxrss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            notes.append(f"{replicas} replicas ({len(X)} sentences, {n_tokens} tokens): "
                         f"compilation or cache load {compile_s:.1f} s; workers' ru_maxrss "
                         + ", ".join(f"{kb / 1024:.0f}" for kb in maxrss.values()) + " MB")
        del X, Y
    print()
    for note in notes:
        print(f"({note})")


if __name__ == "__main__":
    main()
