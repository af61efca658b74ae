"""Golden results: every estimator x structure x option on fixed small data, recorded before a
change of structure and compared after it (``test_golden.py``). A cell is its fit's
``coef_``, ``duality_gap_``, ``primal_objective_`` and ``n_iter_``, or the refusal's message.
The file also holds, under ``"_machine"``, the numerical fingerprint of the environment that
recorded it (:func:`fingerprint`): where it is today's, ``test_golden.py`` compares to the bit
(its exact mode), elsewhere what the mathematics fixes (its portable mode).

    python tests/_golden.py                # (re)record tests/golden_results.json
    python tests/_golden.py NAME...        # re-record these cells only
    python tests/_golden.py --fingerprint  # this environment's fingerprint, the recording's,
                                           # and the mode test_golden.py selects here

Besides the recorded keys, a fitted cell's result carries ``"_check"`` (never recorded, see
:func:`_to_json`): what the portable comparison needs from the fit itself, read from the fitted
estimator (its strong convexity, iteration budget, tolerance and objective function).
"""
import copy
import hashlib
import json
import os
from functools import partial
import platform
import sys
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).with_name("golden_results.json")
#: the key of the recording environment's fingerprint in ``golden_results.json``
MACHINE = "_machine"
#: ``SKLEARN_SSVM_GOLDEN``: ``exact``, ``portable`` or unset (exact where the fingerprint is the
#: recording's, portable elsewhere)
MODE_VARIABLE = "SKLEARN_SSVM_GOLDEN"
MODES = ("exact", "portable")
#: environment variables that change which kernels run or how they round (a set one makes the
#: fingerprint differ even where its value is what the machine picks by itself: the safe side)
NUMERIC_VARIABLES = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_OPT", "NUMBA_ENABLE_AVX",
                     "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                     "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "MKL_NUM_THREADS",
                     "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES")
#: their values when this module was imported: numba and the BLAS read them as they load, and a
#: library imported later may set some for its own workers (dask sets the thread counts to 1)
_NUMERIC_ENVIRON = {name: os.environ[name] for name in NUMERIC_VARIABLES if name in os.environ}


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
    # recorded before the flat structures had intercepts and label pairs by default: the
    # models of fit_intercept=False and pairwise=None
    return {"chain": (ChainCRF, "chain"),
            "multiclass": (partial(MulticlassSVM, fit_intercept=False), "flat"),
            "multilabel": (partial(MultiLabel, pairwise=None, fit_intercept=False),
                           "multilabel"),
            "candidates": (CandidateSet, "candidates"),
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


def path_rows(n_alphas):
    """The breakpoints whose coefficients the path cell records, of ``n_alphas``."""
    return np.unique(np.linspace(0, n_alphas - 1, 8).astype(int))


def _path_cell():
    from sklearn.base import clone

    from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, regularization_path
    X, Y = _data("chain")
    eps, alpha_min = 0.1, 0.05

    def run():
        path = regularization_path(BCFWStructuredSVM(ChainCRF(), random_state=0), X, Y,
                                   eps=eps, alpha_min=alpha_min)
        some = path_rows(len(path.alphas_))

        def objective(alpha, coef):
            """The primal objective (1) of ``coef`` at ``alpha`` on the path's data."""
            estimator = clone(path.estimator).set_params(alpha=float(alpha))
            estimator.structure_, estimator.alpha_ = path.structure_, float(alpha)
            estimator.coef_ = np.asarray(coef, dtype=float)
            return float(estimator.primal_objective(X, Y))
        return {"alphas": np.asarray(path.alphas_), "coef": np.asarray(path.coefs_)[some],
                "_check": {"path": path, "eps": eps, "alpha_min": alpha_min,
                           "objective": objective}}
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
            # a structured model's intercepts are entries of coef_ (the constant feature)
            "intercept": np.ravel([] if hasattr(estimator, "structure_")
                                  else getattr(estimator, "intercept_", [])),
            "gap": getattr(estimator, "duality_gap_", None),
            "primal": getattr(estimator, "primal_objective_", None),
            "n_iter": int(estimator.n_iter_),
            "_check": _check(estimator, X, Y)}


def _check(estimator, X, Y):
    """What the portable comparison reads from the fit (never recorded).

    ``strong_convexity``: the modulus ``c`` of the objective the gap certifies, ``P(w) - P* >=
    c/2 ||w - w*||^2``. Every estimator here minimises its loss plus ``alpha ((1 - l1_ratio)/2
    ||w||^2 + l1_ratio ||w||_1)`` (``l1_ratio = 0`` where it has none: ``BCFWStructuredSVM``,
    ``BMRMStructuredSVM``, ``PragamStructuredSVM`` and ``SmoothSSVMClassifier`` at ``alpha_``,
    ``PragamSVC`` at ``alpha``): convex loss plus that penalty is ``alpha (1 - l1_ratio)``-strongly
    convex, the l1 part convex only. The smoothed solvers (Casimir-SVRG, SVRG, AGM) certify the
    non-smooth objective, not the smoothed one (``solvers/smooth.py``, ``agm_structured``), so the
    same modulus holds. ``PragamSVC``'s unregularised intercept is minimised out of its objective,
    ``J(w) = alpha/2 ||w||^2 + min_b mean hinge``: a partial minimum of a jointly convex function
    is convex, so ``J`` is still ``alpha``-strongly convex in ``w`` (and nothing bounds ``b``).
    ``certified``: whether the gap is a certificate (``gap_certified_``: every oracle exact).
    ``max_iter``, ``tol``: the iteration budget and the absolute gap the fit stops at
    (``tol * loss_scale_``; ``PragamSVC``'s ``tol`` is absolute, ``J(0) = 1``).
    ``objective``: ``(coef, intercept) -> P`` on the cell's data, None where the test cannot
    evaluate it (``PragamSVC``'s F1 loss); ``reported_objective``: the fit's own value of it
    (``primal_objective_``, or ``objective_``), which the test checks it against.
    """
    from sklearn_ssvm import PragamSVC

    if isinstance(estimator, PragamSVC):
        alpha, tol = float(estimator.alpha), float(estimator.tol)
        objective = None
        if estimator.loss == "hinge" and len(estimator.classes_) == 2:
            X = np.asarray(X, dtype=float)
            signs = np.where(np.asarray(Y) == estimator.classes_[1], 1.0, -1.0)

            def objective(coef, intercept):
                """``alpha/2 ||w||^2 + mean_i [1 - y_i (<x_i, w> + b)]_+`` at the recorded ``b``:
                ``J(w)`` where ``b`` is optimal for ``w``, as the solvers return it."""
                coef = np.asarray(coef, dtype=float)
                b = float(np.ravel(intercept)[0]) if np.size(intercept) else 0.0
                margins = 1.0 - signs * (X @ coef + b)
                return 0.5 * alpha * float(coef @ coef) + float(np.maximum(margins, 0.0).mean())
        return {"strong_convexity": alpha, "certified": True, "max_iter": estimator.max_iter,
                "tol": tol, "objective": objective,
                "reported_objective": float(estimator.objective_)}

    def objective(coef, intercept=None):
        """``estimator.primal_objective`` (penalty plus mean structured hinge) at ``coef``."""
        at = copy.copy(estimator)
        at.coef_ = np.asarray(coef, dtype=float)
        return float(at.primal_objective(X, Y))
    return {"strong_convexity": estimator.alpha_ * (1.0 - getattr(estimator, "l1_ratio", 0.0)),
            "certified": bool(getattr(estimator, "gap_certified_", True)),
            "max_iter": estimator.max_iter, "tol": estimator.tol * estimator.loss_scale_,
            "objective": objective,
            "reported_objective": float(getattr(estimator, "primal_objective_",
                                                getattr(estimator, "objective_", np.nan)))}


def _to_json(result):
    """The recorded part of a cell's result (keys starting with ``_`` are not recorded)."""
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in result.items()
            if not k.startswith("_")}


def fingerprint():
    """What decides this environment's floating-point results, beyond the package's code.

    The processor (its model name, and the one numba compiles for with its features:
    ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` override them, as in numba), the system and its
    C library (``libm``), the versions of Python and of the numerical dependencies, the BLAS
    libraries loaded with their kernels (OpenBLAS picks its core type per CPU,
    ``OPENBLAS_CORETYPE`` overrides it) and threads, and the environment variables of
    :data:`NUMERIC_VARIABLES` that are set. Two environments with one fingerprint run the same
    kernels on the same data in the same order: the golden results to the bit.
    """
    import llvmlite
    import llvmlite.binding as llvm
    import numba
    import scipy
    import scipy.linalg  # noqa: F401 (loads scipy's BLAS)
    import sklearn
    import threadpoolctl

    import sklearn_ssvm  # noqa: F401 (loads what the fits load)

    cpu = ""
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info
                        if line.lower().startswith(("model name", "cpu model"))), "")
    except OSError:
        pass
    config = numba.config
    try:
        from numba.core.codegen import get_host_cpu_features
        host_features = get_host_cpu_features()
    except (ImportError, RuntimeError):
        host_features = ""
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else host_features
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as simd
    except ImportError:
        simd = {}
    blas = sorted(" ".join(str(info.get(key)) for key in ("internal_api", "version",
                                                         "architecture", "threading_layer",
                                                         "num_threads"))
                  for info in threadpoolctl.threadpool_info() if info.get("user_api") == "blas")
    return {"cpu": cpu or platform.processor() or platform.machine(),
            "machine": platform.machine(), "system": platform.system(),
            "libc": " ".join(platform.libc_ver()).strip(),
            "numba_cpu": config.CPU_NAME or llvm.get_host_cpu_name(),
            "numba_cpu_features": _digest(features),
            "numpy_simd": _digest(",".join(sorted(k for k, on in simd.items() if on))),
            "blas": blas,
            "versions": {"python": platform.python_version(), "numpy": np.__version__,
                         "scipy": scipy.__version__, "numba": numba.__version__,
                         "llvmlite": llvmlite.__version__, "scikit-learn": sklearn.__version__,
                         "threadpoolctl": threadpoolctl.__version__},
            "env": dict(_NUMERIC_ENVIRON)}


def _digest(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load():
    """``(results, machine)``: the recorded cells (``{name: result}``) and the fingerprint of
    the environment that recorded them (None: unknown, or cells of several environments)."""
    results = json.loads(RESULTS.read_text())
    return {k: v for k, v in results.items() if k != MACHINE}, results.get(MACHINE)


def mode(machine, environ=os.environ):
    """``(mode, reason)``: the comparison ``test_golden.py`` runs, ``"exact"`` or
    ``"portable"``. ``SKLEARN_SSVM_GOLDEN`` chooses; unset (or empty), exact where this
    environment's :func:`fingerprint` is ``machine``, the recording's, portable elsewhere."""
    asked = environ.get(MODE_VARIABLE, "").strip().lower()
    if asked:
        if asked not in MODES:
            raise ValueError(f"{MODE_VARIABLE}={environ[MODE_VARIABLE]!r}: expected one of "
                             f"{', '.join(MODES)} (or unset: exact on the recording "
                             f"environment, portable elsewhere).")
        return asked, f"{MODE_VARIABLE}={asked}"
    if machine is None:
        return "portable", "the recording environment is unknown"
    here = json.loads(json.dumps(fingerprint()))  # as stored: lists, not tuples
    differ = sorted(key for key in set(here) | set(machine) if here.get(key) != machine.get(key))
    if not differ:
        return "exact", "this environment's numerical fingerprint is the recording's"
    return "portable", ("the numerical fingerprint differs from the recording's in "
                        + ", ".join(differ))


def record(names=()):
    """(Re)record every cell, or only ``names`` (cells whose arithmetic a change meant to
    change), keeping the others' results, with this environment's fingerprint. Cells
    re-recorded in another environment than the rest leave no fingerprint (``null``): exact
    mode is then only chosen with ``SKLEARN_SSVM_GOLDEN=exact``, until a full recording."""
    runs = cells()
    unknown = sorted(set(names) - set(runs))
    if unknown:
        raise ValueError(f"no such cells: {', '.join(unknown)}")
    here = json.loads(json.dumps(fingerprint()))
    results, machine = load() if names else ({}, here)
    if machine != here:
        print(f"{MACHINE}: cells recorded in other environments (see --fingerprint): no "
              f"fingerprint is kept, exact mode is chosen only with {MODE_VARIABLE}=exact.")
        machine = None
    results.update({name: _to_json(runs[name]()) for name in (names or runs)})
    stored = {MACHINE: machine, **results}
    RESULTS.write_text("{\n" + ",\n".join(f"{json.dumps(name)}: {json.dumps(stored[name])}"
                                           for name in sorted(stored)) + "\n}\n")
    return results


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parents[1]))
    if sys.argv[1:] == ["--fingerprint"]:
        recorded_machine = load()[1]
        print("here:     ", json.dumps(fingerprint()))
        print("recording:", json.dumps(recorded_machine))
        print("test_golden.py runs in %s mode: %s" % mode(recorded_machine))
        sys.exit(0)
    recorded = record(sys.argv[1:])
    print(f"{len(recorded)} cells, {sum('refused' in r for r in recorded.values())} refused")
