"""GraphCRF on grids: snakes segmentation against a per-pixel SVM, BCFW variants, oracle costs.

    python benchmarks/graph_crf.py [--quick]

1. Snakes (``make_snakes``: 8x8 images, 10 segments, colour noise 0.3): per-pixel
   ``MulticlassSVM`` on the same node features against ``GraphCRF(edge_features=True,
   directed=True)``, both trained by BCFW. ``alpha`` of each is chosen on a development set
   (another seed), accuracies are measured on a test set (a third seed). The CRF learns with
   TRW max-product (approximate) with and without the oracle cache; its duality gap is then
   certified with exact inference (HiGHS integer programming): the dual value of BCFW holds
   whatever the oracle, only the primal needs the exact maximum.
2. BCFW variants on binary grids (noisy 20x20 silhouettes): box constraints
   (``coef_bounds="positive_pairwise"``) on/off x cache on/off, with ``inference="auto"``:
   graph cuts while the tables are submodular, integer programming otherwise.
3. Oracle cost per call and per node at the trained snake weights and on the binary grids:
   each oracle called from Python per example, and the compiled ones (TRW-S, ICM,
   alpha-expansion, ``"auto"``'s graph cut) as BCFW's checks call them: one call from Python
   for a batch of examples, on one thread (TRW-S also on 2, as ``n_jobs=2`` runs them).

CPU seconds (``time.process_time``) beside wall seconds; oracle timings are medians of repeats.
The fits keep the settings of the figures in the user guide: the normalised loss (the alphas
are its) and Frank-Wolfe steps, the defaults before 0.1.
"""
import argparse
import time
import warnings

import numpy as np

from sklearn_ssvm import BCFWStructuredSVM, BMRMStructuredSVM
from sklearn_ssvm._kernels.threads import use_threads
from sklearn_ssvm.datasets import make_snakes
from sklearn_ssvm.structures import GraphCRF, MulticlassSVM, grid_graph

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="smaller data and fewer passes")
args = parser.parse_args()
N_TRAIN, N_EVAL, PASSES = (60, 40, 30) if args.quick else (200, 100, 100)
SNAKES = dict(shape=(8, 8), n_segments=10, noise=0.3)


def timed(fit):
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def accuracies(pred, Y):
    """Pixel accuracy over all pixels and over the snakes' pixels."""
    pred, truth = np.concatenate(pred), np.concatenate(Y)
    snake = truth > 0
    return float(np.mean(pred == truth)), float(np.mean(pred[snake] == truth[snake]))


def pixels(X):
    return np.concatenate([x[0] for x in X])


def exact_gap(est, X, Y):
    """The fit's duality gap certified by exact inference: BCFW's dual value (BMRM's lower
    bound) holds whatever the oracle, as every labeling an oracle returns is a feasible dual
    atom (a valid cut); only the primal needs the exact maximum, recomputed here."""
    lower = getattr(est, "dual_objective_", getattr(est, "lower_bound_", None))
    est.structure_.set_params(inference="auto")
    primal = est.primal_objective(X, Y)
    return primal - lower, primal


# -- 1. snakes --------------------------------------------------------------------------------
X, Y = make_snakes(N_TRAIN, random_state=0, **SNAKES)
X_dev, Y_dev = make_snakes(N_EVAL, random_state=1, **SNAKES)
X_test, Y_test = make_snakes(N_EVAL, random_state=2, **SNAKES)
print(f"snakes: {N_TRAIN} training images of {SNAKES['shape']} pixels, "
      f"{SNAKES['n_segments']} segments, noise {SNAKES['noise']}")


def per_pixel(alpha):
    return BCFWStructuredSVM(MulticlassSVM(), alpha=alpha, tol=1e-3, max_iter=300,
                             random_state=0).fit(pixels(X), np.concatenate(Y))


def crf(alpha, cache):
    return BCFWStructuredSVM(GraphCRF(edge_features=True, directed=True,
                                      inference="max_product", normalize_loss=True),
                             alpha=alpha, step="fw", tol=1e-3, max_iter=PASSES, cache=cache,
                             random_state=0).fit(X, Y)


def unflat(pred, X_):
    sizes = np.cumsum([len(x[0]) for x in X_])[:-1]
    return np.split(pred, sizes)


rows = []
best = {}
for name, grid in [("per-pixel", [1e-2, 1e-3, 1e-4]), ("crf", [1.0, 0.1, 0.01])]:
    scores = {}
    for alpha in grid:
        est = (timed(lambda: per_pixel(alpha)) if name == "per-pixel"
               else timed(lambda: crf(alpha, True)))[0]
        pred = (unflat(est.predict(pixels(X_dev)), X_dev) if name == "per-pixel"
                else est.predict(X_dev))
        scores[alpha] = accuracies(pred, Y_dev)[0]
    best[name] = max(grid, key=scores.get)
    print(f"  {name}: dev accuracy by alpha {scores} -> alpha = {best[name]}")

est, wall, cpu = timed(lambda: per_pixel(best["per-pixel"]))
acc = accuracies(unflat(est.predict(pixels(X_test)), X_test), Y_test)
print(f"\n| model | test accuracy | snake pixels | passes | oracle calls | cache hits | wall s | "
      f"CPU s | s / pass | gap (max-product) | certified gap (exact) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
print(f"| per-pixel MulticlassSVM | {acc[0]:.3f} | {acc[1]:.3f} | {est.n_iter_} | "
      f"{est.n_oracle_calls_} | - | {wall:.1f} | {cpu:.1f} | {wall / est.n_iter_:.3f} | - | "
      f"{est.duality_gap_:.2g} |")
snake_model = None
learners = [("BCFW", lambda: crf(best["crf"], False)),
            ("BCFW + cache", lambda: crf(best["crf"], True)),
            ("BMRM", lambda: BMRMStructuredSVM(
                GraphCRF(edge_features=True, directed=True, inference="max_product",
                         normalize_loss=True),
                alpha=best["crf"], tol=1e-3, max_iter=PASSES).fit(X, Y))]
for name, learn in learners:
    est, wall, cpu = timed(learn)
    acc = accuracies(est.predict(X_test), Y_test)
    gap = exact_gap(est, X, Y)[0]
    hits = getattr(est, "n_cache_hits_", 0)
    calls = getattr(est, "n_oracle_calls_", est.n_iter_ * len(X))
    print(f"| GraphCRF, {name} | {acc[0]:.3f} | {acc[1]:.3f} | {est.n_iter_} | {calls} | "
          f"{hits} | {wall:.1f} | {cpu:.1f} | {wall / est.n_iter_:.2f} | "
          f"{est.duality_gap_:.3g} | {gap:.3g} |")
    if name == "BCFW + cache":
        snake_model = est

# -- 2. BCFW variants on binary grids ---------------------------------------------------------


def silhouettes(n, seed, size=20, noise=1.0):
    """Noisy binary images of random ellipses (per-pixel features: the noisy intensity, its
    square and a constant)."""
    rng = np.random.default_rng(seed)
    rr, cc = np.mgrid[:size, :size]
    X_, Y_ = [], []
    for _ in range(n):
        r0, c0 = rng.uniform(size * 0.3, size * 0.7, 2)
        a, b = rng.uniform(size * 0.15, size * 0.35, 2)
        y = (((rr - r0) / a) ** 2 + ((cc - c0) / b) ** 2 <= 1).astype(np.int64)
        intensity = y + noise * rng.normal(size=y.shape)
        X_.append(grid_graph(np.stack([intensity, intensity ** 2, np.ones_like(intensity)],
                                      axis=2)))
        Y_.append(y.ravel())
    return X_, Y_


Xb, Yb = silhouettes(N_EVAL // 2, 3)
Xb_test, Yb_test = silhouettes(N_EVAL // 2, 4)
ALPHA_BINARY = 100.0
print(f"\nbinary grids: {len(Xb)} noisy 20x20 silhouettes, alpha = {ALPHA_BINARY:g} (normalised "
      f"loss: 1/400 per pixel)")
print("| learner | box | cache | passes | converged | certified gap | oracle calls (by oracle) | "
      "cache hits | wall s | CPU s | test accuracy |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for bounds in (None, "positive_pairwise"):
    for cache in (False, True):
        est, wall, cpu = timed(lambda: BCFWStructuredSVM(
            GraphCRF(normalize_loss=True), alpha=ALPHA_BINARY, step="fw", tol=1e-3,
            max_iter=PASSES * 2, coef_bounds=bounds, cache=cache, random_state=0).fit(Xb, Yb))
        acc = accuracies(est.predict(Xb_test), Yb_test)[0]
        print(f"| BCFW | {'on' if bounds else 'off'} | {'on' if cache else 'off'} | "
              f"{est.n_iter_} | {est.converged_} | {est.duality_gap_:.2g}"
              f"{'' if est.gap_certified_ else ' (not)'} | {est.oracle_calls_} | "
              f"{est.n_cache_hits_} | {wall:.1f} | {cpu:.1f} | {acc:.3f} |")
        if bounds:
            binary_model = est
est, wall, cpu = timed(lambda: BMRMStructuredSVM(GraphCRF(normalize_loss=True),
                                                 alpha=ALPHA_BINARY, tol=1e-3,
                                                 max_iter=PASSES * 2).fit(Xb, Yb))
acc = accuracies(est.predict(Xb_test), Yb_test)[0]
print(f"| BMRM | off | - | {est.n_iter_} | {est.converged_} | {est.duality_gap_:.2g}"
      f"{'' if est.gap_certified_ else ' (not)'} | {est.oracle_calls_} | - | {wall:.1f} | "
      f"{cpu:.1f} | {acc:.3f} |")

# -- 3. oracle costs --------------------------------------------------------------------------


def oracle_cost(structure, coef, X_, Y_, repeats=3):
    problem = structure.pack(X_, Y_)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        problem.run_oracle(coef, True)
        times.append((time.perf_counter() - start) / len(X_))
    nodes = np.mean([len(x[0]) for x in X_])
    return np.median(times), np.median(times) / nodes


def compiled_cost(structure, coef, X_, Y_, repeats=3, threads=1):
    """The oracle as BCFW's checks call it: compiled, batched over the examples on ``threads``
    threads (``n_jobs``); TRW-S from the messages of the previous repeat as in a fit."""
    graphs = structure.pack(X_, Y_)
    problem = graphs.label_space()
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        with use_threads(threads):
            problem.run_oracle(coef, True)
        times.append((time.perf_counter() - start) / len(X_))
    nodes = np.mean([len(x[0]) for x in X_])
    return np.median(times[1:]), np.median(times[1:]) / nodes


print("\n| model | oracle | ms / call | us / node |")
print("|---|---|---|---|")
for inference in ("trws", "max_product", "icm", "expansion", "auto"):
    structure = GraphCRF(edge_features=True, directed=True, inference=inference).fit(X, Y)
    call, node = oracle_cost(structure, snake_model.coef_, X_test[:20], Y_test[:20])
    print(f"| snakes 8x8, 11 states | {inference} | {call * 1e3:.2f} | {node * 1e6:.1f} |")
for inference, threads in (("trws", 1), ("trws", 2), ("icm", 1), ("expansion", 1)):
    structure = GraphCRF(edge_features=True, directed=True, inference=inference).fit(X, Y)
    call, node = compiled_cost(structure, snake_model.coef_, X_test[:20], Y_test[:20],
                               threads=threads)
    print(f"| snakes 8x8, 11 states | {inference}, compiled (BCFW's checks, {threads} "
          f"thread{'s' if threads > 1 else ''}) | {call * 1e3:.2f} | {node * 1e6:.1f} |")
for inference in ("auto", "max_product"):
    structure = GraphCRF(inference=inference).fit(Xb, Yb)
    call, node = oracle_cost(structure, binary_model.coef_, Xb_test[:20], Yb_test[:20])
    print(f"| binary 20x20 (box) | {inference} | {call * 1e3:.2f} | {node * 1e6:.1f} |")
structure = GraphCRF(inference="auto").fit(Xb, Yb)
call, node = compiled_cost(structure, binary_model.coef_, Xb_test[:20], Yb_test[:20])
print(f"| binary 20x20 (box) | auto: graph cut, compiled (BCFW's checks) | {call * 1e3:.2f} | "
      f"{node * 1e6:.1f} |")
