"""
The certified regularization path on OCR-small
==============================================

``regularization_path`` (Osokin et al. 2016, §4) returns, for every alpha from the largest
useful one down to 0 (or ``alpha_min``), a solution certified eps-optimal by a duality gap. This
example plots the test letter error of the path's solutions and their certified gap bound
against alpha, and picks alpha on held-out words without refitting.

    python examples/plot_regularization_path.py [output.png]
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, regularization_path  # noqa: E402
from sklearn_ssvm.datasets import load_ocr_letters, split_folds  # noqa: E402

ocr = load_ocr_letters()
# OCR-small: train on fold 0 (626 words); validate on fold 1, test on folds 2-9
X_test, X_train, Y_test, Y_train = split_folds(ocr, test_fold=0)
X_val, X_test, Y_val, Y_test = X_test[:700], X_test[700:], Y_test[:700], Y_test[700:]

path = regularization_path(BCFWStructuredSVM(ChainCRF(normalize_loss=True), step="fw",
                                             random_state=0), X_train, Y_train,
                           eps=0.1, alpha_min=1e-5)
print(f"{len(path.alphas_)} breakpoints, alpha from {path.alphas_[0]:.3g} to "
      f"{path.alphas_[-1]:.3g} ({path.stop_reason_}), "
      f"{path.n_oracle_calls_[-1] / len(X_train):.0f} effective passes")

grid = np.geomspace(max(path.alphas_[-1], 1e-5), path.alphas_[0], 60)
alphas, test_scores = path.validation_scores(X_test, Y_test, alphas=grid)
bounds = [path.gap_bound(a) for a in alphas]
best = path.best_estimator(X_val, Y_val)
print(f"alpha picked on validation words: {best.alpha_:.3g}, test letter error "
      f"{100 * (1 - best.score(X_test, Y_test)):.1f}%")

fig, ax = plt.subplots(figsize=(7, 4))
ax.semilogx(alphas, 100 * (1 - test_scores), label="test letter error (%)")
ax.axvline(best.alpha_, color="gray", linestyle=":", label="alpha picked on validation")
ax.set_xlabel("alpha (lambda)")
ax.set_ylabel("test letter error (%)")
ax2 = ax.twinx()
ax2.semilogx(alphas, bounds, color="C1", label="certified gap bound")
ax2.axhline(path.eps, color="C1", linestyle="--", linewidth=0.8)
ax2.set_ylabel("certified duality gap bound", color="C1")
ax.legend(loc="upper left", fontsize=8)
fig.suptitle("eps = 0.1 regularization path, OCR-small")
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "regularization_path.png", dpi=100)
