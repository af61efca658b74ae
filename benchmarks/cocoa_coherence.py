"""How much the partitions' changes of a CoCoA round add up: the evidence for the safe scaling.

    python benchmarks/cocoa_coherence.py [--task chunking] [--partitions 2 4 8]
        [--sigmas 1 half K] [--split contiguous vocabulary] [--rounds 40]
        [--data ../shared/datasets]

``BCFWStructuredSVM(cluster=True)`` (``solvers/bcfw_cluster.py``) scales each partition's local
subproblem by ``sigma = K``, CoCoA+'s safe bound ``||sum_k A d_k||^2 <= K sum_k ||A d_k||^2``
(Ma et al. 2015), so its steps are ``K`` times shorter than one process's and its rounds grow
with ``K``. A smaller ``sigma`` is safe for a round exactly when the round's changes ``d_k``
(of ``w``) satisfy ``rho = ||sum_k d_k||^2 / sum_k ||d_k||^2 <= sigma`` (the CoCoA+ argument
needs the bound for the step taken only): ``rho = 1`` for orthogonal changes, ``K`` for equal
ones. This script runs the library's own rounds (``_new_partition``, ``_local_round``,
``_local_weights``, ``_local_certificate``) in this process, one partition after the other
(a round's result does not depend on where it runs), with ``_local_round``'s curvature factor
set to ``sigma`` (``1``, ``half``: ``K / 2``, or ``K``), and prints ``rho`` each round (also on
the pairwise weights alone: the transition table every sentence shares) and the certified
relative gap every 5 rounds.

Partitions: ``contiguous`` (the library's: consecutive shares of the examples) or
``vocabulary`` (each sentence, in a random order, to the partition whose features it shares
most, the shares kept even: partitions that share as few features as a greedy split finds).
Data: CoNLL-2000 chunking train (``benchmarks/parallel_bcfw.py``'s features), ``ChainCRF()``
at ``alpha=None``'s rule, pairwise steps, gap sampling, one local pass a round.
"""
import argparse
import time
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def vocabulary_split(problem, K, seed=0):
    """Each example, in a random order, to the partition whose features it shares most (ties:
    the first), none beyond an even share."""
    rng = np.random.default_rng(seed)
    owned = np.zeros((K, problem.n_features), dtype=bool)
    members = [[] for _ in range(K)]
    cap = -(-problem.n_samples // K)
    rows = problem.indptr[problem.tok_offsets]
    for i in rng.permutation(problem.n_samples):
        features = np.unique(problem.indices[rows[i]:rows[i + 1]])
        shared = owned[:, features].sum(axis=1).astype(float)
        shared[[len(m) >= cap for m in members]] = -1.0
        k = int(np.argmax(shared))
        members[k].append(i)
        owned[k, features] = True
    return [np.sort(m) for m in members], owned.sum(axis=1)


def run(problem, groups, sigma, rounds):
    """The rounds of ``bcfw_cluster`` at curvature factor ``sigma``: per round ``rho`` (all
    weights, pairwise weights) and, every 5 rounds, the certified relative gap."""
    from sklearn_ssvm.solvers.bcfw_cluster import (_Change, _local_certificate, _local_round,
                                                   _local_weights, _new_partition)
    n, d = problem.n_samples, problem.n_params
    alpha, scale = problem.default_alpha(), problem.loss_scale()
    pairwise = slice(problem.n_features * problem.n_codes, d)
    seeds = np.random.default_rng(0).integers(0, 2**63 - 1, size=len(groups))
    parts = [_new_partition(problem.subset(g), n, s, 8, d) for g, s in zip(groups, seeds)]
    update = _Change(np.zeros(d))
    rows = []
    for it in range(1, rounds + 1):
        out = [_local_round(p, update, alpha, sigma, 1, "pairwise", "gap", 64) for p in parts]
        parts = [part for part, _ in out]
        changes = [change.add_to(np.zeros(d)) for _, change in out]
        total = np.sum(changes, axis=0)
        rho = total @ total / sum(c @ c for c in changes)
        rho_pair = (total[pairwise] @ total[pairwise]
                    / sum(c[pairwise] @ c[pairwise] for c in changes))
        update = _Change(total)
        gap = None
        if it % 5 == 0 or it == rounds:
            v = np.sum([_local_weights(p, alpha, "pairwise") for p in parts], axis=0)
            update = v
            gap = np.sum([_local_certificate(p, v) for p in parts], axis=0)[1] / scale
        rows.append((it, rho, rho_pair, gap))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="chunking", choices=["chunking", "ner"])
    parser.add_argument("--partitions", nargs="+", type=int, default=[2, 4, 8])
    parser.add_argument("--sigmas", nargs="+", default=["1", "half", "K"])
    parser.add_argument("--split", nargs="+", default=["contiguous"],
                        choices=["contiguous", "vocabulary"])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from cluster_bcfw import load

    from sklearn_ssvm.structures._problem import label_space
    print("    python " + " ".join(sys.argv) + "\n")
    problem = label_space(load(args.task, args.data))
    print("| split | K | sigma | rho, rounds 1 / 2 / 3 / 5 / 10 / 20 / last | rho of the "
          "pairwise weights, last | relative gap after 10 / 20 / last rounds | seconds |")
    print("|---|---|---|---|---|---|---|")
    for split in args.split:
        for K in args.partitions:
            if split == "contiguous":
                groups = np.array_split(np.arange(problem.n_samples), K)
            else:
                groups, owned = vocabulary_split(problem, K)
                print(f"(vocabulary split, K = {K}: features per partition "
                      f"{', '.join(map(str, owned))} of {problem.n_features})")
            for name in args.sigmas:
                sigma = {"K": K, "half": K / 2}.get(name) or float(name)
                start = time.perf_counter()
                rows = run(problem, groups, sigma, args.rounds)
                seconds = time.perf_counter() - start
                rho = [rows[i - 1][1] for i in (1, 2, 3, 5, 10, 20, len(rows)) if i <= len(rows)]
                gaps = [rows[i - 1][3] for i in (10, 20, len(rows)) if i <= len(rows)]
                print(f"| {split} | {K} | {sigma:g} | {' / '.join(f'{r:.2f}' for r in rho)} | "
                      f"{rows[-1][2]:.2f} | {' / '.join(f'{g:.3g}' for g in gaps)} | "
                      f"{seconds:.0f} |", flush=True)


if __name__ == "__main__":
    main()
