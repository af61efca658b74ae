"""What a data-parallel exact-gap or full-gradient pass over dask partitions would cost.

    python benchmarks/data_parallel_plan.py [--data ../shared/datasets/conll2000] [--repeats 3]

Both passes are sums over examples: each partition of the training set needs the current
weights ``w`` (broadcast) and returns its part of the sum (the gap pass: per-example gaps, a few
floats each; the full-gradient pass: a ``n_params`` vector, reduced across partitions). On
CoNLL-2000 with the CRFsuite template features this measures, on one thread: the exact-gap pass
(batched loss-augmented Viterbi) and the full gradient of the l2-smoothed loss (top-5), the size
of ``w`` and the time to serialise it, and on a local dask cluster of 2 worker processes the
time to broadcast ``w`` to both workers and to gather one ``n_params`` vector from each.
Medians of ``--repeats``.
"""
import argparse
import pickle
import statistics
import time
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "conll2000"


def median_seconds(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    from sklearn_ssvm import ChainCRF
    from sklearn_ssvm.datasets import load_conll2000_chunking
    from sklearn_ssvm.solvers._common import kernel_threads
    from sklearn_ssvm.solvers.smooth import Smoothing, full_gradient
    from sklearn_ssvm.structures.base import smoothing_code

    data = load_conll2000_chunking(args.data)
    problem = ChainCRF().prepare(data.X_train, data.Y_train)
    w = np.random.default_rng(0).normal(scale=1e-3, size=problem.n_params)
    top5 = Smoothing(*smoothing_code("l2", 5, problem.kind), 0.1)
    with kernel_threads(1):
        problem.run_oracle(w, True)  # compile / load
        full_gradient(problem, w, top5)
        gap_pass = median_seconds(lambda: problem.run_oracle(w, True), args.repeats)
        grad_pass = median_seconds(lambda: full_gradient(problem, w, top5), args.repeats)
    serialise = median_seconds(lambda: pickle.loads(pickle.dumps(w)), args.repeats)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        workers = list(client.scheduler_info()["workers"])

        def broadcast():
            future = client.scatter(w, broadcast=True, hash=False)
            client.replicate([future])
            return future
        broadcast()
        bcast = median_seconds(broadcast, args.repeats)
        futures = [client.submit(np.ones, problem.n_params, workers=[a], pure=False)
                   for a in workers]
        client.gather(futures)
        gather = median_seconds(lambda: client.gather(
            [client.submit(np.ones, problem.n_params, workers=[a], pure=False)
             for a in workers]), args.repeats)
    mb = w.nbytes / 1e6
    print(f"CoNLL-2000: {problem.n_samples} sentences, {problem.n_params:,} parameters "
          f"({mb:.1f} MB in float64)")
    print("| step | seconds |")
    print("|---|---|")
    print(f"| exact-gap pass, 1 thread | {gap_pass:.3f} |")
    print(f"| full gradient (l2, top-5), 1 thread | {grad_pass:.3f} |")
    print(f"| pickle + unpickle w | {serialise:.3f} |")
    print(f"| broadcast w to 2 local workers | {bcast:.3f} |")
    print(f"| gather one {mb:.1f} MB vector from each of 2 workers | {gather:.3f} |")
    print(f"at 1 Gbit/s (125 MB/s) one copy of w takes {mb / 125:.3f} s on the wire")


if __name__ == "__main__":
    main()
