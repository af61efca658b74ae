"""Loopy graphs at image scale: TRW-S per call against the memory-bandwidth floor of a sweep,
BCFW per pass, peak memory per node, passes to stop and accuracy, on grids of 32x32 to 128x128
pixels and superpixel graphs of 100 to 1,000 nodes (``make_segmentation``, 8 states).

    python benchmarks/large_graphs.py [--configs grid32 grid64 grid128 sp100 sp300 sp1000]
        [--max-iter PASSES] [--bmrm]

Each configuration runs in its own process (its peak memory is its own): the training set
holds about 32,000 pixels (grids) or 20,000 nodes (superpixels), the test set a quarter of
that, from other seeds. It reports

- the stream bandwidth of this machine (a numpy copy of 256 MB, bytes read and written per
  second, median of 5) and the floor of one TRW-S sweep at it: the bytes a sweep must move,
  ``8 (n S + m S^2 + 3 m S)`` (the potentials once, both messages of each of the ``m`` edges
  read and one written);
- TRW-S on the largest training image at the fitted weights, loss-augmented: milliseconds per
  sweep (half a forward-backward iteration, the median of 5 runs of ``trws_steps``) and its
  ratio to the floor, nanoseconds per node-state pair and sweep, and one call of BCFW's
  checks (TRW-S to its bound, at most 30 iterations, from zero messages): milliseconds and
  iterations;
- ``BCFWStructuredSVM(GraphCRF(edge_features=True))`` at its defaults (``--max-iter``: at most
  that many passes instead of ``max_iter=None``'s budget): wall and CPU seconds, passes and
  the budget, block steps (passes times images), seconds per pass, whether it stopped by
  itself (``converged_``), the gap and its
  relaxation's part relative to ``loss_scale_``, test pixel accuracy, and the fit's peak
  resident memory above what the process held before it (Linux's ``VmHWM`` after resetting
  it), over the nodes of the training set (bytes per node);
- ``predict_marginals`` on the test set (TRW's pseudo-marginals): microseconds per node, on
  graphs of at most 16,384 nodes (TRW's spanning-tree weights: the exact uniform ones up to
  2,048 nodes, an average of random spanning trees beyond).

``--bmrm``: ``BMRMStructuredSVM(GraphCRF(edge_features=True))`` at its defaults instead, beside
BCFW's figures above: wall seconds, iterations, whether it stopped by itself, whether its gap
is certified (BMRM's gap takes TRW-S's labelings, not its bounds) and test pixel accuracy.

numba compiles in a small warm-up fit first: the timings are warm.
"""
import argparse
import json
import subprocess
import sys
import time
import warnings

import numpy as np

CONFIGS = {
    "grid32": (dict(shape=(32, 32)), 32, 8),
    "grid64": (dict(shape=(64, 64)), 8, 2),
    "grid128": (dict(shape=(128, 128)), 2, 1),
    "sp100": (dict(n_nodes=100), 200, 50),
    "sp300": (dict(n_nodes=300), 60, 15),
    "sp1000": (dict(n_nodes=1000), 20, 5),
}
N_STATES = 8
MARGINALS_NODES = 16384  # predict_marginals is timed up to graphs of this many nodes


def bandwidth():
    a, b = np.ones(1 << 25), np.empty(1 << 25)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        times.append(time.perf_counter() - t)
    return 2 * a.nbytes / np.median(times)


def reset_peak():
    """Start a new peak of resident memory (Linux: ``clear_refs`` 5 resets ``VmHWM``)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def resident(field):
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024  # kB


def data(name):
    """The training and test sets of configuration ``name``."""
    from sklearn_ssvm.datasets import make_segmentation

    params, n_train, n_test = CONFIGS[name]
    return (make_segmentation(n_train, n_states=N_STATES, random_state=0, **params)
            + make_segmentation(n_test, n_states=N_STATES, random_state=1, **params))


def warmed_up(estimator_class):
    """A small fit of ``estimator_class(GraphCRF(...))``, so that numba compiles before the
    timings."""
    from sklearn_ssvm.datasets import make_segmentation
    from sklearn_ssvm.structures import GraphCRF

    Xs, Ys = make_segmentation(2, shape=(6, 6), n_states=N_STATES, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator_class(GraphCRF(edge_features=True), max_iter=2).fit(Xs, Ys), Xs


def accuracy(est, X_test, Y_test):
    return np.mean(np.concatenate(est.predict(X_test)) == np.concatenate(Y_test))


def one_bmrm(name):
    from sklearn_ssvm import BMRMStructuredSVM
    from sklearn_ssvm.structures import GraphCRF

    X, Y, X_test, Y_test = data(name)
    warmed_up(BMRMStructuredSVM)
    est = BMRMStructuredSVM(GraphCRF(n_states=N_STATES, edge_features=True))
    wall = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, Y)
    wall = time.perf_counter() - wall
    return dict(name=name, wall=wall, iterations=est.n_iter_, converged=bool(est.converged_),
                certified=bool(est.gap_certified_), accuracy=accuracy(est, X_test, Y_test))


def one(name, max_iter):
    from sklearn_ssvm import BCFWStructuredSVM
    from sklearn_ssvm._kernels.trws import trws, trws_steps
    from sklearn_ssvm.structures import GraphCRF

    X, Y, X_test, Y_test = data(name)
    small, Xs = warmed_up(BCFWStructuredSVM)
    small.predict_marginals(Xs)
    before = resident("VmRSS")
    reset_peak()
    est = BCFWStructuredSVM(GraphCRF(n_states=N_STATES, edge_features=True), random_state=0,
                            max_iter=max_iter)
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, Y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    memory = (resident("VmHWM") - before) / sum(len(y) for y in Y)
    test_accuracy = accuracy(est, X_test, Y_test)
    marginals_us = np.nan  # TRBP's milliseconds per node would take minutes beyond
    if max(len(y) for y in Y_test) <= MARGINALS_NODES:
        t = time.perf_counter()
        est.predict_marginals(X_test)
        marginals_us = (time.perf_counter() - t) / sum(len(y) for y in Y_test) * 1e6

    largest = int(np.argmax([len(y) for y in Y]))
    example = est.structure_.prepare([X[largest]], [Y[largest]]).examples[0]
    potentials, _ = est.structure_._potentials(example, est.coef_, True)
    layout, mrf = example.mrf.layout, example.mrf
    assign = np.zeros(mrf.n_nodes, dtype=np.int64)

    def sweeps(k):
        logm = np.zeros((2 * mrf.n_edges, N_STATES))
        start = time.perf_counter()
        trws_steps(potentials, layout, logm, k, assign)
        return time.perf_counter() - start

    per_sweep = np.median([(sweeps(12) - sweeps(2)) / 20 for _ in range(5)])
    logm = np.zeros((2 * mrf.n_edges, N_STATES))
    start = time.perf_counter()
    _, _, n_iter = trws(potentials, layout, logm, 30, 1e-3, assign)
    call = time.perf_counter() - start
    n, m, S = mrf.n_nodes, mrf.n_edges, N_STATES
    floor_bytes = 8 * (n * S + m * S * S + 3 * m * S)
    return dict(name=name, nodes=n, edges=m, images=len(X), per_sweep=per_sweep,
                floor_bytes=floor_bytes, per_pair_ns=per_sweep / (n * S) * 1e9, call=call,
                call_iter=int(n_iter), wall=wall, cpu=cpu, passes=est.n_iter_,
                budget=est.max_iter_,
                converged=bool(est.converged_), gap=est.duality_gap_ / est.loss_scale_,
                relaxation=est.relaxation_gap_ / est.loss_scale_, accuracy=test_accuracy,
                bytes_per_node=memory, marginals_us=marginals_us)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS))
    parser.add_argument("--max-iter", type=int, help="BCFW's passes at most (default: its "
                        "max_iter=None rule)")
    parser.add_argument("--bmrm", action="store_true", help="BMRM at its defaults instead")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_bmrm(args.one) if args.bmrm else one(args.one, args.max_iter)))
        return
    if args.bmrm:
        print("| graph | BMRM fit wall s | iterations | stopped by itself | gap certified | "
              "test accuracy |")
        print("|---|---|---|---|---|---|")
        for name in args.configs:
            out = subprocess.run([sys.executable, __file__, "--one", name, "--bmrm"],
                                 check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"| {name} | {r['wall']:.1f} | {r['iterations']} | {r['converged']} | "
                  f"{r['certified']} | {r['accuracy']:.4f} |", flush=True)
        return
    stream = bandwidth()
    print(f"stream bandwidth: {stream / 1e9:.1f} GB/s (numpy copy of 256 MB, median of 5)\n")
    print("| graph | nodes x images | TRW-S ms / sweep | floor ms | ratio | ns / node-state | "
          "check call ms (iterations) | fit wall s (CPU) | passes (budget) | steps | s / pass | "
          "stopped by itself | gap | relaxation's part | test accuracy | fit bytes / node | "
          "marginals us / node |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.configs:
        budget = [] if args.max_iter is None else ["--max-iter", str(args.max_iter)]
        out = subprocess.run([sys.executable, __file__, "--one", name] + budget, check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        floor = r["floor_bytes"] / stream
        print(f"| {name} | {r['nodes']} x {r['images']} | {r['per_sweep'] * 1e3:.2f} | "
              f"{floor * 1e3:.2f} | {r['per_sweep'] / floor:.1f} | {r['per_pair_ns']:.1f} | "
              f"{r['call'] * 1e3:.1f} ({r['call_iter']}) | {r['wall']:.1f} ({r['cpu']:.1f}) | "
              f"{r['passes']} ({r['budget']}) | {r['passes'] * r['images']} | "
              f"{r['wall'] / r['passes']:.3f} | {r['converged']} | "
              f"{r['gap']:.3g} | {r['relaxation']:.3g} | {r['accuracy']:.4f} | "
              f"{r['bytes_per_node']:.0f} | {r['marginals_us']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
