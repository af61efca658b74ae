"""Golden results: every estimator x structure x option on fixed small data, recorded before a
change of structure and compared after it (``test_golden.py``). A cell is its fit's
``coef_``, ``duality_gap_``, ``primal_objective_`` and ``n_iter_``, or the refusal's message.

    python tests/_golden.py          # (re)record tests/golden_results.json
    python tests/_golden.py NAME...  # re-record these cells only
"""
import json
import sys
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).with_name("golden_results.json")


def _data(kind):
    rng = np.random.default_rng({"chain": 0, "flat": 1, "multilabel": 2, "candidates": 3,
                                 "graph": 4, "binary_graph": 5}[kind])
    if kind == "chain":
        lengths = rng.integers(1, 6, size=12)
        W = rng.normal(size=(3, 3))
        X = [rng.normal(size=(t, 3)) for t in lengths]
        return X, [np.argmax(x @ W + rng.normal(size=(len(x), 3)), axis=1) for x in X]
    if kind in ("flat", "multilabel"):
        X = rng.normal(size=(30, 4))
        W = rng.normal(size=(4, 3))
        scores = X @ W + 0.8 * rng.normal(size=(30, 3))
        return X, ((scores > 0).astype(int) if kind == "multilabel" else np.argmax(scores, 1))
    if kind == "candidates":
        X = [rng.normal(size=(int(m), 3)) for m in rng.integers(2, 6, size=12)]
        Y = []
        for x in X:
            losses = rng.uniform(0, 1, x.shape[0])
            losses[int(np.argmax(x[:, 0]))] = 0.0
            Y.append(losses)
        return X, Y
    if kind == "graph":
        from sklearn_ssvm.structures import grid_graph
        X, Y = [], []
        for _ in range(6):
            y = rng.integers(3, size=(2, 2))
            X.append(grid_graph(np.eye(3)[y] + 0.9 * rng.normal(size=(2, 2, 3))))
            Y.append(y.ravel())
        return X, Y
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])  # binary_graph
    X, Y = [], []
    for _ in range(10):
        y = rng.integers(0, 2, size=4)
        features = rng.normal(size=(4, 2))
        features[:, 0] += 1.5 * y - 0.75
        X.append((features, edges))
        Y.append(y)
    return X, Y


def _structures():
    from sklearn_ssvm import BinarySVM, CandidateSet, ChainCRF, GraphCRF, MulticlassSVM, MultiLabel
    from sklearn_ssvm.structures import BinaryGraphCRF
    return {"chain": (ChainCRF, "chain"), "multiclass": (MulticlassSVM, "flat"),
            "multilabel": (MultiLabel, "multilabel"), "candidates": (CandidateSet, "candidates"),
            "graph": (GraphCRF, "graph"), "binary_graph": (BinaryGraphCRF, "binary_graph")}


def _estimators():
    from sklearn_ssvm import (BCFWStructuredSVM, BMRMStructuredSVM, PragamStructuredSVM,
                              SmoothSSVMClassifier)
    # recorded without the cache, which "auto" turns on for graphs since issue 28
    bcfw = dict(alpha=0.1, tol=1e-4, max_iter=40, random_state=0, cache=False)
    # a fixed learning rate but in one cell: its search costs a second a fit on graphs
    smooth = dict(alpha=0.1, max_iter=4, learning_rate=0.1, random_state=0)
    return {
        "bcfw-fw": lambda s: BCFWStructuredSVM(s, step="fw", **bcfw),
        "bcfw-pairwise": lambda s: BCFWStructuredSVM(s, step="pairwise", **bcfw),
        "bcfw-away": lambda s: BCFWStructuredSVM(s, step="away", **bcfw),
        "bcfw-cache": lambda s: BCFWStructuredSVM(s, step="fw", **{**bcfw, "cache": True}),
        "bcfw-averaging": lambda s: BCFWStructuredSVM(s, step="fw", averaging=True, **bcfw),
        "bcfw-l1": lambda s: BCFWStructuredSVM(s, step="pairwise", l1_ratio=0.3, **bcfw),
        "bmrm": lambda s: BMRMStructuredSVM(s, alpha=0.1, tol=1e-4, max_iter=60),
        "casimir-svrg": lambda s: SmoothSSVMClassifier(s, **smooth),
        "casimir-svrg-search": lambda s: SmoothSSVMClassifier(s, **{**smooth,
                                                                    "learning_rate": None}),
        "svrg": lambda s: SmoothSSVMClassifier(s, solver="svrg", **smooth),
        "sgd": lambda s: SmoothSSVMClassifier(s, solver="sgd", **smooth),
        "agm": lambda s: SmoothSSVMClassifier(s, solver="agm", smoothing="entropy", top_k=None,
                                              alpha=0.1, max_iter=30, mu_schedule="const"),
        "agm-continuation": lambda s: SmoothSSVMClassifier(
            s, solver="agm", smoothing="entropy", top_k=None, alpha=0.1, max_iter=60),
        "casimir-svrg-l1": lambda s: SmoothSSVMClassifier(s, l1_ratio=0.3, **smooth),
        "pragam-structured": lambda s: PragamStructuredSVM(s, alpha=0.1, tol=1e-4, max_iter=200),
    }


def _pragam_cells():
    from sklearn_ssvm import PragamSVC
    rng = np.random.default_rng(6)
    X = rng.normal(size=(40, 4))
    y = (X @ rng.normal(size=4) + 0.5 * rng.normal(size=40) > 0).astype(int)
    cells = {}
    for solver in ("pragam", "agm-primal", "agm-dual"):
        for loss in ("hinge", "f1"):
            cells[f"pragam/{solver}/{loss}"] = (
                lambda solver=solver, loss=loss: PragamSVC(solver=solver, loss=loss, alpha=0.01,
                                                           fit_intercept=loss == "hinge",
                                                           max_iter=200 if loss == "hinge"
                                                           else 30), (X, y))
    return cells


def _path_cell():
    from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, regularization_path
    X, Y = _data("chain")

    def run():
        path = regularization_path(BCFWStructuredSVM(ChainCRF(), random_state=0), X, Y,
                                   eps=0.1, alpha_min=0.05)
        some = np.unique(np.linspace(0, len(path.alphas_) - 1, 8).astype(int))
        return {"alphas": np.asarray(path.alphas_), "coef": np.asarray(path.coefs_)[some]}
    return run


def cells():
    """``{name: () -> result dict}`` of every cell."""
    out = {}
    structures = _structures()
    for est_name, make in _estimators().items():
        for s_name, (structure, kind) in structures.items():
            out[f"{est_name}/{s_name}"] = (lambda make=make, structure=structure, kind=kind:
                                           _fit(make(structure()), *_data(kind)))
    for name, (make, data) in _pragam_cells().items():
        out[name] = lambda make=make, data=data: _fit(make(), *data)
    out["path/bcfw/chain"] = _path_cell()
    return out


def _fit(estimator, X, Y):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(X, Y)
    except (ValueError, TypeError, NotImplementedError) as error:
        return {"refused": str(error)}
    return {"coef": np.ravel(estimator.coef_),
            "intercept": np.ravel(getattr(estimator, "intercept_", [])),
            "gap": getattr(estimator, "duality_gap_", None),
            "primal": getattr(estimator, "primal_objective_", None),
            "n_iter": int(estimator.n_iter_)}


def _to_json(result):
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in result.items()}


def record(names=()):
    """(Re)record every cell, or only ``names`` (cells whose arithmetic a change meant to
    change), keeping the others' results."""
    runs = cells()
    results = json.loads(RESULTS.read_text()) if names else {}
    results.update({name: _to_json(runs[name]()) for name in (names or runs)})
    RESULTS.write_text("{\n" + ",\n".join(f"{json.dumps(name)}: {json.dumps(results[name])}"
                                           for name in sorted(results)) + "\n}\n")
    return results


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parents[1]))
    recorded = record(sys.argv[1:])
    print(f"{len(recorded)} cells, {sum('refused' in r for r in recorded.values())} refused")
