"""
BCFW on handwritten words: certified duality gap and test error along the passes
================================================================================

Trains ``BCFWStructuredSVM(ChainCRF())`` at its defaults (the count loss, pairwise steps,
``alpha=None``) on OCR-large (folds 1-9) with and without weighted averaging, checking the exact
duality gap after every pass, and plots the gap relative to the zero model's objective (what
``tol`` is compared with) against passes and seconds, with the test letter error of each run.

    python examples/plot_bcfw_ocr.py [output.png]
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF  # noqa: E402
from sklearn_ssvm.datasets import load_ocr_letters, split_folds  # noqa: E402

X_train, X_test, Y_train, Y_test = split_folds(load_ocr_letters(), test_fold=0)

fig, (ax_pass, ax_time) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for averaging in (False, True):
    est = BCFWStructuredSVM(ChainCRF(), max_iter=60, tol=1e-3, gap_check=1,
                            averaging=averaging, random_state=0).fit(X_train, Y_train)
    passes = [h["iter"] for h in est.history_]
    gaps = [h["gap"] / est.loss_scale_ for h in est.history_]
    times = [h["time"] for h in est.history_]
    error = 100 * (1 - est.score(X_test, Y_test))
    label = f"{'averaged' if averaging else 'last iterate'} (test error {error:.1f}%)"
    ax_pass.semilogy(passes, gaps, label=label)
    ax_time.semilogy(times, gaps, label=label)
ax_pass.set_xlabel("passes over the data")
ax_time.set_xlabel("seconds (exact gap after every pass included)")
ax_pass.set_ylabel("certified duality gap / loss_scale_")
ax_pass.legend()
fig.suptitle(f"BCFW on OCR-large, alpha=None ({est.alpha_:.3g})")
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "bcfw_ocr.png", dpi=100)
