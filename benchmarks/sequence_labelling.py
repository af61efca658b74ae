"""Sequence labelling against CRFsuite: CoNLL-2000 chunking and CoNLL-2003 NER, one script.

    python benchmarks/sequence_labelling.py [--tasks chunking ner] [--models MODEL ...]
        [--data ../shared/datasets] [--repeats 1]

Every model sees the same token features: the sklearn-crfsuite tutorial template of
``shared/datasets/README.md`` (``chunking_token_features``), as attribute dicts for CRFsuite and
through ``SequenceVectorizer`` for ours. Chunking trains on ``conll2000/train.txt.gz`` and
scores ``test.txt.gz``; NER trains on ``conll2003/eng.train.gz`` and scores the development set
``eng.testa.gz`` (IOB1 tags). Scores are conlleval chunk / entity F1. ``pos`` tags the same
sentences' part of speech (45 tags) from the template less its POS features, and is scored by
token accuracy.

Each model is fitted in a fresh subprocess, so that its peak resident memory is its own; in
ours a small fit on 50 sentences first compiles (or loads) the numba kernels, reported apart.
Figures: F1, the final fit's CPU and wall seconds (``time.process_time``, medians over
``--repeats``), non-zero weights (CRFsuite: ``len(crf.state_features_) +
len(crf.transition_features_)``), peak memory, the pickled model's size (CRFsuite: the ``CRF``
object with its model file; ours: the ``SequenceVectorizer`` and the estimator, ``coef_`` made
sparse by ``sparsify()``, beside the dense estimator alone) and each model's ratio to CRFsuite
L-BFGS.

The hyper-parameters of ours are the recommended ones (``RECOMMENDED`` below), chosen on the
training data only: ``benchmarks/select_elastic_net.py --count-loss`` cross-validates ``alpha``
on the training sets; no test or development score entered the choice. ``agm-enet`` (slow: a
full pass per iteration) runs only when named.
"""
import argparse
import json
import pickle
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"

TASKS = {
    # name: (train file, evaluation file, tag column, evaluation name)
    "chunking": ("conll2000/train.txt.gz", "conll2000/test.txt.gz", 2, "test"),
    "ner": ("conll2003/eng.train.gz", "conll2003/eng.testa.gz", 3, "testa"),
    "pos": ("conll2003/eng.train.gz", "conll2003/eng.testa.gz", 1, "testa"),
}
#: tasks scored by token accuracy (the others by conlleval's chunk F1)
TOKEN_ACCURACY = ("pos",)

#: our recommended settings: the Hamming count loss (``ChainCRF(normalize_loss=False)``),
#: pairwise steps, 30 passes, and ``alpha`` cross-validated on the training set (3 folds over
#: 1e-4, 3e-4, 1e-3, 3e-3; 10 / 20 / 30 passes compared the same way)
RECOMMENDED = {"chunking": dict(alpha=1e-3), "ner": dict(alpha=3e-4)}
#: the l1 share of the elastic-net rows (not cross-validated: see doc/user_guide.md)
L1_RATIO = 0.5

MODELS = {
    "crf-lbfgs": "CRFsuite L-BFGS, c1 = c2 = 0.1, 100 iterations",
    "crf-ap": "CRFsuite averaged perceptron, 10 epochs",
    "bcfw-l2": "BCFWStructuredSVM, pairwise steps, L2 only",
    "bcfw-enet": "BCFWStructuredSVM, pairwise steps, elastic net",
    "bcfw-default": "BCFWStructuredSVM(ChainCRF()), every default",
    "smooth-default": "SmoothSSVMClassifier(ChainCRF()), every default",
    "bcfw-cv": "BCFWStructuredSVMCV(ChainCRF(), scoring='chunk_f1' (pos: the token "
               "accuracy)), every other default",
    "smooth-cv": "SmoothSSVMClassifierCV(ChainCRF(), scoring='chunk_f1'), every other default",
    "smooth-cv-3x25": "SmoothSSVMClassifierCV(ChainCRF(), scoring='chunk_f1'), 3 folds of 25 "
                      "epochs (the plain estimator's)",
    "bcfw-0.0-default": "BCFWStructuredSVM(ChainCRF()) with the defaults before 0.1 (normalised "
                        "loss, Frank-Wolfe steps, alpha 0.01, absolute tol 1e-2)",
    "casimir-l2": "SmoothSSVMClassifier, Casimir-SVRG, L2 only",
    "casimir-enet": "SmoothSSVMClassifier, Casimir-SVRG, elastic net",
    "agm-enet": "SmoothSSVMClassifier, AGM (entropy smoothing), elastic net",
}


def load(task, data, evaluation=True):
    """Feature dicts and tags of the training and evaluation sentences of ``task`` (the last
    two None without ``evaluation``)."""
    from sklearn_ssvm.datasets import read_conll
    from sklearn_ssvm.feature_extraction import chunking_token_features

    train_file, eval_file, column, _ = TASKS[task]
    out = []
    for name in (train_file, eval_file) if evaluation else (train_file,):
        sentences = read_conll(data / name)
        features = [chunking_token_features(s) for s in sentences]
        if task in TOKEN_ACCURACY:  # the template less its POS features: they are the answer
            features = [[{k: v for k, v in tok.items() if "pos" not in k} for tok in s]
                        for s in features]
        out.append(features)
        out.append([[tok[column] for tok in s] for s in sentences])
    return out if evaluation else out + [None, None]


def our_estimator(task, model):
    from sklearn_ssvm import (BCFWStructuredSVM, BCFWStructuredSVMCV, ChainCRF,
                              SmoothSSVMClassifier, SmoothSSVMClassifierCV)

    alpha = RECOMMENDED.get(task, {}).get("alpha")
    chain = ChainCRF(normalize_loss=False)
    scoring = None if task in TOKEN_ACCURACY else "chunk_f1"  # None: the token accuracy
    # "every default": but random_state=0, so that the table can be reproduced
    if model == "bcfw-default":
        return BCFWStructuredSVM(ChainCRF(), random_state=0)
    if model == "smooth-default":
        return SmoothSSVMClassifier(ChainCRF(), random_state=0)
    if model == "bcfw-cv":
        return BCFWStructuredSVMCV(ChainCRF(), scoring=scoring, random_state=0)
    if model == "smooth-cv":
        return SmoothSSVMClassifierCV(ChainCRF(), scoring=scoring, random_state=0)
    if model == "smooth-cv-3x25":
        return SmoothSSVMClassifierCV(ChainCRF(), scoring=scoring, cv=3, max_iter=25,
                                      random_state=0)
    if model == "bcfw-0.0-default":  # the normalised loss at 0.01 is the old rule's alpha
        return BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=0.01, step="fw",
                                 tol=1e-2, random_state=0)
    if model in ("bcfw-l2", "bcfw-enet"):
        return BCFWStructuredSVM(chain, alpha=alpha, l1_ratio=L1_RATIO if model == "bcfw-enet"
                                 else 0.0, step="pairwise", tol=1e-3, max_iter=30,
                                 random_state=0)
    if model in ("casimir-l2", "casimir-enet"):
        return SmoothSSVMClassifier(chain, alpha=alpha, l1_ratio=L1_RATIO if model ==
                                    "casimir-enet" else 0.0, random_state=0)
    if model == "agm-enet":
        return SmoothSSVMClassifier(chain, alpha=alpha, l1_ratio=L1_RATIO, solver="agm",
                                    smoothing="entropy", top_k=None, mu=0.01, max_iter=200)
    raise ValueError(f"unknown model {model!r}")


def run_one(task, model, data, repeats):
    """Fit ``model`` on ``task`` in this process; returns its figures as a dict."""
    import numpy as np
    from sklearn.base import clone
    from sklearn_ssvm.metrics import chunk_f1_score

    F_train, Y_train, F_eval, Y_eval = load(task, data)
    scheme = "iob"  # conlleval's reading: IOB1 and IOB2 both
    compile_s = 0.0
    if model.startswith("crf"):
        import sklearn_crfsuite

        def make():
            if model == "crf-lbfgs":
                return sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
                                            max_iterations=100)
            return sklearn_crfsuite.CRF(algorithm="ap", max_iterations=10)
        fit_input, eval_input = F_train, F_eval
    else:
        from sklearn_ssvm.feature_extraction import SequenceVectorizer
        vec = SequenceVectorizer()
        fit_input, eval_input = vec.fit_transform(F_train), vec.transform(F_eval)
        prototype = our_estimator(task, model)

        def make():
            return clone(prototype)
        t = time.perf_counter()
        make().set_params(max_iter=1).fit(fit_input[:50], Y_train[:50])  # compile / load
        compile_s = time.perf_counter() - t
    walls, cpus = [], []
    for _ in range(repeats):
        est = make()
        w, c = time.perf_counter(), time.process_time()
        est.fit(fit_input, Y_train)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    Y_pred = est.predict(eval_input)
    if model.startswith("crf"):
        nonzero = len(est.state_features_) + len(est.transition_features_)
        extra = dict(pickle_mb=len(pickle.dumps(est)) / 2**20)
    else:
        nonzero = int(est.n_nonzero_coef_)
        extra = dict(gap=float(getattr(est, "duality_gap_", float("nan")) / est.loss_scale_),
                     n_iter=int(est.n_iter_), n_params=int(est.coef_.shape[0]),
                     dense_pickle_mb=len(pickle.dumps(est)) / 2**20,
                     pickle_mb=len(pickle.dumps((vec, est.sparsify()))) / 2**20)
    if task in TOKEN_ACCURACY:
        score = 100 * np.mean(np.concatenate(Y_pred) == np.concatenate(Y_eval))
    else:
        score = 100 * chunk_f1_score(Y_eval, Y_pred, scheme=scheme)
    return dict(task=task, model=model, f1=float(score),
                cpu=statistics.median(cpus), wall=statistics.median(walls), nonzero=nonzero,
                compile=compile_s,
                peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **extra)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--models", nargs="+", choices=list(MODELS),
                        default=["crf-lbfgs", "crf-ap", "bcfw-l2", "bcfw-enet"])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--one", nargs=2, metavar=("TASK", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # the child process: one fit, one JSON line
        print(json.dumps(run_one(*args.one, args.data, args.repeats)))
        return
    print(f"recommended: {RECOMMENDED}")
    for task in args.tasks:
        rows = []
        for model in args.models:
            out = subprocess.run([sys.executable, __file__, "--one", task, model, "--data",
                                  str(args.data), "--repeats", str(args.repeats)],
                                 capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"  {task} {model}: {rows[-1]}", file=sys.stderr, flush=True)
        ref = next((r for r in rows if r["model"] == "crf-lbfgs"), None)
        metric = "accuracy" if task in TOKEN_ACCURACY else "F1"
        print(f"\n{task} ({TASKS[task][3]} {metric})\n")
        print(f"| model | {metric} | CPU s | wall s | non-zero weights | peak MB | pickle MB "
              "| CPU / CRFsuite | non-zero / CRFsuite | pickle / CRFsuite | gap / loss scale |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            ratio_cpu = f"{r['cpu'] / ref['cpu']:.2f}" if ref else ""
            ratio_nz = f"{r['nonzero'] / ref['nonzero']:.2f}" if ref else ""
            ratio_pickle = f"{r['pickle_mb'] / ref['pickle_mb']:.2f}" if ref else ""
            gap = f"{r['gap']:.1e}" if "gap" in r else ""
            size = f"{r['pickle_mb']:.1f}" + (f" ({r['dense_pickle_mb']:.1f} dense)"
                                              if "dense_pickle_mb" in r else "")
            print(f"| {MODELS[r['model']]} | {r['f1']:.2f} | {r['cpu']:.1f} | {r['wall']:.1f} "
                  f"| {r['nonzero']:,} | {r['peak_mb']:.0f} | {size} | {ratio_cpu} | {ratio_nz} "
                  f"| {ratio_pickle} | {gap} |")


if __name__ == "__main__":
    main()
