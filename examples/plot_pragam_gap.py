"""
A linear SVM to a certified gap: PRAGAM and AGM against LinearSVC
=================================================================

``PragamSVC`` trains the hinge-loss SVM of ``LinearSVC(loss="hinge", C=1/(alpha n))`` and
certifies every iterate with a duality gap (Zhang, Saha & Vishwanathan 2011). On generated
binary data, this example plots the certified gap of PRAGAM, AGM on the primal and AGM on the
dual against iterations, and compares the objective reached with LinearSVC's.

    python examples/plot_pragam_gap.py [output.png]
"""
import sys
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from sklearn_ssvm import PragamSVC  # noqa: E402

X, y = make_classification(n_samples=2000, n_features=50, n_informative=10, flip_y=0.05,
                           random_state=0)
alpha = 1e-3
n = X.shape[0]


def objective(coef, intercept):
    margins = np.where(y == 1, 1, -1) * (X @ coef + intercept)
    return 0.5 * alpha * coef @ coef + np.mean(np.maximum(0.0, 1.0 - margins))


svc = LinearSVC(loss="hinge", C=1.0 / (alpha * n), tol=1e-8, max_iter=100_000,
                dual=True).fit(X, y)
print(f"LinearSVC objective {objective(svc.coef_.ravel(), svc.intercept_[0]):.6f}")

fig, ax = plt.subplots(figsize=(6, 4))
for solver in ("pragam", "agm-primal", "agm-dual"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = PragamSVC(solver=solver, alpha=alpha, tol=1e-6, max_iter=3000).fit(X, y)
    history = est.history_
    iterations = history["iter"] if isinstance(history, dict) else [h["iter"] for h in history]
    gaps = history["gap"] if isinstance(history, dict) else [h.get("gap", np.nan)
                                                             for h in history]
    ax.loglog(np.asarray(iterations) + 1, gaps, label=solver)
    print(f"{solver}: objective {objective(est.coef_.ravel(), est.intercept_[0]):.6f}, "
          f"certified gap {est.duality_gap_:.2e} after {est.n_iter_} iterations")
ax.set_xlabel("iteration")
ax.set_ylabel("certified duality gap")
ax.set_title(f"hinge-loss SVM, n = {n}, alpha = {alpha:g}")
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "pragam_gap.png", dpi=100)
