"""One BCFW fit on a local dask cluster against one process, and a measured model of P workers.

    python benchmarks/cluster_bcfw.py [--task ocr|chunking|ner] [--workers 2]
        [--partitions 2] [--local-passes 1] [--rel-tol 3e-3] [--max-rounds 1000]
        [--model 2 4 8 16] [--link-mb-s 125] [--data ../shared/datasets]

OCR letters (all 6,877 words) or a CoNLL task (``benchmarks/parallel_bcfw.py``'s data), with
``ChainCRF()`` at ``alpha=None``'s rule. One BCFW fit in this process
(``solvers.bcfw.bcfw``, pairwise steps) and, for each count in ``--partitions``, one on a
``LocalCluster`` of ``--workers`` worker processes of one thread each
(``solvers.bcfw_cluster.bcfw_cluster``, that many partitions; a round's result does not depend
on the workers), all to the relative certified gap ``--rel-tol`` (times ``loss_scale``),
certificates every 5 passes or rounds. Prints passes or rounds, wall seconds, the certified
gap, and the distance between the models with its bound from the gaps.

Then the pieces of a round, measured apart: a partition's compute (one local pass over
``n / K`` examples, in this process), the fraction of ``w``'s entries its change touches (what
travels back, as indices and values), and the broadcast and gather of a dense ``w`` on the local
cluster. The model of ``P`` workers for each count in ``--model``: a round computes
``t_pass / P`` and moves, through the driver's link of ``--link-mb-s`` MB/s, ``P`` sparse changes
back and the summed change out to every worker (at most ``P`` times a change's entries),
16 bytes an entry; ``P`` partitions need ``R(P)`` rounds where one process needs ``R(1)``
passes (``R(P) / R(1)`` measured for the ``--partitions`` counts that converged, beyond them
``P^beta`` with ``beta`` fitted to those). Certificates (a dense ``w`` each way every
``gap_check`` rounds) are left out of the model.
"""
import argparse
import statistics
import time
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
ENTRY_BYTES = 16  # an int64 index and a float64 value


def load(task, data):
    from sklearn_ssvm import ChainCRF
    if task == "ocr":
        from sklearn_ssvm.datasets import load_ocr_letters
        bunch = load_ocr_letters()
        return ChainCRF().prepare(bunch.data, bunch.target)
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    import parallel_bcfw
    X, Y, _, _, _ = parallel_bcfw.load(task, data)
    return ChainCRF().prepare(X, Y)


def change_fraction(problem, alpha, partitions, rounds=3):
    """Seconds of a partition's round over ``n / partitions`` examples and the fraction of
    ``w``'s entries its change touches (medians over the first ``rounds`` rounds but the
    first)."""
    from sklearn_ssvm.solvers.bcfw_cluster import _Change, _local_round, _new_partition
    part = _new_partition(problem.subset(np.arange(problem.n_samples // partitions)),
                          problem.n_samples, 0, 8, problem.n_params)
    update, seconds, touched = _Change(np.zeros(problem.n_params)), [], []
    for _ in range(rounds + 1):
        start = time.perf_counter()
        part, update = _local_round(part, update, alpha, partitions, 1, "pairwise", "gap", 64)
        seconds.append(time.perf_counter() - start)
        touched.append(update.indices.shape[0] / problem.n_params)
    return statistics.median(seconds[1:]), statistics.median(touched[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="ocr", choices=["ocr", "chunking", "ner"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", nargs="+", type=int, default=[2])
    parser.add_argument("--local-passes", type=int, default=1)
    parser.add_argument("--rel-tol", type=float, default=3e-3)
    parser.add_argument("--max-rounds", type=int, default=1000)
    parser.add_argument("--model", nargs="+", type=int, default=[2, 4, 8, 16])
    parser.add_argument("--link-mb-s", type=float, default=125.0)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    import distributed

    from sklearn_ssvm.solvers.bcfw import bcfw
    from sklearn_ssvm.solvers.bcfw_cluster import bcfw_cluster

    problem = load(args.task, args.data)
    alpha = problem.default_alpha()
    tol = args.rel_tol * problem.loss_scale()
    mb = problem.n_params * 8 / 1e6
    print(f"{args.task}: {problem.n_samples} examples, {problem.n_params} parameters "
          f"({mb:.1f} MB in float64)")
    bcfw(problem.subset(np.arange(50)), alpha, max_iter=1)  # compile or load the kernels
    start = time.perf_counter()
    local = bcfw(problem, alpha, tol=tol, max_iter=args.max_rounds, gap_check=5,
                 step="pairwise", random_state=0)
    local_s = time.perf_counter() - start
    t_pass = local_s / local.n_iter
    print(f"one process: {local.n_iter} passes, {local_s:.1f} s ({t_pass:.3f} s a pass, "
          f"checks included), gap {local.duality_gap / problem.loss_scale():.2e} relative")
    rounds = {1: local.n_iter}
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        bcfw_cluster(client, problem.subset(np.arange(50)), alpha, max_iter=1)  # warm workers
        for k in args.partitions:
            start = time.perf_counter()
            fit = bcfw_cluster(client, problem, alpha, tol=tol, max_iter=args.max_rounds,
                               gap_check=5, n_partitions=k, local_passes=args.local_passes,
                               random_state=0)
            seconds = time.perf_counter() - start
            if fit.converged:  # else a lower bound, left out of the model's growth
                rounds[k] = fit.n_iter
            bound = (np.sqrt(2 * fit.duality_gap / alpha)
                     + np.sqrt(2 * local.duality_gap / alpha))
            print(f"{k} partitions on {args.workers} workers, {args.local_passes} local passes "
                  f"a round: {fit.n_iter} rounds ({fit.n_iter / local.n_iter:.1f}x the passes), "
                  f"{seconds:.1f} s, gap {fit.duality_gap / problem.loss_scale():.2e} relative, "
                  f"converged {fit.converged}; ||coef_cluster - coef_local|| = "
                  f"{np.linalg.norm(fit.coef - local.coef):.3g} <= {bound:.3g}", flush=True)
        v = np.random.default_rng(0).normal(size=problem.n_params)
        futures = [client.submit(np.zeros, problem.n_params, pure=False)
                   for _ in range(args.workers)]
        broadcast, gather = [], []
        for _ in range(5):
            start = time.perf_counter()
            shared = client.scatter(v, broadcast=True)
            broadcast.append(time.perf_counter() - start)
            futures = [client.submit(np.add, f, shared, pure=False) for f in futures]
            distributed.wait(futures)
            start = time.perf_counter()
            client.gather(futures)
            gather.append(time.perf_counter() - start)
    print(f"dense w ({mb:.1f} MB) on the local cluster: broadcast to {args.workers} workers "
          f"{statistics.median(broadcast):.3f} s, gather one from each "
          f"{statistics.median(gather):.3f} s (medians of 5)")
    measured = [k for k in rounds if k > 1]
    # R(P) / R(1) = P^beta, beta fitted (through the origin, log-log) to the measured counts
    beta = (1.0 if not measured else
            sum(np.log(rounds[k] / rounds[1]) * np.log(k) for k in measured)
            / sum(np.log(k) ** 2 for k in measured))
    print(f"\nModel of P workers (link {args.link_mb_s:.0f} MB/s at the driver; R(P)/R(1): "
          f"measured where given, else P^{beta:.2f} fitted to the measured counts):")
    print("| P | a partition's round s (measured) | change touches | MB a round | "
          "R(P) / R(1) | a round s | time / one process |")
    print("|---|---|---|---|---|---|---|")
    for p in args.model:
        round_s, touched = change_fraction(problem, alpha, p)
        entries = touched * problem.n_params
        moved = p * (entries + min(problem.n_params, p * entries)) * ENTRY_BYTES / 1e6
        growth = rounds[p] / rounds[1] if p in rounds else float(p) ** beta
        round_total = round_s + moved / args.link_mb_s
        print(f"| {p} | {round_s:.3f} | {100 * touched:.1f}% | {moved:.1f} | {growth:.1f} | "
              f"{round_total:.3f} | {growth * round_total / t_pass:.1f} |", flush=True)


if __name__ == "__main__":
    main()
