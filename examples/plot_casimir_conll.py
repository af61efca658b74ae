"""
Smoothed solvers on CoNLL-2000 chunking (Pillutla et al. 2018, Fig. 2 style)
=============================================================================

Train objective and test chunk F1 against passes over the data for SGD, SVRG, Casimir-SVRG-const,
Casimir-SVRG-adapt and BCFW, all from ``w = 0`` at ``alpha = 1/n``, every estimator at its
defaults (learning rates picked automatically; the SVRG solvers start with one SGD epoch) but
without early stopping, so the curves follow the objective on all examples. The x-axis counts
oracle calls / n as the paper does: an SVRG epoch counts two per example (full gradients are not
counted), SGD epochs and BCFW passes one.

    python examples/plot_casimir_conll.py [output.png] [--epochs 15] [--data DIR]

Needs the CoNLL-2000 files (not bundled: ``train.txt.gz`` and ``test.txt.gz`` in ``DIR``,
by default ``conll2000`` under :func:`~sklearn_ssvm.datasets.get_data_home`, i.e. the
``SKLEARN_SSVM_DATA`` folder); takes a few minutes.
"""
import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, SmoothSSVMClassifier  # noqa: E402
from sklearn_ssvm.datasets import get_data_home, load_conll2000_chunking  # noqa: E402
from sklearn_ssvm.metrics import chunk_f1_score  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("output", nargs="?", default="casimir_conll.png")
parser.add_argument("--epochs", type=int, default=15)
parser.add_argument("--data", type=Path, default=get_data_home() / "conll2000")
args = parser.parse_args()

data = load_conll2000_chunking(args.data)
reference = ChainCRF()  # the estimators' label set, to score every epoch's weights
reference.prepare(data.X_train, data.Y_train)


def test_f1(epoch, coef):
    return dict(test_f1=chunk_f1_score(data.Y_test, reference.predict(data.X_test, coef)))


curves = {}
solvers = {"SGD": dict(solver="sgd", smoothing=None),
           "SVRG": dict(solver="svrg"),
           "Casimir-SVRG-const": dict(mu_schedule="const"),
           "Casimir-SVRG-adapt": dict(mu_schedule="expo")}
for name, params in solvers.items():
    est = SmoothSSVMClassifier(ChainCRF(), max_iter=args.epochs, tol=0.0,
                               early_stopping=False, random_state=0, **params)
    est.fit(data.X_train, data.Y_train, callback=test_f1)
    n = len(data.X_train)
    curves[name] = [(h["oracle_calls"] / n, h["objective"], h["test_f1"]) for h in est.history_]

# BCFW: one pass per fit, continuing from the previous dual state
bcfw = BCFWStructuredSVM(ChainCRF(), max_iter=1, tol=0.0, gap_check=1, sampling="uniform",
                         warm_start=True, random_state=0)
curves["BCFW"] = []
for epoch in range(1, args.epochs + 1):
    bcfw.fit(data.X_train, data.Y_train)
    curves["BCFW"].append((epoch, bcfw.primal_objective_,
                           test_f1(epoch, bcfw.coef_)["test_f1"]))

fig, (ax_obj, ax_f1) = plt.subplots(1, 2, figsize=(11, 4.5))
for name, points in curves.items():
    passes, objective, f1 = zip(*points)
    ax_obj.semilogy(passes, objective, marker="o", markersize=3, label=name)
    ax_f1.plot(passes, [100 * f for f in f1], marker="o", markersize=3, label=name)
ax_obj.set_xlabel("oracle calls / n")
ax_obj.set_ylabel("train objective (non-smooth)")
ax_f1.set_xlabel("oracle calls / n")
ax_f1.set_ylabel("test chunk F1 (%)")
ax_f1.set_ylim(88, 94)
ax_obj.legend(fontsize=8)
fig.suptitle("CoNLL-2000 chunking, alpha = 1/n")
fig.tight_layout()
fig.savefig(args.output, dpi=100)
