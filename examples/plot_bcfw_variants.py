"""
BCFW variants on OCR-large (Osokin et al. 2016, Fig. 3)
=======================================================

Duality gap against effective passes (oracle calls / n, exact-gap passes included) and against
seconds, for {uniform, gap} sampling x {Frank-Wolfe, pairwise} steps x {no cache, cache}.

    python examples/plot_bcfw_variants.py [output.png] [--alpha 0.001] [--max-iter 150]

Takes a few minutes.
"""
import argparse
import itertools

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF  # noqa: E402
from sklearn_ssvm.datasets import load_ocr_letters, split_folds  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("output", nargs="?", default="bcfw_variants.png")
parser.add_argument("--alpha", type=float, default=1e-3)
parser.add_argument("--max-iter", type=int, default=150)
args = parser.parse_args()

X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
n = len(X)
fig, (ax_pass, ax_time) = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
for sampling, step, cache in itertools.product(["uniform", "gap"], ["fw", "pairwise"],
                                               [False, True]):
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=args.alpha,
                            max_iter=args.max_iter, tol=1e-5, gap_check=5, sampling=sampling,
                            step=step, cache=cache, random_state=0).fit(X, Y)
    checks = [h for h in est.history_ if np.isfinite(h["gap"])]
    label = f"{sampling}, {step}{', cache' if cache else ''}"
    style = dict(color={"fw": "C0", "pairwise": "C3"}[step],
                 linestyle="-" if sampling == "gap" else ":", marker="o" if cache else None,
                 markersize=3)
    ax_pass.semilogy([h["oracle_calls"] / n for h in checks], [h["gap"] for h in checks],
                     label=label, **style)
    ax_time.semilogy([h["time"] for h in checks], [h["gap"] for h in checks], **style)
ax_pass.set_xlabel("effective passes")
ax_time.set_xlabel("seconds")
ax_pass.set_ylabel("certified duality gap")
ax_pass.legend(fontsize=8)
fig.suptitle(f"BCFW variants on OCR-large, alpha = {args.alpha:g}")
fig.tight_layout()
fig.savefig(args.output, dpi=100)
