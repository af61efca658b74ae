"""
A named-entity tagger on CoNLL-2003, alpha chosen by cross-validation
=====================================================================

Trains ``BCFWStructuredSVMCV(ChainCRF(), scoring="chunk_f1")`` on ``eng.train`` with every
other default (3-fold cross-validation of ``alpha`` by entity F1 on the training set only,
around the ``alpha=None`` rule, the grid stopped where the score turns down), then reports the
development set ``eng.testa``: the entity F1 and a per-type classification report, as
conlleval counts them. Plots the learned transition weights (labels x labels) and the
cross-validation curve.

    python examples/plot_ner_conll2003.py [output.png] [--folds 3] [--data DIR]

Needs the CoNLL-2003 files (not bundled: ``eng.train.gz`` and ``eng.testa.gz`` in ``DIR``, by
default ``conll2003`` under :func:`~sklearn_ssvm.datasets.get_data_home`, i.e. the
``SKLEARN_SSVM_DATA`` folder); takes a few minutes on 2 cores.
"""
import argparse
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVMCV, ChainCRF  # noqa: E402
from sklearn_ssvm.datasets import get_data_home, read_conll  # noqa: E402
from sklearn_ssvm.feature_extraction import (SequenceVectorizer,  # noqa: E402
                                             chunking_token_features)
from sklearn_ssvm.inspection import top_state_features, transition_weights  # noqa: E402
from sklearn_ssvm.metrics import chunk_precision_recall_f1  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("output", nargs="?", default="ner_conll2003.png")
parser.add_argument("--folds", type=int, default=3)
parser.add_argument("--data", type=Path, default=get_data_home() / "conll2003")
args = parser.parse_args()


def load(name):
    """Token feature dicts (the sklearn-crfsuite tutorial template) and NE tags (IOB1)."""
    sentences = read_conll(args.data / name)
    return ([chunking_token_features(s) for s in sentences],
            [[token[3] for token in s] for s in sentences])


F_train, Y_train = load("eng.train.gz")
F_dev, Y_dev = load("eng.testa.gz")

# the defaults: the count loss weighs every token alike, as entity F1 does; pairwise steps
model = make_pipeline(
    SequenceVectorizer(),
    BCFWStructuredSVMCV(ChainCRF(), cv=args.folds, scoring="chunk_f1", random_state=0))
model.fit(F_train, Y_train)
cv = model[-1]
print(f"alpha chosen by {args.folds}-fold CV on eng.train: {cv.alpha_:g} "
      f"(mean fold F1 {100 * cv.best_score_:.2f})")

Y_pred = model.predict(F_dev)
precision, recall, f1 = chunk_precision_recall_f1(Y_dev, Y_pred)
print(f"eng.testa: precision {100 * precision:.2f}, recall {100 * recall:.2f}, "
      f"entity F1 {100 * f1:.2f}\n")
print(f"{'type':>6} {'precision':>10} {'recall':>8} {'F1':>7} {'support':>8}")
for kind, (p, r, f, support) in chunk_precision_recall_f1(Y_dev, Y_pred, average=None).items():
    print(f"{kind:>6} {100 * p:10.2f} {100 * r:8.2f} {100 * f:7.2f} {support:8d}")

print("\nstrongest token features per entity tag:")
for label, features in top_state_features(model, n=5).items():
    if label != "O":
        print(f"  {label}: {', '.join(name for name, _ in features)}")

table, classes = transition_weights(model)
fig, (ax_t, ax_cv) = plt.subplots(1, 2, figsize=(12, 5))
image = ax_t.imshow(table, cmap="RdBu_r", vmin=-abs(table).max(), vmax=abs(table).max())
ax_t.set_xticks(range(len(classes)), classes, rotation=90)
ax_t.set_yticks(range(len(classes)), classes)
ax_t.set_xlabel("to")
ax_t.set_ylabel("from")
ax_t.set_title("transition weights")
fig.colorbar(image, ax=ax_t)
mean = 100 * cv.cv_results_["mean_test_score"]
std = 100 * cv.cv_results_["std_test_score"]
fitted = ~np.isnan(mean)  # the alphas the walk over the grid reached
ax_cv.errorbar(cv.cv_results_["param_alpha"][fitted], mean[fitted], yerr=std[fitted], marker="o",
               capsize=3)
ax_cv.axvline(cv.alpha_, color="gray", linestyle="--", label=f"chosen alpha = {cv.alpha_:g}")
ax_cv.set_xscale("log")
ax_cv.set_xlabel("alpha")
ax_cv.set_ylabel("entity F1 of the held-out folds")
ax_cv.set_title(f"{args.folds}-fold cross-validation on eng.train")
ax_cv.legend()
fig.tight_layout()
fig.savefig(args.output, dpi=120)
print(f"\nwrote {args.output}")
