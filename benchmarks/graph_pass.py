"""Where a BCFW pass on graphs spends its time: the per-example oracle against the step code.

    python benchmarks/graph_pass.py [--n 200] [--passes 3] [--inference max_product]

``make_snakes`` (8x8 images, 10 segments, colour noise 0.3; 11 states), ``GraphCRF(edge_features=
True, directed=True)``, BCFW Frank-Wolfe steps with ``gap_check`` past the run (no certificate
pass is timed). The oracle time is measured by wrapping the structure's per-example oracle
(``GraphCRF.label_oracle``, which the compiled pass calls from Python) with a CPU clock; the
rest of a pass is the step code. A faster step code can make a pass at most ``pass / oracle``
times faster; the oracles themselves are issue 28's. Medians over ``--repeats`` fits, CPU seconds
(``time.process_time``) beside wall seconds, the first fit (compilation) apart.
"""
import argparse
import statistics
import time
import warnings

from sklearn_ssvm import BCFWStructuredSVM
from sklearn_ssvm.datasets import make_snakes
from sklearn_ssvm.structures import GraphCRF

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=200)
parser.add_argument("--passes", type=int, default=3)
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--inference", default="max_product")
args = parser.parse_args()

X, Y = make_snakes(args.n, random_state=0, shape=(8, 8), n_segments=10, noise=0.3)
spent = [0.0]
decode = GraphCRF.label_oracle


def timed_decode(self, *a, **k):
    t = time.process_time()
    try:
        return decode(self, *a, **k)
    finally:
        spent[0] += time.process_time() - t


GraphCRF.label_oracle = timed_decode


def fit():
    est = BCFWStructuredSVM(GraphCRF(edge_features=True, directed=True,
                                     inference=args.inference),
                            alpha=0.1, step="fw", max_iter=args.passes, gap_check=10 ** 6,
                            tol=0.0, random_state=0)
    spent[0] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wall, cpu = time.perf_counter(), time.process_time()
        est.fit(X, Y)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # the solver's clock covers the passes and the last pass's certificate, which is one more
    # oracle call per example and no step: the step code is what the oracle does not take
    solver_cpu, solver_wall = est.history_[-1]["cpu_time"], est.history_[-1]["time"]
    oracle = spent[0] / (args.passes + 1)
    steps = (solver_cpu - spent[0]) / args.passes
    return solver_wall / (args.passes + 1), oracle + steps, oracle


fit()  # compilation and the first oracle setups
runs = [fit() for _ in range(args.repeats)]
wall, cpu, oracle = (statistics.median(r[i] for r in runs) for i in range(3))
print(f"snakes {args.n} x 8x8, inference={args.inference}: per pass {wall:.2f} s wall, "
      f"{cpu:.2f} s CPU; oracle {oracle:.2f} s CPU ({100 * oracle / cpu:.0f}%); step code "
      f"{cpu - oracle:.2f} s: a free step code would make a pass {cpu / oracle:.2f}x faster")
