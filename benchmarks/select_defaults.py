"""The evidence behind the defaults: loss, step rule, ``tol``, ``alpha=None``, early stopping.

    python benchmarks/select_defaults.py [--sections chains tol ocr multilabel binary graphs
        graph-alpha pass-budget smooth] [--data ../shared/datasets]

Every figure is measured on development data, never on a test set:

- ``chains``: ``BCFWStructuredSVM(ChainCRF(normalize_loss=False), step="pairwise")`` (the count
  loss, pairwise steps, ``tol=3e-3``) fitted at each ``alpha`` of a grid, beside
  CRFsuite (L-BFGS, c1 = c2 = 0.1) on the same splits: CoNLL-2003 ``eng.train`` -> ``eng.testa``
  (entity F1) and CoNLL-2000 ``train`` by 3-fold cross-validation (chunk F1). Prints each
  task's window of alphas at or above CRFsuite, the alpha of ``alpha=None``, and the same fit
  with the normalised loss and with Frank-Wolfe steps at their ``alpha=None``.
- ``tol``: the same fits at ``alpha=None`` along their passes: F1 against the relative gap.
- ``ocr``: OCR letters, 3-fold cross-validation on the training words of
  ``split_folds(test_fold=0)``: letter accuracy and passes to ``tol`` across alphas.
- ``multilabel``: scene, 3-fold cross-validation on ``X_train``, raw and standardised: Hamming
  loss and example F1 of each label graph by alpha, beside binary relevance by ``C``.
- ``binary``: a9a, 3-fold cross-validation on the training set: accuracy by alpha.
- ``graphs``: snakes of 5x5 to 12x12 pixels (``make_snakes``), training / development seeds:
  pooled pixel accuracy of ``GraphCRF`` with the count and the normalised loss by alpha.
- ``graph-alpha``: ``BCFWStructuredSVM(GraphCRF(...))`` at ``alpha = c R^2`` per unit of the
  loss scale (``R^2`` the problem's ``squared_radius``) and at the former ``1/n`` rule, on
  snakes, rectangles, superpixel graphs of 100, 300 and 1,000 nodes and 32x32 grids
  (``make_segmentation``, 8 states), each with a training and a development seed (the test
  seeds of ``graph_defaults.py``, ``grid_install.py`` and ``large_graphs.py`` unused): pooled
  pixel accuracy on the development set once the fit stops by itself (at most 2,000 passes),
  and the passes it took.
- ``pass-budget``: ``BCFWStructuredSVM(GraphCRF(...))`` at its defaults but ``max_iter``
  (twice ``max_iter=None``'s budget) on the training sets of ``graph-alpha``, of
  ``large_graphs.py``'s 200 superpixel graphs and 64x64 and 128x128 grids, and on small images
  (``make_segmentation``, 2 to 4 states): the passes and block steps each fit took to stop by
  itself, and its seconds.
- ``smooth``: ``SmoothSSVMClassifier(ChainCRF())`` with and without early stopping on the
  two CoNLL tasks as above.

Fits of the chain sections take minutes each on 2 cores; ``--sections`` picks a subset.
"""
import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, MultiLabel, SmoothSSVMClassifier
from sklearn_ssvm.metrics import chunk_f1_score

from sequence_labelling import DEFAULT_DATA, load

ALPHAS = [1e-4, 2e-4, 3e-4, 5e-4, 7e-4, 1e-3, 2e-3]
SECTIONS = ("chains", "tol", "ocr", "multilabel", "binary", "graphs", "graph-alpha",
            "pass-budget", "smooth")


def conll_splits(task, data):
    """(X_train, Y_train, X_eval, Y_eval, F_train, F_eval) per split: CoNLL-2003 train ->
    testa, CoNLL-2000 3 folds of train (vectorised on the training part)."""
    from sklearn_ssvm.feature_extraction import SequenceVectorizer

    if task == "ner":
        F, Y, F_eval, Y_eval = load("ner", data)
        splits = [(F, Y, F_eval, Y_eval)]
    else:
        F_all, Y_all, _, _ = load("chunking", data, evaluation=False)
        splits = [([F_all[i] for i in tr], [Y_all[i] for i in tr], [F_all[i] for i in te],
                   [Y_all[i] for i in te])
                  for tr, te in KFold(3, shuffle=True, random_state=0).split(F_all)]
    out = []
    for F, Y, F_eval, Y_eval in splits:
        vec = SequenceVectorizer().fit(F)
        out.append((vec.transform(F), Y, vec.transform(F_eval), Y_eval, F, F_eval))
    return out


def f1_of(est, split):
    return 100 * chunk_f1_score(split[3], est.predict(split[2]))


def crfsuite_f1(splits):
    import sklearn_crfsuite

    scores = []
    for _, Y, _, Y_eval, F, F_eval in splits:
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100)
        crf.fit(F, Y)
        scores.append(100 * chunk_f1_score(Y_eval, crf.predict(F_eval)))
    return float(np.mean(scores))


def mean_f1(make, splits):
    scores, passes = [], []
    for split in splits:
        est = make().fit(split[0], split[1])
        scores.append(f1_of(est, split))
        passes.append(est.n_iter_)
    return float(np.mean(scores)), est, float(np.mean(passes))


def chains(data):
    for task in ("ner", "chunking"):
        splits = conll_splits(task, data)
        reference = crfsuite_f1(splits)
        rule = ChainCRF().prepare(splits[0][0], splits[0][1]).default_alpha()
        print(f"\n{task}: CRFsuite {reference:.2f}; alpha=None -> {rule:.3g} (count loss)")
        print("| alpha | F1 (count loss, pairwise) | passes | >= CRFsuite |")
        print("|---|---|---|---|")
        for alpha in sorted(set(ALPHAS) | {rule}):
            f1, _, passes = mean_f1(lambda: BCFWStructuredSVM(ChainCRF(), alpha=alpha,
                                                              random_state=0), splits)
            mark = " (alpha=None)" if alpha == rule else ""
            print(f"| {alpha:.3g}{mark} | {f1:.2f} | {passes:.0f} | "
                  f"{'yes' if f1 >= reference else 'no'} |", flush=True)
        for name, make in [("normalised loss, alpha=None", lambda: BCFWStructuredSVM(
                               ChainCRF(normalize_loss=True), random_state=0)),
                           ("normalised loss, alpha 0.01 (the 0.0 default)",
                            lambda: BCFWStructuredSVM(ChainCRF(normalize_loss=True),
                                                      alpha=0.01, random_state=0)),
                           ("count loss, Frank-Wolfe steps, alpha=None", lambda:
                            BCFWStructuredSVM(ChainCRF(), step="fw", random_state=0))]:
            f1, _, passes = mean_f1(make, splits)
            print(f"  {name}: F1 {f1:.2f} ({passes:.0f} passes)", flush=True)


def tol(data):
    for task in ("ner", "chunking"):
        splits = conll_splits(task, data)
        print(f"\n{task}: F1 and relative gap along the passes at alpha=None")
        rows = {}
        for split in splits:
            est = BCFWStructuredSVM(ChainCRF(), tol=0.0, max_iter=5, warm_start=True,
                                    random_state=0)
            for k in range(5, 45, 5):
                est.fit(split[0], split[1])
                rows.setdefault(k, []).append((f1_of(est, split),
                                               est.duality_gap_ / est.loss_scale_))
        print("| passes | relative gap | F1 |\n|---|---|---|")
        for k, vals in rows.items():
            print(f"| {k} | {np.mean([g for _, g in vals]):.2g} | "
                  f"{np.mean([f for f, _ in vals]):.2f} |", flush=True)


def ocr():
    from sklearn_ssvm.datasets import load_ocr_letters, split_folds

    X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
    rule = ChainCRF().prepare(X, Y).default_alpha()
    print(f"\nOCR, 3-fold CV on the training words; alpha=None -> {rule:.3g} (count loss)")
    print("| alpha | letter accuracy | passes to tol (<= 100) |\n|---|---|---|")
    for alpha in sorted({2.5e-4, 5e-4, 1e-3, 3e-3, 1e-2, rule}):
        accs, passes = [], []
        for train, held in KFold(3).split(X):
            est = BCFWStructuredSVM(ChainCRF(), alpha=alpha, random_state=0)
            est.fit([X[i] for i in train], [Y[i] for i in train])
            accs.append(est.score([X[i] for i in held], [Y[i] for i in held]))
            passes.append(est.n_iter_)
        print(f"| {alpha:.3g}{' (alpha=None)' if alpha == rule else ''} | "
              f"{100 * np.mean(accs):.2f} | {np.mean(passes):.0f} |", flush=True)


def cross_validated(make, X, Y, folds=3):
    from sklearn.model_selection import cross_val_score

    return 100 * float(np.mean(cross_val_score(make(), X, Y, cv=KFold(folds, shuffle=True,
                                                                      random_state=0))))


def multilabel(data):
    """Scene by 3-fold CV on ``X_train``, raw and standardised: Hamming loss and example F1 of
    each label graph at ``alpha = c R^2`` (``R^2`` the mean squared norm of an example's
    features, the constant one included), beside binary relevance at each ``C``."""
    from sklearn.base import clone
    from sklearn.metrics import f1_score, hamming_loss
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    scene = np.load(data / "scene_multilabel.npz")
    X, Y = scene["X_train"], scene["y_train"]
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))

    def pooled(make, standardise):
        P = np.zeros_like(Y)
        for train, test in folds:
            model = make_pipeline(StandardScaler(), make()) if standardise else make()
            P[test] = clone(model).fit(X[train], Y[train]).predict(X[test])
        return hamming_loss(Y, P), f1_score(Y, P, average="samples", zero_division=0)

    print("\nscene, 3-fold CV on X_train: Hamming loss / example F1")
    for standardise in (False, True):
        Z = StandardScaler().fit_transform(X) if standardise else X
        r2 = float(np.mean(np.sum(Z ** 2, axis=1))) + 1.0
        name = "standardised" if standardise else "raw"
        print(f"\n{name} features, R^2 = {r2:.1f}; alpha=None -> "
              f"{MultiLabel().prepare(Z, Y).default_alpha():.3g}")
        for C in (0.01, 0.1, 1.0, 10.0):
            h, f = pooled(lambda: OneVsRestClassifier(LinearSVC(C=C)), standardise)
            print(f"  OvR LinearSVC C={C:g}: {h:.4f} / {f:.4f}", flush=True)
        for pairwise in (None, "tree", "full"):
            for c in (5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3):
                h, f = pooled(lambda: BCFWStructuredSVM(MultiLabel(pairwise=pairwise),
                                                        alpha=c * r2, random_state=0),
                              standardise)
                print(f"  pairwise={pairwise!s:5} alpha={c:g} R^2 = {c * r2:.3g}: "
                      f"{h:.4f} / {f:.4f}", flush=True)


def binary(data):
    from sklearn.datasets import load_svmlight_file

    from sklearn_ssvm import BinarySVM

    X, y = load_svmlight_file(str(data / "binary" / "a9a.gz"), n_features=123)
    print(f"\na9a, 3-fold CV on the training set: accuracy; alpha=None -> 1/n = "
          f"{1 / X.shape[0]:.3g}")
    for alpha in sorted({3e-6, 1e-5, 1e-4, 1e-3, 1 / X.shape[0]}):
        acc = cross_validated(lambda: BCFWStructuredSVM(BinarySVM(), alpha=alpha, tol=1e-3,
                                                        random_state=0), X, y)
        print(f"  alpha {alpha:.3g}: {acc:.2f}", flush=True)


def snakes(n, seed):
    from sklearn_ssvm.datasets import make_snakes

    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        side = int(rng.integers(5, 13))
        x, y = make_snakes(1, shape=(side, side), n_segments=10, noise=0.3,
                           random_state=int(rng.integers(2**31)))
        X += x
        Y += y
    return X, Y


def graphs():
    from sklearn_ssvm.structures import GraphCRF

    X, Y = snakes(100, 0)
    X_dev, Y_dev = snakes(60, 1)
    nodes = np.mean([len(y) for y in Y])
    print(f"\nsnakes of 5x5 to 12x12 pixels ({nodes:.0f} on average), 100 training / 60 "
          f"development images: pooled pixel accuracy (alpha in units of the normalised loss; "
          f"alpha=None is 1/n = {1 / len(X):.3g} there)")
    for normalize in (True, False):
        for alpha in (1.0, 0.1, 1 / len(X)):
            est = BCFWStructuredSVM(
                GraphCRF(edge_features=True, directed=True, inference="max_product",
                         normalize_loss=normalize),
                alpha=alpha if normalize else alpha / nodes, tol=1e-3, max_iter=30, cache=True,
                random_state=0).fit(X, Y)
            acc = np.mean(np.concatenate(est.predict(X_dev)) == np.concatenate(Y_dev))
            print(f"  {'normalised' if normalize else 'count'} loss, alpha {alpha:.3g}: "
                  f"{100 * acc:.2f}", flush=True)


def graph_sets():
    """``{name: (training set, development set, GraphCRF parameters)}`` of ``graph-alpha``."""
    from graph_data import rectangles
    from sklearn_ssvm.datasets import make_segmentation, make_snakes

    snakes = dict(shape=(8, 8), n_segments=10)
    sets = {"snakes 200": (make_snakes(200, random_state=0, **snakes),
                           make_snakes(100, random_state=1, **snakes),
                           dict(edge_features=True, directed=True)),
            "rectangles 40": (rectangles(40, 0), rectangles(40, 3), {})}
    for name, n, shape in (("superpixels 100", 60, dict(n_nodes=100)),
                           ("superpixels 300", 60, dict(n_nodes=300)),
                           ("superpixels 1000", 20, dict(n_nodes=1000)),
                           ("grid 32x32", 32, dict(shape=(32, 32)))):
        sets[f"{name} x {n}"] = (make_segmentation(n, random_state=0, **shape),
                                 make_segmentation(n // 4, random_state=3, **shape),
                                 dict(edge_features=True))
    return sets


def graph_alpha():
    from sklearn_ssvm.structures import GraphCRF

    cs = (1e-5, 5e-5, 1e-4, 2e-4, 1e-3)
    print("\nGraphCRF at alpha = c R^2 per unit of the loss scale, at most 2000 passes: "
          "development pixel accuracy (passes to stop; '-': not stopped)")
    print("| data | R^2 | 1/n | " + " | ".join(f"c = {c:g}" for c in cs) + " |")
    print("|---" * (len(cs) + 3) + "|")
    for name, ((X, Y), (X_dev, Y_dev), params) in graph_sets().items():
        problem = GraphCRF(**params).prepare(X, Y)
        radius, scale = problem.squared_radius(), problem.loss_scale()
        cells = []
        for alpha in [1 / (len(X) * scale)] + [c * radius / scale for c in cs]:
            est = BCFWStructuredSVM(GraphCRF(**params), alpha=alpha, max_iter=2000,
                                    random_state=0).fit(X, Y)
            acc = np.mean(np.concatenate(est.predict(X_dev)) == np.concatenate(Y_dev))
            cells.append(f"{100 * acc:.2f} ({est.n_iter_ if est.converged_ else '-'})")
        print(f"| {name} | {radius:.3g} | " + " | ".join(cells) + " |", flush=True)


def pass_budget_sets():
    """``{name: (training set, GraphCRF parameters)}`` of ``pass-budget``."""
    from sklearn_ssvm.datasets import make_segmentation

    sets = {name: (train, params) for name, (train, _, params) in graph_sets().items()}
    for name, n, shape in (("superpixels 100", 200, dict(n_nodes=100)),
                           ("grid 64x64", 8, dict(shape=(64, 64))),
                           ("grid 128x128", 2, dict(shape=(128, 128)))):
        sets[f"{name} x {n}"] = (make_segmentation(n, random_state=0, **shape),
                                 dict(edge_features=True))
    for n, shape, states in ((2, (4, 4), 2), (3, (5, 5), 2), (1, (6, 6), 3), (2, (12, 12), 4),
                             (2, (16, 16), 4)):
        sets[f"grid {shape[0]}x{shape[1]} x {n}, {states} states"] = (
            make_segmentation(n, shape=shape, n_states=states, random_state=0),
            dict(edge_features=True))
    return sets


def pass_budget():
    from sklearn_ssvm.solvers.bcfw import pass_budget as budget
    from sklearn_ssvm.structures import GraphCRF

    print("\nGraphCRF at the defaults, at most twice max_iter=None's passes: passes and block "
          "steps to stop by themselves")
    print("| data | nodes | budget (passes) | passes | steps | fit s |")
    print("|---|---|---|---|---|---|")
    for name, ((X, Y), params) in pass_budget_sets().items():
        start = time.perf_counter()
        est = BCFWStructuredSVM(GraphCRF(**params), max_iter=2 * budget(len(X)),
                                random_state=0).fit(X, Y)
        seconds = time.perf_counter() - start
        passes = est.n_iter_ if est.converged_ else f"not in {est.n_iter_}"
        steps = est.n_iter_ * len(X) if est.converged_ else "-"
        print(f"| {name} | {len(Y[0])} | {budget(len(X))} | {passes} | {steps} | "
              f"{seconds:.1f} |", flush=True)


def smooth(data):
    for task in ("ner", "chunking"):
        splits = conll_splits(task, data)
        for early in (False, "auto"):
            cpu = time.process_time()
            f1, est, _ = mean_f1(lambda: SmoothSSVMClassifier(ChainCRF(), early_stopping=early,
                                                              random_state=0), splits)
            print(f"{task} SmoothSSVMClassifier(early_stopping={early!r}): F1 {f1:.2f}, "
                  f"alpha {est.alpha_:.3g}, {(time.process_time() - cpu) / len(splits):.0f} "
                  f"CPU s a fit", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # max_iter warnings of the small alphas
    for section in args.sections:
        run = {"chains": lambda: chains(args.data), "tol": lambda: tol(args.data),
               "ocr": ocr, "multilabel": lambda: multilabel(args.data),
               "binary": lambda: binary(args.data), "graphs": graphs, "graph-alpha": graph_alpha,
               "pass-budget": pass_budget, "smooth": lambda: smooth(args.data)}[section]
        run()


if __name__ == "__main__":
    main()
