"""Fuzz cases for one estimator, run as a script (``python _fuzz.py ESTIMATOR N_CASES LOG``) so
that a crash or a hang takes down a child process, not the test session (``test_fuzz.py``).

Hypothesis draws each case: a structure (chain, multiclass, binary, multi-label, candidate
sets, graphs; ``PragamSVC`` takes flat data), small data, then any number of defects (NaN, inf,
huge or tiny scales, dtypes, sparse formats, 3-D arrays, ragged or missing features, empty
data, label types, one class, unseen labels, length mismatches, bad parameters (infinite,
complex, None, of the wrong type), warm refits on changed data, None or a scalar for ``X``
or ``Y``, graphs' edges out of range, negative, NaN, fractional, self-loops or of the wrong
shape). A case
passes when the fit succeeds with finite ``coef_``, gap, predictions and score, or raises a
``ValueError``/``TypeError`` from the library's or scikit-learn's validation (not from numpy,
numba or a kernel). The summary goes to stdout as JSON; the case being run is
written to ``LOG`` first, so a crash or a hang names it.
"""
import json
import sys
import traceback
import warnings

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_ssvm import (BCFWStructuredSVM, BinarySVM, BMRMStructuredSVM, CandidateSet,
                          ChainCRF, CRFClassifier, MulticlassSVM, MultiLabel,
                          PragamStructuredSVM, PragamSVC, SmoothSSVMClassifier)
from sklearn_ssvm.penalties import ElasticNet
from sklearn_ssvm.structures import BinaryGraphCRF, GraphCRF

STRUCTURED = {
    "bcfw": lambda s: BCFWStructuredSVM(s, max_iter=4, gap_check=2, random_state=0),
    "bcfw-pairwise": lambda s: BCFWStructuredSVM(s, max_iter=4, gap_check=2, step="pairwise",
                                                 cache=True, cache_size=2, max_active=2,
                                                 random_state=0),
    "smooth": lambda s: SmoothSSVMClassifier(s, max_iter=3, random_state=0),
    "bmrm": lambda s: BMRMStructuredSVM(s, max_iter=8),
    "pragam-structured": lambda s: PragamStructuredSVM(s, max_iter=20),
    "crf": lambda s: CRFClassifier(s, max_iter=5),
}
#: the structures drawn for an estimator, where not all: those it trains (it refuses the others
#: by declaration), and for the CRF one it refuses, whose declared error is a case too
TRAINS = {"pragam-structured": ("candidates", "multiclass"),
          "crf": ("binary-graph", "candidates", "chain", "graph", "multiclass")}
STRUCTURES = {"chain": ChainCRF, "multiclass": MulticlassSVM, "binary": BinarySVM,
              "multilabel": MultiLabel, "candidates": CandidateSet, "graph": GraphCRF,
              "edge-graph": lambda: GraphCRF(edge_features=True, directed=True),
              "binary-graph": BinaryGraphCRF}
GRAPHS = ("graph", "edge-graph", "binary-graph")
#: penalties no fit takes: not a Penalty, or no finite strong convexity and l1 weight
BAD_PENALTIES = ["l2", 0.1, ElasticNet(np.nan), ElasticNet(1.0, np.inf), ElasticNet(-1.0),
                 ElasticNet(1.0 + 1j), ElasticNet(0.0)]
#: (parameter, bad values) per estimator family
BAD_PARAMS = {
    "structured": [("alpha", [0.0, -1.0, np.nan, np.inf, -np.inf, 1e-2 + 1j, "big", [1e-3]]),
                   ("max_iter", [0, -3, 2.5, None]), ("tol", [-1.0, np.nan, np.inf, "x"]),
                   ("n_jobs", [0, 1.5, "all"]), ("random_state", ["seed", 1.5]),
                   ("warm_start", ["yes", 2]), ("penalty", BAD_PENALTIES)],
    "crf": [("c1", [-1.0, np.nan, np.inf, 1e-2 + 1j, None, "big"]),
            ("c2", [0.0, -1.0, np.nan, np.inf, None]), ("memory", [0, 2.5, None]),
            ("alpha", [0.0, -1.0, np.nan, np.inf, "big"]), ("l1_ratio", [1.0, -0.5, np.nan]),
            ("max_iter", [0, -3, 2.5, None]), ("tol", [-1.0, np.nan, np.inf, "x"]),
            ("penalty", BAD_PENALTIES)],
    "pragam": [("alpha", [0.0, -1.0, np.nan, np.inf, 1e-2 + 1j, None, "big"]),
               ("max_iter", [0, -3, 2.5]), ("tol", [-1.0, np.nan, np.inf]),
               ("solver", ["newton", None]),
               ("fit_intercept", ["yes"]), ("loss", ["squared"])],
}
#: BCFW's max_iter=None is its pass budget rule
BAD_PARAMS["bcfw"] = [(name, [v for v in values if v is not None] if name == "max_iter"
                       else values) for name, values in BAD_PARAMS["structured"]]
DEFECTS = ["nan", "inf", "huge", "tiny", "int", "bool", "float32", "complex", "object", "str",
           "sparse", "3d", "ragged", "no features", "empty", "empty example", "label types",
           "none label", "nan label", "one class", "unseen labels", "length mismatch",
           "bad param", "warm refit", "wrong features at predict", "none X", "scalar X",
           "none Y", "scalar Y", "bad edges"]
#: what "bad edges" puts in a graph's edge array
BAD_EDGES = ["out of range", "negative", "nan", "fractional", "self-loop", "three columns",
             "flat", "none", "edge features rows"]
#: where a clear error may be raised: our own code outside the kernels, scikit-learn's checks
CLEAR_SOURCES = ("sklearn_ssvm/", "sklearn/utils/validation.py",
                 "sklearn/utils/_param_validation.py", "sklearn/utils/multiclass.py",
                 "sklearn/base.py")


def make_data(kind, rng, n, d, k, lengths, scale):
    """Valid data of structure ``kind``: ``n`` examples, ``d`` features, ``k`` labels."""
    if kind == "chain":
        X = [rng.normal(size=(t, d)) * scale for t in lengths]
        Y = [rng.integers(0, k, t) for t in lengths]
    elif kind in GRAPHS:
        X, Y = [], []
        for t in lengths:
            pairs = [(u, v) for u in range(t) for v in range(u + 1, t)]
            edges = np.array([pairs[j] for j in rng.permutation(len(pairs))[:rng.integers(
                len(pairs) + 1)]], dtype=np.int64).reshape(-1, 2)
            x = (rng.normal(size=(t, d)) * scale, edges)
            if kind == "edge-graph":
                x += (rng.normal(size=(len(edges), 2)),)
            X.append(x)
            Y.append(rng.integers(0, 2 if kind == "binary-graph" else k, t))
    elif kind == "candidates":
        X = [rng.normal(size=(max(t, 1), d)) * scale for t in lengths]
        Y = []
        for x in X:
            losses = rng.uniform(0, 1, x.shape[0])
            losses[rng.integers(x.shape[0])] = 0.0
            Y.append(losses)
    else:
        X = rng.normal(size=(n, d)) * scale
        if kind == "multilabel":
            Y = rng.integers(0, 2, (n, k))
        else:
            Y = rng.integers(0, 2 if kind == "binary" else k, n)
    return X, Y


def per_example(X, fn):
    """``fn`` on every example's features (a graph's node features, its edges kept)."""
    def features(x):
        return (fn(x[0]),) + tuple(x[1:]) if isinstance(x, tuple) else fn(x)
    return [features(x) for x in X] if isinstance(X, list) else fn(X)


def shorten(x, keep=-1):
    """Example ``x`` cut to its first nodes (``x[:keep]``); a graph keeps the edges among
    them."""
    if not isinstance(x, tuple):
        return x[:keep]
    t = len(np.arange(np.shape(x[0])[0])[:keep])
    inside = np.all(np.asarray(x[1]) < t, axis=1)
    return (x[0][:keep], np.asarray(x[1])[inside]) + tuple(np.asarray(z)[inside]
                                                           for z in x[2:])


def spoil_edges(x, how):
    """Graph example ``x`` with its edges spoiled ``how`` (:data:`BAD_EDGES`)."""
    features, edges = x[0], np.asarray(x[1])
    t = np.shape(features)[0]
    if how == "out of range":
        edges = np.vstack([edges, [[0, t + 3]]])
    elif how == "negative":
        edges = np.vstack([edges, [[-1, 0]]])
    elif how == "nan":
        edges = np.vstack([edges.astype(float), [[np.nan, 0.0]]])
    elif how == "fractional":
        edges = np.vstack([edges.astype(float), [[0.5, 0.0]]])
    elif how == "self-loop":
        edges = np.vstack([edges, [[0, 0]]])
    elif how == "three columns":
        edges = np.hstack([edges, np.zeros((len(edges), 1), dtype=edges.dtype)])
    elif how == "flat":
        edges = edges.ravel()
    elif how == "none":
        edges = None
    else:  # one edge-feature row too many
        return x[:2] + (np.vstack([x[2], np.ones((1, np.shape(x[2])[1]))]),) if len(x) > 2 \
            else x
    return (features, edges) + tuple(x[2:])


def relabel(Y, fn):
    """Map the labels of ``Y`` (a list of label arrays, or one array) through ``fn``."""
    if isinstance(Y, list):
        return [np.array([fn(v) for v in y], dtype=object) for y in Y]
    return np.array([fn(v) for v in np.ravel(Y)], dtype=object).reshape(np.shape(Y))


def apply_defect(defect, kind, X, Y, est, draw, rng):
    """``(X, Y, est, after)``: the data and estimator with ``defect``; ``after(est)`` runs on
    the fitted estimator (a warm refit, a predict on other data), or None."""
    after = None
    if defect in ("nan", "inf", "huge", "tiny"):
        value = {"nan": np.nan, "inf": np.inf}.get(defect)
        factor = {"huge": 10.0 ** draw(st.integers(100, 308)), "tiny": 1e-300}.get(defect)

        def spoil(x):
            x = np.array(x, dtype=float)
            if x.size:
                if value is not None:
                    x.flat[rng.integers(x.size)] = value
                else:
                    x = x * factor
            return x
        X = per_example(X, spoil)
    elif defect in ("int", "bool", "float32", "complex", "object", "str"):
        dtype = {"int": np.int64, "bool": bool, "float32": np.float32, "complex": complex,
                 "object": object, "str": str}[defect]
        X = per_example(X, lambda x: np.asarray(x).astype(dtype))
    elif defect == "sparse":
        fmt = draw(st.sampled_from(["csr", "csc", "coo", "lil", "dok", "bsr"]))
        X = per_example(X, lambda x: sp.csr_matrix(np.asarray(x)).asformat(fmt))
    elif defect == "3d":
        X = per_example(X, lambda x: np.asarray(x)[..., None])
    elif defect == "ragged" and isinstance(X, list) and len(X) > 1:
        X = list(X)
        X[-1:] = per_example(X[-1:], lambda x: np.hstack([x, np.ones((x.shape[0], 1))]))
    elif defect == "no features":
        X = per_example(X, lambda x: np.zeros((np.shape(x)[0], 0)))
    elif defect == "empty":
        X, Y = X[:0], Y[:0]
    elif defect == "empty example" and isinstance(X, list) and X and len(Y):
        X, Y = list(X), list(Y)
        X[0], Y[0] = shorten(X[0], 0), Y[0][:0]
    elif defect == "label types" and kind != "candidates":
        style = draw(st.sampled_from(["str", "float", "mixed", "negative", "bool", "tuple"]))
        fn = {"str": lambda v: f"L{v}", "float": lambda v: v + 0.5,
              "mixed": lambda v: f"L{v}" if v % 2 else int(v), "negative": lambda v: -7 * v,
              "bool": lambda v: bool(v), "tuple": lambda v: (v,)}[style]
        Y = relabel(Y, fn)
    elif defect in ("none label", "nan label") and len(Y):
        bad = None if defect == "none label" else np.nan
        Y = relabel(Y, lambda v: v)
        if isinstance(Y, list):
            if Y[0].size:
                Y[0][0] = bad
        else:
            Y.flat[0] = bad
    elif defect == "one class" and kind != "candidates":
        Y = per_example(Y, lambda y: np.zeros_like(np.asarray(y)))
    elif defect == "length mismatch" and len(Y):
        Y = Y[:-1]
    elif defect in ("none X", "scalar X"):
        X = None if defect == "none X" else draw(st.sampled_from([0.5, 3, "x", np.float64(2)]))
    elif defect in ("none Y", "scalar Y"):
        Y = None if defect == "none Y" else draw(st.sampled_from([1, 0.5, "a"]))
    elif defect == "bad edges" and kind in GRAPHS and isinstance(X, list) and X \
            and isinstance(X[0], tuple):
        X = list(X)
        X[0] = spoil_edges(X[0], draw(st.sampled_from(BAD_EDGES)))
    elif defect == "bad param":
        family = ("pragam" if isinstance(est, PragamSVC) else "crf"
                  if isinstance(est, CRFClassifier) else "bcfw"
                  if isinstance(est, BCFWStructuredSVM) else "structured")
        name, values = draw(st.sampled_from(BAD_PARAMS[family]))
        est.set_params(**{name: draw(st.sampled_from(values))})
    elif defect == "warm refit":
        change = draw(st.sampled_from(["labels", "lengths", "features", "examples"]))
        X2, Y2 = X, Y
        if change == "labels":
            Y2 = per_example(Y, lambda y: np.asarray(y) + 1 if kind != "candidates"
                             else np.asarray(y))
        elif change == "lengths" and isinstance(X, list) and X:
            X2, Y2 = list(X), list(Y)
            X2[0], Y2[0] = shorten(X2[0]), Y2[0][:-1]
        elif change == "features":
            X2 = per_example(X, lambda x: np.hstack([x, np.ones((np.shape(x)[0], 1))]))
        else:
            X2, Y2 = X[: max(len(X) - 1, 0)], Y[: max(len(Y) - 1, 0)]

        def after(est):
            est.set_params(warm_start=True).fit(X2, Y2)
            check_fitted(est, X2, Y2)
    elif defect == "wrong features at predict":
        def after(est):
            est.predict(per_example(X, lambda x: np.hstack([x, np.ones((np.shape(x)[0], 2))])))
    elif defect == "unseen labels" and kind in ("chain", "multiclass"):
        def after(est):
            Y2 = per_example(Y, lambda y: np.asarray(y) + 100)
            check_score(est.score(X, Y2))
    return X, Y, est, after


def check_score(score):
    if not np.isfinite(score):
        raise AssertionError(f"non-finite score {score!r}")


def check_fitted(est, X, Y):
    """The fitted model's numbers are finite and it predicts and scores its training data."""
    for name in ("coef_", "intercept_", "duality_gap_", "primal_objective_", "dual_objective_"):
        value = getattr(est, name, None)
        if value is None:
            continue
        if isinstance(est, SmoothSSVMClassifier) and name == "duality_gap_":
            continue  # checked below: SGD has no certificate
        if not np.all(np.isfinite(value)):
            raise AssertionError(f"non-finite {name}: {value!r}")
    pred = est.predict(X)
    if len(pred) != (X.shape[0] if hasattr(X, "shape") else len(X)):
        raise AssertionError(f"predict returned {len(pred)} outputs for {len(X)} examples")
    check_score(est.score(X, Y))


#: numpy's and Python's own wording: an error that escaped validation
UNCLEAR = ("setting an array element", "could not convert", "invalid literal", "NoneType",
           "not supported between", "unhashable", "ambiguous", "index", "broadcast",
           "argument must be", "has no attribute", "unsupported operand", "object of type")


def is_clear(exc):
    """A ValueError/TypeError raised by validation, ours (outside the kernels) or scikit-learn's,
    in our words."""
    message = str(exc)
    if (not isinstance(exc, (ValueError, TypeError)) or len(message) < 15
            or any(text in message[:60] for text in UNCLEAR)):  # numpy's words come first
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1].filename.replace("\\", "/") if frames else ""
    return any(src in where for src in CLEAR_SOURCES) and "/_kernels/" not in where


def describe(kind, defects, X, Y, est):
    def shape(v):
        def one(x):
            return tuple(one(z) for z in x) if isinstance(x, tuple) else np.shape(x)
        return [one(x) for x in v[:3]] if isinstance(v, list) else np.shape(v)
    return (f"{kind} {defects} X {type(X).__name__} {shape(X)} Y {shape(Y)} "
            f"{type(est).__name__}({est.get_params(deep=False).get('structure', '')!r})")


def run(name, n_cases, log):
    outcomes = {"fitted": 0, "clear error": 0}
    failures = []

    @settings(max_examples=n_cases, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(st.data())
    def case(data):
        draw = data.draw
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        kind = "flat" if name == "pragam" else draw(st.sampled_from(
            sorted(TRAINS.get(name, STRUCTURES))))
        n = draw(st.integers(1, 7))
        d = draw(st.integers(1, 4))
        k = draw(st.integers(1, 4))
        lengths = [draw(st.integers(1, 4)) for _ in range(n)]
        scale = 10.0 ** draw(st.integers(-3, 3))
        X, Y = make_data("binary" if kind == "flat" else kind, rng, n, d, k, lengths, scale)
        est = (PragamSVC(max_iter=50, solver=draw(st.sampled_from(
            ["pragam", "agm-primal", "agm-dual", "agm-ef1-primal", "agm-ef1-dual"])),
            tol=1e-4) if kind == "flat"
            else STRUCTURED[name](STRUCTURES[kind]()))
        defects = draw(st.lists(st.sampled_from(DEFECTS), max_size=2, unique=True))
        if kind in GRAPHS and "bad edges" not in defects and draw(st.booleans()):
            defects.append("bad edges")  # half the graphs: each variant drawn often enough
        after = []
        applied = []
        for defect in defects:
            try:  # some defects do not combine (a 3-D array has no sparse format): skip them
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    X, Y, est, then = apply_defect(defect, kind, X, Y, est, draw, rng)
            except (ValueError, TypeError, IndexError):  # IndexError: no features of X=None
                continue
            applied.append(defect)
            if then is not None:
                after.append(then)
        defects = applied
        text = describe(kind, defects, X, Y, est)
        log.write(text + "\n")
        log.flush()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, Y)
                check_fitted(est, X, Y)
                for then in after:
                    then(est)
            outcomes["fitted"] += 1
        except Exception as exc:  # noqa: BLE001 - classifying every outcome is the point
            if is_clear(exc):
                outcomes["clear error"] += 1
            else:
                failures.append(dict(case=text, error=f"{type(exc).__name__}: {exc}",
                                     where=traceback.format_exc(limit=-3)))

    case()
    return dict(estimator=name, cases=sum(outcomes.values()) + len(failures), **outcomes,
                failures=failures)


if __name__ == "__main__":
    name, n_cases, log_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(log_path, "w") as log:
        print(json.dumps(run(name, n_cases, log)))
