"""Memory of pairwise BCFW's active sets on CoNLL-2000, against the oracle cache's store.

    python benchmarks/active_set_memory.py [--passes 400] [--configs pairwise cache ...]

Each configuration runs in its own process (peak resident memory is per process): BCFW with
pairwise steps at ``alpha = 1/n`` on the CoNLL-2000 training set (sklearn-crfsuite tutorial
features), ``tol=0`` so that every run makes ``--passes`` passes. Reports the peak resident
memory, the bytes of the atom store (labelings and weights; ``warm_start=True`` keeps it on
the fitted model), the atoms per sentence (mean, max), the store's room per sentence, the certified gap and the
CPU seconds of the fit.

Configurations: ``unbounded`` (``max_active=None``), ``pairwise`` (the defaults), ``cache``
(``cache=True``, the paper's 50 labelings per sentence) and ``pairwise-cap16``.
"""
import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "conll2000"
CONFIGS = {
    "unbounded": dict(step="pairwise", max_active=None),
    "pairwise": dict(step="pairwise"),
    "pairwise-cap16": dict(step="pairwise", max_active=16),
    "cache": dict(step="pairwise", cache=True),
}


def run(config, data, passes):
    from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
    from sklearn_ssvm.datasets import read_conll
    from sklearn_ssvm.feature_extraction import SequenceVectorizer, chunking_token_features

    from _timing import Stopwatch

    train = read_conll(data / "train.txt.gz")
    X = SequenceVectorizer().fit_transform([chunking_token_features(s) for s in train])
    Y = [[tok[2] for tok in s] for s in train]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=1.0 / len(X), max_iter=passes,
                            tol=0.0, random_state=0, warm_start=True, **CONFIGS[config])
    with Stopwatch() as fit:
        est.fit(X, Y)
    atoms = est.active_sets_
    return dict(config=config, peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                data_mb=before, store_mb=(atoms.labels.nbytes + atoms.weights.nbytes) / 2**20,
                mean_atoms=float(atoms.count.mean()),
                max_atoms=int(atoms.count.max()), room=int(atoms.weights.shape[1]),
                gap=float(est.duality_gap_), cpu=fit.cpu, wall=fit.wall, passes=est.n_iter_)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--passes", type=int, default=400)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child process: run one config
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run(args.one, args.data, args.passes)))
        return
    rows = []
    for config in args.configs:
        out = subprocess.run([sys.executable, __file__, "--one", config, "--data",
                              str(args.data), "--passes", str(args.passes)],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    cache = next((r for r in rows if r["config"] == "cache"), None)
    print(f"\nCoNLL-2000 train, pairwise BCFW, alpha = 1/n, {args.passes} passes")
    print("| config | peak MB | / cache run | store MB | atoms mean / max | room | gap | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['peak_mb'] / cache['peak_mb']:.2f}" if cache else "-"
        print(f"| {r['config']} | {r['peak_mb']:.0f} | {ratio} | {r['store_mb']:.1f} | "
              f"{r['mean_atoms']:.1f} / {r['max_atoms']} | {r['room']} | "
              f"{r['gap']:.2e} | {r['cpu']:.0f} |")
    print(f"(data and features before the fit: {np.median([r['data_mb'] for r in rows]):.0f} MB)")


if __name__ == "__main__":
    main()
