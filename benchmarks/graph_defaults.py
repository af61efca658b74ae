"""Issue 28's acceptance run: ``BCFWStructuredSVM(GraphCRF(edge_features=True, directed=True))``
at its defaults on the snakes, per MAP oracle.

    python benchmarks/graph_defaults.py [--n 200] [--inference auto trws max_product]
        [--max-iter PASSES] [--bound-tol TOL] [--crf]

``make_snakes`` (8x8 images, 10 segments, colour noise 0.3; 11 states): ``--n`` training images
(seed 0), 100 test images (seed 2). For each ``inference`` one fit at the defaults (``alpha``,
``tol``, ``max_iter``, pairwise steps), reporting wall and CPU seconds, passes, whether the fit
stopped by itself (``converged_``: the gap less the relaxation's part below ``tol``), the
duality gap and its relaxation's part (``relaxation_gap_``) relative to ``loss_scale_``, whether
it is certified, the oracle calls by oracle (with
``"auto"`` and ``"trws"`` the share answered by TRW-S's bound rather than a labeling that meets
it: ``"TRWSMAP (bound)"``; the steps' calls, which need no bound: ``"TRWSMAP (step)"``),
the share of calls that ran integer programming and the test pixel accuracy. numba compiles
in a short warm-up fit first, so the timed fits are warm.

``--crf`` also fits ``CRFClassifier`` on the same graphs at its defaults (``c2=1``, L-BFGS for
at most 100 iterations): the likelihood with TRW's bound on the log-partition function, its
wall and CPU seconds, iterations, whether it stopped by itself, its gap (of the bound's
objective: not a certificate) relative to ``loss_scale_``, and the test pixel accuracy of its
MAP labelings.
"""
import argparse
import time
import warnings

import numpy as np

from sklearn_ssvm import BCFWStructuredSVM, CRFClassifier
from sklearn_ssvm.datasets import make_snakes
from sklearn_ssvm.marginals import TRWSMAP
from sklearn_ssvm.structures import GraphCRF

parser = argparse.ArgumentParser()
parser.add_argument("--n", type=int, default=200)
parser.add_argument("--inference", nargs="+", default=["auto"])
parser.add_argument("--max-iter", type=int, default=None, help="passes (default: BCFW's)")
parser.add_argument("--bound-tol", type=float, default=None,
                    help="with 'trws': TRWSMAP(bound_tol=...) (the checks' bound tolerance)")
parser.add_argument("--crf", action="store_true",
                    help="also fit CRFClassifier (TRW's bound on the likelihood)")
args = parser.parse_args()
settings = {} if args.max_iter is None else dict(max_iter=args.max_iter)

SNAKES = dict(shape=(8, 8), n_segments=10, noise=0.3)
X, Y = make_snakes(args.n, random_state=0, **SNAKES)
X_test, Y_test = make_snakes(100, random_state=2, **SNAKES)
print("| inference | wall s | CPU s | passes | stopped by itself | gap / loss scale | "
      "relaxation's part | certified | oracle calls | answered by the bound | integer programs | "
      "test accuracy |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for inference in args.inference:
    oracle = (TRWSMAP(bound_tol=args.bound_tol) if inference == "trws" and args.bound_tol
              else inference)
    est = BCFWStructuredSVM(GraphCRF(edge_features=True, directed=True, inference=oracle),
                            random_state=0, **settings)
    with warnings.catch_warnings():  # compile
        warnings.simplefilter("ignore")
        BCFWStructuredSVM(GraphCRF(edge_features=True, directed=True, inference=oracle),
                          max_iter=2, random_state=0).fit(X[:5], Y[:5])
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, Y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    calls = est.oracle_calls_
    bound = sum(v for k, v in calls.items() if k.endswith("(bound)")) / sum(calls.values())
    milp = calls.get("MILPMAP", 0) / sum(calls.values())
    accuracy = np.mean(np.concatenate(est.predict(X_test)) == np.concatenate(Y_test))
    print(f"| {inference} | {wall:.1f} | {cpu:.1f} | {est.n_iter_} | {est.converged_} | "
          f"{est.duality_gap_ / est.loss_scale_:.3g} | "
          f"{est.relaxation_gap_ / est.loss_scale_:.3g} | {est.gap_certified_} | {dict(calls)} | "
          f"{bound:.2f} | {milp:.2f} | {accuracy:.4f} |")

if args.crf:
    crf = CRFClassifier(GraphCRF(edge_features=True, directed=True))
    with warnings.catch_warnings():  # compile
        warnings.simplefilter("ignore")
        CRFClassifier(GraphCRF(edge_features=True, directed=True), max_iter=2).fit(X[:5], Y[:5])
    wall, cpu = time.perf_counter(), time.process_time()
    crf.fit(X, Y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    accuracy = np.mean(np.concatenate(crf.predict(X_test)) == np.concatenate(Y_test))
    print(f"\nCRFClassifier: {wall:.1f} s wall, {cpu:.1f} s CPU, {crf.n_iter_} iterations, "
          f"stopped by itself: {crf.converged_}, gap / loss scale "
          f"{crf.duality_gap_ / crf.loss_scale_:.2g} (certified: {crf.gap_certified_}), "
          f"test accuracy {accuracy:.4f}")
