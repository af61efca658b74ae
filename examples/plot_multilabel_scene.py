"""
Multi-label scenes: label pairs against binary relevance
========================================================

Tags the scene images (``beach``, ``sunset``, ``fall foliage``, ``field``, ``mountain``,
``urban``; an image may have several) with ``BCFWStructuredSVM(MultiLabel())`` at every
default: an intercept per label, a 2x2 table of weights for every pair of labels (the oracle
enumerates the 64 labelings), and ``alpha=None``, which follows the features' scale. Beside it,
binary relevance as a scikit-learn user builds it: ``OneVsRestClassifier(LinearSVC())``, ``C``
chosen by 3-fold cross-validation on the training images. Both are fitted on the raw features
(in [0, 1]) and after a ``StandardScaler``, then scored on the test images: the Hamming loss
(the fraction of wrong tags) and the example-based F1 (``f1_score(average="samples")``).

    python examples/plot_multilabel_scene.py [output.png] [--data FILE]

Needs ``scene_multilabel.npz`` (not bundled: ``FILE``, by default under
:func:`~sklearn_ssvm.datasets.get_data_home`); takes about a minute on 2 cores, most of it
binary relevance's cross-validation.
"""
import argparse
import time
import warnings
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.metrics import f1_score, hamming_loss, make_scorer  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold  # noqa: E402
from sklearn.multiclass import OneVsRestClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM, MultiLabel  # noqa: E402
from sklearn_ssvm.datasets import get_data_home, load_scene  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("output", nargs="?", default="multilabel_scene.png")
parser.add_argument("--data", type=Path, default=get_data_home() / "scene_multilabel.npz")
args = parser.parse_args()

X_train, Y_train, X_test, Y_test = load_scene(args.data)
# liblinear stops short at the grid's largest C on standardised features: its choice, not ours
warnings.filterwarnings("ignore", category=ConvergenceWarning)
models = {
    "binary relevance (LinearSVC, C by CV)": lambda: GridSearchCV(
        OneVsRestClassifier(LinearSVC()), {"estimator__C": np.logspace(-3, 2, 6)},
        cv=KFold(3, shuffle=True, random_state=0),
        scoring=make_scorer(hamming_loss, greater_is_better=False)),
    "BCFWStructuredSVM(MultiLabel())": lambda: BCFWStructuredSVM(MultiLabel(), random_state=0),
}
results = {}
for features in ("raw", "standardised"):
    for name, make in models.items():
        model = make() if features == "raw" else make_pipeline(StandardScaler(), make())
        start = time.process_time()
        model.fit(X_train, Y_train)
        cpu = time.process_time() - start
        Y_pred = model.predict(X_test)
        results[name, features] = (hamming_loss(Y_test, Y_pred),
                                   f1_score(Y_test, Y_pred, average="samples"))
        print(f"{features:12} {name:40} Hamming loss {results[name, features][0]:.4f}  "
              f"example F1 {results[name, features][1]:.4f}  fit {cpu:.2f} s CPU")

structured = BCFWStructuredSVM(MultiLabel(), random_state=0).fit(X_train, Y_train)
print(f"\nthe label pairs fitted: {len(structured.structure_.edges_)} "
      f"(pairwise_={structured.structure_.pairwise_!r}); intercepts "
      f"{np.round(structured.intercept_, 2)}")

fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for ax, metric, title in zip(axes, (0, 1), ("Hamming loss (lower is better)",
                                             "example-based F1 (higher is better)")):
    for offset, name in zip((-0.2, 0.2), models):
        ax.bar(np.arange(2) + offset, [results[name, f][metric] for f in ("raw", "standardised")],
               width=0.4, label=name)
    ax.set_xticks(range(2), ["raw features", "StandardScaler"])
    ax.set_title(title)
axes[0].legend(loc="lower center", fontsize=8)
fig.suptitle("scene test images, 6 labels")
fig.tight_layout()
fig.savefig(args.output)
