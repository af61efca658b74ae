"""Compile kernels ahead of a job: ``python -m sklearn_ssvm --compile``.

numba compiles a kernel the first time a process calls it and keeps the result in its on-disk
cache (``_kernels``' rule: ``NUMBA_CACHE_DIR`` when set, else beside the package when writable,
else numba's user-wide cache). A fresh worker of a cluster, or a job's first process, pays that
compilation in its first fit. :func:`compile_fits` runs one small fit (and a prediction) of each
common estimator x structure at its defaults, so that the cache holds their kernels before the
job: the kernels a fit compiles depend on its structure and options (the data's size does not
matter), so a small fit compiles what a large one of the same configuration uses.
"""
import time
import warnings

import numpy as np

#: the fits ``--compile`` runs by default: what the estimators' defaults use on each structure
COMMON = ("bcfw/chain", "bcfw/multiclass", "bcfw/binary", "bcfw/multilabel", "casimir/chain",
          "casimir/multiclass", "bmrm/chain")
#: every fit this module knows (``benchmarks/compile_time.py`` times each cold)
FITS = COMMON + ("bcfw/candidates", "bcfw/graph", "agm/chain", "crf/chain", "pragam/binary",
                 "marginals/grid")


def small_data(family, random_state=0):
    """A few random examples of one structure family: ``(X, Y)``."""
    rng = np.random.default_rng(random_state)
    if family == "chain":
        X = [rng.normal(size=(int(t), 4)) for t in rng.integers(2, 7, size=20)]
        return X, [rng.integers(3, size=len(x)) for x in X]
    if family == "graph":
        from .structures import grid_graph
        X = [grid_graph(rng.normal(size=(3, 3, 3))) for _ in range(8)]
        return X, [rng.integers(3, size=9) for _ in X]
    if family == "candidates":  # each example's losses, one candidate (the truth) at 0
        X = [rng.normal(size=(int(m), 4)) for m in rng.integers(2, 6, size=20)]
        losses = [rng.uniform(size=len(x)) for x in X]
        for loss in losses:
            loss[rng.integers(len(loss))] = 0.0
        return X, losses
    X = rng.normal(size=(40, 4))
    if family == "multilabel":
        return X, (rng.uniform(size=(40, 3)) < 0.4).astype(int)
    return X, rng.integers(2 if family == "binary" else 3, size=40)


def fit(name):
    """Fit (then predict with) ``name``, ``"estimator/family"`` of :data:`FITS`, on small data;
    returns the fitted estimator."""
    from sklearn.exceptions import ConvergenceWarning

    from . import (BCFWStructuredSVM, BinarySVM, BMRMStructuredSVM, CandidateSet, ChainCRF,
                   CRFClassifier, GraphCRF, MulticlassSVM, MultiLabel, PragamSVC,
                   SmoothSSVMClassifier)
    if name not in FITS:
        raise ValueError(f"unknown fit {name!r}: expected one of {', '.join(FITS)}")
    solver, family = name.split("/")
    if solver == "marginals":
        from .marginals import TRWBarrierFW, random_grid
        return TRWBarrierFW(n_rho_iter=2).fit(random_grid(4, 4, random_state=0))
    X, Y = small_data(family)
    structure = {"chain": ChainCRF, "multiclass": MulticlassSVM, "binary": BinarySVM,
                 "multilabel": MultiLabel, "candidates": CandidateSet,
                 "graph": GraphCRF}[family]()
    estimator = {
        "bcfw": lambda: BCFWStructuredSVM(structure, max_iter=3, random_state=0),
        "casimir": lambda: SmoothSSVMClassifier(structure, max_iter=2, random_state=0),
        "bmrm": lambda: BMRMStructuredSVM(structure, max_iter=5),
        "crf": lambda: CRFClassifier(structure, c1=0.1, c2=0.1, max_iter=3),
        "agm": lambda: SmoothSSVMClassifier(structure, solver="agm", smoothing="entropy",
                                            top_k=None, max_iter=3),
        "pragam": lambda: PragamSVC(max_iter=20)}[solver]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator.fit(X, Y)
    estimator.predict(X[:5])
    return estimator


def compile_fits(names=COMMON, out=print):
    """Run :func:`fit` for each of ``names``, reporting each one's seconds through ``out``;
    returns the total seconds."""
    from ._kernels import _cache_dir
    try:
        out(f"compiling into {_cache_dir()}")
    except Exception:  # numba's rule found no writable directory: it caches nothing
        out("numba has no writable cache directory here (set NUMBA_CACHE_DIR): the kernels "
            "compiled now are not kept for later processes")
    total = time.perf_counter()
    for name in names:
        t = time.perf_counter()
        fit(name)
        out(f"  {name:20} {time.perf_counter() - t:6.1f} s")
    total = time.perf_counter() - total
    out(f"done in {total:.1f} s: later processes load these kernels from the cache")
    return total
