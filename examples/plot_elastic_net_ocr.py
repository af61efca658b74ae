"""
Sparse structured SVMs: the elastic net on OCR-small
====================================================

``BCFWStructuredSVM(..., l1_ratio=r)`` minimises ``alpha ((1 - r)/2 ||w||^2 + r ||w||_1)``
plus the mean structured hinge, with exact line searches on the elastic net's dual and an
exact duality gap; ``coef_`` has exact zeros. On OCR-small (fold 0 for training, fold 1 for
testing, the Hamming count loss) this example plots the number of non-zero weights and the test
letter accuracy against ``l1_ratio``, and ``sparsify()`` stores the sparse model.

    python examples/plot_elastic_net_ocr.py [output.png]
"""
import pickle
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF  # noqa: E402
from sklearn_ssvm.datasets import load_ocr_letters  # noqa: E402

ocr = load_ocr_letters()
X_train = [x for x, f in zip(ocr.data, ocr.folds) if f == 0]
Y_train = [y for y, f in zip(ocr.target, ocr.folds) if f == 0]
X_test = [x for x, f in zip(ocr.data, ocr.folds) if f == 1]
Y_test = [y for y, f in zip(ocr.target, ocr.folds) if f == 1]

ratios = [0.0, 0.25, 0.5, 0.75]
nonzero, accuracy = [], []
for ratio in ratios:
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=False), alpha=0.01, l1_ratio=ratio,
                            step="pairwise", tol=0.03, max_iter=300,
                            random_state=0).fit(X_train, Y_train)
    nonzero.append(est.n_nonzero_coef_)
    accuracy.append(est.score(X_test, Y_test))
    dense = len(pickle.dumps(est.coef_))
    print(f"l1_ratio {ratio}: {est.n_nonzero_coef_} of {est.coef_.size} weights non-zero, "
          f"test accuracy {accuracy[-1]:.3f}, gap {est.duality_gap_:.4f}, coef_ pickle "
          f"{dense} -> {len(pickle.dumps(est.sparsify().coef_))} bytes")

fig, ax = plt.subplots(figsize=(6, 4))
ax.bar(np.arange(len(ratios)), nonzero, color="tab:blue")
ax.set_xticks(np.arange(len(ratios)), [f"{r:g}" for r in ratios])
ax.set_xlabel("l1_ratio")
ax.set_ylabel("non-zero weights", color="tab:blue")
twin = ax.twinx()
twin.plot(np.arange(len(ratios)), accuracy, "o-", color="tab:red")
twin.set_ylabel("test letter accuracy", color="tab:red")
ax.set_title("BCFW elastic net on OCR-small, alpha = 0.01")
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "elastic_net_ocr.png", dpi=100)
