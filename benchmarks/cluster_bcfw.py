"""One BCFW fit on a local dask cluster against one process: rounds, wall time, the same gap.

    python benchmarks/cluster_bcfw.py [--workers 2] [--local-passes 1] [--rel-tol 3e-3]

OCR letters (all 6,877 words, ``ChainCRF()``, ``alpha=None``'s rule), one BCFW fit in this
process (``solvers.bcfw.bcfw``, pairwise steps) and one on a ``LocalCluster`` of ``--workers``
worker processes of one thread each (``solvers.bcfw_cluster.bcfw_cluster``), both to the
relative certified gap ``--rel-tol`` (times ``loss_scale``). Prints passes or rounds, wall
seconds, the certified gap, the distance between the two models and its bound from the gaps,
and the bytes a round moves (``w`` out to every worker, one change of ``w`` back from each).
"""
import argparse
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--local-passes", type=int, default=1)
    parser.add_argument("--rel-tol", type=float, default=3e-3)
    args = parser.parse_args()
    import distributed

    from sklearn_ssvm import ChainCRF
    from sklearn_ssvm.datasets import load_ocr_letters
    from sklearn_ssvm.solvers.bcfw import bcfw
    from sklearn_ssvm.solvers.bcfw_cluster import bcfw_cluster

    bunch = load_ocr_letters()
    problem = ChainCRF().prepare(bunch.data, bunch.target)
    alpha = problem.default_alpha()
    tol = args.rel_tol * problem.loss_scale()
    bcfw(problem.subset(np.arange(50)), alpha, max_iter=1)  # compile or load the kernels
    t = time.perf_counter()
    local = bcfw(problem, alpha, tol=tol, max_iter=1000, gap_check=1, random_state=0)
    local_s = time.perf_counter() - t
    print(f"one process: {local.n_iter} passes, {local_s:.1f} s, gap "
          f"{local.duality_gap / problem.loss_scale():.2e} relative")
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        bcfw_cluster(client, problem.subset(np.arange(50)), alpha, max_iter=1)  # warm workers
        t = time.perf_counter()
        fit = bcfw_cluster(client, problem, alpha, tol=tol, max_iter=1000,
                           local_passes=args.local_passes, random_state=0)
        cluster_s = time.perf_counter() - t
    bound = (np.sqrt(2 * fit.duality_gap / alpha) + np.sqrt(2 * local.duality_gap / alpha))
    print(f"{args.workers} workers, {args.local_passes} local passes a round: {fit.n_iter} "
          f"rounds, {cluster_s:.1f} s, gap {fit.duality_gap / problem.loss_scale():.2e} "
          f"relative, converged {fit.converged}")
    print(f"||coef_cluster - coef_local|| = {np.linalg.norm(fit.coef - local.coef):.3g} "
          f"<= {bound:.3g} (the gaps' bound)")
    print(f"a round moves {problem.n_params * 8 * args.workers * 2 / 1e6:.2f} MB "
          f"(w to each worker, a change of w back from each; float64)")


if __name__ == "__main__":
    main()
