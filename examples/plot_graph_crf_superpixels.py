"""
GraphCRF on superpixel graphs: irregular graphs with edge features
==================================================================

A segmentation user's images often come as superpixels: regions of similar pixels, joined
when they touch, so that each image is its own planar graph whose nodes have from 3 to 10 or so
neighbours. ``make_segmentation(n_nodes=300)`` draws such graphs (the Delaunay triangulation
of random points) over Voronoi regions of 5 classes; a node sees its class as a one-hot vector
under heavy noise, an edge sees how alike its two ends look (a contrast feature, after Boykov &
Jolly 2001). A per-node classifier is compared with ``GraphCRF(edge_features=True)``, whose
pairwise tables learn to smooth across alike neighbours and not across contrasting ones; both
are trained by BCFW at its defaults (Osokin et al. 2016), the CRF with TRW-S as its oracle,
and the fit reports the part of its duality gap that TRW-S's relaxation leaves
(``relaxation_gap_``) beside the part that its passes close.

    python examples/plot_graph_crf_superpixels.py [output.png]

Takes about fifteen seconds.
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM  # noqa: E402
from sklearn_ssvm.datasets import make_segmentation  # noqa: E402
from sklearn_ssvm.structures import GraphCRF, MulticlassSVM  # noqa: E402

graphs = dict(n_nodes=300, n_states=5, noise=1.0)
X, Y = make_segmentation(40, random_state=0, **graphs)
X_test, Y_test, positions = make_segmentation(10, return_positions=True, random_state=1,
                                              **graphs)

node = BCFWStructuredSVM(MulticlassSVM(), random_state=0)
node.fit(np.concatenate([x[0] for x in X]), np.concatenate(Y))
node_pred = [node.predict(x[0]) for x in X_test]

crf = BCFWStructuredSVM(GraphCRF(edge_features=True), random_state=0).fit(X, Y)
crf_pred = crf.predict(X_test)

truth = np.concatenate(Y_test)
for name, pred in [("per-node SVM", node_pred), ("GraphCRF", crf_pred)]:
    print(f"{name:13s} test node accuracy {np.mean(np.concatenate(pred) == truth):.3f}")
print(f"GraphCRF: {crf.n_iter_} passes, stopped by itself: {crf.converged_}; relative gap "
      f"{crf.duality_gap_ / crf.loss_scale_:.3g}, of which the relaxation leaves "
      f"{crf.relaxation_gap_ / crf.loss_scale_:.3g}; oracle calls {dict(crf.oracle_calls_)}")

fig, axes = plt.subplots(2, 3, figsize=(9, 6))
for row, k in enumerate(range(2)):
    xy = positions[k][:, ::-1]  # (column, row) on the axes
    edges = X_test[k][1]
    for ax, (labels, title) in zip(axes[row], [(Y_test[k], "truth"),
                                               (node_pred[k], "per-node SVM"),
                                               (crf_pred[k], "GraphCRF")]):
        ax.add_collection(LineCollection(xy[edges], colors="0.8", linewidths=0.5))
        ax.scatter(xy[:, 0], xy[:, 1], c=labels, cmap="tab10", vmin=0, vmax=9, s=14)
        ax.set_xlim(0, 1)
        ax.set_ylim(1, 0)
        ax.set_xticks([])
        ax.set_yticks([])
        if row == 0:
            ax.set_title(title)
fig.tight_layout()
fig.savefig(sys.argv[1] if len(sys.argv) > 1 else "graph_crf_superpixels.png", dpi=90)
