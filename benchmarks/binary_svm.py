"""Binary linear SVM (no bias): time to relative primal suboptimality 1e-2, 1e-4, 1e-6.

    python benchmarks/binary_svm.py [--data a9a|synthetic|both] [--small] [--budget 60]
                                    [--plot iterations.png] [--solvers pragam,bmrm-ls,...]
                                    [--a9a-lambdas 17,20,23]

Problem (spec 003 eq. (20) without bias, the paper's "Pragam" setting):
``J(w) = lambda/2 ||w||^2 + (1/n) sum_i [1 - y_i <x_i, w>]_+``, with ``lambda = 2^-18`` on a9a
(spec 003 Appendix D, "adult9"; ``--a9a-lambdas 17,20,23`` for ``2^-17``, ``2^-20``,
``2^-23``) and ``lambda = 1e-5`` on a sparse synthetic problem
(100,000 x 10,000, 20 non-zeros per row; ``--small``: 10,000 x 2,000).

Solvers: PRAGAM (``solvers.pragam``, with its adaptive Lipschitz estimate and, as
``pragam-fixed``, with the worst-case constant), AGM (``solvers.agm``), qp-/ls-BMRM
(``solvers.bmrm``), scikit-learn's ``LinearSVC`` (liblinear dual coordinate
descent, hinge, ``C = 1/(lambda n)``, ``fit_intercept=False``) and ``SGDClassifier`` (hinge,
``alpha = lambda``: the same objective). Iterative solvers of this package run once with a CPU
budget and report ``J(w_k)`` per iteration with CPU seconds since their start; liblinear and SGD
are refitted with geometrically growing ``max_iter`` and timed per fit. The reference optimum
``J*`` is the smallest objective seen, which includes a long liblinear run (``tol=1e-10``, at
most 1e5 epochs);
PRAGAM's dual value certifies how far ``J*`` can be from ``min J``. "Time to eps" is the first
CPU time with ``min_{t' <= t} J(w_t') <= (1 + eps) J*`` (spec 003 §3's err_t). Reported:
CPU seconds to each eps, ratio to liblinear's, the final test accuracy; the plot shows
iterations against suboptimality (BMRM's 1/eps, PRAGAM's 1/sqrt(eps)). Every solver runs on
one thread (our kernels and BLAS limited to 1), as liblinear and SGD do.
"""
import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits
from sklearn.datasets import load_svmlight_files
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.svm import LinearSVC

from sklearn_ssvm.solvers.agm import agm
from sklearn_ssvm.solvers.bmrm import bmrm_binary
from sklearn_ssvm.solvers.pragam import pragam, primal_objective

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "binary"
EPSILONS = (1e-2, 1e-4, 1e-6)


def csr32(X):
    """liblinear accepts 32-bit indices only."""
    X = sp.csr_matrix(X)
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                         shape=X.shape)


def load_a9a(exponent=18):
    Xtr, ytr, Xte, yte = load_svmlight_files([str(DATA / "a9a.gz"), str(DATA / "a9a.t.gz")],
                                             n_features=123)
    return csr32(Xtr), ytr, csr32(Xte), yte, 2.0 ** -exponent


def make_synthetic(small, seed=0):
    """Sparse Gaussian features, labels from a sparse linear rule with 5% flipped."""
    n, d, nnz = (10_000, 2_000, 20) if small else (100_000, 10_000, 20)
    rng = np.random.default_rng(seed)
    n_all = n + n // 4
    rows = np.repeat(np.arange(n_all), nnz)
    cols = rng.integers(0, d, n_all * nnz)
    X = csr32(sp.csr_matrix((rng.standard_normal(n_all * nnz), (rows, cols)), shape=(n_all, d)))
    w = rng.standard_normal(d) * (rng.random(d) < 0.2)
    y = np.sign(X @ w + 1e-12)
    y[rng.random(n_all) < 0.05] *= -1
    return X[:n], y[:n], X[n:], y[n:], 1e-5


def objective(X, y, w, lam):
    return primal_objective(X, y, np.ascontiguousarray(w, dtype=np.float64), lam, False)[0]


def accuracy(X, y, w):
    return float(np.mean(np.where(X @ w > 0, 1.0, -1.0) == y))


def column(history, *names):
    """A history column by the first name present (list of dicts or dict of arrays)."""
    for name in names:
        if isinstance(history, dict) and name in history:
            return np.asarray(history[name], dtype=float)
        if isinstance(history, list) and history and name in history[0]:
            return np.array([h[name] for h in history], dtype=float)
    raise KeyError(names)


def probe_iterations(run, budget, probe=20, cap=None):
    """Iterations that fit in ``budget`` CPU seconds, from the CPU-time difference of two short
    runs (which cancels compilation and set-up); ``cap`` bounds solvers whose iterations grow
    dearer (qp-BMRM's QP)."""
    run(2)
    spent = []
    for k in (probe, 2 * probe):
        cpu = time.process_time()
        run(k)
        spent.append(time.process_time() - cpu)
    per_iter = max((spent[1] - spent[0]) / probe, 1e-6)
    return min(max(probe, int(budget / per_iter)), cap or np.inf)


def trace_pragam(adaptive):
    def trace(X, y, lam, budget):
        def run(k):
            return pragam(X, y, lam, fit_intercept=False, tol=0.0, max_iter=k,
                          adaptive=adaptive)
        res = run(probe_iterations(run, budget))
        h = res.history
        return dict(cpu=h["cpu_time"], J=h["objective"], w=res.coef,
                    lower=float(np.nanmax(h["dual_objective"])))
    return trace


def trace_bmrm(variant):
    def trace(X, y, lam, budget):
        def run(k):
            return bmrm_binary(X, y, lam, variant=variant, tol=0.0, max_iter=k)
        res = run(probe_iterations(run, budget, probe=50 if variant == "ls" else 10,
                                   cap=None if variant == "ls" else 300))
        return dict(cpu=column(res.history, "cpu_time"),
                    J=column(res.history, "objective"), w=res.coef,
                    lower=float(res.dual_objective))
    return trace


def trace_agm(formulation):
    def trace(X, y, lam, budget):
        def run(k):
            return agm(X, y, lam, formulation=formulation, loss="hinge", fit_intercept=False,
                       tol=1e-9, max_iter=k, verbose=0)  # primal: smoothing mu = n tol
        res = run(probe_iterations(run, budget))
        return dict(cpu=column(res.history, "cpu", "cpu_time"),
                    J=column(res.history, "primal", "objective"), w=np.ravel(res.coef),
                    lower=-np.inf)
    return trace


def trace_refits(make):
    """Refit with max_iter = 1, 2, 4, ... until the budget is spent; one point per fit."""
    def trace(X, y, lam, budget):
        cpus, Js, spent, k, w = [], [], 0.0, 1, None
        while spent < budget and k <= 2 ** 20:
            est = make(lam, X.shape[0], k)
            cpu = time.process_time()
            est.fit(X, y)
            cpus.append(time.process_time() - cpu)
            spent += cpus[-1]
            w = est.coef_.ravel()
            Js.append(objective(X, y, w, lam))
            if getattr(est, "n_iter_", k) < k:  # converged before max_iter: nothing to gain
                break
            k *= 2
        return dict(cpu=np.array(cpus), J=np.array(Js), w=w, lower=-np.inf, refit=True)
    return trace


def liblinear(lam, n, k, tol=1e-6):
    return LinearSVC(loss="hinge", C=1.0 / (lam * n), fit_intercept=False, dual=True, tol=tol,
                     max_iter=k)


def sgd(lam, n, k):
    return SGDClassifier(loss="hinge", alpha=lam, fit_intercept=False, max_iter=k, tol=None,
                         random_state=0)


SOLVERS = {
    "pragam": trace_pragam(True),
    "pragam-fixed": trace_pragam(False),
    "agm-primal": trace_agm("primal"),
    "agm-dual": trace_agm("dual"),
    "bmrm-qp": trace_bmrm("qp"),
    "bmrm-ls": trace_bmrm("ls"),
    "liblinear": trace_refits(liblinear),
    "sgd": trace_refits(sgd),
}
#: solvers whose points are iterations of one run (plotted against the iteration count)
ITERATIVE = ("pragam", "pragam-fixed", "agm-primal", "agm-dual", "bmrm-qp", "bmrm-ls")


def run_dataset(name, data, solvers, budget):
    Xtr, ytr, Xte, yte, lam = data
    print(f"\n== {name}: n={Xtr.shape[0]}, d={Xtr.shape[1]}, nnz={Xtr.nnz}, lambda={lam:.3g}")
    traces = {}
    for solver in solvers:
        cpu = time.process_time()
        try:
            traces[solver] = SOLVERS[solver](Xtr, ytr, lam, budget)
        except (ImportError, AttributeError) as exc:
            print(f"  {solver}: skipped ({exc})")
            continue
        print(f"  {solver}: {len(traces[solver]['J'])} points, "
              f"{time.process_time() - cpu:.1f} CPU s in all", flush=True)
    cpu = time.process_time()
    ref = liblinear(lam, Xtr.shape[0], 10 ** 5, tol=1e-10).fit(Xtr, ytr)
    print(f"  reference: liblinear tol=1e-10, {time.process_time() - cpu:.1f} CPU s")
    j_star = min([objective(Xtr, ytr, ref.coef_.ravel(), lam)]
                 + [float(np.min(t["J"])) for t in traces.values()])
    lower = max(t["lower"] for t in traces.values())
    print(f"  J* = {j_star:.12g}; best certified lower bound {lower:.12g} "
          f"(J* within {(j_star - lower) / j_star:.2e} relative of the optimum)")
    times = {}
    for solver, t in traces.items():
        if t.get("refit"):  # independent fits: the fastest one that gets there
            sub = (t["J"] - j_star) / j_star
            times[solver] = [float(np.min(t["cpu"][sub <= eps], initial=np.inf))
                             for eps in EPSILONS]
        else:
            sub = (np.minimum.accumulate(t["J"]) - j_star) / j_star
            times[solver] = [float(t["cpu"][np.argmax(sub <= eps)]) if np.any(sub <= eps)
                             else np.inf for eps in EPSILONS]
        t["sub"] = np.minimum.accumulate(sub)
    base = times.get("liblinear", [np.inf] * len(EPSILONS))
    header = "".join(f"{f'eps={e:.0e} s (x lib)':>22}" for e in EPSILONS)
    print(f"  {'solver':<12}{header}{'best subopt':>13}{'iters':>8}{'test acc':>10}")
    for solver, t in traces.items():
        cells = "".join(f"{'-':>22}" if np.isinf(s) else f"{s:>12.3f} ({s / b:7.2f})"
                        if np.isfinite(b) else f"{s:>12.3f} {'':>9}"
                        for s, b in zip(times[solver], base))
        print(f"  {solver:<12}{cells}{max(t['sub'][-1], 0.0):>13.2e}{len(t['J']):>8}"
              f"{accuracy(Xte, yte, t['w']):>10.4f}")
    return traces


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5), squeeze=False)
    for ax, (name, traces) in zip(axes[0], results.items()):
        for solver in ITERATIVE:
            if solver in traces:
                sub = traces[solver]["sub"]
                keep = sub > 0
                ax.loglog(sub[keep], np.arange(1, sub.size + 1)[keep], label=solver)
        eps = np.logspace(-6, 0, 20)
        ax.loglog(eps, 1.0 / eps, "k:", label="1/eps")
        ax.loglog(eps, 10.0 / np.sqrt(eps), "k--", label="10/sqrt(eps)")
        ax.set(xlabel="relative primal suboptimality", ylabel="iterations", title=name)
        ax.invert_xaxis()
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


def main():
    import warnings
    warnings.simplefilter("ignore", ConvergenceWarning)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["a9a", "synthetic", "both"], default="both")
    parser.add_argument("--small", action="store_true", help="10,000 x 2,000 synthetic problem")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="CPU seconds per solver and data set")
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--plot", default=None, help="path of the iterations plot (png)")
    parser.add_argument("--a9a-lambdas", default="18",
                        help="exponents e of lambda = 2^-e on a9a, comma-separated")
    args = parser.parse_args()
    # one thread each (liblinear and SGD have one): CPU seconds compare, and no BLAS helper
    # thread spins through the CPU time of the vector operations (our kernels run on one
    # thread unless told otherwise)
    threadpool_limits(1)
    solvers = args.solvers.split(",")
    results = {}
    if args.data in ("a9a", "both"):
        for e in args.a9a_lambdas.split(","):
            results[f"a9a 2^-{e}"] = run_dataset(f"a9a, lambda 2^-{e}", load_a9a(int(e)),
                                                 solvers, args.budget)
    if args.data in ("synthetic", "both"):
        results["synthetic"] = run_dataset("synthetic", make_synthetic(args.small), solvers,
                                           args.budget)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
