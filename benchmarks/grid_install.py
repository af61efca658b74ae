"""Issue 49's grid table: ``GraphCRF`` fits and predictions at every default, on the plain
install (PyMaxflow hidden) and with the ``graphcut`` extra, beside the most accurate inference.

    python benchmarks/grid_install.py [--tasks rectangles snakes] [--repeats 3]

- ``rectangles``: 40 training and 40 test images of 16 x 16 pixels, one rectangle each, the
  pixels' features ``[intensity, 1]`` with the intensity the 0/1 label plus Gaussian noise of
  standard deviation 1 (a threshold at 0.5 alone labels 0.69 of the pixels right); binary
  grids, so ``"auto"`` cuts them (PyMaxflow, else the package's compiled max-flow).
- ``snakes``: ``make_snakes`` (8 x 8, 10 segments, 11 states) with its defaults, 200 training
  images (seed 0) and 100 test images (seed 2), ``GraphCRF(edge_features=True,
  directed=True)``; ``"auto"`` runs TRW-S there (integer programs only inside the fits).

Each install runs in a fresh process (a short fit compiles first, so the fits are warm):
``BCFWStructuredSVM(GraphCRF(...), random_state=0)`` at the defaults, then ``predict`` on the
test images at the defaults and with ``inference="milp"`` (every prediction exact), with
``certify_predictions``' share of exact predictions. Times are medians of ``--repeats``
predictions, wall and CPU seconds.
"""
import argparse
import json
import subprocess
import sys
import time
import warnings

import numpy as np

from graph_data import rectangles

parser = argparse.ArgumentParser()
parser.add_argument("--tasks", nargs="+", default=["rectangles", "snakes"])
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--one", nargs=2, metavar=("TASK", "INSTALL"), help=argparse.SUPPRESS)
args = parser.parse_args()


def data(task):
    from sklearn_ssvm.datasets import make_snakes

    if task == "rectangles":
        return rectangles(40, 0), rectangles(40, 1), {}
    snakes = dict(shape=(8, 8), n_segments=10)
    return (make_snakes(200, random_state=0, **snakes),
            make_snakes(100, random_state=2, **snakes), dict(edge_features=True, directed=True))


def run_one(task, install):
    """One task on one install, in this process: a JSON line of the measurements."""
    if install == "plain":
        sys.modules["maxflow"] = None  # `import maxflow` raises ImportError, as uninstalled
    from sklearn_ssvm import BCFWStructuredSVM
    from sklearn_ssvm.inspection import certify_predictions
    from sklearn_ssvm.structures import GraphCRF

    (X, Y), (X_test, Y_test), params = data(task)
    warnings.simplefilter("ignore")
    BCFWStructuredSVM(GraphCRF(**params), max_iter=2, random_state=0).fit(X[:3], Y[:3])
    est = BCFWStructuredSVM(GraphCRF(**params), random_state=0)
    wall, cpu = time.perf_counter(), time.process_time()
    est.fit(X, Y)
    row = dict(task=task, install=install, fit_wall=time.perf_counter() - wall,
               fit_cpu=time.process_time() - cpu, passes=est.n_iter_,
               gap=est.duality_gap_ / est.loss_scale_, certified=bool(est.gap_certified_))
    truth = np.concatenate(Y_test)
    for inference in ("auto", "milp"):
        est.structure_.inference = inference
        est.predict(X_test[:2])  # compiles
        walls, cpus = [], []
        for _ in range(args.repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            pred = est.predict(X_test)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        row[inference] = dict(wall=float(np.median(walls)), cpu=float(np.median(cpus)),
                              accuracy=float(np.mean(np.concatenate(pred) == truth)),
                              exact=float(np.mean(certify_predictions(est, X_test).exact)))
    if task == "rectangles":
        row["threshold"] = float(np.mean(np.concatenate([x[0][:, 0] > 0.5 for x in X_test])
                                         == truth))
    print(json.dumps(row))


if args.one:
    run_one(*args.one)
    sys.exit()

print("| task | install | fit wall s | fit CPU s | passes | gap / loss scale | certified | "
      "predict at the defaults: wall s / CPU s, accuracy, exact | with `inference=\"milp\"`: "
      "wall s / CPU s, accuracy |")
print("|---|---|---|---|---|---|---|---|---|")
for task in args.tasks:
    for install in ("plain", "graphcut"):
        out = subprocess.run([sys.executable, __file__, "--one", task, install,
                              "--repeats", str(args.repeats)], capture_output=True, text=True,
                             check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        auto, milp = r["auto"], r["milp"]
        print(f"| {task} | {install} | {r['fit_wall']:.1f} | {r['fit_cpu']:.1f} | "
              f"{r['passes']} | {r['gap']:.3g} | {r['certified']} | {auto['wall']:.2f} / "
              f"{auto['cpu']:.2f}, {auto['accuracy']:.4f}, {auto['exact']:.2f} | "
              f"{milp['wall']:.2f} / {milp['cpu']:.2f}, {milp['accuracy']:.4f} |")
        if "threshold" in r and install == "plain":
            print(f"| {task}: a threshold at 0.5 | | | | | | | "
                  f"{r['threshold']:.4f} | |")
