"""
What a fitted chain offers: marginals and transition weights
============================================================

Trains ``BCFWStructuredSVM(ChainCRF())`` on OCR-small (fold 0, 626 words) and shows what a CRF
user reads from a fitted model: the per-letter label marginals of a held-out word
(``predict_marginals``: forward-backward on the learned scores, at two temperatures, rows
summing to 1) and the learned letter-to-letter transition weights
(:func:`sklearn_ssvm.inspection.transition_weights`).

    python examples/plot_ocr_marginals.py [output.png]
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF  # noqa: E402
from sklearn_ssvm.datasets import load_ocr_letters  # noqa: E402
from sklearn_ssvm.inspection import transition_weights  # noqa: E402

ocr = load_ocr_letters()
train = np.flatnonzero(ocr.folds == 0)
test = np.flatnonzero(ocr.folds == 1)
X_train = [ocr.data[i] for i in train]
Y_train = [ocr.target[i] for i in train]
est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=0.01, tol=0.01, step="pairwise",
                        random_state=0).fit(X_train, Y_train)
print(f"certified duality gap {est.duality_gap_:.4f}")

letters = np.array([chr(ord("a") + int(c)) for c in est.classes_])
word = next(i for i in test if len(ocr.target[i]) >= 7)
x, truth = ocr.data[word], "".join(letters[ocr.target[word]])
guess = "".join(letters[est.predict([x])[0]])
print(f"word {truth!r} read as {guess!r}")

fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), gridspec_kw=dict(width_ratios=[1, 1, 1.1]))
for ax, temperature in zip(axes[:2], (0.1, 0.02)):
    marginals = est.predict_marginals([x], temperature=temperature)[0]
    ax.imshow(marginals.T, aspect="auto", cmap="Greys", vmin=0, vmax=1)
    ax.set_xticks(range(len(truth)), list(truth))
    ax.set_yticks(range(0, 26, 5), letters[::5])
    ax.set_xlabel("true letter")
    ax.set_ylabel("label")
    ax.set_title(f"marginals of {truth!r}, temperature {temperature:g}")
table, labels = transition_weights(est)
image = axes[2].imshow(table, cmap="RdBu_r", vmin=-np.abs(table).max(), vmax=np.abs(table).max())
axes[2].set_xticks(range(0, 26, 5), letters[::5])
axes[2].set_yticks(range(0, 26, 5), letters[::5])
axes[2].set_xlabel("next letter")
axes[2].set_ylabel("letter")
axes[2].set_title("learned transition weights")
fig.colorbar(image, ax=axes[2])
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "ocr_marginals.png", dpi=100)
